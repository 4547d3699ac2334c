"""Webhook items in the cockpit's Work panel, driven through Pilot: Replay is offered only
while the delivery's raw body is held, a routine receipt offers neither Cancel nor Replay
(each dimmed, the palette saying why, nothing opened), the decision is made on the UI
thread without touching the disk, and the cockpit's runner purges expired bodies.

Deliveries are recorded the way the door and ``captain deliveries ingest`` record them
(``state.work.deliveries.ingest``); workers' claims and reports through ``state.work.ledger``.
"""

from __future__ import annotations

import threading
from datetime import timedelta
from pathlib import Path

import pytest
from support.cockpit import Cockpit, drive, select_row, toasts, until

from captain_tui.cockpit import command_table
from captain_tui.cockpit.app import CaptainApp
from state.clock import now
from state.home import Home
from state.work import deliveries, ledger
from widgets.panels.work_panel import WorkPanel
from widgets.screens.forms import ConfirmScreen, FormScreen
from widgets.screens.work_forms import ReplayScreen

pytestmark = pytest.mark.usefixtures("plain_terminal", "private_config")  # support/cockpit_env.py

CONFIG = """\
[endpoints.gone]
retention_days = 0

[endpoints.kept]
retention_days = 7

[endpoints.chores]
routine = true
"""


@pytest.fixture
def ui_reads(monkeypatch) -> list[str]:
    """Every read of a delivery made on the UI (main) thread: there must be none."""
    seen: list[str] = []
    for name in ("get", "body_held", "raw_body_available"):
        real = getattr(deliveries, name)

        def spy(*args, _real=real, _name=name, **kwargs):
            if threading.current_thread() is threading.main_thread():
                seen.append(_name)
            return _real(*args, **kwargs)

        monkeypatch.setattr(deliveries, name, spy)
    return seen


def delivered(home: Home, endpoint: str, source_id: str, *, finish: bool = True) -> str:
    """A delivery's work item, claimed and succeeded by a worker when ``finish``."""
    work_id = deliveries.ingest(
        home, endpoint, source_id, b'{"ref": "main"}', event="push"
    ).delivery.work_id
    if finish:
        item = ledger.claim(home, work_id, holder="worker")
        ledger.report(home, work_id, item.generation, "succeeded", actor="worker")
    return work_id


def palette_says(app: CaptainApp, label: str) -> str:
    return next(c.help for c in app.get_system_commands(app.screen) if c.title == label)


def test_replay_is_offered_only_while_the_raw_body_is_held(home: Home, ui_reads):
    (home.root / "config.toml").write_text(CONFIG)
    expired = delivered(home, "gone", "g-1")
    held = delivered(home, "kept", "k-1")
    clock = {"at": now()}
    app = Cockpit(home, run_doorbell=False, clock=lambda: clock["at"])

    async def scenario(pilot):
        await select_row(pilot, "work", expired)
        assert not app.screen.active_bindings["R"].enabled
        why = app.why_not(command_table.BY_ID["replay_work"])
        assert "expired at" in why and "Ask the sender" in why
        assert "not now:" in palette_says(app, "Replay") and "expired" in palette_says(
            app, "Replay"
        )
        await pilot.press("R")
        await pilot.pause()
        assert not isinstance(app.screen, FormScreen)
        # whatever way it is asked for, no form opens: a toast says why
        app.action_replay_work()
        await until(
            pilot,
            lambda: any("Not offered" in t and "expired at" in t for t in toasts(app)),
            what="the refusal toast",
        )
        assert not isinstance(app.screen, FormScreen)

        await select_row(pilot, "work", held)
        assert app.screen.active_bindings["R"].enabled
        assert app.why_not(command_table.BY_ID["replay_work"]) is None
        await pilot.press("R")
        await until(pilot, lambda: isinstance(app.screen, ReplayScreen), what="the form")
        await pilot.press("escape")
        await until(pilot, lambda: not isinstance(app.screen, FormScreen), what="form closed")

        # its retention ends while the cockpit is open: no event, the clock says so
        clock["at"] = now() + timedelta(days=8)
        assert "expired at" in app.why_not(command_table.BY_ID["replay_work"])
        await until(
            pilot,
            lambda: not app.screen.active_bindings["R"].enabled,
            what="Replay dimmed by the clock",
        )

    drive(app, scenario)
    assert ui_reads == []  # decided from what the feed read, never on the UI thread


def test_a_routine_receipt_offers_neither_cancel_nor_replay(home: Home, ui_reads):
    (home.root / "config.toml").write_text(CONFIG)
    live = delivered(home, "chores", "c-1", finish=False)
    done = delivered(home, "chores", "c-2")
    before = {p: p.read_bytes() for p in Path(home.root).rglob("*.json") if "locks" not in p.parts}
    app = Cockpit(home, run_doorbell=False)

    async def scenario(pilot):
        await select_row(pilot, "work", live)
        panel = app.query_one(WorkPanel)
        cells = [str(c) for c in panel.row_cells(app.selected_work(), app.clock(), 30)]
        assert "routine" in cells  # the Source column says why
        bindings = app.screen.active_bindings
        assert not bindings["c"].enabled and not bindings["R"].enabled
        why = app.why_not(command_table.BY_ID["cancel_work"])
        assert "routine receipt" in why and "chores" in why
        assert "routine receipt" in palette_says(app, "Cancel")
        await pilot.press("c", "R")
        await pilot.pause()
        assert not isinstance(app.screen, (ConfirmScreen, FormScreen))
        app.action_cancel_work()
        await until(
            pilot,
            lambda: any("Not offered" in t and "routine receipt" in t for t in toasts(app)),
            what="the refusal toast",
        )
        assert not isinstance(app.screen, ConfirmScreen)

        await select_row(pilot, "work", done)
        assert not app.screen.active_bindings["R"].enabled
        assert "routine receipt" in app.why_not(command_table.BY_ID["replay_work"])

    drive(app, scenario)
    assert ledger.get(home, live).state == "queued"
    assert {p: p.read_bytes() for p in before} == before  # nothing was written
    assert ui_reads == []


def test_the_cockpit_purges_expired_raw_bodies(home: Home):
    (home.root / "config.toml").write_text(CONFIG)
    work_id = delivered(home, "gone", "g-1")
    record = deliveries.get(home, ledger.get(home, work_id).delivery_id)
    assert deliveries.body_held(home, record)
    app = Cockpit(home, run_doorbell=True)  # its runner purges, off the UI thread

    async def scenario(pilot):
        await until(
            pilot,
            lambda: not deliveries.body_held(home, record),
            what="the expired body to be purged",
            timeout=20,
        )

    drive(app, scenario)
    after = deliveries.get(home, record.delivery_id)
    assert after == record  # the record stays: hash, size, expiry
    assert deliveries.raw_body_available(home, after) is False

"""The runner on a shared PostgreSQL ledger: a slot freed by another host (its report,
written through a home of its own) is handed to the crew queued here at the report's
notification, not on the ledger round's clock (set out of reach here: only the notification
can explain the dispatch). Crews are recorded only (no pane, no tmux). Polled with a
deadline, never timed."""

from __future__ import annotations

import time
from pathlib import Path

import pytest
from support.cockpit import crew
from support.ledger_backends import open_ledgers

from captain_tui.runtime import runner as runner_module
from captain_tui.runtime.runner import Runner
from state.home import Home
from state.work import ledger

DEADLINE = 20.0


@pytest.fixture
def pg(request):
    with open_ledgers(request, "postgresql") as made:
        yield made


def test_a_slot_freed_on_another_host_is_dispatched_at_its_notification(
    tmp_path: Path, pg, monkeypatch
) -> None:
    here = pg.home(tmp_path / "here", "slots = 1\n")
    Home(tmp_path / "there")  # a captain home first, then its config: the same database
    (tmp_path / "there" / "config.toml").write_text((here.root / "config.toml").read_text())
    there = Home(tmp_path / "there")
    first = crew(here, "Ada")
    second = crew(here, "Brook")
    held = ledger.get(here, f"wrk_{first.assignment_id.removeprefix('asg_')}")
    waiting = ledger.get(here, f"wrk_{second.assignment_id.removeprefix('asg_')}")
    assert (held.state, waiting.state) == ("running", "queued")

    monkeypatch.setattr(runner_module, "LEDGER_EVERY", 600.0)  # only a wake-up explains it
    monkeypatch.setattr(runner_module, "HEARTBEAT_EVERY", 600.0)
    runner = Runner(here)
    try:
        runner.tick()  # the first round (nothing to dispatch), and the listener connects
        end = time.monotonic() + DEADLINE
        while runner.listener is None or runner.listener.connects == 0:
            assert time.monotonic() < end, "the runner never listened"
            runner.tick()
            time.sleep(0.05)
        assert ledger.get(here, waiting.work_id).state == "queued"
        # another host reports the running item: its slot is free
        ledger.report(there, held.work_id, held.generation, "succeeded", actor="worker")
        while ledger.get(here, waiting.work_id).state != "running":
            assert time.monotonic() < end, "the freed slot was never handed on"
            runner.sleep(0.25)
        assert runner.woken >= 1
    finally:
        runner.close()

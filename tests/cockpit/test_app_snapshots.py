"""What the cockpit looks like, pinned: the main screen, each modal, the empty state and the
help screen, on a fixed home at a fixed time (pytest-textual-snapshot).

Regenerate after a deliberate UI change with
``pytest tests/cockpit/test_app_snapshots.py --snapshot-update`` and look at the SVGs in
``tests/cockpit/__snapshots__/test_app_snapshots/`` before committing them.
"""

from __future__ import annotations

import itertools
from datetime import datetime, timedelta, timezone
from pathlib import Path

import pytest
from support.cockpit import SIZE, until

from captain_tui.cockpit.app import CaptainApp
from state import clock
from state.crew import approvals, crewlog, notify, protocol
from state.crew.guards import Context
from state.home import Home
from state.records import RingStamp
from state.store import encode
from state.work import ledger

pytestmark = pytest.mark.usefixtures("private_config")  # support/cockpit_env.py

NOW = datetime(2026, 11, 29, 14, 30, 0, tzinfo=timezone.utc)
PROJECT = "/work/ship"  # recorded, never touched: owned paths show in the assign form


@pytest.fixture(autouse=True)
def home_dir(tmp_path: Path, monkeypatch):
    monkeypatch.setenv("HOME", str(tmp_path))  # the help screen's home path: ~/home


class FixedTime:
    """Record times and IDs the same on every run: a fixed clock (``state.clock``)."""

    def __init__(self) -> None:
        counter = itertools.count(1)
        self.clock = clock.Fixed(NOW, new_id=lambda prefix: f"{prefix}_{next(counter):026d}")

    def ago(self, **delta) -> None:
        self.clock.set(NOW - timedelta(**delta))


@pytest.fixture
def fixed_time():
    t = FixedTime()
    with clock.using(t.clock):
        yield t


@pytest.fixture
def crewed_home(home: Home, fixed_time: FixedTime) -> Home:
    """Four crew, each in a different situation; and their work: two running, Gibbs's
    succeeded, Elizabeth's needing reconciliation (a cancel whose stop was not confirmed),
    and a chat item queued."""
    t = fixed_time
    t.ago(hours=2)
    jack = protocol.recruit(
        home,
        "Jack",
        "Fix the login bug: sessions expire after 5 minutes instead of 30.",
        owns=["src/auth"],
        allow=["edit", "test"],
        cwd=PROJECT,
        agent="claude",
    )
    gibbs = protocol.recruit(
        home,
        "Gibbs",
        "Write the 2.0 changelog",
        owns=["CHANGELOG.md"],
        allow=["edit"],
        cwd=PROJECT,
        agent="codex",
    )
    anamaria = protocol.recruit(home, "Anamaria", "Profile the [slow] search endpoint", cwd=PROJECT)
    elizabeth = protocol.recruit(
        home, "Elizabeth", "Review the billing refactor", cwd=PROJECT, agent="program"
    )
    t.ago(minutes=50)
    protocol.inbox(home, "Gibbs", deliver=lambda batch: None, ctx=Context.from_env(gibbs.env))
    protocol.inbox(home, "Jack", deliver=lambda batch: None, ctx=Context.from_env(jack.env))
    t.ago(minutes=12)
    protocol.ask(
        home,
        "Jack",
        "Keep the old session format, or migrate everyone on their next login?",
        ctx=Context.from_env(jack.env),
    )
    t.ago(minutes=9)
    protocol.done(
        home, "Gibbs", "Changelog written; every link checked.", ctx=Context.from_env(gibbs.env)
    )
    t.ago(minutes=4)
    protocol.tell(
        home, "Anamaria", "Also check the cache hit rate.", assignment_id=anamaria.assignment_id
    )
    home.store.publish(
        home.ring_stamp_path("anamaria"),
        encode(
            RingStamp(
                crew="Anamaria",
                incarnation_id=anamaria.incarnation_id,
                gate="human_draft",
                held_since=NOW - timedelta(minutes=4),
                held_head=None,
            )
        ),
    )
    t.ago(minutes=3)
    ledger.accept(
        home,
        source="chat",
        input={"text": "Summarise yesterday's incidents"},
        requester="captain:ops",
        target_revision="9f3c2e1",
    )
    t.ago(minutes=2)
    snapshot, _ = crewlog.load(home, "jack")  # its Claude Code asks permission: held
    approvals.open_request(
        home,
        snapshot,
        agent="claude",
        tool="Bash",
        command="npm publish --tag next \x1b]0;owned\x07",
        session_allowed=True,
        timeout=600,
    )
    t.ago(minutes=1)
    notify.signal(
        home,
        "Elizabeth",
        "awaiting_approval",
        "Elizabeth is waiting at an approval prompt: run rm -rf build/?",
        at=NOW - timedelta(minutes=1),
    )
    ledger.cancel(
        home,
        ledger.work_id_for_assignment(elizabeth.assignment_id),
        actor="captain:ops",
        stop=lambda attempt: None,
    )
    return home


def cockpit(home: Home) -> CaptainApp:
    return CaptainApp(home, run_doorbell=False, clock=lambda: NOW)


def ready(*keys: str):
    """run_before: wait for the first scan, press keys, and stop cursors blinking."""

    async def run_before(pilot) -> None:
        app = pilot.app
        await until(
            pilot, lambda: app.scanned and app.last_refresh is not None, what="the first scan"
        )
        if keys:
            await pilot.press(*keys)
            await until(pilot, lambda: len(app.screen_stack) > 1, what="the modal")
            for _ in range(50):  # a form's first field takes focus (its cursor shows) soon
                if app.screen.focused is not None:
                    break
                await pilot.pause(0.02)
        for widget in app.screen.query("Input, TextArea"):
            widget.cursor_blink = False
            # TextArea caches a line drawn in the blink's "off" phase under the same key as
            # a steady cursor: drop that cache, or the cursor is missing at random
            widget.notify_style_update()
            widget.refresh()
        await pilot.pause()

    return run_before


def test_main_screen(snap_compare, crewed_home: Home):
    assert snap_compare(cockpit(crewed_home), terminal_size=SIZE, run_before=ready())


def test_empty_home(snap_compare, home: Home):
    assert snap_compare(cockpit(home), terminal_size=SIZE, run_before=ready())


def test_help_screen(snap_compare, home: Home):
    assert snap_compare(cockpit(home), terminal_size=SIZE, run_before=ready("f1"))


def test_answer_form(snap_compare, crewed_home: Home):
    assert snap_compare(cockpit(crewed_home), terminal_size=SIZE, run_before=ready("a"))


def test_tell_form(snap_compare, crewed_home: Home):
    # Anamaria is the first crew row
    assert snap_compare(cockpit(crewed_home), terminal_size=SIZE, run_before=ready("t"))


def test_assign_form(snap_compare, crewed_home: Home):
    # down to Gibbs, who is done (its done is not acknowledged yet: the form says so)
    assert snap_compare(cockpit(crewed_home), terminal_size=SIZE, run_before=ready("j", "j", "n"))


def test_recruit_form(snap_compare, home: Home):
    assert snap_compare(cockpit(home), terminal_size=SIZE, run_before=ready("r"))


def test_dismiss_confirmation(snap_compare, crewed_home: Home):
    assert snap_compare(cockpit(crewed_home), terminal_size=SIZE, run_before=ready("d"))


def test_settings_screen(snap_compare, home: Home):
    assert snap_compare(cockpit(home), terminal_size=SIZE, run_before=ready("s"))


def test_resolve_form(snap_compare, crewed_home: Home):
    # Elizabeth's item needs reconciliation: first in Work, so v resolves it from anywhere
    assert snap_compare(cockpit(crewed_home), terminal_size=SIZE, run_before=ready("v"))


def test_replay_form(snap_compare, crewed_home: Home):
    # f four times: the finished filter, where Gibbs's succeeded item is the only row
    assert snap_compare(
        cockpit(crewed_home), terminal_size=SIZE, run_before=ready("f", "f", "f", "f", "R")
    )


def test_work_filtered_to_running(snap_compare, crewed_home: Home):
    async def run_before(pilot) -> None:
        await ready()(pilot)
        await pilot.press("f", "f")
        await pilot.pause()

    assert snap_compare(cockpit(crewed_home), terminal_size=SIZE, run_before=run_before)


def test_review_screen(snap_compare, home: Home, fixed_time: FixedTime, tmp_path: Path):
    """The review screen (#25): a crew's files, one outside its --owns, and the first
    file's diff, syntax-coloured; a real git repository with a fixed history."""
    from support import gitrepo

    from widgets.screens.review_screen import ReviewScreen

    project = tmp_path / "ship"
    gitrepo.init(
        project,
        {
            "src/auth/session.py": "TIMEOUT = 5 * 60\n\n\ndef expired(age):\n"
            "    return age > TIMEOUT\n",
            "README.md": "# ship\n",
        },
    )
    protocol.recruit(
        home,
        "Jack",
        "Fix the login bug: sessions expire after 5 minutes instead of 30.",
        owns=["src/auth"],
        allow=["edit", "test"],
        cwd=str(project),
        agent="claude",
    )
    (project / "src/auth/session.py").write_text(
        "TIMEOUT = 30 * 60  # seconds\n\n\ndef expired(age):\n    return age >= TIMEOUT\n"
    )
    (project / "src/auth/test_session.py").write_text(
        "from auth.session import TIMEOUT, expired\n\n\ndef test_thirty_minutes():\n"
        "    assert not expired(29 * 60)\n"
    )
    (project / "README.md").write_text("# ship\n\nSessions last 30 minutes.\n")

    async def run_before(pilot) -> None:
        app = pilot.app
        await until(pilot, lambda: app.scanned and app.last_refresh is not None, what="scan")
        await pilot.press("D")
        await until(pilot, lambda: isinstance(app.screen, ReviewScreen), what="the review")
        await until(pilot, lambda: app.screen.files, what="the files")
        await pilot.press("n")  # to the first file inside the grant
        await until(
            pilot,
            lambda: (
                app.screen.current
                and app.screen.current.path == "src/auth/session.py"
                and app.screen.current.coloured
            ),
            what="its diff, syntax-coloured",
        )
        await pilot.pause()

    assert snap_compare(cockpit(home), terminal_size=SIZE, run_before=run_before)


def test_approvals_panel_with_the_request_in_the_preview(snap_compare, crewed_home: Home):
    async def run_before(pilot) -> None:
        await ready()(pilot)
        pilot.app.query_one("#approvals").table.focus()
        await pilot.pause(0.2)

    assert snap_compare(cockpit(crewed_home), terminal_size=SIZE, run_before=run_before)


def test_deny_form(snap_compare, crewed_home: Home):
    assert snap_compare(cockpit(crewed_home), terminal_size=SIZE, run_before=ready("N"))

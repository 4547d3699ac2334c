"""A crew that died, as the cockpit shows it: a red row in Crew and in Notifications, an
error toast, the bell and a desktop notice — like a bounce. (How a death is seen in tmux is
tests/runtime/test_crew_death.py; here the record is written as the hook writes it.)"""

from __future__ import annotations

from pathlib import Path

import pytest
from support.cockpit import Cockpit, drive, toasts, until

from state.crew import death_notice as crew_deaths
from state.crew import protocol
from state.crew.death_notice import KILLED, Death
from state.home import Home
from state.inputs import TERMINAL_UNSAFE
from state.records import PaneLocator
from state.work import ledger
from widgets.panels.crew_panel import CrewPanel
from widgets.panels.notifications_panel import NotificationsPanel

pytestmark = pytest.mark.usefixtures("plain_terminal", "private_config")  # support/cockpit_env.py


def launched(home: Home, name: str, project: Path):
    """A crew recorded as running in a pane (no tmux needed: nothing here looks at it)."""
    pane = PaneLocator(
        socket="/nonexistent/tmux", session="captain", window_id="@7", pane_id="%7", pane_pid=None
    )
    return protocol.recruit(
        home, name, "Fix the login bug", cwd=str(project), launch=lambda env: (pane, lambda: None)
    )


def test_a_dead_crew_is_a_red_row_an_error_toast_and_the_bell(home: Home, project: Path):
    jack = launched(home, "Jack", project)
    app = Cockpit(home, run_doorbell=False)
    emitted: list[str] = []
    app.emit_to_terminal = emitted.append
    severities: list[str] = []
    notify = app.notify

    def remember(message, **kwargs):
        severities.append(kwargs.get("severity", "information"))
        return notify(message, **kwargs)

    app.notify = remember

    async def scenario(pilot):
        crew_deaths.record(
            home,
            "Jack",
            jack.incarnation_id,
            Death(
                KILLED,
                signal=9,
                pane_id="%7",
                last_lines=("compiling…", "\x1b[31mpanic\x1b[0m: \u202eboom", "\x9b2J"),
            ),
        )
        await until(
            pilot, lambda: any("Jack died" in t for t in toasts(app)), what="the error toast"
        )
        await until(pilot, lambda: len(emitted) == 2, what="bell and desktop notice")
        await until(pilot, lambda: app.view.crew("jack").state == "died", what="the crew row")
        crew_panel = app.query_one(CrewPanel)
        row = app.view.crew("jack")
        state_cell = crew_panel.row_cells(row, row.last_activity, 20)[2]
        assert crew_panel.colour("error") in str(state_cell.style)
        (note,) = app.view.notifications()
        assert note.status == "error"
        notes = app.query_one(NotificationsPanel)
        status_cell = notes.row_cells(note, note.created_at, 40)[2]
        assert notes.colour("error") in str(status_cell.style)

    drive(app, scenario)
    assert emitted[0] == "\a"
    assert "error" in severities
    toast = next(t for t in toasts(app) if "Jack died" in t)
    assert "killed by signal 9 (SIGKILL)" in toast
    assert (
        TERMINAL_UNSAFE.search(toast) is None and TERMINAL_UNSAFE.search(emitted[1][2:-1]) is None
    )
    assert ledger.get(home, jack.work_id).state == "failed"

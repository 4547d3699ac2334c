"""The cockpit's ``l`` (Land, docs/landing.md): asks first, showing how it will land and the
landing queue; a refusal is a toast with its code and nothing moves; yes lands. Real git on
a repository the test makes; the crew recorded only (no tmux)."""

from __future__ import annotations

from pathlib import Path

import pytest
from support.cockpit import Cockpit, drive, select_row, toasts, until
from support.repos import clean, head, repository

from captain_tui import usecases
from state.crew import crewlog, protocol
from state.crew.guards import Context
from state.home import Home
from state.work import ledger
from widgets.screens.forms import ConfirmScreen

pytestmark = pytest.mark.usefixtures("plain_terminal", "private_config")  # support/cockpit_env.py


def test_l_asks_then_lands_the_selected_done_crew_and_a_refusal_moves_nothing(
    home: Home, project: Path
) -> None:
    repository(project, {"src/a.txt": "a\n", "top.txt": "t\n"})
    r = usecases.recruit(
        home,
        usecases.Recruitment(
            name="Jack",
            task="Fix a",
            owns=("src",),
            allow=("edit",),
            cwd=str(project),
            launch=False,
        ),
    )
    tree = Path(r.workspace.worktree)
    (tree / "src" / "a.txt").write_text("fixed\n")  # left uncommitted: land commits it
    ctx = Context.from_env(r.env)
    protocol.inbox(home, "Jack", deliver=lambda batch: None, ctx=ctx)
    protocol.done(home, "Jack", "fixed a", ctx=ctx)
    base = head(project, "main")
    (project / "top.txt").write_text("my own edit\n")  # the user's checkout is dirty
    app = Cockpit(home, run_doorbell=False)

    async def scenario(pilot):
        await select_row(pilot, "crew", "jack")
        await pilot.press("l")
        await until(pilot, lambda: isinstance(app.screen, ConfirmScreen), what="the question")
        assert "No other land is running or waiting" in app.screen.body
        await pilot.press("y")
        await until(pilot, lambda: any("[dirty_checkout]" in t for t in toasts(app)))
        assert head(project, "main") == base
        (project / "top.txt").write_text("t\n")  # the user cleans up; land again
        await pilot.press("l")
        await until(pilot, lambda: isinstance(app.screen, ConfirmScreen), what="the question")
        await pilot.press("y")
        await until(pilot, lambda: any("Landed Jack's work on main" in t for t in toasts(app)))

    drive(app, scenario)
    assert (project / "src" / "a.txt").read_text() == "fixed\n" and clean(project)
    snapshot, _ = crewlog.load(home, "jack")
    item = ledger.get(home, ledger.work_id_for_assignment(snapshot.assignment.assignment_id))
    assert item.landing.commit == head(project, "main")

"""The Approvals panel (docs/approvals.md), driven with keys through Pilot against real
files: a request a crew's permission hook holds (on a thread, as the agent runs it) shows
up beside Questions, its detail in the preview; ``y`` allows it, ``N`` asks a reason and
denies, ``Y`` is dimmed for an agent that cannot take "allow for this session" — and the
hook answers the agent with exactly that decision."""

from __future__ import annotations

from pathlib import Path

import pytest
from support.cockpit import Cockpit, crew, drive, focus_panel, toasts, type_text, until
from support.held import Held

from state.crew import approvals
from state.home import Home
from widgets.preview import PanePreview
from widgets.screens.forms import DenyScreen, FormScreen

pytestmark = pytest.mark.usefixtures("plain_terminal", "private_config")


@pytest.fixture
def held(home: Home):
    (home.root / "config.toml").write_text("[crew]\napproval_timeout = 30\n")


def hooked_crew(home: Home, project: Path):
    """Jack, recorded as a Claude Code or Codex crew's launch leaves it: its approval
    folders made (``approvals.prepare``, which ``agents.start`` runs)."""
    jack = crew(home, "Jack", project=project)
    approvals.prepare(home, "jack")
    return jack


def test_y_allows_the_oldest_request_and_the_preview_shows_it(home: Home, project: Path, held):
    jack = hooked_crew(home, project)
    hook = Held(jack.env, tool_name="Bash", tool_input={"command": "make \x1b[2J release"})
    app = Cockpit(home, run_doorbell=False)

    async def scenario(pilot):
        (row,) = await until(pilot, lambda: app.view.approvals(), what="the request in Approvals")
        assert row.crew == "Jack" and row.tool == "Bash" and "\x1b" not in row.excerpt
        await focus_panel(pilot, "approvals")
        preview = app.query_one(PanePreview)
        await until(
            pilot,
            lambda: preview._shown and row.request_id in preview._shown[1],
            what="the request's detail in the preview",
        )
        await pilot.press("y")
        await until(pilot, hook.done, what="the hook to answer")
        await until(pilot, lambda: not app.view.approvals(), what="the request to leave")
        assert any("Allowed Jack to run Bash" in t for t in toasts(app))

    drive(app, scenario)
    assert hook.answer()["hookSpecificOutput"]["decision"] == {"behavior": "allow"}


def test_N_denies_with_the_reason_typed_and_Y_is_dimmed_for_codex(home: Home, project: Path, held):
    jack = hooked_crew(home, project)
    hook = Held(jack.env, agent="codex", tool_name="Bash", tool_input={"command": "rm -rf /"})
    app = Cockpit(home, run_doorbell=False)

    async def scenario(pilot):
        await until(pilot, lambda: app.view.approvals(), what="the request in Approvals")
        await pilot.press("Y")  # Codex takes no "allow for this session": said, not done
        await until(
            pilot,
            lambda: any("cannot take 'allow for this session'" in t for t in toasts(app)),
            what="why Y does not apply",
        )
        assert not hook.done()
        await pilot.press("N")
        await until(pilot, lambda: isinstance(app.screen, DenyScreen), what="the reason form")
        await type_text(pilot, "stay inside the project")
        await pilot.press("ctrl+s")
        await until(pilot, lambda: not isinstance(app.screen, FormScreen), what="form closed")
        await until(pilot, hook.done, what="the hook to answer")

    drive(app, scenario)
    assert hook.answer()["hookSpecificOutput"]["decision"] == {
        "behavior": "deny",
        "message": "The captain denied this: stay inside the project",
    }


def test_y_on_a_crew_decides_that_crews_request_never_the_one_listed_first(
    home: Home, project: Path, held
):
    """Gibbs's request came first, so Approvals lists it on top; with Jack selected in Crew,
    y allows Jack's request and leaves Gibbs's open (a one-key allow must act on the crew the
    captain is looking at)."""
    from support.cockpit import select_row

    gibbs = crew(home, "Gibbs", project=project)
    approvals.prepare(home, "gibbs")
    first = Held(gibbs.env, tool_name="Bash", tool_input={"command": "rm -rf build"})
    app = Cockpit(home, run_doorbell=False)

    async def scenario(pilot):
        await until(pilot, lambda: app.view.approvals(), what="Gibbs's request")
        jack = hooked_crew(home, project)
        second = Held(jack.env, tool_name="Bash", tool_input={"command": "make test"})
        await until(pilot, lambda: len(app.view.approvals()) == 2, what="both requests")
        await select_row(pilot, "crew", "jack")
        await pilot.press("y")
        await until(pilot, second.done, what="Jack's hook to answer")
        assert not first.done(), "Gibbs's request, listed first, is still open"
        await until(pilot, lambda: len(app.view.approvals()) == 1, what="Jack's to leave")
        assert app.view.approvals()[0].crew == "Gibbs"

    drive(app, scenario)

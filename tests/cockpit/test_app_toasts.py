"""Toasts and the header (#14 §4): a flood of alerts is one toast and one bell; toasts name
crews and tasks, not IDs; the header's time stays true when nothing happens; the home's
path is on show."""

from __future__ import annotations

from datetime import timedelta
from pathlib import Path

import pytest
from support.cockpit import Cockpit, as_crew, crew, drive, select_row, toasts, until
from support.tmux import PrivateTmux, needs_tmux

from captain_tui.cockpit.app import CaptainApp
from state.clock import now
from state.crew import protocol
from state.home import Home
from widgets.preview import PanePreview
from widgets.screens.forms import ConfirmScreen
from widgets.screens.help import HelpScreen

pytestmark = pytest.mark.usefixtures("plain_terminal", "private_config")  # support/cockpit_env.py

NAMES = ("Ada", "Brook", "Cy", "Dee", "Eve")


def test_a_flood_of_questions_is_one_toast_and_one_bell(home: Home, project: Path):
    recruits = [crew(home, name, project=project) for name in NAMES]
    app = Cockpit(home, run_doorbell=False)
    app.alert_window = 3.0  # wide: all five land in it however slow the machine is
    emitted: list[str] = []
    app.emit_to_terminal = emitted.append

    async def scenario(pilot):
        for name, r in zip(NAMES, recruits):
            protocol.ask(home, name, f"{name}: rebase or merge?", ctx=as_crew(r))
        await until(
            pilot,
            lambda: app.view.questions() and len(app.view.questions()) == 5,
            what="five questions in the panel",
        )
        flood = await until(
            pilot,
            lambda: [t for t in toasts(app) if "new questions" in t],
            what="the coalesced toast",
        )
        await until(pilot, lambda: len(emitted) == 2, what="one bell, one desktop notice")
        assert len(flood) == 1
        assert flood[0].startswith("5 new questions: ")
        named = flood[0].rsplit(": ", 1)[1]
        assert named.endswith(" and 2 more") and named.count(",") == 2
        assert set(named.removesuffix(" and 2 more").split(", ")) <= set(NAMES)
        assert not any("asks" in t for t in toasts(app))  # not five toasts as well

    drive(app, scenario)
    assert emitted[0] == "\a" and emitted.count("\a") == 1
    assert "captain: 5 new questions" in emitted[1]


def test_routine_outcomes_leave_the_work_panel_soon_and_alerts_stay():
    from captain_tui.cockpit import app as cockpit_app

    assert CaptainApp.NOTIFICATION_TIMEOUT == cockpit_app.OUTCOME_TIMEOUT
    assert cockpit_app.OUTCOME_TIMEOUT < cockpit_app.ALERT_TIMEOUT


def test_cancel_names_the_crew_and_task_not_ids(home: Home, project: Path):
    from state.work import ledger

    jack = crew(home, "Jack", "Fix the login bug", project=project)
    work_id = ledger.work_id_for_assignment(jack.assignment_id)
    app = Cockpit(home, run_doorbell=False)

    async def scenario(pilot):
        await select_row(pilot, "work", work_id)
        await pilot.press("c")
        await until(pilot, lambda: isinstance(app.screen, ConfirmScreen))
        await pilot.press("y")
        said = await until(
            pilot, lambda: [t for t in toasts(app) if "stop of" in t], what="the outcome toast"
        )
        # no pane on record: the stop is not confirmed, and the toast says whose it was
        assert said[0].startswith("The stop of Jack's task “Fix the login bug” could NOT")
        assert "Jack is dismissed" in said[0]
        # the unread task bounces: said without its message and work IDs
        await until(
            pilot,
            lambda: (
                "Mail to Jack bounced: Bounced (its task was cancelled): "
                "Fix the login bug" in toasts(app)
            ),
            what="the bounce's toast",
        )

    drive(app, scenario)
    assert not any(work_id in t or jack.assignment_id in t or "msg_" in t for t in toasts(app))


def test_the_header_stays_true_when_nothing_happens(home: Home, project: Path):
    crew(home, "Jack", project=project)
    clock = {"at": now().astimezone()}
    app = Cockpit(home, run_doorbell=False, clock=lambda: clock["at"])
    app.ages_every = 0.1

    async def scenario(pilot):
        changed = app.last_change
        assert f"watching · last change {changed:%H:%M:%S}" in app.sub_title
        assert "ago" not in app.sub_title and "refreshed" not in app.sub_title
        clock["at"] += timedelta(minutes=10)  # time passes; the home does not change
        await until(pilot, lambda: "10m ago" in app.sub_title, what="the header to age")
        assert app.last_change == changed
        assert f"last change {changed:%H:%M:%S}, 10m ago" in app.sub_title

    drive(app, scenario)


@pytest.mark.parametrize("under_home", [False, True])
def test_help_shows_the_homes_path(home: Home, tmp_path: Path, monkeypatch, under_home: bool):
    monkeypatch.setenv("HOME", str(tmp_path if under_home else tmp_path / "elsewhere"))
    app = Cockpit(home, run_doorbell=False)

    async def scenario(pilot):
        await pilot.press("question_mark")
        await until(pilot, lambda: isinstance(app.screen, HelpScreen))
        shown = "~/home" if under_home else str(home.root)
        assert f"**Home:** `{shown}`" in app.screen.markdown

    drive(app, scenario)


# -- the preview: a quiet pane is asked less often, a change is followed at once ----------------


@needs_tmux
def test_the_preview_backs_off_on_a_quiet_pane_and_follows_a_change(home: Home, project: Path):
    from captain_tui.runtime.launch import launcher

    server = PrivateTmux()
    script = project / "quiet.sh"
    script.write_text(
        "echo FIRST-MARK; while [ ! -e go ]; do sleep 0.1; done; echo SECOND-MARK; exec sleep 600\n"
    )
    start = launcher(
        home,
        name="Jack",
        key="jack",
        agent="program",
        program=f"sh {script}",
        cwd=str(project),
        socket=server.socket,
    )
    try:
        protocol.recruit(home, "Jack", "Wait", cwd=str(project), agent="program", launch=start)
        app = Cockpit(home, run_doorbell=False)
        app.preview_every = 0.1

        def shown() -> str:
            return str(getattr(app.query_one("#preview #screen").content, "plain", ""))

        def preview() -> PanePreview:  # it keeps its own clock
            return app.query_one(PanePreview)

        async def scenario(pilot):
            await until(pilot, lambda: "FIRST-MARK" in shown(), what="the pane's text")
            # the same capture again and again: asked less and less often
            await until(pilot, lambda: preview().pause >= 1.6, what="the back-off")
            (project / "go").touch()
            await until(pilot, lambda: "SECOND-MARK" in shown(), what="the pane's change")
            assert preview().pause == app.preview_every  # it changed: followed again

        drive(app, scenario)
    finally:
        server.kill()

"""The cockpit never hides what blocks the next step (issue 23, point 2), through the real
cockpit (Pilot): ask → answer → done → next task from the Crew panel alone; ``x`` on a crew
acknowledges what blocks it (saying what first); a key that does not apply says why; the
Recruit form offers the handoff of a dismissed name; dialogs name tasks, never IDs.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from support.cockpit import (
    Cockpit,
    as_crew,
    crew,
    drive,
    focus_panel,
    select_row,
    toasts,
    type_text,
    until,
)

from captain_tui.cockpit import command_table
from state.clock import now
from state.crew import crewlog, mailbox, notify, protocol
from state.home import Home
from state.vocab import ended
from widgets.screens.forms import AssignScreen, ConfirmScreen, FormScreen, RecruitScreen

pytestmark = pytest.mark.usefixtures("plain_terminal", "private_config")  # support/cockpit_env.py


def cockpit(home: Home) -> Cockpit:
    return Cockpit(home, run_doorbell=False)


def _text(screen) -> str:
    """Every word a screen draws (its Statics, labels and checkboxes), as one string."""
    return " ".join(str(w.render()) for w in screen.query("Static, Label, Checkbox"))


def test_ask_answer_done_next_task_from_the_crew_panel_alone(home: Home, project: Path):
    """Jack asks, the captain answers (a), Jack finishes; meanwhile Gibbs asks something
    newer. From the Crew panel, x on Jack acknowledges Jack's done (not Gibbs's newer
    notification), and n gives Jack its next task: the Notifications panel is never
    focused."""
    jack = crew(home, "Jack", "Fix the login bug.", project=project)
    gibbs = crew(home, "Gibbs", "Write docs", project=project)
    ctx = as_crew(jack)
    protocol.inbox(home, "Jack", deliver=lambda batch: None, ctx=ctx)
    protocol.ask(home, "Jack", "Keep the old session format?", ctx=ctx)
    app = cockpit(home)
    focused: list[str] = []

    async def scenario(pilot):
        await until(pilot, lambda: app.view.questions(), what="Jack's question")
        await pilot.press("a")
        await until(pilot, lambda: isinstance(app.screen, FormScreen), what="the answer form")
        await type_text(pilot, "Yes, keep it.")
        await pilot.press("ctrl+s")
        await until(pilot, lambda: not app.view.questions(), what="the question answered")
        protocol.inbox(home, "Jack", deliver=lambda batch: None, ctx=ctx)  # Jack reads it
        protocol.done(home, "Jack", "Kept the format; tests pass.", ctx=ctx)
        protocol.ask(home, "Gibbs", "Which docs first?", ctx=as_crew(gibbs))
        await until(
            pilot,
            lambda: app.view.crew("jack").done and len(app.view.notifications()) == 2,
            what="done and Gibbs's ask",
        )
        await select_row(pilot, "crew", "jack")
        await pilot.press("x")
        await until(
            pilot,
            lambda: app.view.crew("jack").unacknowledged == 0,
            what="Jack's done acknowledged",
        )
        assert any(
            "Acknowledged Jack's 1 notification: done “Kept the format; tests pass.”" in t
            for t in toasts(app)
        ), toasts(app)
        await pilot.press("n")
        form = await until(
            pilot,
            lambda: isinstance(app.screen, AssignScreen) and app.screen,
            what="the next-task form",
        )
        shown = _text(form)
        assert "asg_" not in shown and "“Fix the login bug.”" in shown, shown
        await type_text(pilot, "Now the signup page")
        await pilot.press("ctrl+s")
        await until(pilot, lambda: not isinstance(app.screen, FormScreen), what="form closed")
        focused.extend(n.id for n in app.query("#notifications") if n.has_focus_within)

    drive(app, scenario)
    snapshot, _ = crewlog.load(home, "jack")
    assert snapshot.assignment.task == "Now the signup page"
    assert snapshot.assignment.handoff_of == jack.assignment_id
    assert not focused
    assert len(mailbox.unacknowledged(home, "gibbs")) == 1  # Gibbs's ask is still waiting


def test_x_on_a_crew_with_several_notifications_says_what_they_are_first(home: Home, project: Path):
    jack = crew(home, "Jack", project=project)
    ctx = as_crew(jack)
    protocol.inbox(home, "Jack", deliver=lambda batch: None, ctx=ctx)
    notify.signal(home, "Jack", "error", "The build broke?", at=now())
    protocol.done(home, "Jack", "Fixed the build", ctx=ctx)
    app = cockpit(home)

    async def scenario(pilot):
        await until(pilot, lambda: app.view.crew("jack").unacknowledged == 2)
        await select_row(pilot, "crew", "jack")
        await pilot.press("x")
        confirm = await until(
            pilot,
            lambda: isinstance(app.screen, ConfirmScreen) and app.screen,
            what="the confirmation",
        )
        shown = _text(confirm)
        assert "error “The build broke?”" in shown and "done “Fixed the build”" in shown
        assert "dlv_" not in shown and "asg_" not in shown
        await pilot.press("n")  # no: nothing is acknowledged
        await until(pilot, lambda: not isinstance(app.screen, ConfirmScreen))
        assert len(mailbox.unacknowledged(home, "jack")) == 2
        await pilot.press("x")
        await until(pilot, lambda: isinstance(app.screen, ConfirmScreen))
        await pilot.press("y")
        await until(
            pilot, lambda: app.view.crew("jack").unacknowledged == 0, what="both acknowledged"
        )
        assert app.screen.active_bindings["n"].enabled is True

    drive(app, scenario)
    assert mailbox.unacknowledged(home, "jack") == []


def test_every_command_that_does_not_apply_says_why_when_pressed(home: Home, project: Path):
    """One place for every command (CaptainApp.run_action): its key, pressed while the
    command does not apply, shows the reason its dimming stands for, and opens nothing."""
    crew(home, "Jack", project=project)  # recorded only: no pane; working, not done
    app = cockpit(home)
    seen: list[str] = []

    async def scenario(pilot):
        await until(pilot, lambda: app.view.crew("jack") is not None)
        await select_row(pilot, "crew", "jack")
        for command in command_table.COMMANDS:
            why = app.why_not(command)
            if why is None:
                continue
            seen.append(command.id)
            before = len(toasts(app))
            await pilot.press(command.keys.split(",")[0])
            await until(
                pilot, lambda: len(toasts(app)) > before, what=f"why {command.id} is not available"
            )
            assert why in toasts(app)[-1], (command.id, toasts(app)[-1])
            assert not isinstance(app.screen, (FormScreen, ConfirmScreen)), command.id
        # a click on a dimmed key in the footer says the same (and rings the bell)
        from widgets.chrome import CockpitKey

        key = next(k for k in app.query(CockpitKey) if k.action == "assign")
        await until(pilot, lambda: key.region.width and key.dimmed, what="n dimmed")
        before = len(toasts(app))
        await pilot.click(key)
        await until(pilot, lambda: len(toasts(app)) > before, what="the click's reason")
        assert "It gets a next task once it says it is done." in toasts(app)[-1]

    drive(app, scenario)
    # what a working crew with no pane, question, notification or work offers nothing for
    assert {"answer", "assign", "acknowledge", "jump"} <= set(seen), seen


def test_the_recruit_form_offers_the_handoff_of_a_dismissed_name(home: Home, project: Path):
    """A dismissed name's refusal never asks for an ID: the form offers to carry on from its
    last task; its bounces block that until acknowledged, and the refusal says where."""
    jack = crew(home, "Jack", "Fix the login bug", project=project, owns=["src"])
    protocol.dismiss(home, "Jack")  # its unread task bounces: a notification to acknowledge
    app = cockpit(home)

    async def recruit_jack(pilot):
        await pilot.press("r")
        await until(pilot, lambda: isinstance(app.screen, RecruitScreen), what="the form")
        form = app.screen
        form.query_one("#name").value = "Jack"
        form.query_one("#task").text = "Carry on with the login bug"
        form.query_one("#cwd").value = str(project)
        form.query_one("#no_launch").value = True
        await pilot.press("ctrl+s")
        return form

    def error(form) -> str:
        return str(form.query_one("#error").render())

    async def scenario(pilot):
        await until(pilot, lambda: app.view.notifications(), what="Jack's bounce listed")
        form = await recruit_jack(pilot)
        await until(pilot, lambda: "crew_dismissed" in error(form), what="the refusal")
        assert "--handoff" not in error(form) and "asg_" not in error(form), error(form)
        box = form.query_one("#handoff")
        assert box.display and box.value and "“Fix the login bug”" in str(box.label)
        await pilot.press("ctrl+s")  # carry on: refused while the bounce is unacknowledged
        await until(pilot, lambda: "unacknowledged" in error(form), what="the bounce's refusal")
        assert "press x on each in Notifications" in error(form), error(form)
        assert "dlv_" not in error(form)
        await pilot.press("escape")
        await focus_panel(pilot, "notifications")
        await pilot.press("x")
        await until(pilot, lambda: not app.view.notifications(), what="the bounce acknowledged")
        form = await recruit_jack(pilot)
        await until(pilot, lambda: form.query_one("#handoff").display, what="the offer")
        await pilot.press("ctrl+s")
        await until(pilot, lambda: app.view.crew("jack") is not None, what="Jack back")

    drive(app, scenario)
    snapshot, _ = crewlog.load(home, "jack")
    assert snapshot.dismissed_at is None
    assert snapshot.assignment.handoff_of == jack.assignment_id
    assert snapshot.assignment.owns == [str(project / "src")]  # the grants carried over


def test_the_dismiss_dialog_says_what_will_happen_by_task_not_id(home: Home, project: Path):
    jack = crew(home, "Jack", "Update the README.", project=project)
    protocol.tell(home, "Jack", "One more thing", assignment_id=jack.assignment_id)
    app = cockpit(home)

    async def scenario(pilot):
        await select_row(pilot, "crew", "jack")
        await pilot.press("d")
        confirm = await until(pilot, lambda: isinstance(app.screen, ConfirmScreen) and app.screen)
        shown = _text(confirm)
        assert (
            "Jack will be retired from its task “Update the README.” Its 2 unread "
            "messages will bounce" in shown
        ), shown
        assert "asg_" not in shown and "(s)" not in shown and ".”." not in shown
        await pilot.press("n")

    drive(app, scenario)


def test_a_sentence_after_quoted_words_is_closed_once():
    assert ended("Next task: “Update the README.”") == "Next task: “Update the README.”"
    assert ended("Keep the old session format?") == "Keep the old session format?"
    assert ended("Fixed (see the log)") == "Fixed (see the log)."
    assert ended("Mail to Jack bounced: no pane") == "Mail to Jack bounced: no pane."


def test_the_work_panel_shows_the_task_and_the_id_in_its_foot(home: Home, project: Path):
    jack = crew(home, "Jack", "Fix the login bug", project=project)
    app = cockpit(home)

    async def scenario(pilot):
        panel = app.query_one("#work")
        await until(pilot, lambda: panel.rows(), what="Jack's work item")
        row = panel.rows()[0]
        assert row.work_id.startswith("wrk_") and row.crew == "Jack"
        await select_row(pilot, "work", row.work_id)
        line = " ".join(str(c) for c in panel.row_cells(row, app.clock(), 40))
        assert "“Fix the login bug”" in line and "wrk_" not in line, line
        await until(
            pilot,
            lambda: str(panel.border_subtitle).startswith(row.work_id),
            what="the item's ID in the foot",
        )

    drive(app, scenario)
    assert jack.work_id


def test_a_on_a_crew_answers_that_crew_never_the_question_listed_first(home: Home, project: Path):
    """Two crews ask; Gibbs asked first, so Questions lists Gibbs on top. With Jack selected
    in Crew, a answers Jack (the form names Jack and quotes Jack's question); with the
    Questions panel focused, a answers the question highlighted there."""
    gibbs = crew(home, "Gibbs", "Write docs", project=project)
    jack = crew(home, "Jack", "Fix the login bug.", project=project)
    protocol.ask(home, "Gibbs", "Which docs first?", ctx=as_crew(gibbs))
    protocol.ask(home, "Jack", "Keep the old session format?", ctx=as_crew(jack))
    app = cockpit(home)

    async def scenario(pilot):
        await until(pilot, lambda: len(app.view.questions()) == 2, what="both questions")
        await select_row(pilot, "crew", "jack")
        await pilot.press("a")
        form = await until(
            pilot, lambda: isinstance(app.screen, FormScreen) and app.screen, what="the form"
        )
        assert (form.crew, form.question) == ("Jack", "Keep the old session format?")
        await pilot.press("escape")
        await until(pilot, lambda: not isinstance(app.screen, FormScreen), what="form closed")
        await focus_panel(pilot, "questions")
        await pilot.press("a")
        form = await until(
            pilot, lambda: isinstance(app.screen, FormScreen) and app.screen, what="the form"
        )
        assert form.crew == "Gibbs", "in Questions, a answers the highlighted (oldest) one"

    drive(app, scenario)

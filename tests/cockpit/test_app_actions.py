"""Every cockpit action, driven with keys through Pilot: the store holds the expected record
afterwards, and a refused action shows its code and writes nothing."""

from __future__ import annotations

import json
import os
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
from support.tmux import needs_tmux

from captain_tui.cockpit import command_table, prefs
from captain_tui.cockpit.app import CaptainApp
from state.crew import crewlog, guards, mailbox, notify, protocol
from state.home import Home
from state.records import Message
from widgets.screens.forms import (
    AnswerScreen,
    AssignScreen,
    ConfirmScreen,
    FormScreen,
    RecruitScreen,
    TellScreen,
)
from widgets.screens.help import HelpScreen
from widgets.screens.settings import SettingsScreen

pytestmark = pytest.mark.usefixtures("plain_terminal", "private_config")  # support/cockpit_env.py


def cockpit(home: Home) -> CaptainApp:
    return Cockpit(home, run_doorbell=False)


def files(home: Home) -> set[str]:
    """Every record in the home (locks aside), to prove a refusal wrote nothing."""
    out = set()
    for path in Path(home.root).rglob("*"):
        if path.is_file() and "locks" not in path.parts:
            out.add(str(path.relative_to(home.root)))
    return out


# -- answer ----------------------------------------------------------------------------------


def test_a_answers_the_oldest_question_and_enter_makes_a_new_line(home: Home, project: Path):
    jack = crew(home, "Jack", project=project)
    gibbs = crew(home, "Gibbs", "Write docs", project=project)
    first = protocol.ask(home, "Jack", "Keep the old session format?", ctx=as_crew(jack))
    protocol.ask(home, "Gibbs", "Which README section?", ctx=as_crew(gibbs))
    app = cockpit(home)

    async def scenario(pilot):
        await until(pilot, lambda: len(app.view.questions()) == 2, what="two questions")
        await focus_panel(pilot, "notifications")  # a works from whichever panel has focus
        await pilot.press("a")
        form = await until(pilot, lambda: isinstance(app.screen, AnswerScreen) and app.screen)
        assert form.crew == "Jack"  # the oldest question, not Gibbs's
        await type_text(pilot, "Keep it.\nMigrate in v3.")
        await pilot.press("ctrl+s")
        await until(pilot, lambda: not isinstance(app.screen, FormScreen), what="form closed")
        await until(
            pilot,
            lambda: app.view.crew("jack").state != "asked",
            what="the question to leave the panel",
        )
        assert [q.crew for q in app.view.questions()] == ["Gibbs"]

    drive(app, scenario)
    answer = home.store.read(
        home.mail_dir("jack") / f"{guards.answer_id(first.question_id)}.json", Message
    )
    assert answer is not None and answer.kind == "answer"
    assert answer.text == "Keep it.\nMigrate in v3."
    assert answer.question_id == first.question_id


def test_a_answers_the_question_highlighted_in_questions(home: Home, project: Path):
    jack = crew(home, "Jack", project=project)
    gibbs = crew(home, "Gibbs", "Write docs", project=project)
    protocol.ask(home, "Jack", "First?", ctx=as_crew(jack))
    second = protocol.ask(home, "Gibbs", "Second?", ctx=as_crew(gibbs))
    app = cockpit(home)

    async def scenario(pilot):
        await select_row(pilot, "questions", second.question_id)
        await pilot.press("a")
        await until(pilot, lambda: isinstance(app.screen, AnswerScreen))
        assert app.screen.crew == "Gibbs"
        await type_text(pilot, "Usage")
        await pilot.press("ctrl+s")
        await until(
            pilot,
            lambda: guards.is_answered(home, "gibbs", second.question_id),
            what="Gibbs's answer on disk",
        )

    drive(app, scenario)
    assert guards.pending_question(home, "jack", crewlog.load(home, "jack")[0]) is not None


def test_a_is_dimmed_and_does_nothing_without_a_question(home: Home, project: Path):
    crew(home, "Jack", project=project)
    app = cockpit(home)

    async def scenario(pilot):
        assert app.screen.active_bindings["a"].enabled is False
        assert app.screen.active_bindings["r"].enabled is True
        await pilot.press("a")
        await pilot.pause()
        assert not isinstance(app.screen, FormScreen)

    drive(app, scenario)


def test_the_footer_dims_what_does_not_apply_and_a_click_runs_a_key(home: Home, project: Path):
    """The footer is the app's keys (command_table.COMMANDS) with the palette's on the right: a
    dimmed key follows the selection, a click on one rings the bell, on another runs it."""
    from widgets.chrome import CockpitKey

    jack = crew(home, "Jack", project=project)
    app = cockpit(home)
    rung: list[bool] = []
    app.bell = lambda: rung.append(True)

    def key(action: str) -> CockpitKey:
        return next(k for k in app.query(CockpitKey) if k.action == action)

    async def scenario(pilot):
        await until(
            pilot,
            lambda: [k for k in app.query(CockpitKey) if k.region.width],
            what="the footer's keys on screen",
        )
        shown = [k.action for k in app.query(CockpitKey)]
        assert shown == [c.action for c in command_table.COMMANDS if c.show] + ["command_palette"]
        assert key("command_palette").has_class("-command-palette")
        answer = key("answer")
        assert answer.dimmed and answer.has_class("-disabled")
        assert not key("recruit").dimmed
        await pilot.click(answer)
        await pilot.pause()
        assert rung == [True] and not isinstance(app.screen, FormScreen)
        protocol.ask(home, "Jack", "Rebase or merge?", ctx=as_crew(jack))
        await until(pilot, lambda: not answer.dimmed, what="a undimmed by the question")
        assert key("answer") is answer  # dimmed and undimmed in place, not composed again
        assert not answer.has_class("-disabled")
        await pilot.click(key("recruit"))
        await until(pilot, lambda: isinstance(app.screen, RecruitScreen), what="the form")

    drive(app, scenario)


# -- tell ------------------------------------------------------------------------------------


def test_t_tells_the_selected_crew(home: Home, project: Path):
    crew(home, "Jack", project=project)
    gibbs = crew(home, "Gibbs", "Write docs", project=project)
    app = cockpit(home)

    async def scenario(pilot):
        await select_row(pilot, "crew", "gibbs")
        await pilot.press("t")
        await until(pilot, lambda: isinstance(app.screen, TellScreen))
        await type_text(pilot, "Also update the changelog")
        await pilot.press("ctrl+s")
        await until(pilot, lambda: not isinstance(app.screen, FormScreen), what="form closed")
        await until(pilot, lambda: app.view.crew("gibbs").unread == 2, what="unread count")

    drive(app, scenario)
    last = mailbox.last_message(home, "gibbs", gibbs.assignment_id)
    assert last.kind == "tell" and last.text == "Also update the changelog"
    assert [m.kind for m in mailbox.messages(home, "jack")] == ["assignment"]


def test_refused_tell_shows_its_code_keeps_the_text_and_writes_nothing(home: Home, project: Path):
    jack = crew(home, "Jack", project=project)
    protocol.tell(home, "Jack", "Run the tests", assignment_id=jack.assignment_id)
    before = files(home)
    app = cockpit(home)

    async def scenario(pilot):
        await pilot.press("t")
        await until(pilot, lambda: isinstance(app.screen, TellScreen))
        await type_text(pilot, "Run the tests")  # repeats the last message word for word
        await pilot.press("ctrl+s")
        await until(
            pilot,
            lambda: any("[duplicate_message]" in t for t in toasts(app)),
            what="the refusal toast",
        )
        assert isinstance(app.screen, TellScreen)  # still open: nothing typed is lost
        error = str(app.screen.query_one("#error").render())
        assert "[duplicate_message]" in error
        assert app.screen.query_one("#message").text == "Run the tests"

    drive(app, scenario)
    assert files(home) == before


def test_escape_cancels_sends_nothing_and_keeps_the_draft(home: Home, project: Path):
    crew(home, "Jack", project=project)
    before = files(home)
    app = cockpit(home)

    async def scenario(pilot):
        await pilot.press("t")
        await until(pilot, lambda: isinstance(app.screen, TellScreen))
        await type_text(pilot, "half a thought")
        await pilot.press("escape")
        await until(pilot, lambda: not isinstance(app.screen, FormScreen))
        await pilot.press("t")
        await until(pilot, lambda: isinstance(app.screen, TellScreen))
        assert app.screen.query_one("#message").text == "half a thought"
        await pilot.press("escape")

    drive(app, scenario)
    assert files(home) == before


# -- next assignment -------------------------------------------------------------------------


def finished(home: Home, project: Path, *, acknowledge: bool):
    jack = crew(home, "Jack", project=project, owns=["src"], allow=["edit"])
    with_receipts = as_crew(jack)
    protocol.inbox(home, "Jack", deliver=lambda batch: None, ctx=with_receipts)
    done = protocol.done(home, "Jack", "Fixed; tests pass", ctx=with_receipts)
    if acknowledge:
        notify.acknowledge(home, "Jack", done.delivery_id)
    return jack, done


def test_n_assigns_the_next_task_with_the_handoff_filled_in(home: Home, project: Path):
    jack, _ = finished(home, project, acknowledge=True)
    app = cockpit(home)

    async def scenario(pilot):
        await until(pilot, lambda: app.view.crew("jack").done, what="Jack done")
        await pilot.press("n")
        form = await until(pilot, lambda: isinstance(app.screen, AssignScreen) and app.screen)
        assert form.handoff == jack.assignment_id
        assert app.screen.query_one("#allow").value == "edit"  # kept from the last one
        await type_text(pilot, "Now the signup page")
        await pilot.press("ctrl+s")
        await until(pilot, lambda: not isinstance(app.screen, FormScreen), what="form closed")

    drive(app, scenario)
    snapshot, _ = crewlog.load(home, "jack")
    assert snapshot.assignment.handoff_of == jack.assignment_id
    assert snapshot.assignment.task == "Now the signup page"
    assert snapshot.assignment.allow == ["edit"] and snapshot.done_at is None


def test_n_refused_while_done_is_unacknowledged(home: Home, project: Path):
    finished(home, project, acknowledge=False)
    before = files(home)
    app = cockpit(home)

    async def scenario(pilot):
        await until(pilot, lambda: app.view.crew("jack").done, what="Jack done")
        await pilot.press("n")
        await until(pilot, lambda: isinstance(app.screen, AssignScreen))
        await type_text(pilot, "Next")
        await pilot.press("ctrl+s")
        await until(
            pilot, lambda: any("[unacknowledged]" in t for t in toasts(app)), what="the refusal"
        )

    drive(app, scenario)
    assert files(home) == before


def test_t_and_n_follow_the_crew_state(home: Home, project: Path):
    finished(home, project, acknowledge=True)
    app = cockpit(home)

    async def scenario(pilot):
        await until(pilot, lambda: app.view.crew("jack").done)
        bindings = app.screen.active_bindings
        assert bindings["t"].enabled is False and bindings["n"].enabled is True

    drive(app, scenario)


# -- acknowledge -----------------------------------------------------------------------------


def test_x_acknowledges_the_highlighted_notification(home: Home, project: Path):
    jack = crew(home, "Jack", project=project)
    gibbs = crew(home, "Gibbs", "Docs", project=project)
    older = protocol.ask(home, "Jack", "Which one?", ctx=as_crew(jack))
    newer = protocol.ask(home, "Gibbs", "Where?", ctx=as_crew(gibbs))
    app = cockpit(home)

    async def scenario(pilot):
        await until(pilot, lambda: len(app.view.notifications()) == 2)
        await focus_panel(pilot, "notifications")
        assert app.selected_notification().delivery_id == newer.delivery_id  # newest first
        await pilot.press("x")
        await until(pilot, lambda: len(app.view.notifications()) == 1, what="one left")
        await select_row(pilot, "notifications", older.delivery_id)
        await pilot.press("x")
        await until(pilot, lambda: not app.view.notifications(), what="none left")
        assert app.screen.active_bindings["x"].enabled is False

    drive(app, scenario)
    assert mailbox.acked(home, "gibbs") == {newer.delivery_id}
    assert mailbox.acked(home, "jack") == {older.delivery_id}


# -- recruit ---------------------------------------------------------------------------------


def test_r_recruits_a_crew_recorded_only(home: Home, project: Path):
    app = cockpit(home)

    async def scenario(pilot):
        assert "No crew yet" in str(app.query_one("#crew .empty").render())
        await pilot.press("r")
        await until(pilot, lambda: isinstance(app.screen, RecruitScreen))
        await type_text(pilot, "Elizabeth")
        await pilot.press("tab", "tab")  # past the agent, to the task
        await type_text(pilot, "Map the\nbilling module")
        screen = app.screen
        screen.query_one("#owns").value = "src/billing"
        screen.query_one("#allow").value = "read edit test"
        screen.query_one("#cwd").value = str(project)
        screen.query_one("#no_launch").value = True
        await pilot.press("ctrl+s")
        await until(pilot, lambda: app.view.crew("elizabeth") is not None, what="the new crew row")

    drive(app, scenario)
    snapshot, _ = crewlog.load(home, "elizabeth")
    assert snapshot.assignment.task == "Map the\nbilling module"
    assert snapshot.assignment.owns == [str(project / "src/billing")]
    assert snapshot.assignment.allow == ["read", "edit", "test"]
    assert snapshot.pane is None


def test_refused_recruit_shows_its_code_and_writes_nothing(home: Home, project: Path):
    crew(home, "Jack", project=project, owns=["src"])
    before = files(home)
    app = cockpit(home)

    async def scenario(pilot):
        await pilot.press("r")
        await until(pilot, lambda: isinstance(app.screen, RecruitScreen))
        screen = app.screen
        screen.query_one("#name").value = "Gibbs"
        screen.query_one("#task").text = "Overlap"
        screen.query_one("#owns").value = "src/auth"
        screen.query_one("#cwd").value = str(project)
        screen.query_one("#no_launch").value = True
        await pilot.press("ctrl+s")
        await until(
            pilot, lambda: any("[ownership_overlap]" in t for t in toasts(app)), what="the refusal"
        )
        screen.query_one("#name").value = "../x"
        screen.query_one("#owns").value = ""
        await pilot.press("ctrl+s")
        await until(
            pilot,
            lambda: any("[invalid_name]" in t for t in toasts(app)),
            what="the second refusal",
        )

    drive(app, scenario)
    assert files(home) == before


def test_enter_in_a_one_line_field_submits_and_the_form_checks_what_it_can(home: Home):
    app = cockpit(home)
    before = files(home)

    async def scenario(pilot):
        await pilot.press("r")
        await until(pilot, lambda: isinstance(app.screen, RecruitScreen))
        await type_text(pilot, "Jack")
        await pilot.press("enter")  # Enter in the name field submits...
        await pilot.pause()
        # ...and the form refuses an empty task itself
        assert "task is empty" in str(app.screen.query_one("#error").render())
        assert isinstance(app.screen, RecruitScreen)

    drive(app, scenario)
    assert files(home) == before


@needs_tmux
def test_r_launches_into_tmux_and_d_closes_the_window(home: Home, project: Path):
    from captain_tui.runtime.tmux import GONE, Tmux

    app = cockpit(home)

    async def scenario(pilot):
        await pilot.press("r")
        await until(pilot, lambda: isinstance(app.screen, RecruitScreen))
        screen = app.screen
        screen.query_one("#name").value = "Jack"
        screen.query_one("#task").text = "Wait"
        screen.query_one("#agent").value = "program"
        screen.query_one("#command").value = "sleep 600"
        screen.query_one("#cwd").value = str(project)
        await pilot.press("ctrl+s")
        row = await until(pilot, lambda: app.view.crew("jack"), what="Jack's row")
        assert row.pane is not None
        await select_row(pilot, "crew", "jack")
        await pilot.press("d")
        await until(pilot, lambda: isinstance(app.screen, ConfirmScreen))
        await pilot.press("y")
        await until(pilot, lambda: app.view.crew("jack") is None, what="Jack gone")
        return row.pane

    panes = []

    async def keep(pilot):
        panes.append(await scenario(pilot))

    drive(app, keep)
    snapshot, _ = crewlog.load(home, "jack")
    assert snapshot.dismissed_at is not None
    assert Tmux(panes[0].socket).pane(panes[0]).state == GONE


# -- dismiss ---------------------------------------------------------------------------------


def test_d_dismisses_after_confirming_and_unread_mail_bounces(home: Home, project: Path):
    jack = crew(home, "Jack", project=project)
    crew(home, "Gibbs", "Docs", project=project)
    protocol.tell(home, "Jack", "One more thing", assignment_id=jack.assignment_id)
    app = cockpit(home)

    async def scenario(pilot):
        await select_row(pilot, "crew", "jack")
        await pilot.press("d")
        await until(pilot, lambda: isinstance(app.screen, ConfirmScreen))
        await pilot.press("n")  # no is the safe answer: nothing happens
        await until(pilot, lambda: not isinstance(app.screen, ConfirmScreen))
        assert crewlog.load(home, "jack")[0].dismissed_at is None
        await pilot.press("d")
        await until(pilot, lambda: isinstance(app.screen, ConfirmScreen))
        await pilot.press("y")
        await until(pilot, lambda: app.view.crew("jack") is None, what="Jack's row gone")
        assert app.view.crew("gibbs") is not None

    drive(app, scenario)
    snapshot, _ = crewlog.load(home, "jack")
    assert snapshot.dismissed_at is not None
    assert len(home.store.names(home.bounces_dir("jack"))) == 2  # the task and the tell


# -- jump ------------------------------------------------------------------------------------


@needs_tmux
def test_enter_outside_tmux_shows_the_exact_attach_command(home: Home, project: Path):
    from captain_tui.runtime.launch import launcher

    start = launcher(
        home, name="Jack", key="jack", agent="program", program="sleep 600", cwd=str(project)
    )
    protocol.recruit(home, "Jack", "Wait", cwd=str(project), agent="program", launch=start)
    pane = crewlog.load(home, "jack")[0].pane
    app = cockpit(home)

    async def scenario(pilot):
        await select_row(pilot, "crew", "jack")
        await pilot.press("enter")
        await until(pilot, lambda: any("attach" in t for t in toasts(app)), what="the toast")

    try:
        drive(app, scenario)
        assert any(f"tmux -S {pane.socket} attach -t {pane.pane_id}" in t for t in toasts(app))
    finally:
        from captain_tui.runtime.tmux import Tmux

        Tmux(pane.socket).kill_pane(pane)


def test_enter_is_dimmed_for_a_crew_without_a_pane(home: Home, project: Path):
    crew(home, "Jack", project=project)
    app = cockpit(home)

    async def scenario(pilot):
        await select_row(pilot, "crew", "jack")
        assert app.screen.active_bindings["enter"].enabled is False

    drive(app, scenario)


# -- help, palette, settings -----------------------------------------------------------------


def test_question_mark_and_f1_open_help_listing_every_command(home: Home):
    app = cockpit(home)

    async def scenario(pilot):
        for key in ("question_mark", "f1"):
            await pilot.press(key)
            await until(pilot, lambda: isinstance(app.screen, HelpScreen))
            text = app.screen.markdown
            for command in command_table.COMMANDS:
                assert command.label in text and command.description in text
            await pilot.press("escape")
            await until(pilot, lambda: not isinstance(app.screen, HelpScreen))

    drive(app, scenario)


def test_the_palette_lists_every_command_from_the_same_registry(home: Home):
    app = cockpit(home)

    async def scenario(pilot):
        titles = [c.title for c in app.get_system_commands(app.screen)]
        for command in command_table.COMMANDS:
            assert command.label in titles
        bound = {b.id: b.key for b in CaptainApp.BINDINGS}
        assert bound == {c.id: c.keys for c in command_table.COMMANDS}
        await pilot.press("ctrl+p")
        await type_text(pilot, "Recruit")
        await until(
            pilot,
            lambda: (
                "Recruit"
                in str(app.screen.query("OptionList").first().get_option_at_index(0).prompt)
            ),
            what="the palette's hit",
        )
        await pilot.press("enter")
        await until(
            pilot,
            lambda: isinstance(app.screen, RecruitScreen),
            what="the recruit form, from the palette",
        )

    drive(app, scenario)


def test_settings_switches_and_theme_are_persisted(home: Home):
    app = cockpit(home)

    async def scenario(pilot):
        await pilot.press("s")
        await until(pilot, lambda: isinstance(app.screen, SettingsScreen))
        app.screen.query_one("#alert_bell").value = False
        app.theme = "nord"
        await until(pilot, lambda: not prefs.load().alert_bell, what="bell off on disk")
        await until(pilot, lambda: prefs.load().theme == "nord", what="theme on disk")

    drive(app, scenario)
    saved = json.loads((Path(os.environ["CAPTAIN_CONFIG_DIR"]) / prefs.FILE_NAME).read_text())
    assert saved["alert_bell"] is False and saved["theme"] == "nord"
    assert cockpit(home).settings.theme == "nord"  # the next cockpit starts with it


def test_an_arriving_question_raises_a_toast_the_bell_and_a_desktop_notice(
    home: Home, project: Path
):
    jack = crew(home, "Jack", project=project)
    app = cockpit(home)
    emitted: list[str] = []
    app.emit_to_terminal = emitted.append

    async def scenario(pilot):
        protocol.ask(home, "Jack", "Rebase or merge?", ctx=as_crew(jack))
        await until(
            pilot, lambda: any("Rebase or merge?" in t for t in toasts(app)), what="the alert toast"
        )
        await until(pilot, lambda: len(emitted) == 2, what="bell and notice")

    drive(app, scenario)
    assert emitted[0] == "\a"
    assert "\x1b]9;captain: Jack asks: Rebase or merge?\x07" == emitted[1]


def test_switched_off_alerts_stay_quiet(home: Home, project: Path):
    prefs.save(prefs.Settings(alert_bell=False, alert_desktop=False))
    jack = crew(home, "Jack", project=project)
    app = cockpit(home)
    emitted: list[str] = []
    app.emit_to_terminal = emitted.append

    async def scenario(pilot):
        protocol.ask(home, "Jack", "Rebase or merge?", ctx=as_crew(jack))
        await until(
            pilot,
            lambda: any("Rebase or merge?" in t for t in toasts(app)),
            what="the toast (still on)",
        )

    drive(app, scenario)
    assert emitted == []


def test_desktop_notices_pick_one_protocol_and_pass_through_tmux():
    from captain_tui.cockpit.desktop_alerts import desktop_notice

    plain = desktop_notice("Jack asks", "Which\x1b]0;evil\x07 one?", env={"TERM": "xterm"})
    # no control char survives: each is shown as the cockpit shows it, '\ufffd'
    assert plain == "\x1b]9;Jack asks: Which\ufffd]0;evil\ufffd one?\x07"
    vte = desktop_notice("a;b", "body", env={"VTE_VERSION": "7600"})
    assert vte == "\x1b]777;notify;a,b;body\x07"
    wrapped = desktop_notice("t", "b", env={"TERM": "xterm", "TMUX": "/tmp/s,1,0"})
    assert wrapped == "\x1bPtmux;\x1b\x1b]9;t: b\x07\x1b\\"


def test_sequences_reach_the_terminal_through_the_running_driver(home: Home, monkeypatch):
    """The bell is Textual's own; a desktop notice goes through the driver that draws the
    frames (found through the driver class the app asked for), only while it runs."""
    import asyncio
    from types import SimpleNamespace

    from textual.app import App
    from textual.driver import Driver

    from captain_tui.cockpit import app as app_module
    from captain_tui.cockpit.terminal import recording, writer

    class Terminal(Driver):
        def __init__(self, app, **kwargs) -> None:
            super().__init__(app, **kwargs)
            self.out: list[str] = []

        def write(self, data: str) -> None:
            self.out.append(data)

        def start_application_mode(self) -> None:
            pass

        def disable_input(self) -> None:
            pass

        def stop_application_mode(self) -> None:
            pass

    app = cockpit(home)
    assert issubclass(app.driver_class, App.get_driver_class(app))  # the platform's, recorded
    rung: list[bool] = []
    app.bell = lambda: rung.append(True)
    app.emit_to_terminal("\a")
    assert rung == [True]

    async def main() -> None:
        recorded = recording(Terminal)
        terminal = recorded(app)
        assert recorded.running is None
        terminal.start_application_mode()
        assert recorded.running is terminal
        running = SimpleNamespace(is_headless=False, is_running=True, driver_class=recorded)
        assert writer(running) is terminal
        assert writer(SimpleNamespace(**{**vars(running), "is_headless": True})) is None
        monkeypatch.setattr(app_module, "writer", lambda _: terminal)
        app.emit_to_terminal("\x1b]9;captain: hello\x07")
        assert terminal.out == ["\x1b]9;captain: hello\x07"]
        terminal.stop_application_mode()
        assert recorded.running is None and writer(running) is None

    asyncio.run(main())


def test_a_broken_settings_file_means_defaults(tmp_path: Path):
    path = Path(os.environ["CAPTAIN_CONFIG_DIR"])
    path.mkdir(parents=True)
    (path / prefs.FILE_NAME).write_text('{"theme": 7, "alert_bell": false}')
    loaded = prefs.load()
    assert loaded.theme == prefs.DEFAULT_THEME and loaded.alert_bell is False
    (path / prefs.FILE_NAME).write_text("not json")
    assert prefs.load() == prefs.Settings()

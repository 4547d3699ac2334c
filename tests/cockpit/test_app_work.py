"""The Work panel, driven with keys through Pilot: cancel, replay and resolve leave the ledger
in the expected state, a refusal shows its code and writes nothing, work written by other
processes appears live, needs_reconciliation is loud, and the filter cycles."""

from __future__ import annotations

import asyncio
import dataclasses
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import REPO
from support.cockpit import Cockpit, crew, drive, select_row, toasts, type_text, until
from support.tmux import PrivateTmux, needs_tmux
from textual.widgets import Label

from captain_tui import usecases as ops
from captain_tui.cockpit import command_table
from captain_tui.cockpit.app import CaptainApp
from captain_tui.cockpit.feed import path_routes
from captain_tui.cockpit.feed.home_feed import Feed
from captain_tui.runtime import ledger_probe as ledger_runtime
from state.home import Home
from state.work import ledger
from widgets.panels.work_panel import WorkPanel
from widgets.screens.forms import ConfirmScreen, FormScreen
from widgets.screens.work_forms import ReplayScreen, ResolveScreen
from widgets.view import WORK_FILTERS

pytestmark = pytest.mark.usefixtures("plain_terminal", "private_config")  # support/cockpit_env.py


def cockpit(home: Home) -> CaptainApp:
    return Cockpit(home, run_doorbell=False)


def files(home: Home) -> dict[str, bytes]:
    """Every record in the home (locks aside) with its bytes: a refusal changes none."""
    return {
        str(p.relative_to(home.root)): p.read_bytes()
        for p in Path(home.root).rglob("*")
        if p.is_file() and "locks" not in p.parts
    }


# -- work items in each state, written the way workers and the CLI write them ------------------


def queued(home: Home, text: str = "Summarise the incidents", **kwargs):
    return ledger.accept(
        home, source="chat", input={"text": text}, requester="captain:test", **kwargs
    )


def running(home: Home, **kwargs):
    item = queued(home, **kwargs)
    return ledger.claim(home, item.work_id, holder="worker")


def finished(home: Home, **kwargs):
    item = running(home, **kwargs)
    return ledger.report(home, item.work_id, item.generation, "succeeded", actor="worker")


def reconciling(home: Home, **kwargs):
    """A running item whose cancel could not confirm a stop (it has no pane)."""
    item = running(home, **kwargs)
    return ledger.cancel(home, item.work_id, actor="captain:test").item


def panel(app: CaptainApp) -> WorkPanel:
    return app.query_one(WorkPanel)


def last_event(home: Home, work_id: str):
    return ledger.events(home, work_id)[-1]


# -- the panel ---------------------------------------------------------------------------------


def test_the_panel_lists_work_with_reconciliation_first_loud_and_counted(home: Home, project: Path):
    crew(home, "Jack", project=project)  # an assignment: a running work item
    done = finished(home)
    waiting = queued(home)
    stuck = reconciling(home)
    app = cockpit(home)

    async def scenario(pilot):
        rows = panel(app).rows()
        assert rows[0].work_id == stuck.work_id  # first, though it is not the newest
        assert [r.state for r in rows] == ["needs_reconciliation", "running", "queued", "succeeded"]
        assert rows[1].crew == "Jack" and rows[1].source == "assignment"
        assert {r.work_id for r in rows} >= {done.work_id, waiting.work_id}
        state = panel(app).table.get_cell_at((0, 0))
        assert state.plain == "RECONCILE" and "bold" in str(state.style)
        assert app.theme_variables["error"].lower() in str(state.style).lower()
        assert panel(app).has_class("-reconciling")
        assert "1 needs reconciliation" in app.sub_title
        assert "1 needs reconciliation" in app.format_title(app.title, app.sub_title).plain
        assert panel(app).border_title == "Work · all 4"

    drive(app, scenario)


def test_an_empty_home_says_what_creates_work(home: Home):
    app = cockpit(home)

    async def scenario(pilot):
        text = str(app.query_one("#work .empty").render())
        assert "No work yet" in text and "press r" in text and "work submit" in text
        assert "reconciliation" not in app.sub_title

    drive(app, scenario)


def test_f_cycles_the_filter_and_the_title_names_it(home: Home):
    live = running(home)
    old = finished(home)
    stuck = reconciling(home)
    app = cockpit(home)

    async def scenario(pilot):
        seen = {}
        for expected in WORK_FILTERS[1:] + WORK_FILTERS[:1]:
            await pilot.press("f")
            await until(pilot, lambda: panel(app).state_filter == expected)
            seen[expected] = ([r.work_id for r in panel(app).rows()], str(panel(app).border_title))
        assert seen["queued"][0] == []
        assert seen["queued"][1] == "Work · queued"
        assert "No queued work. Press f for running." in str(app.query_one("#work .empty").render())
        assert seen["running"] == ([live.work_id], "Work · running 1")
        assert seen["needs_reconciliation"] == ([stuck.work_id], "Work · needs reconciliation 1")
        assert seen["finished"] == ([old.work_id], "Work · finished 1")
        assert seen["all"][0][0] == stuck.work_id and len(seen["all"][0]) == 3

    drive(app, scenario)


def test_tab_reaches_the_work_panel(home: Home, project: Path):
    crew(home, "Jack", project=project)
    app = cockpit(home)

    async def scenario(pilot):
        for _ in range(6):
            if panel(app).table.has_focus:
                break
            await pilot.press("tab")
        assert panel(app).table.has_focus
        assert app.selected_work().crew == "Jack"
        assert app.selected_crew().name == "Jack"  # the pane preview follows its crew

    drive(app, scenario)


def test_keys_are_dimmed_when_they_do_not_apply(home: Home):
    live = running(home)
    old = finished(home)
    app = cockpit(home)

    async def scenario(pilot):
        await select_row(pilot, "work", live.work_id)
        bindings = app.screen.active_bindings
        assert bindings["c"].enabled and not bindings["R"].enabled
        assert not bindings["v"].enabled
        assert "only a finished item can be replayed" in app.why_not(
            command_table.BY_ID["replay_work"]
        )
        await select_row(pilot, "work", old.work_id)
        bindings = app.screen.active_bindings
        assert not bindings["c"].enabled and bindings["R"].enabled
        await pilot.press("c", "v")
        await pilot.pause()
        assert not isinstance(app.screen, (ConfirmScreen, FormScreen))

    drive(app, scenario)


def test_help_describes_the_work_panel():
    text = command_table.help_markdown()
    assert "**Work**" in text and "needs reconciliation" in text
    for key in ("c", "R", "v", "f"):
        assert f"`{key}`" in text


# -- cancel ------------------------------------------------------------------------------------


def test_c_cancels_a_queued_item_after_confirming(home: Home):
    item = queued(home)
    app = cockpit(home)

    async def scenario(pilot):
        await select_row(pilot, "work", item.work_id)
        await pilot.press("c")
        confirm = await until(pilot, lambda: isinstance(app.screen, ConfirmScreen) and app.screen)
        assert confirm.title_text.startswith("Cancel the chat task ") and "at once" in confirm.body
        assert "wrk_" not in confirm.title_text + confirm.body  # named, never a bare ID
        await pilot.press("n")  # no is the safe answer: nothing happens
        await until(pilot, lambda: not isinstance(app.screen, ConfirmScreen))
        assert ledger.get(home, item.work_id).state == "queued"
        await pilot.press("c")
        await until(pilot, lambda: isinstance(app.screen, ConfirmScreen))
        await pilot.press("y")
        await until(
            pilot,
            lambda: any(t.startswith("Cancelled the chat task captain:test") for t in toasts(app)),
            what="the outcome toast",
        )
        assert not any(item.work_id in t for t in toasts(app))  # named, not a raw ID
        await until(
            pilot,
            lambda: app.view.work_item(item.work_id).state == "cancelled",
            what="the row to follow",
        )

    drive(app, scenario)
    event = last_event(home, item.work_id)
    assert event.type == "cancelled" and event.actor == ops.actor()


def test_c_with_a_confirmed_stop_cancels_a_running_item(home: Home, monkeypatch):
    item = running(home)
    stopped = []
    monkeypatch.setattr(ledger_runtime, "stop", lambda attempt: stopped.append(attempt) or True)
    app = cockpit(home)

    async def scenario(pilot):
        await pilot.press("c")
        await until(pilot, lambda: isinstance(app.screen, ConfirmScreen))
        await pilot.press("y")
        await until(
            pilot,
            lambda: any("the stop is confirmed" in t for t in toasts(app)),
            what="the outcome toast",
        )

    drive(app, scenario)
    assert [a.run_id for a in stopped] == [item.attempts[-1].run_id]
    assert [e.type for e in ledger.events(home, item.work_id)][-2:] == [
        "cancel_requested",
        "cancelled",
    ]


def test_c_without_a_confirmed_stop_leaves_it_needing_reconciliation_loudly(
    home: Home, project: Path
):
    jack = crew(home, "Jack", project=project)  # recorded only: no pane to close
    work_id = ledger.work_id_for_assignment(jack.assignment_id)
    app = cockpit(home)
    emitted: list[str] = []
    app.emit_to_terminal = emitted.append

    async def scenario(pilot):
        await select_row(pilot, "work", work_id)
        await pilot.press("c")
        confirm = await until(pilot, lambda: isinstance(app.screen, ConfirmScreen) and app.screen)
        assert "no pane on record" in confirm.body
        await pilot.press("y")
        await until(
            pilot,
            lambda: any("could NOT be confirmed" in t for t in toasts(app)),
            what="the outcome toast",
        )
        await until(
            pilot, lambda: "1 needs reconciliation" in app.sub_title, what="the title line's count"
        )
        # entering needs_reconciliation is an alert, like a bounce: toast, bell, notice
        await until(
            pilot,
            lambda: any("Jack's task needs reconciliation" in t for t in toasts(app)),
            what="the alert",
        )
        await until(pilot, lambda: "\a" in emitted, what="the bell")
        assert app.screen.active_bindings["v"].enabled  # now it can be resolved

    drive(app, scenario)
    assert ledger.get(home, work_id).state == "needs_reconciliation"


def test_c_says_already_finished_when_it_finished_meanwhile(home: Home):
    item = running(home)
    app = cockpit(home)

    async def scenario(pilot):
        await pilot.press("c")
        await until(pilot, lambda: isinstance(app.screen, ConfirmScreen))
        # the worker reports while the captain reads the confirmation
        ledger.report(home, item.work_id, item.generation, "failed", actor="worker")
        await pilot.press("y")
        await until(
            pilot,
            lambda: any("had already finished (failed)" in t for t in toasts(app)),
            what="the outcome toast",
        )

    drive(app, scenario)
    assert ledger.get(home, item.work_id).state == "failed"
    assert "cancel_requested" not in [e.type for e in ledger.events(home, item.work_id)]


# -- replay ------------------------------------------------------------------------------------


def test_R_replays_a_finished_item_as_a_new_one(home: Home):
    original = finished(home, target_revision="abc123")
    app = cockpit(home)

    async def scenario(pilot):
        await select_row(pilot, "work", original.work_id)
        await pilot.press("R")
        form = await until(pilot, lambda: isinstance(app.screen, ReplayScreen) and app.screen)
        assert any("abc123" in str(label.render()) for label in form.query(Label))
        await type_text(pilot, "The flaky test is fixed")
        form.query_one("#target_revision").value = "def456"
        await pilot.press("ctrl+s")
        await until(pilot, lambda: not isinstance(app.screen, FormScreen), what="form closed")
        await until(pilot, lambda: len(app.view.work) == 2, what="the new row")

    drive(app, scenario)
    replays = [i for i in ledger.page(home)[0] if i.replay_of == original.work_id]
    assert len(replays) == 1
    new = replays[0]
    assert new.state == "queued" and new.replay_reason == "The flaky test is fixed"
    assert new.requester == ops.actor() and new.target_revision == "def456"
    assert ledger.input_of(home, new.work_id) == ledger.input_of(home, original.work_id)
    assert ledger.get(home, original.work_id) == original  # history is never rewritten


def test_a_refused_replay_shows_its_code_and_writes_nothing(home: Home):
    original = finished(home)
    before = files(home)
    app = cockpit(home)

    async def scenario(pilot):
        await select_row(pilot, "work", original.work_id)
        await pilot.press("R")
        await until(pilot, lambda: isinstance(app.screen, ReplayScreen))
        await pilot.press("ctrl+s")  # no reason
        await until(
            pilot,
            lambda: any("[evidence_required]" in t for t in toasts(app)),
            what="the refusal toast",
        )
        assert isinstance(app.screen, ReplayScreen)
        assert "[evidence_required]" in str(app.screen.query_one("#error").render())

    drive(app, scenario)
    assert files(home) == before


# -- resolve -----------------------------------------------------------------------------------


async def fill_resolve(pilot, to: str | None, reason: str, stopped: bool) -> ResolveScreen:
    app = pilot.app
    await pilot.press("v")
    form = await until(pilot, lambda: isinstance(app.screen, ResolveScreen) and app.screen)
    if to is not None:
        form.query_one("#to").value = to
    form.query_one("#reason").focus()
    await type_text(pilot, reason)
    form.query_one("#runtime_stopped").value = stopped
    await pilot.press("ctrl+s")
    return form


def test_v_resolves_an_item_needing_reconciliation(home: Home):
    stuck = reconciling(home)
    running(home)  # listed after it: v acts on the first row, the loud one
    app = cockpit(home)

    async def scenario(pilot):
        await until(pilot, lambda: app.screen.active_bindings["v"].enabled)
        await pilot.press("v")
        form = await until(pilot, lambda: isinstance(app.screen, ResolveScreen) and app.screen)
        context = str(form.query_one(".context").render())
        assert stuck.work_id in context and "generation 1" in context
        assert "the stop could not be confirmed" in context
        await pilot.press("escape")
        await until(pilot, lambda: not isinstance(app.screen, FormScreen))
        await fill_resolve(pilot, "cancelled", "Checked: the process is gone.", True)
        await until(pilot, lambda: not isinstance(app.screen, FormScreen), what="form closed")
        await until(
            pilot,
            lambda: any(
                "Resolved the chat task" in t and t.endswith("to cancelled; its slot is free.")
                for t in toasts(app)
            ),
            what="the toast",
        )
        await until(pilot, lambda: "reconciliation" not in app.sub_title, what="the count to go")
        assert not panel(app).has_class("-reconciling")

    drive(app, scenario)
    item = ledger.get(home, stuck.work_id)
    assert item.state == "cancelled"
    assert item.resolution.operator == ops.actor()
    assert item.resolution.reason == "Checked: the process is gone."
    assert item.resolution.runtime_stopped is True
    assert len(item.attempts) == 1  # resolve starts nothing


def test_a_resolve_without_a_reason_is_refused_with_its_code_and_writes_nothing(home: Home):
    stuck = reconciling(home)
    before = files(home)
    app = cockpit(home)

    async def scenario(pilot):
        form = await fill_resolve(pilot, "failed", "", False)
        await until(
            pilot,
            lambda: any("[evidence_required]" in t for t in toasts(app)),
            what="the refusal toast",
        )
        assert app.screen is form  # still open: nothing typed is lost
        assert "[evidence_required]" in str(form.query_one("#error").render())
        # cancelled without attesting the stop: refused too
        form.query_one("#to").value = "cancelled"
        form.query_one("#reason").text = "I think it stopped"
        await pilot.press("ctrl+s")
        await until(
            pilot,
            lambda: (
                "runtime-stopped" in str(form.query_one("#error").render())
                or "attest" in str(form.query_one("#error").render())
            ),
            what="the second refusal",
        )
        # and no choice at all: the form says so itself
        form.query_one("#to").clear()
        await pilot.press("ctrl+s")
        await until(
            pilot, lambda: "Choose what it became" in str(form.query_one("#error").render())
        )

    drive(app, scenario)
    assert files(home) == before
    assert ledger.get(home, stuck.work_id).state == "needs_reconciliation"


def test_a_stale_resolve_is_refused_and_writes_nothing(home: Home):
    stuck = reconciling(home)
    app = cockpit(home)
    after_other: list[dict] = []

    async def scenario(pilot):
        await pilot.press("v")
        form = await until(pilot, lambda: isinstance(app.screen, ResolveScreen) and app.screen)
        # another operator resolves it first (from the CLI, say)
        ledger.resolve(
            home,
            stuck.work_id,
            generation=stuck.generation,
            to="failed",
            reason="Looked at it first",
            operator="captain:other",
        )
        after_other.append(files(home))
        form.query_one("#to").value = "succeeded"
        form.query_one("#reason").text = "It finished"
        await pilot.press("ctrl+s")
        await until(
            pilot,
            lambda: any("[not_reconciling]" in t for t in toasts(app)),
            what="the refusal toast",
        )

    drive(app, scenario)
    assert files(home) == after_other[0]
    item = ledger.get(home, stuck.work_id)
    assert item.state == "failed" and item.resolution.operator == "captain:other"


def test_a_resolve_at_a_generation_that_moved_on_is_refused(home: Home):
    """The form sends the generation it showed; the ledger fences it."""
    stuck = reconciling(home)
    app = cockpit(home)
    before = files(home)

    async def scenario(pilot):
        await pilot.press("v")
        form = await until(pilot, lambda: isinstance(app.screen, ResolveScreen) and app.screen)
        form.row = dataclasses.replace(form.row, generation=0)  # as if the view were stale
        form.query_one("#to").value = "failed"
        form.query_one("#reason").text = "Gone"
        await pilot.press("ctrl+s")
        await until(
            pilot,
            lambda: any("[stale_generation]" in t for t in toasts(app)),
            what="the refusal toast",
        )

    drive(app, scenario)
    assert files(home) == before
    assert ledger.get(home, stuck.work_id).state == "needs_reconciliation"


# -- live: other processes ---------------------------------------------------------------------


async def captain_cli(home: Home, *args: str) -> str:
    env = {k: v for k, v in os.environ.items() if not k.startswith("CAPTAIN_")}
    env.update({"CAPTAIN_HOME": str(home.root), "PYTHONPATH": str(REPO)})
    proc = await asyncio.to_thread(
        subprocess.run,
        [sys.executable, "-m", "captain_tui", *args, "--json"],
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert proc.returncode == 0, proc.stderr
    return proc.stdout


def test_work_written_by_another_process_appears_live(home: Home):
    app = cockpit(home)
    emitted: list[str] = []
    app.emit_to_terminal = emitted.append

    async def scenario(pilot):
        assert panel(app).rows() == []
        out = json.loads(await captain_cli(home, "work", "submit", "--text", "Ship it"))
        work_id = out["item"]["work_id"]
        await until(pilot, lambda: work_id in panel(app)._keys, what="the new row")
        assert app.view.work_item(work_id).state == "queued"
        await captain_cli(home, "work", "claim", work_id)
        await until(pilot, lambda: app.view.work_item(work_id).state == "running", what="the claim")
        assert app.view.work_item(work_id).generation == 1
        await captain_cli(home, "work", "cancel", work_id)  # no pane: not confirmed
        await until(
            pilot, lambda: app.view.work_item(work_id).reconciling, what="needs_reconciliation"
        )
        await until(
            pilot,
            lambda: any("A chat item needs reconciliation" in t for t in toasts(app)),
            what="the alert",
        )
        assert "1 needs reconciliation" in app.sub_title
        assert panel(app).rows()[0].work_id == work_id

    drive(app, scenario)


def test_work_paths_route_to_the_item_and_only_it_is_read_again(home: Home, monkeypatch):
    root = home.root
    assert path_routes.route(
        root, str(root / "work/wrk_1/events/00000002.json")
    ) == path_routes.Route("work", None, "wrk_1")
    assert path_routes.route(root, str(root / "work/wrk_1/item.json")) == path_routes.Route(
        "work", None, "wrk_1"
    )
    assert path_routes.route(root, str(root / "ledger/open/wrk_1")) == path_routes.Route(
        "work", None, "wrk_1"
    )
    for quiet in (
        "work/wrk_1/lease.json",
        "work/wrk_1/input.json",
        "work/wrk_1",
        "work/wrk_1/events/.tmp-1",
        "ledger/open",
    ):
        assert path_routes.route(root, str(root / quiet)) is None, quiet

    first, second = running(home), queued(home)
    f = Feed(home)
    f.rescan()
    ledger.claim(home, second.work_id, holder="worker")
    loads: list[str] = []
    real = ledger.load
    monkeypatch.setattr(
        ledger, "load", lambda h, work_id, **kw: loads.append(work_id) or real(h, work_id, **kw)
    )
    monkeypatch.setattr(home, "crew_keys", lambda: pytest.fail("a full rescan for one event"))
    update = f.apply(
        [
            str(root / "work" / second.work_id / "events" / "00000002.json"),
            str(root / "work" / second.work_id / "item.json"),
        ]
    )
    assert loads == [second.work_id]  # one read of the one item touched
    assert update.view.work[second.work_id].state == "running"
    assert update.view.work[first.work_id] is f.view.work[first.work_id]
    assert f.apply([str(root / "work" / first.work_id / "lease.json")]) is None


def test_a_ledger_that_cannot_be_listed_is_reported_once_and_crews_still_show(
    home: Home, project: Path
):
    jack = crew(home, "Jack", project=project)
    f = Feed(home)
    first = f.rescan()
    work_id = ledger.work_id_for_assignment(jack.assignment_id)
    assert set(first.view.work) == {work_id}
    os.rename(home.root / "work", home.root / "elsewhere")
    os.symlink(home.root / "elsewhere", home.root / "work")  # never followed
    update = f.rescan()
    assert set(update.view.crews) == {"jack"}  # the crew panels do not pay for it
    assert set(update.view.work) == {work_id}  # what was read last
    assert [a.title for a in update.alerts] == ["The work ledger could not be read"]
    assert f.rescan().alerts == []  # said once, not every rescan


@needs_tmux
def test_c_on_an_assignment_dismisses_its_crew_like_d(home: Home, project: Path):
    """The cockpit's cancel goes through dismissal: window closed, mail bounced, crew gone
    from the Crew panel and recruitable again with a handoff."""
    from captain_tui.runtime.launch import launcher
    from state.crew import crewlog, protocol

    server = PrivateTmux()
    try:
        start = launcher(
            home,
            name="Jack",
            key="jack",
            agent="program",
            program="sleep 600",
            socket=server.socket,
            cwd=str(project),
        )
        jack = protocol.recruit(
            home, "Jack", "Wait", cwd=str(project), agent="program", launch=start
        )
        pane = crewlog.load(home, "jack")[0].pane
        work_id = ledger.work_id_for_assignment(jack.assignment_id)
        app = cockpit(home)

        async def scenario(pilot):
            await select_row(pilot, "work", work_id)
            await pilot.press("c")
            confirm = await until(
                pilot, lambda: isinstance(app.screen, ConfirmScreen) and app.screen
            )
            assert "Jack will be dismissed with it" in confirm.body
            await pilot.press("y")
            await until(
                pilot,
                lambda: any("Jack is dismissed" in t for t in toasts(app)),
                what="the outcome toast",
            )
            await until(pilot, lambda: app.view.crew("jack") is None, what="Jack's row gone")

        drive(app, scenario)
        assert any(
            t.startswith("Cancelled Jack's task “Wait”: the stop is confirmed.")
            for t in toasts(app)
        )
        assert not any(work_id in t or jack.assignment_id in t for t in toasts(app))
        snapshot, _ = crewlog.load(home, "jack")
        assert snapshot.dismissed_at is not None
        assert ledger.get(home, work_id).state == "cancelled"
        assert len(home.store.names(home.bounces_dir("jack"))) == 1  # the unread task
        gone = server.tmux("display-message", "-p", "-t", pane.pane_id, "#{pane_id}", check=False)
        assert gone.returncode != 0 or gone.stdout.strip() != pane.pane_id
    finally:
        server.kill()

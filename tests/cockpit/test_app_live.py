"""The cockpit stays current: records written by other processes reach the right panel, a
bad or vanished file never crashes it, and the periodic rescan repairs missed events."""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest
from conftest import REPO
from support.cockpit import Cockpit, as_crew, crew, drive, toasts, until
from support.tmux import PrivateTmux, needs_tmux

from captain_tui.cockpit.app import CaptainApp
from captain_tui.cockpit.feed import alerts, home_feed, path_routes, watcher
from state.clock import now
from state.crew import crewlog, protocol
from state.crew.protocol import crew_status
from state.home import Home
from state.records import RingStamp
from state.store import encode

pytestmark = pytest.mark.usefixtures("private_config")  # support/cockpit_env.py


def cockpit(home: Home, **knobs) -> CaptainApp:
    app = Cockpit(home, run_doorbell=False)
    for name, value in knobs.items():
        setattr(app, name, value)
    return app


async def captain_cli(home: Home, cwd: Path, *args: str, env: dict | None = None) -> None:
    """Another process writes into the home: the real CLI (run off the event loop, so the
    cockpit keeps running meanwhile)."""
    full = {k: v for k, v in os.environ.items() if not k.startswith("CAPTAIN_")}
    full.update({"CAPTAIN_HOME": str(home.root), "PYTHONPATH": str(REPO), **(env or {})})
    proc = await asyncio.to_thread(
        subprocess.run,
        [sys.executable, "-m", "captain_tui", *args],
        cwd=cwd,
        env=full,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert proc.returncode == 0, proc.stderr


# -- other processes -------------------------------------------------------------------------


def test_records_from_other_processes_reach_the_right_panels(home: Home, project: Path):
    jack = crew(home, "Jack", project=project)
    app = cockpit(home)

    async def scenario(pilot):
        assert app.view.questions() == []
        # a crew process asks: Questions and Notifications, and Jack's state
        await captain_cli(home, project, "ask", "Jack", "Squash the commits?", env=jack.env)
        await until(pilot, lambda: app.view.questions(), what="the question row")
        assert app.view.questions()[0].text == "Squash the commits?"
        assert [n.status for n in app.view.notifications()] == ["asked"]
        assert app.view.crew("jack").state == "asked"
        panel = app.query_one("#questions")
        assert panel._keys == [app.view.questions()[0].question_id]  # on screen, not only data
        # the captain answers from a shell: the question goes, Jack's unread mail goes up
        q = app.view.questions()[0]
        await captain_cli(
            home,
            project,
            "answer",
            "Jack",
            q.question_id,
            "Yes",
            "--assignment",
            jack.assignment_id,
        )
        await until(pilot, lambda: not app.view.questions(), what="the question to go")
        await until(pilot, lambda: app.view.crew("jack").unread == 2, what="2 unread")
        # another captain recruits: a new crew row
        await captain_cli(home, project, "crew", "Gibbs", "--task", "Docs", "--no-launch")
        await until(pilot, lambda: app.view.crew("gibbs"), what="Gibbs's row")
        assert "gibbs" in app.query_one("#crew")._keys

    drive(app, scenario)


def test_a_held_doorbell_shows_in_doorbells_and_in_the_crew_row(home: Home, project: Path):
    jack = crew(home, "Jack", project=project)
    app = cockpit(home)

    async def scenario(pilot):
        assert app.view.doorbells() == []
        stamp = RingStamp(
            crew="Jack",
            incarnation_id=jack.incarnation_id,
            gate="human_draft",
            held_since=now(),
            held_head=jack.message_id,
        )
        home.store.publish(home.ring_stamp_path("jack"), encode(stamp))
        await until(pilot, lambda: app.view.doorbells(), what="the held doorbell")
        assert app.view.doorbells()[0].gate == "human_draft"
        assert app.view.crew("jack").gate == "human_draft"
        home.store.publish(
            home.ring_stamp_path("jack"),
            encode(stamp.model_copy(update=dict(gate=None, held_since=None))),
        )
        await until(pilot, lambda: not app.view.doorbells(), what="the gate to clear")

    drive(app, scenario)


def test_an_event_updates_only_the_crew_it_touched(home: Home, project: Path, monkeypatch):
    crew(home, "Jack", project=project)
    gibbs = crew(home, "Gibbs", "Docs", project=project)
    f = home_feed.Feed(home)
    first = f.rescan()
    assert set(first.view.crews) == {"jack", "gibbs"}
    message = protocol.tell(home, "Gibbs", "More", assignment_id=gibbs.assignment_id)

    loads: list[str] = []
    real_load = crewlog.load
    monkeypatch.setattr(
        crewlog, "load", lambda h, key, **kw: loads.append(key) or real_load(h, key, **kw)
    )
    monkeypatch.setattr(home, "crew_keys", lambda: pytest.fail("a full rescan for one event"))
    update = f.apply([str(home.mail_dir("gibbs") / f"{message.message_id}.json")])
    assert update is not None
    assert update.view.crews["gibbs"].crew.unread == 2
    assert update.view.crews["jack"] is first.view.crews["jack"]  # untouched, shared
    assert loads == []  # mail does not re-read the crew's history
    assert f.apply([str(home.root / "locks" / "crew-gibbs.lock")]) is None


def test_the_feed_agrees_with_crew_status(home: Home, project: Path):
    """The feed keeps its own cache; its counts must be state's (mailbox's) answers."""
    jack = crew(home, "Jack", project=project)
    gibbs = crew(home, "Gibbs", "Docs", project=project)
    crew(home, "Anne", "Tests", project=project)
    protocol.tell(home, "Jack", "One", assignment_id=jack.assignment_id)
    protocol.inbox(home, "Gibbs", deliver=lambda batch: None, ctx=as_crew(gibbs))
    q = protocol.ask(home, "Gibbs", "Why?", ctx=as_crew(gibbs))
    protocol.dismiss(home, "Anne")
    view = home_feed.Feed(home).rescan().view
    for row in crew_status(home):
        shown = view.crews[row["name"].lower()]
        assert shown.crew.unread == row["unread"], row["name"]
        assert (shown.question.question_id if shown.question else None) == row["question_id"]
        assert shown.crew.unacknowledged == row["unacknowledged"]
    assert "anne" not in [row.key for row in view.crew_rows()]  # dismissed: no crew row
    assert view.questions()[0].question_id == q.question_id


# -- bad and vanishing files -----------------------------------------------------------------


def test_a_deleted_record_and_a_quarantined_one_do_not_crash_the_cockpit(home: Home, project: Path):
    jack = crew(home, "Jack", project=project)
    asked = protocol.ask(home, "Jack", "Which?", ctx=as_crew(jack))
    app = cockpit(home)

    async def scenario(pilot):
        await until(pilot, lambda: app.view.notifications(), what="the notification")
        # a record vanishes under the cockpit
        (home.notifications_dir("jack") / f"{asked.delivery_id}.json").unlink()
        await until(pilot, lambda: not app.view.notifications(), what="the row to go")
        # garbage appears where mail lives: quarantined, reported, the rest still served
        (home.mail_dir("jack") / "msg_garbage.json").write_bytes(b"\xff not json")
        await until(
            pilot, lambda: any("quarantined" in t for t in toasts(app)), what="the quarantine toast"
        )
        assert list(home.mail_dir("jack").glob("msg_garbage*")) == []
        assert app.view.crew("jack").unread == 1 and app.view.questions()
        # and a whole crew directory that is not a crew
        (home.root / "crew" / "NotAKey").mkdir()
        protocol.tell(home, "Jack", "still here", assignment_id=jack.assignment_id)
        await until(pilot, lambda: app.view.crew("jack").unread == 2, what="later mail")

    drive(app, scenario)
    assert app.return_code in (None, 0)
    reasons = [json.loads(p.read_text()) for p in (home.root / "quarantine").glob("*.reason")]
    assert any("msg_garbage" in r["path"] for r in reasons)


# -- the rescan repairs what the watcher missed -----------------------------------------------


def test_a_missed_event_is_repaired_by_the_periodic_rescan(home: Home, project: Path):
    jack = crew(home, "Jack", project=project)
    app = cockpit(home, watch_home=False, rescan_every=0.3)  # a watcher that hears nothing

    async def scenario(pilot):
        protocol.ask(home, "Jack", "Anyone there?", ctx=as_crew(jack))
        await until(pilot, lambda: app.view.questions(), what="the rescan to find it")

    drive(app, scenario)


def test_a_watcher_error_triggers_a_rescan(home: Home, project: Path, monkeypatch):
    jack = crew(home, "Jack", project=project)
    written = []
    app = cockpit(home, rescan_every=3600.0)  # no periodic rescan within the test

    async def broken_awatch(*args, **kwargs):
        while not app.scanned:  # after the start-up scan, so only a later rescan can help
            await asyncio.sleep(0.01)
        protocol.ask(home, "Jack", "Hello?", ctx=as_crew(jack))
        written.append(True)
        raise RuntimeError("inotify watch limit reached")
        yield  # pragma: no cover - makes this an async generator

    monkeypatch.setattr(watcher, "awatch", broken_awatch)
    monkeypatch.setattr(watcher, "RETRY_SECONDS", 30.0)  # no second watcher within the test

    async def scenario(pilot):
        await until(pilot, lambda: written, what="the watcher to fail")
        await until(pilot, lambda: app.view.questions(), what="the rescan after the error")

    drive(app, scenario)


def test_the_watcher_process_reports_a_record_published_by_rename(tmp_path: Path):
    """The watcher process (watchfiles in a child) says it is up, then reports a record
    published the store's way (a temp file renamed into place) as added."""
    import select

    root = tmp_path / "home"
    (root / "mail" / "jack").mkdir(parents=True)
    proc = subprocess.Popen(
        [sys.executable, "-c", watcher._WATCHER, str(root), "20", "5", "1000"],
        stdout=subprocess.PIPE,
        text=True,
    )

    def batch() -> set[tuple[int, str]]:
        ready, _, _ = select.select([proc.stdout], [], [], 30)
        assert ready, "the watcher process said nothing"
        return {(change, path) for change, path in json.loads(proc.stdout.readline())}

    try:
        assert batch() == set()  # up
        tmp = root / "mail" / "jack" / ".tmp-1"
        tmp.write_text("{}")
        os.replace(tmp, root / "mail" / "jack" / "msg_1.json")
        wanted = (1, str(root / "mail" / "jack" / "msg_1.json"))
        seen: set[tuple[int, str]] = set()
        for _ in range(10):  # a quiet second reports [] ; the change comes within a few
            seen |= batch()
            if wanted in seen:
                break
        assert wanted in seen, seen
    finally:
        proc.kill()
        proc.wait()


def test_a_folder_the_home_gains_never_costs_a_record_written_next_to_it(tmp_path: Path):
    """The watcher process keeps hearing the folders it watches while the home gains new
    ones: a record written in acks/jack just after a new top-level folder appeared (a crew's
    first returned/ marker, then the ack of its idle notification) is reported, every time.
    A watcher that restarted one watch over all the folders lost most of them."""
    import select

    root = tmp_path / "home"
    (root / "acks" / "jack").mkdir(parents=True)
    proc = subprocess.Popen(
        [sys.executable, "-c", watcher._WATCHER, str(root), "20", "5", "300"],
        stdout=subprocess.PIPE,
        text=True,
    )
    seen: set[str] = set()

    def hear(until: float) -> None:
        while (left := until - time.monotonic()) > 0:
            ready, _, _ = select.select([proc.stdout], [], [], left)
            if ready:
                seen.update(path for _, path in json.loads(proc.stdout.readline()))

    try:
        ready, _, _ = select.select([proc.stdout], [], [], 30)
        assert ready and json.loads(proc.stdout.readline()) == []  # up
        wanted = set()
        for i in range(10):
            (root / f"returned{i}" / "jack").mkdir(parents=True)  # a folder the home gains
            record = root / "acks" / "jack" / f"dlv_{i}.json"
            record.write_text("{}")  # and a record next to it, at once
            wanted.add(str(record))
            hear(time.monotonic() + 0.05)  # the next pair while this one is being heard
        deadline = time.monotonic() + 10
        while wanted - seen and time.monotonic() < deadline:
            hear(time.monotonic() + 0.1)
        assert not wanted - seen, sorted(wanted - seen)
    finally:
        proc.kill()
        proc.wait()


def test_the_route_map_follows_the_store_layout(home: Home):
    root = home.root
    assert path_routes.route(root, str(root / "mail/jack/msg_1.json")) == path_routes.Route(
        "mail", "jack", "msg_1"
    )
    assert path_routes.route(root, str(root / "receipts/jack/msg_1.json")).kind == "read"
    assert path_routes.route(root, str(root / "bounces/jack/msg_1.json")).kind == "read"
    assert path_routes.route(root, str(root / "notifications/jack/dlv_1.json")).kind == "note"
    assert path_routes.route(root, str(root / "acks/jack/dlv_1.json")).kind == "acks"
    assert path_routes.route(root, str(root / "crew/jack/events/00000001.json")).kind == "crew"
    assert path_routes.route(root, str(root / "crew/jack/state.json")).kind == "crew"
    assert path_routes.route(root, str(root / "doorbell/jack.json")) == path_routes.Route(
        "bell", "jack"
    )
    assert path_routes.route(root, str(root / "quarantine/x.reason")).kind == "quarantine"
    for ignored in (
        "locks/crew-jack.lock",
        "returned/jack/dlv_1.json",
        "home.json",
        "mail/jack/.tmp-1-abc",
        "agents/jack/claude-settings.json",
    ):
        assert path_routes.route(root, str(root / ignored)) is None, ignored
    assert path_routes.route(root, "/elsewhere/mail/jack/msg_1.json") is None


# -- the pane preview ------------------------------------------------------------------------


@needs_tmux
def test_the_pane_preview_shows_the_selected_crews_pane_in_colour(home: Home, project: Path):
    from captain_tui.runtime.launch import launcher

    server = PrivateTmux()
    script = project / "paint.sh"
    script.write_text("printf '\\033[31mRED-MARK\\033[0m plain\\n'; exec sleep 600\n")
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
        protocol.recruit(home, "Jack", "Paint", cwd=str(project), agent="program", launch=start)
        app = cockpit(home, preview_every=0.2)

        async def scenario(pilot):
            screen = app.query_one("#preview #screen")
            await until(
                pilot,
                lambda: "RED-MARK" in str(getattr(screen.content, "plain", "")),
                what="the pane's text in the preview",
            )
            text = screen.content
            red = [span for span in text.spans if "RED" in text.plain[span.start : span.end]]
            assert red and red[0].style.color.number == 1  # ANSI red, as the pane printed it

        drive(app, scenario)
    finally:
        server.kill()


def test_queued_views_coalesce_but_alerts_are_never_dropped():
    from captain_tui.cockpit.app import FeedUpdated
    from widgets.view import HomeView

    quiet = FeedUpdated(home_feed.Update(HomeView()))
    loud = FeedUpdated(home_feed.Update(HomeView(), alerts=[alerts.Alert("asked", "t", "b")]))
    assert quiet.can_replace(FeedUpdated(home_feed.Update(HomeView())))  # only the newest matters
    assert not loud.can_replace(quiet)  # an alert must still be raised


def test_a_home_that_cannot_be_read_is_reported_and_read_again(
    home: Home, project: Path, monkeypatch
):
    from state.errors import CaptainError

    crew(home, "Jack", project=project)
    real = home.crew_keys
    calls = []

    def flaky() -> list[str]:
        calls.append(1)
        if len(calls) == 1:
            raise CaptainError("store_error", "crew/ is a symlink (never followed)")
        return real()

    monkeypatch.setattr(home, "crew_keys", flaky)
    app = cockpit(home)

    async def scenario(pilot):
        assert app.view.crew("jack") is not None  # the retry read it
        assert any("could not be read" in t and "symlink" in t for t in toasts(app))

    drive(app, scenario)


def test_events_arrive_through_the_watcher_not_a_rescan(home: Home, project: Path, monkeypatch):
    jack = crew(home, "Jack", project=project)
    finished_rescans = []
    real = home_feed.Feed.rescan

    def counted(self, progress=None):
        update = real(self, progress)
        finished_rescans.append(1)
        return update

    monkeypatch.setattr(home_feed.Feed, "rescan", counted)
    app = cockpit(home, rescan_every=3600.0)

    async def scenario(pilot):
        # start-up scan, then the one the watcher asks for once inotify is set up
        await until(pilot, lambda: len(finished_rescans) >= 2, what="the watcher to be up")
        protocol.ask(home, "Jack", "Heard me?", ctx=as_crew(jack))
        await until(pilot, lambda: app.view.questions(), what="the watcher's event")
        assert len(finished_rescans) == 2

    drive(app, scenario)


# -- garbage collection between events --------------------------------------------------------


def test_a_due_full_collection_waits_for_a_quiet_moment_and_stop_restores_pythons_rule():
    import gc

    from captain_tui.cockpit import heap

    before = gc.get_threshold()
    collector = heap.Collector()
    collector.start()
    try:
        assert gc.get_threshold()[2] == heap.NEVER  # allocation alone never starts one
        while gc.get_count()[2] < before[2]:  # as many young collections as Python waits for
            gc.collect(1)
        assert not collector.tick(quiet_for=0.0)  # an update just came: not now
        assert not collector.tick(quiet_for=heap.QUIET)  # start-up (the first scan) runs
        collector.freeze()  # start-up is over
        while gc.get_count()[2] < before[2]:  # (freezing counts afresh)
            gc.collect(1)
        assert not collector.tick(quiet_for=0.0)  # an update just came: not now
        assert collector.tick(quiet_for=heap.QUIET)  # a quiet moment: now
        assert gc.get_count()[2] == 0
        assert not collector.tick(quiet_for=heap.QUIET)  # and not again until due again
    finally:
        collector.stop()
    assert gc.get_threshold() == before


def test_a_due_full_collection_waits_while_a_person_types(home: Home, project: Path):
    """A full collection (tens to hundreds of ms) must not land between a key and its frame:
    while keys come less than ``QUIET`` apart, a due one waits; once they stop, it runs."""
    import gc

    from captain_tui.cockpit import heap

    crew(home, "Jack", project=project)
    app = cockpit(home)
    full: list[float] = []  # when each full collection started

    def note(phase: str, info: dict) -> None:
        if phase == "start" and info.get("generation") == 2:
            full.append(time.monotonic())

    async def scenario(pilot):
        due = gc.get_threshold()  # the app's: full collections never start by allocation
        assert due[2] == heap.NEVER
        gc.callbacks.append(note)
        try:
            pressed: list[float] = []
            for _ in range(10):
                while gc.get_count()[2] < 10:  # due, as Python's own rule has it
                    gc.collect(1)
                pressed.append(time.monotonic())
                await pilot.press("j" if len(pressed) % 2 else "k")
                await pilot.pause(0.15)
            typing = list(full)
            # none started within QUIET of a key (before: one on the next second's tick)
            assert not [t for t in typing if any(0 <= t - k < heap.QUIET for k in pressed)], (
                typing,
                pressed,
            )
            last = time.monotonic()
            await until(
                pilot, lambda: any(t > last for t in full), what="the collection once quiet"
            )
        finally:
            gc.callbacks.remove(note)

    drive(app, scenario)

"""The feed's full rescan on a big home (#28): the periodic one took 1.2 s on 100 crew with
50k messages and 50k notifications, and an event that arrived meanwhile waited for all of
it (the slowest event -> row in the bench: 1245 ms).

- An event never waits for a rescan: the pump's queue is read between two crews, the event
  applied and published at once, and the rescan's own result keeps it.
- A rescan lists again only the record folders that changed since it last listed them (a
  folder's mtime vouches for it once it is old enough that no change can hide in its tick).

The real feed and pump on a real home; records written through the protocol while the
rescan runs (from inside its per-crew read: the only way to be sure the event lands
mid-rescan without timing anything), queued as the watcher would queue them.
"""

from __future__ import annotations

import os
import threading
import time
from pathlib import Path

from support.cockpit import as_crew, crew

from captain_tui.cockpit.feed import home_feed
from captain_tui.cockpit.feed.pump import FeedPump
from state.crew import protocol
from state.home import Home

CREWS = 8


def _wait_for(predicate, what: str, timeout: float = 30.0):
    deadline = time.monotonic() + timeout
    while not (value := predicate()):
        if time.monotonic() >= deadline:
            raise AssertionError(f"timed out after {timeout} s waiting for {what}")
        time.sleep(0.005)
    return value


def test_events_during_a_rescan_are_shown_before_it_ends_and_kept_by_it(
    home: Home, project: Path, monkeypatch
):
    names = [f"Crew{i}" for i in range(CREWS)]
    recruits = [crew(home, name, project=project) for name in names]
    keys = [name.lower() for name in names]
    read: list[str] = []  # the crews the periodic rescan has read so far, in order
    published: list[tuple[int, home_feed.Update]] = []  # (len(read) then, the update)
    written: dict = {}
    feed = home_feed.Feed(home)
    pump = FeedPump(feed, lambda u: published.append((len(read), u)), rescan_every=3600.0)
    periodic = threading.Event()
    real = home_feed.Feed._refresh_crew

    def refresh_crew(self, key, alerts):
        view = real(self, key, alerts)
        if periodic.is_set():
            read.append(key)
        if len(read) == 2 and not written:
            # two crews into the rescan: mail for one it has read, a question from one it
            # has not read yet, and a crew it did not list (recruited now); queued as the
            # watcher queues what it saw
            (first, last), (n0, n1) = (recruits[0], recruits[-1]), (names[0], names[-1])
            tell = protocol.tell(home, n0, "more", assignment_id=first.assignment_id)
            asked = protocol.ask(home, n1, "which?", ctx=as_crew(last))
            crew(home, "Late", project=project)
            written.update(tell=tell, asked=asked)
            pump.request(
                [
                    str(home.mail_dir(keys[0]) / f"{tell.message_id}.json"),
                    str(home.root / "crew" / keys[-1] / "events"),
                    str(home.root / "crew" / "late" / "events"),
                ]
            )
        return view

    monkeypatch.setattr(home_feed.Feed, "_refresh_crew", refresh_crew)
    runner = threading.Thread(target=pump.run, daemon=True)
    runner.start()
    try:
        _wait_for(lambda: feed.scanned, "the first scan")
        start = len(published)
        periodic.set()
        pump.request_rescan()
        # the rescan's own update comes last: every crew it listed read, and "late"
        _wait_for(
            lambda: published[-1][0] >= CREWS + 1 and feed.view is published[-1][1].view,
            "the rescan to end",
        )
    finally:
        pump.stop()
        runner.join(30)
    assert written, "the rescan never reached its third crew"

    def shows_event(update: home_feed.Update) -> bool:
        view = update.view
        first = view.crew(keys[0])
        return (
            first is not None
            and first.unread == 2
            and any(q.question_id == written["asked"].question_id for q in view.questions())
            and view.crew("late") is not None
        )

    shown = [n for n, u in published[start:] if shows_event(u)]
    assert shown, "the event was never published"
    # published while the rescan still had crews to read (the two before the event, and
    # "late", read by the event itself); before the fix, only once it had read them all
    assert shown[0] <= 3 < CREWS, (shown[0], CREWS)
    final = published[-1][1]
    assert shows_event(final), "the rescan's own result lost the event's rows"
    assert set(final.view.crews) == {*keys, "late"}


RECORD_FOLDERS = ("mail", "receipts", "bounces", "notifications", "acks")


def test_a_rescan_lists_again_only_the_record_folders_that_changed(
    home: Home, project: Path, monkeypatch
):
    names = ["Jack", "Gibbs", "Anne"]
    recruits = [crew(home, name, project=project) for name in names]
    for name, r in zip(names, recruits):
        protocol.tell(home, name, "one more thing", assignment_id=r.assignment_id)
        protocol.ask(home, name, "which one?", ctx=as_crew(r))
    feed = home_feed.Feed(home)
    feed.rescan()  # every folder was made just now: listed, nothing noted

    def settle_all() -> None:  # every folder's last change an hour ago
        past = time.time() - 3600
        for top in RECORD_FOLDERS:
            if (home.root / top).is_dir():
                for folder in (home.root / top).iterdir():
                    os.utime(folder, (past, past))

    settle_all()
    listed: list[tuple[str, str]] = []
    real = home.store.names

    def names_of(directory, *args, **kwargs):
        parts = Path(directory).relative_to(home.root).parts
        if parts[0] in RECORD_FOLDERS:
            listed.append((parts[0], parts[1]))
        return real(directory, *args, **kwargs)

    monkeypatch.setattr(home.store, "names", names_of)
    before = feed.rescan().view
    assert listed, "the settled folders were listed once, to note them"
    listed.clear()
    again = feed.rescan().view
    assert listed == []  # before the fix: every record folder of every crew, every rescan
    assert again.crews == before.crews

    # a record written now (no watcher): its folder changed, so it is listed and seen
    protocol.tell(home, "Gibbs", "and this", assignment_id=recruits[1].assignment_id)
    listed.clear()  # what tell itself listed
    view = feed.rescan().view
    assert listed == [("mail", "gibbs")]
    assert view.crew("gibbs").unread == 3 and view.crew("jack").unread == 2
    # changed just now, its mtime cannot vouch for it yet: listed on every rescan until then
    listed.clear()
    feed.rescan()
    assert listed == [("mail", "gibbs")]
    settle_all()
    feed.rescan()  # noted
    listed.clear()
    feed.rescan()
    assert listed == []

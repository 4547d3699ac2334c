"""An event never waits for a full rescan (#28): on a big home the periodic rescan takes a
second or more, and an event that arrived meanwhile used to wait for all of it (the slowest
event -> row in the bench: 1.2 s). Now the pump's queue is read between two crews of the
rescan, the event is applied and published at once, and the rescan's own result keeps it.

The real feed and pump on a real home; records written through the protocol while the
rescan runs (from inside its per-crew read: the only way to be sure the event lands
mid-rescan without timing anything), queued as the watcher would queue them.
"""

from __future__ import annotations

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

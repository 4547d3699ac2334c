"""What an idle cockpit asks of the ledger does not grow with the ledger's history (issue 24,
point 3).

- A rescan (the periodic one, every 30 s) reads as many directory entries (files) or runs as
  many statements fetching as many rows (PostgreSQL) with 4 times the finished items: it
  reads what the Work panel shows, not what the ledger ever held.
- On PostgreSQL, while the ledger listener is connected, the Work panel is fed by its
  notifications alone: an idle cockpit runs no statement at all (before: the Work panel's
  re-read every ``work_every``), and another writer's item still reaches the feed.

Counted on the way through to the real disk and server (``support.counting``); the feed and
its pump and listener are the cockpit's own, on threads, without the screen. Waits poll with
deadlines.
"""

from __future__ import annotations

import threading
import time
from pathlib import Path

import pytest
from support.counting import Entries, Statements
from support.ledger_backends import open_ledgers

from captain_tui.cockpit.feed import work_feed as feed_work
from captain_tui.cockpit.feed.home_feed import Feed
from captain_tui.cockpit.feed.listener import LedgerListener
from captain_tui.cockpit.feed.pump import FeedPump
from state.home import Home
from state.work import files, ledger

SHOWN = 3  # finished rows the panel shows (FINISHED_SHOWN), small so history dwarfs it


def _finished(home: Home, n: int) -> None:
    for i in range(n):
        work_id = ledger.accept(home, source="chat", input={"n": i}, requester="alice").work_id
        ledger.cancel(home, work_id, actor="alice")


def test_a_rescan_reads_no_more_with_four_times_the_history(
    tmp_path: Path, ledgers, monkeypatch
) -> None:
    monkeypatch.setattr(feed_work, "FINISHED_SHOWN", SHOWN)
    monkeypatch.setattr(files, "FINISHED_KEPT", SHOWN + 2, raising=False)
    home = ledgers.home(tmp_path / "home")
    for i in range(2):  # open items: shown, so read on every rescan
        ledger.accept(home, source="chat", input={"open": i}, requester="alice")
    _finished(home, 10)
    feed = Feed(home)
    feed.rescan()  # the first: every row read once

    def steady() -> tuple:
        feed.rescan()  # reads the finished rows it has not read yet, once
        before = entries.read
        statements and statements.take()
        feed.rescan()  # as every later one: the finished rows held are not read again
        return (entries.read - before, *(statements.take() if statements else ()))

    statements = Statements(monkeypatch) if ledgers.postgres else None
    entries = Entries(monkeypatch)
    small = steady()
    _finished(home, 30)
    big = steady()
    assert big == small, (small, big)
    assert len(feed.view.work) == 2 + SHOWN


class CountingFeed(Feed):
    """The feed, saying how many Work panel re-reads it has finished."""

    work_rescans = 0

    def rescan_work(self):
        try:
            return super().rescan_work()
        finally:
            self.work_rescans += 1


@pytest.fixture
def pg(request):
    with open_ledgers(request, "postgresql") as made:
        yield made


def test_an_idle_cockpit_asks_nothing_while_its_listener_is_connected(
    tmp_path: Path, pg, monkeypatch
) -> None:
    home = pg.home(tmp_path / "home")
    _finished(home, 5)
    published: list = []
    feed = CountingFeed(home)
    pump = FeedPump(feed, published.append, rescan_every=600.0, work_every=0.1)
    listener = LedgerListener(home, pump)
    threads = [threading.Thread(target=t.run, daemon=True) for t in (pump, listener)]

    def until(predicate, what: str, timeout: float = 15.0) -> None:
        deadline = time.monotonic() + timeout
        while not predicate():
            assert time.monotonic() < deadline, f"timed out waiting for {what}"
            time.sleep(0.02)

    statements = Statements(monkeypatch)
    for t in threads:
        t.start()
    try:
        until(lambda: getattr(pump, "listening", True), "the listener to connect")
        # its connection asks for one re-read of the Work panel: let it be done
        until(lambda: feed.work_rescans, "the re-read after connecting")
        seen = len(published)
        statements.take()
        # ten of the Work panel's own clock periods, idle
        deadline = time.monotonic() + 10 * pump.work_every
        while time.monotonic() < deadline:
            time.sleep(pump.work_every)
        asked = list(statements.statements)
        assert statements.take() == (0, 0), asked
        # and it is fed: another writer's item reaches the view by its notification
        item = ledger.accept(home, source="chat", input={"new": 1}, requester="bob")
        statements.take()
        until(
            lambda: any(item.work_id in u.view.work for u in published[seen:]),
            "the new item in the feed",
        )
    finally:
        listener.stop()
        pump.stop()
        for t in threads:
            t.join(10)


def test_the_ui_thread_sorts_no_work_row_when_it_shows_the_feeds_view(home: Home) -> None:
    """The feed's thread puts the Work panel's rows in order once per view; showing it under
    each filter, as the panel does on the UI thread, sorts nothing (it sorted every row
    twice per update). Sorts are counted as the interpreter calls them (``sys.setprofile``)."""
    import sys

    from widgets.view import WORK_FILTERS

    ids = [
        ledger.accept(home, source="chat", input={"n": i}, requester="alice").work_id
        for i in range(6)
    ]
    for work_id in ids[:3]:
        ledger.cancel(home, work_id, actor="alice")
    ledger.claim(home, ids[4], holder="bob")
    view = Feed(home).rescan().view  # as the pump hands it to the app
    sorts: list[str] = []

    def profile(frame, event, arg) -> None:
        if event == "c_call" and getattr(arg, "__name__", "") in ("sorted", "sort"):
            sorts.append(arg.__name__)

    sys.setprofile(profile)
    try:
        shown = {state: view.work_rows(state) for state in WORK_FILTERS}
    finally:
        sys.setprofile(None)
    assert sorts == []
    rows, matched = shown["all"]
    assert matched == 6 and rows[0].work_id == ids[4]  # running first
    assert [r.work_id for r in rows[1:3]] == [ids[5], ids[3]]  # then queued, newest first
    assert [r.work_id for r in rows[3:]] == sorted(ids[:3], reverse=True)  # finished last
    assert [r.work_id for r in shown["finished"][0]] == sorted(ids[:3], reverse=True)

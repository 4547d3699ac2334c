"""The Work panel reads what it shows, not the ledger's history (issue 24, point 3).

On both backends (tests/support/ledger_backends.py): ``recent_finished_ids`` names the
newest finished items and no open one; a Work panel rescan reads the open items and at most
``FINISHED_SHOWN`` finished ones, never lists every work ID, and reads a finished item once;
an old item that finishes while the cockpit watches stays shown. Reads are counted by a
wrapper around the real backend (every call goes through to it).
"""

from __future__ import annotations

from pathlib import Path

import pytest

from captain_tui.cockpit.feed import work_feed as feed_work
from state.work import ledger


def _made(home, n: int) -> list[str]:
    return [
        ledger.accept(home, source="chat", input={"n": i}, requester="alice").work_id
        for i in range(n)
    ]


def _cancel(home, ids: list[str]) -> None:
    for work_id in ids:
        ledger.cancel(home, work_id, actor="alice")


class Counting:
    """The real backend, with the calls this test counts recorded on the way through."""

    def __init__(self, real, calls: list) -> None:
        self.real = real
        self.calls = calls

    def item(self, work_id: str, *, repair: bool = False):
        self.calls.append(("item", work_id))
        return self.real.item(work_id, repair=repair)

    def all_ids(self) -> list[str]:
        self.calls.append(("all_ids", None))
        return self.real.all_ids()

    def __getattr__(self, name: str):
        return getattr(self.real, name)


@pytest.fixture
def counted(monkeypatch) -> list:
    calls: list = []
    real = ledger.backend_for
    monkeypatch.setattr(ledger, "backend_for", lambda home: Counting(real(home), calls))
    return calls


def test_recent_finished_ids_are_the_newest_finished_and_no_open_one(
    tmp_path: Path, ledgers
) -> None:  # noqa: F811
    home = ledgers.home(tmp_path / "home")
    ids = _made(home, 8)
    finished = ids[:3] + ids[5:]  # open ones in the middle and not at either end
    _cancel(home, finished)
    newest = sorted(finished, reverse=True)
    assert ledger.recent_finished_ids(home, 3) == newest[:3]
    assert ledger.recent_finished_ids(home, 100) == newest
    assert ledger.recent_finished_ids(home, 0) == []
    assert not set(ledger.recent_finished_ids(home, 100)) & set(ledger.open_ids(home))


def test_a_rescan_reads_the_open_items_and_the_newest_finished_only(
    tmp_path: Path, ledgers, counted, monkeypatch
) -> None:  # noqa: F811
    monkeypatch.setattr(feed_work, "FINISHED_SHOWN", 3)
    home = ledgers.home(tmp_path / "home")
    ids = _made(home, 12)
    still_open = ids[4:6]
    _cancel(home, [w for w in ids if w not in still_open])
    feed = feed_work.WorkFeed(home)
    counted.clear()
    rows = feed.rescan([], announce=False)
    reads = [w for what, w in counted if what == "item"]
    assert ("all_ids", None) not in counted  # never the whole history
    assert len(reads) <= len(still_open) + 3, reads
    newest_finished = sorted(set(ids) - set(still_open), reverse=True)[:3]
    assert set(rows) == set(still_open) | set(newest_finished)
    counted.clear()
    feed.rescan([], announce=False)
    # a finished row is read once: the next rescan reads only the open items again
    assert sorted(w for what, w in counted if what == "item") == sorted(still_open)


def test_an_old_item_that_finishes_while_watched_stays_shown(
    tmp_path: Path, ledgers, monkeypatch
) -> None:  # noqa: F811
    monkeypatch.setattr(feed_work, "FINISHED_SHOWN", 3)
    home = ledgers.home(tmp_path / "home")
    ids = _made(home, 6)
    oldest = ids[0]
    _cancel(home, ids[1:])
    feed = feed_work.WorkFeed(home)
    assert oldest in feed.rescan([], announce=False)
    _cancel(home, [oldest])  # the oldest ID finishes last: newest by when it finished
    rows = feed.apply([oldest], [], announce=False)
    assert rows is not None and rows[oldest].finished
    rows = feed.rescan([], announce=False)  # not among the newest IDs, yet still shown
    assert rows[oldest].finished
    assert sum(1 for r in rows.values() if r.finished) == 3

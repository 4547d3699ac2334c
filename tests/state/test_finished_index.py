"""The file ledger's newest finished items come from an index, not from listing history.

``ledger/finished/`` holds a marker for each of the newest ``FINISHED_KEPT`` finished items
(``state.work.files``): ``recent_finished_ids`` lists only it, so what it reads is bounded
by that many names whatever the history. Directory entries read are counted as
``os.scandir`` hands them out (``support.counting``). A home from before the index is
answered from the ``work/`` listing until a writer builds it, and a writer killed between an
item's terminal event and its markers (a real SIGKILL at the ledger's crash point) leaves
an item that still shows, which the next writer files.
"""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
from pathlib import Path

import pytest
from support.counting import Entries

from state.home import Home
from state.work import files, ledger
from state.work.crash import CRASH_ENV

REPO = Path(__file__).resolve().parents[2]
KEPT = 4


def _made(home: Home, n: int) -> list[str]:
    return [
        ledger.accept(home, source="chat", input={"n": i}, requester="alice").work_id
        for i in range(n)
    ]


def _cancel(home: Home, ids) -> None:
    for work_id in ids:
        ledger.cancel(home, work_id, actor="alice")


@pytest.fixture
def kept(monkeypatch) -> int:
    monkeypatch.setattr(files, "FINISHED_KEPT", KEPT, raising=False)
    return KEPT


def test_the_newest_finished_are_read_from_an_index_bounded_whatever_the_history(
    home: Home, kept: int, monkeypatch
) -> None:
    ids = _made(home, 30)
    still_open = ids[20:22]
    finished = [w for w in ids if w not in still_open]
    _cancel(home, finished)
    newest = sorted(finished, reverse=True)
    index = home.root / "ledger" / "finished"
    assert sorted(os.listdir(index)) == sorted(newest[:kept])  # trimmed as items end
    entries = Entries(monkeypatch)
    assert ledger.recent_finished_ids(home, 3) == newest[:3]
    # the index's names only: not the 30 item directories, nor the open markers
    assert entries.read <= kept, entries.read
    # a larger ask than the index holds is still answered, from the listing
    assert ledger.recent_finished_ids(home, 10) == newest[:10]


def test_an_old_item_finishing_late_is_not_among_the_newest_ids(home: Home, kept: int) -> None:
    ids = _made(home, 8)
    _cancel(home, ids[1:])
    _cancel(home, ids[:1])  # the oldest ID ends last: by ID it is not among the newest
    assert ledger.recent_finished_ids(home, kept) == sorted(ids[1:], reverse=True)[:kept]
    assert len(os.listdir(home.root / "ledger" / "finished")) == kept


def test_a_home_from_before_the_index_is_read_from_its_listing_until_a_writer_builds_it(
    home: Home, kept: int
) -> None:
    ids = _made(home, 9)
    _cancel(home, ids[:6])
    # as a home written before the index existed: no markers, no flag
    shutil.rmtree(home.root / "ledger" / "finished")
    (home.root / "ledger" / "finished.built").unlink()
    newest = sorted(ids[:6], reverse=True)
    before = sorted(p.relative_to(home.root) for p in home.root.rglob("*"))
    assert ledger.recent_finished_ids(home, 3) == newest[:3]
    assert sorted(p.relative_to(home.root) for p in home.root.rglob("*")) == before  # read only
    _cancel(home, ids[6:7])  # the first writer to close an item builds the index
    newest = sorted(ids[:7], reverse=True)
    assert sorted(os.listdir(home.root / "ledger" / "finished")) == sorted(newest[:kept])
    assert (home.root / "ledger" / "finished.built").exists()
    assert ledger.recent_finished_ids(home, 3) == newest[:3]


CHILD = """
import sys
from pathlib import Path
from state.home import Home
from state.work import ledger
ledger.cancel(Home(Path(sys.argv[1])), sys.argv[2], actor="alice")
print("the cancel finished: its crash point was never reached")
"""


def test_a_writer_killed_before_it_filed_a_finished_item_is_repaired(home: Home, kept: int) -> None:
    ids = _made(home, 6)
    _cancel(home, ids[:4])
    victim = ids[5]  # the newest: it belongs in the index once it ends
    env = {k: v for k, v in os.environ.items() if not k.startswith("CAPTAIN_")}
    env["PYTHONPATH"] = str(REPO) + os.pathsep + env.get("PYTHONPATH", "")
    env[CRASH_ENV] = "cancelled:after-snapshot"  # the terminal event and item.json written
    proc = subprocess.run(
        [sys.executable, "-c", CHILD, str(home.root), victim],
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert proc.returncode == -signal.SIGKILL, proc.stdout + proc.stderr[-2000:]
    assert ledger.get(home, victim).state == "cancelled"
    # neither in the index nor closed: still open, so a reader of the open set shows it
    assert victim not in ledger.recent_finished_ids(home, kept)
    assert victim in ledger.open_ids(home)
    # the next writer of the item repairs it: filed among the newest finished, and closed
    with ledger._item_transaction(home, victim) as tx:
        tx.item(victim, repair=True)
    assert ledger.recent_finished_ids(home, 1) == [victim]
    assert victim not in ledger.open_ids(home)
    index = sorted(os.listdir(home.root / "ledger" / "finished"))
    assert index == sorted(sorted([*ids[:4], victim], reverse=True)[:kept])

"""Setting up the home's watches keeps nothing per file: the first set-up lists every
folder to find the folders below it, but says nothing of what they hold (the cockpit's
first scan reads all of it). It kept a ``(ADDED, path)`` for every entry of the home and
threw them away: for the big home (250k entries) ~55 MB and ~0.3 s of the watcher
process, on the two cores the cockpit's first scan runs on (issue #28, budget 3).

Real inotify on a real tree; the memory is Python's own count (tracemalloc), not a clock.
"""

from __future__ import annotations

import os
import tracemalloc

import pytest

from captain_tui.runtime import homewatch

FOLDERS, FILES = 30, 600  # 18,000 records: ~4 MB of paths kept, where none should be
KEPT_LIMIT = 1024 * 1024  # bytes the set-up may hold at its peak, whatever the home's size


def _home(root) -> str:
    for i in range(FOLDERS):
        folder = root / "mail" / f"crew{i:03d}"
        folder.mkdir(parents=True)
        for j in range(FILES):
            os.close(os.open(folder / f"msg_01JTESTRECORDNUMBER{j:08d}.json", os.O_CREAT, 0o600))
    return str(root)


@pytest.mark.skipif(homewatch._Inotify.open() is None, reason="inotify is Linux's")
def test_the_first_setup_keeps_nothing_per_file_and_still_hears_every_folder(tmp_path):
    root = _home(tmp_path / "home")
    batches = homewatch.watch(root, debounce=20, step=5, rust_timeout=5000)
    tracemalloc.start()
    try:
        assert next(batches) == set()  # every watch is in place
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    try:
        assert peak < KEPT_LIMIT, f"the set-up held {peak:,} bytes for {FOLDERS * FILES} files"
        # and every folder is watched: a record in the last one is heard
        new = os.path.join(root, "mail", f"crew{FOLDERS - 1:03d}", "msg_01JTESTNEWRECORD.json")
        os.close(os.open(new, os.O_CREAT | os.O_WRONLY, 0o600))
        heard = set()
        while (homewatch.ADDED, new) not in heard:
            batch = next(batches)
            assert batch, "the watcher went quiet without hearing the new record"
            heard |= batch
    finally:
        batches.close()

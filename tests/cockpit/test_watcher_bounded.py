"""The cockpit's watcher process takes inotify watches for what the panels show, not one per
work item ever recorded (``work/`` holds two directories per item: at 100k items that is past
the kernel's limit), and still hears every write of the file ledger, in ``ledger/``.

The watcher process is run for real (``watcher._WATCHER``, as the cockpit starts it); its
watches are counted from the kernel (``/proc/PID/fdinfo``: one ``inotify wd:`` line per
watch). Batches are read with a deadline, never slept for.
"""

from __future__ import annotations

import json
import os
import select
import subprocess
import sys
import time
from pathlib import Path

from captain_tui.cockpit.feed import watcher
from state.home import Home
from state.work import ledger


def _watches(pid: int) -> int:
    count = 0
    for fd in os.listdir(f"/proc/{pid}/fdinfo"):
        try:
            text = Path(f"/proc/{pid}/fdinfo/{fd}").read_text()
        except OSError:
            continue
        count += sum(1 for line in text.splitlines() if line.startswith("inotify wd:"))
    return count


def _dirs_outside_work(root: Path) -> int:
    n = 1  # the home itself
    for where, dirs, _ in os.walk(root):
        if Path(where) == root:
            dirs[:] = [d for d in dirs if d != "work"]
        n += len(dirs)
    return n


def test_the_watcher_watches_no_work_item_directory_and_hears_the_ledger(tmp_path: Path):
    home = Home(tmp_path / "home")
    ids = [
        ledger.accept(home, source="chat", input={"n": i}, requester="alice").work_id
        for i in range(30)
    ]
    for work_id in ids[:20]:
        ledger.cancel(home, work_id, actor="alice")
    proc = subprocess.Popen(
        [
            sys.executable,
            "-c",
            watcher._WATCHER,
            str(home.root),
            "20",
            "5",
            "1000",
        ],
        stdout=subprocess.PIPE,
        text=True,
    )

    def batch() -> set[tuple[int, str]]:
        ready, _, _ = select.select([proc.stdout], [], [], 30)
        assert ready, "the watcher process said nothing"
        return {(change, path) for change, path in json.loads(proc.stdout.readline())}

    def hear(wanted: tuple[int, str]) -> None:
        seen: set[tuple[int, str]] = set()
        for _ in range(10):  # a quiet second says [] ; the change comes within a few
            seen |= batch()
            if wanted in seen:
                return
        raise AssertionError(f"{wanted} not heard: {sorted(seen)}")

    try:
        assert batch() == set()  # up: every watch is in place
        watches = _watches(proc.pid)
        assert watches <= _dirs_outside_work(home.root), watches  # none in work/
        assert watches < len(ids)  # 60 item directories would be 60 watches more
        # a claim (the item stays open) is heard on its open marker, touched after the event
        running = ids[25]
        ledger.claim(home, running, holder="bob")
        hear((2, str(home.root / "ledger" / "open" / running)))
        # an item ending is heard as its open marker goes
        queued = ids[26]
        ledger.cancel(home, queued, actor="alice")
        hear((3, str(home.root / "ledger" / "open" / queued)))
        # a top-level directory the home makes later is watched from then on, and what was
        # written in it before its watch was up is said too
        (home.root / "mail" / "jack").mkdir(parents=True)
        (home.root / "mail" / "jack" / "msg_1.json").write_text("{}")
        hear((1, str(home.root / "mail" / "jack" / "msg_1.json")))
        (home.root / "mail" / "jack" / "msg_2.json").write_text("{}")
        hear((1, str(home.root / "mail" / "jack" / "msg_2.json")))
        # and the watch it replaced is given back once it said what it held
        deadline = time.monotonic() + 30
        while _watches(proc.pid) > _dirs_outside_work(home.root):
            assert time.monotonic() < deadline, _watches(proc.pid)
            batch()  # the next batch, or the next quiet second
    finally:
        proc.kill()
        proc.wait()


def test_captain_waits_watch_takes_no_watch_in_work_either(tmp_path: Path):
    """The runner behind ``captain wait`` and ``watch`` watches the home in its own process
    by the same rule (``runtime.homewatch``), and wakes for a ledger write all the same."""
    from captain_tui.runtime.runner import Runner

    home = Home(tmp_path / "home")
    ids = [
        ledger.accept(home, source="chat", input={"n": i}, requester="alice").work_id
        for i in range(30)
    ]
    runner = Runner(home, ring=False)
    before = _watches(os.getpid())
    try:
        gen = runner._watcher()
        next(gen)  # the first batch: every watch is in place
        taken = _watches(os.getpid()) - before
        assert taken <= _dirs_outside_work(home.root), taken  # none in work/
        ledger.claim(home, ids[3], holder="bob")
        wanted = (2, str(home.root / "ledger" / "open" / ids[3]))
        deadline = time.monotonic() + 30
        while wanted not in next(gen):
            assert time.monotonic() < deadline, "the claim did not wake the runner"
    finally:
        runner.close()

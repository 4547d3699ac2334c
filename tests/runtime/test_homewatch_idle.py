"""The home's watcher sleeps while nothing changes, and still hears everything.

``runtime.homewatch`` reads inotify itself on Linux, blocking in one ``poll``: the
cockpit's watcher process (``watcher._WATCHER``, run for real, with the cockpit's own
numbers) wakes only for its quiet-timeout line while the home is quiet. watchfiles' loop
woke every ``STEP_MS`` (5 ms) to look at its queue: about 200 times a second. Wake-ups are
counted by the kernel (voluntary context switches of every thread of the process), over a
window measured in the watcher's own quiet lines, never in sleeps.
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
from captain_tui.runtime import homewatch
from state.home import Home
from state.work import ledger

ADDED = homewatch.ADDED
QUIET_LINES = 2  # the window: this many of the watcher's quiet lines
QUIET_MS = 1000  # their timeout (the cockpit's, watcher.WAKE_MS, is longer: a longer test)


def _wakeups(pid: int) -> int:
    total = 0
    for tid in os.listdir(f"/proc/{pid}/task"):
        for line in Path(f"/proc/{pid}/task/{tid}/status").read_text().splitlines():
            if line.startswith("voluntary_ctxt_switches:"):
                total += int(line.split()[1])
    return total


class _Process:
    def __init__(self, root: Path) -> None:
        self.proc = subprocess.Popen(
            [
                sys.executable,
                "-c",
                watcher._WATCHER,
                str(root),
                str(watcher.DEBOUNCE_MS),
                str(watcher.STEP_MS),
                str(QUIET_MS),
            ],
            stdout=subprocess.PIPE,
            text=True,
        )
        self.heard: set[tuple[int, str]] = set()

    def batch(self, timeout: float = 30) -> set[tuple[int, str]]:
        assert self.proc.stdout is not None
        ready, _, _ = select.select([self.proc.stdout], [], [], timeout)
        assert ready, "the watcher process said nothing"
        line = self.proc.stdout.readline()
        assert line, "the watcher process ended"
        return {(change, path) for change, path in json.loads(line)}

    def hear(self, wanted: tuple[int, str]) -> None:
        """``wanted`` was said, in this batch or one before it."""
        deadline = time.monotonic() + 30
        while wanted not in self.heard:
            assert time.monotonic() < deadline, f"{wanted} not heard: {sorted(self.heard)}"
            self.heard |= self.batch()

    def close(self) -> None:
        self.proc.kill()
        self.proc.wait()


def _busy_home(root: Path) -> Home:
    home = Home(root)
    for i in range(20):
        for kind in ("mail", "receipts", "notifications", "acks"):
            (root / kind / f"crew{i:02d}").mkdir(parents=True, exist_ok=True)
    for i in range(5):
        ledger.accept(home, source="chat", input={"n": i}, requester="alice")
    return home


def test_the_watcher_process_sleeps_while_the_home_is_quiet_and_still_hears_a_write(
    tmp_path: Path,
):
    home = _busy_home(tmp_path / "home")
    watching = _Process(home.root)
    try:
        assert watching.batch() == set()  # up: every watch is in place
        before = _wakeups(watching.proc.pid)
        for _ in range(QUIET_LINES):
            assert watching.batch() == set()  # nothing changed: a quiet line
        woke = _wakeups(watching.proc.pid) - before
        # one wake-up per quiet line (and a few for the kernel's own reasons); watchfiles'
        # 5 ms loop woke ~200 times a second: 400 here
        assert woke <= 10 * QUIET_LINES, woke
        target = home.root / "mail" / "crew07" / "msg_1.json"
        target.write_text("{}")
        watching.hear((ADDED, str(target)))
    finally:
        watching.close()


def test_a_directory_moved_into_the_home_is_said_whole(tmp_path: Path):
    """A directory that arrives already full (a rename into the home) is watched and its
    files are said as added: the readers route each file, none waits for the rescan."""
    home = _busy_home(tmp_path / "home")
    outside = tmp_path / "elsewhere" / "kim"
    (outside / "inner").mkdir(parents=True)
    (outside / "msg_1.json").write_text("{}")
    (outside / "inner" / "msg_2.json").write_text("{}")
    watching = _Process(home.root)
    try:
        assert watching.batch() == set()
        arrived = home.root / "mail" / "kim"
        os.rename(outside, arrived)
        watching.hear((ADDED, str(arrived / "msg_1.json")))
        watching.hear((ADDED, str(arrived / "inner" / "msg_2.json")))
        # and it is watched from then on
        (arrived / "inner" / "msg_3.json").write_text("{}")
        watching.hear((ADDED, str(arrived / "inner" / "msg_3.json")))
    finally:
        watching.close()


def _watches(pid: int) -> int:
    count = 0
    for fd in os.listdir(f"/proc/{pid}/fdinfo"):
        try:
            text = Path(f"/proc/{pid}/fdinfo/{fd}").read_text()
        except OSError:
            continue
        count += sum(1 for line in text.splitlines() if line.startswith("inotify wd:"))
    return count


def test_a_link_planted_in_the_home_is_not_followed_by_the_watcher(tmp_path: Path):
    """A crew process can write the home: a symbolic link to a big tree outside it (its
    own checkout, /usr) must not make the watcher take a watch per directory there (the
    kernel's limit is per user: the cockpit would lose its watches) nor report its files."""
    home = _busy_home(tmp_path / "home")
    outside = tmp_path / "outside"
    for i in range(60):
        (outside / f"d{i:02d}" / "deeper").mkdir(parents=True)
    (outside / "d00" / "secret.json").write_text("{}")
    (home.root / "mail" / "crew03" / "link").symlink_to(outside, target_is_directory=True)
    inside = sum(1 for _ in home.root.rglob("*") if _.is_dir() and not _.is_symlink()) + 1
    watching = _Process(home.root)
    try:
        assert watching.batch() == set()  # up
        assert _watches(watching.proc.pid) <= inside, (_watches(watching.proc.pid), inside)
        # a link made while it watches is not followed either
        (home.root / "mail" / "crew04" / "link").symlink_to(outside, target_is_directory=True)
        target = home.root / "mail" / "crew05" / "msg_1.json"
        target.write_text("{}")
        watching.hear((ADDED, str(target)))
        assert _watches(watching.proc.pid) <= inside, (_watches(watching.proc.pid), inside)
        assert not any("secret" in path for _, path in watching.heard), watching.heard
    finally:
        watching.close()

"""`captain demo` keeps to its own tmux: a crew recruited in it (`r`) opens on the demo's
private server, not on the default `captain` socket or the tmux the person is in, and
after quitting no tmux server, socket, window or process the demo started remains.

The real demo in a real terminal (a pane of a private tmux), driven by keys. Its tmux
sockets and temporary files go to a directory of this test's own (TMUX_TMPDIR, TMPDIR),
so even the bug this guards against cannot touch the person's own tmux; every process the
demo starts inherits a marker in its environment, which is how leftovers are found in
/proc, whoever they were reparented to.
"""

from __future__ import annotations

import os
import shlex
import shutil
import subprocess
import sys
import tempfile
import uuid
from pathlib import Path

from support.tmux import PrivateTmux, needs_tmux, poll

pytestmark = needs_tmux

MARK = "CAPTAIN_DEMO_TEST_MARK"


def _processes() -> dict[int, tuple[int, str, bytes]]:
    """pid -> (parent pid, command line, environment) of every process we may read."""
    out = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            stat = Path(f"/proc/{entry}/stat").read_text()
            cmdline = Path(f"/proc/{entry}/cmdline").read_bytes()
            environ = Path(f"/proc/{entry}/environ").read_bytes()
        except OSError:  # gone meanwhile, or not ours to read
            continue
        ppid = int(stat.rpartition(")")[2].split()[1])
        out[int(entry)] = (
            ppid,
            cmdline.replace(b"\0", b" ").decode(errors="replace").strip(),
            environ,
        )
    return out


def _marked(mark: str) -> dict[int, str]:
    """Processes the demo started (they carry its marker), wherever they now hang."""
    needle = f"{MARK}={mark}".encode()
    return {pid: cmd for pid, (_, cmd, env) in _processes().items() if needle in env.split(b"\0")}


def _descendants(root: int) -> dict[int, str]:
    procs = _processes()
    found, frontier = {}, [root]
    while frontier:
        parent = frontier.pop()
        for pid, (ppid, cmd, _) in procs.items():
            if ppid == parent and pid not in found:
                found[pid] = cmd
                frontier.append(pid)
    return found


def _styled(server: PrivateTmux, pane: str, text: str) -> str:
    """The line showing ``text`` with its colours: a field's look changes with focus."""
    plain = server.capture(pane).splitlines()
    styled = server.tmux("capture-pane", "-e", "-p", "-t", pane).stdout.splitlines()
    at = next((i for i, line in enumerate(plain) if text in line), None)
    return styled[at] if at is not None and at < len(styled) else ""


def _sockets(directory: Path) -> list[str]:
    return sorted(str(p) for p in directory.rglob("*") if p.is_socket())


class DemoRun:
    """``captain demo`` in a pane of a private tmux (the person's terminal), its tmux
    sockets and temporary files in a directory of its own, every process it starts
    carrying ``MARK``."""

    def __init__(self, tmp_path: Path, then: str = "") -> None:
        self.sandbox = Path(tempfile.mkdtemp(prefix="cdt-", dir="/tmp"))  # short: sockets
        self.mark = uuid.uuid4().hex
        self.outer = PrivateTmux()
        self.tmux_dir = self.sandbox / f"tmux-{os.getuid()}"
        self.default = self.tmux_dir / "captain"  # a crew with no --socket, outside tmux
        self.pane = "person"
        demo = shlex.join(
            [
                "env",
                "-u",
                "TMUX",
                "-u",
                "CAPTAIN_TMUX_SOCKET",
                f"TMUX_TMPDIR={self.sandbox}",
                f"TMPDIR={self.sandbox}",
                f"{MARK}={self.mark}",
                f"CAPTAIN_CONFIG_DIR={tmp_path / 'config'}",
                sys.executable,
                "-m",
                "captain_tui",
                "demo",
            ]
        )
        self.outer.tmux("new-session", "-d", "-x", "140", "-y", "40", "-s", self.pane, demo + then)
        self.shell = int(
            self.outer.tmux("display-message", "-p", "-t", self.pane, "#{pane_pid}").stdout.strip()
        )
        poll(
            lambda: "watching" in self.screen() and "Ada" in self.screen(),
            timeout=60,
            what="the demo's cockpit with its crew",
        )
        [self.socket] = poll(
            lambda: [s for s in _sockets(self.tmux_dir) if "captain-demo-" in s],
            timeout=10,
            what="the demo's private tmux socket",
        )
        assert any("tmux" in cmd for cmd in _marked(self.mark).values())  # the mark works

    def screen(self) -> str:
        return self.outer.capture(self.pane)

    def windows(self) -> list[str]:
        return subprocess.run(
            [shutil.which("tmux"), "-S", self.socket, "list-windows", "-a", "-F", "#{window_name}"],
            capture_output=True,
            text=True,
            timeout=10,
        ).stdout.split()

    def assert_nothing_left(self) -> None:
        try:
            poll(
                lambda: not _marked(self.mark),
                timeout=15,
                what="every process the demo started to end",
            )
        except AssertionError as err:
            raise AssertionError(f"{err}: {_marked(self.mark)}") from None
        left = {
            pid: cmd
            for pid, cmd in _descendants(self.shell).items()
            if not cmd.startswith("sleep 60")
        }
        assert not left, f"the demo's descendants outlived it: {left}"
        assert _sockets(self.sandbox) == [], "a tmux socket outlived the demo"
        assert not self.default.exists(), "the default captain socket was made"
        assert not list(self.sandbox.glob("captain-demo-*")), "the demo home outlived it"

    def close(self) -> None:
        self.outer.kill()
        for path in _sockets(self.sandbox):  # what a failure leaves: end it, clean up
            subprocess.run(
                [shutil.which("tmux"), "-S", path, "kill-server"], capture_output=True, timeout=10
            )
        shutil.rmtree(self.sandbox, ignore_errors=True)


def test_the_demos_recruit_stays_in_its_tmux_and_nothing_outlives_the_demo(tmp_path):
    run = DemoRun(tmp_path, then="; echo DEMO-EXITED-$?; sleep 60")
    outer, pane = run.outer, run.pane
    try:
        # r: recruit Zed from the form (name, tab tab to the task, ctrl+s)
        outer.key(pane, "r")
        poll(
            lambda: "Task (the first assignment)" in run.screen(),
            timeout=10,
            what="the recruit form",
        )
        outer.type(pane, "Zed")
        poll(lambda: "Zed" in run.screen(), timeout=10, what="the typed name")
        for field in ("shell — your", "▊▔"):  # tab to the agent, then to the task
            before = _styled(outer, pane, field)
            outer.key(pane, "Tab")
            poll(
                lambda: _styled(outer, pane, field) != before,
                timeout=10,  # noqa: B023
                what=f"the focus to reach the {field!r} field",
            )
        outer.type(pane, "Count the files.")
        poll(
            lambda: "▊ Count the files." in run.screen(),
            timeout=10,
            what="the typed task in the task box",
        )
        outer.key(pane, "C-s")
        try:
            poll(
                lambda: "Recruited Zed" in run.screen(),
                timeout=20,
                what="the recruit's confirmation",
            )
        except AssertionError as err:
            raise AssertionError(f"{err}\n{run.screen()}") from None
        assert "Zed" in run.windows(), (
            f"Zed is not on the demo's tmux ({run.windows()}); sockets: {_sockets(run.tmux_dir)}"
        )
        assert not run.default.exists(), "the demo's recruit opened the default socket"

        # enter: jump to the selected crew; the cockpit is not in the demo's tmux, so it
        # says how to attach (and never tmux_unavailable)
        outer.key(pane, "Enter")
        poll(
            lambda: "attach" in run.screen() and "tmux -S" in run.screen(),
            timeout=10,
            what="how to attach to the crew's pane",
        )
        assert "tmux_unavailable" not in run.screen()

        outer.key(pane, "C-q")
        poll(lambda: "DEMO-EXITED-0" in run.screen(), timeout=20, what="the demo to quit cleanly")
        run.assert_nothing_left()
    finally:
        run.close()


def test_closing_the_demos_terminal_leaves_nothing_behind(tmp_path):
    """The person closes the terminal (SIGHUP) instead of pressing ctrl+q."""
    run = DemoRun(tmp_path)
    try:
        run.outer.tmux("kill-pane", "-t", run.pane)  # the terminal window closes
        run.assert_nothing_left()
    finally:
        run.close()

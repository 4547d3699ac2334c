"""The tmux side of captain: which server, crew windows, reading and typing into panes.

Everything here talks to a real tmux, each argument taken literally (``literal``). Answers
about a pane are three-way on purpose: ``alive``, ``gone`` (confirmed: the server answered
and the pane is not there, or no server listens on the socket) and ``unknown`` (we could
not tell) — mail bounces only on a confirmed ``gone``.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import subprocess
import time
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Final

from state.errors import CaptainError
from state.records import Liveness, PaneLocator

DEFAULT_SOCKET = "captain"
DEFAULT_SESSION = "captain"
ALIVE: Final = "alive"  # state.records.Liveness, word by word
GONE: Final = "gone"
UNKNOWN: Final = "unknown"
TMUX_TIMEOUT = 5.0


def tmux_binary() -> str:
    found = shutil.which("tmux")
    if not found:
        raise CaptainError(
            "tmux_unavailable",
            "tmux is not installed or not on PATH; install it (e.g. apt-get "
            "install tmux) or recruit with --no-launch.",
        )
    return found


def socket_path_for(name: str) -> str:
    """Where tmux puts ``-L NAME``: $TMUX_TMPDIR (or /tmp)/tmux-UID/NAME."""
    base = os.environ.get("TMUX_TMPDIR") or "/tmp"
    return str(Path(base) / f"tmux-{os.getuid()}" / name)


def _socket_dir(socket: str) -> None:
    """Make tmux's own socket directory ($TMUX_TMPDIR/tmux-UID, private) when a server is to
    start in it and it is not there yet: tmux makes it for ``-L NAME`` but not for the
    ``-S PATH`` captain passes, so on a machine where tmux never ran yet the first crew
    window (the demo's first of all) failed with "error creating … No such file"."""
    parent = Path(socket).parent
    if parent.name == f"tmux-{os.getuid()}" and not parent.exists():
        with contextlib.suppress(FileExistsError):
            parent.mkdir(mode=0o700)


def resolve_socket(arg: str | None = None, env: Mapping[str, str] | None = None) -> str:
    """--socket NAME > $CAPTAIN_TMUX_SOCKET > the current $TMUX server > ``captain``.

    Returns a socket path; a NAME without a slash is a ``-L`` name.
    """
    env = os.environ if env is None else env
    choice = arg or env.get("CAPTAIN_TMUX_SOCKET")
    if not choice and env.get("TMUX"):
        return env["TMUX"].split(",")[0]
    choice = choice or DEFAULT_SOCKET
    return choice if "/" in choice else socket_path_for(choice)


@dataclass(frozen=True)
class PaneState:
    """Whether a pane's process ended and how (crew windows keep a dead pane readable)."""

    dead: bool
    status: int | None = None  # its exit status, when it exited
    signal: int | None = None  # the signal that killed it, when one did
    pid: int | None = None  # the pane's first process (a new server reuses pane IDs)


PANE_STATE = "#{pane_id}\t#{pane_dead}\t#{pane_dead_status}\t#{pane_dead_signal}\t#{pane_pid}"


def _pane_state(line: str) -> tuple[str, PaneState] | None:
    fields = line.split("\t")
    if len(fields) != 5 or not fields[0].startswith("%"):
        return None

    def number(text: str) -> int | None:
        return int(text) if text.strip().lstrip("-").isdigit() else None

    return fields[0], PaneState(
        fields[1] == "1", number(fields[2]), number(fields[3]), number(fields[4])
    )


def _no_server(stderr: str) -> bool:
    """tmux's words for "nothing listens on that socket"."""
    err = stderr.lower()
    return (
        "no server running" in err
        or "error connecting" in err
        or "no such file" in err
        or "connection refused" in err
    )


def _no_client(stderr: str) -> bool:
    """tmux's words for "no terminal is attached to switch"."""
    err = stderr.lower()
    return "no current client" in err or "can't find client" in err or "no clients" in err


@dataclass(frozen=True)
class PaneInfo:
    state: Liveness
    activity: float | None = None  # the window's last activity (epoch seconds)
    cursor: tuple[int, int] | None = None
    height: int | None = None
    dead: bool = False
    width: int | None = None
    tty: str | None = None  # the pane's terminal device (/dev/pts/N)
    pid: int | None = None  # the pane's first process
    alternate: bool = False  # a full-screen program drew on the alternate screen


class Tmux:
    """One tmux server, addressed by socket path."""

    def __init__(self, socket: str) -> None:
        self.socket = socket
        self.binary = tmux_binary()

    def run(self, *args: str, check: bool = True) -> subprocess.CompletedProcess:
        try:
            proc = subprocess.run(
                [self.binary, "-S", self.socket, *map(literal, args)],
                capture_output=True,
                text=True,
                errors="backslashreplace",
                timeout=TMUX_TIMEOUT,
                stdin=subprocess.DEVNULL,
            )  # an odd socket path's bytes
        except subprocess.TimeoutExpired:
            raise CaptainError(
                "tmux_unavailable",
                f"tmux on {self.socket} did not answer within {TMUX_TIMEOUT:.0f} s.",
            ) from None
        if check and proc.returncode != 0:
            raise CaptainError(
                "tmux_unavailable",
                f"tmux {args[0]} failed on {self.socket}: {proc.stderr.strip() or proc.returncode}",
            )
        return proc

    def server_alive(self) -> bool | None:
        """True/False when known; None when the socket exists but tmux will not say."""
        if not os.path.exists(self.socket):
            return False
        proc = self.run("list-sessions", "-F", "#{session_name}", check=False)
        if proc.returncode == 0:
            return True
        return False if _no_server(proc.stderr) else None

    def panes(self) -> tuple[Liveness, dict[str, PaneState]]:
        """Every pane of the server in one call: (alive | gone | unknown, pane id -> state).
        ``gone`` is confirmed: no server listens on the socket."""
        if not os.path.exists(self.socket):
            return GONE, {}
        try:
            proc = self.run("list-panes", "-a", "-F", PANE_STATE, check=False)
        except CaptainError:
            return UNKNOWN, {}
        if proc.returncode != 0:
            return (GONE if _no_server(proc.stderr) else UNKNOWN), {}
        out = {}
        for line in proc.stdout.splitlines():
            state = _pane_state(line)
            if state is not None:
                out[state[0]] = state[1]
        return ALIVE, out

    def pane_state(self, pane_id: str) -> PaneState | None:
        """One pane's life, asked of tmux: None when tmux will not say or it is not there."""
        proc = self.run("display-message", "-p", "-t", pane_id, "-F", PANE_STATE, check=False)
        state = _pane_state(proc.stdout.rstrip("\n")) if proc.returncode == 0 else None
        return state[1] if state is not None and state[0] == pane_id else None

    def last_lines(self, pane_id: str, count: int = 10) -> list[str]:
        """The last ``count`` lines of a pane's text (a dead pane's too), as plain text
        without colours; trailing blank lines and tmux's own "Pane is dead" line left out."""
        proc = self.run(
            "capture-pane", "-p", "-J", "-t", pane_id, "-S", f"-{count * 10}", check=False
        )
        if proc.returncode != 0:
            return []
        lines = [line.rstrip() for line in proc.stdout.splitlines()]
        while lines and (not lines[-1] or lines[-1].startswith("Pane is dead (")):
            lines.pop()
        return lines[-count:]

    def set_window_hook(self, window: str, hook: str, command: str) -> None:
        """A hook of one window (``set-hook -w``): ``command`` is a tmux command line."""
        self.run("set-hook", "-w", "-t", window, hook, command)

    # -- crew windows -------------------------------------------------------------------

    def open_window(
        self,
        session: str,
        name: str,
        cwd: str,
        env: dict[str, str],
        command: str,
        *,
        width: int = 200,
        height: int = 50,
    ) -> PaneLocator:
        """A new window named after the crew (one window per crew: activity is per crew),
        in ``session`` (created when there is none of that exact name). Every argument is
        taken literally (``run``; ``format_literal`` for the ones tmux expands)."""
        check_session(session)
        _socket_dir(self.socket)  # tmux makes it for -L, not for the -S captain passes
        shown = "#{session_id}\t#{window_id}\t#{pane_id}\t#{pane_pid}"
        where = ["-n", format_literal(name), "-c", format_literal(cwd)]
        where += [f"-e{k}={v}" for k, v in env.items()]
        for _ in range(2):  # a session another recruit made in between: a window in it
            target = self._session_id(session)
            if target is not None:
                proc = self.run(
                    "new-window",
                    "-d",
                    "-P",
                    "-F",
                    shown,
                    "-t",
                    f"{target}:",
                    *where,
                    "--",
                    command,
                    check=False,
                )
            else:
                proc = self.run(
                    "new-session",
                    "-d",
                    "-P",
                    "-F",
                    shown,
                    "-s",
                    format_literal(session),
                    "-x",
                    str(width),
                    "-y",
                    str(height),
                    *where,
                    "--",
                    command,
                    check=False,
                )
            if "duplicate session" not in proc.stderr:
                break
        fields = proc.stdout.strip().split("\t")
        if proc.returncode != 0 or len(fields) != 4:
            raise CaptainError(
                "tmux_unavailable",
                f"tmux could not open a window: {proc.stderr.strip() or proc.returncode}",
            )
        _, window_id, pane_id, pid = fields
        try:  # a crashed agent's pane stays readable
            self.run("set-option", "-w", "-t", window_id, "remain-on-exit", "on")
        except CaptainError:
            self.run("kill-window", "-t", window_id, check=False)  # no window left behind
            raise
        return PaneLocator(
            socket=self.socket,
            session=session,
            window_id=window_id,
            pane_id=pane_id,
            pane_pid=int(pid) if pid.isdigit() else None,
        )

    def _session_id(self, session: str) -> str | None:
        """The ID (``$N``) of the session named exactly ``session``: a ``-t`` name would be
        matched by prefix and pattern too, and read as a format."""
        proc = self.run("list-sessions", "-F", "#{session_id}\t#{session_name}", check=False)
        if proc.returncode != 0:
            if _no_server(proc.stderr) or not os.path.exists(self.socket):
                return None
            raise CaptainError(
                "tmux_unavailable",
                f"tmux list-sessions failed on {self.socket}: {proc.stderr.strip()}",
            )
        for line in proc.stdout.splitlines():
            sid, _, name = line.partition("\t")
            if name == session:
                return sid
        return None

    def pane(self, locator: PaneLocator) -> PaneInfo:
        alive = self.server_alive()
        if alive is False:
            return PaneInfo(GONE)
        if alive is None:
            return PaneInfo(UNKNOWN)
        proc = self.run(
            "display-message",
            "-p",
            "-t",
            locator.pane_id,
            "-F",
            "#{pane_id}\t#{window_activity}\t#{cursor_x}\t#{cursor_y}\t"
            "#{pane_height}\t#{pane_dead}\t#{pane_width}\t#{pane_tty}\t"
            "#{pane_pid}\t#{alternate_on}",
            check=False,
        )
        if proc.returncode != 0:
            err = proc.stderr.lower()
            if "can't find pane" in err or "can't find window" in err:
                return PaneInfo(GONE)
            return PaneInfo(UNKNOWN)
        fields = proc.stdout.rstrip("\n").split("\t")
        if len(fields) != 10 or fields[0] != locator.pane_id:
            return PaneInfo(GONE if fields and fields[0] != locator.pane_id else UNKNOWN)
        try:
            return PaneInfo(
                ALIVE,
                activity=float(fields[1] or 0),
                cursor=(int(fields[2]), int(fields[3])),
                height=int(fields[4]),
                dead=fields[5] == "1",
                width=int(fields[6]),
                tty=fields[7] or None,
                pid=int(fields[8]) if fields[8] else None,
                alternate=fields[9] == "1",
            )
        except ValueError:
            return PaneInfo(UNKNOWN)

    def capture(self, locator: PaneLocator, *, ansi: bool = False) -> str:
        args = ["capture-pane", "-p", "-t", locator.pane_id]
        if ansi:
            args.append("-e")
        return self.run(*args).stdout

    def send_literal(self, locator: PaneLocator, text: str) -> None:
        self.run("send-keys", "-t", locator.pane_id, "-l", "--", text)

    def send_bytes(self, locator: PaneLocator, data: bytes) -> None:
        """Raw bytes as keys (``send-keys -H``): say, a terminal's own erase character."""
        if data:
            self.run("send-keys", "-t", locator.pane_id, "-H", *(f"{b:02x}" for b in data))

    def send_enter(self, locator: PaneLocator) -> None:
        self.run("send-keys", "-t", locator.pane_id, "Enter")

    def send_key(self, locator: PaneLocator, key: str) -> None:
        """One named key (``Down``, ``Enter``) to the pane: only a start-up dialog's answer
        sends one (``runtime/dialogs.py``), and only while the pane shows that dialog."""
        assert key in ("Down", "Up", "Enter"), key
        self.run("send-keys", "-t", locator.pane_id, key)

    def in_mode(self, locator: PaneLocator) -> bool | None:
        """Whether the pane is in a tmux mode (copy mode, a chooser), where a key would go to
        tmux, not the program; None when tmux does not say."""
        proc = self.run(
            "display-message", "-p", "-t", locator.pane_id, "#{pane_in_mode}", check=False
        )
        if proc.returncode != 0 or proc.stdout.strip() not in ("0", "1"):
            return None
        return proc.stdout.strip() == "1"

    def kill_pane(self, locator: PaneLocator, *, timeout: float = 3.0) -> bool:
        """Kill the crew's window and confirm it is gone (True) or say we cannot (False)."""
        info = self.pane(locator)
        if info.state == GONE:
            return True
        self.run("kill-window", "-t", locator.window_id or locator.pane_id, check=False)
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.pane(locator).state == GONE:
                return True
            time.sleep(0.05)
        return False

    def switch_to(self, locator: PaneLocator) -> bool:
        """Switch the server's current client to the pane: False when no client is
        attached to switch (a detached session); any other failure is tmux_unavailable."""
        proc = self.run("switch-client", "-t", locator.pane_id, check=False)
        if proc.returncode == 0:
            return True
        if _no_client(proc.stderr):
            return False
        raise CaptainError(
            "tmux_unavailable",
            f"tmux switch-client failed on {self.socket}: {proc.stderr.strip() or proc.returncode}",
        )


def literal(arg: str) -> str:
    """``arg`` as tmux's own parser of its command line takes it literally: an argument
    that ends in ``;`` ends a command there (``a;`` is ``a`` and a new command), unless the
    ``;`` is escaped as ``\\;``, which tmux turns back into ``;``. The one rule for every
    argument captain gives tmux (``Tmux.run``)."""
    return arg[:-1] + "\\;" if arg.endswith(";") else arg


def format_literal(text: str) -> str:
    """``text`` for an option tmux expands as a format (``-c``, ``-n``, ``-s``): ``#{...}``,
    ``#S`` and the like would be replaced (a directory ``a#{host}`` is not where the crew
    would start); ``##`` is one ``#``."""
    return text.replace("#", "##")


def check_session(session: str) -> str:
    """A session name tmux keeps as given: it rewrites ``:`` and ``.`` (they separate
    session, window and pane in a target), so such a name would never be found again."""
    if not session or ":" in session or "." in session or not session.isprintable():
        raise CaptainError(
            "invalid_argument",
            f"tmux session {session[:80]!r} is not a name tmux keeps as given: "
            "use printable characters other than ':' and '.'.",
        )
    return session

"""A crew pane's terminal, asked directly: who edits its input line, and a way to show a line.

A shell or any other program in a pane is not a composer captain can read, and what a
typed key does there depends on a line editor captain cannot see: in vi command mode
(bash ``set -o vi``, zsh ``bindkey -v``, ``fish_vi_key_bindings``, or emacs mode after a
stray ESC) every letter is a command — ``#`` comments out and runs the line, ``v`` runs an
editor, ``j``/``k`` fetch history, ``.`` repeats the last change — and no screen shows
which mode the line is in. So the doorbell types there only where **the kernel itself
edits the line**: the terminal is in canonical mode with echo (a program reading lines,
dash, a shell with no line editor), where a printable character is inserted as it is,
nothing runs before Enter, and the echo shows exactly where the text went. Where a line
editor or a full-screen program has the terminal in raw mode, nothing is typed: the
notice is *printed* on the terminal — written to its output side, as ``write(1)`` does —
which no program reads as input, in any mode.

Stdlib only; every failure is an answer (``None`` / ``False``), never an exception.
"""

from __future__ import annotations

import os
import stat
import termios
from dataclasses import dataclass

# The characters the line discipline acts on instead of inserting (in canonical mode,
# with signals and the extensions on): a notice holding any of them is never typed.
_SPECIAL = tuple(
    getattr(termios, n)
    for n in (
        "VINTR",
        "VQUIT",
        "VERASE",
        "VKILL",
        "VEOF",
        "VEOL",
        "VEOL2",
        "VSTART",
        "VSTOP",
        "VSUSP",
        "VREPRINT",
        "VWERASE",
        "VLNEXT",
        "VDISCARD",
    )
    if hasattr(termios, n)
)


# Who may be typed into even where the kernel edits the line: Enter there submits the line
# to whatever program reads it, so only an interactive shell (which takes the notice for a
# comment, or looks for a command named '#') or captain's own simulated crew. A script
# reading a line — "Deploy to production? >" — would take the notice as its answer.
SHELLS = frozenset({"sh", "dash", "ash", "bash", "zsh", "ksh", "mksh", "posh", "yash", "fish"})
SIMCREW = "captain_tui.cockpit.simcrew"


@dataclass(frozen=True)
class LineMode:
    kernel: bool  # canonical mode with echo, Enter ends a line: the kernel edits it
    erase: bytes  # the terminal's erase character (VERASE), to take back our text
    special: frozenset  # bytes the line discipline would act on
    reason: str  # why not, when ``kernel`` is False
    foreground: int | None = None  # the terminal's foreground process group (tpgid)

    def takes(self, text: str) -> bool:
        """``text`` goes in as it is: printable ASCII, no byte the discipline acts on."""
        if not self.kernel or not text.isascii():
            return False
        return all(0x20 <= b < 0x7F and b not in self.special for b in text.encode())


def _stat(pid: int) -> list[bytes] | None:
    """/proc/PID/stat's fields after the command name: state, ppid, pgrp, session,
    tty_nr, tpgid, ..."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as f:
            return f.read().rsplit(b")", 1)[1].split()
    except (OSError, IndexError):
        return None


def _controlling_tty(pid: int) -> int | None:
    """The device number of ``pid``'s controlling terminal (/proc/PID/stat, tty_nr)."""
    fields = _stat(pid)
    try:
        return int(fields[4]) if fields else None
    except (IndexError, ValueError):
        return None


def _cmdline(pid: int) -> list[str]:
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as f:
            return [a.decode(errors="replace") for a in f.read().split(b"\0") if a]
    except OSError:
        return []


def foreground(pid: int) -> tuple[int | None, list[list[str]]]:
    """The foreground process group of ``pid``'s terminal, and the command lines of the
    processes in it that have no child in it: the ones that read the line (a ``sh -c``
    waiting on its child is not)."""
    fields = _stat(pid)
    try:
        tpgid = int(fields[5]) if fields else -1
    except (IndexError, ValueError):
        tpgid = -1
    if tpgid <= 0:
        return None, []
    members: dict[int, int] = {}
    for name in os.listdir("/proc"):
        if not name.isdigit():
            continue
        f = _stat(int(name))
        try:
            if f and int(f[2]) == tpgid:
                members[int(name)] = int(f[1])
        except (IndexError, ValueError):
            continue
    parents = set(members.values())
    return tpgid, [_cmdline(p) for p in sorted(members) if p not in parents]


def may_type_for(argv: list[str]) -> bool:
    """An interactive shell with no script or ``-c`` command to run, or captain's own
    simulated crew: a program for which a typed notice and Enter are a comment."""
    if len(argv) >= 3 and argv[1] == "-m" and argv[2] == SIMCREW:
        return True
    if not argv or os.path.basename(argv[0]).lstrip("-") not in SHELLS:
        return False
    short = [a[1:] for a in argv[1:] if a.startswith("-") and not a.startswith("--")]
    if any("c" in flags for flags in short):
        return False  # -c COMMAND: a command runs, not a prompt
    if any("i" in flags for flags in short):
        return True
    return all(a.startswith("-") for a in argv[1:])  # no script operand


def _open(tty: str | None, pid: int | None) -> int | None:
    """The pane's terminal, opened for writing without becoming ours; only when it is a
    terminal device and the pane's own process has it as its controlling terminal."""
    if not tty or not pid:
        return None
    try:
        fd = os.open(tty, os.O_WRONLY | os.O_NOCTTY | os.O_NONBLOCK | os.O_CLOEXEC)
    except OSError:
        return None
    try:
        st = os.fstat(fd)
        ours = stat.S_ISCHR(st.st_mode) and os.isatty(fd) and _controlling_tty(pid) == st.st_rdev
    except OSError:
        ours = False
    if not ours:
        os.close(fd)
        return None
    return fd


def line_mode(tty: str | None, pid: int | None) -> LineMode | None:
    """Who edits the pane's input line now; None when the terminal cannot be asked."""
    fd = _open(tty, pid)
    if fd is None or pid is None:  # _open opens nothing without a pid
        return None
    try:
        iflag, _, _, lflag, _, _, cc = termios.tcgetattr(fd)
    except (OSError, termios.error):
        return None
    finally:
        os.close(fd)

    def byte(i: int) -> int:
        v = cc[i]
        return v[0] if isinstance(v, bytes) and v else (v if isinstance(v, int) else 0)

    special = frozenset(b for b in (byte(i) for i in _SPECIAL) if b)
    erase = bytes([byte(termios.VERASE)]) if byte(termios.VERASE) else b""
    if not lflag & termios.ICANON:
        reason = "a line editor or full-screen program reads every key itself (raw mode)"
    elif not lflag & termios.ECHO:
        reason = "the terminal does not echo (a password prompt?)"
    elif not iflag & termios.ICRNL or iflag & termios.IGNCR:
        reason = "Enter would not end the line on this terminal"
    elif not erase:
        reason = "the terminal has no erase character"
    else:
        reason = ""
    group, readers = foreground(pid)
    if not reason:
        strangers = [a for a in readers if not may_type_for(a)]
        if not readers or strangers:
            name = os.path.basename(strangers[0][0]) if strangers and strangers[0] else "?"
            reason = (
                f"the program reading the line ({name}) is not an interactive shell: "
                "Enter would answer it"
            )
    return LineMode(
        kernel=not reason, erase=erase, special=special, reason=reason, foreground=group
    )


def show_line(tty: str | None, pid: int | None, text: str, *, fresh: bool) -> bool:
    """Print ``text`` (printable ASCII only) on its own row of the pane's terminal: written
    to the output side, so no program reads it as input. ``fresh``: the cursor already
    starts an empty row. False when the terminal could not be written."""
    if not text.isascii() or not text.isprintable():
        return False
    fd = _open(tty, pid)
    if fd is None:
        return False
    try:
        data = ("" if fresh else "\r\n").encode() + text.encode() + b"\r\n"
        return os.write(fd, data) == len(data)
    except OSError:  # EAGAIN: output stopped (^S) or its buffer full
        return False
    finally:
        os.close(fd)

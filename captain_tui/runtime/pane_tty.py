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
_SPECIAL = tuple(getattr(termios, n) for n in (
    "VINTR", "VQUIT", "VERASE", "VKILL", "VEOF", "VEOL", "VEOL2", "VSTART", "VSTOP",
    "VSUSP", "VREPRINT", "VWERASE", "VLNEXT", "VDISCARD") if hasattr(termios, n))


@dataclass(frozen=True)
class LineMode:
    kernel: bool          # canonical mode with echo, Enter ends a line: the kernel edits it
    erase: bytes          # the terminal's erase character (VERASE), to take back our text
    special: frozenset    # bytes the line discipline would act on
    reason: str           # why not, when ``kernel`` is False

    def takes(self, text: str) -> bool:
        """``text`` goes in as it is: printable ASCII, no byte the discipline acts on."""
        if not self.kernel or not text.isascii():
            return False
        return all(0x20 <= b < 0x7f and b not in self.special for b in text.encode())


def _controlling_tty(pid: int) -> int | None:
    """The device number of ``pid``'s controlling terminal (/proc/PID/stat, tty_nr)."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as f:
            fields = f.read().rsplit(b")", 1)[1].split()
        return int(fields[4])
    except (OSError, IndexError, ValueError):
        return None


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
        ours = stat.S_ISCHR(st.st_mode) and os.isatty(fd) \
            and _controlling_tty(pid) == st.st_rdev
    except OSError:
        ours = False
    if not ours:
        os.close(fd)
        return None
    return fd


def line_mode(tty: str | None, pid: int | None) -> LineMode | None:
    """Who edits the pane's input line now; None when the terminal cannot be asked."""
    fd = _open(tty, pid)
    if fd is None:
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
    return LineMode(kernel=not reason, erase=erase, special=special, reason=reason)


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

"""The one way captain runs git.

Every call is a list of literal arguments (never a shell), with the environment pinned so
that git's output is the same everywhere: ``LC_ALL=C`` (messages in English),
``GIT_TERMINAL_PROMPT=0`` and no askpass (git never waits for a password nobody types),
no pager, no editor, ``core.quotepath=false`` (paths as bytes, never octal-quoted; read them
``-z``-separated), ``GIT_OPTIONAL_LOCKS=0`` (a read takes no lock a crew's git could meet).
A call is bounded in time (``timeout``) and in output (``limit`` bytes of stdout): more is a
refusal, never a half-read answer. Any failure is ``CaptainError("git_failed", ...)`` whose
sentence names the command and git's own last words, escaped of control characters; a
missing git is ``git_failed`` too.
"""

from __future__ import annotations

import contextlib
import contextvars
import os
import subprocess
import threading
from collections.abc import Iterator
from typing import NamedTuple

from captain_tui.repo import discovery
from state.errors import CaptainError

TIMEOUT = 30.0  # seconds: a local git command that takes longer is stuck
LIMIT = 64 * 1024 * 1024  # bytes of stdout a caller reads at most
_STDERR_SHOWN = 400  # characters of git's stderr a refusal quotes

# what every call runs with, whatever the caller's environment says
PINNED = {
    "LC_ALL": "C",
    "LANG": "C",
    "LANGUAGE": "",
    "GIT_TERMINAL_PROMPT": "0",
    "GIT_ASKPASS": "",
    "SSH_ASKPASS": "",
    "GIT_PAGER": "cat",
    "PAGER": "cat",
    "GIT_EDITOR": ":",
    "GIT_OPTIONAL_LOCKS": "0",
}
# variables that would make git act on another repository than the one named
_DROPPED = (
    "GIT_DIR",
    "GIT_WORK_TREE",
    "GIT_INDEX_FILE",
    "GIT_OBJECT_DIRECTORY",
    "GIT_ALTERNATE_OBJECT_DIRECTORIES",
    "GIT_COMMON_DIR",
    "GIT_NAMESPACE",
    "GIT_CEILING_DIRECTORIES",
    "GIT_DISCOVERY_ACROSS_FILESYSTEM",
    "GIT_PREFIX",
)
# options before the command: no octal-quoted paths, no colour, no hooks' fsmonitor
_GLOBAL = ("-c", "core.quotepath=false", "-c", "color.ui=false", "-c", "core.fsmonitor=false")


class Result(NamedTuple):  # not a dataclass: importing dataclasses costs status ~7 ms
    args: tuple[str, ...]
    returncode: int
    stdout: bytes
    stderr: str

    @property
    def text(self) -> str:
        """stdout as text (undecodable bytes escaped, never an exception)."""
        return self.stdout.decode("utf-8", "surrogateescape")

    def lines(self) -> list[str]:
        return self.text.splitlines()

    def fields(self) -> list[str]:
        """stdout split on NUL (a ``-z`` listing), the empty tail dropped."""
        parts = self.text.split("\0")
        return parts[:-1] if parts and parts[-1] == "" else parts


def environment(extra: dict[str, str] | None = None) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in _DROPPED}
    env.update(PINNED)
    if extra:
        env.update(extra)
    return env


def _shown(text: str, limit: int = _STDERR_SHOWN) -> str:
    """git's words, one line, no control characters, bounded."""
    flat = " ".join(text.split())
    clean = "".join(c if c.isprintable() else f"\\x{ord(c):02x}" for c in flat)
    return clean if len(clean) <= limit else clean[: limit - 3] + "..."


def command_line(args: tuple[str, ...] | list[str]) -> str:
    return _shown("git " + " ".join(args), 200)


def run(
    args: list[str] | tuple[str, ...],
    *,
    cwd: str,
    ok: tuple[int, ...] = (0,),
    timeout: float = TIMEOUT,
    limit: int = LIMIT,
    env: dict[str, str] | None = None,
    stdin: bytes | None = None,
    what: str | None = None,
) -> Result:
    """Run ``git ARGS`` in ``cwd``. A return code outside ``ok`` is ``git_failed`` (pass
    ``ok=(0, 1)`` for a question git answers with its code); ``what`` says what captain was
    doing, for the sentence."""
    args = tuple(args)
    for a in args:
        if not isinstance(a, str) or "\0" in a:
            raise CaptainError("git_failed", f"a git argument holds a NUL byte: {a!r}")
    doing = what or command_line(args)
    try:
        proc = subprocess.Popen(
            ("git", *_GLOBAL, *args),
            cwd=cwd,
            env=environment(env),
            stdin=subprocess.PIPE if stdin is not None else subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            start_new_session=True,  # a terminal's ^C or a hangup is not git's to take
        )
    except FileNotFoundError as err:
        where = "git is not installed" if os.path.isdir(cwd) else f"{cwd} does not exist"
        raise CaptainError(
            "git_failed", f"{doing} could not start ({_shown(where)}): {_shown(str(err))}."
        ) from None
    except OSError as err:
        raise CaptainError("git_failed", f"{doing} could not start: {_shown(str(err))}.") from None
    try:
        out, said_err = _bounded(proc, stdin, timeout, limit)
    except subprocess.TimeoutExpired:
        _kill(proc)
        raise CaptainError(
            "git_failed", f"{doing} did not finish within {timeout:g} seconds and was stopped."
        ) from None
    except _TooLong:
        _kill(proc)
        raise CaptainError(
            "git_failed",
            f"{doing} wrote more than {limit:,} bytes; captain reads no more than that.",
        ) from None
    result = Result(args, proc.returncode, out, said_err.decode("utf-8", "replace"))
    if proc.returncode not in ok:
        said = _shown(result.stderr) or f"exit status {proc.returncode}"
        raise CaptainError("git_failed", f"{doing} failed: {said}", exit_status=proc.returncode)
    return result


class _TooLong(Exception):
    pass


def _bounded(
    proc: subprocess.Popen[bytes], stdin: bytes | None, timeout: float, limit: int
) -> tuple[bytes, bytes]:
    """communicate(), but stops reading stdout past ``limit`` bytes."""
    import selectors
    import time

    assert proc.stdout is not None and proc.stderr is not None  # both are pipes (run)

    deadline = time.monotonic() + timeout
    if stdin is not None:
        assert proc.stdin is not None  # a pipe whenever there is something to write
        try:
            proc.stdin.write(stdin)
        except BrokenPipeError:
            pass
        finally:
            proc.stdin.close()
    out, err = bytearray(), bytearray()
    sel = selectors.DefaultSelector()
    sel.register(proc.stdout, selectors.EVENT_READ, out)
    sel.register(proc.stderr, selectors.EVENT_READ, err)
    open_ = 2
    while open_:
        left = deadline - time.monotonic()
        if left <= 0:
            raise subprocess.TimeoutExpired(proc.args, timeout)
        for key, _ in sel.select(left):
            chunk = os.read(key.fd, 65536)
            if not chunk:
                sel.unregister(key.fileobj)
                open_ -= 1
                continue
            key.data.extend(chunk)
            if key.data is out and len(out) > limit:
                raise _TooLong()
            if key.data is err and len(err) > 65536:
                del err[:-65536]  # keep git's last words
    sel.close()
    left = max(0.0, deadline - time.monotonic())
    proc.wait(timeout=left or 0.001)
    proc.stdout.close()
    proc.stderr.close()
    return bytes(out), bytes(err)


def _kill(proc: subprocess.Popen) -> None:
    import signal

    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except OSError:
        proc.kill()
    proc.wait()
    for f in (proc.stdout, proc.stderr):
        if f:
            f.close()


# Directories whose top level was already asked, inside ``one_look_per_directory``: one
# command's (and one thread's) memory, never the process's, so a long-running cockpit sees a
# directory that became a repository.
_tops: contextvars.ContextVar[dict[str, str | None] | None] = contextvars.ContextVar(
    "captain_git_tops", default=None
)


_tops_lock = threading.Lock()


@contextlib.contextmanager
def one_look_per_directory() -> Iterator[None]:
    """Within the block, ``top_level`` runs git once per directory: ``status`` asks it for
    every crew, and crews share a project (twenty crew were twenty git processes)."""
    token = _tops.set({} if _tops.get() is None else _tops.get())
    try:
        yield
    finally:
        _tops.reset(token)


def top_level(path: str) -> str | None:
    """The top level of the git work tree ``path`` is in (real path), or None when it is in
    none (not a repository, a bare one, or git missing)."""
    memo = _tops.get()
    if memo is not None:
        with _tops_lock:  # threads that share the memo (change.summaries_of) look once too
            if path not in memo:
                memo[path] = _top_level(path)
            return memo[path]
    return _top_level(path)


def _top_level(path: str) -> str | None:
    if not os.path.isdir(path) or discovery.outside_any_repository(path):
        return None  # git would find no repository: not started
    try:
        r = run(["rev-parse", "--show-toplevel"], cwd=path, ok=(0, 128))
    except CaptainError:
        return None
    if r.returncode != 0:
        return None
    top = r.text.rstrip("\n")
    return os.path.realpath(top) if top else None

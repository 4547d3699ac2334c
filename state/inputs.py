"""Rules for what people type: crew names, message text, paths and grants."""

from __future__ import annotations

import errno
import os
import re
import stat
from collections.abc import Callable
from pathlib import PurePosixPath

from state.errors import CaptainError
from state.vocab import ACTIONS, SUMMARY_MAX

NAME_RE = re.compile(r"[A-Za-z][A-Za-z0-9_-]{0,31}")
# Every input is bounded here, before anything is written, so that every record holding it
# stays far below what the store reads back (store.MAX_RECORD_BYTES, 1 MiB; the worst cases
# are checked by tests/state/test_record_bounds.py).
MAX_TEXT_BYTES = 64 * 1024  # a task, message, question, answer, report, reason or detail
MAX_PATH_BYTES = 4096  # an owned path, a project directory, a tmux socket (Linux PATH_MAX)
MAX_OWNS = 32  # paths one assignment may own
MAX_COMMAND_BYTES = 8 * 1024  # a crew's --command (tmux carries it in a 16 KiB message)
_CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f]")  # everything but \t and \n


_SURROGATE = re.compile("[\ud800-\udfff]")


def has_surrogate(text: str) -> bool:
    """Undecodable bytes reach us as lone surrogates (surrogateescape); JSON can't hold them."""
    return _SURROGATE.search(text) is not None


def crew_key(name: str) -> str:
    """The case-insensitive key a crew name is stored under; refuses bad names."""
    if not isinstance(name, str) or not NAME_RE.fullmatch(name):
        shown = repr(name) if name else "an empty name"
        raise CaptainError(
            "invalid_name",
            f"{shown} is not a crew name: use a letter, then up to 31 letters, digits, '_' or '-'.",
        )
    return name.lower()


# What a terminal would obey rather than show: every C0 control but tab and newline, DEL,
# every C1 control (0x9b is a one-byte CSI), the bidi controls that reorder what is shown
# (a command to approve could read backwards), lone surrogates, and the tag characters
# (U+E0000-U+E007F: invisible text a reader, or a model reading the screen, still gets).
# C0/C1 controls, bidi controls, lone surrogates; and what is drawn as nothing yet carries
# text a reader (or a model reading captain's output) would take in unseen: tag characters,
# the supplementary variation selectors, zero-width space, word joiner and the invisible
# operators, the byte-order mark, and the line and paragraph separators.
TERMINAL_UNSAFE = re.compile(
    "[\x00-\x08\x0b-\x1f\x7f-\x9f\u061c\u200b\u200e\u200f\u2028\u2029\u202a-\u202e"
    "\u2060-\u2064\u2066-\u2069\ufeff\ud800-\udfff\U000e0000-\U000e007f"
    "\U000e0100-\U000e01ef]"
)


def for_terminal(text: str, replace: Callable[[re.Match[str]], str] | None = None) -> str:
    """Text from the home, safe to show: every character in ``TERMINAL_UNSAFE`` is shown
    escaped (``\\x1b``, ``\\u202e``) or, with ``replace``, as what it returns. The one rule
    for everything printed from stored text: the CLI escapes, the cockpit shows '\ufffd'."""
    if replace is None:

        def replace(m: re.Match[str]) -> str:
            return m.group().encode("unicode_escape", "backslashreplace").decode("ascii")

    return TERMINAL_UNSAFE.sub(replace, text)


def _kib(limit: int) -> str:
    return f"{limit // 1024} KiB" if limit % 1024 == 0 else f"{limit} bytes"


def check_size(text: str, what: str, limit: int = MAX_TEXT_BYTES) -> str:
    """Refuse text of more than ``limit`` UTF-8 bytes (``message_too_large``)."""
    size = len(text.encode("utf-8", "surrogatepass"))
    if size > limit:
        raise CaptainError(
            "message_too_large",
            f"the {what} is {size} bytes; the limit is {limit} ({_kib(limit)}). Put long "
            "material in a file and refer to it.",
            limit=limit,
        )
    return text


def check_stored(text: str, what: str) -> str:
    """Text that is stored and never shown (a report's detail): any character a record can
    hold (not a lone surrogate), at most MAX_TEXT_BYTES."""
    check_size(text, what)
    if has_surrogate(text):
        raise CaptainError("invalid_text", f"the {what} is not valid UTF-8 text.")
    return text


def check_text(text: str, what: str, *, required: bool = True, limit: int = MAX_TEXT_BYTES) -> str:
    """Refuse oversized text and control characters (newline and tab are fine)."""
    check_size(text, what, limit)
    bad = _CONTROL.search(text)
    if bad or has_surrogate(text):
        char = bad.group() if bad else "a lone surrogate"
        raise CaptainError(
            "invalid_text",
            f"the {what} contains the control character {char!r}; only newline and tab "
            "are allowed.",
        )
    if required and not text.strip():
        raise CaptainError("invalid_text", f"the {what} is empty.")
    return text


def summarize(text: str) -> str:
    """A notification summary: at most SUMMARY_MAX characters, marked when cut. An agent's
    undecodable bytes (lone surrogates) become '\ufffd': a record holds UTF-8 only, and a
    summary that could not be stored would lose the notification."""
    text = _SURROGATE.sub("\ufffd", text)
    if len(text) <= SUMMARY_MAX:
        return text
    return text[: SUMMARY_MAX - 1] + "…"


def bounce_summary(message_id: str, reason: str, text: str) -> str:
    """What a ``bounced`` notification says, whoever bounced the mail."""
    return summarize(f"{message_id} bounced ({reason}): {text}")


def check_actions(actions: list[str]) -> list[str]:
    out: list[str] = []
    for action in actions:
        if action not in ACTIONS:
            raise CaptainError(
                "unknown_action",
                f"{action!r} is not an action; use one of: {', '.join(ACTIONS)}.",
            )
        if action not in out:
            out.append(action)
    return out


def check_path(path: str, what: str = "path") -> str:
    """A path (or tmux socket) that can be stored: text, no control character, at most
    MAX_PATH_BYTES."""
    if not isinstance(path, str) or not path or _CONTROL.search(path) or has_surrogate(path):
        shown = repr(path)[:200] if isinstance(path, str) else "it"
        raise CaptainError("invalid_path", f"{shown} is not a usable {what}.")
    size = len(path.encode("utf-8"))
    if size > MAX_PATH_BYTES:
        raise CaptainError(
            "invalid_path",
            f"the {what} {path[:60]!r}... is {size} bytes; a "
            f"path is at most {MAX_PATH_BYTES} bytes.",
            limit=MAX_PATH_BYTES,
        )
    return path


def check_owns(paths: list[str]) -> list[str]:
    """An assignment owns at most MAX_OWNS paths: its record must stay readable."""
    if len(paths) > MAX_OWNS:
        raise CaptainError(
            "invalid_argument",
            f"{len(paths)} paths to own; an assignment owns "
            f"at most {MAX_OWNS}. Own their common parent "
            "directory instead.",
            limit=MAX_OWNS,
        )
    return paths


def normalise_path(path: str, project_dir: str) -> str:
    """An absolute, lexically normalised path; relative ones are against the project."""
    check_path(path)
    joined = os.path.join(project_dir, os.path.expanduser(path))
    return check_path(os.path.normpath(joined).replace("//", "/"))


def is_within(path: str, owner: str) -> bool:
    """True when ``path`` equals ``owner`` or lies inside it, component by component."""
    if _plain(path) and _plain(owner):  # the common case, without building two PurePaths
        return path == owner or path.startswith(owner if owner == "/" else owner + "/")
    p, o = PurePosixPath(path).parts, PurePosixPath(owner).parts
    return p[: len(o)] == o


def _plain(path: str) -> bool:
    """An absolute path whose text is its components (nothing PurePosixPath would fold)."""
    return (
        path.startswith("/")
        and "//" not in path
        and "/./" not in path
        and not path.endswith(("/.", "/"))
        or path == "/"
    )


def overlaps(a: str, b: str) -> bool:
    return is_within(a, b) or is_within(b, a)


MAX_LINKS = 40  # symlinks followed in one path before it counts as a loop (Linux's limit)


def resolve_path(path: str) -> str | None:
    """Where an absolute ``path`` leads now: every symlink followed, component by component
    with ``lstat`` (``..`` after a link goes up from where the link led, as the kernel does).
    What does not exist yet is kept as written, so a file about to be created resolves
    through its deepest existing ancestor. None for a loop or a part that cannot be looked
    at (not ours to grant)."""
    done, links = "/", 0
    rest = list(reversed(path.split("/")))
    missing = False
    while rest:
        name = rest.pop()
        if name in ("", "."):
            continue
        if name == "..":
            done = os.path.dirname(done)
            continue
        step = os.path.join(done, name)
        if missing:
            done = step
            continue
        try:
            st = os.lstat(step)
        except (FileNotFoundError, NotADirectoryError):
            missing, done = True, step
            continue
        except OSError as exc:
            if exc.errno != errno.ENAMETOOLONG:
                return None
            missing, done = True, step  # a name too long to exist is no link either
            continue
        if not stat.S_ISLNK(st.st_mode):
            done = step
            continue
        links += 1
        if links > MAX_LINKS or step == "/proc" or step.startswith("/proc/"):
            # a link in /proc is the kernel's: /proc/PID/fd/N reads "… (deleted)" or
            # "pipe:[…]" while the kernel follows it to the file itself; not ours to judge
            return None
        try:
            target = os.readlink(step)
        except OSError:
            return None
        if target.startswith("/"):
            done = "/"
        rest.extend(reversed(target.split("/")))
    return done


class Resolver:
    """``resolve_path`` for many paths at once (a change of 10,000 files): each directory
    is resolved once and remembered, a path's last part is then looked at alone. The same
    answers as ``resolve_path`` (paths with ``.`` or ``..`` parts are handed to it), for as
    long as nothing on disk changes — one judgement of one change."""

    def __init__(self) -> None:
        self._known: dict[str, str | None] = {}

    def __call__(self, path: str) -> str | None:
        if path in self._known:
            return self._known[path]
        head, tail = os.path.split(path)
        if (
            not path.startswith("/")
            or tail in ("", ".", "..")
            or head == path
            or ("/./" in path or "/../" in path or "//" in path)
        ):
            found = resolve_path(path)
        else:
            parent = self(head)
            found = None if parent is None else self._last(parent, tail)
        self._known[path] = found
        return found

    @staticmethod
    def _last(parent: str, tail: str) -> str | None:
        step = os.path.join(parent, tail)
        try:
            st = os.lstat(step)
        except (FileNotFoundError, NotADirectoryError):
            return step  # not there: kept as written, as resolve_path keeps it
        except OSError as exc:
            return step if exc.errno == errno.ENAMETOOLONG else None
        return resolve_path(step) if stat.S_ISLNK(st.st_mode) else step


def grant_problem(
    raw: str,
    project_dir: str,
    owns: list[str],
    who: str,
    resolve: Callable[[str], str | None] = resolve_path,
) -> str | None:
    """Why ``raw`` (as crew ``who`` asks it, relative to the project) is not inside the owned
    paths ``owns``, judged by what the path is now; None when it is inside.

    Both the name and the file are judged where they really are: the directory entry (its
    parent resolved) that a delete or a rename would change, and the file a write would
    change (every link followed). An owned path counts only while it still resolves to
    itself: owned paths are stored resolved at recruit, so one swapped for a symlink since
    covers nothing. A regular file with more than one name (a hard link) is refused: its
    other names cannot be found cheaply, so nothing shows they are inside the grant."""
    lexical = normalise_path(raw, project_dir)  # the path's own rules: text, bounded
    joined = os.path.join(project_dir, os.path.expanduser(raw))
    target = resolve(joined)
    head, tail = os.path.split(joined.rstrip("/") or "/")
    parent = resolve(head) if tail not in ("", ".", "..") else target
    if target is None or parent is None:
        return f"{raw} cannot be resolved (a symlink loop, or a part that cannot be read)."
    entry = os.path.join(parent, tail) if tail not in ("", ".", "..") else target
    now = {o: resolve(o) for o in owns}
    kept = [o for o in owns if now[o] == o]
    outside = [p for p in (entry, target) if not any(is_within(p, o) for o in kept)]
    if outside:
        for o in owns:
            if now[o] != o and is_within(lexical, o):
                return (
                    f"{raw} is under {o}, which now leads to {now[o] or 'a loop'}: an "
                    "owned path replaced by a symlink after recruit covers nothing."
                )
        shown = ", ".join(owns) or "no paths"
        if any(is_within(lexical, o) for o in kept):
            return (
                f"{raw} leads to {outside[0]}, outside the paths {who} owns ({shown}); "
                "a grant covers only files inside them."
            )
        return f"{raw} is outside the paths {who} owns ({shown})."
    try:
        st = os.lstat(target)
    except OSError:
        return None  # not there yet: creating a new file is grantable
    if stat.S_ISREG(st.st_mode) and st.st_nlink > 1:
        return (
            f"{raw} is a file with {st.st_nlink} names (hard links); its other names "
            "cannot be shown to be inside the paths owned, so it is not granted."
        )
    return None

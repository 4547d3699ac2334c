"""Rules for what people type: crew names, message text, paths and grants."""

from __future__ import annotations

import os
import re
from pathlib import PurePosixPath

from state.errors import CaptainError
from state.vocab import ACTIONS, SUMMARY_MAX

NAME_RE = re.compile(r"[A-Za-z][A-Za-z0-9_-]{0,31}")
MAX_TEXT_BYTES = 64 * 1024
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
            f"{shown} is not a crew name: use a letter, then up to 31 letters, digits, "
            "'_' or '-'.",
        )
    return name.lower()


# What a terminal would obey rather than show: every C0 control but tab and newline, DEL,
# every C1 control (0x9b is a one-byte CSI), the bidi controls that reorder what is shown
# (a command to approve could read backwards), and lone surrogates.
TERMINAL_UNSAFE = re.compile(
    "[\x00-\x08\x0b-\x1f\x7f-\x9f\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069"
    "\ud800-\udfff]")


def for_terminal(text: str, replace=None) -> str:
    """Text from the home, safe to show: every character in ``TERMINAL_UNSAFE`` is shown
    escaped (``\\x1b``, ``\\u202e``) or, with ``replace``, as what it returns. The one rule
    for everything printed from stored text: the CLI escapes, the cockpit shows '\ufffd'."""
    if replace is None:
        def replace(m):
            return m.group().encode("unicode_escape", "backslashreplace").decode("ascii")
    return TERMINAL_UNSAFE.sub(replace, text)


def check_text(text: str, what: str, *, required: bool = True) -> str:
    """Refuse oversized text and control characters (newline and tab are fine)."""
    if len(text.encode("utf-8", "surrogatepass")) > MAX_TEXT_BYTES:
        raise CaptainError(
            "message_too_large",
            f"the {what} is {len(text.encode('utf-8', 'surrogatepass'))} bytes; the limit is "
            f"{MAX_TEXT_BYTES} (64 KiB). Put long material in a file and refer to it.",
        )
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


def normalise_path(path: str, project_dir: str) -> str:
    """An absolute, lexically normalised path; relative ones are against the project."""
    if not path or _CONTROL.search(path) or has_surrogate(path):
        raise CaptainError("invalid_path", f"{path!r} is not a usable path.")
    joined = os.path.join(project_dir, os.path.expanduser(path))
    return os.path.normpath(joined).replace("//", "/")


def is_within(path: str, owner: str) -> bool:
    """True when ``path`` equals ``owner`` or lies inside it, component by component."""
    p, o = PurePosixPath(path).parts, PurePosixPath(owner).parts
    return p[: len(o)] == o


def overlaps(a: str, b: str) -> bool:
    return is_within(a, b) or is_within(b, a)

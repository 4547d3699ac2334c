"""Turning what crews wrote into text that is safe to put on the screen.

Anything in the home was typed by someone else (an agent, a script, a person). It reaches
the terminal only through ``rich.text.Text`` built here: never as markup (a ``[`` in a
question must not restyle the screen) and never with control characters (an escape
sequence in a report must not drive the terminal).
"""

from __future__ import annotations

import re
from datetime import datetime

from rich.text import Text

from state.inputs import for_terminal

_SPACE = re.compile(r"\s+")


def clean(text: str) -> str:
    """Multi-line text with what a terminal would obey (``state.inputs.for_terminal``: the
    controls but newline and tab, bidi controls, lone surrogates) shown as '\ufffd'."""
    return for_terminal(text, replace=lambda m: "\ufffd")


def one_line(text: str, limit: int | None = None) -> str:
    """Text for a table cell: one line, whitespace collapsed, cut with '…' at ``limit``."""
    flat = _SPACE.sub(" ", clean(text)).strip()
    if limit is not None and len(flat) > limit:
        flat = flat[: max(limit - 1, 0)] + "…"
    return flat


def plain(text: str, style: str = "", limit: int | None = None) -> Text:
    """A table cell: never parsed as markup."""
    return Text(one_line(text, limit), style=style, no_wrap=True, overflow="ellipsis")


def age(then: datetime | None, now: datetime) -> str:
    """How long ago, in the largest unit that fits: 12s, 4m, 2h, 3d."""
    if then is None:
        return "—"
    seconds = int((now - then).total_seconds())
    if seconds < 0:
        return "now"  # another host's clock runs a little ahead: say so, do not go negative
    for unit, size in (("d", 86400), ("h", 3600), ("m", 60)):
        if seconds >= size:
            return f"{seconds // size}{unit}"
    return f"{seconds}s"

"""Turning what crews wrote into text that is safe to put on the screen: the cockpit's one
boundary between text and the terminal.

Anything in the home was typed by someone else (an agent, a script, a person, a webhook).
Every string the cockpit draws (cells, toasts, titles, dialogs, the help screen, the pane
preview, desktop notices, quarantine reports) passes ``clean`` here on its way to
Textual/Rich: never as markup (a ``[@click=...]`` in a summary must not become an action,
a ``[`` in a question must not restyle the screen) and never with what a terminal obeys
(an escape sequence in a report must not retitle the terminal, clear it or write the
clipboard; a bidi or tag character must not hide or reorder what is shown).
``tests/cockpit/test_cockpit_draws_inert.py`` checks that every widget is given text built
here.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from datetime import datetime, timedelta

from rich.style import Style
from rich.text import Span, Text
from textual.markup import escape

from state.inputs import for_terminal

_SPACE = re.compile(r"\s+")


def clean(text: str) -> str:
    """Multi-line text with what a terminal would obey (``state.inputs.for_terminal``: the
    controls but newline and tab, bidi controls, lone surrogates) shown as '\ufffd'."""
    return for_terminal(text, replace=lambda m: "\ufffd")


def inert(text: str) -> Text:
    """Multi-line text for a widget (a dialog's body, a label, a border title): cleaned,
    never parsed as markup."""
    return Text(clean(text))


def as_markup(text: str) -> str:
    """Text for the few Textual APIs that take only markup (the command palette's help):
    cleaned, and every ``[`` escaped so that it is drawn, not obeyed."""
    return escape(clean(text))


def from_pane(capture: str) -> Text:
    """A tmux capture (``capture-pane -e``: SGR colours) as a picture: its colours kept, and
    nothing else a terminal would obey. The text is cleaned character for character (the
    colour spans keep their places) and hyperlinks (OSC 8, which the terminal would offer
    to open) are dropped."""
    text = Text.from_ansi(capture, no_wrap=True, overflow="crop")
    text.plain = clean(text.plain)
    text.spans = [
        Span(s.start, s.end, s.style.update_link(None))
        if isinstance(s.style, Style) and s.style.link
        else s
        for s in text.spans
    ]
    return text


def one_line(text: str, limit: int | None = None) -> str:
    """Text for a table cell: one line, whitespace collapsed, cut with '…' at ``limit``."""
    flat = _SPACE.sub(" ", clean(text)).strip()
    if limit is not None and len(flat) > limit:
        flat = flat[: max(limit - 1, 0)] + "…"
    return flat


def plain(text: str, style: str = "", limit: int | None = None) -> Text:
    """A table cell: never parsed as markup."""
    return Text(one_line(text, limit), style=style, no_wrap=True, overflow="ellipsis")


class AgeWatch:
    """When the soonest age drawn since ``clear`` reads differently: the cockpit redraws
    ages when one will have changed, not on a clock that mostly finds none did ("4m" is
    "4m" for a minute). Each panel keeps one for the row it is drawing (when that row's
    ages next read differently); the app keeps one that ``wake`` tells of an age that
    reads differently sooner than any noted before (a row drawn between two ages ticks).
    UI thread only: panels draw on the app's."""

    def __init__(self, wake: Callable[[datetime], None] | None = None) -> None:
        self.soonest: datetime | None = None
        self.wake = wake

    def clear(self) -> None:
        self.soonest = None

    def note(self, when: datetime) -> None:
        if self.soonest is None or when < self.soonest:
            self.soonest = when
            if self.wake is not None:
                self.wake(when)


def age(then: datetime | None, now: datetime, watch: AgeWatch | None = None) -> str:
    """How long ago, in the largest unit that fits: 12s, 4m, 2h, 3d. Tells ``watch`` when
    this text will next read differently."""
    if then is None:
        return "—"
    seconds = int((now - then).total_seconds())
    if seconds < 0:
        if watch is not None:
            watch.note(then)  # "now" until the other host's clock is reached
        return "now"  # another host's clock runs a little ahead: say so, do not go negative
    for unit, size in (("d", 86400), ("h", 3600), ("m", 60), ("s", 1)):
        if seconds >= size or size == 1:
            if watch is not None:
                watch.note(then + timedelta(seconds=(seconds // size + 1) * size))
            return f"{seconds // size}{unit}"
    raise AssertionError("unreachable")  # the last unit fits every non-negative age

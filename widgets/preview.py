"""The pane preview: the selected crew's tmux pane, as it looks, colours and all.

The app says what to show (``follow``: a crew's pane, or a sentence when there is none);
the preview keeps its own clock. It captures the pane through the function the app gave it
(``tmux capture-pane -e``; this module never imports tmux), in a thread worker that posts
``Captured`` back to it, every ``every`` seconds while the pane changes, backing off to
``idle_every`` while captures come back the same: one timer, set for the next capture due
(none while a message shows). A pane shows whatever its program
printed: the capture is drawn through ``widgets.cells.from_pane`` (colours kept, nothing a
terminal would obey).
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass

from textual import work
from textual.app import ComposeResult
from textual.containers import Vertical
from textual.message import Message
from textual.timer import Timer
from textual.widgets import Static

from state.errors import CaptainError
from state.records import PaneLocator
from widgets.cells import from_pane, inert
from widgets.view import CrewRow

EVERY = 1.0  # the pane is captured again this often while it changes
IDLE_EVERY = 4.0  # ... backing off to this while its captures come back the same

# reads a pane's screen with its colours; raises CaptainError when the pane cannot be read
Capture = Callable[[PaneLocator], str]


@dataclass(frozen=True)
class Subject:
    """What the preview shows: a crew's pane (``pane`` set: captured, again and again) or,
    with none, ``message`` under ``title``."""

    title: str
    message: str = ""
    key: str | None = None  # the crew whose pane it is
    name: str = ""
    pane: PaneLocator | None = None

    @classmethod
    def of(cls, crew: CrewRow | None, *, any_crew: bool) -> Subject:
        """The subject for the selected crew (``any_crew``: the home has crew at all)."""
        if crew is None:
            return cls(
                "Pane",
                "Select a crew to see its pane."
                if any_crew
                else "Each crew's tmux pane shows here, live.",
            )
        if crew.pane is None:
            return cls(
                f"Pane · {crew.name}",
                f"{crew.name} has no tmux pane: it was recorded with "
                "--no-launch, so its process runs wherever you started it.",
                key=crew.key,
                name=crew.name,
            )
        return cls(f"Pane · {crew.name}", key=crew.key, name=crew.name, pane=crew.pane)


class PanePreview(Vertical):
    DEFAULT_CSS = """
    PanePreview {
        border: round $panel-lighten-2;
        border-title-color: $text-muted;
        border-title-style: bold;
        height: 1fr;
    }
    PanePreview > #screen {
        height: 1fr;
        overflow: hidden;
    }
    PanePreview > .empty {
        color: $text-muted;
        padding: 1 2;
    }
    """

    class Captured(Message):
        """A capture of ``key``'s pane (``capture`` None: it could not be read, ``problem``
        says why), from the thread worker."""

        def __init__(self, key: str, capture: str | None, problem: str = "") -> None:
            super().__init__()
            self.key = key
            self.capture = capture
            self.problem = problem

    def __init__(
        self,
        capture: Capture | None = None,
        *,
        every: float = EVERY,
        idle_every: float = IDLE_EVERY,
        id: str | None = None,  # noqa: A002 - Textual's name for it
    ) -> None:
        super().__init__(id=id)
        self.capture = capture  # None: panes are never read (a message shows)
        self.every = every
        self.idle_every = max(idle_every, every)
        self.subject: Subject | None = None  # what the app last asked for
        self.pause = every  # seconds to the next timed capture (backs off, see on_captured)
        self._asked: Subject | None = None  # what was last shown or captured for
        self._due = 0.0  # time.monotonic() of the next timed capture
        self._last_capture: tuple[str, str] | None = None  # (crew key, text) last captured
        self._shown: tuple | None = None  # on show: (crew, capture, size) or (title, message)
        self._timer: Timer | None = None  # the next timed capture (one, moved: never two)

    def compose(self) -> ComposeResult:
        yield Static("", id="screen", markup=False)
        yield Static("Select a crew to see its pane.", classes="empty", markup=False)

    def on_mount(self) -> None:
        self.border_title = "Pane"
        self.query_one("#screen").display = False

    # -- what to show, and when ----------------------------------------------------------

    def follow(self, subject: Subject, *, again: bool = True) -> None:
        """Show ``subject`` now (``again=False``: only if it is not what was last asked)."""
        if not again and subject == self._asked:
            return  # the same pane: the clock asks again
        self.subject = subject
        self._refresh()

    def toggle(self) -> None:
        self.display = not self.display
        self._refresh()

    def wake(self) -> None:
        """Capture again when due. A pane whose captures come back the same is asked less
        and less often (up to ``idle_every``); a change, or another crew selected, and it
        is followed every ``every`` seconds again."""
        self._timer = None
        if time.monotonic() >= self._due:
            self._refresh()
        else:
            self._again()

    def _again(self) -> None:
        """Set the one timer for the next timed capture, due at ``_due``. Only a pane is
        captured on a clock: a message, or a hidden preview, sets none (``follow`` and
        ``toggle`` show what changes), so nothing wakes for them."""
        if self._timer is not None:
            self._timer.stop()
        self._timer = self.set_timer(max(self._due - time.monotonic(), 0.0), self.wake)

    def _refresh(self) -> None:
        self._due = time.monotonic() + self.pause
        if self._timer is not None:
            self._timer.stop()
            self._timer = None
        subject = self.subject
        if subject is None or not self.is_attached:
            return
        if not self.display:
            self._asked = None  # shown again: asked again
            return
        self._asked = subject
        if subject.pane is None or subject.key is None or self.capture is None:
            self.show_message(subject.title, subject.message)
        else:
            self._capture(self.capture, subject.key, subject.name, subject.pane)
            self._again()

    @work(thread=True, group="preview", exclusive=True, exit_on_error=False)
    def _capture(self, capture: Capture, key: str, name: str, pane: PaneLocator) -> None:
        """One tmux call per capture (it runs every second: it must stay cheap)."""
        try:
            text = capture(pane)
        except CaptainError as err:
            self.post_message(
                self.Captured(key, None, f"{name}'s pane cannot be read: {err.message}")
            )
            return
        self.post_message(self.Captured(key, text))

    def on_pane_preview_captured(self, message: Captured) -> None:
        subject = self.subject
        if subject is None or subject.key != message.key or not self.is_attached:
            return  # the selection moved on while tmux answered
        if message.capture is None:
            self.show_message(subject.title, message.problem)
            return
        captured = (message.key, message.capture)
        if captured == self._last_capture:
            self.pause = min(self.pause * 2, self.idle_every)
        else:
            self.pause = self.every
        self._due = min(self._due, time.monotonic() + self.pause)
        self._again()
        self._last_capture = captured
        self.show_capture(subject.name, message.capture)

    # -- drawing -------------------------------------------------------------------------

    def show_capture(self, crew: str, capture: str) -> None:
        """The bottom of the pane (where the composer and the latest output are)."""
        if self._shown == (crew, capture, self.size):
            return  # an idle pane: nothing to re-render
        self._shown = (crew, capture, self.size)
        lines = capture.rstrip("\n").split("\n")
        while lines and not lines[-1].strip():
            lines.pop()  # an idle agent leaves the pane's lower half blank
        height = max(self.size.height - 2, 1)
        text = from_pane("\n".join(lines[-height:]))
        self.border_title = inert(f"Pane · {crew}")
        screen = self.query_one("#screen", Static)
        # its height is the panel's, not the text's: a new capture needs no layout
        screen.update(text, layout=not screen.display)
        screen.display = True
        self.query_one(".empty").display = False

    def show_message(self, title: str, message: str) -> None:
        if self._shown == (title, message):
            return  # asked every second: an update would lay the whole screen out again
        self._shown = (title, message)
        self.border_title = inert(title)
        self.query_one("#screen").display = False
        empty = self.query_one(".empty", Static)
        empty.update(inert(message))
        empty.display = True

"""The pane preview: the selected crew's tmux pane, as it looks, colours and all.

It renders what the app captured (``tmux capture-pane -e``); it never talks to tmux. A
pane shows whatever its program printed: the capture is drawn through
``widgets.cells.from_pane`` (colours kept, nothing a terminal would obey).
"""

from __future__ import annotations

from textual.app import ComposeResult
from textual.containers import Vertical
from textual.widgets import Static

from widgets.cells import from_pane, inert


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

    def compose(self) -> ComposeResult:
        yield Static("", id="screen", markup=False)
        yield Static("Select a crew to see its pane.", classes="empty", markup=False)

    def on_mount(self) -> None:
        self.border_title = "Pane"
        self.query_one("#screen").display = False

    _shown: tuple | None = None  # what is on show: (crew, capture, size) or (title, message)

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

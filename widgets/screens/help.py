"""The help screen: Markdown the app generates from its command registry."""

from __future__ import annotations

from typing import ClassVar

from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Vertical, VerticalScroll
from textual.screen import ModalScreen
from textual.widgets import Markdown, Static


class HelpScreen(ModalScreen[None]):
    DEFAULT_CSS = """
    HelpScreen {
        align: center middle;
        background: $background 60%;
    }
    HelpScreen > #dialog {
        width: 100;
        max-width: 95%;
        height: 90%;
        border: round $accent;
        border-title-color: $accent;
        border-title-style: bold;
        background: $surface;
        padding: 0 1;
    }
    HelpScreen VerticalScroll {
        height: 1fr;
    }
    HelpScreen .hint {
        color: $text-muted;
        height: 1;
    }
    """
    BINDINGS: ClassVar = [
        Binding("escape,q,question_mark,f1", "close", "Close"),
        Binding("j,down", "scroll(1)", show=False),
        Binding("k,up", "scroll(-1)", show=False),
    ]

    def __init__(self, markdown: str) -> None:
        super().__init__()
        self.markdown = markdown

    def compose(self) -> ComposeResult:
        with Vertical(id="dialog") as dialog:
            dialog.border_title = "Help"
            with VerticalScroll(id="help-body"):
                yield Markdown(self.markdown)
            yield Static("escape close · j/k scroll", classes="hint", markup=False)

    def action_close(self) -> None:
        self.dismiss(None)

    def action_scroll(self, lines: int) -> None:
        self.query_one(VerticalScroll).scroll_relative(y=lines, animate=False)

"""The settings screen: which alerts fire, and the theme. Changes apply as you make them
(each posts ``SettingsScreen.Changed``); the app persists them."""

from __future__ import annotations

from typing import Any, ClassVar

from textual import on
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, Vertical
from textual.message import Message
from textual.screen import ModalScreen
from textual.widgets import Label, Select, Static, Switch

from widgets.cells import inert

SWITCHES = (
    ("alert_toast", "Toast in the cockpit"),
    ("alert_bell", "Terminal bell"),
    ("alert_desktop", "Desktop notification (OSC 9 / OSC 777, through the terminal)"),
)


class SettingsScreen(ModalScreen[None]):
    DEFAULT_CSS = """
    SettingsScreen {
        align: center middle;
        background: $background 60%;
    }
    SettingsScreen > #dialog {
        width: 76;
        max-width: 95%;
        height: auto;
        border: round $accent;
        border-title-color: $accent;
        border-title-style: bold;
        background: $surface;
        padding: 1 2 0 2;
    }
    SettingsScreen .intro, SettingsScreen .hint {
        color: $text-muted;
    }
    SettingsScreen .switch-row {
        height: auto;
    }
    SettingsScreen .switch-row Label {
        padding: 1 0 0 1;
    }
    SettingsScreen .theme-label {
        margin: 1 0 0 1;
        color: $text-muted;
    }
    SettingsScreen .hint {
        margin-top: 1;
    }
    """
    BINDINGS: ClassVar = [Binding("escape,s", "close", "Close")]

    class Changed(Message):
        def __init__(self, name: str, value: Any) -> None:
            super().__init__()
            self.name = name
            self.value = value

    def __init__(self, values: dict[str, Any], themes: list[str]) -> None:
        super().__init__()
        self.values = values
        self.themes = themes

    def compose(self) -> ComposeResult:
        with Vertical(id="dialog") as dialog:
            dialog.border_title = "Settings"
            yield Static(
                "When a crew asks, waits at an approval prompt, or its mail bounces:",
                classes="intro",
                markup=False,
            )
            for name, label in SWITCHES:
                with Horizontal(classes="switch-row"):
                    yield Switch(bool(self.values.get(name)), id=name)
                    yield Label(inert(label))
            yield Label("Theme", classes="theme-label")
            yield Select(
                [(t, t) for t in self.themes],
                value=self.values.get("theme"),
                allow_blank=False,
                id="theme",
                prompt="Theme",
            )
            yield Static("Saved as you change them · escape close", classes="hint", markup=False)

    def action_close(self) -> None:
        self.dismiss(None)

    @on(Switch.Changed)
    def _switched(self, event: Switch.Changed) -> None:
        self.post_message(self.Changed(event.switch.id or "", event.value))

    @on(Select.Changed, "#theme")
    def _theme(self, event: Select.Changed) -> None:
        if event.value is not Select.BLANK:
            self.post_message(self.Changed("theme", event.value))

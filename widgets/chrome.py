"""The cockpit's header and footer: small widgets of our own on public Textual API, looking
like Textual's ``Header`` and ``Footer`` without the work those do on every event.

``CockpitHeader``: the title line (``App.format_title``) between the icon and the clock's
space. Its title only repaints when it changes: it is as wide as the header whatever it
says, and the sub-title ("last change HH:MM:SS") changes with nearly every feed update, where
Textual's header lays the whole screen out again.

``CockpitFooter``: a key for each binding on show (the app's are ``commands.COMMANDS``), dimmed
when its command does not apply now; a click runs it (a dimmed one rings the bell and the app
says why), as in Textual's footer. In the cockpit the keys stay the same and only their
dimming follows the selection (a question came: ``a`` undims), so a bindings change only
dims or undims the keys on show; other keys, or another order, compose the footer again.
"""

from __future__ import annotations

from typing import ClassVar, NamedTuple

from rich.text import Text
from textual import events
from textual.app import ComposeResult
from textual.containers import ScrollableContainer
from textual.content import Content
from textual.dom import NoScreen
from textual.reactive import reactive
from textual.screen import Screen
from textual.widget import Widget
from textual.widgets import Static

# -- the header ---------------------------------------------------------------------------------


class CockpitIcon(Static):
    """The icon at the left of the header: a click opens the command palette."""

    DEFAULT_CSS = """
    CockpitIcon {
        dock: left;
        padding: 0 1;
        width: 8;
        content-align: left middle;
    }
    CockpitIcon:hover {
        background: $foreground 10%;
    }
    """

    def on_mount(self) -> None:
        if self.app.ENABLE_COMMAND_PALETTE:
            self.tooltip = "Open the command palette"
        else:
            self.disabled = True

    async def on_click(self, event: events.Click) -> None:
        event.stop()  # not a click on the header (that makes it tall)
        await self.run_action("app.command_palette")


class CockpitTitle(Static):
    """The title line, in the middle of the header."""

    DEFAULT_CSS = """
    CockpitTitle {
        text-wrap: nowrap;
        text-overflow: ellipsis;
        content-align: center middle;
        width: 100%;
    }
    """

    shown: tuple | None = None  # the text and styles on show (Content's == is text only)

    def show(self, title: Content) -> None:
        seen = (title.plain, list(title.spans))
        if seen != self.shown:
            self.shown = seen
            self.update(title, layout=False)  # the header's width, whatever the text


class CockpitClockSpace(Widget):
    """The space a clock would take on the right: the title stays centred as in Textual's."""

    DEFAULT_CSS = """
    CockpitClockSpace {
        dock: right;
        width: 10;
        padding: 0 1;
    }
    """

    def render(self) -> str:
        return ""


class CockpitHeader(Widget):
    """The header: icon, title (and sub-title) of the screen or app, clock space. A click on
    it makes it three lines tall, or one again."""

    DEFAULT_CSS = """
    CockpitHeader {
        dock: top;
        width: 100%;
        background: $panel;
        color: $foreground;
        height: 1;
    }
    CockpitHeader.-tall {
        height: 3;
    }
    """

    def __init__(
        self,
        *,
        icon: str = "⭘",
        name: str | None = None,
        id: str | None = None,
        classes: str | None = None,
    ) -> None:
        super().__init__(name=name, id=id, classes=classes)
        self.icon = icon

    def compose(self) -> ComposeResult:
        yield CockpitIcon(self.icon, markup=False)
        yield CockpitTitle(markup=False)
        yield CockpitClockSpace()

    def on_mount(self) -> None:
        for node in (self.app, self.screen):
            self.watch(node, "title", self.show_title)
            self.watch(node, "sub_title", self.show_title)

    def on_click(self) -> None:
        self.toggle_class("-tall")

    def show_title(self) -> None:
        try:
            screen = self.screen
        except NoScreen:
            return  # being removed
        title = screen.title if screen.title is not None else self.app.title
        sub_title = screen.sub_title if screen.sub_title is not None else self.app.sub_title
        self.query_one(CockpitTitle).show(self.app.format_title(title, sub_title))


# -- the footer ---------------------------------------------------------------------------------


class CockpitKey(Widget):
    """One key in the footer and what it does; dimmed when it does not apply now."""

    ALLOW_SELECT = False
    COMPONENT_CLASSES: ClassVar = {"cockpit-key--key", "cockpit-key--description"}
    DEFAULT_CSS = """
    CockpitKey {
        width: auto;
        height: 1;
        text-wrap: nowrap;
        background: $footer-item-background;
        .cockpit-key--key {
            color: $footer-key-foreground;
            background: $footer-key-background;
            text-style: bold;
            padding: 0 1;
        }
        .cockpit-key--description {
            padding: 0 1 0 0;
            color: $footer-description-foreground;
            background: $footer-description-background;
        }
        &:hover {
            pointer: pointer;
            color: $footer-key-foreground;
            background: $block-hover-background;
        }
        &.-disabled {
            text-style: dim;
        }
        &.-compact {
            .cockpit-key--key {
                padding: 0;
            }
            .cockpit-key--description {
                padding: 0 0 0 1;
            }
        }
    }
    """

    def __init__(
        self,
        key: str,
        key_display: str,
        description: str,
        action: str,
        *,
        dimmed: bool = False,
        tooltip: str = "",
        classes: str = "",
    ) -> None:
        super().__init__(classes=classes)
        self.key = key
        self.key_display = key_display
        self.description = description
        self.action = action
        self.dimmed = dimmed
        self.set_class(dimmed, "-disabled")
        if tooltip:
            self.tooltip = tooltip

    def dim(self, dimmed: bool) -> None:
        self.dimmed = dimmed
        self.set_class(dimmed, "-disabled")

    def render(self) -> Text:
        key_style = self.get_component_rich_style("cockpit-key--key")
        description_style = self.get_component_rich_style("cockpit-key--description")
        key_padding = self.get_component_styles("cockpit-key--key").padding
        description_padding = self.get_component_styles("cockpit-key--description").padding
        label = Text.assemble(
            (" " * key_padding.left + self.key_display + " " * key_padding.right, key_style),
            (
                " " * description_padding.left + self.description + " " * description_padding.right,
                description_style,
            ),
        )
        label.stylize_before(self.rich_style)
        return label

    def on_mouse_down(self) -> None:
        if self.dimmed:
            self.app.bell()  # it does not apply now; the key, run anyway, says why
        self.app.simulate_key(self.key)  # as if typed: the binding runs its action


class KeyShown(NamedTuple):
    key: str
    display: str
    description: str
    action: str
    enabled: bool
    tooltip: str
    classes: str


class CockpitFooter(ScrollableContainer, can_focus=False, can_focus_children=False):
    """The keys of the screen's bindings on show, and the command palette's on the right."""

    ALLOW_SELECT = False
    DEFAULT_CSS = """
    CockpitFooter {
        layout: horizontal;
        color: $footer-foreground;
        background: $footer-background;
        dock: bottom;
        height: 1;
        scrollbar-size: 0 0;
        CockpitKey.-command-palette {
            dock: right;
            padding-right: 1;
            border-left: vkey $foreground 20%;
        }
    }
    """

    ready = reactive(False, repaint=False)  # the screen has told its bindings once

    def on_mount(self) -> None:
        self.screen.bindings_updated_signal.subscribe(self, self.bindings_changed)

    def on_unmount(self) -> None:
        self.screen.bindings_updated_signal.unsubscribe(self)

    def keys_wanted(self, screen: Screen) -> list[KeyShown]:
        """The first binding of each action on show, in the screen's order (the app's are
        commands.COMMANDS), then the command palette's."""
        active = screen.active_bindings
        wanted: dict[str, KeyShown] = {}
        for _, binding, enabled, tooltip in active.values():
            if binding.show and binding.action not in wanted:
                wanted[binding.action] = KeyShown(
                    binding.key,
                    self.app.get_key_display(binding),
                    binding.description,
                    binding.action,
                    enabled,
                    tooltip,
                    "",
                )
        keys = list(wanted.values())
        if self.app.ENABLE_COMMAND_PALETTE:
            palette = active.get(self.app.COMMAND_PALETTE_BINDING)
            if palette is not None:
                binding = palette.binding
                keys.append(
                    KeyShown(
                        binding.key,
                        self.app.get_key_display(binding),
                        binding.description,
                        binding.action,
                        palette.enabled,
                        binding.tooltip or binding.description,
                        "-command-palette -compact",
                    )
                )  # as Textual's footer shows it
        return keys

    def compose(self) -> ComposeResult:
        if not self.ready:
            return
        for k in self.keys_wanted(self.screen):
            yield CockpitKey(
                k.key,
                k.display,
                k.description,
                k.action,
                dimmed=not k.enabled,
                tooltip=k.tooltip,
                classes=k.classes,
            )

    def bindings_changed(self, screen: Screen) -> None:
        self.ready = True
        if not screen.app.app_focus or not self.is_attached or screen is not self.screen:
            return  # as Textual's footer: nothing changes while the terminal is away
        wanted = self.keys_wanted(screen)
        shown = list(self.query(CockpitKey))
        if [(k.key, k.action) for k in shown] == [(w.key, w.action) for w in wanted]:
            for footer_key, w in zip(shown, wanted):
                footer_key.dim(not w.enabled)  # the same keys: only their dimming changed
            return
        self.call_after_refresh(self.recompose)  # other keys: compose them afresh

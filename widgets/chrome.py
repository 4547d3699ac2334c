"""The cockpit's header and footer: Textual's, minus work that showed on every event.

``Header`` sets its title with ``Static.update``, which lays the whole screen out again; the
title is as wide as the header whatever it says, so ``CockpitHeader``'s title only repaints
(the sub-title says "refreshed HH:MM:SS": it changes with nearly every feed update).

``Footer`` composes itself again on every bindings change: every key removed and mounted
afresh, and the screen laid out again. In the cockpit the keys stay the same and only their
dimming follows the selection (a question came: ``a`` undims), so ``CockpitFooter`` updates
the keys on show instead; anything else (other keys, another order) still recomposes.
"""

from __future__ import annotations

from textual.app import ComposeResult
from textual.screen import Screen
from textual.visual import VisualType
from textual.widgets import Footer, Header
from textual.widgets._header import HeaderTitle  # not exported; Textual is pinned <9


class _Title(HeaderTitle):
    def update(self, content: VisualType = "", *, layout: bool = False) -> None:
        super().update(content, layout=False)  # the header's width, whatever the text


class CockpitHeader(Header):
    def compose(self) -> ComposeResult:
        for widget in super().compose():
            yield _Title() if type(widget) is HeaderTitle else widget


class CockpitFooter(Footer):
    def bindings_changed(self, screen: Screen) -> None:
        if self.is_attached and screen is self.screen and screen.app.app_focus \
                and self._dim_in_place(screen):
            return
        super().bindings_changed(screen)

    def _dim_in_place(self, screen: Screen) -> bool:
        """Dim the keys on show as ``Footer.compose`` would; False when it would show other
        keys (then it composes)."""
        keys = list(self.query("FooterKey"))
        if not keys or not self._bindings_ready:
            return False
        active = screen.active_bindings
        wanted: dict[str, tuple[str, bool]] = {}  # action -> (key, enabled): first binding wins
        for _, binding, enabled, _ in active.values():
            if binding.show:
                wanted.setdefault(binding.action, (binding.key, enabled))
        order = [(key, action, enabled) for action, (key, enabled) in wanted.items()]
        if self.show_command_palette and self.app.ENABLE_COMMAND_PALETTE:
            palette = active.get(self.app.COMMAND_PALETTE_BINDING)
            if palette is not None:
                order.append((palette.binding.key, palette.binding.action, palette.enabled))
        if [(k.key, k.action) for k in keys] != [(key, action) for key, action, _ in order]:
            return False
        for footer_key, (_, _, enabled) in zip(keys, order):
            footer_key._disabled = not enabled  # what a click on it does (FooterKey reads it)
            footer_key.set_class(not enabled, "-disabled")
        return True

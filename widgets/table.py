"""A titled panel holding one list: the base of Crew, Questions, Doorbells, Notifications.

``Panel.show(rows, now)`` is the only way rows get in. It changes only what changed: cells
of rows that are still there are updated in place, and the table is rebuilt only when rows
come or go — keeping the cursor on the record it was on, so what you are about to act on
never changes under you.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Any, ClassVar

from rich.text import Text
from textual.binding import Binding
from textual.containers import Vertical
from textual.widgets import DataTable, Static


class PanelTable(DataTable):
    """A row-cursor table with vim motion. Enter is left to the app (it jumps to the pane)."""

    BINDINGS: ClassVar = [
        Binding("j", "cursor_down", "Down", show=False),
        Binding("k", "cursor_up", "Up", show=False),
        Binding("g", "scroll_top", "Top", show=False),
        Binding("G", "scroll_bottom", "Bottom", show=False),
    ]

    picked = False  # the person moved the cursor; until then it stays on the first row

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        # Disabled (not just hidden), so the key falls through to the app's Jump binding.
        return action != "select_cursor"

    def _pick(self) -> None:
        self.picked = True

    def action_cursor_up(self) -> None:
        self._pick()
        super().action_cursor_up()

    def action_cursor_down(self) -> None:
        self._pick()
        super().action_cursor_down()

    def action_page_up(self) -> None:
        self._pick()
        super().action_page_up()

    def action_page_down(self) -> None:
        self._pick()
        super().action_page_down()

    def action_scroll_top(self) -> None:
        self._pick()
        super().action_scroll_top()

    def action_scroll_bottom(self) -> None:
        self._pick()
        super().action_scroll_bottom()

    async def _on_click(self, event) -> None:
        self._pick()
        await super()._on_click(event)


@dataclass(frozen=True)
class Column:
    key: str
    label: str
    width: int | None = None  # None: the one flexible column, takes what is left


class Panel(Vertical):
    """A bordered list with a title, and a sentence in place of the list when it is empty."""

    DEFAULT_CSS = """
    Panel {
        border: round $panel-lighten-2;
        border-title-color: $text-muted;
        border-title-style: bold;
        height: 1fr;
        padding: 0 1 0 0;
    }
    Panel:focus-within {
        border: round $accent;
        border-title-color: $accent;
    }
    Panel > PanelTable {
        height: 1fr;
        background: transparent;
        scrollbar-size-vertical: 1;
    }
    Panel > PanelTable > .datatable--header {
        background: transparent;
        color: $text-muted;
        text-style: bold;
    }
    Panel > .empty {
        color: $text-muted;
        padding: 1 2;
        height: auto;
    }
    Panel > .empty.loading {
        text-style: italic;
    }
    """

    title: ClassVar[str] = ""
    columns: ClassVar[tuple[Column, ...]] = ()
    empty_text: ClassVar[str] = ""  # may name keys by command id: "press {recruit}"
    LOADING_TEXT: ClassVar[str] = "Reading the home…"

    def __init__(self, *, keys: dict[str, str] | None = None, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        # command id -> key, from the app's registry: empty texts name the real keys
        self.keys = keys or {}
        self._rows: dict[str, Any] = {}
        self._keys: list[str] = []
        self._cells: dict[str, tuple] = {}
        self._flex = 0
        self._now: datetime | None = None
        self._loaded = False

    def compose(self):
        table = PanelTable(cursor_type="row", zebra_stripes=False, show_cursor=True)
        table.display = False
        yield table
        yield Static(self.LOADING_TEXT, classes="empty loading", markup=False)

    def on_mount(self) -> None:
        self.border_title = self.title
        self._add_columns()

    @property
    def table(self) -> PanelTable:
        return self.query_one(PanelTable)

    # -- what subclasses say -------------------------------------------------------------

    def row_key(self, row: Any) -> str:
        raise NotImplementedError

    def row_cells(self, row: Any, now: datetime, flex: int) -> tuple[Text, ...]:
        raise NotImplementedError

    def colour(self, variable: str) -> str:
        """A theme colour by its variable name ("success", "warning", ...), so rows follow
        the theme; the app re-shows every panel when the theme changes."""
        return self.app.theme_variables.get(variable, "")

    def counter(self, rows: list) -> str:
        return f"{self.title} {len(rows)}" if rows else self.title

    # -- rows in ---------------------------------------------------------------------------

    def show(self, rows: list, now: datetime, *, keep: str | None = None) -> None:
        self._loaded = True
        self._now = now
        self.border_title = self.counter(rows)
        table = self.table
        keys = [self.row_key(r) for r in rows]
        cells = {k: self.row_cells(r, now, self._flex) for k, r in zip(keys, rows)}
        if keys != self._keys:
            keep = keep or self.current_key
            at = table.cursor_row
            table.clear()
            for k in keys:
                table.add_row(*cells[k], key=k)
            if keys:
                # The first row is the default (oldest question, newest notification) until
                # the person picks a row; then the cursor stays on what they picked, and if
                # that goes away, where it was.
                if not table.picked:
                    target = 0
                elif keep in keys:
                    target = keys.index(keep)
                else:
                    target = min(max(at, 0), len(keys) - 1)
                table.move_cursor(row=target, animate=False)
        else:
            for k in keys:
                old = self._cells.get(k)
                for column, value, before in zip(self.columns, cells[k], old or ()):
                    if _sig(value) != _sig(before):
                        table.update_cell(k, column.key, value)
        self._rows = dict(zip(keys, rows))
        self._keys = keys
        self._cells = cells
        empty = self.query_one(".empty", Static)
        if not keys and table.has_focus:
            self.screen.focus_next()  # an empty list cannot hold focus; keep the keys working
        table.display = bool(keys)
        empty.display = not keys
        if not keys:
            empty.remove_class("loading")
            empty.update(self.empty_text.format_map(self.keys))

    def rows(self) -> list:
        return [self._rows[k] for k in self._keys]

    @property
    def current_key(self) -> str | None:
        table = self.table
        if not self._keys or not table.is_valid_row_index(table.cursor_row):
            return None
        return self._keys[table.cursor_row]

    @property
    def current(self) -> Any | None:
        key = self.current_key
        return self._rows.get(key) if key is not None else None

    # -- the flexible column follows the panel's width ---------------------------------------

    def _flex_width(self) -> int:
        """What is left for the flexible column: every column has one cell of padding on
        either side, and one cell stays free for the vertical scrollbar."""
        used = sum((c.width or 0) + 2 for c in self.columns)
        return max(self.content_size.width - used - 1, 12)

    def on_resize(self) -> None:
        flex = self._flex_width()
        if flex == self._flex:
            return
        self._flex = flex
        keep, rows = self.current_key, self.rows()
        self._add_columns()
        if self._now is not None:
            self.show(rows, self._now, keep=keep)

    def _add_columns(self) -> None:
        """(Re)build the columns; this empties the table, so ``show`` must follow."""
        table = self.table
        table.clear(columns=True)
        for c in self.columns:
            table.add_column(Text(c.label), key=c.key, width=c.width or max(self._flex, 12))
        self._keys, self._cells = [], {}


def _sig(value: Any) -> tuple:
    if isinstance(value, Text):
        return value.plain, str(value.style), tuple(value.spans)
    return (value,)

"""A titled panel holding one list: the base of Crew, Questions, Doorbells, Notifications.

``Panel.show(rows, now)`` is the only way rows get in. It changes only what changed: a cell
that changed is re-rendered alone (its row, not the table), rows that came are added and rows
that went are removed, never the whole table cleared and refilled — and the cursor stays on
the record it was on, so what you are about to act on never changes under you.
"""

from __future__ import annotations

import heapq
from dataclasses import dataclass
from datetime import datetime
from typing import Any, ClassVar

from rich.text import Text
from textual.containers import Vertical
from textual.widgets import Static

from widgets.cells import AgeWatch, inert
from widgets.panels.row_list import PanelTable

__all__ = ["Column", "Panel"]


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
    Panel > PanelTable > .panel-table--header {
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
    empty_text: str = ""  # may name keys by command id: "press {recruit}"; a panel may set its own
    LOADING_TEXT: ClassVar[str] = "Reading the home…"

    def __init__(
        self, *, keys: dict[str, str] | None = None, ages: AgeWatch | None = None, **kwargs: Any
    ) -> None:
        super().__init__(**kwargs)
        # command id -> key, from the app's registry: empty texts name the real keys
        self.keys = keys or {}
        # the row being drawn: when its ages next read differently (``row_cells`` passes it
        # to ``age``); each row's time is kept (``_due``) and the app's watch told of it
        self.ages = AgeWatch()
        self._told = ages
        self._due: dict[str, datetime] = {}  # row key -> when its cells next read differently
        self._dues: list[tuple[datetime, str]] = []  # the same as a heap (stale entries skipped)
        self._rows: dict[str, Any] = {}
        self._keys: list[str] = []
        self._cells: dict[str, tuple] = {}  # the cells the table holds, by row key
        self._flex = 0
        self._now: datetime | None = None
        self._loaded = False
        self._empty_shown: str | None = None  # the sentence on show when the list is empty

    def compose(self):
        # kept: they live as long as the panel, and a DOM query on every update adds up
        self._table = PanelTable()
        self._table.display = False
        self._table.freshen = self._freshen
        self._empty = Static(self.LOADING_TEXT, classes="empty loading", markup=False)
        yield self._table
        yield self._empty

    def on_mount(self) -> None:
        self.border_title = inert(self.title)
        self._add_columns()

    @property
    def table(self) -> PanelTable:
        return self._table

    @property
    def loaded(self) -> bool:
        """Rows were shown at least once (until then it says it is reading)."""
        return self._loaded

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

    def show(
        self, rows: list, now: datetime, *, keep: str | None = None, every_row: bool = True
    ) -> None:
        """Show these rows. With ``every_row=False`` (a feed update) a row equal to the one
        on show keeps its cells as they are: its ages are brought up to date by the next
        ages tick, like every other age, instead of every row being re-rendered."""
        self._loaded = True
        self._now = now
        title = self.counter(rows)
        if self.border_title != title:  # setting it repaints the panel, even when equal
            self.border_title = inert(title)
        table = self.table
        keys = [self.row_key(r) for r in rows]
        held = self._patch(table, dict(zip(keys, rows)), now, every_row)
        if keys != self._keys:
            for k in self._due.keys() - held.keys():
                del self._due[k]  # gone: its heap entry is skipped
            self._move_rows(table, keys, held, keep or self.current_key)
        self._rows = dict(zip(keys, rows))
        self._keys = keys
        self._cells = held
        self._show_empty(table, not keys)

    def _patch(
        self, table: PanelTable, rows: dict[str, Any], now: datetime, every_row: bool
    ) -> dict[str, tuple]:
        """Put changed cells of rows that stay into the table; the cells it then holds,
        by row key (a new row's are those it is to be added with)."""
        held: dict[str, tuple] = {}
        changes: dict[str, dict[str, Any]] = {}
        for k, row in rows.items():
            old = self._cells.get(k)
            if old is not None and not every_row and self._rows.get(k) == row:
                held[k] = old
                continue
            cells = self._cells_at(k, row, now)
            if old is None:
                held[k] = cells
                continue
            changed = {}
            now_held = []
            for column, value, before in zip(self.columns, cells, old):
                if _sig(value) != _sig(before):
                    changed[column.key] = value
                    now_held.append(value)
                else:
                    now_held.append(before)  # unchanged: the table keeps what it has
            if changed:
                changes[k] = changed
            held[k] = tuple(now_held)
        table.patch_rows(changes)
        return held

    # -- ages: a tick costs the rows on screen whose age reads differently -----------------

    def _cells_at(self, key: str, row: Any, now: datetime) -> tuple:
        """The row's cells at ``now``, noting when they next read differently."""
        self.ages.clear()
        cells = self.row_cells(row, now, self._flex)
        when = self.ages.soonest
        if when is None:
            self._due.pop(key, None)
        elif self._due.get(key) != when:
            self._due[key] = when
            heapq.heappush(self._dues, (when, key))
            if len(self._dues) > 2 * len(self._due) + 64:  # mostly skipped entries: rebuild
                self._dues = [(w, k) for k, w in self._due.items()]
                heapq.heapify(self._dues)
        if when is not None and self._told is not None:
            self._told.note(when)
        return cells

    def next_due(self) -> datetime | None:
        """When the soonest row's cells read differently (None: no row has an age)."""
        dues = self._dues
        while dues and self._due.get(dues[0][1]) != dues[0][0]:
            heapq.heappop(dues)
        return dues[0][0] if dues else None

    def show_ages(self, now: datetime) -> None:
        """The clock moved to ``now``: the rows whose ages read differently by now are drawn
        again if they are on screen; the others are marked stale and freshened (at the time
        of the last tick) when they are read or scrolled into view. Every other row is not
        looked at: an ages tick costs what it changes on screen, not what the panel holds."""
        if not self._loaded:
            return
        self._now = now
        dues, due = self._dues, self._due
        turned: list[str] = []
        while dues and dues[0][0] <= now:
            when, key = heapq.heappop(dues)
            if due.get(key) == when:
                del due[key]
                turned.append(key)
        if not turned:
            return
        table = self.table
        shown = table.rows_shown()
        changes: dict[str, dict[str, Any]] = {}
        for key in turned:
            if table.row_index(key) not in shown:
                table.mark_stale(key)
                continue
            old = self._cells[key]
            cells = self._cells_at(key, self._rows[key], now)
            changed = {c.key: v for c, v, b in zip(self.columns, cells, old) if _sig(v) != _sig(b)}
            self._cells[key] = tuple(cells)
            if changed:
                changes[key] = changed
        table.patch_rows(changes)

    def _freshen(self, key: str) -> tuple | None:
        """A stale row's cells, for the table that is about to read or draw them."""
        row = self._rows.get(key)
        if row is None or self._now is None:
            return None
        cells = self._cells_at(key, row, self._now)
        self._cells[key] = cells
        return cells

    def _move_rows(
        self, table: PanelTable, keys: list[str], cells: dict[str, tuple], keep: str | None
    ) -> None:
        at = table.cursor_row
        staying = set(keys)
        for k in self._keys:
            if k not in staying:
                table.remove_row(k)
        had = set(self._keys)
        for k in keys:
            if k not in had:
                table.add_row(*cells[k], key=k)
        if [k for k in self._keys if k in staying] + [k for k in keys if k not in had] != keys:
            table.order_rows(keys)
        if keys:
            # The first row is the default (oldest question, newest notification) until the
            # person picks a row; then the cursor stays on what they picked, and if that
            # goes away, where it was.
            if not table.picked:
                target = 0
            elif keep in staying:
                target = keys.index(keep)
            else:
                target = min(max(at, 0), len(keys) - 1)
            table.move_cursor(row=target, animate=False)

    def _show_empty(self, table: PanelTable, empty_now: bool) -> None:
        if empty_now and table.has_focus:
            self.screen.focus_next()  # an empty list cannot hold focus; keep the keys working
        table.display = not empty_now
        empty = self._empty
        empty.display = empty_now
        text = self.empty_text.format_map(self.keys)
        if empty_now and text != self._empty_shown:  # an update lays the screen out again
            self._empty_shown = text
            empty.remove_class("loading")
            empty.update(inert(text))

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
        self._due, self._dues = {}, []


def _sig(value: Any) -> tuple:
    if isinstance(value, Text):
        return value.plain, str(value.style), tuple(value.spans)
    return (value,)

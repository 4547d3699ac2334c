"""The list inside each panel: a table of one-line rows, with a row cursor and vim motion,
where a change costs what changed.

It is a ``ScrollView`` of our own rather than Textual's ``DataTable``: DataTable keys every
rendered cell and line by a table-wide counter that each ``update_cell``, ``add_row`` and
``remove_row`` bumps, so one new mail count re-rendered every visible cell; making it do
less meant patching its private caches. Here each rendered line is cached by what it shows
— (row key, the row's stamp, width, cursor, hover, the look) — not by where it is: changing
one cell re-renders that one line, a row that only moved is drawn from the cache at its new
place, and a row that came is the only new render. Only public Textual API is used
(``render_line``, ``virtual_size``, ``scroll_offset``, ``refresh_lines``, ``Strip``).

Rows are one line each and cells are ``rich.text.Text`` (or anything ``str()`` makes
sensible): the panels never need more.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass
from itertools import count
from typing import Any, ClassVar

from rich.segment import Segment
from rich.style import Style
from rich.text import Text
from textual import events
from textual.binding import Binding
from textual.cache import LRUCache
from textual.geometry import Region, Size
from textual.message import Message
from textual.reactive import reactive
from textual.scroll_view import ScrollView
from textual.strip import Strip

KEPT_SCREENS = 3  # rendered lines kept per table: this many tables' heights
PADDING = 1  # blank cells on either side of each column


@dataclass(frozen=True)
class ListColumn:
    key: str
    label: Text
    width: int  # the text's width; the column takes PADDING more on either side


@dataclass(frozen=True)
class Look:
    """The styles a line is drawn with (from CSS, the theme and focus): part of each cached
    line's key, so a new theme or a focus change draws afresh and nothing else does."""

    base: Style
    header: Style
    cursor: Style
    hover: Style
    cursor_colour_wins: bool  # the cursor's foreground over the cells' own colours


class PanelTable(ScrollView, can_focus=True):
    """A row-cursor list with vim motion. Enter is left to the app (it jumps to the pane)."""

    ALLOW_SELECT = False
    BINDINGS: ClassVar = [
        Binding("up,k", "cursor_up", "Up", show=False),
        Binding("down,j", "cursor_down", "Down", show=False),
        Binding("pageup", "page_up", "Page up", show=False),
        Binding("pagedown", "page_down", "Page down", show=False),
        Binding("ctrl+home,g", "first_row", "Top", show=False),
        Binding("ctrl+end,G", "last_row", "Bottom", show=False),
        Binding("home", "scroll_home", "Home", show=False),
        Binding("end", "scroll_end", "End", show=False),
    ]
    COMPONENT_CLASSES: ClassVar = {
        "panel-table--header",
        "panel-table--cursor",
        "panel-table--hover",
    }
    # DataTable's look, so the panels look as they did
    DEFAULT_CSS = """
    PanelTable {
        background: $surface;
        color: $foreground;
        height: auto;
        max-height: 100%;
        &:focus {
            background-tint: $foreground 5%;
            & > .panel-table--cursor {
                background: $block-cursor-background;
                color: $block-cursor-foreground;
                text-style: $block-cursor-text-style;
            }
            & > .panel-table--header {
                background-tint: $foreground 5%;
            }
        }
        & > .panel-table--header {
            text-style: bold;
            background: $panel;
            color: $foreground;
        }
        &:ansi > .panel-table--header {
            background: ansi_bright_blue;
            color: ansi_default;
        }
        & > .panel-table--cursor {
            background: $block-cursor-blurred-background;
            color: $block-cursor-blurred-foreground;
            text-style: $block-cursor-blurred-text-style;
        }
        & > .panel-table--hover {
            background: $block-hover-background;
        }
    }
    """

    # "css": the cursor's foreground colour wins over a cell's; "renderable": the cell's
    cursor_foreground_priority = reactive("css")

    picked = False  # the person moved the cursor; until then it stays on the first row

    class RowHighlighted(Message):
        """The cursor moved to another row (or the first row came)."""

        def __init__(self, table: PanelTable, cursor_row: int, row_key: str) -> None:
            super().__init__()
            self.table = table
            self.cursor_row = cursor_row
            self.row_key = row_key

        @property
        def control(self) -> PanelTable:
            return self.table

    class RowSelected(Message):
        """The row under the cursor was clicked again."""

        def __init__(self, table: PanelTable, cursor_row: int, row_key: str) -> None:
            super().__init__()
            self.table = table
            self.cursor_row = cursor_row
            self.row_key = row_key

        @property
        def control(self) -> PanelTable:
            return self.table

    def __init__(
        self, *, name: str | None = None, id: str | None = None, classes: str | None = None
    ) -> None:
        super().__init__(name=name, id=id, classes=classes)
        self._list_columns: list[ListColumn] = []
        self._row_keys: list[str] = []  # in the order shown
        self._row_index: dict[str, int] = {}
        self._row_cells: dict[str, list[Any]] = {}
        self._row_stamps: dict[str, int] = {}  # a new stamp each time a row's cells change
        self._stamper = count()
        self._cursor_at = 0
        self._hover_at: int | None = None  # the row under the mouse, while it moves
        self._drawn: LRUCache[tuple, Strip] = LRUCache(KEPT_SCREENS * 20)
        self._drawn_columns = 0  # bumped when the columns change: every line is stale
        self._look: Look | None = None
        # rows whose cells are out of date (an age that reads differently now) and were
        # off screen when that was found: ``freshen`` gives their cells when they are read
        # or drawn, so an ages tick costs the rows on screen, not every row in the list
        self._stale: set[str] = set()
        self.freshen: Callable[[str], Iterable[Any] | None] | None = None

    # -- what callers read -------------------------------------------------------------------

    @property
    def row_count(self) -> int:
        return len(self._row_keys)

    @property
    def cursor_row(self) -> int:
        return self._cursor_at

    @property
    def row_keys(self) -> list[str]:
        return list(self._row_keys)

    @property
    def cursor_key(self) -> str | None:
        return self._row_keys[self._cursor_at] if self.is_valid_row_index(self._cursor_at) else None

    def is_valid_row_index(self, index: int) -> bool:
        return 0 <= index < len(self._row_keys)

    def get_row(self, key: str) -> list[Any]:
        return list(self._cells_of(key))

    def get_row_at(self, index: int) -> list[Any]:
        if not self.is_valid_row_index(index):
            raise IndexError(f"no row at {index}")
        return self.get_row(self._row_keys[index])

    def get_cell(self, key: str, column: str) -> Any:
        return self._cells_of(key)[self._column_index(column)]

    def row_index(self, key: str) -> int:
        return self._row_index[key]

    def rows_shown(self) -> range:
        """The indices of the rows on screen now (none while the list is not laid out)."""
        if not self.is_mounted or not self.display:
            return range(0)
        top = max(round(self.scroll_offset.y), 0)
        shown = max(self.scrollable_content_region.height - 1, 0)  # under the header
        return range(top, min(top + shown, len(self._row_keys)))

    def mark_stale(self, key: str) -> None:
        """This row's cells are out of date: ``freshen`` gives them when it is next read or
        drawn (a row off screen is not drawn: nothing is painted now)."""
        if key in self._row_index:
            self._stale.add(key)

    def _cells_of(self, key: str) -> list[Any]:
        """A row's cells, brought up to date first if they were marked stale."""
        if key in self._stale:
            self._stale.discard(key)
            fresh = self.freshen(key) if self.freshen is not None else None
            if fresh is not None:
                cells = list(fresh)
                cells += [Text("")] * (len(self._list_columns) - len(cells))
                self._row_cells[key] = cells
                self._row_stamps[key] = next(self._stamper)
        return self._row_cells[key]

    def get_cell_at(self, coordinate: tuple[int, int]) -> Any:
        row, column = coordinate
        return self.get_row_at(row)[column]

    def _column_index(self, column: str) -> int:
        for i, c in enumerate(self._list_columns):
            if c.key == column:
                return i
        raise KeyError(column)

    # -- columns and rows in -------------------------------------------------------------

    def add_column(self, label: str | Text, *, key: str, width: int) -> None:
        label = Text(label) if isinstance(label, str) else label
        self._list_columns.append(ListColumn(key, label, width))
        for cells in self._row_cells.values():
            cells.append(Text(""))
        self._columns_changed()

    def clear(self, columns: bool = False) -> None:
        """No rows (and, with ``columns``, no columns); the cursor back on the first row."""
        self._row_keys, self._row_index, self._row_cells, self._row_stamps = [], {}, {}, {}
        self._stale = set()
        self._cursor_at, self._hover_at = 0, None
        if columns:
            self._list_columns = []
        self._columns_changed()
        self.scroll_to(0, 0, animate=False, force=True)

    def add_row(self, *cells: Any, key: str) -> None:
        if key in self._row_index:
            raise KeyError(f"row {key!r} is already in the list")
        if len(cells) > len(self._list_columns):
            raise ValueError("more cells than columns")
        values = list(cells) + [Text("")] * (len(self._list_columns) - len(cells))
        self._row_index[key] = len(self._row_keys)
        self._row_keys.append(key)
        self._row_cells[key] = values
        self._row_stamps[key] = next(self._stamper)
        self._resize_virtual()
        self._refresh_rows(len(self._row_keys) - 1)
        if len(self._row_keys) == 1:  # a row under the cursor where there was none
            self._cursor_at = 0
            self._highlighted()

    def remove_row(self, key: str) -> None:
        index = self._row_index.pop(key)
        del self._row_keys[index]
        del self._row_cells[key]
        del self._row_stamps[key]
        self._stale.discard(key)
        for i in range(index, len(self._row_keys)):
            self._row_index[self._row_keys[i]] = i
        self._resize_virtual()
        self._refresh_rows(index, len(self._row_keys) + 1)  # the rows below moved up
        self._clamp_cursor()
        if self._hover_at is not None and self._hover_at >= len(self._row_keys):
            self._hover_at = None

    def patch_rows(self, changes: dict[str, dict[str, Any]]) -> None:
        """New values for some cells of some rows (row key -> column key -> value); each
        changed row's line is drawn again, nothing else. The caller gives every cell that
        differs from what the list holds: a row marked stale is up to date after it."""
        for key, values in changes.items():
            self._stale.discard(key)
            cells = self._row_cells[key]
            for column, value in values.items():
                cells[self._column_index(column)] = value
            self._row_stamps[key] = next(self._stamper)
            self._refresh_rows(self._row_index[key])

    def order_rows(self, keys: Iterable[str]) -> None:
        """Show the rows in this order (the same keys as the list holds); only the lines
        whose row changed are painted again, from the cache."""
        keys = list(keys)
        if len(keys) != len(self._row_keys) or set(keys) != set(self._row_keys):
            raise ValueError("order_rows needs exactly the keys the list holds")
        old = self._row_keys
        self._row_keys = keys
        self._row_index = {k: i for i, k in enumerate(keys)}
        for i, (before, now) in enumerate(zip(old, keys)):
            if before != now:
                self._refresh_rows(i)

    def _columns_changed(self) -> None:
        self._drawn_columns += 1
        self._drawn.clear()
        self._resize_virtual()
        self.refresh()

    def _resize_virtual(self) -> None:
        width = sum(c.width + 2 * PADDING for c in self._list_columns)
        self.virtual_size = Size(width, len(self._row_keys) + 1)  # the header line first

    # -- the cursor --------------------------------------------------------------------------

    def move_cursor(
        self, *, row: int | None = None, animate: bool = False, scroll: bool = True
    ) -> None:
        if row is not None:
            self._set_cursor(row)
        if scroll:
            self._scroll_to_cursor(animate=animate)

    def _set_cursor(self, row: int) -> None:
        row = max(0, min(row, len(self._row_keys) - 1))
        if row == self._cursor_at:
            return
        before, self._cursor_at = self._cursor_at, row
        self._refresh_rows(before)
        self._refresh_rows(row)
        self._highlighted()

    def _clamp_cursor(self) -> None:
        self._set_cursor(self._cursor_at)
        self._refresh_rows(self._cursor_at)

    def _highlighted(self) -> None:
        key = self.cursor_key
        if key is not None:
            self.post_message(self.RowHighlighted(self, self._cursor_at, key))

    def _scroll_to_cursor(self, animate: bool = False) -> None:
        rows_shown = self.scrollable_content_region.height - 1  # under the header
        if rows_shown < 1:
            return  # not laid out yet: on_resize does it
        top = round(self.scroll_offset.y)
        if self._cursor_at < top:
            self.scroll_to(y=self._cursor_at, animate=animate, force=True)
        elif self._cursor_at >= top + rows_shown:
            self.scroll_to(y=self._cursor_at - rows_shown + 1, animate=animate, force=True)

    def _moved_by_keys(self, row: int) -> None:
        self.picked = True
        self._hide_hover()
        self._set_cursor(row)
        self._scroll_to_cursor()

    def action_cursor_up(self) -> None:
        self._moved_by_keys(self._cursor_at - 1)

    def action_cursor_down(self) -> None:
        self._moved_by_keys(self._cursor_at + 1)

    def action_page_up(self) -> None:
        self._moved_by_keys(self._cursor_at - max(self.scrollable_content_region.height - 1, 1))

    def action_page_down(self) -> None:
        self._moved_by_keys(self._cursor_at + max(self.scrollable_content_region.height - 1, 1))

    def action_first_row(self) -> None:
        self._moved_by_keys(0)

    def action_last_row(self) -> None:
        self._moved_by_keys(len(self._row_keys) - 1)

    def action_scroll_home(self) -> None:  # the left edge (a row cursor has no columns)
        self.scroll_to(x=0, animate=False)

    def action_scroll_end(self) -> None:
        self.scroll_to(x=self.max_scroll_x, animate=False)

    # -- the mouse -------------------------------------------------------------------------

    def _row_under(self, event: events.MouseEvent) -> int | None:
        offset = event.get_content_offset(self)
        if offset is None or offset.y < 1:  # outside, or on the header
            return None
        row = offset.y - 1 + round(self.scroll_offset.y)
        return row if self.is_valid_row_index(row) else None

    def on_click(self, event: events.Click) -> None:
        row = self._row_under(event)
        if row is None:
            return
        event.stop()
        self.picked = True
        if row == self._cursor_at:
            self.post_message(self.RowSelected(self, row, self._row_keys[row]))
        self._set_cursor(row)
        self._scroll_to_cursor(animate=True)

    def on_mouse_move(self, event: events.MouseMove) -> None:
        row = self._row_under(event)
        if row != self._hover_at:
            before, self._hover_at = self._hover_at, row
            self._refresh_rows(before)
            self._refresh_rows(row)

    def on_leave(self, event: events.Leave) -> None:
        self._hide_hover()

    def _hide_hover(self) -> None:
        if self._hover_at is not None:
            before, self._hover_at = self._hover_at, None
            self._refresh_rows(before)

    # -- drawing ---------------------------------------------------------------------------

    def on_resize(self, event: events.Resize) -> None:
        """A few tables' heights of lines is plenty: every cached line holds a Strip, and
        each full garbage collection walks them all. Lines of another width are stale
        anyway; those of the same width are kept (a resize also comes when rows came)."""
        wanted = KEPT_SCREENS * (event.size.height + 2)
        if wanted > self._drawn.maxsize:
            self._drawn.grow(wanted)
        elif wanted * 2 < self._drawn.maxsize:
            self._drawn = LRUCache(wanted)  # an LRUCache only shrinks when emptied
        self._scroll_to_cursor()

    def _refresh_rows(self, index: int | None, rows: int = 1) -> None:
        """Paint these rows' lines again, where they are on screen (the header is line 0)."""
        if index is None or not self.is_mounted:
            return
        top = round(self.scroll_offset.y)
        shown = self.scrollable_content_region.height - 1
        first, last = max(index, top), min(index + rows, top + shown)
        if first < last:
            self.refresh_lines(1 + first, last - first)

    def _work_out_look(self) -> Look:
        self._look = Look(
            base=self.rich_style,
            header=self.get_component_styles("panel-table--header").rich_style,
            cursor=self.get_component_rich_style("panel-table--cursor"),
            hover=self.get_component_rich_style("panel-table--hover"),
            cursor_colour_wins=self.cursor_foreground_priority == "css",
        )
        return self._look

    def render_lines(self, crop: Region) -> list[Strip]:
        self._work_out_look()  # once a paint, not once a line (styles change between paints)
        return super().render_lines(crop)

    def render_line(self, y: int) -> Strip:
        look = self._look or self._work_out_look()
        width = self.size.width
        if y == 0:
            strip = self._header_line(look, width)
        else:
            index = y - 1 + round(self.scroll_offset.y)
            if not self.is_valid_row_index(index):
                return Strip.blank(width, look.base)
            strip = self._row_line(index, look, width)
        x = round(self.scroll_offset.x)
        if x or strip.cell_length != width:
            strip = strip.crop_extend(x, x + width, look.base)
        return strip

    def _header_line(self, look: Look, width: int) -> Strip:
        key = (None, self._drawn_columns, width, look)
        strip = self._drawn.get(key)
        if strip is None:
            segments: list[Segment] = []
            for column in self._list_columns:
                segments += self._cell(column.label, column.width, look.header, None)
            strip = self._finish(segments, width, look.header)
            self._drawn[key] = strip
        return strip

    def _row_line(self, index: int, look: Look, width: int) -> Strip:
        row_key = self._row_keys[index]
        if row_key in self._stale:
            self._cells_of(row_key)  # its cells (and stamp) brought up to date first
        cursor = index == self._cursor_at
        hover = index == self._hover_at
        key = (row_key, self._row_stamps[row_key], self._drawn_columns, width, cursor, hover, look)
        strip = self._drawn.get(key)
        if strip is None:
            strip = self._drawn[key] = self._draw_row(row_key, cursor, hover, look, width)
        return strip

    def _draw_row(self, row_key: str, cursor: bool, hover: bool, look: Look, width: int) -> Strip:
        """A row's line, rendered (only when the cache has no line for it as it is now)."""
        over = Style()  # what the cursor and the mouse add, as DataTable adds them
        if hover:
            over += look.hover
        if cursor:
            over += look.cursor
        style = look.base + over
        post = Style.from_color(color=over.color) if look.cursor_colour_wins else None
        segments: list[Segment] = []
        for column, value in zip(self._list_columns, self._row_cells[row_key]):
            segments += self._cell(value, column.width, style, post)
        return self._finish(segments, width, style)

    def _cell(self, value: Any, width: int, style: Style, post: Style | None) -> list[Segment]:
        """One cell: its text cut to the column with an ellipsis, padded either side, under
        ``style`` (the row's), with ``post`` over its own colours."""
        text = value if isinstance(value, Text) else Text(str(value))
        if text.cell_len > width:
            text = text.copy()
            text.truncate(width, overflow=text.overflow or "ellipsis")
        console = self.app.console
        # Text.render leaves the text's own style out (Rich joins it in as a span first); a
        # style Rich cannot parse (a theme's "auto 60%") is no style, as Rich renders it
        own = console.get_style(text.style, default=Style.null()) if text.style else None
        body = text.render(console, end="")
        if own:
            body = Segment.apply_style(body, own)
        pad = " " * PADDING
        segments = [Segment(pad), *body, Segment(" " * (width - text.cell_len) + pad)]
        return list(Segment.apply_style(segments, style, post))

    def _finish(self, segments: list[Segment], width: int, fill: Style) -> Strip:
        """The line as wide as the list or the table, the rest in the row's style."""
        table_width = sum(c.width + 2 * PADDING for c in self._list_columns)
        strip = Strip(segments, table_width)
        if table_width < width:
            strip = strip.extend_cell_length(width, fill)
        return strip.simplify()

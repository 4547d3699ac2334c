"""The table inside each panel: DataTable with vim motion, and changes that cost what changed.

DataTable renders a cell once and caches it, but every cache key holds a table-wide counter
that each ``update_cell``, ``add_row``, ``remove_row`` and ``sort`` bumps: one new mail count,
or one notification added on top, re-rendered every visible cell (~0.3 ms each; 60-80 of
them in a panel). ``patch_rows`` drops only the changed cells' cached renders, and a cell
whose row only moved is not rendered again: its old render gets the new row number (the one
thing in it that depends on where the row is). Both lean on how Textual 8 keys those caches;
``tests/test_app_panels.py`` compares the result with a freshly built table.
"""

from __future__ import annotations

from typing import Any, ClassVar

from rich.segment import Segment
from rich.style import Style
from textual.binding import Binding
from textual.cache import LRUCache
from textual.widgets import DataTable
from textual.widgets.data_table import RowKey

KEPT_SCREENS = 3  # rendered cells and lines kept per table: this many tables' heights


class PanelTable(DataTable):
    """A row-cursor table with vim motion. Enter is left to the app (it jumps to the pane)."""

    BINDINGS: ClassVar = [
        Binding("j", "cursor_down", "Down", show=False),
        Binding("k", "cursor_up", "Up", show=False),
        Binding("g", "scroll_top", "Top", show=False),
        Binding("G", "scroll_bottom", "Bottom", show=False),
    ]

    picked = False  # the person moved the cursor; until then it stays on the first row

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        # (row key, column key, everything else the render depends on) -> (the value
        # rendered, the row number it was rendered at, its lines); see _render_cell
        self._moved_cells: LRUCache[tuple, tuple] = LRUCache(1000)

    def on_resize(self, event) -> None:  # besides DataTable's own handler
        """DataTable keeps 10,000 rendered cells and 1,000 lines per table, most of them
        renders of rows that moved since (each row that comes or goes makes them all stale):
        the heap grew by ~200 objects an event, and each full garbage collection walks all
        of it, pausing the screen longer and longer (over 100 ms after 400 events). A few
        tables' heights of cells and lines is plenty."""
        lines = KEPT_SCREENS * (event.size.height + 2)
        cells = lines * max(len(self.columns), 8)
        for cache, size in ((self._cell_render_cache, cells), (self._moved_cells, cells),
                            (self._row_render_cache, lines), (self._row_renderable_cache, lines),
                            (self._line_cache, lines)):
            if cache.maxsize != size:
                cache.maxsize = size
                cache.clear()  # a smaller cache only shrinks when emptied; a resize made
                # every render stale anyway

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

    # -- changing rows without re-rendering the table ---------------------------------------

    def patch_rows(self, changes: dict[str, dict[str, Any]]) -> None:
        """New values for some cells of some rows (row key -> column key -> value), like
        ``update_cell``; only those cells are rendered again, and only those rows' lines."""
        if not changes:
            return
        rows = {RowKey(k) for k in changes}
        cells = set()  # (row key, column key): the cells rendered again; the rest are reused
        for key, values in changes.items():
            data = self._data[RowKey(key)]
            for column, value in values.items():
                if column not in data:
                    raise KeyError(column)
                data[column] = value  # equal to the ColumnKey there: the dict keeps that key
                cells.add((key, column))
        indexes = [self._row_locations.get(k) for k in rows]
        for index in indexes:
            self._row_renderable_cache.discard((self._update_count, index))
        for stale in [k for k in self._cell_render_cache.keys()
                      if k[0] in rows and (k[0], k[1]) in cells]:
            self._cell_render_cache.discard(stale)
        for stale in [k for k in self._row_render_cache.keys() if k[0] in rows]:
            self._row_render_cache.discard(stale)
        # the line cache is keyed by the line's y in the table (the header's lines first)
        top = self.header_height if self.show_header else 0
        ys = {top + y for y, (row, _) in enumerate(self._y_offsets) if row in rows}
        for stale in [k for k in self._line_cache.keys() if k[0] in ys]:
            self._line_cache.discard(stale)
        for index in indexes:
            self.refresh_row(index)

    def order_rows(self, first_cells: list[Any]) -> None:
        """Put the rows in this order, given by each row's first cell as the table holds it
        (``add_row`` can only append, and ``sort`` hands its key function only the cells)."""
        order = {id(cell): i for i, cell in enumerate(first_cells)}
        self.sort(key=lambda cells: order[id(cells[0])])

    # -- a moved row's cells are not rendered again ------------------------------------------

    def _render_cell(self, row_index: int, column_index: int, base_style: Style, width: int,
                     cursor: bool = False, hover: bool = False):
        if row_index < 0 or column_index < 0:  # the header, row labels
            return super()._render_cell(row_index, column_index, base_style, width, cursor,
                                        hover)
        row_key = self._row_locations.get_key(row_index)
        column_key = self._column_locations.get_key(column_index)
        value = self._data[row_key][column_key]
        key = (row_key, column_key, base_style, width, cursor, hover, self._show_hover_cursor,
               self._pseudo_class_state, self.show_cursor, self.cursor_foreground_priority,
               self.cursor_background_priority, self.rows[row_key].height)
        seen = self._moved_cells.get(key)
        if seen is not None and seen[0] is value:
            if seen[1] == row_index:
                return seen[2]
            # DataTable renders a cell with the row and column in its style's meta (which
            # cell a click hit), merged last; the new row number replaces the old one
            where = Style.from_meta({"row": row_index, "column": column_index})
            lines = [[Segment(text, style + where if style else where, control)
                      for text, style, control in line] for line in seen[2]]
        else:
            lines = super()._render_cell(row_index, column_index, base_style, width, cursor,
                                         hover)
        self._moved_cells[key] = (value, row_index, lines)
        return lines

    def _clear_caches(self) -> None:
        super()._clear_caches()
        self._moved_cells.clear()

    def notify_style_update(self) -> None:
        self._moved_cells.clear()  # before DataTable's refresh: a new theme, new colours
        super().notify_style_update()

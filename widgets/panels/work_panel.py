"""The Work panel: the work ledger's items, what needs reconciliation loud and first.

A filter (the app's key cycles ``WORK_FILTERS``) narrows the list; the title names it. The
border's foot names the filter's key and which ledger is in use ("ledger: files", or the
database's URL with its password redacted), as the feed read it. What keeps the panel from
showing the whole ledger (``HomeView.work_problem``: a ledger that cannot be read, items
that do not validate) is said in the foot and, while there are no rows, in their place.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from rich.text import Text
from textual import on

from state.crew.spend import shown
from widgets.cells import age, inert, plain
from widgets.panels.base import Column, Panel
from widgets.panels.row_list import PanelTable
from widgets.view import RECONCILE, WORK_FILTERS, HomeView, WorkRow

# work state -> theme colour variable
STATE_COLOURS = {
    "queued": "text-muted",
    "running": "primary-lighten-2",
    "succeeded": "success",
    "failed": "warning",
    "cancelled": "text-muted",
    RECONCILE: "error",
}
STATE_WORDS = {RECONCILE: "RECONCILE"}  # the only state wider than its column
SOURCE_WORDS = {"assignment": "assign"}
FILTER_WORDS = {RECONCILE: "needs reconciliation"}

EMPTY_ALL = (
    "No work yet. Recruiting a crew (press {recruit}) or giving one its next task "
    "creates a work item, and so do captain work submit and webhook deliveries."
)
EMPTY_FILTERED = "No {what} work. Press {work_filter} for {next}."


class WorkPanel(Panel):
    DEFAULT_CSS = """
    WorkPanel {
        border-subtitle-color: $text-muted;
    }
    WorkPanel.-reconciling {
        border: round $error;
        border-title-color: $error;
    }
    WorkPanel.-reconciling:focus-within {
        border: round $error;
        border-title-color: $error;
    }
    """
    title = "Work"
    columns = (
        Column("state", "State", 9),
        Column("work", "Work"),
        Column("crew", "Crew", 10),
        Column("gen", "Gen", 3),
        Column("source", "Source", 7),
        Column("since", "Since", 5),
    )
    empty_text = EMPTY_ALL

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.state_filter = "all"
        self.matched = 0  # rows under the filter, before finished ones were capped
        self.ledger = ""  # which ledger the rows come from (the feed says; shown in the foot)
        self.problem = ""  # what the feed could not read (shown in the foot and when empty)
        self._filter_empty = EMPTY_ALL  # the empty text of the filter, when nothing is wrong
        self._refilter = False

    def on_mount(self) -> None:  # after Panel's (Textual calls each class's handler)
        # a loud row stays red under the cursor (the cursor keeps only its background)
        self.table.cursor_foreground_priority = "renderable"
        self._show_foot()

    def _show_foot(self) -> None:
        """The highlighted item's ID (the row shows its title) and each attempt's spend, the
        filter's key, and which ledger."""
        foot = f"{self.keys.get('work_filter', 'f')} filter"
        row = self.current if self.loaded else None
        if row is not None:
            spent = f" · spend {attempts_spend(row)}" if any(row.spent) else ""
            foot = f"{row.work_id}{spent} · {foot}"
        if self.ledger:
            foot += f" · ledger: {self.ledger}"
        if self.problem:
            foot += " · ⚠ " + (self.problem if len(self.problem) <= 60 else self.problem[:59] + "…")
        if self.border_subtitle != foot:  # setting it repaints the panel, even when equal
            self.border_subtitle = inert(foot)  # the ledger's URL is someone's text

    @on(PanelTable.RowHighlighted)
    def _highlighted(self) -> None:
        self._show_foot()  # not stopped: the app follows the selection too

    def show_view(self, view: HomeView, now: datetime) -> None:
        """The view's work under the filter; nothing is touched when that did not change."""
        if view.ledger and view.ledger != self.ledger:
            self.ledger = view.ledger
            self._show_foot()
        if view.work_problem != self.problem:
            self.problem = view.work_problem
            self._show_foot()
            self._set_empty()
            self._refilter = True  # the empty text changed even if the rows did not
        rows, matched = view.work_rows(self.state_filter)
        self.set_class(view.reconciling() > 0, "-reconciling")
        if self.loaded and not self._refilter and matched == self.matched and rows == self.rows():
            return
        refilter, self._refilter = self._refilter, False
        self.matched = matched
        self.show(rows, now, every_row=refilter)
        self._show_foot()

    def cycle_filter(self) -> str:
        """The next filter; the cursor goes back to the first row of the new list."""
        self.state_filter = _after(self.state_filter)
        self._refilter = True  # the title and the empty text change even if the rows do not
        self.table.picked = False
        if self.state_filter == "all":
            self._filter_empty = EMPTY_ALL
        else:
            self._filter_empty = EMPTY_FILTERED.format(
                what=FILTER_WORDS.get(self.state_filter, self.state_filter),
                next=_shown(_after(self.state_filter)),
                work_filter="{work_filter}",
            )
        self._set_empty()
        return self.state_filter

    def _set_empty(self) -> None:
        """The sentence in place of rows: what is wrong, if anything is, else the filter's
        (a problem's braces are doubled: the text is formatted with the keys)."""
        self.empty_text = (
            self.problem.replace("{", "{{").replace("}", "}}")
            if self.problem
            else self._filter_empty
        )

    def counter(self, rows: list) -> str:
        label = f"{self.title} · {FILTER_WORDS.get(self.state_filter, self.state_filter)}"
        if len(rows) < self.matched:
            return f"{label} {len(rows)} of {self.matched}"
        return f"{label} {len(rows)}" if rows else label

    def row_key(self, row: WorkRow) -> str:
        return row.work_id

    def row_cells(self, row: WorkRow, now: datetime, flex: int) -> tuple[Text, ...]:
        if row.reconciling:  # loud: the whole row in the error colour
            loud = f"bold {self.colour('error')}"
            return (
                plain(STATE_WORDS[RECONCILE], loud),
                plain(_title(row, flex), loud, flex),
                plain(row.crew or "—", loud),
                plain(str(row.generation), loud),
                plain(source_word(row), loud),
                plain(age(row.updated_at, now, self.ages), loud),
            )
        colour = self.colour(STATE_COLOURS.get(row.state, "foreground"))
        muted = self.colour("text-muted")
        return (
            plain(STATE_WORDS.get(row.state, row.state), f"bold {colour}"),
            plain(_title(row, flex), "", flex),
            plain(row.crew or "—", "bold"),
            plain(str(row.generation), muted),
            plain(source_word(row), muted),
            plain(age(row.updated_at, now, self.ages), muted),
        )


def attempts_spend(row: WorkRow) -> str:
    """Each attempt's spend (as the ledger records it; ``state.crew.spend.shown``) for the
    foot, the highlighted item's detail: ``g1 $0.0123 · g2 —``."""
    return " · ".join(f"g{n} {shown(f)}" for n, f in enumerate(row.spent, 1))


def _title(row: WorkRow, width: int) -> str:
    """What a person knows the item by (the feed's ``title``); its ID is in the foot."""
    return row.title or short_id(row.work_id, width)


def source_word(row: WorkRow) -> str:
    """A routine receipt says so: it is why Cancel and Replay are not offered on it."""
    return "routine" if row.routine else SOURCE_WORDS.get(row.source, row.source)


def short_id(work_id: str, width: int) -> str:
    """The whole ID when it fits; else its tail (the random part tells items apart)."""
    if len(work_id) <= width:
        return work_id
    return "…" + work_id[-(width - 1) :] if width > 1 else "…"


def _after(state: str) -> str:
    return WORK_FILTERS[(WORK_FILTERS.index(state) + 1) % len(WORK_FILTERS)]


def _shown(state: str) -> str:
    return "all work" if state == "all" else FILTER_WORDS.get(state, state)

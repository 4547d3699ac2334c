"""Modal forms for the work ledger: replay a finished item, resolve one needing reconciliation.

Like every form they write nothing: the app runs the use case with their values, and a
refusal (``evidence_required``, ``not_reconciling``, ``stale_generation``, ...) is shown
inside the form with its code, so what was typed is not lost.
"""

from __future__ import annotations

from typing import Any

from textual.app import ComposeResult
from textual.widgets import Checkbox, Input, Label, Select, Static, TextArea

from widgets.cells import one_line
from widgets.screens.forms import (
    FormError,
    FormScreen,
    _put_text,
    _put_value,
    _text_area,
)
from widgets.view import WorkRow

RESOLUTIONS = (
    ("succeeded — it did its work", "succeeded"),
    ("failed — it did not", "failed"),
    ("cancelled — its process is confirmed stopped", "cancelled"),
)


def _about(row: WorkRow) -> str:
    who = f"{row.crew}'s assignment" if row.crew else f"a {row.source} item"
    return f"{row.work_id} — {who}, generation {row.generation}"


class ReplayScreen(FormScreen):
    title_text = "Replay work"

    def about(self, row: WorkRow) -> None:
        self.row = row

    def fields(self) -> ComposeResult:
        yield Static(classes="context", id="context")
        yield Label("Reason (why it runs again; recorded on the new item)")
        yield _text_area("reason", classes="short")
        yield Label(id="revision-label")
        yield Input(id="target_revision", compact=True)

    def fill(self) -> None:
        self.show_text(
            "context",
            f"{_about(self.row)}, {self.row.state}.\nA replay is a new work "
            "item with the same input, authorized by you: it is queued for a "
            "worker to claim. The original's history is not touched.",
        )
        _put_text(self.query_one("#reason", TextArea), self.initial_text("reason"))
        inherited = self.row.target_revision or "none"
        self.show_text(
            "revision-label", f"Target revision (leave empty to keep the original's: {inherited})"
        )
        revision = self.query_one("#target_revision", Input)
        revision.placeholder = one_line(self.row.target_revision or "")
        _put_value(revision, self.initial_text("target_revision"))

    def values(self) -> dict[str, Any]:
        # the reason is not checked here: the ledger refuses an empty one with its own code
        revision = self.query_one("#target_revision", Input).value.strip()
        return {
            "reason": self.query_one("#reason", TextArea).text,
            "target_revision": revision or None,
        }


class ResolveScreen(FormScreen):
    title_text = "Resolve reconciliation"
    AUTO_FOCUS = "#fields Select"

    def about(self, row: WorkRow) -> None:
        self.row = row

    def fields(self) -> ComposeResult:
        yield Static(classes="context", id="context")
        yield Static(classes="quote", id="quote")
        yield Label("It became")
        yield Select(
            RESOLUTIONS, prompt="choose what it became", allow_blank=True, id="to", compact=True
        )
        yield Label("Reason (what you checked and what you found)")
        yield _text_area("reason", classes="short")
        yield Checkbox(
            "Runtime stopped — I attest its process is no longer running",
            id="runtime_stopped",
            compact=True,
        )

    def fill(self) -> None:
        why = self.row.why or "its outcome could not be verified"
        pane = f"pane {self.row.pane}" if self.row.pane else "no pane on record"
        self.show_text(
            "context",
            f"{_about(self.row)}, {pane}.\nIt needs reconciliation: {why}.\n"
            "Check whether its process is still running and what it did, then "
            "record what you found. This frees its slot and starts nothing.",
        )
        self.show_text(
            "quote",
            f"Generation {self.row.generation}: refused if the item has moved on since you looked.",
        )
        to = self.query_one("#to", Select)
        to.expanded = False
        to.value = self.initial.get("to", Select.NULL)
        _put_text(self.query_one("#reason", TextArea), self.initial_text("reason"))
        self.query_one("#runtime_stopped", Checkbox).value = self.initial.get(
            "runtime_stopped", False
        )

    def draft(self) -> dict[str, Any]:
        out = super().draft()
        out["to"] = self.query_one("#to", Select).value
        out["runtime_stopped"] = self.query_one("#runtime_stopped", Checkbox).value
        return out

    def values(self) -> dict[str, Any]:
        to = self.query_one("#to", Select).value
        if to == Select.NULL:
            raise FormError("Choose what it became: succeeded, failed or cancelled.")
        return {
            "generation": self.row.generation,
            "to": to,
            "reason": self.query_one("#reason", TextArea).text,
            "runtime_stopped": self.query_one("#runtime_stopped", Checkbox).value,
        }

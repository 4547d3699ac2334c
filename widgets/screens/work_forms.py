"""Modal forms for the work ledger: replay a finished item, resolve one needing reconciliation.

Like every form they write nothing: the app runs the use case with their values, and a
refusal (``evidence_required``, ``not_reconciling``, ``stale_generation``, ...) is shown
inside the form with its code, so what was typed is not lost.
"""

from __future__ import annotations

from typing import Any

from textual.app import ComposeResult
from textual.widgets import Checkbox, Input, Label, Select, Static, TextArea

from widgets.cells import inert, one_line
from widgets.screens.forms import FormError, FormScreen, _text_area
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

    def __init__(self, row: WorkRow, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.row = row

    def fields(self) -> ComposeResult:
        yield Static(
            inert(
                f"{_about(self.row)}, {self.row.state}.\nA replay is a new work "
                "item with the same input, authorized by you: it is queued for a "
                "worker to claim. The original's history is not touched."
            ),
            classes="context",
        )
        yield Label("Reason (why it runs again; recorded on the new item)")
        yield _text_area("reason", self.initial_text("reason"), classes="short")
        inherited = self.row.target_revision or "none"
        yield Label(inert(f"Target revision (leave empty to keep the original's: {inherited})"))
        yield Input(
            self.initial_text("target_revision"),
            id="target_revision",
            compact=True,
            placeholder=one_line(self.row.target_revision or ""),
        )

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

    def __init__(self, row: WorkRow, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.row = row

    def fields(self) -> ComposeResult:
        why = self.row.why or "its outcome could not be verified"
        pane = f"pane {self.row.pane}" if self.row.pane else "no pane on record"
        yield Static(
            inert(
                f"{_about(self.row)}, {pane}.\nIt needs reconciliation: {why}.\n"
                "Check whether its process is still running and what it did, then "
                "record what you found. This frees its slot and starts nothing."
            ),
            classes="context",
        )
        yield Static(
            inert(
                f"Generation {self.row.generation}: refused if the item has moved "
                "on since you looked."
            ),
            classes="quote",
        )
        yield Label("It became")
        yield Select(
            RESOLUTIONS,
            prompt="choose what it became",
            allow_blank=True,
            value=self.initial.get("to", Select.NULL),
            id="to",
            compact=True,
        )
        yield Label("Reason (what you checked and what you found)")
        yield _text_area("reason", self.initial_text("reason"), classes="short")
        yield Checkbox(
            "Runtime stopped — I attest its process is no longer running",
            self.initial.get("runtime_stopped", False),
            id="runtime_stopped",
            compact=True,
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

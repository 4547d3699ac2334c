"""The Doorbells panel: mail that is queued but could not be rung in yet, and why."""

from __future__ import annotations

from datetime import datetime

from rich.text import Text

from widgets.cells import age, plain
from widgets.panels.base import Column, Panel
from widgets.view import DoorbellRow

# What each gate means, in the words a person needs (README's gate table).
GATE_WORDS = {
    "human_draft": "someone is typing in its composer",
    "approval_prompt": "an approval prompt is up",
    "not_quiescent": "it is busy",
    "unreadable_composer": "its input line is not readable",
    "launch_grace": "it is still starting",
    "cooldown": "it was rung moments ago",
    "tmux_unavailable": "tmux does not answer",
}


class DoorbellsPanel(Panel):
    title = "Doorbells"
    columns = (
        Column("crew", "Crew", 12),
        Column("gate", "Held by"),
        Column("for", "For", 5),
    )
    empty_text = "No doorbell is held: all mail has been rung in."

    def row_key(self, row: DoorbellRow) -> str:
        return row.key

    def row_cells(self, row: DoorbellRow, now: datetime, flex: int) -> tuple[Text, ...]:
        words = GATE_WORDS.get(row.gate, row.gate)
        return (
            plain(row.crew, "bold"),
            plain(words, self.colour("warning"), limit=flex),
            plain(age(row.held_since, now, self.ages)),
        )

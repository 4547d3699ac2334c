"""The Crew panel: one row per crew."""

from __future__ import annotations

from datetime import datetime

from rich.text import Text

from state.crew.spend import shown
from state.vocab import dialog_title
from widgets.cells import age, plain
from widgets.panels.base import Column, Panel
from widgets.view import CrewRow

# crew state -> theme colour variable
STATE_COLOURS = {
    "assigned": "foreground",
    "asked": "warning",
    "approval": "error",
    "held": "warning",
    "done": "success",
    "died": "error",
    "blocked": "error",
}


class CrewPanel(Panel):
    title = "Crew"
    columns = (
        Column("name", "Name", 12),
        Column("agent", "Agent", 7),
        Column("state", "State", 9),
        Column("task", "Assignment"),
        Column("unread", "Mail", 4),
        Column("activity", "Active", 6),
        Column("gate", "Doorbell", 18),
        Column("spend", "Spend", 8),
    )
    empty_text = "No crew yet — press {recruit} to recruit one."

    def row_key(self, row: CrewRow) -> str:
        return row.key

    def row_cells(self, row: CrewRow, now: datetime, flex: int) -> tuple[Text, ...]:
        state = plain(row.state, f"bold {self.colour(STATE_COLOURS.get(row.state, 'foreground'))}")
        mail = plain(
            str(row.unread) if row.unread else "·",
            f"bold {self.colour('accent')}" if row.unread else self.colour("text-muted"),
        )
        gate = (
            # blocked: the doorbell column names the dialog (the state says "blocked")
            plain(dialog_title(row.dialog), f"bold {self.colour('error')}")
            if row.state == "blocked" and row.dialog
            else plain(f"held: {row.gate}", self.colour("warning"))
            if row.gate
            else plain("clear" if row.pane else "no pane", self.colour("text-muted"))
        )
        return (
            plain(row.name, "bold"),
            plain(row.agent, self.colour("text-muted")),
            state,
            plain(row.task, limit=flex),
            mail,
            plain(age(row.last_activity, now), self.colour("text-muted")),
            gate,
            # this assignment's, measured from the agent's own records (state.crew.spend)
            plain(shown(row.spend), self.colour("text-muted")),
        )

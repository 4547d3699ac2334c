"""The Crew panel: one row per crew."""

from __future__ import annotations

from datetime import datetime

from rich.text import Text

from state.crew.budget import HELD, UNPRICED, WARN, standing
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
        # "$12.34", "$0.0042", "? 1.2M tok" (no price); with a budget "$4.10/$5"
        Column("spend", "Spend", 13),
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
            plain(age(row.last_activity, now, self.ages), self.colour("text-muted")),
            gate,
            self._spend(row),
        )

    def _spend(self, row: CrewRow) -> Text:
        """This assignment's spend, measured from the agent's own records
        (state.crew.spend), and its budget when it has one: amber from 80 %, red once
        reached (tool calls refused), amber with "?" when it cannot be enforced."""
        text = shown(row.spend)
        budget = row.budget_usd
        if budget is None:
            return plain(text, self.colour("text-muted"))
        cost = row.spend.cost_usd if row.spend is not None and row.spend.turns else 0.0
        kind = standing(cost, budget)
        colour = {HELD: "error", WARN: "warning", UNPRICED: "warning"}.get(kind or "", "")
        cap = f"{budget / 1000:.0f}k" if budget >= 1000 else f"{budget:.2f}".rstrip("0").rstrip(".")
        return plain(f"{text}/${cap}", self.colour(colour) if colour else "")

"""The Notifications panel: what crews reported and you have not acknowledged, newest first."""

from __future__ import annotations

from datetime import datetime

from rich.text import Text

from widgets.cells import age, plain
from widgets.panels.base import Column, Panel
from widgets.view import NotificationRow

# notification status -> theme colour variable
STATUS_COLOURS = {
    "asked": "warning",
    "awaiting_approval": "error",
    "blocked": "error",
    "bounced": "error",
    "error": "error",
    "held": "warning",
    "done": "success",
    "idle": "text-muted",
    "working": "accent",
}

STATUS_WORDS = {"awaiting_approval": "approval"}  # the only status wider than its column


class NotificationsPanel(Panel):
    title = "Notifications"
    columns = (
        Column("age", "Age", 5),
        Column("crew", "Crew", 12),
        Column("status", "Status", 9),
        Column("summary", "Summary"),
    )
    empty_text = "Nothing to acknowledge."

    def row_key(self, row: NotificationRow) -> str:
        return row.delivery_id

    def row_cells(self, row: NotificationRow, now: datetime, flex: int) -> tuple[Text, ...]:
        colour = self.colour(STATUS_COLOURS.get(row.status, "foreground"))
        return (
            plain(age(row.created_at, now, self.ages)),
            plain(row.crew, "bold"),
            plain(STATUS_WORDS.get(row.status, row.status), f"bold {colour}"),
            plain(row.summary, limit=flex),
        )

"""The Questions panel: pending questions, the one that has waited longest first."""

from __future__ import annotations

from datetime import datetime

from rich.text import Text

from widgets.cells import age, plain
from widgets.panels.base import Column, Panel
from widgets.view import QuestionRow


class QuestionsPanel(Panel):
    title = "Questions"
    columns = (
        Column("crew", "Crew", 12),
        Column("age", "Waiting", 7),
        Column("text", "Question"),
    )
    empty_text = "No questions waiting. When a crew asks, press {answer} to answer."

    def row_key(self, row: QuestionRow) -> str:
        return row.question_id

    def row_cells(self, row: QuestionRow, now: datetime, flex: int) -> tuple[Text, ...]:
        return (
            plain(row.crew, f"bold {self.colour('warning')}"),
            plain(age(row.asked_at, now, self.ages)),
            plain(row.text, limit=flex),
        )

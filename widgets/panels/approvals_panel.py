"""The Approvals panel: requests crews' agents hold open for the captain, oldest first
(docs/approvals.md). Each row is the crew, how long it has waited, and the tool with a
bounded, escaped excerpt of what it would run; the whole request is in the preview."""

from __future__ import annotations

from datetime import datetime

from rich.text import Text

from widgets.cells import age, inert, plain
from widgets.panels.base import Column, Panel
from widgets.view import ApprovalRow


class ApprovalsPanel(Panel):
    title = "Approvals"
    columns = (
        Column("crew", "Crew", 12),
        Column("age", "Waiting", 7),
        Column("text", "Asks to run"),
    )
    empty_text = (
        "No approval requests. When a crew's agent asks permission, press {allow} to "
        "allow, {allow_session} for its session, {deny} to deny with a reason."
    )

    def on_mount(self) -> None:
        super().on_mount()
        # the footer has room for y and N only: every answer's key is said where it applies
        if {"allow", "allow_session", "deny"} <= self.keys.keys():
            self.border_subtitle = inert(
                "{allow} allow · {allow_session} session · {deny} deny".format_map(self.keys)
            )

    def row_key(self, row: ApprovalRow) -> str:
        return row.request_id

    def row_cells(self, row: ApprovalRow, now: datetime, flex: int) -> tuple[Text, ...]:
        decided = f" (decided: {row.decided})" if row.decided else ""
        return (
            plain(row.crew, f"bold {self.colour('warning')}"),
            plain(age(row.created_at, now, self.ages)),
            plain(f"{row.tool}: {row.excerpt}{decided}", limit=flex),
        )

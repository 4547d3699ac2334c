"""Alerts: what needs the captain now (a question, an approval, a bounce, ...), seen for the
first time since start-up. The feed raises them; the app turns them into a toast, the bell
and a desktop notification, each as the person's settings say."""

from __future__ import annotations

from dataclasses import dataclass

from state.models import Notification


@dataclass(frozen=True)
class Alert:
    """Something that needs the captain now, seen for the first time since start-up."""

    kind: str  # asked | awaiting_approval | bounced | quarantine | needs_reconciliation
    title: str
    body: str


def alert_for(n: Notification) -> Alert:
    title = {"asked": f"{n.crew} asks", "awaiting_approval": f"{n.crew} needs approval",
             "bounced": f"Mail to {n.crew} bounced"}[n.status]
    return Alert(n.status, title, n.summary)

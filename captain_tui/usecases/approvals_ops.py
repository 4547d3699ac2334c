"""Approvals: list the requests agents' hooks hold open, and decide one (captain only).

The rules (a request decided once, in time, by its own ID and crew; late decisions
recorded and inert) are ``state.crew.approvals``'s; this adds the role check.
"""

from __future__ import annotations

from state.crew import approvals
from state.crew.guards import CAPTAIN, Context, check_captain
from state.home import Home
from state.inputs import check_text


def pending(home: Home, name: str | None = None, *, ctx: Context = CAPTAIN) -> list:
    """Open requests, oldest first (``approvals.Open``)."""
    check_captain(ctx, "approvals")
    return approvals.open_requests(home, name)


def approve(
    home: Home,
    name: str,
    request_id: str,
    decision: str,
    reason: str = "",
    *,
    ctx: Context = CAPTAIN,
):
    """Decide one request of crew ``name``; a crew process never decides one."""
    check_captain(ctx, "approve")
    check_text(reason, "reason", required=False, limit=approvals.REASON_MAX)
    return approvals.decide(home, name, request_id, decision, reason, actor="captain")

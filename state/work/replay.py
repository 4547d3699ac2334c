"""Replay: a finished work item run again, as a new authorization.

A replay is a new item (``replay_of`` names the original) carrying the original's input and,
unless another is named, its target revision. It sits apart from ``ledger`` because a
webhook item's replay asks ``deliveries`` whether the raw body is still retained, and
``deliveries`` itself records through ``ledger``.
"""

from __future__ import annotations

from datetime import datetime

from state.errors import CaptainError
from state.home import Home
from state.work import deliveries, ledger
from state.work.models import TERMINAL, WorkItem


def check_replay(home: Home, item: WorkItem) -> None:
    """Refusals shared by the CLI and the HTTP door: live originals, expired payloads."""
    if item.state not in TERMINAL:
        raise CaptainError(
            "not_finished",
            f"{item.work_id} is {item.state}; replaying live work would start a second run of "
            "the same input. Cancel it first.", state=item.state)
    if item.source == "webhook" and item.delivery_id:
        record = deliveries.get(home, item.delivery_id)
        if not deliveries.raw_body_available(home, record):
            raise CaptainError(
                "payload_expired",
                f"the raw body of delivery {record.delivery_id} expired at "
                f"{record.raw_body_expires_at.isoformat()}; the delivery is still on record but "
                "cannot be replayed. Ask the sender to deliver it again.",
                raw_body_expires_at=record.raw_body_expires_at.isoformat())


def replay(home: Home, work_id: str, *, actor: str, reason: str,
           target_revision: str | None = None, at: datetime | None = None) -> WorkItem:
    """A new authorization: a new item with ``replay_of``, the replayer's identity, the
    original input and (unless named) the original target revision.

    The new item belongs to no crew assignment: a worker claims it (``captain work
    claim``); to give a crew the same task again, assign it."""
    if not reason or not reason.strip():
        raise CaptainError("evidence_required",
                           "a replay needs a reason (--reason): why run it again.")
    original = ledger.get(home, ledger.check_work_id(work_id))
    check_replay(home, original)
    return ledger.accept(home, source=original.source, input=ledger.input_of(home, work_id),
                         requester=actor, replay_of=work_id, reason=reason,
                         target_revision=target_revision if target_revision is not None
                         else original.target_revision, delivery_id=original.delivery_id,
                         max_attempts=original.max_attempts, at=at)

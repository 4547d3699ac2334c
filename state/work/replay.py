"""Replay: a finished work item run again, as a new authorization.

A replay is a new item (``replay_of`` names the original) carrying the original's input and,
unless another is named, its target revision. It sits apart from ``ledger`` because a
webhook item's replay asks ``controls`` (and so ``deliveries``) whether it is offered —
a routine receipt is not, an expired raw body is not — and ``deliveries`` itself records
through ``ledger``.
"""

from __future__ import annotations

from datetime import datetime

from state.errors import CaptainError
from state.home import Home
from state.work import controls, ledger
from state.work.ledger_records import WorkItem


def check_replay(home: Home, item: WorkItem) -> None:
    """Refusals shared by the CLI, the cockpit and the HTTP door (``controls``): routine
    receipts, live originals, expired payloads."""
    controls.check(home, "replay", item)


def replay(
    home: Home,
    work_id: str,
    *,
    actor: str,
    reason: str,
    target_revision: str | None = None,
    at: datetime | None = None,
) -> WorkItem:
    """A new authorization: a new item with ``replay_of``, the replayer's identity, the
    original input and (unless named) the original target revision.

    The new item belongs to no crew assignment: a worker claims it (``captain work
    claim``); to give a crew the same task again, assign it."""
    if not reason or not reason.strip():
        raise CaptainError(
            "evidence_required", "a replay needs a reason (--reason): why run it again."
        )
    original = ledger.get(home, ledger.check_work_id(work_id))
    check_replay(home, original)
    accepted = ledger.input_of(home, work_id, original.input_sha256)
    return ledger.accept(
        home,
        source=original.source,
        input=accepted,
        requester=actor,
        replay_of=work_id,
        reason=reason,
        target_revision=target_revision
        if target_revision is not None
        else original.target_revision,
        delivery_id=original.delivery_id,
        max_attempts=original.max_attempts,
        at=at,
    )

"""What an event means: the legal transitions and the fold, and what a work ID is.

The one place that says it, above the storage interface (``state.work.backend``): the ledger
checks every event with ``fold`` before a backend stores it, and the file backend folds
with it to rebuild a cache it finds behind. ``state.work.ledger`` re-exports all three.
"""

from __future__ import annotations

from typing import Any

from state.errors import CaptainError
from state.work.ledger_records import (
    NOTES,
    TERMINAL,
    Attempt,
    Landing,
    Resolution,
    WorkEvent,
    WorkItem,
)
from state.work.paging import check_work_id as check_work_id

# event type -> states it may follow (None: the first event)
_FROM: dict[str, set[str | None]] = {
    "accepted": {None},
    "claimed": {"queued"},
    "succeeded": {"running", "needs_reconciliation"},
    "failed": {"running", "needs_reconciliation"},
    "retry_queued": {"running"},
    "cancel_requested": {"running", "needs_reconciliation"},
    "cancelled": {"queued", "running", "needs_reconciliation"},
    "needs_reconciliation": {"running"},
    "resolved": {"needs_reconciliation"},
    "landed": {"succeeded"},  # once: a second is refused by ledger.landed and by fold
}


def legal(state: str | None, event: WorkEvent) -> bool:
    if event.type in NOTES:  # a note on any item, in any state; it changes none
        return state is not None and event.state == state
    if state not in _FROM[event.type]:
        return False
    if event.type == "resolved":
        return event.state in TERMINAL
    if event.type == "landed":
        return event.state == state and event.landed_commit is not None
    if event.type in ("succeeded", "failed", "cancelled"):
        return event.state == event.type
    expected = {
        "accepted": "queued",
        "claimed": "running",
        "retry_queued": "queued",
        "needs_reconciliation": "needs_reconciliation",
    }
    return (
        event.type == "cancel_requested"
        and event.state == state
        or expected.get(event.type) == event.state
    )


SPEND_FIELDS = (
    "cost_usd",
    "input_tokens",
    "output_tokens",
    "cache_read_tokens",
    "cache_write_tokens",
    "turns",
)


def spend_fields(event: WorkEvent) -> dict[str, Any]:
    """What a ``spend`` event says of its attempt (its cost None when unpriced)."""
    return {name: getattr(event, name) for name in SPEND_FIELDS}


def fold(item: WorkItem | None, event: WorkEvent, work_id: str) -> WorkItem:
    if not legal(item.state if item else None, event) or (
        event.type == "landed" and item is not None and item.landing is not None
    ):
        raise CaptainError(
            "store_error",
            f"{work_id}: event {event.seq} ({event.type}) is not "
            f"legal after {item.state if item else 'nothing'}",
        )
    if event.type == "accepted":
        return WorkItem(
            work_id=work_id,
            seq=event.seq,
            source=event.source,
            state="queued",
            generation=0,
            target_revision=event.target_revision,
            input_sha256=event.input_sha256,
            replay_of=event.replay_of,
            replay_reason=event.reason,
            requester=event.requester,
            crew=event.crew,
            assignment_id=event.assignment_id,
            delivery_id=event.delivery_id,
            max_attempts=event.max_attempts or 1,
            created_at=event.at,
            updated_at=event.at,
        )
    assert item is not None  # legal(): only "accepted" starts an item
    if event.type == "spend":  # the attempt at its generation: what it has spent so far
        return item.model_copy(
            update=dict(
                seq=event.seq,
                attempts=[
                    a.model_copy(update=spend_fields(event))
                    if a.generation == event.generation
                    else a
                    for a in item.attempts
                ],
            )
        )
    if event.type in NOTES:
        return item.model_copy(update=dict(seq=event.seq))
    changes: dict[str, Any] = dict(seq=event.seq, state=event.state, updated_at=event.at)
    if event.type == "landed":  # the attempt ended with its succeeded event
        changes["landing"] = Landing(
            commit=event.landed_commit,
            base_branch=event.base_branch or "",
            operator=event.actor,
            at=event.at,
            crew_commit=event.crew_commit,
            outside_grant=list(event.outside_grant or []),
            reason=event.reason,
        )
        return item.model_copy(update=changes)
    attempts = list(item.attempts)
    if event.type == "claimed":
        changes["generation"] = event.generation
        attempts.append(
            Attempt(
                run_id=event.run_id,
                generation=event.generation,
                started_at=event.at,
                lease_holder=event.lease_holder,
                lease_expires_at=event.lease_expires_at,
                runtime_locator=event.runtime_locator,
            )
        )
    elif event.type == "cancel_requested":
        changes["cancel_requested"] = [*item.cancel_requested, event.generation]
    elif attempts and attempts[-1].ended_at is None and event.type != "needs_reconciliation":
        outcome = event.state if event.type != "retry_queued" else "failed"
        cost = event.cost_usd if event.cost_usd is not None else attempts[-1].cost_usd
        attempts[-1] = attempts[-1].model_copy(
            update=dict(ended_at=event.at, outcome=outcome, cost_usd=cost)
        )
    if event.type == "resolved":
        changes["resolution"] = Resolution(
            operator=event.actor,
            reason=event.reason or "",
            to=event.state,
            runtime_stopped=bool(event.runtime_stopped),
            at=event.at,
        )
    changes["attempts"] = attempts
    return item.model_copy(update=changes)

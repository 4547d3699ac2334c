"""Which controls a work item offers a person, decided once: cancel and replay.

Every surface asks here. The CLI and the HTTP API go through ``usecases``, which refuses
with the answer before anything is written; the cockpit's feed reads ``facts`` in its own
thread and the UI thread asks ``refusal`` with them, so a key is dimmed (and the palette
says why) with the very sentence the CLI would refuse with, without touching the disk.

- A **routine receipt** (a delivery recorded on a ``routine = true`` endpoint) offers
  neither: whatever runs that endpoint's deliveries owns their execution, so captain does
  not stop or rerun it (``routine_receipt``, 409). Resolving one that needs reconciliation
  stays open: that is a person's record of what happened, not an execution.
- **Replay** needs a finished item (``not_finished``) and, for a webhook item, the
  delivery's raw body still held (``payload_expired``, naming the expiry): the seed's
  "check ``raw_body_available`` before offering a replay control".

Cancelling finished work is not refused here: it answers ``already_terminal``.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from state.errors import CaptainError
from state.home import Home
from state.work import deliveries
from state.work.ledger_records import TERMINAL, WorkItem

ACTIONS = ("cancel", "replay")


@dataclass(frozen=True)
class Facts:
    """What the decision needs about one item: plain data, read once from the home."""

    work_id: str
    state: str
    source: str
    delivery_id: str | None = None
    endpoint_id: str | None = None
    routine: bool = False
    raw_body_expires_at: datetime | None = None
    raw_body_held: bool = False  # the body's file was there when these facts were read


def facts(home: Home, item: WorkItem) -> Facts:
    """The item's facts; a webhook item's come from its delivery record (and whether its
    body's file is still there)."""
    if item.source != "webhook" or not item.delivery_id:
        return Facts(item.work_id, item.state, item.source)
    record = deliveries.get(home, item.delivery_id)
    return Facts(
        item.work_id,
        item.state,
        item.source,
        record.delivery_id,
        record.endpoint_id,
        record.routine,
        record.raw_body_expires_at,
        deliveries.body_held(home, record),
    )


def refusal(action: str, f: Facts, at: datetime | None = None) -> CaptainError | None:
    """Why ``action`` is not offered on this item (None: it is). ``at`` is the clock a
    body's expiry is judged by (default: now)."""
    assert action in ACTIONS, action
    if f.routine:
        return CaptainError(
            "routine_receipt",
            f"{f.work_id} is a routine receipt (delivery {f.delivery_id}, received while "
            f"endpoint {f.endpoint_id} was routine): whatever runs that endpoint's "
            f"deliveries owns their execution, so captain does not {action} it. Stop or "
            "rerun it there; if it needs reconciliation, resolve it.",
            delivery_id=f.delivery_id,
            endpoint_id=f.endpoint_id,
        )
    if action == "replay":
        if f.state not in TERMINAL:
            return CaptainError(
                "not_finished",
                f"{f.work_id} is {f.state}; replaying live work would start a second run of "
                "the same input. Cancel it first.",
                state=f.state,
            )
        if (
            f.source == "webhook"
            and f.delivery_id
            and f.raw_body_expires_at is not None
            and not deliveries.available(f.raw_body_expires_at, f.raw_body_held, at)
        ):
            return CaptainError(
                "payload_expired",
                f"the raw body of delivery {f.delivery_id} expired at "
                f"{f.raw_body_expires_at.isoformat()}; the delivery is still on record but "
                "cannot be replayed. Ask the sender to deliver it again.",
                raw_body_expires_at=f.raw_body_expires_at.isoformat(),
            )
    return None


def check(home: Home, action: str, item: WorkItem) -> None:
    """Refuse ``action`` on ``item`` unless it is offered (before anything is written)."""
    err = refusal(action, facts(home, item))
    if err is not None:
        raise err

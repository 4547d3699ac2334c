"""The work ledger's records (docs/ledger.md): work items, their events, leases, deliveries.

A work item is event-sourced like a crew: ``work/<id>/events/*`` is the truth,
``work/<id>/item.json`` a cache folded from it. The lease is a separate mutable snapshot
(heartbeats would otherwise grow the history forever); it never changes the item's state.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime
from typing import Literal, get_args

from pydantic import Field

from state.records import PaneLocator, Record, Strict

# An item's states and sources are in state.vocab: a listing checks its filters without
# pydantic (state.work.paging). Re-exported here, where the other vocabularies are.
from state.vocab import HOLDS_SLOT as HOLDS_SLOT
from state.vocab import SOURCES as SOURCES
from state.vocab import WORK_STATES as WORK_STATES
from state.vocab import Source as Source
from state.vocab import WorkState as WorkState

# Each vocabulary is written once, as a Literal: the checker holds every use to it, the API
# schema (captain_tui.api.schemas) serves it, and the tuples the refusals list come from it.
Terminal = Literal["succeeded", "failed", "cancelled"]  # what resolve may settle an item as
TERMINAL: frozenset[str] = frozenset(get_args(Terminal))
EventType = Literal[
    "accepted",
    "claimed",
    "succeeded",
    "failed",
    "retry_queued",
    "cancel_requested",
    "cancelled",
    "needs_reconciliation",
    "resolved",
    "landed",
    "approval_requested",
    "approval_decided",
    "spend",
]
EVENT_TYPES: tuple[EventType, ...] = get_args(EventType)
# events that record something about the item without changing its state (state/crew/approvals.py)
# and what an attempt has spent so far (``spend``: state/work/spent.py)
NOTES = frozenset({"approval_requested", "approval_decided", "spend"})
CancelOutcome = Literal["cancelled", "already_terminal", "stop_unconfirmed"]
CANCEL_OUTCOMES: tuple[CancelOutcome, ...] = get_args(CancelOutcome)


class WorkEvent(Record):
    """One transition. ``detail`` is stored and never printed or served."""

    seq: int = Field(ge=1)
    at: datetime
    type: EventType
    generation: int = Field(ge=0)
    actor: str
    state: WorkState  # the item's state after this event
    detail: str | None = None
    # accepted
    source: Source | None = None
    requester: str | None = None
    target_revision: str | None = None
    input_sha256: str | None = None
    replay_of: str | None = None
    reason: str | None = None  # replay, cancel and resolve reasons
    crew: str | None = None
    assignment_id: str | None = None
    delivery_id: str | None = None
    max_attempts: int | None = Field(default=None, ge=1)
    # claimed
    run_id: str | None = None
    lease_holder: str | None = None
    lease_expires_at: datetime | None = None
    runtime_locator: PaneLocator | None = None
    # reports; spend (what the attempt at ``generation`` has spent so far, measured from
    # the agent's own records: state/crew/spend.py)
    cost_usd: float | None = Field(default=None, ge=0)
    input_tokens: int | None = Field(default=None, ge=0)
    output_tokens: int | None = Field(default=None, ge=0)
    cache_read_tokens: int | None = Field(default=None, ge=0)
    cache_write_tokens: int | None = Field(default=None, ge=0)
    turns: int | None = Field(default=None, ge=0)
    # resolved
    runtime_stopped: bool | None = None
    # landed (captain land: the assignment's branch moved onto its base branch; the item
    # stays succeeded). ``reason`` is the --allow-outside reason, ``actor`` who landed it.
    landed_commit: str | None = None
    base_branch: str | None = None
    crew_commit: str | None = None  # the crew's uncommitted files, committed by land
    outside_grant: list[str] | None = None  # paths landed outside the grant (allowed)
    # approval_requested / approval_decided: never the command, only its fingerprint and a
    # bounded, escaped excerpt
    request_id: str | None = Field(default=None, max_length=64)
    tool: str | None = Field(default=None, max_length=64)
    excerpt: str | None = Field(default=None, max_length=201)
    fingerprint: str | None = Field(default=None, max_length=64)
    decision: (
        Literal["allow", "allow_session", "deny", "expired", "answered_in_pane", "late"] | None
    ) = None


class Attempt(Strict):
    run_id: str
    generation: int
    started_at: datetime
    lease_holder: str
    lease_expires_at: datetime
    heartbeat_at: datetime | None = None
    runtime_locator: PaneLocator | None = None
    cost_usd: float | None = None  # None: unknown, never an invented zero
    # tokens the attempt's agent reported (None: nothing measured); input_tokens is input
    # at the full price, cache reads and writes apart (docs/ledger.md "Spend")
    input_tokens: int | None = None
    output_tokens: int | None = None
    cache_read_tokens: int | None = None
    cache_write_tokens: int | None = None
    turns: int | None = None
    ended_at: datetime | None = None
    outcome: str | None = None


class Resolution(Strict):
    operator: str
    reason: str
    to: WorkState
    runtime_stopped: bool
    at: datetime


class Landing(Strict):
    """Where an assignment's work landed (``captain land``): the base branch's new commit."""

    commit: str
    base_branch: str
    operator: str
    at: datetime
    crew_commit: str | None = None
    outside_grant: list[str] = []
    reason: str | None = None


class WorkItem(Record):
    """A cache folded from ``work/<id>/events``; rebuilt whenever it is behind."""

    work_id: str
    seq: int
    source: Source
    state: WorkState
    generation: int
    target_revision: str | None
    input_sha256: str
    replay_of: str | None = None
    replay_reason: str | None = None
    requester: str
    crew: str | None = None
    assignment_id: str | None = None
    delivery_id: str | None = None
    max_attempts: int = 1
    created_at: datetime
    updated_at: datetime
    attempts: list[Attempt] = []
    cancel_requested: list[int] = []  # generations a cancel was recorded for
    resolution: Resolution | None = None
    landing: Landing | None = None  # set once by its ``landed`` event


class Lease(Record):
    """``work/<id>/lease.json``: the live lease of the current attempt (mutable)."""

    work_id: str
    run_id: str
    generation: int
    holder: str
    expires_at: datetime
    heartbeat_at: datetime


class Delivery(Record):
    """One inbound webhook delivery, recorded before anything is dispatched."""

    delivery_id: str
    endpoint_id: str
    source_delivery_id: str
    event: str | None
    received_at: datetime
    body_sha256: str
    body_bytes: int
    raw_body_expires_at: datetime
    filter_reason: str | None  # why no work was created; None when it was
    work_id: str | None
    # received on a ``routine = true`` endpoint: its work item offers no cancel or replay
    # (state/work/controls.py); fixed when recorded, whatever config.toml says later
    routine: bool = False


@dataclass(frozen=True)
class AtOnce:
    """What a backend's claim or report in one statement decided (``claim_at_once``,
    ``report_at_once``): written (``item`` and ``event`` set; ``outcome`` is the event's
    type), or refused (``outcome`` is the refusal's code, with the facts its sentence
    names), in which case nothing was written."""

    outcome: str
    item: WorkItem | None = None
    event: WorkEvent | None = None
    work_id: str | None = None
    state: str | None = None
    crew: str | None = None
    generation: int | None = None


BeforeCommit = Callable[[AtOnce], None]  # the crash tests' hook: the writes made, not committed

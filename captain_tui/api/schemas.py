"""What the HTTP API answers, as response models: only declared fields ever leave.

The ledger's ``public()`` views are validated through these, so a field added to a record
is not served until it is declared here, and the OpenAPI document is the contract
schemathesis checks every response against. No model here has a place for input text,
transition detail, raw bodies, credentials or model output.
"""

from __future__ import annotations

from datetime import datetime
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

# the ledger's vocabularies, served as they are defined (state.work.ledger_records): one definition
from state.work.ledger_records import CancelOutcome, EventType, Source, Terminal
from state.work.ledger_records import WorkState as State
from state.work.tokens import Role


class _In(BaseModel):
    model_config = ConfigDict(extra="forbid")  # an unrecognised field is a 400, not ignored


class CancelBody(_In):
    reason: str | None = Field(default=None, max_length=2000)


class ReplayBody(_In):
    reason: str = Field(min_length=1, max_length=2000)
    target_revision: str | None = Field(default=None, max_length=200)


class ResolveBody(_In):
    # strict: a generation is a JSON integer (not true, "1" or 1.0), and the attestation a
    # JSON boolean (not "yes")
    generation: int = Field(ge=0, le=2**31 - 1, strict=True)
    to: Terminal
    reason: str | None = Field(default=None, max_length=2000)
    runtime_stopped: bool = Field(default=False, strict=True)


class ErrorBody(BaseModel):
    code: str
    message: str


class ErrorOut(BaseModel):
    error: ErrorBody


class Workspace(BaseModel):
    workspace_id: str
    role: Role


class Workspaces(BaseModel):
    workspaces: list[Workspace]


class Locator(BaseModel):
    socket: str
    session: str
    window_id: str
    pane_id: str
    pane_pid: int | None = None


class Resolution(BaseModel):
    operator: str
    reason: str
    to: State
    runtime_stopped: bool
    at: datetime


class Landing(BaseModel):
    """Where an assignment's work landed (``captain land``, docs/landing.md)."""

    commit: str
    base_branch: str
    operator: str
    at: datetime
    crew_commit: str | None
    outside_grant: list[str]
    reason: str | None


class WorkItem(BaseModel):
    work_id: str
    source: Source
    state: State
    generation: int
    target_revision: str | None
    input_sha256: str
    replay_of: str | None
    replay_reason: str | None
    requester: str
    crew: str | None
    assignment_id: str | None
    delivery_id: str | None
    max_attempts: int
    created_at: datetime
    updated_at: datetime
    resolution: Resolution | None
    landing: Landing | None = None  # once its work landed on its base branch
    slot: bool  # holds a ledger slot (running or needs_reconciliation)


class Attempt(BaseModel):
    run_id: str
    generation: int
    started_at: datetime
    lease_holder: str
    lease_expires_at: datetime
    heartbeat_at: datetime | None
    runtime_locator: Locator | None
    # what the attempt's agent spent (docs/ledger.md "Spend"): cost_usd None when unknown
    # (nothing measured yet, or a model with no price), never an invented zero
    cost_usd: float | None
    input_tokens: int | None = None
    output_tokens: int | None = None
    cache_read_tokens: int | None = None
    cache_write_tokens: int | None = None
    turns: int | None = None
    ended_at: datetime | None
    outcome: str | None


class Event(BaseModel):
    seq: int
    at: datetime
    type: EventType
    generation: int
    actor: str
    state: State
    source: Source | None = None
    requester: str | None = None
    target_revision: str | None = None
    input_sha256: str | None = None
    replay_of: str | None = None
    reason: str | None = None
    crew: str | None = None
    assignment_id: str | None = None
    delivery_id: str | None = None
    max_attempts: int | None = None
    run_id: str | None = None
    lease_holder: str | None = None
    lease_expires_at: datetime | None = None
    runtime_locator: Locator | None = None
    cost_usd: float | None = None
    # spend: what the attempt at ``generation`` has spent so far
    input_tokens: int | None = None
    output_tokens: int | None = None
    cache_read_tokens: int | None = None
    cache_write_tokens: int | None = None
    turns: int | None = None
    runtime_stopped: bool | None = None
    landed_commit: str | None = None
    base_branch: str | None = None
    crew_commit: str | None = None
    outside_grant: list[str] | None = None
    # approval_requested / approval_decided (docs/approvals.md): the command only as its
    # fingerprint and a bounded, escaped excerpt
    request_id: str | None = None
    tool: str | None = None
    excerpt: str | None = None
    fingerprint: str | None = None
    decision: str | None = None


class WorkItemDetail(WorkItem):
    attempts: list[Attempt]
    events: list[Event]


class WorkPage(BaseModel):
    items: list[WorkItem]
    next_cursor: str | None


class WorktreeOutcome(BaseModel):
    """What became of a dismissed crew's own worktree and branch (docs/worktrees.md)."""

    action: Literal["removed", "kept", "discarded", "gone"]
    reason: str
    worktree: str
    branch: str
    base_branch: str
    commits: int  # on the branch, not on the base branch
    uncommitted: int  # files changed or untracked in the worktree
    tip: str | None  # the branch's commit when judged


class Dismissal(BaseModel):
    """The crew dismissed because the cancelled item was its assignment."""

    crew: str
    assignment_id: str | None
    bounced: list[str]  # message IDs of the unread mail that bounced
    pane_stopped: bool | None  # True: closed, confirmed; False: not confirmed; None: no pane
    worktree: WorktreeOutcome | None = None  # None: the crew shared the checkout


class CancelOut(BaseModel):
    item: WorkItem
    state: State
    outcome: CancelOutcome
    dismissed: Dismissal | None = None


class Delivery(BaseModel):
    delivery_id: str
    endpoint_id: str
    source_delivery_id: str
    event: str | None
    received_at: datetime
    body_sha256: str
    body_bytes: int
    raw_body_available: bool
    raw_body_expires_at: datetime
    filter_reason: str | None
    work_id: str | None
    routine: bool  # a routine receipt: its work item offers no cancel or replay (409)


class DeliveryPage(BaseModel):
    deliveries: list[Delivery]
    next_cursor: str | None


class Receipt(BaseModel):
    """The webhook door's answer: a receipt, which grants nothing."""

    delivery_id: str
    duplicate: bool

"""Every record in the home, as a pydantic model with a ``schema`` version.

Extra fields are forbidden: a file that carries something we do not understand is
quarantined rather than half-read.
"""

from __future__ import annotations

from datetime import datetime
from typing import TYPE_CHECKING, Annotated, ClassVar, Literal, Union

from pydantic import BaseModel, ConfigDict, Field

from state.vocab import SUMMARY_MAX

if TYPE_CHECKING:
    from pydantic import TypeAdapter

Status = Literal[
    "working",
    "idle",
    "asked",
    "awaiting_approval",
    "done",
    "held",
    "blocked",
    "bounced",
    "timeout",
    "error",
]
Agent = Literal["claude", "codex", "pi", "shell", "program"]  # program: any --command


class Strict(BaseModel):
    # defer_build: a crew-side command validates two or three kinds of record; building
    # every schema at import would cost it most of its start-up budget.
    model_config = ConfigDict(extra="forbid", frozen=True, populate_by_name=True, defer_build=True)


class Record(Strict):
    schema_: Literal[1] = Field(default=1, alias="schema")


class AssignmentSpec(Strict):
    assignment_id: str
    message_id: str  # the assignment's own mail: the task
    task: str
    owns: list[str]  # absolute, normalised paths
    allow: list[str]
    project_dir: str
    handoff_of: str | None = None


# what tmux says of a pane, or of its server (captain_tui.runtime.tmux; the ledger's probe)
Liveness = Literal["alive", "gone", "unknown"]


class PaneLocator(Strict):
    """Where a crew runs: enough to find its pane again, or to prove it is gone."""

    socket: str  # the tmux server's socket path
    session: str
    window_id: str
    pane_id: str
    pane_pid: int | None = None


class LaunchSpec(Strict):
    """How to start a crew's pane later, when its recruitment waits for a ledger slot."""

    program: str | None = None
    cwd: str
    socket: str | None = None
    session: str = "captain"


class Workspace(Strict):
    """A crew's own git worktree (docs/worktrees.md): made at recruit from ``base_commit``,
    which is also the assignment work item's ``target_revision``."""

    project: str  # absolute path of the repository's top level (the user's checkout)
    worktree: str  # absolute path of the crew's worktree
    branch: str  # the crew's branch, checked out in the worktree
    base_branch: str  # the branch the project had checked out at recruit
    base_commit: str  # full sha the crew's branch started from


class _Event(Record):
    seq: int = Field(ge=1)
    at: datetime
    actor: Literal["captain", "crew"]


class Recruited(_Event):
    type: Literal["recruited"] = "recruited"
    name: str
    incarnation_id: str
    agent: Agent
    assignment: AssignmentSpec
    pane: PaneLocator | None = None  # None: recorded only (--no-launch), or waiting
    launch: LaunchSpec | None = None  # set when the pane waits for a ledger slot
    workspace: Workspace | None = None  # None: no worktree (the crew shares the checkout)
    budget_usd: float | None = None  # the first assignment's budget (docs/budgets.md)


class Assigned(_Event):
    type: Literal["assigned"] = "assigned"
    assignment: AssignmentSpec
    budget_usd: float | None = None  # this assignment's budget; None: none


class BudgetSet(_Event):
    """The captain set the current assignment's budget (``tell --budget-usd``)."""

    type: Literal["budget_set"] = "budget_set"
    assignment_id: str
    budget_usd: float | None


class Asked(_Event):
    type: Literal["asked"] = "asked"
    assignment_id: str
    question_id: str
    delivery_id: str
    text: str
    queued_at: datetime | None  # the newest mail the crew had when it asked


class Finished(_Event):
    type: Literal["done"] = "done"
    assignment_id: str
    delivery_id: str
    report: str
    queued_at: datetime | None


class BouncedMail(Strict):
    message_id: str
    delivery_id: str
    queued_at: datetime
    summary: str


WorktreeFate = Literal["removed", "kept", "discarded", "gone"]


class Dismissed(_Event):
    type: Literal["dismissed"] = "dismissed"
    assignment_id: str
    reason: str
    bounced: list[BouncedMail]
    # what the dismissal decided for the crew's worktree and branch (docs/worktrees.md),
    # recorded before it is done, so a dismissal killed part way is finished by the next;
    # tip: the branch's commit when judged (a discarded branch can be found again by it)
    worktree: WorktreeFate | None = None
    worktree_tip: str | None = None


class WorktreeDiscarded(_Event):
    """``dismiss --discard`` after a dismissal kept the worktree: it goes now."""

    type: Literal["worktree_discarded"] = "worktree_discarded"
    tip: str | None = None


class Launched(_Event):
    """The crew's pane started after its recruitment waited for a ledger slot."""

    type: Literal["launched"] = "launched"
    pane: PaneLocator


CrewEvent = Annotated[
    Union[Recruited, Assigned, Asked, Finished, Dismissed, Launched, WorktreeDiscarded, BudgetSet],
    Field(discriminator="type"),
]


class EventFile:
    """Reads any crew event (a discriminated union on ``type``).

    Not a RootModel: a parametrised RootModel builds its validator at import, which every
    crew-side command would pay for; this builds it on first use.
    """

    _adapter: ClassVar[TypeAdapter[CrewEvent] | None] = None

    @classmethod
    def model_validate_json(cls, text: str) -> CrewEvent:
        if cls._adapter is None:
            from pydantic import TypeAdapter

            cls._adapter = TypeAdapter(CrewEvent)
        return cls._adapter.validate_json(text)


class Question(Strict):
    question_id: str
    text: str
    asked_at: datetime


class CrewSnapshot(Record):
    """A cache folded from ``crew/<key>/events``; rebuilt whenever it is behind."""

    seq: int
    name: str
    incarnation_id: str
    agent: Agent
    recruited_at: datetime
    assignment: AssignmentSpec
    assigned_at: datetime
    done_at: datetime | None = None
    report: str | None = None
    question: Question | None = None  # the last question asked on this assignment
    dismissed_at: datetime | None = None
    pane: PaneLocator | None = None
    launched_at: datetime | None = None  # when its pane started (None: not launched)
    workspace: Workspace | None = None  # its own worktree; None: it shares the checkout
    worktree: WorktreeFate | None = None  # what its dismissal decided for the worktree
    budget_usd: float | None = None  # the current assignment's budget (docs/budgets.md)


class Message(Record):
    message_id: str
    crew: str
    incarnation_id: str
    assignment_id: str
    kind: Literal["assignment", "tell", "answer"]
    text: str
    question_id: str | None = None
    queued_at: datetime
    sender: Literal["captain"] = "captain"


class Receipt(Record):
    message_id: str
    crew: str
    assignment_id: str
    read_at: datetime
    via: Literal["inbox", "done", "hook"]


class Bounce(Record):
    message_id: str
    crew: str
    delivery_id: str
    reason: str
    bounced_at: datetime


class Notification(Record):
    delivery_id: str
    status: Status
    crew: str
    assignment_id: str
    summary: str = Field(max_length=SUMMARY_MAX)
    queued_at: datetime | None
    created_at: datetime
    question_id: str | None = None
    message_id: str | None = None
    request_id: str | None = None  # awaiting_approval: the request captain approve decides


class Ack(Record):
    delivery_id: str
    crew: str
    acked_at: datetime


class Returned(Record):
    """Marks a notification as handed to a waiter: it is returned once."""

    delivery_id: str
    crew: str
    returned_at: datetime


class HomeMeta(Record):
    created_at: datetime
    kind: Literal["captain-home"] = "captain-home"


class RingStamp(Record):
    """The doorbell's memory for one crew (``doorbell/<key>.json``, a mutable snapshot)."""

    crew: str
    incarnation_id: str
    head: str | None = None  # newest unread message when we last rang
    rung_at: datetime | None = None
    landed: bool | None = None  # the typed text showed up on the composer and was submitted
    typed: str | None = None  # exactly what we typed last, to recognise it on the composer
    body_landed: bool = False  # a hookless crew's first ring (with the body) has landed
    gate: str | None = None  # what holds the next ring, None when nothing does
    held_since: datetime | None = None  # when held_head was first held (by any gate)
    held_head: str | None = None  # the oldest held message: the held notice's clock is its
    held_notified: str | None = None  # head for which the 300 s 'held' notice was raised
    approval_seen: bool = False  # an approval prompt is up and was already reported
    # the start-up dialog the pane shows (pane_reader.DIALOGS' id), None when none: written
    # by the runners' probe (runtime/dialogs.py), read by status, wait and the cockpit
    dialog: str | None = None
    # the agent's composer was seen: it is past its start-up dialogs and no longer probed
    composer_seen: bool = False
    checked_at: datetime | None = None

"""What the cockpit's panels show, as plain immutable data.

The feed (``captain_tui.cockpit.feed``) builds these from the home; the panels render them.
They are frozen so one ``HomeView`` can be handed from the feed's thread to the UI without copying:
an update replaces the ``CrewView`` of the crew it touched and shares every other one.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from functools import cached_property
from typing import TYPE_CHECKING, Final

from state.crew.spend import Spend
from state.crew.standing import CrewState
from state.records import PaneLocator, Workspace
from state.work.ledger_records import TERMINAL, Source, WorkState

if TYPE_CHECKING:
    from state.work.controls import Facts

# Statuses that need the captain now: they raise an alert (toast, bell, desktop notice).
ALERT_STATUSES = frozenset({"asked", "awaiting_approval", "blocked", "bounced", "error"})

RECONCILE: Final = "needs_reconciliation"
# The Work panel's filters, in the order its key cycles them ("finished": any terminal state)
WORK_FILTERS = ("all", "queued", "running", RECONCILE, "finished")
FINISHED_SHOWN = 100  # finished work piles up forever: the panel shows the newest this many


@dataclass(frozen=True)
class CrewRow:
    key: str  # the crew name in lower case: the row key in every panel
    name: str
    agent: str
    state: CrewState  # never "dismissed": the cockpit shows no dismissed crew
    assignment_id: str
    incarnation_id: str
    task: str
    unread: int
    last_activity: datetime | None
    gate: str | None  # what holds the doorbell, None when nothing does
    pane: PaneLocator | None
    unacknowledged: int = 0  # notifications of this crew not yet acknowledged
    owns: tuple[str, ...] = ()  # the assignment's grants, offered again for the next one
    allow: tuple[str, ...] = ()
    workspace: Workspace | None = None  # its own git worktree (docs/worktrees.md)
    dialog: str | None = None  # the start-up dialog it is blocked at (state "blocked")
    # what its agent spent (state/crew/spend.py): on this assignment, and on all of them
    spend: Spend | None = None
    spend_all: Spend | None = None
    budget_usd: float | None = None  # this assignment's budget (docs/budgets.md); None: none

    @property
    def done(self) -> bool:
        return self.state == "done"


@dataclass(frozen=True)
class QuestionRow:
    key: str
    crew: str
    question_id: str
    assignment_id: str
    text: str
    asked_at: datetime


@dataclass(frozen=True)
class ApprovalRow:
    """An approval request an agent's hook holds for the captain (docs/approvals.md): the
    tool and a bounded, escaped excerpt of what it would run, never the whole command."""

    key: str
    crew: str
    request_id: str
    agent: str
    tool: str
    excerpt: str
    fingerprint: str
    allow_session: bool  # the agent can take "allow for this session"
    created_at: datetime
    expires_at: datetime
    decided: str | None = None  # decided; the hook has not picked it up yet


@dataclass(frozen=True)
class DoorbellRow:
    key: str
    crew: str
    gate: str
    held_since: datetime | None


@dataclass(frozen=True)
class NotificationRow:
    key: str
    crew: str
    delivery_id: str
    status: str
    assignment_id: str
    summary: str
    created_at: datetime


@dataclass(frozen=True)
class WorkRow:
    """One work item as the Work panel shows it (never its input, never an event detail)."""

    work_id: str
    key: str | None  # the crew's key when the item is an assignment: the pane preview follows
    state: WorkState
    source: Source
    crew: str | None
    generation: int
    created_at: datetime
    updated_at: datetime  # when it entered its current state
    target_revision: str | None = None
    replay_of: str | None = None
    pane: str | None = None  # the current attempt's pane ID, where it has one
    why: str | None = None  # why it needs reconciliation (the transition's reason)
    title: str = ""  # what a person knows it by (cockpit.jobs.title): the row shows this
    named: str = ""  # the same in a sentence (cockpit.jobs.named): "Jack's task “…”"
    # what state.work.controls decides cancel and replay by (a webhook item's delivery:
    # routine, raw body held until when), read by the feed so the UI thread never reads
    facts: Facts | None = None
    # each attempt's spend as the ledger records it (None: nothing measured), oldest first
    spent: tuple[Spend | None, ...] = ()

    @property
    def finished(self) -> bool:
        return self.state in TERMINAL

    @property
    def routine(self) -> bool:
        return self.facts is not None and self.facts.routine

    @property
    def reconciling(self) -> bool:
        return self.state == RECONCILE


# Work panel order: what needs a person first, then what runs, what waits, what ended.
_WORK_RANK = {RECONCILE: 0, "running": 1, "queued": 2}


def _work_order(w: WorkRow) -> tuple:
    """The Work panel's order as one key, sorted on in reverse: rank first (negated: the
    lowest first), then the newest first (``updated_at``, then ID)."""
    return (-_WORK_RANK.get(w.state, 3), w.updated_at, w.work_id)


@dataclass(frozen=True)
class CrewView:
    """Everything the cockpit shows about one crew. ``crew`` is None for a dismissed crew
    whose notifications are not all acknowledged (its bounces): they block recruiting the
    name again, so the Notifications panel lists them though the Crew panel does not."""

    crew: CrewRow | None
    question: QuestionRow | None = None
    doorbell: DoorbellRow | None = None
    notifications: tuple[NotificationRow, ...] = ()
    approvals: tuple[ApprovalRow, ...] = ()


@dataclass(frozen=True)
class HomeView:
    """The whole cockpit's data at one moment. ``crews`` and ``work`` are never mutated after
    creation."""

    crews: dict[str, CrewView] = field(default_factory=dict)
    work: dict[str, WorkRow] = field(default_factory=dict)  # by work ID
    ledger: str = ""  # which work ledger: "files", or the database's URL (password redacted)
    # what keeps the Work panel from showing the whole ledger ("" when nothing does): a
    # ledger that cannot be read (rows are what was read last), or items that do not validate
    work_problem: str = ""

    def crew_rows(self) -> list[CrewRow]:
        return [v.crew for k, v in sorted(self.crews.items()) if v.crew is not None]

    def questions(self) -> list[QuestionRow]:
        """Pending questions, oldest first (the one that has waited longest on top)."""
        found = [v.question for v in self.crews.values() if v.question is not None]
        return sorted(found, key=lambda q: (q.asked_at, q.question_id))

    def approvals(self) -> list[ApprovalRow]:
        """Open approval requests, oldest first (the one closest to running out on top)."""
        found = [a for v in self.crews.values() for a in v.approvals]
        return sorted(found, key=lambda a: (a.created_at, a.request_id))

    def approval(self, request_id: str | None) -> ApprovalRow | None:
        for v in self.crews.values():
            for a in v.approvals:
                if a.request_id == request_id:
                    return a
        return None

    def doorbells(self) -> list[DoorbellRow]:
        """Held rings, longest held first."""
        found = [v.doorbell for v in self.crews.values() if v.doorbell is not None]
        return sorted(found, key=lambda d: (d.held_since is None, d.held_since or 0, d.key))

    def notifications(self) -> list[NotificationRow]:
        """Unacknowledged notifications, newest first."""
        found = [n for v in self.crews.values() for n in v.notifications]
        return sorted(found, key=lambda n: (n.created_at, n.delivery_id), reverse=True)

    def crew(self, key: str | None) -> CrewRow | None:
        view = self.crews.get(key) if key else None
        return view.crew if view else None

    # lookups, asked for every key's dimming on every update: no sorting

    def notification(self, delivery_id: str | None) -> NotificationRow | None:
        for v in self.crews.values():
            for n in v.notifications:
                if n.delivery_id == delivery_id:
                    return n
        return None

    def question(self, question_id: str | None) -> QuestionRow | None:
        for v in self.crews.values():
            if v.question is not None and v.question.question_id == question_id:
                return v.question
        return None

    @cached_property
    def work_order(self) -> tuple[WorkRow, ...]:
        """Every work row in the Work panel's order: needs_reconciliation first, then
        running, queued and finished, newest first within each. Sorted once per view, and
        by the feed's thread, which asks for it before it hands the view on
        (``feed.home_feed.Update``): the UI thread only filters it."""
        return tuple(sorted(self.work.values(), key=_work_order, reverse=True))

    def work_rows(self, state: str = "all") -> tuple[list[WorkRow], int]:
        """The Work panel's rows under a filter (see ``WORK_FILTERS``), in ``work_order``;
        and how many matched (finished rows beyond ``FINISHED_SHOWN`` are left out)."""
        if state == "all":
            found = list(self.work_order)
        elif state == "finished":
            found = [w for w in self.work_order if w.finished]
        else:
            found = [w for w in self.work_order if w.state == state]
        live = [w for w in found if not w.finished]
        return live + [w for w in found if w.finished][:FINISHED_SHOWN], len(found)

    def work_item(self, work_id: str | None) -> WorkRow | None:
        return self.work.get(work_id) if work_id else None

    def reconciling(self) -> int:
        """How many work items need a person's verdict."""
        return sum(1 for w in self.work.values() if w.reconciling)

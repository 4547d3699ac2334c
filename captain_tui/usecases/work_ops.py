"""The work ledger's use cases: cancel (which dismisses an assignment's crew), replay and
resolve, each checking the caller's role before anything is read or written."""

from __future__ import annotations

from dataclasses import dataclass

from captain_tui.usecases.crew_ops import Dismissal, dismiss
from state.crew import crewlog, guards
from state.crew.guards import CAPTAIN, Context
from state.home import Home
from state.inputs import crew_key
from state.work import controls, ledger
from state.work import replay as replays
from state.work.ledger_records import TERMINAL, CancelOutcome, WorkItem


def actor() -> str:
    """Who the captain-side caller is, as recorded on what they request: one printable
    line of at most 200 characters (``ledger.check_name``), so every record holding it stays
    small whatever $LOGNAME says."""
    import getpass  # not at import: the CLI imports this module for every captain command

    try:
        return ledger.check_name(f"captain:{getpass.getuser()}", "actor")
    except Exception:  # noqa: BLE001 - no usable user name is not a reason to refuse
        return "captain"


# -- the work ledger ------------------------------------------------------------------------


@dataclass(frozen=True)
class Cancellation:
    item: WorkItem  # as it stands after the cancel
    outcome: CancelOutcome
    dismissal: Dismissal | None  # the crew whose assignment this was, now dismissed


def _live_crew(home: Home, item: WorkItem) -> str | None:
    """The crew whose current assignment the item is, while that crew is not dismissed."""
    if item.source != "assignment" or not item.crew or item.state in TERMINAL:
        return None
    snapshot, _ = crewlog.load(home, crew_key(item.crew))
    if (
        snapshot is None
        or snapshot.dismissed_at is not None
        or snapshot.assignment.assignment_id != item.assignment_id
    ):
        return None
    return snapshot.name


def cancel(
    home: Home, work_id: str, *, actor: str, reason: str | None = None, ctx: Context = CAPTAIN
) -> Cancellation:
    """Cancel a work item. An assignment's item is cancelled by dismissing its crew (one
    path: the pane is closed, unread mail bounces, the crew can be recruited again with
    ``--handoff``), so a crew is never left recorded as assigned with a dead pane."""
    from captain_tui.runtime import ledger_probe

    guards.check_captain(ctx, "work cancel")
    ledger.check_shown(reason)  # before a pane is closed or anything is written
    item = ledger.get(home, ledger.check_work_id(work_id))
    controls.check(home, "cancel", item)  # a routine receipt is not captain's to stop
    crew = _live_crew(home, item)
    if crew is None:
        result = ledger.cancel(
            home, item.work_id, actor=actor, reason=reason, stop=ledger_probe.stop
        )
        return Cancellation(result.item, result.outcome, None)
    dismissal = dismiss(
        home, crew, ctx=ctx, actor=actor, reason=reason or f"work item {item.work_id} cancelled"
    )
    after = ledger.get(home, item.work_id)
    outcome: CancelOutcome = (
        "cancelled"
        if after.state == "cancelled"
        else "already_terminal"
        if after.state in TERMINAL
        else "stop_unconfirmed"
    )
    return Cancellation(after, outcome, dismissal)


def replay(
    home: Home,
    work_id: str,
    *,
    actor: str,
    reason: str,
    target_revision: str | None = None,
    ctx: Context = CAPTAIN,
) -> WorkItem:
    """Queue a finished item's input again as a new item (``state.work.replay``)."""
    guards.check_captain(ctx, "work replay")  # before the item is read
    return replays.replay(
        home, work_id, actor=actor, reason=reason, target_revision=target_revision
    )


def resolve(
    home: Home,
    work_id: str,
    *,
    generation: int,
    to: str,
    reason: str | None,
    actor: str,
    runtime_stopped: bool = False,
    ctx: Context = CAPTAIN,
) -> WorkItem:
    """Settle an item that needs reconciliation, by the person who checked its process."""
    guards.check_captain(ctx, "work resolve")  # before the item is read
    return ledger.resolve(
        home,
        work_id,
        generation=generation,
        to=to,
        reason=reason,
        operator=actor,
        runtime_stopped=runtime_stopped,
    )

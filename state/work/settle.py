"""Assignments as work items: the bridge between a crew's history and the ledger.

Every assignment is a work item (source ``assignment``) whose ID is derived from the
assignment's (``ledger.work_id_for_assignment``). The crew log settles it like any derived
record: recruiting or assigning accepts it, ``done`` succeeds it, and a writer that finds
either missing after a crash writes it again. Claiming is not derivable (it depends on free
slots), so the protocol claims explicitly and the runner's dispatch claims what waited.
"""

from __future__ import annotations

import contextlib

from state.errors import CaptainError
from state.home import Home
from state.records import Assigned, CrewSnapshot, Finished, PaneLocator, Recruited
from state.work import ledger, seen
from state.work.backend import backend_for

HOLDER = "captain"


def holder_for(launched: bool) -> str:
    """Who holds an assignment's attempt: captain for a pane it launched (the runners probe
    it and renew its lease), the external holder for a crew recorded with --no-launch (no
    pane to probe; the reconciler leaves it to its crew and the person: docs/ledger.md)."""
    return HOLDER if launched else ledger.EXTERNAL_HOLDER


def work_id(assignment_id: str) -> str:
    return ledger.work_id_for_assignment(assignment_id)


def accepted(home: Home, snapshot: CrewSnapshot, event: Recruited | Assigned) -> None:
    spec = event.assignment
    wid = work_id(spec.assignment_id)
    if seen.known(home, wid):
        return  # one stat: every writer's open settles the newest event
    if not ledger.exists(home, wid):
        # the commit the crew's worktree started from (docs/worktrees.md); a handoff keeps
        # the crew's worktree, so its base too
        space = event.workspace if isinstance(event, Recruited) else snapshot.workspace
        ledger.accept(
            home,
            source="assignment",
            work_id=wid,
            requester=event.actor,
            input={"task": spec.task, "crew": snapshot.name, "assignment_id": spec.assignment_id},
            crew=snapshot.name,
            assignment_id=spec.assignment_id,
            at=event.at,
            target_revision=space.base_commit if space is not None else None,
        )
    if not seen.known(home, wid) and backend_for(home).exists_durably(wid):
        # a shared ledger: note in the home that the item exists, so the crew's hooks (the
        # fast path, state/crew_side/fast.py) need not reach the database to know it. Only
        # once it is committed: inside recruit's transaction a kill would roll the item
        # back and leave the note lying (the first hook's full path writes it instead).
        seen.note(home, wid)


def finished(home: Home, event: Finished) -> None:
    """``done`` succeeds the item (fenced at the generation done found current)."""
    wid = work_id(event.assignment_id)
    item = ledger.load(home, wid)
    if item is None or item.state not in ("running", "needs_reconciliation"):
        return
    with contextlib.suppress(CaptainError):  # already reported, or taken over: fenced out
        ledger.report(home, wid, item.generation, "succeeded", actor=event.actor, at=event.at)


def check_reportable(home: Home, assignment_id: str) -> None:
    """Refuse ``done`` for an assignment whose work item has no live attempt."""
    item = ledger.load(home, work_id(assignment_id))
    if item is None or item.state in ("running", "needs_reconciliation"):
        return
    if item.state == "queued":
        raise CaptainError(
            "not_running",
            f"{assignment_id} is still queued for a ledger slot "
            f"({item.work_id}); it has not started, so it cannot be done yet.",
            work_id=item.work_id,
        )
    raise CaptainError(
        "not_running",
        f"{assignment_id}'s work item {item.work_id} is already {item.state}; "
        "nothing can be reported for it any more.",
        work_id=item.work_id,
    )


def is_queued(home: Home, assignment_id: str) -> bool:
    item = ledger.load(home, work_id(assignment_id))
    return item is not None and item.state == "queued"


def claim_if_free(home: Home, assignment_id: str, locator: PaneLocator | None) -> bool:
    """Claim the assignment's item now if a slot is free (caller holds the ledger lock)."""
    wid = work_id(assignment_id)
    if not ledger.has_free_slot(home):
        return False
    ledger.claim_held(home, wid, holder=holder_for(locator is not None), locator=locator)
    return True

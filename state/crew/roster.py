"""The crew as ``status`` lists them, derived once from whichever reader gives the records.

``status`` runs on plain records (``state.crew_side.status``: no pydantic, a captain that is
itself an agent asks it often) and falls back to the models (``state.crew.protocol``, which
reads, repairs and quarantines as always); ``wait``'s hints ask one crew's state the same
way. Both hand their readers here (``Readers``), so the two can never list a crew
differently: the same rows, the same keys in the same order, the same state
(``state.crew.standing``). Imports no pydantic.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from typing import Any, NamedTuple

from state.crew import guards, standing
from state.home import Home
from state.ids import DELIVERY, derive


class Readers(NamedTuple):
    """How a crew's records are read: the models' functions, or the plain ones. Each takes
    the home and the crew's key; records come back with the models' attribute names."""

    snapshot: Callable[[Home, str], Any]  # the current snapshot, None for an unknown crew
    unread: Callable[[Home, str, Any], list[Any]]  # this incarnation's queued mail
    notifications: Callable[[Home, str], list[Any]]  # every notification, oldest first
    ring_stamp: Callable[[Home, str], Any]  # the doorbell's stamp, None when it has none


class Row(NamedTuple):
    """One crew's ``status`` row, and what it was made from (for its doorbell and change)."""

    row: dict[str, Any]
    snapshot: Any
    stamp: Any  # the doorbell's stamp (any incarnation's), None when none


# -- a death's one record (``state.crew.death_notice`` writes it) ------------------------------


def death_delivery_id(incarnation_id: str) -> str:
    """The one ``error`` delivery an incarnation can have."""
    return derive(DELIVERY, incarnation_id)


def death_reported(home: Home, key: str, incarnation_id: str) -> bool:
    """Whether the death is recorded: one stat, creating nothing (probes ask often)."""
    return os.path.exists(
        f"{home.root}/notifications/{key}/{death_delivery_id(incarnation_id)}.json"
    )


# -- one crew ----------------------------------------------------------------------------------


def dialog_of(stamp: Any, snapshot: Any) -> str | None:
    """The start-up dialog the runners' probe last saw on this incarnation's pane (kept in
    the doorbell's stamp), None when none."""
    if stamp is None or stamp.incarnation_id != snapshot.incarnation_id:
        return None
    dialog: str | None = stamp.dialog
    return dialog


def state_of(
    home: Home,
    key: str,
    snapshot: Any,
    pending: Any,
    unacked: list[Any],
    dialog: str | None,
) -> standing.CrewState:
    """``standing.crew_state`` from the home's files (the cockpit feeds it from its cache)."""
    return standing.crew_state(
        dialog=dialog,
        dismissed=snapshot.dismissed_at is not None,
        done=snapshot.done_at is not None,
        died=death_reported(home, key, snapshot.incarnation_id),
        question_pending=pending is not None,
        unacknowledged=unacked,
        assignment_id=snapshot.assignment.assignment_id,
    )


def crew_state(home: Home, key: str, readers: Readers) -> standing.CrewState | None:
    """One crew's state now (None: no such crew), as ``status`` shows it."""
    snapshot = readers.snapshot(home, key)
    if snapshot is None:
        return None
    return state_of(
        home,
        key,
        snapshot,
        guards.pending_question(home, key, snapshot),
        guards.unacknowledged(home, key, readers.notifications(home, key)),
        dialog_of(readers.ring_stamp(home, key), snapshot),
    )


# -- every crew --------------------------------------------------------------------------------


def rows(home: Home, include_dismissed: bool, readers: Readers) -> list[Row]:
    """One row per crew for ``status``: who, on what, and what it waits on."""
    found = []
    for key in home.crew_keys():
        snapshot = readers.snapshot(home, key)
        if snapshot is None or (snapshot.dismissed_at and not include_dismissed):
            continue
        pending = guards.pending_question(home, key, snapshot)
        queued = [] if snapshot.dismissed_at else readers.unread(home, key, snapshot)
        unacked = guards.unacknowledged(home, key, readers.notifications(home, key))
        stamp = readers.ring_stamp(home, key)
        dialog = dialog_of(stamp, snapshot)
        state = state_of(home, key, snapshot, pending, unacked, dialog)
        row = {
            "name": snapshot.name,
            "agent": snapshot.agent,
            "state": state,
            "dialog": dialog if state == "blocked" else None,
            "incarnation_id": snapshot.incarnation_id,
            "assignment_id": snapshot.assignment.assignment_id,
            "unread": len(queued),
            "question_id": pending.question_id if pending else None,
            "unacknowledged": len(unacked),
            "owns": snapshot.assignment.owns,
            "allow": snapshot.assignment.allow,
            "pane": snapshot.pane.model_dump() if snapshot.pane else None,
            "budget_usd": snapshot.budget_usd,  # the assignment's (docs/budgets.md)
        }
        found.append(Row(row, snapshot, stamp))
    return found

"""A crew's history: append-only events are the truth, ``state.json`` is a cache.

Each event's side records (the assignment mail, a notification, bounces) are derived from
the event alone, with IDs and timestamps the event carries, so writing them again after a
crash produces identical bytes and ``create_once`` makes the repair idempotent. Every
writer settles the newest event before appending the next, so all older ones are settled.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import TYPE_CHECKING

from state.crew import mailbox
from state.errors import CaptainError
from state.home import Home
from state.ids import DELIVERY, derive
from state.inputs import bounce_summary, summarize
from state.records import (
    Asked,
    Assigned,
    Bounce,
    BouncedMail,
    BudgetSet,
    CrewEvent,
    CrewSnapshot,
    Dismissed,
    EventFile,
    Finished,
    Launched,
    Message,
    Notification,
    Question,
    Recruited,
    WorktreeDiscarded,
)
from state.store import encode

if TYPE_CHECKING:
    from pydantic import BaseModel


def fold(snapshot: CrewSnapshot | None, event: CrewEvent) -> CrewSnapshot:
    """Apply one event to a snapshot. The only place that says what an event means."""
    if isinstance(event, Recruited):
        return CrewSnapshot(
            seq=event.seq,
            name=event.name,
            incarnation_id=event.incarnation_id,
            agent=event.agent,
            recruited_at=event.at,
            assignment=event.assignment,
            assigned_at=event.at,
            pane=event.pane,
            launched_at=event.at if event.pane is not None else None,
            workspace=event.workspace,
            budget_usd=event.budget_usd,
        )
    if snapshot is None:
        raise CaptainError("store_error", f"crew history starts with {event.type}, not recruited")
    if isinstance(event, Assigned):
        changes = dict(
            assignment=event.assignment,
            assigned_at=event.at,
            done_at=None,
            report=None,
            question=None,
            budget_usd=event.budget_usd,  # each assignment starts with its own budget
        )
    elif isinstance(event, Asked):
        changes = dict(
            question=Question(question_id=event.question_id, text=event.text, asked_at=event.at)
        )
    elif isinstance(event, Finished):
        changes = dict(done_at=event.at, report=event.report)
    elif isinstance(event, Dismissed):
        changes = dict(dismissed_at=event.at, worktree=event.worktree)
    elif isinstance(event, WorktreeDiscarded):
        changes = dict(worktree="discarded")
    elif isinstance(event, Launched):
        changes = dict(pane=event.pane, launched_at=event.at)
    elif isinstance(event, BudgetSet):
        if event.assignment_id != snapshot.assignment.assignment_id:
            changes = {}  # written for an assignment that is no longer current: nothing
        else:
            changes = dict(budget_usd=event.budget_usd)
    else:  # pragma: no cover - the union is closed
        raise CaptainError("store_error", f"unknown event {event!r}")
    return snapshot.model_copy(update=dict(seq=event.seq, **changes))


def _read_event(home: Home, key: str, seq: int) -> CrewEvent | None:
    return home.store.read(home.event_path(key, seq), EventFile)


def load(
    home: Home, key: str, *, repair: bool = False
) -> tuple[CrewSnapshot | None, CrewEvent | None]:
    """The crew's current snapshot (None for an unknown key) and, with ``repair``, its
    newest event (for the caller to settle); without ``repair`` the event is the newest one
    folded here, or None when the snapshot was current.

    The snapshot is trusted up to its ``seq``; newer events are folded on top. With
    ``repair`` (callers holding the crew lock) a behind snapshot is republished.
    """
    store = home.store
    if not home.has_crew(key):
        return None, None
    seqs = home.event_seqs(key)
    snapshot = store.read(home.snapshot_path(key), CrewSnapshot)
    if snapshot is not None and (not seqs or snapshot.seq > seqs[-1]):
        snapshot = None  # a cache ahead of the truth is not to be trusted
    start = snapshot.seq if snapshot is not None else 0
    last = None
    for seq in seqs:
        # the newest event is read even when cached, for writers that settle it (repair)
        if seq <= start and not (repair and seq == seqs[-1]):
            continue
        event = _read_event(home, key, seq)
        if event is None:
            continue  # quarantined and reported; the rest of the history still counts
        last = event
        if seq > start:
            snapshot = fold(snapshot, event)
    if repair and snapshot is not None and snapshot.seq > start:
        store.publish(home.snapshot_path(key), encode(snapshot))
    return snapshot, last


def append(home: Home, key: str, snapshot: CrewSnapshot | None, event: CrewEvent) -> CrewSnapshot:
    """Append ``event`` (caller holds the crew lock), settle it, refresh the snapshot."""
    path = home.event_path(key, event.seq)
    home.store.create_once(path, encode(event))
    snapshot = fold(snapshot, event)
    settle(home, key, snapshot, event)
    home.store.publish(home.snapshot_path(key), encode(snapshot))
    return snapshot


def settle(home: Home, key: str, snapshot: CrewSnapshot | None, event: CrewEvent | None) -> None:
    """Write the records an event implies; identical bytes every time (idempotent).

    ``snapshot`` is the crew as of (at least) ``event``: it supplies name and incarnation,
    which no later event changes without a new ``recruited``.
    """
    if event is None or snapshot is None:
        return
    name = snapshot.name
    if isinstance(event, (Recruited, Assigned)):
        spec = event.assignment
        message = Message(
            message_id=spec.message_id,
            crew=name,
            incarnation_id=snapshot.incarnation_id,
            assignment_id=spec.assignment_id,
            kind="assignment",
            text=spec.task,
            queued_at=event.at,
        )
        _ensure(home, home.mail_dir(key) / f"{spec.message_id}.json", message)
        from state.work import (
            settle as ledger_settle,  # here: most crew-side commands never need it
        )

        ledger_settle.accepted(home, snapshot, event)
    elif isinstance(event, Asked):
        _notify(
            home,
            key,
            Notification(
                delivery_id=event.delivery_id,
                status="asked",
                crew=name,
                assignment_id=event.assignment_id,
                summary=summarize(event.text),
                queued_at=event.queued_at,
                created_at=event.at,
                question_id=event.question_id,
            ),
        )
    elif isinstance(event, Finished):
        _notify(
            home,
            key,
            Notification(
                delivery_id=event.delivery_id,
                status="done",
                crew=name,
                assignment_id=event.assignment_id,
                summary=summarize(event.report),
                queued_at=event.queued_at,
                created_at=event.at,
            ),
        )
        from state.work import settle as ledger_settle

        ledger_settle.finished(home, event)
    elif isinstance(event, Dismissed):
        # An older dismissal lists its bounces. A newer one lists none (the list grew with
        # the unread mail, past what one record may hold): it bounces whatever mail of the
        # incarnation is still unread, each bounce derived here as its own two records.
        for mail in event.bounced:
            _bounce(home, key, name, event, mail)
        for mail in unread_bounces(home, key, snapshot):
            _bounce(home, key, name, event, mail)


def unread_bounces(home: Home, key: str, snapshot: CrewSnapshot) -> list[BouncedMail]:
    """What a dismissal bounces: the incarnation's unread mail, oldest first, each with a
    delivery ID derived from its message ID (``msg_X`` -> ``dlv_X``), so that settling
    again after a crash makes the same records."""
    return [
        BouncedMail(
            message_id=m.message_id,
            delivery_id=derive(DELIVERY, m.message_id),
            queued_at=m.queued_at,
            summary=summarize(m.text)[:200],
        )
        for m in mailbox.unread(home, key, snapshot)
    ]


def _bounce(home: Home, key: str, name: str, event: Dismissed, mail: BouncedMail) -> None:
    # the notification first: the bounce record takes the mail out of "unread", so a
    # settle killed between the two finds the mail again and finishes it
    _notify(
        home,
        key,
        Notification(
            delivery_id=mail.delivery_id,
            status="bounced",
            crew=name,
            assignment_id=event.assignment_id,
            summary=bounce_summary(mail.message_id, event.reason, mail.summary),
            queued_at=mail.queued_at,
            created_at=event.at,
            message_id=mail.message_id,
        ),
    )
    _ensure(
        home,
        home.bounces_dir(key) / f"{mail.message_id}.json",
        Bounce(
            message_id=mail.message_id,
            crew=name,
            delivery_id=mail.delivery_id,
            reason=event.reason,
            bounced_at=event.at,
        ),
    )


def _notify(home: Home, key: str, notification: Notification) -> None:
    _ensure(home, home.notifications_dir(key) / f"{notification.delivery_id}.json", notification)


def _ensure(home: Home, path: Path, record: BaseModel) -> None:
    """Create a derived record unless it exists. Settling runs often (every writer, every
    waiter's rescan), so an existing record costs one stat, not a write."""
    if not os.path.lexists(path):
        home.store.create_once(path, encode(record), same=lambda old, new: True)


def open_locked(home: Home, key: str) -> CrewSnapshot | None:
    """Load a crew for writing (caller holds its lock): repair the cache, settle the tail."""
    snapshot, last = load(home, key, repair=True)
    settle(home, key, snapshot, last)
    return snapshot


def events(home: Home, key: str) -> list[CrewEvent]:
    """The whole history of a crew name, oldest first (for status and tests)."""
    out = []
    for seq in home.event_seqs(key):
        event = _read_event(home, key, seq)
        if event is not None:
            out.append(event)
    return out

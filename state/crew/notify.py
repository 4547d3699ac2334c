"""Notifications to the captain, and ``wait``: each one returned once, then acknowledged."""

from __future__ import annotations

import time
from collections.abc import Callable
from datetime import datetime, timezone

from state.clock import now
from state.crew import crewlog, guards, mailbox
from state.crew.guards import CAPTAIN, Context, check_captain
from state.errors import CaptainError
from state.home import Home
from state.ids import DELIVERY, new_id
from state.inputs import crew_key, summarize
from state.records import Notification, Returned
from state.store import encode

POLL_SECONDS = 0.05
REPAIR_SECONDS = 1.0  # how often a running wait re-settles the crew it watches
# Signals a crew's runtime may raise; asked/done/bounced come only from protocol events,
# and a timeout is never a notification.
SIGNALS = frozenset({"working", "idle", "awaiting_approval", "held", "blocked", "error"})


_scope = guards.scope


def _find(home: Home, keys: list[str], delivery_id: str) -> tuple[str, Notification]:
    for key in keys:
        path = home.notifications_dir(key) / f"{delivery_id}.json"
        if "/" not in delivery_id and path.exists():
            found = home.store.read(path, Notification)
            if found is not None:
                return key, found
    raise CaptainError(
        "unknown_delivery",
        f"{delivery_id} is not a delivery of {'any crew' if len(keys) != 1 else keys[0]}.",
    )


def acknowledge(
    home: Home, name: str | None, delivery_id: str, ctx: Context = CAPTAIN
) -> Notification | None:
    """Ack one delivery. Acking a ``done`` yields one ``idle`` notification, returned and
    acknowledged at once, so the captain's wait does not sleep on a finished crew."""
    check_captain(ctx, "wait")
    key, notification = _find(home, _scope(home, name), delivery_id)
    mailbox.write_ack(home, key, notification)
    if notification.status != "done":
        return None
    idle = Notification(
        delivery_id=f"{delivery_id}-idle",
        status="idle",
        crew=notification.crew,
        assignment_id=notification.assignment_id,
        summary=f"{notification.crew} finished {notification.assignment_id} "
        "and is idle; assign the next task with --handoff "
        f"{notification.assignment_id}.",
        queued_at=notification.queued_at,
        created_at=notification.created_at,
    )
    created = home.store.create_once(
        home.notifications_dir(key) / f"{idle.delivery_id}.json", encode(idle)
    )
    _mark_returned(home, key, idle)
    mailbox.write_ack(home, key, idle)
    return idle if created else None


def _mark_returned(home: Home, key: str, notification: Notification) -> bool:
    record = Returned(
        delivery_id=notification.delivery_id, crew=notification.crew, returned_at=now()
    )
    return home.store.create_once(
        home.returned_dir(key) / f"{notification.delivery_id}.json",
        encode(record),
        same=lambda old, new: True,
    )


def take(home: Home, keys: list[str]) -> Notification | None:
    """Hand out the oldest notification not yet returned, or refuse while one is owed."""
    return guards.take(home, keys, mailbox.notifications, _mark_returned)


def wait(
    home: Home,
    name: str | None,
    *,
    timeout: float | None = None,
    ack: str | None = None,
    ctx: Context = CAPTAIN,
    sleep: Callable[[float], None] = time.sleep,
) -> Notification | None:
    """Block until a notification arrives (None on timeout). ``timeout=0`` polls once."""
    check_captain(ctx, "wait")
    if timeout is None:
        timeout = home.wait_timeout()
    if timeout > 0:  # a long-running waiter is a start-up: clear killed writers' debris
        home.store.sweep()
    _repair(home, _scope(home, name))
    if ack is not None:
        idle = acknowledge(home, name, ack, ctx)
        if idle is not None:
            return idle
    deadline = time.monotonic() + timeout
    next_repair = time.monotonic() + REPAIR_SECONDS
    while True:
        keys = _scope(home, name)
        if time.monotonic() >= next_repair:
            _repair(home, keys)
            next_repair = time.monotonic() + REPAIR_SECONDS
        found = take(home, keys)
        if found is not None:
            return found
        left = deadline - time.monotonic()
        if left <= 0:
            return None
        sleep(min(POLL_SECONDS, left))


def _repair(home: Home, keys: list[str]) -> None:
    """Settle every crew in scope: a writer killed between its event and the notification
    the event implies leaves that notification for the next writer or waiter to make."""
    for key in keys:
        with home.store.lock(guards.lock_name(key)):
            crewlog.open_locked(home, key)


def signal(
    home: Home,
    name: str,
    status: str,
    summary: str,
    *,
    at: datetime,
    message_id: str | None = None,
    incarnation_id: str | None = None,
    request_id: str | None = None,
) -> Notification | None:
    """Record a crew signal (idle, working, awaiting_approval, held, error ...).

    A signal older than the newest mail it could be answering is stale and ignored, and
    ``idle`` is raised at most once per delivered message.
    """
    if status not in SIGNALS:
        raise CaptainError(
            "invalid_argument",
            f"{status!r} is not a crew signal; use one of {', '.join(sorted(SIGNALS))}.",
        )
    if at.tzinfo is None:
        at = at.replace(tzinfo=timezone.utc)
    key = crew_key(name)
    with home.store.lock(guards.lock_name(key)):
        snapshot = crewlog.open_locked(home, key)
        if snapshot is None or snapshot.dismissed_at is not None:
            return None
        if incarnation_id is not None and incarnation_id != snapshot.incarnation_id:
            return None  # an old pane of a re-recruited name speaks for nobody
        last = mailbox.last_message(home, key, snapshot.assignment.assignment_id)
        if last is not None and at < last.queued_at:
            return None
        queued_at = last.queued_at if last else None
        if status == "idle" and any(
            n.status == "idle"
            and n.assignment_id == snapshot.assignment.assignment_id
            and n.queued_at == queued_at
            for n in mailbox.notifications(home, key)
        ):
            return None
        n = Notification(
            delivery_id=new_id(DELIVERY),
            status=status,
            crew=snapshot.name,
            assignment_id=snapshot.assignment.assignment_id,
            summary=summarize(summary),
            queued_at=queued_at,
            created_at=now(),
            message_id=message_id,
            request_id=request_id,
        )
        home.store.create_once(home.notifications_dir(key) / f"{n.delivery_id}.json", encode(n))
        return n

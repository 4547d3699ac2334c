"""Queries over mail, receipts, bounces and notifications: what is queued, read, owed."""

from __future__ import annotations

from state.clock import now
from state.crew import guards
from state.crew.guards import unread_names
from state.home import Home
from state.records import Ack, CrewSnapshot, Message, Notification, Receipt
from state.store import encode


def messages(home: Home, key: str, incarnation_id: str | None = None) -> list[Message]:
    """A crew's mail, oldest first, optionally only for one incarnation."""
    found = home.store.records(home.mail_dir(key), Message)
    if incarnation_id is not None:
        found = [m for m in found if m.incarnation_id == incarnation_id]
    found.sort(key=lambda m: (m.queued_at, m.message_id))
    return found


def unread(home: Home, key: str, snapshot: CrewSnapshot) -> list[Message]:
    """Queued mail: this incarnation's, neither read nor bounced, oldest first (only the
    names ``unread_names`` leaves are parsed)."""
    store = home.store
    directory = home.mail_dir(key)
    found = []
    for name in unread_names(home, key):
        m = store.read(directory / f"{name}.json", Message)
        if m is not None and m.incarnation_id == snapshot.incarnation_id:
            found.append(m)
    found.sort(key=lambda m: (m.queued_at, m.message_id))
    return found


def last_message(home: Home, key: str, assignment_id: str) -> Message | None:
    on_assignment = [m for m in messages(home, key) if m.assignment_id == assignment_id]
    return on_assignment[-1] if on_assignment else None


def mark_read(home: Home, key: str, batch: list[Message], via: str) -> None:
    """Write read receipts; a receipt that already exists means 'read', whoever wrote it."""
    directory = home.receipts_dir(key)
    for message in batch:
        receipt = Receipt(
            message_id=message.message_id,
            crew=message.crew,
            assignment_id=message.assignment_id,
            read_at=now(),
            via=via,
        )
        home.store.create_once(
            directory / f"{message.message_id}.json", encode(receipt), same=lambda old, new: True
        )


def notifications(home: Home, key: str) -> list[Notification]:
    found = home.store.records(home.notifications_dir(key), Notification)
    found.sort(key=lambda n: (n.created_at, n.delivery_id))
    return found


def acked(home: Home, key: str) -> set[str]:
    return set(home.store.names(home.acks_dir(key)))


def returned(home: Home, key: str) -> set[str]:
    return set(home.store.names(home.returned_dir(key)))


def unacknowledged(home: Home, key: str, assignment_id: str | None = None) -> list[Notification]:
    return guards.unacknowledged(home, key, notifications(home, key), assignment_id)


def write_ack(home: Home, key: str, notification: Notification) -> bool:
    ack = Ack(delivery_id=notification.delivery_id, crew=notification.crew, acked_at=now())
    return home.store.create_once(
        home.acks_dir(key) / f"{notification.delivery_id}.json",
        encode(ack),
        same=lambda old, new: True,
    )

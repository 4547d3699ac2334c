"""The captain's mail, its one-poll ``wait`` and ``work list`` on plain records: answers,
or ``Unsure``.

A captain that is itself an agent runs ``tell``, ``answer`` and ``wait --timeout 0``
hundreds of times an hour, and importing pydantic alone costs more than their start-up
budget (docs/design.md, "The captain's side"). So, like the crew's commands
(``state.crew_side.fast``), they run here on records read and written by
``state.crew_side.plain``, through the same rules (``state.crew.guards``: the same checks
in the same order, so the same refusals) and with the same bytes written. Whenever a record
is unusual or a crew has anything to settle, this raises ``Unsure`` before anything is
written, and ``state.crew_side.door`` takes the full path (``state.crew``), which repairs,
settles and quarantines as always.
"""

from __future__ import annotations

import os
from typing import Any

from state.clock import now
from state.crew import guards
from state.crew.guards import Context
from state.crew_side import fast, plain
from state.crew_side.plain import Rec
from state.errors import CaptainError
from state.home import Home
from state.ids import MESSAGE, WORK, new_id
from state.inputs import check_text, crew_key
from state.vocab import HOLDS_SLOT
from state.work import paging, seen

__all__ = ["answer", "last_message", "notifications", "poll", "public", "tell", "work_page"]


def last_message(home: Home, key: str, assignment_id: str) -> Rec | None:
    """``mailbox.last_message``: the newest mail on ``assignment_id`` (any incarnation's)."""
    mail = fast._messages(home, key, home.store.names(home.mail_dir(key)))
    on_assignment = [m for m in mail if m.assignment_id == assignment_id]
    return on_assignment[-1] if on_assignment else None


def notifications(home: Home, key: str) -> list[Rec]:
    """``mailbox.notifications``: the crew's notifications, oldest first."""
    directory = home.notifications_dir(key)
    found = []
    for name in home.store.names(directory):
        n = plain.read(home.store, directory / f"{name}.json", "Notification")
        if n is None:
            raise plain.Unsure(f"{name} vanished")
        found.append(n)
    found.sort(key=lambda n: (n.created_at, n.delivery_id))
    return found


def _write_mail(
    home: Home,
    key: str,
    snapshot: Rec,
    kind: str,
    text: str,
    message_id: str,
    question_id: str | None = None,
) -> Rec:
    """``protocol._write_mail``: the same record, byte for byte."""
    message = Rec(
        schema_=1,
        message_id=message_id,
        crew=snapshot.name,
        incarnation_id=snapshot.incarnation_id,
        assignment_id=snapshot.assignment.assignment_id,
        kind=kind,
        text=text,
        question_id=question_id,
        queued_at=now(),
        sender="captain",
    )
    home.store.create_once(
        home.mail_dir(key) / f"{message_id}.json", plain.encode(message, "Message")
    )
    return message


def tell(home: Home, name: str, text: str, *, assignment_id: str, ctx: Context) -> Rec:
    """``protocol.tell``."""
    guards.check_captain(ctx, "tell")
    key = crew_key(name)
    check_text(text, "message")
    with home.store.lock(guards.lock_name(key)):
        snapshot = guards.tell_turn(
            home, key, name, text, assignment_id, fast.open_locked, last_message
        )
        return _write_mail(home, key, snapshot, "tell", text, new_id(MESSAGE))


def _write_ack(home: Home, key: str, n: Rec) -> None:
    """``mailbox.write_ack``: an ack that already exists means 'acknowledged'."""
    ack = Rec(schema_=1, delivery_id=n.delivery_id, crew=n.crew, acked_at=now())
    home.store.create_once(
        home.acks_dir(key) / f"{n.delivery_id}.json",
        plain.encode(ack, "Ack"),
        same=lambda old, new: True,
    )


def answer(
    home: Home, name: str, question_id: str, text: str, *, assignment_id: str, ctx: Context
) -> Rec:
    """``protocol.answer``: the answer mail, then the ack of the question's notification."""
    guards.check_captain(ctx, "answer")
    key = crew_key(name)
    check_text(text, "answer")
    with home.store.lock(guards.lock_name(key)):
        snapshot = guards.answer_turn(home, key, name, question_id, assignment_id, fast.open_locked)
        acked = set(home.store.names(home.acks_dir(key)))
        asked = [  # read before anything is written: an unusual one is Unsure here
            n
            for n in notifications(home, key)
            if n.delivery_id not in acked
            and n.assignment_id == snapshot.assignment.assignment_id
            and n.status == "asked"
            and n.question_id == question_id
        ]
        message = _write_mail(
            home,
            key,
            snapshot,
            "answer",
            text,
            guards.answer_id(question_id),
            question_id=question_id,
        )
        for n in asked:
            _write_ack(home, key, n)
        return message


def _mark_returned(home: Home, key: str, n: Rec) -> bool:
    """``notify._mark_returned``."""
    record = Rec(schema_=1, delivery_id=n.delivery_id, crew=n.crew, returned_at=now())
    return home.store.create_once(
        home.returned_dir(key) / f"{n.delivery_id}.json",
        plain.encode(record, "Returned"),
        same=lambda old, new: True,
    )


def poll(home: Home, name: str | None, *, ctx: Context) -> Rec | None:
    """``notify.wait(timeout=0)`` without ``--ack``: the oldest notification not yet
    returned, marked returned, or None. ``Unsure`` when a crew in scope has anything to
    settle (its newest event's records are not all written, or it is done or dismissed:
    the full path settles those)."""
    guards.check_captain(ctx, "wait")
    keys = guards.scope(home, name)
    for key in keys:
        with home.store.lock(guards.lock_name(key)):
            fast.open_locked(home, key)
    return guards.take(home, guards.scope(home, name), notifications, _mark_returned)


# -- work list --------------------------------------------------------------------------------


def _item(home: Home, work_id: str) -> Rec | None:
    """The file ledger's ``item`` (None: not an item), only when its cache is exactly as new
    as its events: what the full path would return without folding anything."""
    paging.check_work_id(work_id)
    if not os.path.lexists(seen.first_event(home.root, work_id)):
        return None
    seqs = home.store.seqs(home.store.dir("work", work_id, "events"))
    found = plain.read(home.store, home.store.dir("work", work_id) / "item.json", "WorkItem")
    if found is None or not seqs or found.seq != seqs[-1] or found.work_id != work_id:
        raise plain.Unsure("the item's cache is missing or not as new as its events")
    return found


def work_page(
    home: Home, *, state: str | None, source: str | None, limit: int, after: str | None
) -> tuple[list[Rec], str | None]:
    """``ledger.page`` on a home whose ledger is its own files; ``Unsure`` on a database
    ledger, or when an item's cache is behind, missing or unusual (the full path folds,
    repairs and quarantines)."""
    from state.work import naming  # here: the mail and wait need none

    paging.check_filters(state, source, limit)
    paging.check_cursor(after)
    if not naming.in_files(*naming.named(home)):  # not its URL's parser: what it costs
        raise plain.Unsure("a ledger named elsewhere (a database): its driver answers")
    try:
        entries = os.scandir(home.store.dir("work", create=False))
    except FileNotFoundError:
        entries = None
    ids = sorted(
        e.name
        for e in entries or ()
        if e.name.startswith(WORK + "_") and e.is_dir(follow_symlinks=False)
    )
    out: list[Rec] = []
    for work_id in ids:
        if after is not None and work_id <= after:
            continue
        try:
            item = _item(home, work_id)
        except CaptainError:
            raise plain.Unsure(f"{work_id} is not a work ID: the full path skips it") from None
        if item is None or (state and item.state != state) or (source and item.source != source):
            continue
        if len(out) == limit:
            return out, out[-1].work_id
        out.append(item)
    return out, None


def public(item: Rec) -> dict[str, Any]:
    """``ledger.public(home, item)`` of a listing: what may be shown, never the input."""
    hidden = ("schema", "seq", "attempts", "cancel_requested")
    row: dict[str, Any] = {k: v for k, v in item.model_dump().items() if k not in hidden}
    row["slot"] = item.state in HOLDS_SLOT
    return row

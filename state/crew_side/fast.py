"""The crew-side commands' fast path: answers from plain records, or ``Unsure``.

A crew command runs in an agent's pane on every tool call and every stop. Importing
pydantic and validating one model costs ~270 ms on the 2-core machine docs/design.md budgets
for (150 ms for the whole command), so ``check``, ``inbox``, ``ask`` and the Stop hook run
here on records read and written by ``state.crew_side.plain``, through the same rules and turns
(``state.crew.guards``) the protocol uses. Whenever a record is unusual, the crew's snapshot is
behind its events, or the newest event's records are not all written yet (a writer was
killed), this raises ``Unsure`` before anything is delivered or written, and the caller
takes the full path, which repairs, settles and quarantines as always.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path

from state.clock import now
from state.crew import guards
from state.crew.guards import Context, Verdict
from state.crew_side import plain
from state.crew_side.plain import Rec, Unsure
from state.home import Home
from state.ids import DELIVERY, QUESTION, WORK, derive, new_id
from state.inputs import check_text, crew_key, summarize
from state.work import seen

__all__ = ["ask", "check", "crew", "inbox", "snapshot"]


def snapshot(home: Home, key: str) -> Rec | None:
    """The crew's current snapshot (None for an unknown crew), only when the cache is
    exactly as new as the events: what ``crewlog.load`` would fold, without folding."""
    if not home.has_crew(key):
        return None
    seqs = home.event_seqs(key)
    found = plain.read(home.store, home.snapshot_path(key), "CrewSnapshot")
    if found is None or not seqs or found.seq != seqs[-1]:
        raise Unsure("the snapshot is missing or not as new as the events")
    return found


def _exists(path: Path) -> None:
    if not path.exists():
        raise Unsure(f"{path.name} is not written yet")


def open_locked(home: Home, key: str) -> Rec | None:
    """``crewlog.open_locked`` when there is nothing to repair or settle: the snapshot is
    current and every record its newest event implies exists."""
    found = snapshot(home, key)
    if found is None:
        return None
    event = plain.read(home.store, home.event_path(key, found.seq), "event")
    if event is None:
        raise Unsure("the newest event vanished")
    if event.type in ("recruited", "assigned"):
        _exists(home.mail_dir(key) / f"{event.assignment.message_id}.json")
        if not seen.known(home, derive(WORK, event.assignment.assignment_id)):
            raise Unsure("the assignment's work item is not written yet")
    elif event.type == "asked":
        _exists(home.notifications_dir(key) / f"{event.delivery_id}.json")
    elif event.type not in ("launched", "budget_set"):  # these two imply no other record
        raise Unsure(f"a {event.type} event is settled by the full path")
    return found


def check(
    home: Home, name: str, action: str, paths: list[str], *, assignment_id: str | None, ctx: Context
) -> Verdict:
    """``protocol.check`` on the cached snapshot."""
    return guards.check(
        name, action, paths, lambda key: snapshot(home, key), assignment_id=assignment_id, ctx=ctx
    )


def crew(home: Home, ctx: Context) -> tuple[str, Rec]:
    """This crew process's own live snapshot (a hook's ``_current``), or a refusal."""
    return guards.current_crew(ctx, lambda key: snapshot(home, key))


# -- mail -------------------------------------------------------------------------------------


def _messages(home: Home, key: str, names: list[str]) -> list[Rec]:
    directory = home.mail_dir(key)
    found = []
    for name in names:
        m = plain.read(home.store, directory / f"{name}.json", "Message")
        if m is None:
            raise Unsure(f"{name} vanished")
        found.append(m)
    found.sort(key=lambda m: (m.queued_at, m.message_id))
    return found


def unread(home: Home, key: str, found: Rec) -> list[Rec]:
    """``mailbox.unread``: this incarnation's queued mail, oldest first."""
    return [
        m
        for m in _messages(home, key, guards.unread_names(home, key))
        if m.incarnation_id == found.incarnation_id
    ]


def mark_read(home: Home, key: str, batch: list[Rec], via: str) -> None:
    """``mailbox.mark_read``: a receipt that already exists means 'read'."""
    directory = home.receipts_dir(key)
    for m in batch:
        receipt = Rec(
            schema_=1,
            message_id=m.message_id,
            crew=m.crew,
            assignment_id=m.assignment_id,
            read_at=now(),
            via=via,
        )
        home.store.create_once(
            directory / f"{m.message_id}.json",
            plain.encode(receipt, "Receipt"),
            same=lambda old, new: True,
        )


def inbox(
    home: Home,
    name: str,
    *,
    deliver: Callable[[list[Rec]], None],
    ctx: Context,
    via: str = "inbox",
) -> list[Rec]:
    """``protocol.inbox``; ``Unsure`` only before anything is delivered."""
    return guards.inbox(
        home,
        name,
        deliver=deliver,
        ctx=ctx,
        via=via,
        open_locked=open_locked,
        unread=unread,
        mark_read=mark_read,
    )


# -- ask --------------------------------------------------------------------------------------


def ask(home: Home, name: str, text: str, *, assignment_id: str | None, ctx: Context) -> Rec:
    """``protocol.ask``: the same event, notification and snapshot, byte for byte."""
    key = crew_key(name)
    check_text(text, "question")
    with home.store.lock(guards.lock_name(key)):
        found, assignment_id = guards.crew_turn(
            home, key, name, ctx, assignment_id, guards.ASK_PENDING, open_locked
        )
        mail = [
            m
            for m in _messages(home, key, home.store.names(home.mail_dir(key)))
            if m.assignment_id == assignment_id
        ]
        event = Rec(
            schema_=1,
            seq=found.seq + 1,
            at=now(),
            actor="crew" if ctx.role == "crew" else "captain",
            type="asked",
            assignment_id=assignment_id,
            question_id=new_id(QUESTION),
            delivery_id=new_id(DELIVERY),
            text=text,
            queued_at=mail[-1].queued_at if mail else None,
        )
        _append_asked(home, key, found, event)
    return event


def _append_asked(home: Home, key: str, found: Rec, event: Rec) -> None:
    """``crewlog.append`` of an ``asked`` event: the event, its notification (``settle``),
    then the snapshot (``fold``)."""
    store = home.store
    store.create_once(home.event_path(key, event.seq), plain.encode(event, "Asked"))
    fields = {k: v for k, v in vars(found).items() if k != "_json"}
    after = Rec(
        **{
            **fields,
            "seq": event.seq,
            "question": Rec(question_id=event.question_id, text=event.text, asked_at=event.at),
        }
    )
    notice = Rec(
        schema_=1,
        delivery_id=event.delivery_id,
        status="asked",
        crew=found.name,
        assignment_id=event.assignment_id,
        summary=summarize(event.text),
        queued_at=event.queued_at,
        created_at=event.at,
        question_id=event.question_id,
        message_id=None,
        request_id=None,
    )
    path = home.notifications_dir(key) / f"{event.delivery_id}.json"
    if not os.path.lexists(path):  # as crewlog._ensure: an existing record costs one stat
        store.create_once(path, plain.encode(notice, "Notification"), same=lambda old, new: True)
    store.publish(home.snapshot_path(key), plain.encode(after, "CrewSnapshot"))

"""The crew's commands, one function each: the only door the CLI and the hooks call; and
the captain's mail (``tell``, ``answer``) and one-poll ``wait``, the same way.

Each tries ``state.crew_side.fast`` (plain records, no pydantic: a crew command runs on
every tool call and must start in well under 150 ms) and, when the fast path is ``Unsure``
(a record is unusual, a writer was killed mid-way, the snapshot is behind), takes the full
path in ``state.crew``, which repairs, settles and quarantines. ``Unsure`` is always raised
before anything is delivered or written, so a caller never sees it and nothing happens twice.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from state.crew.guards import Context, Verdict, current_crew
from state.crew_side import fast
from state.crew_side.plain import Rec, Unsure
from state.home import Home

if TYPE_CHECKING:  # not at run time: the fast path pays no pydantic
    from state.records import Asked, CrewSnapshot, Message, Notification


def check(
    home: Home, name: str, action: str, paths: list[str], *, assignment_id: str | None, ctx: Context
) -> Verdict:
    """May the crew take ``action`` on ``paths``? Executes nothing."""
    try:
        return fast.check(home, name, action, paths, assignment_id=assignment_id, ctx=ctx)
    except Unsure:
        from state.crew import protocol

        return protocol.check(home, name, action, paths, assignment_id=assignment_id, ctx=ctx)


def ask(
    home: Home, name: str, text: str, *, assignment_id: str | None, ctx: Context
) -> Asked | Rec:
    """Record the crew's one pending question; returns its ``asked`` event."""
    try:
        return fast.ask(home, name, text, assignment_id=assignment_id, ctx=ctx)
    except Unsure:
        from state.crew import protocol

        return protocol.ask(home, name, text, assignment_id=assignment_id, ctx=ctx)


def inbox(
    home: Home, name: str, *, deliver: Callable[[list[Any]], None], ctx: Context, via: str = "inbox"
) -> bool:
    """Unread mail to ``deliver``, oldest first; receipts only once it returned.

    A receipt is the proof of delivery, so only the crew's own reading writes one: run by
    the captain (no ``CAPTAIN_ROLE=crew``) this is a peek that marks nothing read. Returns
    whether receipts were written."""
    if ctx.role != "crew":
        from state.crew import crewlog, guards, mailbox

        guards.inbox(
            home,
            name,
            deliver=deliver,
            ctx=ctx,
            via=via,
            open_locked=crewlog.open_locked,
            unread=mailbox.unread,
            mark_read=lambda *_: None,
        )
        return False
    try:
        fast.inbox(home, name, deliver=deliver, ctx=ctx, via=via)
    except Unsure:
        from state.crew import protocol

        protocol.inbox(home, name, deliver=deliver, ctx=ctx, via=via)
    return True


def load(home: Home, key: str) -> CrewSnapshot | Rec | None:
    """The crew's current snapshot, or None for an unknown crew."""
    try:
        return fast.snapshot(home, key)
    except Unsure:
        from state.crew import crewlog

        return crewlog.load(home, key)[0]


def current(home: Home, ctx: Context) -> tuple[str, CrewSnapshot | Rec]:
    """(key, snapshot) of the calling crew, refusing unknown, dismissed or stale ones."""
    try:
        return fast.crew(home, ctx)
    except Unsure:
        return current_crew(ctx, lambda key: load(home, key))


# -- the captain's side (state.crew_side.captain) ---------------------------------------------


def tell(home: Home, name: str, text: str, *, assignment_id: str, ctx: Context) -> Message | Rec:
    """The captain's follow-up mail on the crew's assignment."""
    from state.crew_side import captain

    try:
        return captain.tell(home, name, text, assignment_id=assignment_id, ctx=ctx)
    except Unsure:
        from state.crew import protocol

        return protocol.tell(home, name, text, assignment_id=assignment_id, ctx=ctx)


def answer(
    home: Home, name: str, question_id: str, text: str, *, assignment_id: str, ctx: Context
) -> Message | Rec:
    """The captain's answer to the crew's pending question (it acknowledges the question's
    notification)."""
    from state.crew_side import captain

    try:
        return captain.answer(home, name, question_id, text, assignment_id=assignment_id, ctx=ctx)
    except Unsure:
        from state.crew import protocol

        return protocol.answer(home, name, question_id, text, assignment_id=assignment_id, ctx=ctx)


def poll(home: Home, name: str | None, *, ctx: Context) -> Notification | Rec | None:
    """``wait --timeout 0`` (no ``--ack``): the oldest notification not yet returned, now
    returned, or None."""
    from state.crew_side import captain

    try:
        return captain.poll(home, name, ctx=ctx)
    except Unsure:
        from state.crew import notify

        return notify.wait(home, name, timeout=0, ctx=ctx)


def work_page(
    home: Home, *, state: str | None, source: str | None, limit: int, after: str | None
) -> tuple[list[Any], str | None]:
    """``work list``'s page of items (``ledger.page``), and the cursor of the next."""
    from state.crew_side import captain

    try:
        return captain.work_page(home, state=state, source=source, limit=limit, after=after)
    except Unsure:
        from state.work import ledger

        return ledger.page(home, state=state, source=source, limit=limit, after=after)


def work_public(home: Home, item: Any) -> dict[str, Any]:
    """What a listing shows of an item from ``work_page`` (``ledger.public``)."""
    if isinstance(item, Rec):
        from state.crew_side import captain

        return captain.public(item)
    from state.work import ledger

    return ledger.public(home, item)


def status_rows(home: Home, include_dismissed: bool) -> list[Any]:
    """``status``'s crew rows (``state.crew.roster.Row``: each row with the snapshot and
    the doorbell's stamp it was made from), from plain records or else the models."""
    from state.crew import roster
    from state.crew_side import status

    try:
        return status.rows(home, include_dismissed)
    except Unsure:
        from state.crew import protocol

        return roster.rows(home, include_dismissed, protocol.READERS)


def workspace_id(home: Home) -> str | None:
    """The home's workspace ID (``state.work.tokens.workspace_id``: minted on first use,
    None in a read-only look at a home that has none yet)."""
    from state.crew_side import status

    try:
        return status.workspace_id(home)
    except Unsure:
        from state.work import tokens

        return tokens.workspace_id(home)

"""The captain's mail: tell (with or without a new budget), answer, and the doorbell right
after it.

Apart from ``crew_ops`` on purpose: a captain that is itself an agent runs ``tell`` and
``answer`` hundreds of times an hour, so they import only ``state.crew_side.door`` (plain
records, no pydantic: docs/design.md, "The captain's side") and the doorbell only when
there is a pane to ring.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, NamedTuple

from state.crew import guards
from state.crew.guards import CAPTAIN, Context
from state.crew_side import door
from state.errors import CaptainError
from state.home import Home
from state.inputs import crew_key

if TYPE_CHECKING:  # the doorbell itself is imported only to ring (ring below)
    from captain_tui.runtime.doorbell import Gate, Rung
    from state.crew_side.plain import Rec
    from state.records import Message


class Bell(NamedTuple):  # not a dataclass: importing dataclasses costs ~9 ms of a start
    """One ring's outcome, when there was something to ring."""

    action: Rung
    gate: Gate | None = None
    detail: str = ""


def ring(home: Home, name: str, *, ctx: Context = CAPTAIN) -> Bell | None:
    """One doorbell attempt right after writing mail; the mail is durable whatever happens
    here. None when the crew had nothing new to ring (or no pane to ring it in)."""
    guards.check_captain(ctx, "ring the doorbell")
    if not guards.ringable(door.load(home, crew_key(name))):
        return None  # the doorbell would skip it: not worth importing tmux for
    from captain_tui.runtime import doorbell

    try:
        o = doorbell.ring(home, name)
    except CaptainError as err:
        return Bell("held", "tmux_unavailable", err.message)
    if o.action == "skipped":
        return None
    return Bell(o.action, o.gate, o.detail)


def tell(
    home: Home, name: str, text: str, *, assignment_id: str, ctx: Context = CAPTAIN
) -> Message | Rec:
    return door.tell(home, name, text, assignment_id=assignment_id, ctx=ctx)


def answer(
    home: Home,
    name: str,
    question_id: str,
    text: str,
    *,
    assignment_id: str,
    ctx: Context = CAPTAIN,
) -> Message | Rec:
    return door.answer(home, name, question_id, text, assignment_id=assignment_id, ctx=ctx)


class Told(NamedTuple):
    message: Message | Rec | None  # None: only the budget was changed
    budget_usd: float | None  # the assignment's budget now (None: none)
    crew: str
    assignment_id: str


def tell_with_budget(
    home: Home,
    name: str,
    text: str | None,
    *,
    assignment_id: str,
    ctx: Context = CAPTAIN,
    budget_usd: float | str | None = None,
) -> Told:
    """A follow-up message, a new budget for the assignment (docs/budgets.md), or both:
    the amount is judged before anything is written, then the message, then the budget.
    Without a budget it is ``tell`` on plain records (the common case stays fast)."""
    guards.check_captain(ctx, "tell")
    if budget_usd is None:
        if text is None:
            raise CaptainError(
                "invalid_argument", "tell needs a MESSAGE, --budget-usd AMOUNT, or both."
            )
        message = door.tell(home, name, text, assignment_id=assignment_id, ctx=ctx)
        found = door.load(home, crew_key(name))
        budget_now = getattr(found, "budget_usd", None) if found is not None else None
        return Told(message, budget_now, message.crew, assignment_id)
    from state.crew import budget, protocol

    amount = budget.check_amount(budget_usd)
    said: Message | None = None
    if text is not None:
        said = protocol.tell(home, name, text, assignment_id=assignment_id, ctx=ctx)
    now_set = protocol.set_budget(home, name, amount, assignment_id=assignment_id, ctx=ctx)
    return Told(said, now_set.budget_usd, now_set.name, assignment_id)

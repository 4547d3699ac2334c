"""What each cockpit command does, in a thread worker: a use case, then the sentence the
cockpit confirms with.

The work is ``captain_tui.runtime.ops`` (the same functions the CLI and the HTTP API call);
this module only words the result for a toast. A refusal is a ``CaptainError`` raised before
anything is written; the app shows its code and message.
"""

from __future__ import annotations

from dataclasses import dataclass

from captain_tui.runtime import ops
from state.home import Home


@dataclass(frozen=True)
class Said:
    """A confirmation that is not plain good news: shown with this toast severity."""

    text: str
    severity: str = "information"


def answer(home: Home, crew: str, question_id: str, assignment_id: str, text: str) -> str:
    m = ops.answer(home, crew, question_id, text, assignment_id=assignment_id)
    return f"Answered {m.crew}'s question; the answer is queued as {m.message_id}."


def tell(home: Home, crew: str, assignment_id: str, text: str) -> str:
    m = ops.tell(home, crew, text, assignment_id=assignment_id)
    return f"Told {m.crew}; queued as {m.message_id}."


def assign(home: Home, crew: str, handoff: str, task: str, owns: list[str] | None,
           allow: list[str] | None) -> str:
    spec = ops.assign(home, crew, task, handoff=handoff, owns=owns, allow=allow)
    return f"{crew} has its next assignment, {spec.assignment_id}."


def acknowledge(home: Home, crew: str, delivery_id: str) -> str:
    ops.acknowledge(home, crew, delivery_id)
    return f"Acknowledged {delivery_id}."


def recruit(home: Home, values: dict) -> str:
    """``values`` are the recruit form's fields (``ops.Recruitment``'s names)."""
    r = ops.recruit(home, ops.Recruitment(**values))
    where = "in a new tmux window" if r.pane else "(not launched: start it yourself)"
    if r.queued:
        where = "queued: every ledger slot is held; its window opens when one frees"
    return f"Recruited {r.crew} {where}; assignment {r.assignment_id}."


def _dismissed(d: ops.Dismissal) -> str:
    extra = f"; {len(d.bounced)} unread message(s) bounced" if d.bounced else ""
    pane = {True: "; its window is closed", False: "; its window could NOT be confirmed "
            "closed", None: ""}[d.pane_stopped]
    return f"{extra}{pane}"


def dismiss(home: Home, crew: str) -> str:
    return f"Dismissed {crew}{_dismissed(ops.dismiss(home, crew))}."


def cancel_work(home: Home, work_id: str) -> Said:
    """The outcome says what happened; an assignment's crew is dismissed with it."""
    c = ops.cancel(home, work_id, actor=ops.actor())
    crew = ""
    if c.dismissal is not None:
        d = c.dismissal
        crew = (f" {d.crew} is dismissed{_dismissed(d)}; recruit the name again with the "
                f"handoff {d.assignment_id}.")
    if c.outcome == "cancelled":
        return Said(f"Cancelled {work_id}: the stop is confirmed.{crew}")
    if c.outcome == "already_terminal":
        return Said(f"{work_id} had already finished ({c.item.state}); nothing was done.",
                    "warning")
    return Said(f"The stop of {work_id} could NOT be confirmed: it needs reconciliation "
                f"(generation {c.item.generation}) and keeps its slot. Check its process, then "
                f"resolve it.{crew}", "error")


def replay_work(home: Home, work_id: str, reason: str, target_revision: str | None) -> str:
    item = ops.replay(home, work_id, actor=ops.actor(), reason=reason,
                      target_revision=target_revision)
    return (f"Replayed {work_id} as {item.work_id}: queued, target revision "
            f"{item.target_revision or 'none'}.")


def resolve_work(home: Home, work_id: str, generation: int, to: str, reason: str,
                 runtime_stopped: bool) -> str:
    item = ops.resolve(home, work_id, generation=generation, to=to, reason=reason,
                       actor=ops.actor(), runtime_stopped=runtime_stopped)
    return f"Resolved {work_id} to {item.state}; its slot is free."


def ring(home: Home, crew: str) -> str | None:
    """One doorbell attempt right after writing mail. A sentence only when the captain
    should know (held or bounced); the mail is durable whatever happens here."""
    bell = ops.ring(home, crew)
    if bell is None:
        return None
    if bell.action == "held":
        return f"{crew}'s doorbell is held ({bell.gate}): {bell.detail}. It rings when that " \
               "clears."
    if bell.action == "bounced":
        return f"Mail to {crew} bounced: {bell.detail}."
    return None


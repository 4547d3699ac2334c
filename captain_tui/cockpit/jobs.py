"""What each cockpit command does, in a thread worker: a use case, then the sentence the
cockpit confirms with.

The work is ``captain_tui.usecases`` (the same functions the CLI and the HTTP API call);
this module only words the result for a toast. The caller is always the captain
(``CAPTAIN``): a crew process may not open a cockpit (``captain_tui.cli.main``). A refusal
is a ``CaptainError`` raised before anything is written; the app shows its code and message.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from captain_tui import usecases as ops
from state.crew import crewlog
from state.crew.guards import CAPTAIN
from state.errors import CaptainError
from state.home import Home
from state.inputs import crew_key
from state.vocab import counted, dialog_title, ended, quoted, short
from state.work import ledger
from state.work.ledger_records import WorkItem

# a toast's severity: Textual's ``SeverityLevel``, spelled here because the feed imports these
# jobs and imports no Textual (import contract 3 counts a TYPE_CHECKING import too); mypy
# checks it against Textual's wherever a Said's severity reaches a toast
SeverityLevel = Literal["information", "warning", "error"]


@dataclass(frozen=True)
class Said:
    """A confirmation that is not plain good news: shown with this toast severity."""

    text: str
    severity: SeverityLevel = "information"


def _task_of(home: Home, crew: str, assignment_id: str | None) -> str | None:
    """The task of one of ``crew``'s assignments, while its record still says it."""
    try:
        snapshot, _ = crewlog.load(home, crew_key(crew))
    except CaptainError:
        return None
    if snapshot is None or snapshot.assignment.assignment_id != assignment_id:
        return None
    return snapshot.assignment.task


def task_of(home: Home, item: WorkItem) -> str | None:
    """An assignment item's task, while its crew's record still says it (reads the record:
    call it off the UI thread)."""
    if item.source != "assignment" or not item.crew:
        return None
    return _task_of(home, item.crew, item.assignment_id)


def title(item: WorkItem, task: str | None) -> str:
    """A work item's title, the one rule (the Work panel's rows and every sentence that
    names an item): an assignment's task, a webhook's endpoint, a chat request's requester
    and time — a chat item's input is never shown (docs/ledger.md); never a bare ID."""
    if item.source == "assignment":
        return quoted(short(task)) if task else f"{item.crew or 'a crew'}'s task"
    if item.source == "webhook":
        return f"{item.requester.removeprefix('webhook:')} webhook delivery"
    return f"chat task {item.requester} queued at {item.created_at.astimezone():%H:%M}"


def named(home: Home, item: WorkItem) -> str:
    """A work item as a person knows it, in a sentence: whose task and what it says
    ("Jack's task “Fix the login bug”"), a chat request, a webhook's delivery."""
    return named_as(item, task_of(home, item))


def named_as(item: WorkItem, task: str | None) -> str:
    """``named``, with the task already read (the feed keeps it on the Work panel's row)."""
    if item.source == "assignment" and item.crew:
        return f"{item.crew}'s task {title(item, task)}" if task else f"{item.crew}'s task"
    return f"the {title(item, task)}"


def answer(home: Home, crew: str, question_id: str, assignment_id: str, text: str) -> str:
    m = ops.answer(home, crew, question_id, text, assignment_id=assignment_id, ctx=CAPTAIN)
    return f"Answered {m.crew}'s question; the answer is on its way."


def tell(home: Home, crew: str, assignment_id: str, text: str) -> str:
    m = ops.tell(home, crew, text, assignment_id=assignment_id, ctx=CAPTAIN)
    return f"Told {m.crew}; the message is on its way."


def comment(home: Home, crew: str, path: str, line: int, lines: list[str], text: str) -> str:
    m = ops.comment(home, crew, path, line, lines, text, ctx=CAPTAIN)
    return f"Sent your comment to {m.crew} (a tell on {m.assignment_id}, which stays open)."


def assign(
    home: Home, crew: str, handoff: str, task: str, owns: list[str] | None, allow: list[str] | None
) -> str:
    ops.assign(home, crew, task, handoff=handoff, owns=owns, allow=allow, ctx=CAPTAIN)
    return ended(f"{crew} has its next task: {quoted(short(task))}")


def acknowledge(home: Home, crew: str, delivery_id: str) -> str:
    ops.acknowledge(home, crew, delivery_id, ctx=CAPTAIN)
    return f"Acknowledged {crew}'s notification."


_DECIDED = {
    "allow": "Allowed {crew} to run {what}",
    "allow_session": "Allowed {crew} to run {what}, and the same for the rest of its session",
    "deny": "Denied {crew} {what}; it is told why",
}


def approve(
    home: Home, crew: str, request_id: str, tool: str, decision: str, reason: str = ""
) -> str:
    """``captain approve`` from the cockpit: the same use case, the same rules."""
    ops.approve(home, crew, request_id, decision, reason, ctx=CAPTAIN)
    return ended(_DECIDED[decision].format(crew=crew, what=tool))


def described(status: str, summary: str) -> str:
    """A notification as a person reads it: what happened and what the crew said."""
    return (
        f"{status.replace('_', ' ')} {quoted(short(summary))}"
        if summary.strip()
        else status.replace("_", " ")
    )


def acknowledge_all(home: Home, crew: str, notes: list[tuple[str, str]]) -> str:
    """``x`` on a crew: each of its listed notifications (delivery ID, what it said), oldest
    first. Each acknowledgment is its own durable fact; a refusal stops at that one and
    says so, the ones before it stay acknowledged."""
    for delivery_id, _ in notes:
        ops.acknowledge(home, crew, delivery_id, ctx=CAPTAIN)
    what = "; ".join(said for _, said in notes)
    return ended(f"Acknowledged {crew}'s {counted(len(notes), 'notification')}: {what}")


def recruit(home: Home, values: dict, *, socket: str) -> str:
    """``values`` are the recruit form's fields (``ops.Recruitment``'s names); ``socket`` is
    the cockpit's tmux server, where the new window opens."""
    r = ops.recruit(home, ops.Recruitment(**values, socket=socket), ctx=CAPTAIN)
    where = "in a new tmux window" if r.pane else "(not launched: start it yourself)"
    if r.queued:
        where = "queued: every ledger slot is held; its window opens when one frees"
    return ended(f"Recruited {r.crew} {where}; its task: {quoted(short(values.get('task') or ''))}")


def _dismissed(d: ops.Dismissal) -> str:
    return ops.dismissal_words(d, place="window")


def unblock(home: Home, crew: str, dialog: str) -> str | Said:
    """Choose the safe option of ``crew``'s start-up ``dialog`` (runtime/dialogs.py)."""
    from captain_tui.runtime import dialogs

    done = dialogs.answer(home, crew, dialog, ctx=CAPTAIN)
    what = f"{done.crew}'s {dialog_title(done.dialog)} dialog"
    if done.cleared:
        return f"Answered {what}: {quoted(done.option)}."
    return Said(
        f"Chose {quoted(done.option)} on {what}, but it is still on screen: jump to the "
        "pane (enter) and look.",
        "warning",
    )


def dismiss(home: Home, crew: str) -> str:
    return f"Dismissed {crew}{_dismissed(ops.dismiss(home, crew, ctx=CAPTAIN))}."


def land_preview(home: Home, crew: str) -> str:
    """What the land confirmation says: how it will land, and the landing queue now."""
    mode = home.setting("review", "land")
    test = home.setting("review", "test_command")
    how = f"{'merged' if mode == 'merge' else 'rebased'}" + (
        f", after {quoted(short(test))} passes on the result" if test.strip() else ""
    )
    queue = ops.landing_queue(home)
    waiting = (
        "The landing queue: "
        + "; ".join(
            f"{q['crew'] or '?'} {q['state']} onto {q['base_branch'] or '?'}" for q in queue
        )
        + "."
        if queue
        else "No other land is running or waiting."
    )
    return (
        f"{crew}'s branch will land on the branch it started from ({how}); its uncommitted "
        "files are committed first. Nothing moves unless every check passes: a conflict, a "
        "path outside its --owns or uncommitted changes in your checkout are refused. " + waiting
    )


def land(home: Home, crew: str, assignment_id: str) -> Said:
    g = ops.land(home, crew, assignment_id=assignment_id, operator=ops.actor(), ctx=CAPTAIN)
    r = g.landed
    text = (
        f"Landed {crew}'s work on {r.base_branch} at {r.commit[:12]} ({r.mode}, "
        f"{counted(r.files, 'file')})."
    )
    if r.checkout_problem:
        return Said(f"{text} {r.checkout_problem}.", "warning")
    return Said(text)


def cancel_work(home: Home, work_id: str) -> Said:
    """The outcome says what happened; an assignment's crew is dismissed with it."""
    c = ops.cancel(home, work_id, actor=ops.actor(), ctx=CAPTAIN)
    what = named(home, c.item)
    crew = ""
    if c.dismissal is not None:
        d = c.dismissal
        crew = (
            f" {d.crew} is dismissed{_dismissed(d)}; recruiting the name again "
            "(r) offers to carry its work on."
        )
    if c.outcome == "cancelled":
        return Said(f"Cancelled {what}: the stop is confirmed.{crew}")
    if c.outcome == "already_terminal":
        return Said(
            f"{_upper(what)} had already finished ({c.item.state}); nothing was done.", "warning"
        )
    return Said(
        f"The stop of {what} could NOT be confirmed: it needs reconciliation and "
        f"keeps its slot. Check its process, then resolve it.{crew}",
        "error",
    )


def replay_work(home: Home, work_id: str, reason: str, target_revision: str | None) -> str:
    item = ops.replay(
        home,
        work_id,
        actor=ops.actor(),
        reason=reason,
        target_revision=target_revision,
        ctx=CAPTAIN,
    )
    revision = f" at revision {item.target_revision}" if item.target_revision else ""
    return f"Replayed {named(home, ledger.get(home, work_id))}: queued again{revision}."


def resolve_work(
    home: Home, work_id: str, generation: int, to: str, reason: str, runtime_stopped: bool
) -> str:
    item = ops.resolve(
        home,
        work_id,
        generation=generation,
        to=to,
        reason=reason,
        actor=ops.actor(),
        runtime_stopped=runtime_stopped,
        ctx=CAPTAIN,
    )
    return f"Resolved {named(home, item)} to {item.state}; its slot is free."


def _upper(text: str) -> str:
    return text[:1].upper() + text[1:]


def ring(home: Home, crew: str) -> str | None:
    """One doorbell attempt right after writing mail. A sentence only when the captain
    should know (held or bounced); the mail is durable whatever happens here."""
    bell = ops.ring(home, crew, ctx=CAPTAIN)
    if bell is None:
        return None
    if bell.action == "held":
        return (
            ended(f"{crew}'s doorbell is held ({bell.gate}): {bell.detail}")
            + " It rings when that clears."
        )
    if bell.action == "bounced":
        return ended(f"Mail to {crew} bounced: {bell.detail}")
    return None

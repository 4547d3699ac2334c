"""What the cockpit's commands do to the home, as plain functions (run in thread workers).

Each one goes through ``state``'s protocol functions, so the cockpit obeys exactly the
rules the CLI does: a refusal is a ``CaptainError`` raised before anything is written, and
the app shows its code and message. Each returns the sentence the cockpit confirms with.
"""

from __future__ import annotations

import os
from dataclasses import dataclass

from captain_tui.runtime import launch
from state.crew import notify, protocol
from state.errors import CaptainError
from state.home import Home
from state.inputs import crew_key
from state.work import replay


def answer(home: Home, crew: str, question_id: str, assignment_id: str, text: str) -> str:
    m = protocol.answer(home, crew, question_id, text, assignment_id=assignment_id)
    return f"Answered {m.crew}'s question; the answer is queued as {m.message_id}."


def tell(home: Home, crew: str, assignment_id: str, text: str) -> str:
    m = protocol.tell(home, crew, text, assignment_id=assignment_id)
    return f"Told {m.crew}; queued as {m.message_id}."


def assign(home: Home, crew: str, handoff: str, task: str, owns: list[str] | None,
           allow: list[str] | None) -> str:
    spec = protocol.assign(home, crew, task, handoff=handoff, owns=owns, allow=allow)
    return f"{crew} has its next assignment, {spec.assignment_id}."


def acknowledge(home: Home, crew: str, delivery_id: str) -> str:
    notify.acknowledge(home, crew, delivery_id)
    return f"Acknowledged {delivery_id}."


@dataclass(frozen=True)
class RecruitForm:
    name: str
    task: str
    agent: str = "shell"  # shell | claude | codex | program
    command: str | None = None  # for agent "program"
    owns: tuple[str, ...] = ()
    allow: tuple[str, ...] = ()
    cwd: str | None = None
    launch: bool = True  # False: record only, like --no-launch


def recruit(home: Home, form: RecruitForm) -> str:
    if form.cwd and not os.path.isdir(os.path.expanduser(form.cwd)):
        raise CaptainError("invalid_path", f"{form.cwd} is not a directory.")
    cwd = os.path.abspath(os.path.expanduser(form.cwd or "."))
    agent = "program" if form.command else form.agent
    if agent == "program" and not form.command:
        raise CaptainError("invalid_argument", "a program crew needs a command to run.")
    start = later = None
    if form.launch:
        start = launch.launcher(home, name=form.name, key=crew_key(form.name), agent=agent,
                                program=form.command, cwd=cwd)
        later = launch.later(program=form.command, cwd=cwd)
    r = protocol.recruit(home, form.name, form.task, owns=list(form.owns),
                         allow=list(form.allow), cwd=cwd, agent=agent, launch=start,
                         later=later)
    where = "in a new tmux window" if form.launch else "(not launched: start it yourself)"
    if r.queued:
        where = "queued: every ledger slot is held; its window opens when one frees"
    return f"Recruited {r.crew} {where}; assignment {r.assignment_id}."


def dismiss(home: Home, crew: str) -> str:
    """Close the window first (like ``captain dismiss``), then retire the crew."""
    from state.crew import crewlog

    snapshot, _ = crewlog.load(home, crew_key(crew))
    closed = None
    if snapshot is not None and snapshot.dismissed_at is None:
        closed = launch.close_pane(snapshot.pane)
    bounced = protocol.dismiss(home, crew, stopped=closed)
    extra = f"; {len(bounced)} unread message(s) bounced" if bounced else ""
    pane = {True: "; its window is closed", False: "; its window could NOT be confirmed "
            "closed", None: ""}[closed]
    return f"Dismissed {crew}{extra}{pane}."


# -- the work ledger ----------------------------------------------------------------------


@dataclass(frozen=True)
class Said:
    """A confirmation that is not plain good news: shown with this toast severity."""

    text: str
    severity: str = "information"


def cancel_work(home: Home, work_id: str) -> Said:
    """``captain work cancel``: the runtime stops the attempt; the outcome says what happened."""
    from captain_tui.cli import work as cli_work
    from captain_tui.runtime import ledger_probe as ledger_runtime
    from state.work import ledger

    result = ledger.cancel(home, work_id, actor=cli_work.actor(), stop=ledger_runtime.stop)
    item = result.item
    if result.outcome == "cancelled":
        return Said(f"Cancelled {work_id}: the stop is confirmed.")
    if result.outcome == "already_terminal":
        return Said(f"{work_id} had already finished ({item.state}); nothing was done.",
                    "warning")
    return Said(f"The stop of {work_id} could NOT be confirmed: it needs reconciliation "
                f"(generation {item.generation}) and keeps its slot. Check its process, then "
                "resolve it.", "error")


def replay_work(home: Home, work_id: str, reason: str, target_revision: str | None) -> str:
    from captain_tui.cli import work as cli_work

    item = replay.replay(home, work_id, actor=cli_work.actor(), reason=reason,
                         target_revision=target_revision)
    return (f"Replayed {work_id} as {item.work_id}: queued, target revision "
            f"{item.target_revision or 'none'}.")


def resolve_work(home: Home, work_id: str, generation: int, to: str, reason: str,
                 runtime_stopped: bool) -> str:
    from captain_tui.cli import work as cli_work
    from state.work import ledger

    item = ledger.resolve(home, work_id, generation=generation, to=to, reason=reason,
                          operator=cli_work.actor(), runtime_stopped=runtime_stopped)
    return f"Resolved {work_id} to {item.state}; its slot is free."


def ring(home: Home, crew: str) -> str | None:
    """One doorbell attempt right after writing mail. Returns a sentence only when the
    captain should know (held or bounced); the mail is durable whatever happens here."""
    from captain_tui.runtime import doorbell

    try:
        o = doorbell.ring(home, crew)
    except CaptainError as err:
        return f"{crew}'s doorbell is held (tmux_unavailable): {err.message}"
    if o.action == "held":
        return f"{crew}'s doorbell is held ({o.gate}): {o.detail}. It rings when that clears."
    if o.action == "bounced":
        return f"Mail to {crew} bounced: {o.detail}."
    return None


def jump(pane, env=None) -> str | None:
    """Switch this tmux client to the crew's pane; returns the attach command instead when
    the cockpit is not inside tmux, or inside another tmux server."""
    from captain_tui.runtime.tmux import Tmux

    env = os.environ if env is None else env
    inside = env.get("TMUX", "").split(",")[0]
    if inside and os.path.realpath(inside) == os.path.realpath(pane.socket):
        Tmux(pane.socket).switch_to(pane)
        return None
    return launch.attach_command(pane)

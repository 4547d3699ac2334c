"""A crew that died: one ``error`` notification per death, and its work item failed.

The runtime (``captain_tui.runtime.death_watch``) sees a death — tmux's ``pane-died`` hook, or
the slow probe for a window or server that vanished — and calls ``record``. Everything a
death means is decided here, under the crew lock:

- only a live crew (not dismissed) of the same incarnation can die; a dismissal closes the
  pane on purpose and is never an error;
- a crew whose current assignment is ``done`` has finished: its process ending afterwards
  (the agent quits, the program returns) is the normal end of work, not an error;
- one death, one notification: its delivery ID is derived from the incarnation
  (``inc_X`` -> ``dlv_X``), so the hook run twice, the probe and a second runner all make
  the same record and ``create_once`` keeps one;
- the assignment's work item, while ``running`` on the dead pane, is reported ``failed`` at
  its current generation through the ledger (fenced like any report). The process is
  confirmed gone and never reported success: not ``cancelled`` (nobody asked for a stop)
  and not ``needs_reconciliation`` (nothing is left unverified). docs/ledger.md says why.
"""

from __future__ import annotations

import contextlib
import signal as signals
from dataclasses import dataclass
from datetime import datetime

from state.clock import now
from state.crew import crewlog, guards, mailbox, roster
from state.errors import CaptainError
from state.home import Home
from state.inputs import crew_key, for_terminal, summarize
from state.records import CrewSnapshot, Notification, PaneLocator
from state.store import encode
from state.vocab import SUMMARY_MAX

EXITED, KILLED, WINDOW_GONE, SERVER_GONE = "exited", "killed", "window_gone", "server_gone"
LAST_LINES = 10
LINE_MAX = 160  # one line of the pane, as the summary shows it
ACTOR = "captain"  # who reports the attempt failed: the runtime, on the captain's side


@dataclass(frozen=True)
class Death:
    """What the runtime saw. ``how``: exited (``status``), killed (``signal``), the window
    or its session closed outside captain, or the tmux server gone."""

    how: str
    status: int | None = None
    signal: int | None = None
    last_lines: tuple[str, ...] = ()
    pane_id: str | None = None  # the dead pane; None: not known (server gone)

    def words(self) -> str:
        if self.how == EXITED:
            return (
                f"its process exited with status {self.status}"
                if self.status is not None
                else "its process ended"
            )
        if self.how == KILLED:
            try:
                name = f" ({signals.Signals(self.signal).name})" if self.signal is not None else ""
            except (ValueError, TypeError):
                name = ""
            return f"its process was killed by signal {self.signal}{name}"
        if self.how == WINDOW_GONE:
            return (
                "its tmux window was closed outside captain (the window or its session "
                "was killed), and its process with it"
            )
        return "its tmux server is gone, and its process with it"


def delivery_id(incarnation_id: str) -> str:
    """The one ``error`` delivery an incarnation can have (``state.crew.roster``, where
    ``status`` reads it without the models)."""
    return roster.death_delivery_id(incarnation_id)


def reported(home: Home, key: str, incarnation_id: str) -> bool:
    """Whether the death is recorded: one stat, creating nothing (probes ask often)."""
    return roster.death_reported(home, key, incarnation_id)


def mortal_pane(
    snapshot: CrewSnapshot | None, incarnation_id: str | None = None
) -> PaneLocator | None:
    """The crew's pane when its death would be an error now (live, launched, the same
    incarnation, its assignment not done), else None."""
    if (
        snapshot is not None
        and snapshot.dismissed_at is None
        and snapshot.done_at is None
        and (incarnation_id is None or snapshot.incarnation_id == incarnation_id)
    ):
        return snapshot.pane
    return None


def record(
    home: Home, name: str, incarnation_id: str, death: Death, *, at: datetime | None = None
) -> Notification | None:
    """Record one death; returns the notification when this call wrote it, None when it is
    not an error (dismissed, done, another incarnation or pane) or was already recorded.

    Idempotent and repairing: the work item is settled even when the notification exists
    (a recorder killed between the two is finished by the next one)."""
    key = crew_key(name)
    at = at or now()
    with home.store.lock(guards.lock_name(key)):
        snapshot = crewlog.open_locked(home, key)
        pane = mortal_pane(snapshot, incarnation_id)
        if snapshot is None or pane is None:
            return None
        if death.pane_id is not None and death.pane_id != pane.pane_id:
            return None  # a pane this crew no longer runs in
        item_words = _fail_work(home, snapshot, death)
        path = home.notifications_dir(key) / f"{delivery_id(incarnation_id)}.json"
        if path.exists():
            return None
        assignment_id = snapshot.assignment.assignment_id
        last = mailbox.last_message(home, key, assignment_id)
        n = Notification(
            delivery_id=delivery_id(incarnation_id),
            status="error",
            crew=snapshot.name,
            assignment_id=assignment_id,
            summary=summary(snapshot, death, item_words),
            queued_at=last.queued_at if last else None,
            created_at=at,
        )
        created = home.store.create_once(path, encode(n), same=lambda old, new: True)
        return n if created else None


def _fail_work(home: Home, snapshot: CrewSnapshot, death: Death) -> str:
    """Report the assignment's running attempt failed, when that attempt ran in this pane.
    Returns a sentence on the item's state for the summary."""
    from state.work import ledger
    from state.work import settle as ledger_settle

    work_id = ledger_settle.work_id(snapshot.assignment.assignment_id)
    item = ledger.load(home, work_id) if ledger.exists(home, work_id) else None
    if item is None:
        return ""
    current = item.attempts[-1] if item.attempts else None
    here = (
        current is not None
        and current.runtime_locator is not None
        and snapshot.pane is not None
        and current.runtime_locator.pane_id == snapshot.pane.pane_id
        and current.runtime_locator.socket == snapshot.pane.socket
    )
    if item.state == "running" and here:
        with contextlib.suppress(CaptainError):  # it moved on under us: say what it is now
            item = ledger.report(
                home,
                work_id,
                item.generation,
                "failed",
                actor=ACTOR,
                reason=f"the crew died before done: {death.words()}",
            )
    return f"Its work item {work_id} is {item.state}."


def summary(snapshot: CrewSnapshot, death: Death, item_words: str = "") -> str:
    """Who died, how, what became of the work, the last lines of the pane (sanitised), and
    what to do next — within the seed's 1,600 characters, the next step never cut off."""
    name, asg = snapshot.name, snapshot.assignment.assignment_id
    head = f"{name} died before reporting done on {asg}: {death.words()}."
    if item_words:
        head += " " + item_words
    step = (
        f"Next: acknowledge with captain wait {name} --ack "
        f"{delivery_id(snapshot.incarnation_id)}, then captain dismiss {name} and recruit "
        f'it again with captain crew {name} --handoff {asg} --task "..." (the grants '
        "carry over)."
    )
    lines = [_shown(line) for line in death.last_lines[-LAST_LINES:]]
    room = SUMMARY_MAX - len(head) - len(step) - 40
    while lines and sum(len(x) + 3 for x in lines) > room:
        lines.pop(0)
    body = ("\nLast lines of its pane:\n" + "\n".join("  | " + x for x in lines)) if lines else ""
    return summarize(f"{head}{body}\n{step}")


def _shown(line: str) -> str:
    """A pane line as a summary holds it: no character a terminal would obey (escaped, as
    every printed stored text is), no tab, at most LINE_MAX characters."""
    text = for_terminal(line.replace("\t", " ").rstrip())
    return text if len(text) <= LINE_MAX else text[: LINE_MAX - 1] + "…"

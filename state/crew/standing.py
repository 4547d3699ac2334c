"""A crew's state, derived once: the one rule behind ``status``, ``status --json``, ``wait``'s
hints and the cockpit's Crew panel.

Each reader gathers the inputs its own way — ``status`` from the home's files, the cockpit
from its cache of the same files — and hands them here, so the two can never tell two
stories about one crew (a crew whose process died is ``died`` in both). Pure: no I/O.

The vocabulary, first match wins:

- ``dismissed``: retired (``status --all`` only; the cockpit shows no dismissed crew);
- ``done``: its assignment ended with ``done`` (whatever its process did afterwards);
- ``died``: its process ended before ``done`` (the death is recorded: ``state.crew.death_notice``);
- ``blocked``: its agent sits at a start-up dialog (folder trust, a model-migration notice,
  ...) and does nothing until someone answers it; ``dialog`` names which (the runners'
  probe reads it off the pane every few seconds and keeps it in the doorbell's stamp:
  ``captain_tui.runtime.dialogs``), and it clears as soon as the dialog is gone;
- ``asked``: a question is pending (asked and not yet answered);
- ``approval``: its agent waits on an approval prompt (an unacknowledged
  ``awaiting_approval`` on the current assignment);
- ``held``: the doorbell held a message past its limit (an unacknowledged ``held`` on the
  current assignment: the captain should look at the pane);
- ``assigned``: working on its assignment.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Literal, Protocol

from state.vocab import dialog_title

CrewState = Literal["dismissed", "done", "died", "blocked", "asked", "approval", "held", "assigned"]
STATES: tuple[CrewState, ...] = (
    "dismissed",
    "done",
    "died",
    "blocked",
    "asked",
    "approval",
    "held",
    "assigned",
)


class _Note(Protocol):  # read-only: a Notification's status is a Literal of the statuses
    @property
    def status(self) -> str: ...
    @property
    def assignment_id(self) -> str: ...


def shown(state: str, dialog: str | None) -> str:
    """The state in words: ``blocked: folder trust`` names the dialog; every other state is
    its own word."""
    return f"blocked: {dialog_title(dialog)}" if state == "blocked" and dialog else state


def crew_state(
    *,
    dismissed: bool,
    done: bool,
    died: bool,
    question_pending: bool,
    unacknowledged: Iterable[_Note],
    assignment_id: str,
    dialog: str | None = None,
) -> CrewState:
    """The crew's one state (the module's docstring has the order and its reasons)."""
    if dismissed:
        return "dismissed"
    if done:
        return "done"
    if died:
        return "died"
    if dialog:
        return "blocked"
    if question_pending:
        return "asked"
    waiting = {n.status for n in unacknowledged if n.assignment_id == assignment_id}
    if "awaiting_approval" in waiting:
        return "approval"
    if "held" in waiting:
        return "held"
    return "assigned"

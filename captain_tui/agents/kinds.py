"""The kinds of crew captain starts, and what every kind shares.

``claude``, ``codex`` and ``pi`` are agent CLIs with a module each (how they are started,
how they report back); ``shell`` is the person's ``$SHELL`` and ``program`` any command line
(``--command``): to captain both are plain programs with no hooks.
"""

from __future__ import annotations

import sys

from state.errors import CaptainError
from state.inputs import has_surrogate

AGENTS = ("claude", "codex", "pi", "shell", "program")
HOOKED = frozenset({"claude", "pi"})  # delivery by hooks: every ring is the fixed wake line
# Agents whose hooks report their approval prompts. Every other crew's pane is looked at
# for one (doorbell.check_approval): pi's dialogs come only from extensions, unseen by
# captain's hooks, so pi is HOOKED for mail but not here.
APPROVAL_BY_HOOK = frozenset({"claude", "codex"})  # codex: its PermissionRequest hook
# Agents whose composer the pane reader knows: only there may a ring carry mail text. A shell
# or any other program would run what it is typed, so it gets a fixed, inert notice, typed
# only where the kernel edits the line and printed on the terminal anywhere else
# (runtime/pane_tty.py: a line editor's keymap cannot be known).
COMPOSERS = frozenset({"claude", "codex", "pi"})
WAKE_LINE = "mail from the captain is waiting; keep working"


def captain_command() -> list[str]:
    """How a crew pane (or an agent's hook) runs this same captain.

    ``-P``: ``python -m`` would put the working directory first on ``sys.path``, and hooks
    run in the crew's project, which the agent writes (Codex's sandboxed model included):
    a ``state/`` or ``captain_tui/`` there would run as captain, outside any sandbox."""
    return [sys.executable, "-P", "-m", "captain_tui"]


def captain_argv(captain: list[str]) -> list[str]:
    """``captain`` checked: the argv an agent's hook configuration runs captain with."""
    if not captain or not all(isinstance(a, str) and a for a in captain):
        raise ValueError("captain must be a non-empty list of non-empty strings")
    # An undecodable byte (a lone surrogate) cannot be written into the JSON, TOML or
    # settings an agent reads as the same path: refuse rather than a hook that never runs.
    if any(has_surrogate(a) for a in captain):
        raise ValueError("captain's path is not valid UTF-8; agents could not run it")
    return list(captain)


def require(program: str, agent: str) -> str:
    """The path of ``program``, or ``agent_not_found`` saying how to go on."""
    import shutil  # here: a hook that only needs captain_command never loads it

    found = shutil.which(program)
    if not found:
        raise CaptainError(
            "agent_not_found",
            f"the {agent} agent needs '{program}' on PATH and it is not there; install it, "
            "or pass --command to run something else.",
        )
    return found

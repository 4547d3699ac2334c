"""How a crew's window starts: the command line for each kind of crew, and its environment."""

from __future__ import annotations

import os
import shlex
import sys
from pathlib import Path

from captain_tui.agents import claude, codex, pi
from captain_tui.agents.kinds import require
from state.errors import CaptainError


def command_for(agent: str, home, key: str, command: str | None = None) -> str:
    """The shell command line the crew's window runs."""
    if command is not None:
        try:
            argv = shlex.split(command)
        except ValueError as exc:  # an unclosed quote: say so, never a traceback
            raise CaptainError(
                "invalid_argument", f"--command cannot be read as a command line ({exc})."
            ) from None
        if not argv:
            raise CaptainError("invalid_argument", "--command is empty.")
        require(argv[0], agent)
        return command
    if agent in ("claude", "codex"):  # their permission hooks hold approval requests
        from state.crew import approvals

        approvals.prepare(home, key)
    if agent == "claude":
        return claude.command(home, key)
    if agent == "codex":
        return codex.command(home)
    if agent == "pi":
        return pi.command(home, key)
    shell = os.environ.get("SHELL") or "/bin/sh"
    return shlex.join([require(shell, agent)])


def pane_env(crew_env: dict[str, str]) -> dict[str, str]:
    """The crew's CAPTAIN_* plus a PATH on which ``captain`` is this captain."""
    bin_dir = str(Path(sys.executable).parent)
    path = os.environ.get("PATH", "")
    if bin_dir not in path.split(os.pathsep):
        path = bin_dir + os.pathsep + path
    return {**crew_env, "PATH": path}

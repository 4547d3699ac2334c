"""How each kind of crew is started in its pane, and the environment it gets."""

from __future__ import annotations

import os
import shlex
import shutil
import sys
from pathlib import Path

from state.errors import CaptainError

AGENTS = ("claude", "codex", "shell", "program")
HOOKED = frozenset({"claude"})  # delivery by hooks: every ring is the fixed wake line
WAKE_LINE = "mail from the captain is waiting; keep working"


def captain_command() -> list[str]:
    """How a crew pane (or an agent's hook) runs this same captain."""
    return [sys.executable, "-m", "captain_tui"]


def _require(program: str, agent: str) -> str:
    found = shutil.which(program)
    if not found:
        raise CaptainError(
            "agent_not_found",
            f"the {agent} agent needs '{program}' on PATH and it is not there; install it, "
            "or pass --command to run something else.")
    return found


def command_for(agent: str, home, key: str, command: str | None = None) -> str:
    """The shell command line the crew's window runs."""
    if command is not None:
        argv = shlex.split(command)
        if not argv:
            raise CaptainError("invalid_argument", "--command is empty.")
        _require(argv[0], agent)
        return command
    if agent == "claude":
        import json

        from captain_tui.claude_settings import hook_settings

        program = _require("claude", agent)
        settings = home.store.dir("agents", key) / "claude-settings.json"
        home.store.publish(settings, json.dumps(hook_settings(captain_command()),
                                                indent=2).encode() + b"\n")
        # The wake line is also the first prompt: SessionStart injects the task, but only a
        # prompt starts a turn, and by then the task is read, so no ring would follow.
        return shlex.join([program, "--settings", str(settings), WAKE_LINE])
    if agent == "codex":
        from captain_tui.claude_settings import codex_notify_args

        program = _require("codex", agent)
        return shlex.join([program, *codex_notify_args(captain_command())])
    shell = os.environ.get("SHELL") or "/bin/sh"
    return shlex.join([_require(shell, agent)])


def pane_env(crew_env: dict[str, str]) -> dict[str, str]:
    """The crew's CAPTAIN_* plus a PATH on which ``captain`` is this captain."""
    bin_dir = str(Path(sys.executable).parent)
    path = os.environ.get("PATH", "")
    if bin_dir not in path.split(os.pathsep):
        path = bin_dir + os.pathsep + path
    return {**crew_env, "PATH": path}


def launcher(home, name: str, key: str, *, agent: str, program: str | None, socket: str,
             session: str, cwd: str):
    """The launch ``protocol.recruit`` runs under its locks, once every rule has passed:
    open the crew's window and hand back its locator and an undo (close it)."""
    from captain_tui.tmux import Tmux

    tmux = Tmux(socket)  # tmux_unavailable here, before anything is written

    def launch(env: dict[str, str]):
        command = command_for(agent, home, key, program)
        locator = tmux.open_window(session, name, cwd, pane_env(env), command)
        return locator, lambda: tmux.kill_pane(locator)

    return launch

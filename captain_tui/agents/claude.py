"""Claude Code crews: started with captain's hooks, which deliver mail into the agent's context.

A settings file passed with ``claude --settings FILE`` registers
``captain hook claude EVENT`` for the six events captain handles, in Claude Code's
settings schema::

    {"hooks": {"Stop": [{"hooks": [{"type": "command", "command": "captain hook claude Stop"}]}],
               ...}}

No ``matcher``: an omitted matcher matches every occurrence (and UserPromptSubmit and Stop
take none). Claude Code runs ``command`` through a shell, so every argument is quoted.

The hook handlers themselves are ``captain_tui.agents.hooks``.
"""

from __future__ import annotations

import json
import os
import shlex
from pathlib import Path

from captain_tui.agents.codex import hook_timeout
from captain_tui.agents.kinds import WAKE_LINE, captain_argv, captain_command, require

EVENTS = (
    "SessionStart",
    "UserPromptSubmit",
    "Stop",
    "Notification",
    "PermissionRequest",
    "PreToolUse",  # the budget's gate (docs/budgets.md)
)


def hook_command(captain: list[str], event: str) -> str:
    """The shell command Claude Code runs for ``event``."""
    return shlex.join([*captain_argv(captain), "hook", "claude", event])


def hook_settings(captain: list[str], permission_timeout: int | None = None) -> dict:
    """Claude Code settings registering captain's six hooks, ``captain`` being the argv
    that runs captain (e.g. ``["/venv/bin/captain"]`` or ``[python, "-m", "captain_tui"]``).
    ``permission_timeout``: seconds Claude Code lets PermissionRequest run (it holds the
    prompt for the captain's decision; ``codex.hook_timeout``)."""

    def handler(event: str) -> dict[str, str | int]:
        out: dict[str, str | int] = {"type": "command", "command": hook_command(captain, event)}
        if event == "PermissionRequest" and permission_timeout is not None:
            out["timeout"] = permission_timeout
        return out

    return {"hooks": {event: [{"hooks": [handler(event)]}] for event in EVENTS}}


def write_settings(path: str | os.PathLike, captain: list[str]) -> Path:
    """Write the settings file (mode 0600, never in place) and return its path."""
    target = Path(path)
    data = (json.dumps(hook_settings(captain), indent=2) + "\n").encode()
    target.parent.mkdir(parents=True, exist_ok=True)
    temp = target.parent / f".{target.name}.{os.getpid()}.tmp"
    fd = os.open(temp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o600)
    try:
        with os.fdopen(fd, "wb") as out:
            out.write(data)
            out.flush()
            os.fsync(out.fileno())
        os.chmod(temp, 0o600)  # whatever the umask made of it
        os.replace(temp, target)
    except BaseException:
        try:
            os.unlink(temp)
        except FileNotFoundError:
            pass
        raise
    return target


def command(home, key: str) -> str:
    """The shell command a Claude Code crew's window runs: ``claude --settings FILE`` with
    captain's hooks, the settings file kept in the home under the crew's key."""
    program = require("claude", "claude")
    settings = home.store.dir("agents", key) / "claude-settings.json"
    home.store.publish(
        settings,
        json.dumps(hook_settings(captain_command(), hook_timeout(home)), indent=2).encode() + b"\n",
    )
    # The wake line is also the first prompt: SessionStart injects the task, but only a
    # prompt starts a turn, and by then the task is read, so no ring would follow.
    return shlex.join([program, "--settings", str(settings), WAKE_LINE])

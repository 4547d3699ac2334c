"""Wiring captain's hooks into agent CLIs.

Claude Code: a settings file passed with ``claude --settings FILE`` registers
``captain hook claude EVENT`` for the five events captain handles, in Claude Code's
settings schema::

    {"hooks": {"Stop": [{"hooks": [{"type": "command", "command": "captain hook claude Stop"}]}],
               ...}}

No ``matcher``: an omitted matcher matches every occurrence (and UserPromptSubmit and Stop
take none). Claude Code runs ``command`` through a shell, so every argument is quoted.

Codex: ``codex -c 'notify=["captain","hook","codex","notify"]'``; Codex appends one JSON
argument to that argv when a turn completes. ``-c`` parses its value as TOML (older
releases: JSON); the array written here is valid as both.
"""

from __future__ import annotations

import json
import os
import shlex
from pathlib import Path

EVENTS = ("SessionStart", "UserPromptSubmit", "Stop", "Notification", "PermissionRequest")


def _argv(captain: list[str]) -> list[str]:
    if not captain or not all(isinstance(a, str) and a for a in captain):
        raise ValueError("captain must be a non-empty list of non-empty strings")
    return list(captain)


def hook_command(captain: list[str], event: str) -> str:
    """The shell command Claude Code runs for ``event``."""
    return shlex.join([*_argv(captain), "hook", "claude", event])


def hook_settings(captain: list[str]) -> dict:
    """Claude Code settings registering captain's five hooks, ``captain`` being the argv
    that runs captain (e.g. ``["/venv/bin/captain"]`` or ``[python, "-m", "captain_tui"]``)."""
    return {"hooks": {
        event: [{"hooks": [{"type": "command", "command": hook_command(captain, event)}]}]
        for event in EVENTS
    }}


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


def _toml_string(text: str) -> str:
    """A TOML basic string that is also a JSON string."""
    out = ['"']
    for ch in text:
        if ch in '"\\':
            out.append("\\" + ch)
        elif ord(ch) < 0x20 or ord(ch) == 0x7F:
            out.append(f"\\u{ord(ch):04x}")
        else:
            out.append(ch)
    out.append('"')
    return "".join(out)


def codex_notify_args(captain: list[str]) -> list[str]:
    """``codex`` arguments that make its ``notify`` program ``captain hook codex notify``."""
    argv = [*_argv(captain), "hook", "codex", "notify"]
    return ["-c", "notify=[" + ",".join(_toml_string(a) for a in argv) + "]"]

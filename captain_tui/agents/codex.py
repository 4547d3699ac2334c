"""Codex crews: started with captain as Codex's ``notify`` program, which hears turn ends.

``codex -c 'notify=["captain","hook","codex","notify"]'``: Codex appends one JSON argument
to that argv when a turn completes. ``-c`` parses its value as TOML (older releases: JSON);
the array written here is valid as both. The hook handler is ``captain_tui.agents.hooks``.
"""

from __future__ import annotations

import shlex

from captain_tui.agents.kinds import captain_argv, captain_command, require


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


def notify_args(captain: list[str]) -> list[str]:
    """``codex`` arguments that make its ``notify`` program ``captain hook codex notify``."""
    argv = [*captain_argv(captain), "hook", "codex", "notify"]
    return ["-c", "notify=[" + ",".join(_toml_string(a) for a in argv) + "]"]


def command() -> str:
    """The shell command a Codex crew's window runs."""
    return shlex.join([require("codex", "codex"), *notify_args(captain_command())])

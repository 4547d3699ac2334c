"""pi crews: started with captain's own pi extension (``pi -e FILE``)."""

from __future__ import annotations

import shlex

from captain_tui.agents.kinds import require


def command(home, key: str) -> str:
    """The shell command a pi crew's window runs."""
    return shlex.join([require("pi", "pi")])

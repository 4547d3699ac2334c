"""Desktop notifications through the terminal: OSC 777 for the terminals that speak it
(VTE ones such as GNOME Terminal, rxvt-unicode, foot) and OSC 9 for the rest (iTerm2,
WezTerm, kitty, Windows Terminal, ghostty, ConEmu). One of the two, never both: a terminal
that understands both would show the notice twice. A terminal that knows neither ignores it.

Inside tmux the sequence is wrapped for passthrough (tmux drops unknown OSCs otherwise; it
forwards them when ``allow-passthrough`` is on).
"""

from __future__ import annotations

import os
from collections.abc import Mapping

from widgets.cells import one_line

ESC = "\x1b"
BEL = "\x07"
LIMIT = 200  # desktop notices are glanced at; the cockpit holds the whole text


def _safe(text: str) -> str:
    """No character may end the sequence early or start another one: one line, cleaned
    like everything the cockpit draws (``widgets.cells``: ESC, BEL, C1 controls, bidi and
    tag characters become '\ufffd')."""
    return one_line(text, LIMIT)


def speaks_osc777(env: Mapping[str, str]) -> bool:
    term = env.get("TERM", "")
    return bool(env.get("VTE_VERSION")) or term.startswith("rxvt") or term.startswith("foot")


def tmux_wrap(sequence: str) -> str:
    """DCS passthrough: every ESC inside is doubled."""
    return f"{ESC}Ptmux;{sequence.replace(ESC, ESC + ESC)}{ESC}\\"


def desktop_notice(title: str, body: str, env: Mapping[str, str] | None = None) -> str:
    """The escape sequence that asks the terminal for a desktop notification."""
    env = os.environ if env is None else env
    title, body = _safe(title), _safe(body)
    if speaks_osc777(env):
        sequence = f"{ESC}]777;notify;{title.replace(';', ',')};{body}{BEL}"
    else:
        sequence = f"{ESC}]9;{title}: {body}{BEL}"
    return tmux_wrap(sequence) if env.get("TMUX") else sequence

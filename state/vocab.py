"""The protocol's words and limits, with no pydantic behind them.

``state.models`` builds its types from these; the crew-side fast path (``state.crew_side.fast``)
and the text rules use them without paying pydantic's start-up.
"""

from __future__ import annotations

SUMMARY_MAX = 1600

ACTIONS = ("read", "search", "edit", "test", "build", "format", "commit", "version", "delete")
PATH_ACTIONS = frozenset({"edit", "format", "delete", "commit", "version"})
STATUSES = ("working", "idle", "asked", "awaiting_approval", "done", "held", "bounced",
            "timeout", "error")



def counted(n: int, one: str, many: str | None = None) -> str:
    """``n`` things in a sentence people read: "1 message", "3 messages" — never
    "message(s)". ``many`` for a plural that is not ``one`` + "s" ("deliveries")."""
    return f"{n} {one if n == 1 else (many or one + 's')}"

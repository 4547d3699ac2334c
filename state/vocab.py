"""The protocol's words and limits, with no pydantic behind them.

``state.records`` builds its types from these; the crew-side fast path (``state.crew_side.fast``)
and the text rules use them without paying pydantic's start-up.
"""

from __future__ import annotations

from typing import Literal, get_args

SUMMARY_MAX = 1600
MAX_INPUT_BYTES = 256 * 1024  # a work item's accepted input, as stored (state.work.ledger)

# An assignment's budget in US dollars (docs/budgets.md): a positive amount in this range,
# whether typed (--budget-usd) or configured ([crew] budget_usd); the captain is told once
# when the measured spend reaches BUDGET_WARN_SHARE of it, and the crew is held at all of it.
BUDGET_MIN_USD = 0.01
BUDGET_MAX_USD = 1_000_000.0
BUDGET_WARN_SHARE = 0.8

ACTIONS = ("read", "search", "edit", "test", "build", "format", "commit", "version", "delete")
PATH_ACTIONS = frozenset({"edit", "format", "delete", "commit", "version"})
STATUSES = (
    "working",
    "idle",
    "asked",
    "awaiting_approval",
    "done",
    "held",
    "blocked",
    "bounced",
    "timeout",
    "error",
)

# The start-up dialogs an agent may sit at (a crew ``blocked: <title>``), by stable id: the
# screen reader recognises each (captain_tui/runtime/pane_reader.py's DIALOGS)
DIALOG_TITLES = {
    "folder_trust": "folder trust",
    "model_migration": "model migration",
    "hooks_review": "hooks review",
    "api_key": "API key approval",
    "login": "login",
}


def dialog_title(dialog_id: str) -> str:
    """The words for a start-up dialog's id; the id itself when it is not one we know."""
    return DIALOG_TITLES.get(dialog_id, dialog_id)


def counted(n: int, one: str, many: str | None = None) -> str:
    """``n`` things in a sentence people read: "1 message", "3 messages" — never
    "message(s)". ``many`` for a plural that is not ``one`` + "s" ("deliveries")."""
    return f"{n} {one if n == 1 else (many or one + 's')}"


_SENTENCE_ENDS = ".?!…"
_CLOSERS = "”’\"')]»"


def ended(text: str, end: str = ".") -> str:
    """``text`` closed with ``end``, unless it already ends a sentence: a quoted task or a
    summary that ends in "." or "?" is not followed by another (“…README.”. or
    "format?. Run"). The one place a sentence is closed after text someone else wrote."""
    core = text.rstrip().rstrip(_CLOSERS)
    return text if core[-1:] in _SENTENCE_ENDS else text + end


def quoted(text: str) -> str:
    """Someone's words inside a sentence: “like this”."""
    return f"“{text}”"


QUOTE_MAX = 60  # someone's words quoted in a sentence (a task in a toast) are cut to this


def short(text: str, limit: int = QUOTE_MAX) -> str:
    """Someone's words for a sentence: one line, cut with '…' at ``limit`` characters."""
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 1].rstrip() + "…"


# A work item's states and sources (state.work.ledger_records' models use them)
WorkState = Literal["queued", "running", "succeeded", "failed", "cancelled", "needs_reconciliation"]
WORK_STATES: tuple[WorkState, ...] = get_args(WorkState)
Source = Literal["assignment", "chat", "webhook"]
SOURCES: tuple[Source, ...] = get_args(Source)
HOLDS_SLOT: frozenset[str] = frozenset({"running", "needs_reconciliation"})
PAGE_MAX = 100  # items (and deliveries) in one page of a listing

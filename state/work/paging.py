"""A work ID, a listing's filters and its cursor, checked without pydantic: ``captain work
list`` runs on plain records when it can (``state.crew_side.captain.work_page``), and the
full path (``state.work.ledger.page``) checks the same way, so both refuse alike."""

from __future__ import annotations

from state.errors import CaptainError
from state.ids import WORK
from state.vocab import PAGE_MAX, SOURCES, WORK_STATES

__all__ = ["PAGE_MAX", "check_cursor", "check_filters", "check_work_id"]


def check_work_id(work_id: str) -> str:
    if not (
        isinstance(work_id, str)
        and work_id.startswith(WORK + "_")
        and len(work_id) <= 64
        and work_id[4:].isalnum()
        and work_id.isascii()
    ):
        raise CaptainError("unknown_work", f"{work_id!r} is not a work item ID (wrk_...).")
    return work_id


def check_cursor(after: str | None) -> None:
    if after is not None and not (after.startswith(WORK + "_") and after[4:].isalnum()):
        raise CaptainError(
            "invalid_filter",
            f"after={after!r} is not a cursor from a previous page (a wrk_... ID).",
        )


def check_filters(state: str | None, source: str | None, limit: int) -> None:
    if state is not None and state not in WORK_STATES:
        raise CaptainError(
            "invalid_filter", f"state {state!r} is not one of {', '.join(WORK_STATES)}."
        )
    if source is not None and source not in SOURCES:
        raise CaptainError(
            "invalid_filter", f"source {source!r} is not one of {', '.join(SOURCES)}."
        )
    if not 1 <= limit <= PAGE_MAX:
        raise CaptainError("invalid_filter", f"limit must be between 1 and {PAGE_MAX}.")

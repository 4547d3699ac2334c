"""A ledger row that does not validate: refused by its ID, skipped by a listing, said once.

The one rule for every stored ledger record that a backend turns back into a model (a work
item, an event and its detail, an input, a delivery; docs/ledger.md, "A corrupted row"):

- ``parse`` (and ``check``, for a model built from columns) turns whatever goes wrong —
  not JSON, not UTF-8, a field of the wrong type or shape, a record larger than any captain
  writes (``MAX_BYTES``, the store's ``MAX_RECORD_BYTES``), a record under another ID —
  into ``CaptainError("ledger_corrupt")`` naming the row's ID. Asking for that one record
  (``work show``, ``cancel``, ``GET /work/{id}``) is refused with it; nothing else is.
- a listing ``skip``s it: the rest of the ledger is served, and the row is reported once
  (``Reports.once``, left in place, to the reports of the home whose ledger read it: the
  CLI and ``captain serve`` print one ``captain: warning:`` line, never one per page or
  per poll). A row is never rewritten or
  deleted by a reader: what is stored is evidence for a person.

The file ledger has the same outcome by the store's rule 6: a bad file is quarantined and
reported, and the listings serve the rest.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any, TypeVar

from pydantic import BaseModel, ValidationError

from state.errors import CaptainError
from state.store import MAX_RECORD_BYTES, Reports, loads_json

CODE = "ledger_corrupt"
MAX_BYTES = MAX_RECORD_BYTES  # the files' bound: a larger row is not one captain wrote
PREFIX = "ledger row "  # what a report's path starts with (the cockpit's feed says its own)

M = TypeVar("M", bound=BaseModel)
T = TypeVar("T")


def stored(column: str) -> str:
    """SQL for a JSON column read as text, and its length: the text only when it is no
    larger than any record (``MAX_BYTES``), so a huge row is refused without being fetched
    (``parse`` with ``size``)."""
    return (
        f"CASE WHEN octet_length({column}::text) <= {MAX_BYTES} "
        f"THEN {column}::text END, octet_length({column}::text)"
    )


def error(what: str, ident: str, why: str) -> CaptainError:
    """The refusal for one unreadable row: which record, which ID, and why."""
    return CaptainError(
        CODE,
        f"the ledger's {what} {ident} is corrupt ({why}); captain "
        "changes nothing of it, and serves the rest of the ledger.",
        id=ident,
    )


def _why(exc: Exception) -> str:
    if isinstance(exc, ValidationError):
        first = exc.errors()[0] if exc.errors() else None
        where = (".".join(str(p) for p in first["loc"]) if first else "") or "the record"
        return f"does not validate: {where}: {first['msg'] if first else 'is not valid'}"[:300]
    if isinstance(exc, UnicodeDecodeError):
        return "is not UTF-8"
    if isinstance(exc, json.JSONDecodeError):
        return "is not JSON"
    return f"cannot be read: {type(exc).__name__}"


def parse(
    model: type[M], text: str | bytes | None, *, what: str, ident: str, size: int | None = None
) -> M:
    """``model`` from a stored JSON document, or ``error``. ``size`` is the stored length
    when the caller left an oversized document unfetched (``text`` None)."""
    if text is None or (size is not None and size > MAX_BYTES) or len(text) > MAX_BYTES:
        length = size if size is not None else len(text or b"")
        raise error(what, ident, f"is {length} bytes, larger than any record")
    try:
        return model.model_validate_json(text)
    except (ValueError, TypeError) as exc:  # ValidationError is a ValueError
        raise error(what, ident, _why(exc)) from None


def check(build: Callable[[], T], *, what: str, ident: str) -> T:
    """A model built from a row's columns (``build``), or ``error``."""
    try:
        return build()
    except (ValueError, TypeError) as exc:
        raise error(what, ident, _why(exc)) from None


def loads(data: bytes, *, what: str, ident: str) -> Any:
    """A stored JSON document that has no model (an input), or ``error``."""
    if len(data) > MAX_BYTES:
        raise error(what, ident, f"is {len(data)} bytes, larger than any record")
    try:
        return loads_json(data)
    except (ValueError, TypeError) as exc:  # JSONDecodeError and UnicodeDecodeError too
        raise error(what, ident, _why(exc)) from None


def readable(build: Callable[[], M], reports: Reports) -> M | None:
    """What ``build`` makes of one row of a listing, or None when the row is corrupt: then
    it is ``skip``ped (said once to ``reports``); any other refusal goes on up."""
    try:
        return build()
    except CaptainError as err:
        if err.code != CODE:
            raise
        skip(err, reports)
        return None


def skip(err: CaptainError, reports: Reports) -> None:
    """A listing leaves this row out: say so, once per row (``Reports.once``)."""
    ident = str(err.extra.get("id", ""))  # unique across records: wrk_…, whd_…, "wrk_… #3"
    reports.once(ident, f"{PREFIX}{ident}", f"was skipped: {err.message}")

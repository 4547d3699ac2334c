"""The work ledger: work items, attempts, generation fencing, leases, cancel, replay, resolve.

docs/ledger.md is the prose; this module is the only code that changes a work item. Every
rule is here (what an event means: ``state.work.transitions``); the records are reached only
through the storage interface (``state.work.backend``: the home's files, ``state.work.files``,
or later PostgreSQL), chosen by ``backend_for``.

Writing rules, on top of the backend's:

- the item's input is stored before its first event, so an item never exists without its
  input; an input with no events is not an item.
- every event is checked by ``fold`` before it is appended at the next sequence number,
  then the item's folded state is stored.
- every mutation is a transaction on the item; claiming and anything that frees a slot
  are also transactions on the ``ledger`` (taken first: one order everywhere, home, crew,
  ledger, item), so capacity is exact.
- every item that is not terminal is in the open set (added before the first event,
  removed after the terminal one), so capacity and the reconciler never scan finished
  history.
- leases are given and judged by the backend's clock (``now``).
"""

from __future__ import annotations

import hashlib
import json
import math
from collections.abc import Callable
from contextlib import AbstractContextManager
from dataclasses import dataclass
from datetime import datetime, timedelta, timezone
from typing import Any, NoReturn

from state import vocab
from state.config import DEFAULT_LEASE_SECONDS as DEFAULT_LEASE_SECONDS
from state.config import DEFAULT_SLOTS as DEFAULT_SLOTS
from state.config import MAX_ATTEMPTS  # the table of settings bounds max_attempts by it
from state.errors import CaptainError
from state.home import Home
from state.ids import WORK, derive, new_id
from state.inputs import check_size, check_stored, check_text
from state.records import Liveness, PaneLocator
from state.work.backend import LedgerReader, LedgerWriter, backend_for
from state.work.crash import crash_armed, crash_point
from state.work.ledger_records import (
    HOLDS_SLOT,
    NOTES,
    SOURCES,
    TERMINAL,
    AtOnce,
    Attempt,
    BeforeCommit,
    CancelOutcome,
    Lease,
    WorkEvent,
    WorkItem,
)
from state.work.paging import PAGE_MAX as PAGE_MAX
from state.work.paging import check_cursor, check_filters
from state.work.transitions import SPEND_FIELDS
from state.work.transitions import check_work_id as check_work_id
from state.work.transitions import fold as fold
from state.work.transitions import legal as legal

RUN = "run"
# The holder of an attempt whose process captain did not start and cannot see (a crew
# recorded with --no-launch): the person who started it answers for it, not a lease.
EXTERNAL_HOLDER = "external"
# Bounds that keep every record of an item readable (store.MAX_RECORD_BYTES): the item's
# cache holds one attempt per claim, and its input is stored whole.
MAX_INPUT_BYTES = vocab.MAX_INPUT_BYTES
MAX_COST_USD = 1e9


# -- settings ---------------------------------------------------------------------------------


def slots(home: Home) -> int:
    return int(home.setting("ledger", "slots"))


def lease_seconds(home: Home) -> float:
    return float(home.setting("ledger", "lease_seconds"))


# -- storage -----------------------------------------------------------------------------------


def _item_transaction(home: Home, work_id: str) -> AbstractContextManager[LedgerWriter]:
    """A transaction on one item (files: its lock)."""
    return backend_for(home).transaction(work_id)


def capacity_transaction(home: Home) -> AbstractContextManager[LedgerWriter]:
    """A transaction on the ledger, for a caller that decides on a free slot and claims in
    it (``has_free_slot`` then ``claim_held``): files, the ``ledger`` lock. Transactions
    opened inside it on the same thread join it."""
    return backend_for(home).transaction(ledger=True)


def discard_unrecorded(home: Home, work_id: str) -> None:
    """Undo an item a step made and then failed to finish (a recruit on a full disk): the
    crew that would hold it is not recorded, so nobody may see it. Only for an ID nobody
    was told (derived from an assignment made in the failed step); on PostgreSQL the
    step's rolled-back transaction has already done it."""
    backend_for(home).discard_unrecorded(work_id)


def exists(home: Home, work_id: str) -> bool:
    """Whether the work item exists (its first event is stored)."""
    return backend_for(home).exists(work_id)


LINE_MAX = 200  # a name or revision printed for people: one line of at most this many


def _one_line(text: str) -> bool:
    """Printable (no control, bidi or undecodable character), one line, at most LINE_MAX."""
    return text.isprintable() and len(text) <= LINE_MAX


def check_name(text: str, what: str) -> str:
    """A requester, holder or actor: at most 200 printable characters on one line,
    refused before anything is written."""
    if not (isinstance(text, str) and text and _one_line(text)):
        raise CaptainError(
            "invalid_text", f"the {what} must be 1 to 200 printable characters on one line."
        )
    return text


def check_shown(reason: str | None = None, target_revision: str | None = None) -> None:
    """Reasons and revisions are printed for people: no control characters, ever."""
    if reason is not None:
        check_text(reason, "reason", required=False)
    if target_revision is not None and not _one_line(target_revision):
        raise CaptainError(
            "invalid_argument", "a target revision is at most 200 printable characters on one line."
        )


def work_id_for_assignment(assignment_id: str) -> str:
    """An assignment's work item shares its ID's time and randomness: derivable, so the
    crew log can settle it after a crash without a lookup table."""
    return derive(WORK, assignment_id)


def input_sha256(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def _canonical(value: object) -> bytes:
    return json.dumps(value, sort_keys=True, ensure_ascii=False, separators=(",", ":")).encode()


# -- reading -----------------------------------------------------------------------------------


def load(home: Home, work_id: str, *, repair: bool = False) -> WorkItem | None:
    """The item (None when unknown), as its events say; with ``repair`` (caller holds the
    item's transaction, ``_lock``) whatever the backend derives from them is brought up to
    date (the file backend's cache and open marker)."""
    check_work_id(work_id)
    return backend_for(home).item(work_id, repair=repair)


def get(home: Home, work_id: str) -> WorkItem:
    item = load(home, work_id)
    if item is None:
        raise CaptainError("unknown_work", f"there is no work item {work_id}.")
    return item


def events(home: Home, work_id: str) -> list[WorkEvent]:
    return backend_for(home).events(work_id)


def lease(home: Home, item: WorkItem) -> Lease | None:
    """The live lease of the current attempt, if one was written for it."""
    current = item.attempts[-1] if item.attempts else None
    if current is None:
        return None
    record = backend_for(home).lease(item.work_id)
    if record is None or record.generation != current.generation:
        return None
    return record


def lease_expires(home: Home, item: WorkItem) -> datetime | None:
    current = item.attempts[-1] if item.attempts else None
    if current is None:
        return None
    live = lease(home, item)
    return live.expires_at if live else current.lease_expires_at


def input_of(home: Home, work_id: str, fingerprint: str | None = None) -> Any:
    """The accepted input. Stored, never printed or served (replay copies it). With the
    item's ``fingerprint`` (its ``input_sha256``), an input that is not the one accepted —
    edited in the files or the database since — is ``ledger_corrupt``, never copied on."""
    data = backend_for(home).input(work_id)
    if data is None:
        return None
    if fingerprint is not None and input_sha256(_canonical(data) + b"\n") != fingerprint:
        raise CaptainError(
            "ledger_corrupt",
            f"the stored input of {work_id} is not the one "
            "it was accepted with (its fingerprint differs); nothing was "
            "replayed.",
            id=work_id,
        )
    return data.get("input")


def open_ids(home: Home) -> list[str]:
    return backend_for(home).open_ids()


def recent_finished_ids(home: Home, limit: int) -> list[str]:
    """The newest ``limit`` finished items' IDs, newest first (``LedgerReader``)."""
    return backend_for(home).recent_finished_ids(limit)


def all_ids(home: Home) -> list[str]:
    return backend_for(home).all_ids()


def held(home: Home) -> list[WorkItem]:
    """Items holding a slot (running or needing reconciliation)."""
    return backend_for(home).open_items(HOLDS_SLOT)


def queued(home: Home) -> list[WorkItem]:
    """Queued items, oldest first: the order slots are handed out in."""
    return backend_for(home).open_items(("queued",))


def change_stamp(home: Home) -> tuple[Any, ...] | None:
    """A stamp of what ``queued``, ``held`` and ``has_free_slot`` read: equal stamps mean
    none of it changed in between (the slots setting and every open item). None: the
    ledger cannot say (a shared database, whose writes its notifications tell; or a change
    too recent to tell apart from the next): read it."""
    stamp = getattr(backend_for(home), "change_stamp", None)
    items = stamp() if stamp is not None else None
    return None if items is None else (slots(home), items)


def _free(home: Home, holding: int) -> bool:
    """The capacity rule, in one place: a slot is free while fewer than ``slots`` items
    hold one."""
    return holding < slots(home)


def has_free_slot(home: Home) -> bool:
    """Whether a slot is free (callers that act on it hold ``capacity``)."""
    return _free(home, len(held(home)))


# -- writing -----------------------------------------------------------------------------------


def _append(tx: LedgerWriter, item: WorkItem | None, event: WorkEvent, work_id: str) -> WorkItem:
    """Append one event (inside the item's transaction), then store the folded item."""
    new = fold(item, event, work_id)  # refuses an illegal transition before writing
    tx.append(work_id, event)
    crash_point(f"{event.type}:after-event")
    tx.store_item(new)
    crash_point(f"{event.type}:after-snapshot")
    if new.state in TERMINAL and (item is None or item.state not in TERMINAL):
        tx.mark_closed(work_id)
    return new


def note(home: Home, work_id: str, type_: str, *, actor: str, **fields: object) -> WorkItem:
    """Append a note (``NOTES``: an approval request or its end) to an item in whatever
    state it is; the item's state, generation and attempts stay as they are. Idempotent:
    the same note (type, request and decision) already there is not written again, so a
    writer killed after the event is retried safely."""
    if type_ not in NOTES:
        raise CaptainError("invalid_argument", f"{type_!r} is not a note on a work item.")
    check_name(actor, "actor")
    with _item_transaction(home, work_id) as tx:
        item = _locked_item(tx, work_id)
        if type_ == "spend":
            # only when the figure changed; on the attempt it names (the current one)
            generation = fields.setdefault("generation", item.generation)
            attempt = next((a for a in item.attempts if a.generation == generation), None)
            if attempt is None or _not_newer(attempt, fields):
                return item
        else:
            same = (type_, fields.get("request_id"), fields.get("decision"))
            if any((e.type, e.request_id, e.decision) == same for e in tx.events(work_id)):
                return item
        return _append(tx, item, _next(tx, item, type_, actor, item.state, None, **fields), work_id)


_SPEND_COUNTS = ("input_tokens", "output_tokens", "cache_read_tokens", "cache_write_tokens")


def _not_newer(attempt: Any, fields: dict[str, object]) -> bool:
    """Whether a ``spend`` figure says nothing new of the attempt: the same figure, or an
    older one. A measured figure only grows (each count and the turns), so one no larger in
    any of them than what the attempt says was read before it: a detached recorder that
    read its figure before a later turn's recorder wrote a larger one (docs/ledger.md
    "Spend"). Putting it would lower the attempt's figure."""
    if all(getattr(attempt, name) == fields.get(name) for name in SPEND_FIELDS):
        return True
    names = (*_SPEND_COUNTS, "turns")  # the counts; the cost follows the prices
    was = [getattr(attempt, name) for name in names]
    got = [fields.get(name) for name in names]
    if not all(isinstance(v, int) for v in (*was, *got)):
        return False  # an attempt with no figure yet (or a figure in another shape)
    # the same counts with another cost (a price changed) is put, as before
    return got != was and all(g <= w for g, w in zip(got, was, strict=True))


def _next(
    clock: LedgerReader,
    item: WorkItem,
    type_: str,
    actor: str,
    state: str,
    at: datetime | None,
    **fields: Any,
) -> WorkEvent:
    return WorkEvent(
        seq=item.seq + 1,
        at=at or clock.now(),
        type=type_,
        generation=fields.pop("generation", item.generation),
        actor=actor,
        state=state,
        **fields,
    )


def _locked_item(tx: LedgerWriter, work_id: str) -> WorkItem:
    item = tx.item(work_id, repair=True)
    if item is None:
        raise _unknown(work_id)
    return item


def accept(
    home: Home,
    *,
    source: str,
    input: object,
    requester: str,
    work_id: str | None = None,
    target_revision: str | None = None,
    replay_of: str | None = None,
    reason: str | None = None,
    crew: str | None = None,
    assignment_id: str | None = None,
    delivery_id: str | None = None,
    max_attempts: int = 1,
    detail: str | None = None,
    at: datetime | None = None,
) -> WorkItem:
    """Create a queued work item. With a given ``work_id`` it is idempotent: an existing
    item is returned as it is (settling after a crash writes it again)."""
    if source not in SOURCES:
        raise CaptainError(
            "invalid_filter", f"source {source!r} is not one of {', '.join(SOURCES)}."
        )
    check_shown(reason, target_revision)
    check_name(requester, "requester")
    if not (isinstance(max_attempts, int) and max_attempts >= 1):
        raise CaptainError(
            "invalid_argument",
            f"max attempts {max_attempts!r} is not a number from 1 to {MAX_ATTEMPTS}.",
        )
    # an endpoint's config, or the replay of an older item, may ask for more: an item is
    # tried at most MAX_ATTEMPTS times (the CLI refuses more outright)
    max_attempts = min(max_attempts, MAX_ATTEMPTS)
    if detail is not None:
        check_stored(detail, "detail")
    work_id = check_work_id(work_id or new_id(WORK))
    data = _canonical({"input": input})
    check_size(data.decode(), "input", MAX_INPUT_BYTES)
    with _item_transaction(home, work_id) as tx:
        item = tx.item(work_id, repair=True)
        if item is not None:
            return item
        tx.put_input(work_id, data + b"\n")
        crash_point("accepted:after-input")
        tx.mark_open(work_id)
        event = WorkEvent(
            seq=1,
            at=at or tx.now(),
            type="accepted",
            generation=0,
            actor=requester,
            state="queued",
            detail=detail,
            source=source,
            requester=requester,
            target_revision=target_revision,
            input_sha256=input_sha256(data + b"\n"),
            replay_of=replay_of,
            reason=reason,
            crew=crew,
            assignment_id=assignment_id,
            delivery_id=delivery_id,
            max_attempts=max_attempts,
        )
        return _append(tx, None, event, work_id)


def held_externally(attempt: Attempt) -> bool:
    """An attempt held by its external holder: claimed with no locator by
    ``EXTERNAL_HOLDER``. The reconciler neither renews nor expires its lease; it ends by its
    own report (``done``), a cancel (dismissal) or a person's resolve."""
    return attempt.lease_holder == EXTERNAL_HOLDER and attempt.runtime_locator is None


def claim(
    home: Home,
    work_id: str | None = None,
    *,
    holder: str,
    locator: PaneLocator | None = None,
    source: str | None = None,
    run_id: str | None = None,
    at: datetime | None = None,
    start: Callable[[WorkItem], PaneLocator | None] | None = None,
) -> WorkItem:
    """Claim a queued item (the oldest, or ``work_id``) into a free slot: generation + 1,
    a new attempt with a new run id and a lease.

    ``start`` (the runtime) is called, under the locks, once the claim is certain, and
    returns the new process's locator; if it raises, nothing is claimed.
    """
    check_name(holder, "holder")
    if holder == EXTERNAL_HOLDER:
        raise CaptainError(
            "invalid_argument",
            f"holder {EXTERNAL_HOLDER!r} is reserved for crews recorded with "
            "--no-launch (the reconciler never expires it); name the worker.",
        )
    if work_id is not None:
        check_work_id(work_id)
    if start is None:  # one statement where the backend has one (PostgreSQL)
        done = _claim_at_once(home, work_id, holder, locator, source, run_id, at)
        if done is not None:
            return done
    with capacity_transaction(home) as tx:
        if work_id is None:
            # a crew's assignment is started by a runner's dispatch (its pane is launched),
            # never handed to a worker asking for the oldest item; the clock, the slots held
            # and the oldest queued item come in one read (one round trip on PostgreSQL)
            now, holding, waiting = tx.claim_view(source=source)
            if waiting is None:
                raise _nothing_queued(source)
            _check_capacity(home, holding)
            return _claim_free(home, waiting.work_id, holder, locator, run_id, at or now, start)
        item = tx.item(work_id)
        if item is not None and item.crew is not None and start is None:
            raise _crew_item(work_id, item.crew)
        return claim_held(
            home, work_id, holder=holder, locator=locator, run_id=run_id, at=at, start=start
        )


# Refusals a claim or a report says on either path (the general one here, or the backend's
# one statement: ``_claim_at_once``, ``_report_at_once``): each sentence in one place.


def _nothing_queued(source: str | None) -> CaptainError:
    return CaptainError(
        "not_queued",
        "no work item is queued"
        + (f" from source {source}" if source else "")
        + " for a worker (crew assignments start when a runner launches their pane).",
    )


def _crew_item(work_id: str, crew: str | None) -> CaptainError:
    return CaptainError(
        "invalid_argument",
        f"{work_id} is crew {crew}'s assignment; a runner (the cockpit, "
        "captain watch or wait) launches its pane when a slot frees.",
    )


def _unknown(work_id: str) -> CaptainError:
    return CaptainError("unknown_work", f"there is no work item {work_id}.")


def _not_queued(work_id: str, state: str | None) -> CaptainError:
    return CaptainError(
        "not_queued",
        f"{work_id} is {state}, not queued; only a queued item can be claimed.",
        state=state,
    )


def _stale(
    work_id: str, current: int, state: str | None, generation: int, what: str
) -> CaptainError:
    return CaptainError(
        "stale_generation",
        f"generation {generation} is not {work_id}'s current one ({current}); "
        f"the attempt that {what} was taken over and may not act for its replacement.",
        generation=current,
        state=state,
    )


def _nothing_to_report(work_id: str, state: str | None) -> CaptainError:
    return CaptainError(
        "not_running",
        f"{work_id} is {state}; there is no live attempt to report for.",
        state=state,
    )


_SOMETIME = datetime(2000, 1, 1, tzinfo=timezone.utc)  # a template's unnamed times


def _before_commit() -> BeforeCommit | None:
    """The crash tests' hook for a write made in one statement: the crash points its
    general path passes, reached between the statement's writes and its COMMIT (a kill
    there leaves nothing, as anywhere inside a transaction); None when no test asks."""
    if not crash_armed():
        return None

    def hook(done: AtOnce) -> None:
        event = done.event
        assert event is not None  # called only once written
        crash_point(f"{event.type}:after-event")
        crash_point(f"{event.type}:after-snapshot")

    return hook


def _claim_at_once(
    home: Home,
    work_id: str | None,
    holder: str,
    locator: PaneLocator | None,
    source: str | None,
    run_id: str | None,
    at: datetime | None,
) -> WorkItem | None:
    """``claim`` in one statement when the backend has one (None: it has not, or left it
    to the general path): the claim's event and attempt but for what the item decides."""
    run_id = run_id or new_id(RUN)
    lease = timedelta(seconds=lease_seconds(home))
    when = at or _SOMETIME
    done = backend_for(home).claim_at_once(
        work_id=work_id,
        source=source,
        at=at,
        lease=lease,
        slots=slots(home),
        event=WorkEvent(
            seq=1,
            at=when,
            type="claimed",
            generation=1,
            actor=holder,
            state="running",
            run_id=run_id,
            lease_holder=holder,
            runtime_locator=locator,
            lease_expires_at=when + lease,
        ),
        attempt=Attempt(
            run_id=run_id,
            generation=1,
            started_at=when,
            lease_holder=holder,
            lease_expires_at=when + lease,
            runtime_locator=locator,
        ),
        before_commit=_before_commit(),
    )
    if done is None or done.item is not None:
        return done.item if done else None
    wid = done.work_id or work_id or ""
    if done.outcome == "not_queued":
        raise _not_queued(wid, done.state) if done.state else _nothing_queued(source)
    if done.outcome == "crew_item":
        raise _crew_item(wid, done.crew)
    if done.outcome == "no_capacity":
        _refuse_capacity(home)
    if done.outcome == "unknown_work":
        raise _unknown(wid)
    raise CaptainError("store_error", f"the ledger's claim answered {done.outcome!r}.")


def claim_held(
    home: Home,
    work_id: str,
    *,
    holder: str,
    locator: PaneLocator | None = None,
    run_id: str | None = None,
    at: datetime | None = None,
    start: Callable[[WorkItem], PaneLocator | None] | None = None,
) -> WorkItem:
    """``claim`` for a caller that already holds ``capacity``."""
    at = at or backend_for(home).now()
    _check_capacity(home, len(held(home)))
    return _claim_free(home, work_id, holder, locator, run_id, at, start)


def _check_capacity(home: Home, holding: int) -> None:
    """Refuse a claim when ``holding`` items already hold every slot (the rule:
    ``_free``)."""
    if _free(home, holding):
        return
    _refuse_capacity(home)


def _refuse_capacity(home: Home) -> NoReturn:
    holding_items, limit = held(home), slots(home)
    raise CaptainError(
        "no_capacity",
        f"all {limit} slots are held ({', '.join(i.work_id for i in holding_items[:8])}); "
        "an item is claimed when one frees. Raise [ledger] slots in config.toml to "
        "run more at once.",
        slots=limit,
    )


def _claim_free(
    home: Home,
    work_id: str,
    holder: str,
    locator: PaneLocator | None,
    run_id: str | None,
    at: datetime,
    start: Callable[[WorkItem], PaneLocator | None] | None,
) -> WorkItem:
    """Claim ``work_id`` into a slot known to be free (the caller holds ``capacity``)."""
    with _item_transaction(home, check_work_id(work_id)) as tx:
        item = _locked_item(tx, work_id)
        if item.state != "queued":
            raise _not_queued(work_id, item.state)
        if start is not None:
            locator = start(item)
        event = _next(
            tx,
            item,
            "claimed",
            holder,
            "running",
            at,
            generation=item.generation + 1,
            run_id=run_id or new_id(RUN),
            lease_holder=holder,
            runtime_locator=locator,
            lease_expires_at=at + timedelta(seconds=lease_seconds(home)),
        )
        return _append(tx, item, event, work_id)


def _attempts_left(item: WorkItem) -> bool:
    """A retry is due while attempts remain, and never past MAX_ATTEMPTS (an item from
    before that bound keeps its own, larger number of attempts, but gets no more)."""
    return len(item.attempts) < min(item.max_attempts, MAX_ATTEMPTS)


def _fenced(item: WorkItem, generation: int, what: str) -> None:
    if generation != item.generation:
        raise _stale(item.work_id, item.generation, item.state, generation, what)


def heartbeat(
    home: Home,
    work_id: str,
    generation: int,
    *,
    holder: str | None = None,
    at: datetime | None = None,
) -> WorkItem:
    """Renew the current attempt's lease; fenced by generation."""
    if holder is not None:
        check_name(holder, "holder")
    at = at or backend_for(home).now()
    with _item_transaction(home, check_work_id(work_id)) as tx:
        item = _locked_item(tx, work_id)
        _fenced(item, generation, "heartbeats")
        if item.state != "running":
            raise CaptainError(
                "not_running",
                f"{work_id} is {item.state}; only a running item's lease can be renewed.",
                state=item.state,
            )
        current = item.attempts[-1]
        record = Lease(
            work_id=work_id,
            run_id=current.run_id,
            generation=generation,
            holder=holder or current.lease_holder,
            heartbeat_at=at,
            expires_at=at + timedelta(seconds=lease_seconds(home)),
        )
        tx.put_lease(record)
        return item


def report(
    home: Home,
    work_id: str,
    generation: int,
    outcome: str,
    *,
    actor: str,
    cost_usd: float | None = None,
    detail: str | None = None,
    repeatable: bool = False,
    reason: str | None = None,
    at: datetime | None = None,
) -> WorkItem:
    """The attempt's result, fenced by generation. A repeatable failure with attempts left
    goes back to the queue (a retry: same work id, a new run id at the next claim).
    ``reason`` is shown with the event (the runtime's word on a crew that died)."""
    if outcome not in ("succeeded", "failed"):
        raise CaptainError("invalid_argument", f"outcome {outcome!r} is not succeeded or failed.")
    check_name(actor, "holder")
    check_shown(reason)
    if detail is not None:
        check_stored(detail, "detail")
    if cost_usd is not None and not (math.isfinite(cost_usd) and 0 <= cost_usd < MAX_COST_USD):
        raise CaptainError(
            "invalid_argument", f"a cost must be a number from 0 to below {MAX_COST_USD:.0f} USD."
        )
    check_work_id(work_id)
    done = backend_for(home).report_at_once(  # one statement where the backend has one
        work_id=work_id,
        generation=generation,
        outcome=outcome,
        repeatable=repeatable,
        at=at,
        max_attempts=MAX_ATTEMPTS,
        event=WorkEvent(
            seq=1,
            at=at or _SOMETIME,
            type=outcome,
            generation=generation,
            actor=actor,
            state=outcome,
            cost_usd=cost_usd,
            detail=detail,
            reason=reason,
        ),
        before_commit=_before_commit(),
    )
    if done is not None:
        if done.item is not None:
            return done.item
        if done.outcome == "unknown_work":
            raise _unknown(work_id)
        if done.outcome == "stale_generation" and done.generation is not None:
            raise _stale(work_id, done.generation, done.state, generation, "reports")
        if done.outcome == "not_running":
            raise _nothing_to_report(work_id, done.state)
        raise CaptainError("store_error", f"the ledger's report answered {done.outcome!r}.")
    with backend_for(home).transaction(work_id, ledger=True) as tx:
        item = _locked_item(tx, work_id)
        _fenced(item, generation, "reports")
        if item.state not in ("running", "needs_reconciliation"):
            raise _nothing_to_report(work_id, item.state)
        retry = (
            outcome == "failed" and repeatable and item.state == "running" and _attempts_left(item)
        )
        kind = "retry_queued" if retry else outcome
        return _append(
            tx,
            item,
            _next(
                tx,
                item,
                kind,
                actor,
                "queued" if retry else outcome,
                at,
                cost_usd=cost_usd,
                detail=detail,
                reason=reason,
            ),
            work_id,
        )


@dataclass(frozen=True)
class CancelResult:
    item: WorkItem
    outcome: CancelOutcome


Stop = Callable[[Attempt], bool | None]  # True: stop confirmed; False/None: not confirmed


def cancel(
    home: Home,
    work_id: str,
    *,
    actor: str,
    reason: str | None = None,
    stop: Stop | None = None,
    at: datetime | None = None,
) -> CancelResult:
    """An idempotent cancel request; ``outcome`` says what actually happened.

    A queued item has no process: it is cancelled. A live attempt is stopped through
    ``stop`` (the runtime); only a confirmed stop cancels it, anything else sends it to
    needs_reconciliation. The request is recorded once per generation.
    """
    check_shown(reason)
    with backend_for(home).transaction(check_work_id(work_id), ledger=True) as tx:
        item = _locked_item(tx, work_id)
        if item.state in TERMINAL:
            return CancelResult(item, "already_terminal")
        if item.state == "queued":
            item = _append(
                tx,
                item,
                _next(tx, item, "cancelled", actor, "cancelled", at, reason=reason),
                work_id,
            )
            return CancelResult(item, "cancelled")
        if item.generation not in item.cancel_requested:
            item = _append(
                tx,
                item,
                _next(tx, item, "cancel_requested", actor, item.state, at, reason=reason),
                work_id,
            )
        stopped = _stop(stop, item.attempts[-1])
        if stopped is True:
            item = _append(
                tx,
                item,
                _next(tx, item, "cancelled", actor, "cancelled", at, reason=reason),
                work_id,
            )
            return CancelResult(item, "cancelled")
        if item.state == "running":
            item = _append(
                tx,
                item,
                _next(
                    tx,
                    item,
                    "needs_reconciliation",
                    actor,
                    "needs_reconciliation",
                    at,
                    reason="cancel requested; the stop could not be confirmed",
                ),
                work_id,
            )
        return CancelResult(item, "stop_unconfirmed")


def _stop(stop: Stop | None, attempt: Attempt) -> bool | None:
    """Ask the runtime to stop ``attempt``. A stop that fails (the runtime raised: tmux gone,
    a pane that will not close) confirms nothing: the cancel goes on as unconfirmed, so the
    request already appended is kept on every backend (a transactional one would otherwise
    roll it back with the exception, where the files had written it) and the item waits for
    a person in needs_reconciliation, never cancelled on a guess."""
    if stop is None:
        return None
    try:
        return stop(attempt)
    except Exception:  # noqa: BLE001 - any failure to stop is "not confirmed"
        return None


def resolve(
    home: Home,
    work_id: str,
    *,
    generation: int,
    to: str,
    reason: str | None,
    operator: str,
    runtime_stopped: bool = False,
    at: datetime | None = None,
) -> WorkItem:
    """A person's verdict on an item needing reconciliation; frees its slot, starts
    nothing. ``runtime_stopped`` is the operator's attestation, never a probe."""
    if to not in TERMINAL:
        raise CaptainError(
            "invalid_argument",
            f"the target state must be succeeded, failed or cancelled, not {to!r}.",
        )
    if not reason or not reason.strip():
        raise CaptainError(
            "evidence_required",
            "resolve needs a reason (--reason): what you checked and what you found.",
        )
    if to == "cancelled" and not runtime_stopped:
        raise CaptainError(
            "evidence_required",
            "cancelled means a confirmed stop: attest that the process is no "
            "longer running (runtime_stopped, --runtime-stopped).",
        )
    check_shown(reason)
    with backend_for(home).transaction(check_work_id(work_id), ledger=True) as tx:
        item = _locked_item(tx, work_id)
        if item.state != "needs_reconciliation":
            raise CaptainError(
                "not_reconciling",
                f"{work_id} is {item.state}; only an item in needs_reconciliation can be resolved.",
                state=item.state,
            )
        _fenced(item, generation, "is being resolved")
        return _append(
            tx,
            item,
            _next(
                tx,
                item,
                "resolved",
                operator,
                to,
                at,
                reason=reason,
                runtime_stopped=runtime_stopped,
            ),
            work_id,
        )


MAX_LANDED_PATHS = 100  # outside-grant paths kept on a landed event; the rest are counted


def landed(
    home: Home,
    work_id: str,
    *,
    commit: str,
    base_branch: str,
    operator: str,
    crew_commit: str | None = None,
    outside_grant: list[str] | None = None,
    reason: str | None = None,
    at: datetime | None = None,
) -> WorkItem:
    """Record that a succeeded item's work landed on its base branch at ``commit``
    (``captain land``). Idempotent for the same commit (a land that was killed after moving
    the branch records it when run again); another commit is ``already_landed``."""
    check_name(operator, "operator")
    check_shown(reason, commit)
    check_shown(None, base_branch)
    outside = list(outside_grant or [])
    if len(outside) > MAX_LANDED_PATHS:
        outside = [*outside[:MAX_LANDED_PATHS], f"... and {len(outside) - MAX_LANDED_PATHS} more"]
    with backend_for(home).transaction(check_work_id(work_id), ledger=True) as tx:
        item = _locked_item(tx, work_id)
        if item.landing is not None:
            if item.landing.commit == commit:
                return item
            raise CaptainError(
                "already_landed",
                f"{work_id} already landed on {item.landing.base_branch} at "
                f"{item.landing.commit[:12]}; an assignment lands once.",
                commit=item.landing.commit,
            )
        if item.state != "succeeded":
            raise CaptainError(
                "not_done",
                f"{work_id} is {item.state}; only a succeeded item's work can land.",
                state=item.state,
            )
        return _append(
            tx,
            item,
            _next(
                tx,
                item,
                "landed",
                operator,
                item.state,
                at,
                landed_commit=commit,
                base_branch=base_branch,
                crew_commit=crew_commit,
                outside_grant=outside or None,
                reason=reason,
            ),
            work_id,
        )


# -- the reconciler ----------------------------------------------------------------------------

Probe = Callable[[PaneLocator], Liveness]


def examine(home: Home, probe: Probe, *, holder: str, at: datetime | None = None) -> list[str]:
    """One pass of whichever runner is alive: renew the lease of every running item whose
    process it confirms alive; decide expired leases by their locator. Returns what changed,
    as ``work_id: what`` lines."""
    at = at or backend_for(home).now()
    changes = []
    for work_id in open_ids(home):
        try:
            item = load(home, work_id)
        except CaptainError:
            continue
        if item is None or item.state != "running":
            continue
        current = item.attempts[-1]
        if held_externally(current):
            continue  # its process is the person's: no probe can see it, no timer decides it
        verdict = probe(current.runtime_locator) if current.runtime_locator else "unknown"
        expired = (lease_expires(home, item) or at) <= at
        try:
            if verdict == "alive":
                heartbeat(home, work_id, item.generation, holder=holder, at=at)
                if expired:
                    changes.append(f"{work_id}: lease renewed")
            elif expired:
                done = _expire(home, work_id, item.generation, verdict, holder, at)
                changes.append(f"{work_id}: {done}")
        except CaptainError:
            continue  # it moved on under us (a report, a cancel): the next pass sees it
    return changes


def _expire(
    home: Home, work_id: str, generation: int, verdict: str, holder: str, at: datetime
) -> str:
    with backend_for(home).transaction(work_id, ledger=True) as tx:
        item = _locked_item(tx, work_id)
        _fenced(item, generation, "expired")
        if item.state != "running":
            return item.state
        if verdict == "gone":
            retry = _attempts_left(item)
            kind, state = ("retry_queued", "queued") if retry else ("failed", "failed")
            _append(
                tx,
                item,
                _next(
                    tx,
                    item,
                    kind,
                    holder,
                    state,
                    at,
                    reason="lease expired; the process is confirmed gone and never reported",
                ),
                work_id,
            )
            return "retry queued" if retry else "failed (process gone, no report)"
        _append(
            tx,
            item,
            _next(
                tx,
                item,
                "needs_reconciliation",
                holder,
                "needs_reconciliation",
                at,
                reason="lease expired; the process could not be verified",
            ),
            work_id,
        )
        return "needs reconciliation"


# -- reading for people and programs -----------------------------------------------------------


def page(
    home: Home,
    *,
    state: str | None = None,
    source: str | None = None,
    limit: int = 50,
    after: str | None = None,
) -> tuple[list[WorkItem], str | None]:
    """Keyset pagination over work IDs (time-ordered): items after ``after``, at most
    ``limit``, and the cursor for the next page when more remain."""
    check_filters(state, source, limit)
    check_cursor(after)
    return backend_for(home).page(state=state, source=source, limit=limit, after=after)


def public(home: Home, item: WorkItem, *, detail: bool = False) -> dict[str, Any]:
    """What may be shown or served: never the input, never an event's detail."""
    row = item.model_dump(mode="json", exclude={"schema_", "seq", "attempts", "cancel_requested"})
    row["slot"] = item.state in HOLDS_SLOT
    if not detail:
        return row
    live = lease(home, item)
    attempts = []
    for a in item.attempts:
        entry = a.model_dump(mode="json")
        if live is not None and live.run_id == a.run_id:
            entry["lease_expires_at"] = live.expires_at.isoformat()
            entry["heartbeat_at"] = live.heartbeat_at.isoformat()
            entry["lease_holder"] = live.holder
        attempts.append(entry)
    row["attempts"] = attempts
    row["events"] = [
        e.model_dump(mode="json", exclude={"schema_", "detail"}, exclude_none=True)
        for e in events(home, item.work_id)
    ]
    return row

"""The work ledger's storage interface: what a backend stores and fences, and nothing more.

``state.work.ledger`` holds every rule of the ledger (docs/ledger.md: the legal transitions
and the fold, generation fencing, capacity, leases and their expiry, attempt limits,
cancel, replay, resolve, the reconciler, pagination's filters and bounds) and reaches its
records only through a ``LedgerBackend``. ``handle_of`` is the one place a home's
ledger is resolved, once per ``Home`` (so once per process), into a ``LedgerHandle``
whose parts are the work items, the webhook deliveries and the API tokens: the home's
files (``state.work.files``, ``delivery_files``, ``token_store.FileTokens``), or the
PostgreSQL database ``[ledger] url`` / ``CAPTAIN_LEDGER_URL`` names (``pg_backend``,
``pg_deliveries``, ``pg_tokens``).

What a backend must guarantee (docs/ledger.md, "Storage: one interface, two backends"):

- **Transactions and their order.** ``transaction(work_id, ledger=...)`` is the only way to
  write. ``ledger=True`` serializes it against every other ``ledger=True`` transaction of
  the ledger (claims and everything that frees a slot: capacity is counted and changed
  under it); ``work_id`` locks that item for the transaction. Always the ledger first, then
  the item (files: the ``ledger`` lock, then ``work-<id>``; PostgreSQL: one transaction,
  an advisory or row lock for the ledger, ``SELECT … FOR UPDATE`` for the item). A
  transaction opened on a thread that already has one open on the same ledger *joins* it:
  it takes only what the outer one lacks (asking for the ledger inside an item-only
  transaction is refused: the order is fixed) and ends with it; reads on that thread run
  in it too.
- **Append at a sequence number, once.** ``append`` stores an event at ``event.seq`` and
  fails (``message_conflict``) when a different event holds that number: a
  compare-and-set, so two writers can never both extend the same history (files: the
  create-once name; PostgreSQL: a unique ``(work_id, seq)``). The ledger calls it at
  ``item.seq + 1`` of an item read in the same transaction.
- **Durability points.** The file backend makes each write durable as it returns, and a
  writer killed between two of them is repaired by the next one (``item(repair=True)``);
  a transactional backend makes the whole transaction durable at commit and a kill before
  it rolls back. Either way a reader only ever sees a legal prefix of the history. The
  ledger's crash points (``state.work.crash``) sit between the calls, where they are.
- **The clock.** ``now()`` is the time every lease is given and judged by (and every event
  stamped with when the caller names none): the files' is ``state.clock.now()``; a shared
  database's must be the database's, so a lease taken on one host expires by the same
  clock on every other.
- **The open set.** Every item that is not terminal is open, from before its first event
  until after its terminal one; capacity and the reconciler read only open items, so their
  cost never grows with finished history.
- **The recent finished.** ``recent_finished_ids(limit)`` names the newest finished
  items; with ``open_ids`` it is all a reader that shows work needs (the cockpit's Work
  panel), so that reader's cost never grows with finished history either.
- **Pagination.** Keyset over work IDs (time-ordered): the same cursor (the last work ID of
  a full page) and the same bound (``ledger.PAGE_MAX``) on every backend.
"""

from __future__ import annotations

import os
from collections.abc import Collection
from contextlib import AbstractContextManager
from datetime import datetime, timedelta
from typing import Any, Protocol

from state.errors import CaptainError
from state.home import Home
from state.work.delivery_files import FileDeliveries
from state.work.delivery_store import DeliveryStore
from state.work.files import FileBackend
from state.work.ledger_records import AtOnce, Attempt, BeforeCommit, Lease, WorkEvent, WorkItem
from state.work.location import ENV, LedgerLocation, ledger_section, locate
from state.work.token_store import FileTokens, TokenStore


class LedgerReader(Protocol):
    """Reads: outside a transaction each is consistent on its own; inside one, they see
    the transaction's writes."""

    name: str  # "files", "postgresql": which ledger is in use, for people

    def now(self) -> datetime:
        """The clock leases are given and judged by (see the module's docstring)."""
        ...

    def exists(self, work_id: str) -> bool:
        """Whether the item's first event is stored (an input alone is not an item)."""
        ...

    def exists_durably(self, work_id: str) -> bool:
        """Whether the item's first event is durable, seen by every reader now and after
        any crash: the files' ``exists``; a transactional backend answers only outside a
        transaction (inside one it cannot tell its own uncommitted write, which a kill
        rolls back, from a committed one) and says False there. What a note kept beside
        the ledger (``state.work.seen.note``) may rest on."""
        ...

    def item(self, work_id: str, *, repair: bool = False) -> WorkItem | None:
        """The item as its events say (None when unknown). ``repair`` (only inside a
        transaction on the item): bring whatever the backend derives from the events up to
        them — the file backend's ``item.json`` cache and open marker after a writer was
        killed between its writes; a transactional backend is never behind."""
        ...

    def events(self, work_id: str) -> list[WorkEvent]:
        """The item's history in sequence order, up to the first unreadable event."""
        ...

    def lease(self, work_id: str) -> Lease | None:
        """The last lease record written for the item (whichever attempt it was for)."""
        ...

    def input(self, work_id: str) -> dict[str, Any] | None:
        """The stored input document, as ``put_input`` stored it (``{"input": ...}``)."""
        ...

    def open_ids(self) -> list[str]:
        """IDs of the open (non-terminal) items, in ID order."""
        ...

    def recent_finished_ids(self, limit: int) -> list[str]:
        """IDs of the newest ``limit`` finished (terminal) items, newest ID first (IDs are
        time-ordered): what the Work panel's finished rows are drawn from. Its cost grows
        with ``limit`` and the open items, never with finished history (PostgreSQL: the
        primary key walked backwards; files: the ``work/`` listing, then newest first,
        skipping the open markers)."""
        ...

    def all_ids(self) -> list[str]:
        """Every work ID stored, in ID order (may include an input whose item never came
        to be: the file backend's accept killed before its first event)."""
        ...

    def open_items(
        self,
        states: Collection[str],
        *,
        source: str | None = None,
        crew: bool | None = None,
        limit: int | None = None,
    ) -> list[WorkItem]:
        """Open items in one of ``states``, oldest first; ``source`` narrows to one source,
        ``crew`` to items of a crew's assignment (True) or of none (False), ``limit`` to
        the first so many. Capacity (the slot-holding states), the queue, and a claim's
        choice of the next item (PostgreSQL: ``FOR UPDATE SKIP LOCKED``) are all this."""
        ...

    def claim_view(self, *, source: str | None) -> tuple[datetime, int, WorkItem | None]:
        """What a claim of the oldest item decides on (inside the ledger's transaction):
        ``now()``, how many items hold a slot (``open_items(HOLDS_SLOT)``), and the oldest
        queued item of no crew (from ``source``), as ``open_items`` would choose it — in
        one read (PostgreSQL: one statement, the item ``FOR UPDATE SKIP LOCKED``)."""
        ...

    def page(
        self, *, state: str | None, source: str | None, limit: int, after: str | None
    ) -> tuple[list[WorkItem], str | None]:
        """Keyset pagination over work IDs: items after ``after`` matching the filters, at
        most ``limit`` (already checked against PAGE_MAX), and the last one's ID as the
        cursor when more remain (None otherwise)."""
        ...


class LedgerWriter(LedgerReader, Protocol):
    """A transaction's handle (``LedgerBackend.transaction``): writes happen only here."""

    def put_input(self, work_id: str, data: bytes) -> None:
        """Store the item's input once; a second call leaves the first one's in place."""
        ...

    def mark_open(self, work_id: str) -> None:
        """Add the item to the open set (before its first event)."""
        ...

    def append(self, work_id: str, event: WorkEvent) -> None:
        """Store ``event`` at ``event.seq``: compare-and-set, see the module's docstring."""
        ...

    def store_item(self, item: WorkItem) -> None:
        """Store the item's state folded up to ``item.seq`` (files: the ``item.json``
        cache; PostgreSQL: the item's row, in the same transaction as the event)."""
        ...

    def mark_closed(self, work_id: str) -> None:
        """Remove the item from the open set (after its terminal event); idempotent."""
        ...

    def put_lease(self, lease: Lease) -> None:
        """Replace the item's lease record (a heartbeat; never part of the history)."""
        ...


class LedgerBackend(LedgerReader, Protocol):
    """A ledger's storage: reads, and transactions to write in."""

    def transaction(
        self, work_id: str | None = None, *, ledger: bool = False
    ) -> AbstractContextManager[LedgerWriter]:
        """Lock the ledger (``ledger``) and then the item (``work_id``) for the block, and
        yield the handle to write through; joins a transaction this thread has open."""
        ...

    def discard_unrecorded(self, work_id: str) -> None:
        """Remove an item made by a step that failed before it was recorded anywhere else
        (``ledger.discard_unrecorded``); PostgreSQL: nothing, its transaction rolled back."""
        ...

    def claim_at_once(
        self,
        *,
        work_id: str | None,
        source: str | None,
        at: datetime | None,
        lease: timedelta,
        slots: int,
        event: WorkEvent,
        attempt: Attempt,
        before_commit: BeforeCommit | None,
    ) -> AtOnce | None:
        """``ledger.claim`` (without ``start``) in one statement, one round trip, when the
        backend has one: the same choice, refusals and writes. ``event`` and ``attempt`` are
        the claim's event and new attempt but for what the item decides (the sequence
        number, the generation; the times, unless ``at`` names them: then they are the
        event's, ``at`` and its lease's end). None: not here (files; a transaction open on
        this thread; a row not as captain wrote it): the caller takes the general path."""
        ...

    def report_at_once(
        self,
        *,
        work_id: str,
        generation: int,
        outcome: str,
        repeatable: bool,
        at: datetime | None,
        max_attempts: int,
        event: WorkEvent,
        before_commit: BeforeCommit | None,
    ) -> AtOnce | None:
        """``ledger.report`` in one statement, as ``claim_at_once``: ``event`` is the report's
        event but for its sequence number, generation, type, state (and time, unless
        ``at`` names it)."""
        ...


CHANGED = "ledger_changed"  # the code a ledger setting changed under a running process gets


class LedgerWakeups(Protocol):
    """Wake-ups from a shared ledger (``state.work.pg_backend.Listener``): the work IDs of
    committed writes, ``"*"`` (``pg_backend.EVERYTHING``) when anything may have changed."""

    def wait(self, timeout: float) -> list[str]: ...

    @property
    def connected(self) -> bool:
        """Listening now: every write committed meanwhile is notified to it."""
        ...

    def close(self) -> None: ...


class LedgerHandle:
    """A home's work ledger, resolved once: where it is (``location``) and its three parts,
    each over the same storage — the work items (``items``, a ``LedgerBackend``), the
    webhook deliveries (``deliveries``, a ``DeliveryStore``) and the API tokens
    (``tokens``, a ``TokenStore``) — so a delivery, its work item and a token are always
    in one place, and one PostgreSQL transaction covers all three.

    Made by ``handle_of`` on a ``Home``'s first ledger call and kept with that ``Home`` (one
    per CLI command, cockpit, ``captain serve`` or runner: each makes one Home). A ledger
    setting (``[ledger] url``, ``CAPTAIN_LEDGER_URL``) changed while the process runs is
    never followed: the handle stays on the ledger it was made for, and ``change`` says
    what the setting names now (``ledger_changed``, reported once per change through the
    store's reports: the CLI's and serve's stderr, the cockpit's alerts)."""

    def __init__(self, home: Home, location: LedgerLocation, key: tuple[object, ...]) -> None:
        self.location = location
        self.change: CaptainError | None = None  # ledger_changed, while the setting differs
        self._key = key  # what the location was read from: CAPTAIN_LEDGER_URL, [ledger]
        if location.postgres:
            from state.work.pg_backend import PostgresBackend
            from state.work.pg_deliveries import PostgresDeliveries
            from state.work.pg_tokens import PostgresTokens

            backend = PostgresBackend(location, home.store.reports)
            self.items: LedgerBackend = backend
            self.deliveries: DeliveryStore = PostgresDeliveries(backend)
            self.tokens: TokenStore = PostgresTokens(backend)
        else:
            self.items = FileBackend(home)
            self.deliveries = FileDeliveries(home)
            self.tokens = FileTokens(home)

    @property
    def name(self) -> str:
        """ "files" or "postgresql": which ledger is in use, for people."""
        return self.items.name

    def listener(self) -> LedgerWakeups | None:
        """How a reader hears of ledger writes made elsewhere: PostgreSQL's LISTEN/NOTIFY (a
        new listener, which connects on its first wait), or None for the files, whose
        writes land under the home where watchfiles sees them."""
        if not self.location.postgres:
            return None
        from state.work.pg_backend import PostgresBackend

        assert isinstance(self.items, PostgresBackend)
        return self.items.listen()

    def notice(self, home: Home) -> None:
        with home.ledger_guard:
            self._notice(home)

    def _notice(self, home: Home) -> None:
        """Look whether the ledger setting changed since the handle was made (a stat of
        config.toml, and nothing more while it did not): when it names another ledger now,
        ``change`` says so and the store reports it, once per change; the handle stays."""
        variable, section, key = _setting(home)
        if key == self._key:
            return
        self._key = key
        try:
            now = locate(str(home.root), variable, section)
            named = now.shown if now.postgres else "the file home"
        except CaptainError:
            now, named = None, "an unusable [ledger] url"
        if now is not None and (now.kind, now.url) == (self.location.kind, self.location.url):
            self.change = None  # back to the ledger in use
            return
        kept = self.location.shown if self.location.postgres else "files"
        where = ENV if variable else "config.toml"
        self.change = CaptainError(
            CHANGED,
            f"{where} now names {named} as the ledger; this process keeps the ledger it "
            f"started with ({kept}) and never follows the change: restart it to use the "
            "new one.",
            now=named,
            kept=kept,
        )
        home.store.reports.report(where, f"[{CHANGED}] {self.change.message}", moved=False)

    def close(self) -> None:
        """End the connections the handle opened (a database's; the files hold none)."""
        close = getattr(self.items, "close", None)
        if close is not None:
            close()


def _setting(home: Home) -> tuple[str | None, object, tuple[object, ...]]:
    """What decides a home's ledger (``state.work.location.locate``): ``CAPTAIN_LEDGER_URL``
    (empty is unset), config.toml's ``[ledger]`` section, and the pair of URLs they hold,
    compared to see whether the setting changed."""
    variable = os.environ.get(ENV) or None
    section = ledger_section(home, variable)
    return variable, section, (variable, section.get("url") if isinstance(section, dict) else None)


def handle_of(home: Home) -> LedgerHandle:
    """The one place a home's ledger is resolved (``state.work.location``): the database
    ``CAPTAIN_LEDGER_URL`` or ``[ledger] url`` names (``state.work.pg_backend``, imported
    only then: a file home loads no driver), else the home's own files. Resolved on the
    home's first ledger call and kept with it (``Home.ledger_handle``); each later call
    only looks whether the setting changed (``LedgerHandle.notice``). A home pointed at a
    database while its files still hold a ledger is refused (``ledger_not_imported``),
    and nothing is kept, until ``captain ledger migrate`` imports them
    (``state.work.importer``)."""
    handle = home.ledger_handle
    if isinstance(handle, LedgerHandle):
        handle.notice(home)
        return handle
    with home.ledger_guard:
        handle = home.ledger_handle
        if isinstance(handle, LedgerHandle):
            return handle
        variable, section, key = _setting(home)
        location = locate(str(home.root), variable, section)
        if location.postgres:
            from state.work import importer

            if importer.held(home):  # never follow a URL away from work the files hold
                raise importer.not_imported(home, location.shown)
        handle = LedgerHandle(home, location, key)
        home.ledger_handle = handle
        return handle


def backend_for(home: Home) -> LedgerBackend:
    """The home's work items (``handle_of(home).items``)."""
    return handle_of(home).items


def listener_for(home: Home) -> LedgerWakeups | None:
    """How a reader of ``home`` hears of ledger writes made elsewhere
    (``LedgerHandle.listener``)."""
    return handle_of(home).listener()

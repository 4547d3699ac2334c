"""The work ledger in a PostgreSQL database: the shared backend (``state.work.backend``).

Chosen by ``backend_for`` when ``CAPTAIN_LEDGER_URL`` or ``[ledger] url`` names a database
(``state.work.location``); the schema is ``state.work.pg_schema``'s, created by
``captain ledger migrate`` (a backend refuses a database that is not at its version). The
driver is reached through ``state.work.postgres`` only, so importing this module loads none.

How the interface's guarantees are kept (docs/ledger.md, "Storage: one interface, two
backends"):

- **Transactions.** One connection per thread and URL (autocommit outside a transaction,
  so a read never leaves one open). The outermost ``transaction`` is one database
  transaction (READ COMMITTED; COMMIT at the end, ROLLBACK on any exception); a nested one
  on the same thread joins it. ``ledger=True`` takes ``pg_advisory_xact_lock(LEDGER_KEY)``;
  ``work_id`` takes the item's advisory lock (two-key form: ``ITEM_CLASS`` and the ID's
  hash, so an item that does not exist yet is locked too) and then its row ``FOR UPDATE``.
  The order is the files': the ledger first, then the item; the ledger asked for inside an
  item-only transaction is refused. Every lock ends with the transaction; a process killed
  mid-way holds nothing, and the server rolls its writes back.
- **Append.** An INSERT under the primary key (work_id, seq): when a row is already there
  the same event is accepted and a different one refused (``message_conflict``). The
  item's row is written in the same transaction (``store_item``): never behind.
- **The clock.** ``now()`` is the database's ``clock_timestamp()``: a lease given on one
  host expires by the same clock on every other.
- **The open set** is the items whose row says they are not terminal (the partial index
  ``work_items_open``): ``mark_open``/``mark_closed`` have nothing to do.
- **Claims** read the queue ``FOR UPDATE SKIP LOCKED`` inside a transaction, with the clock
  and the count of slot holders in the same statement (``claim_view``); **pages** are
  keyset over ``work_id`` with the files' cursor (the last ID of a full page, when more
  remain).
- **Round trips.** A claim and a report are one statement each (``claim_at_once``,
  ``report_at_once``: pg_schema's ``captain_claim`` and ``captain_report``), one round trip,
  on a row as captain wrote it (``item_md5``); the general path, and every other
  transaction, sends its statements down one pipeline (psycopg's pipeline mode): ``BEGIN``
  and the locks are answered together (the block starts once they are held), the item's
  row comes with its lock (``FOR UPDATE``, kept for ``item``), and the writes nobody reads
  an answer from (the item's row, an input, a lease, the notifications) travel with the
  ``COMMIT``; an error among them fails the COMMIT and rolls everything back. There a
  claim is 5 round trips, a report 4 (docs/ledger.md, "Round trips").

Wake-ups (what watchfiles on the home is to the file backend): every committed transaction
that appended an event or stored an item notifies ``CHANNEL`` once per item it wrote, the
payload its work ID (``EVERYTHING`` instead when it wrote more than ``NOTIFY_MAX`` items).
The ``pg_notify`` calls run inside the transaction, just before its COMMIT: PostgreSQL
delivers them at the commit, never for a rollback, and folds repeats of one payload into
one. Lease heartbeats notify nothing (no panel shows them, and nothing waits on them).
``listen`` gives a ``Listener``: a connection of its own that LISTENs and reconnects when it
is lost, answering ``EVERYTHING`` after every (re)connection, since anything may have
changed while nobody listened. Notifications are a hint, never a log: a listener that was
not connected misses them, so every reader of them also re-reads on a clock.
"""

from __future__ import annotations

import contextlib
import threading
import time
from collections.abc import Collection, Iterator
from datetime import datetime, timedelta
from functools import partial
from typing import TYPE_CHECKING, Any, Literal, overload

from state.errors import CaptainError
from state.store import Reports
from state.work import corrupt, pg_schema, postgres
from state.work.ledger_records import (
    HOLDS_SLOT,
    TERMINAL,
    AtOnce,
    Attempt,
    BeforeCommit,
    Lease,
    WorkEvent,
    WorkItem,
)
from state.work.location import LedgerLocation

if TYPE_CHECKING:
    from state.work.postgres import Conn, Cursor

Row = tuple[Any, ...]  # a row as psycopg returns it

CHANNEL = "captain_ledger"  # LISTEN/NOTIFY: a committed write's work IDs (see the docstring)
EVERYTHING = "*"  # the payload, or a listener's answer, that means: re-read everything
NOTIFY_MAX = 100  # items one transaction notifies one by one; more are said as EVERYTHING
RETRY_SECONDS = 1.0  # a listener that lost its connection tries again after this long,
RETRY_MAX = 30.0  # twice as long each time it fails, up to this
# pg_advisory_xact_lock keys: the ledger's (one bigint: the bytes of "captainL"), and the
# class of the items' two-int keys (the bytes of "wrk1"); the two key spaces never overlap
LEDGER_KEY = int.from_bytes(b"captainL", "big", signed=True)
ITEM_CLASS = int.from_bytes(b"wrk1", "big", signed=True)
OPEN_STATES = tuple(sorted({"queued", *HOLDS_SLOT}))  # = work_items_open's predicate
assert not set(OPEN_STATES) & TERMINAL

_ITEM_COLUMNS = (
    "work_id",
    "source",
    "state",
    "generation",
    "seq",
    "requester",
    "crew",
    "assignment_id",
    "delivery_id",
    "replay_of",
    "target_revision",
    "input_sha256",
    "max_attempts",
    "created_at",
    "updated_at",
    "item",
)


_ITEM = corrupt.stored("item")  # the item's document, unless larger than any record
_EVENT = corrupt.stored("event")
# every write of an item's row says the MD5 of the document it wrote (``item_md5``): the
# one-statement claim and report act only on a row whose document still has it
# (pg_schema's step 2, ``captain_as_written``)
_UPSERT_ITEM = (
    f"INSERT INTO work_items ({', '.join(_ITEM_COLUMNS)}, item_md5) "
    f"SELECT v.*, md5(v.item::text) FROM (VALUES "
    f"({', '.join(['%s'] * (len(_ITEM_COLUMNS) - 1))}, %s::jsonb)) "
    f"AS v ({', '.join(_ITEM_COLUMNS)}) "
    "ON CONFLICT (work_id) DO UPDATE SET "
    + ", ".join(f"{c} = excluded.{c}" for c in (*_ITEM_COLUMNS, "item_md5") if c != "work_id")
)
_CLAIM = (
    "SELECT * FROM captain_claim(%s::text, %s::text, %s::timestamptz, %s::interval, "
    "%s::integer, %s::bigint, %s::integer, %s::integer, %s::text, %s::jsonb, %s::jsonb, "
    "%s::text, %s::text)"
)
_REPORT = (
    "SELECT * FROM captain_report(%s::text, %s::integer, %s::text, %s::boolean, "
    "%s::timestamptz, %s::integer, %s::bigint, %s::integer, %s::integer, %s::text, "
    "%s::jsonb, %s::bytea, %s::text)"
)


class _Thread(threading.local):
    """One thread's connection and the locks its open transaction holds."""

    def __init__(self) -> None:
        self.conn: Conn | None = None
        self.depth = 0
        self.held: set[str] = set()  # "ledger", "work-<id>"
        self.changed: set[str] = set()  # work IDs the open transaction wrote: notified
        self.pipeline: Any = None  # the open transaction's pipeline (psycopg.Pipeline)
        # the rows of the items this transaction locked, as the lock's statement read them:
        # a row locked FOR UPDATE changes only by this transaction's own store_item
        self.locked: dict[str, Row | None] = {}


class PostgresBackend:
    """One database's ledger, owned by one ``LedgerHandle`` (``state.work.backend``) and
    shared by the threads of its process; each thread has its own connection, which
    ``close`` ends."""

    name = "postgresql"

    def __init__(self, location: LedgerLocation, reports: Reports | None = None) -> None:
        self.location = location
        # who hears of a corrupt row (once each): the home's (state.store.Reports)
        self.reports = reports if reports is not None else Reports()
        self._local = _Thread()
        self._checked = False
        self._conns: list[Conn] = []  # every connection made, so ``close`` can end them all
        self._guard = threading.Lock()

    # -- connections --------------------------------------------------------------------------

    def _conn(self) -> Conn:
        local = self._local
        conn = local.conn
        if conn is not None and not conn.closed and not conn.broken:
            return conn
        if local.depth:  # the connection died inside a transaction: it is rolled back
            raise CaptainError(
                "ledger_unreachable",
                f"the connection to the ledger at {self.location.shown} was "
                "lost mid-transaction; nothing of it was kept.",
            )
        conn = postgres.connect(self.location, reports=self.reports)
        conn.autocommit = True  # reads outside a transaction never leave one open
        if not self._checked:
            self._check_schema(conn)
        local.conn = conn
        with self._guard:
            self._conns = [c for c in self._conns if not c.closed]
            self._conns.append(conn)
        return conn

    def _check_schema(self, conn: Conn) -> None:
        try:
            version = pg_schema.current_version(conn)
        except postgres.driver().Error as exc:
            conn.close()
            raise postgres.refused(self.location, exc) from None
        if version != pg_schema.LATEST:
            conn.close()
            if version > pg_schema.LATEST:
                raise pg_schema.newer(
                    version, f"the ledger at {self.location.shown}", url=self.location.shown
                )
            raise CaptainError(
                "ledger_not_migrated",
                f"the ledger at {self.location.shown} has schema version {version}, not "
                f"{pg_schema.LATEST}: run `captain ledger migrate` once (from any host).",
                url=self.location.shown,
                version=version,
            )
        self._checked = True

    def close(self) -> None:
        """Close every connection this backend made (tests; a process's end does it too)."""
        with self._guard:
            conns, self._conns = self._conns, []
        for conn in conns:
            with contextlib.suppress(Exception):
                conn.close()
        self._local = _Thread()

    @overload
    def run(
        self,
        sql: str,
        params: Any = (),
        *,
        fetch: Literal["one"],
        wait: bool = True,
        prepare: bool | None = None,
    ) -> Row | None: ...
    @overload
    def run(
        self,
        sql: str,
        params: Any = (),
        *,
        fetch: Literal["all"],
        wait: bool = True,
        prepare: bool | None = None,
    ) -> list[Row]: ...
    @overload
    def run(
        self,
        sql: str,
        params: Any = (),
        *,
        fetch: None = None,
        wait: bool = True,
        prepare: bool | None = None,
    ) -> Cursor: ...
    def run(
        self,
        sql: str,
        params: Any = (),
        *,
        fetch: str | None = None,
        wait: bool = True,
        prepare: bool | None = None,
    ) -> Any:
        """Execute on this thread's connection (inside its open transaction, if any: the
        deliveries' and tokens' stores write through this too, so one commit covers them and
        the ledger's rows); a driver error becomes a refusal.

        Inside a transaction, statements go down the transaction's pipeline: one whose
        answer nobody reads (``wait=False``: a lock, a write that cannot be refused but by
        an error) is sent with the next that is waited for, or with the COMMIT, so it
        costs no round trip of its own; its error, if any, is raised there and rolls the
        whole transaction back. Every other statement waits for its answer, as outside.
        ``prepare``: psycopg's (None: prepared once run often; a prepare costs a round trip
        of its own)."""
        psycopg = postgres.driver()
        conn = self._conn()
        try:
            cur = conn.execute(sql, params, prepare=prepare)
            if fetch == "one":
                return cur.fetchone()
            if fetch == "all":
                return cur.fetchall()
            pipeline = self._local.pipeline
            if wait and pipeline is not None:
                pipeline.sync()  # its answer (and any error) now, its rowcount set
            return cur
        except psycopg.Error as exc:
            if conn.broken:
                raise postgres.unreachable(self.location, exc) from None
            raise postgres.refused(self.location, exc) from None

    # -- transactions -------------------------------------------------------------------------

    @contextlib.contextmanager
    def transaction(
        self, work_id: str | None = None, *, ledger: bool = False
    ) -> Iterator[PostgresBackend]:
        local = self._local
        item_key = f"work-{work_id}" if work_id else None
        if ledger and "ledger" not in local.held and any(k != "ledger" for k in local.held):
            raise CaptainError(
                "store_error", "the ledger lock is taken before any item's, never inside one."
            )
        if local.depth == 0:
            conn = self._conn()
            psycopg = postgres.driver()
            # the transaction's statements go down one pipeline: BEGIN with the locks, the
            # last writes and the notifications with the COMMIT (``run``)
            pipeline = conn.pipeline() if psycopg.Pipeline.is_supported() else None
            try:
                if pipeline is not None:
                    local.pipeline = pipeline.__enter__()
                conn.execute("BEGIN")  # READ COMMITTED; answered with the locks
            except psycopg.Error as exc:
                self._end(conn, pipeline, exc)
                raise postgres.unreachable(self.location, exc) from None
            local.depth = 1
            try:
                self._take(ledger, work_id, item_key)
                yield self
                self._notify(local.changed)  # delivered at the COMMIT below, if it happens
            except BaseException as exc:
                local.depth, local.held, local.changed, local.locked = 0, set(), set(), {}
                self._end(conn, pipeline, exc)
                raise
            local.depth, local.held, local.changed, local.locked = 0, set(), set(), {}
            try:
                conn.execute("COMMIT")
                self._end(conn, pipeline, None)  # the pipeline's last answers: COMMIT's
            except psycopg.Error as exc:
                self._end(conn, pipeline, exc)
                if conn.broken:
                    raise postgres.unreachable(self.location, exc) from None
                raise postgres.refused(self.location, exc) from None
            return
        # joined: take only what the outer transaction lacks; it ends with the outer one
        taken = self._take(ledger, work_id, item_key)
        local.depth += 1
        try:
            yield self
        finally:
            local.depth -= 1
            for key in taken:  # as the files: the order check forgets an inner item's lock
                local.held.discard(key)

    def _end(self, conn: Conn, pipeline: Any, exc: BaseException | None) -> None:
        """Leave the transaction's pipeline (its last answers read: an error among them is
        raised, unless ``exc`` already is); after ``exc``, or an error here, ROLLBACK
        whatever the server still holds open (nothing, when the connection is gone)."""
        self._local.pipeline = None
        psycopg = postgres.driver()
        try:
            if pipeline is not None:
                pipeline.__exit__(*((type(exc), exc, exc.__traceback__) if exc else (None,) * 3))
        except psycopg.Error:
            if exc is None:
                self._rollback(conn)
                raise
        if exc is not None:
            self._rollback(conn)

    @staticmethod
    def _rollback(conn: Conn) -> None:
        idle = postgres.driver().pq.TransactionStatus.IDLE
        with contextlib.suppress(Exception):
            if not conn.broken and not conn.closed and conn.info.transaction_status != idle:
                conn.execute("ROLLBACK")

    def _take(self, ledger: bool, work_id: str | None, item_key: str | None) -> list[str]:
        """Take the locks asked for, in their order, and wait until they are held (the
        block runs under them); sent down the pipeline together (with the BEGIN), one round
        trip. The item's row is read by its lock (``FOR UPDATE``) and kept for ``item``."""
        local = self._local
        taken = []
        item = bool(item_key and item_key not in local.held)
        if ledger and "ledger" not in local.held:
            self.run("SELECT pg_advisory_xact_lock(%s::bigint)", (LEDGER_KEY,), wait=not item)
            local.held.add("ledger")
            taken.append("ledger")
        if item and item_key and work_id:
            self.run(
                "SELECT pg_advisory_xact_lock(%s::integer, hashtext(%s))",
                (ITEM_CLASS, work_id),
                wait=False,
            )
            local.locked[work_id] = self.run(
                f"SELECT work_id, {_ITEM} FROM work_items WHERE work_id = %s FOR UPDATE",
                (work_id,),
                fetch="one",
            )
            local.held.add(item_key)
            taken.append(item_key)
        return taken

    def _notify(self, changed: set[str]) -> None:
        """Queue the transaction's notifications (sent by PostgreSQL at its COMMIT)."""
        if not changed:
            return
        payloads = sorted(changed) if len(changed) <= NOTIFY_MAX else [EVERYTHING]
        self.run(
            "SELECT pg_notify(%s, id) FROM unnest(%s::text[]) AS id",
            (CHANNEL, payloads),
            wait=False,
        )

    def changed(self, work_id: str) -> None:
        """Say that the open transaction changed ``work_id`` (the ledger's own writes do
        this themselves; a store that writes an item's rows through ``run`` calls it)."""
        if self._local.depth:
            self._local.changed.add(work_id)

    def listen(self) -> Listener:
        """A ``Listener`` for this ledger's notifications (it connects on its first wait)."""
        return Listener(self.location)

    def now(self) -> datetime:
        row = self.run("SELECT clock_timestamp()", fetch="one")
        assert row is not None  # a SELECT without FROM has its one row
        at: datetime = row[0]
        return at

    # -- reading ------------------------------------------------------------------------------

    def exists(self, work_id: str) -> bool:
        return (
            self.run("SELECT 1 FROM work_items WHERE work_id = %s", (work_id,), fetch="one")
            is not None
        )

    def exists_durably(self, work_id: str) -> bool:
        # inside a transaction the row may be this transaction's own, not yet committed
        return not self._local.depth and self.exists(work_id)

    def item(self, work_id: str, *, repair: bool = False) -> WorkItem | None:
        # the row is written in the event's transaction: never behind, nothing to repair
        locked = self._local.locked
        if work_id in locked:  # read by this transaction's lock, unchanged since
            row = locked[work_id]
        else:
            row = self.run(
                f"SELECT work_id, {_ITEM} FROM work_items WHERE work_id = %s",
                (work_id,),
                fetch="one",
            )
        return None if row is None else self._item_of(*row)

    @staticmethod
    def _item_of(work_id: str, doc: str | None, size: int) -> WorkItem:
        """A row's item, or ``ledger_corrupt`` naming it (``state.work.corrupt``)."""
        item = corrupt.parse(WorkItem, doc, what="work item", ident=work_id, size=size)
        if item.work_id != work_id:
            raise corrupt.error("work item", work_id, "its record is another item's")
        return item

    def _items(self, sql: list[str], params: list[Any], limit: int | None) -> list[WorkItem]:
        """The items of ``sql`` (a query of ``work_id, stored('item')`` with no ORDER or
        LIMIT yet), in ID order, at most ``limit``: a corrupt row is skipped and reported
        (``corrupt.skip``) and the next ones are read in its place."""
        out: list[WorkItem] = []
        after: str | None = None
        while True:
            query, args = list(sql), list(params)
            if after is not None:
                query.append("AND work_id > %s")
                args.append(after)
            query.append("ORDER BY work_id")
            wanted = None if limit is None else limit - len(out)
            if wanted is not None:
                query.append("LIMIT %s")
                args.append(wanted)
                if self._local.depth:
                    # a claim choosing the next item: one another transaction holds is
                    # skipped
                    query.append("FOR UPDATE SKIP LOCKED")
            rows = self.run(" ".join(query), args, fetch="all")
            for row in rows:
                item = corrupt.readable(partial(self._item_of, *row), self.reports)
                if item is not None:
                    out.append(item)
            if wanted is None or limit is None or len(rows) < wanted or len(out) >= limit:
                return out
            after = rows[-1][0]

    @staticmethod
    def _event_of(
        work_id: str, seq: int, doc: str | None, size: int, detail: bytes | None
    ) -> WorkEvent:
        ident = f"{work_id} #{seq}"
        event = corrupt.parse(WorkEvent, doc, what="event", ident=ident, size=size)
        if event.seq != seq:
            raise corrupt.error("event", ident, f"its record says it is event {event.seq}")
        if detail is not None:
            text = corrupt.check(lambda: bytes(detail).decode(), what="event", ident=ident)
            event = event.model_copy(update={"detail": text})
        return event

    def events(self, work_id: str) -> list[WorkEvent]:
        """Up to the first unreadable event (reported once), as the files' history stops
        at a quarantined one."""
        rows = self.run(
            f"SELECT seq, {_EVENT}, detail FROM work_events WHERE work_id = %s ORDER BY seq",
            (work_id,),
            fetch="all",
        )
        out = []
        for row in rows:
            event = corrupt.readable(partial(self._event_of, work_id, *row), self.reports)
            if event is None:
                break
            out.append(event)
        return out

    def lease(self, work_id: str) -> Lease | None:
        row = self.run(
            "SELECT run_id, generation, holder, expires_at, heartbeat_at "
            "FROM work_leases WHERE work_id = %s",
            (work_id,),
            fetch="one",
        )
        if row is None:
            return None
        run_id, generation, holder, expires_at, heartbeat_at = row
        return Lease(
            work_id=work_id,
            run_id=run_id,
            generation=generation,
            holder=holder,
            expires_at=expires_at,
            heartbeat_at=heartbeat_at,
        )

    def input(self, work_id: str) -> dict[str, Any] | None:
        row = self.run("SELECT input FROM work_inputs WHERE work_id = %s", (work_id,), fetch="one")
        if row is None:
            return None
        data = corrupt.loads(bytes(row[0]), what="work input", ident=work_id)
        if not isinstance(data, dict):
            raise corrupt.error("work input", work_id, "is not a JSON object")
        return data

    def input_bytes(self, work_id: str) -> bytes | None:
        """The input exactly as stored (its SHA-256 is the item's ``input_sha256``)."""
        row = self.run("SELECT input FROM work_inputs WHERE work_id = %s", (work_id,), fetch="one")
        return None if row is None else bytes(row[0])

    def open_ids(self) -> list[str]:
        rows = self.run(
            "SELECT work_id FROM work_items WHERE state = ANY(%s) ORDER BY work_id",
            (list(OPEN_STATES),),
            fetch="all",
        )
        return [r[0] for r in rows]

    def recent_finished_ids(self, limit: int) -> list[str]:
        # the primary key walked backwards, open rows filtered out: it stops after
        # ``limit`` finished ones, so its cost is the open items plus ``limit``
        if limit <= 0:
            return []
        rows = self.run(
            "SELECT work_id FROM work_items WHERE NOT (state = ANY(%s)) "
            "ORDER BY work_id DESC LIMIT %s",
            (list(OPEN_STATES), limit),
            fetch="all",
        )
        return [r[0] for r in rows]

    def all_ids(self) -> list[str]:
        return [
            r[0] for r in self.run("SELECT work_id FROM work_items ORDER BY work_id", fetch="all")
        ]

    def open_items(
        self,
        states: Collection[str],
        *,
        source: str | None = None,
        crew: bool | None = None,
        limit: int | None = None,
    ) -> list[WorkItem]:
        states = [s for s in states if s in OPEN_STATES]  # terminal items are not open
        sql = [f"SELECT work_id, {_ITEM} FROM work_items WHERE state = ANY(%s)"]
        params: list[Any] = [states]
        if source is not None:
            sql.append("AND source = %s")
            params.append(source)
        if crew is not None:
            sql.append("AND crew IS NOT NULL" if crew else "AND crew IS NULL")
        return self._items(sql, params, limit)

    def claim_view(self, *, source: str | None) -> tuple[datetime, int, WorkItem | None]:
        # one statement: the clock, the slot holders counted by their rows' state, and the
        # oldest queued row of no crew that no other transaction holds, locked
        where = "state = 'queued' AND crew IS NULL" + (" AND source = %s" if source else "")
        row = self.run(
            "SELECT clock_timestamp(), (SELECT count(*) FROM work_items WHERE state = ANY(%s)), "
            f"q.* FROM (SELECT 1) AS one LEFT JOIN LATERAL (SELECT work_id, {_ITEM} "
            f"FROM work_items WHERE {where} ORDER BY work_id LIMIT 1 "
            "FOR UPDATE SKIP LOCKED) AS q ON true",
            [sorted(HOLDS_SLOT), *([source] if source else [])],
            fetch="one",
        )
        assert row is not None  # the outer query has its one row
        at, holding, work_id, doc, size = row
        if work_id is None:
            return at, holding, None
        item = corrupt.readable(partial(self._item_of, work_id, doc, size), self.reports)
        if item is None:  # unreadable (reported): the queue as open_items reads it, skipping
            waiting = self.open_items(("queued",), source=source, crew=False, limit=1)
            item = waiting[0] if waiting else None
        return at, holding, item

    def page(
        self, *, state: str | None, source: str | None, limit: int, after: str | None
    ) -> tuple[list[WorkItem], str | None]:
        sql = [f"SELECT work_id, {_ITEM} FROM work_items WHERE true"]
        params: list[Any] = []
        if after is not None:
            sql.append("AND work_id > %s")
            params.append(after)
        if state:
            sql.append("AND state = %s")
            params.append(state)
        if source:
            sql.append("AND source = %s")
            params.append(source)
        items = self._items(sql, params, limit + 1)  # one more: whether a next page exists
        if len(items) > limit:
            return items[:limit], items[limit - 1].work_id
        return items, None

    # -- writing (inside a transaction) -------------------------------------------------------

    def put_input(self, work_id: str, data: bytes) -> None:
        import hashlib

        self.run(
            "INSERT INTO work_inputs (work_id, sha256, input) VALUES (%s, %s, %s) "
            "ON CONFLICT (work_id) DO NOTHING",
            (work_id, hashlib.sha256(data).hexdigest(), data),
            wait=False,
        )

    def mark_open(self, work_id: str) -> None:
        """Nothing to do: the row's state says whether the item is open."""

    @staticmethod
    def _event_doc(event: WorkEvent) -> dict[str, Any]:
        """An event's stored document (its detail is a column of its own)."""
        return event.model_dump(mode="json", by_alias=True, exclude_none=False, exclude={"detail"})

    def append(self, work_id: str, event: WorkEvent) -> None:
        doc = self._event_doc(event)
        detail = event.detail.encode() if event.detail is not None else None
        Jsonb = postgres.driver().types.json.Jsonb
        row = self.run(
            "INSERT INTO work_events (work_id, seq, type, state, generation, actor, at, event, "
            "detail) VALUES (%s, %s, %s, %s, %s, %s, %s, %s, %s) "
            "ON CONFLICT (work_id, seq) DO NOTHING RETURNING seq",
            (
                work_id,
                event.seq,
                event.type,
                event.state,
                event.generation,
                event.actor,
                event.at,
                Jsonb(doc),
                detail,
            ),
            fetch="one",
        )
        if row is not None:
            self.changed(work_id)
            return
        there = self.run(
            f"SELECT seq, {_EVENT}, detail FROM work_events WHERE work_id = %s AND seq = %s",
            (work_id, event.seq),
            fetch="one",
        )
        if there is not None and self._event_of(work_id, *there) == event:
            return  # the same event again: already there
        raise CaptainError(
            "message_conflict",
            f"event {event.seq} of {work_id} already exists with different content; "
            "nothing was overwritten.",
        )

    def store_item(self, item: WorkItem) -> None:
        self.changed(item.work_id)
        self._local.locked.pop(item.work_id, None)  # read again from here on
        Jsonb = postgres.driver().types.json.Jsonb
        doc = item.model_dump(mode="json", by_alias=True, exclude_none=False)
        self.run(  # refused only by an error: it goes with the next statement waited for
            _UPSERT_ITEM,
            (
                item.work_id,
                item.source,
                item.state,
                item.generation,
                item.seq,
                item.requester,
                item.crew,
                item.assignment_id,
                item.delivery_id,
                item.replay_of,
                item.target_revision,
                item.input_sha256,
                item.max_attempts,
                item.created_at,
                item.updated_at,
                Jsonb(doc),
            ),
            wait=False,
        )

    def mark_closed(self, work_id: str) -> None:
        """Nothing to do: a terminal row is outside the open set by its state."""

    def discard_unrecorded(self, work_id: str) -> None:
        """Nothing to do: the failed step's transaction is rolled back, its rows with it."""

    def put_lease(self, lease: Lease) -> None:
        self.run(
            "INSERT INTO work_leases (work_id, run_id, generation, holder, heartbeat_at, "
            "expires_at) VALUES (%s, %s, %s, %s, %s, %s) ON CONFLICT (work_id) DO UPDATE SET "
            "run_id = excluded.run_id, generation = excluded.generation, "
            "holder = excluded.holder, heartbeat_at = excluded.heartbeat_at, "
            "expires_at = excluded.expires_at",
            (
                lease.work_id,
                lease.run_id,
                lease.generation,
                lease.holder,
                lease.heartbeat_at,
                lease.expires_at,
            ),
            wait=False,
        )

    # -- a claim and a report in one statement (pg_schema's captain_claim, captain_report) -------

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
        Jsonb = postgres.driver().types.json.Jsonb
        doc = attempt.model_dump(mode="json", by_alias=True, exclude_none=False)
        told = self._event_doc(event)  # a time the caller named: written as the caller's
        named = (told["at"], told["lease_expires_at"]) if at is not None else (None, None)
        params = (
            *(work_id, source, at, lease, slots),
            *(LEDGER_KEY, ITEM_CLASS, corrupt.MAX_BYTES, CHANNEL),
            *(Jsonb(told), Jsonb(doc), *named),
        )
        return self._at_once(_CLAIM, params, None, before_commit)

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
        Jsonb = postgres.driver().types.json.Jsonb
        detail = event.detail.encode() if event.detail is not None else None
        told = self._event_doc(event)
        params = (
            *(work_id, generation, outcome, repeatable, at, max_attempts),
            *(LEDGER_KEY, ITEM_CLASS, corrupt.MAX_BYTES, CHANNEL),
            *(Jsonb(told), detail, told["at"] if at is not None else None),
        )
        return self._at_once(_REPORT, params, event.detail, before_commit)

    def _at_once(
        self, sql: str, params: tuple[Any, ...], detail: str | None, hook: BeforeCommit | None
    ) -> AtOnce | None:
        """One statement on this thread's connection, outside any transaction: its own
        transaction, one round trip. With ``hook`` (the crash tests) it runs inside
        BEGIN … COMMIT instead, and ``hook`` is called between the statement's writes and
        the COMMIT. None: the function left it to the general path (nothing written), or
        a transaction is open on this thread (the statement would join it: its own steps
        are the general path's)."""
        if self._local.depth:
            return None
        # never prepared: preparing is a round trip more, and saves next to nothing here
        if hook is None:
            return self._answer(sql, self.run(sql, params, fetch="one", prepare=False), detail)
        with self.transaction():
            answer = self._answer(sql, self.run(sql, params, fetch="one", prepare=False), detail)
            if answer is not None and answer.item is not None:
                hook(answer)
            return answer

    def _answer(self, sql: str, row: Row | None, detail: str | None) -> AtOnce | None:
        if row is None or len(row) != 6:  # captain's functions return one row of six, always
            name = "captain_claim" if sql is _CLAIM else "captain_report"
            raise CaptainError(
                "ledger_error",
                f"the ledger's database at {self.location.shown} answered {name} with "
                f"{'no row' if row is None else f'a row of {len(row)} columns'}: the function "
                "is not the one captain's schema made (changed in the database by hand).",
                url=self.location.shown,
            )
        outcome, state, third, work_id, item_doc, event_doc = row
        if outcome == "general":
            return None
        facts: dict[str, Any] = {"work_id": work_id, "state": state}
        facts["generation" if isinstance(third, int) else "crew"] = third
        if item_doc is None:
            return AtOnce(outcome, **facts)
        item = self._item_of(work_id, item_doc, len(item_doc))
        event = corrupt.parse(WorkEvent, event_doc, what="event", ident=f"{work_id} #{item.seq}")
        if detail is not None:
            event = event.model_copy(update={"detail": detail})
        return AtOnce(outcome, item=item, event=event, **facts)


# -- wake-ups -----------------------------------------------------------------------------------


class Listener:
    """``LISTEN captain_ledger`` on a connection of its own (autocommit, so it never holds a
    transaction open). One thread uses it: ``wait`` and ``close`` from the same thread."""

    def __init__(self, location: LedgerLocation) -> None:
        self.location = location
        self.conn: Conn | None = None
        self.connects = 0  # successful (re)connections so far (tests, the report)
        self._retry_at = 0.0
        self._retry = RETRY_SECONDS
        self._closed = False

    def wait(self, timeout: float) -> list[str]:
        """The work IDs whose writes were committed since the last call, waiting up to
        ``timeout`` seconds for the first (0: only what has arrived). ``EVERYTHING`` among
        them means anything may have changed: after a (re)connection, or a transaction that
        wrote too many items to name. A lost or refused connection never raises: the wait
        sleeps, and a new connection is tried after a back-off."""
        deadline = time.monotonic() + max(timeout, 0.0)
        if self._closed:
            return []
        heard: list[str] = []
        if self.conn is None or self.conn.closed or self.conn.broken:
            self._drop()
            if time.monotonic() < self._retry_at:
                time.sleep(max(0.0, min(deadline, self._retry_at) - time.monotonic()))
                return []
            if not self._connect():
                time.sleep(max(0.0, min(deadline, self._retry_at) - time.monotonic()))
                return []
            heard.append(EVERYTHING)  # whatever was written while nobody listened
        assert self.conn is not None  # connected above, or it already was
        psycopg = postgres.driver()
        try:
            wait = 0.0 if heard else max(0.0, deadline - time.monotonic())
            for note in self.conn.notifies(timeout=wait, stop_after=1):
                heard.append(note.payload)
            for note in self.conn.notifies(timeout=0):  # the rest that already arrived
                heard.append(note.payload)
        except psycopg.Error:
            self._drop()  # lost: the next wait reconnects and says EVERYTHING
            self._retry_at = time.monotonic()
        return list(dict.fromkeys(heard))

    def _connect(self) -> bool:
        psycopg = postgres.driver()
        try:
            conn = postgres.connect(self.location)
        except CaptainError:
            conn = None
        try:
            if conn is not None:
                conn.autocommit = True
                conn.execute(f"LISTEN {CHANNEL}")
        except psycopg.Error:
            with contextlib.suppress(Exception):
                if conn is not None:  # it is: only its LISTEN can fail
                    conn.close()
            conn = None
        if conn is None:
            self._retry_at = time.monotonic() + self._retry
            self._retry = min(self._retry * 2, RETRY_MAX)
            return False
        self.conn = conn
        self.connects += 1
        self._retry = RETRY_SECONDS
        return True

    def _drop(self) -> None:
        conn, self.conn = self.conn, None
        if conn is not None:
            with contextlib.suppress(Exception):
                conn.close()

    @property
    def connected(self) -> bool:
        """Whether it is listening now (a connection up, ``LISTEN`` done): every write
        committed meanwhile is notified to it."""
        return self.conn is not None and not self.conn.closed and not self.conn.broken

    def backend_pid(self) -> int | None:
        """The server process serving this listener (tests end it to cut the line)."""
        return None if self.conn is None or self.conn.closed else self.conn.info.backend_pid

    def close(self) -> None:
        self._closed = True
        self._drop()

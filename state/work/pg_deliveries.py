"""Webhook deliveries in the PostgreSQL ledger's database: the shared ``DeliveryStore``.

Chosen by ``state.work.deliveries.store_for`` when the home's work ledger is on
PostgreSQL (``backend_for``), so every home pointed at one database — two hosts, two
``captain serve`` — shares one set of deliveries: a delivery made to each is one record and
one work item. The tables are schema v1's (``state.work.pg_schema``): ``deliveries``,
``delivery_bodies``, ``delivery_body_claims``, ``delivery_rejections``. Every statement goes
through ``PostgresBackend.run`` on this thread's connection, so inside
``transaction()`` (the ledger's own transaction) it commits with the work item it creates.

How the store's guarantees are kept (``state.work.delivery_store``):

- **Identity** is the unique constraint ``deliveries_identity (endpoint_id,
  source_delivery_id)``. ``claim`` is ``INSERT … ON CONFLICT (endpoint_id,
  source_delivery_id) DO NOTHING`` of the whole record, then reads back which delivery ID
  holds the identity: a second intake of the same delivery waits on the first one's
  uncommitted row, then finds it (READ COMMITTED: each statement sees what committed
  before it). The record is create-once by trigger; ``put_record`` has nothing left to do.
- **Atomic intakes.** The record, its body (``delivery_bodies`` references the record, so
  it is written after it, in the same transaction) and the work item commit together, or a
  kill anywhere rolls all of it back: no pending marker, nothing for ``settle_pending``.
- **The clock** is the database's (``PostgresBackend.now``), given in UTC.
- **Body claims** are rows keyed (endpoint_id, body_sha256), read ``FOR UPDATE`` when
  claimed so a renewal and a purge of one claim serialize; the purge deletes only the rows
  whose window is over at its own statement's snapshot, so a renewed claim stays.
- **Rejections** are pruned by their ``received_at`` and their time-ordered IDs.

Text columns cannot hold NUL: a refusal's free-form fields (anything a sender put in a
header) have it replaced by U+FFFD; a recorded delivery's are printable already.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from datetime import datetime, timedelta, timezone
from functools import partial
from typing import TYPE_CHECKING, Any

from state.errors import CaptainError
from state.work import corrupt, postgres
from state.work.delivery_store import BodySeen, Rejection
from state.work.ledger_records import Delivery

if TYPE_CHECKING:
    from state.work.pg_backend import PostgresBackend, Row

_COLUMNS = (
    "delivery_id",
    "endpoint_id",
    "source_delivery_id",
    "event",
    "received_at",
    "body_sha256",
    "body_bytes",
    "raw_body_expires_at",
    "filter_reason",
    "work_id",
    "routine",
    "record",
)
_INSERT = (
    f"INSERT INTO deliveries ({', '.join(_COLUMNS)}) "
    f"VALUES ({', '.join(['%s'] * len(_COLUMNS))}) "
    "ON CONFLICT (endpoint_id, source_delivery_id) DO NOTHING"
)
_ORDER = 'received_at, delivery_id COLLATE "C"'  # the files' (received_at, delivery_id)
_CLAIM_COLUMNS = "endpoint_id, body_sha256, source_delivery_id, until"
_REJECTION_COLUMNS = (
    "rejection_id, endpoint_id, source_delivery_id, event, received_at, "
    "reason, body_sha256, body_bytes"
)


_STORED = corrupt.stored("record")


def _record_of(delivery_id: str, doc: str | None, size: int) -> Delivery:
    """A row's record, or ``ledger_corrupt`` naming it (``state.work.corrupt``)."""
    record = corrupt.parse(Delivery, doc, what="delivery", ident=delivery_id, size=size)
    if record.delivery_id != delivery_id:
        raise corrupt.error("delivery", delivery_id, "its record is another delivery's")
    return record


def _utc(value: datetime) -> datetime:
    return value.astimezone(timezone.utc)


def _text(value: str | None) -> str | None:
    return None if value is None else value.replace("\x00", "\ufffd")


class PostgresDeliveries:
    """The deliveries of one PostgreSQL ledger, through its backend (``pg_backend``)."""

    name = "postgresql"

    def __init__(self, backend: PostgresBackend) -> None:
        self.backend = backend
        self.run = backend.run

    @contextlib.contextmanager
    def transaction(self) -> Iterator[None]:
        with self.backend.transaction():
            yield

    def now(self) -> datetime:
        return _utc(self.backend.now())

    # -- identity and records -----------------------------------------------------------------

    def knows(self, endpoint_id: str, source_delivery_id: str) -> bool:
        return self.identity(endpoint_id, source_delivery_id) is not None

    def identity(self, endpoint_id: str, source_delivery_id: str) -> str | None:
        row = self.run(
            "SELECT delivery_id FROM deliveries WHERE endpoint_id = %s AND source_delivery_id = %s",
            (endpoint_id, source_delivery_id),
            fetch="one",
        )
        return None if row is None else row[0]

    def claim(self, record: Delivery) -> str:
        Jsonb = postgres.driver().types.json.Jsonb
        doc = record.model_dump(mode="json", by_alias=True)
        self.run(
            _INSERT,
            (
                record.delivery_id,
                record.endpoint_id,
                record.source_delivery_id,
                record.event,
                record.received_at,
                record.body_sha256,
                record.body_bytes,
                record.raw_body_expires_at,
                record.filter_reason,
                record.work_id,
                record.routine,
                Jsonb(doc),
            ),
        )
        held = self.identity(record.endpoint_id, record.source_delivery_id)
        if held is None:
            raise CaptainError("store_error", "a delivery identity record could not be read back.")
        return held

    def record(self, delivery_id: str) -> Delivery | None:
        row = self.run(
            f"SELECT delivery_id, {_STORED} FROM deliveries WHERE delivery_id = %s",
            (delivery_id,),
            fetch="one",
        )
        return None if row is None else _record_of(*row)

    def put_body(self, record: Delivery, body: bytes) -> None:
        self.run(
            "INSERT INTO delivery_bodies (delivery_id, body, expires_at) "
            "VALUES (%s, %s, %s) ON CONFLICT (delivery_id) DO NOTHING",
            (record.delivery_id, body, record.raw_body_expires_at),
        )

    def put_record(self, record: Delivery) -> bool:
        """Nothing to write: ``claim`` stored the record's row in this transaction (the
        caller found it there, equal to ``record``)."""
        return True

    def records(
        self,
        *,
        endpoint_id: str | None = None,
        after: Delivery | None = None,
        limit: int | None = None,
    ) -> list[Delivery]:
        # a corrupt row is skipped and reported (corrupt.skip), and the rows after it are
        # read in its place: the keyset goes on from the last row read, whatever it held
        out: list[Delivery] = []
        key = None if after is None else (after.received_at, after.delivery_id)
        while True:
            sql = [f"SELECT received_at, delivery_id, {_STORED} FROM deliveries WHERE true"]
            params: list[Any] = []
            if endpoint_id is not None:
                sql.append("AND endpoint_id = %s")
                params.append(endpoint_id)
            if key is not None:
                sql.append('AND (received_at, delivery_id COLLATE "C") > (%s, %s)')
                params += list(key)
            sql.append(f"ORDER BY {_ORDER}")
            wanted = None if limit is None else limit - len(out)
            if wanted is not None:
                sql.append("LIMIT %s")
                params.append(wanted)
            rows = self.run(" ".join(sql), params, fetch="all")
            for _, delivery_id, doc, size in rows:
                record = corrupt.readable(
                    partial(_record_of, delivery_id, doc, size), self.backend.reports
                )
                if record is not None:
                    out.append(record)
            if wanted is None or limit is None or len(rows) < wanted or len(out) >= limit:
                return out
            key = (rows[-1][0], rows[-1][1])

    def endpoints(self) -> set[str]:
        return {r[0] for r in self.run("SELECT DISTINCT endpoint_id FROM deliveries", fetch="all")}

    # -- intakes: one transaction each, so none is ever left pending ----------------------------

    def mark_pending(self, delivery_id: str) -> None:
        """Nothing to do: the intake commits whole or not at all."""

    def settled(self, delivery_id: str) -> None:
        """Nothing to do (see ``mark_pending``)."""

    def pending(self) -> list[str]:
        return []

    # -- bodies -------------------------------------------------------------------------------

    def body_held(self, record: Delivery) -> bool:
        return (
            self.run(
                "SELECT 1 FROM delivery_bodies WHERE delivery_id = %s",
                (record.delivery_id,),
                fetch="one",
            )
            is not None
        )

    def body(self, record: Delivery) -> bytes | None:
        row = self.run(
            "SELECT body FROM delivery_bodies WHERE delivery_id = %s",
            (record.delivery_id,),
            fetch="one",
        )
        return None if row is None else bytes(row[0])

    def purge_bodies(self, at: datetime) -> int:
        """A body's ``expires_at`` is its record's ``raw_body_expires_at`` (a body always
        has its record here: no orphans to age)."""
        return self.run("DELETE FROM delivery_bodies WHERE expires_at <= %s", (at,)).rowcount

    # -- body claims --------------------------------------------------------------------------

    def _claim_row(self, row: Row | None) -> BodySeen | None:
        if row is None:
            return None
        endpoint_id, sha, source_delivery_id, until = row
        return BodySeen(
            endpoint_id=endpoint_id,
            body_sha256=sha,
            source_delivery_id=source_delivery_id,
            until=_utc(until),
        )

    def claim_body(self, mine: BodySeen) -> BodySeen | None:
        self.run(
            f"INSERT INTO delivery_body_claims ({_CLAIM_COLUMNS}) VALUES (%s, %s, %s, %s) "
            "ON CONFLICT (endpoint_id, body_sha256) DO NOTHING",
            (mine.endpoint_id, mine.body_sha256, mine.source_delivery_id, mine.until),
        )
        return self._claim_row(
            self.run(
                f"SELECT {_CLAIM_COLUMNS} FROM delivery_body_claims WHERE endpoint_id = %s AND "
                "body_sha256 = %s FOR UPDATE",
                (mine.endpoint_id, mine.body_sha256),
                fetch="one",
            )
        )

    def renew_body_claim(self, mine: BodySeen) -> BodySeen | None:
        return self._claim_row(
            self.run(
                f"INSERT INTO delivery_body_claims ({_CLAIM_COLUMNS}) VALUES (%s, %s, %s, %s) "
                "ON CONFLICT (endpoint_id, body_sha256) DO UPDATE SET "
                "source_delivery_id = excluded.source_delivery_id, until = excluded.until "
                f"RETURNING {_CLAIM_COLUMNS}",
                (mine.endpoint_id, mine.body_sha256, mine.source_delivery_id, mine.until),
                fetch="one",
            )
        )

    def drop_body_claims(self, at: datetime) -> int:
        # a row an intake renews meanwhile is re-checked after its lock (READ COMMITTED):
        # its new window is not over, so it stays
        return self.run("DELETE FROM delivery_body_claims WHERE until <= %s", (at,)).rowcount

    # -- rejections ---------------------------------------------------------------------------

    def put_rejection(self, record: Rejection) -> None:
        self.run(
            f"INSERT INTO delivery_rejections ({_REJECTION_COLUMNS}) "
            "VALUES (%s, %s, %s, %s, %s, %s, %s, %s)",
            (
                record.rejection_id,
                _text(record.endpoint_id),
                _text(record.source_delivery_id),
                _text(record.event),
                record.received_at,
                _text(record.reason),
                record.body_sha256,
                record.body_bytes,
            ),
        )

    def prune_rejections(self, keep: int, days: float, at: datetime | None = None) -> int:
        cutoff = (at or self.now()) - timedelta(days=days)
        return self.run(
            'DELETE FROM delivery_rejections WHERE received_at < %s OR rejection_id COLLATE "C" '
            '< (SELECT min(rejection_id COLLATE "C") FROM (SELECT rejection_id FROM '
            'delivery_rejections ORDER BY rejection_id COLLATE "C" DESC LIMIT %s) AS newest)',
            (cutoff, keep),
        ).rowcount

    def rejections(self) -> list[Rejection]:
        rows = self.run(
            f"SELECT {_REJECTION_COLUMNS} FROM delivery_rejections "
            'ORDER BY rejection_id COLLATE "C"',
            fetch="all",
        )
        return [
            Rejection(
                rejection_id=r[0],
                endpoint_id=r[1],
                source_delivery_id=r[2],
                event=r[3],
                received_at=_utc(r[4]),
                reason=r[5],
                body_sha256=r[6],
                body_bytes=r[7],
            )
            for r in rows
        ]

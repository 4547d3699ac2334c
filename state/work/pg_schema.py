"""The ledger's PostgreSQL schema, as versioned steps, and the migration that applies them.

``STEPS`` is append-only: a released step is never edited, a change is a new step. The
migration runs in one transaction under a transaction-level advisory lock (``LOCK_KEY``),
so two ``captain ledger migrate`` runs from two hosts at once serialize: the first applies
what is missing, the second finds the schema current and changes nothing. DDL in
PostgreSQL is transactional, so a migration killed midway leaves the previous version.

What the tables mean is the file home's model (state/work/ledger_records.py, docs/ledger.md) kept
in a database:

- ``work_items``: one row per item, its folded ``WorkItem`` in ``item`` (jsonb) beside the
  columns claims, filters and keyset pages read; the open set is the partial index on the
  states that are not terminal.
- ``work_events``: the history, unique (work_id, seq); append-only by trigger (an UPDATE,
  DELETE or TRUNCATE is refused, the owner's included). An event's ``detail`` is ``bytea``:
  it may hold characters (NUL) that text and jsonb cannot.
- ``work_inputs``: the accepted input's bytes, create-once (same trigger).
- ``work_leases``: the live lease of the current attempt (mutable: not history). Its times
  are the DATABASE's clock: the backend's ``now()`` is ``SELECT now()``, and a lease is
  judged expired by ``expires_at <= now()`` in SQL, so hosts whose clocks disagree agree
  on when it lapses. (Not forced by a trigger: the ledger's rules compute ``expires_at``
  from the backend's clock, and its tests pass their own times to both backends.)
- ``ledger_slots``: capacity as rows, one per slot, each held by at most one item
  (``work_id`` unique), for claims that take a free slot row ``FOR UPDATE SKIP LOCKED`` in
  the same transaction as the item's row. Not used yet: ``pg_backend`` counts capacity
  under the ledger's advisory lock, so claims are still serialized (docs/ledger.md).
- ``deliveries`` (identity: unique (endpoint_id, source_delivery_id); create-once, kept
  forever), ``delivery_bodies`` (the raw body until purged), ``delivery_body_claims``,
  ``delivery_rejections``.
- ``api_tokens`` (the SHA-256 only), ``ledger_meta`` (the one workspace ID).
- ``schema_version``: one row per applied step.

Nothing here imports a driver: ``migrate`` takes an open DB-API style connection
(psycopg 3), which ``state.work.postgres`` makes.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from state.errors import CaptainError

# pg_advisory_xact_lock's key for migrations: fixed, so every host takes the same lock
# (the bytes of "captain1" read as a big-endian int64)
LOCK_KEY = int.from_bytes(b"captain1", "big", signed=True)

_V1 = """
CREATE FUNCTION captain_refuse_change() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    RAISE EXCEPTION 'captain ledger: % is append-only; % is refused', TG_TABLE_NAME, TG_OP
        USING ERRCODE = 'restrict_violation';
END $$;

CREATE TABLE work_items (
    work_id         text PRIMARY KEY,
    source          text NOT NULL CHECK (source IN ('assignment', 'chat', 'webhook')),
    state           text NOT NULL CHECK (state IN ('queued', 'running', 'succeeded',
                                                   'failed', 'cancelled',
                                                   'needs_reconciliation')),
    generation      integer NOT NULL DEFAULT 0 CHECK (generation >= 0),
    seq             integer NOT NULL CHECK (seq >= 1),
    requester       text NOT NULL,
    crew            text,
    assignment_id   text,
    delivery_id     text,
    replay_of       text REFERENCES work_items (work_id),
    target_revision text,
    input_sha256    text NOT NULL,
    max_attempts    integer NOT NULL DEFAULT 1 CHECK (max_attempts BETWEEN 1 AND 20),
    created_at      timestamptz NOT NULL DEFAULT now(),
    updated_at      timestamptz NOT NULL DEFAULT now(),
    item            jsonb NOT NULL
);
CREATE INDEX work_items_by_state ON work_items (state, work_id);
CREATE INDEX work_items_by_source ON work_items (source, work_id);
CREATE INDEX work_items_open ON work_items (work_id)
    WHERE state IN ('queued', 'running', 'needs_reconciliation');
CREATE INDEX work_items_queued ON work_items (source, work_id) WHERE state = 'queued';

CREATE TABLE work_events (
    work_id    text NOT NULL REFERENCES work_items (work_id)
                   DEFERRABLE INITIALLY DEFERRED,
    seq        integer NOT NULL CHECK (seq >= 1),
    type       text NOT NULL,
    state      text NOT NULL,
    generation integer NOT NULL CHECK (generation >= 0),
    actor      text NOT NULL,
    at         timestamptz NOT NULL DEFAULT now(),
    event      jsonb NOT NULL,
    detail     bytea,
    PRIMARY KEY (work_id, seq)
);
CREATE TRIGGER work_events_append_only BEFORE UPDATE OR DELETE ON work_events
    FOR EACH ROW EXECUTE FUNCTION captain_refuse_change();
CREATE TRIGGER work_events_no_truncate BEFORE TRUNCATE ON work_events
    FOR EACH STATEMENT EXECUTE FUNCTION captain_refuse_change();

CREATE TABLE work_inputs (
    work_id    text PRIMARY KEY REFERENCES work_items (work_id)
                   DEFERRABLE INITIALLY DEFERRED,
    sha256     text NOT NULL,
    input      bytea NOT NULL,
    created_at timestamptz NOT NULL DEFAULT now()
);
CREATE TRIGGER work_inputs_create_once BEFORE UPDATE OR DELETE ON work_inputs
    FOR EACH ROW EXECUTE FUNCTION captain_refuse_change();
CREATE TRIGGER work_inputs_no_truncate BEFORE TRUNCATE ON work_inputs
    FOR EACH STATEMENT EXECUTE FUNCTION captain_refuse_change();

CREATE TABLE work_leases (
    work_id       text PRIMARY KEY REFERENCES work_items (work_id)
                      DEFERRABLE INITIALLY DEFERRED,
    run_id        text NOT NULL,
    generation    integer NOT NULL CHECK (generation >= 1),
    holder        text NOT NULL,
    heartbeat_at  timestamptz NOT NULL DEFAULT now(),
    expires_at    timestamptz NOT NULL,
    CHECK (expires_at >= heartbeat_at)
);
CREATE INDEX work_leases_by_expiry ON work_leases (expires_at);

CREATE TABLE ledger_slots (
    slot    integer PRIMARY KEY CHECK (slot >= 0),
    work_id text UNIQUE REFERENCES work_items (work_id) DEFERRABLE INITIALLY DEFERRED
);

CREATE TABLE deliveries (
    delivery_id         text PRIMARY KEY,
    endpoint_id         text NOT NULL,
    source_delivery_id  text NOT NULL,
    event               text,
    received_at         timestamptz NOT NULL DEFAULT now(),
    body_sha256         text NOT NULL,
    body_bytes          integer NOT NULL CHECK (body_bytes >= 0),
    raw_body_expires_at timestamptz NOT NULL,
    filter_reason       text,
    work_id             text,
    routine             boolean NOT NULL DEFAULT false,
    record              jsonb NOT NULL,
    CONSTRAINT deliveries_identity UNIQUE (endpoint_id, source_delivery_id)
);
CREATE INDEX deliveries_by_endpoint ON deliveries (endpoint_id, delivery_id);
CREATE TRIGGER deliveries_create_once BEFORE UPDATE OR DELETE ON deliveries
    FOR EACH ROW EXECUTE FUNCTION captain_refuse_change();
CREATE TRIGGER deliveries_no_truncate BEFORE TRUNCATE ON deliveries
    FOR EACH STATEMENT EXECUTE FUNCTION captain_refuse_change();

CREATE TABLE delivery_bodies (
    delivery_id text PRIMARY KEY REFERENCES deliveries (delivery_id),
    body        bytea NOT NULL,
    expires_at  timestamptz NOT NULL
);
CREATE INDEX delivery_bodies_by_expiry ON delivery_bodies (expires_at);

CREATE TABLE delivery_body_claims (
    endpoint_id        text NOT NULL,
    body_sha256        text NOT NULL,
    source_delivery_id text NOT NULL,
    until              timestamptz NOT NULL,
    PRIMARY KEY (endpoint_id, body_sha256)
);

CREATE TABLE delivery_rejections (
    rejection_id       text PRIMARY KEY,
    endpoint_id        text NOT NULL,
    source_delivery_id text,
    event              text,
    received_at        timestamptz NOT NULL DEFAULT now(),
    reason             text NOT NULL,
    body_sha256        text NOT NULL,
    body_bytes         integer NOT NULL CHECK (body_bytes >= 0)
);

CREATE TABLE api_tokens (
    token_id   text PRIMARY KEY,
    role       text NOT NULL CHECK (role IN ('manager', 'member')),
    label      text,
    sha256     text NOT NULL UNIQUE,
    created_at timestamptz NOT NULL DEFAULT now(),
    revoked_at timestamptz
);

CREATE TABLE ledger_meta (
    singleton    boolean PRIMARY KEY DEFAULT true CHECK (singleton),
    workspace_id text NOT NULL,
    created_at   timestamptz NOT NULL DEFAULT now()
);
"""

# (version, what it does, SQL). Append only; never edit a released step.
STEPS: tuple[tuple[int, str, str], ...] = (
    (1, "work items, events, inputs, leases, slots, deliveries, tokens", _V1),
)
LATEST = STEPS[-1][0]

_BOOTSTRAP = """
CREATE TABLE IF NOT EXISTS schema_version (
    version     integer PRIMARY KEY CHECK (version >= 1),
    description text NOT NULL,
    applied_at  timestamptz NOT NULL DEFAULT now(),
    applied_by  text NOT NULL DEFAULT current_user
)
"""


@dataclass(frozen=True)
class Migrated:
    from_version: int
    version: int
    applied: tuple[int, ...]

    def as_json(self) -> dict[str, Any]:
        return {
            "from_version": self.from_version,
            "version": self.version,
            "applied": list(self.applied),
        }


# conn: a psycopg connection (``state.work.postgres.Conn``; this module stays below that one)
def current_version(conn: Any) -> int:
    """The schema's version in ``conn``'s database: 0 when nothing was ever applied."""
    row = conn.execute("SELECT to_regclass('schema_version') IS NOT NULL").fetchone()
    if not row[0]:
        return 0
    return int(conn.execute("SELECT coalesce(max(version), 0) FROM schema_version").fetchone()[0])


def newer(version: int, where: str = "the ledger", **extra: Any) -> CaptainError:
    """The refusal for a schema newer than this captain's: never touched, never used."""
    return CaptainError(
        "ledger_schema_newer",
        f"{where} has schema version {version}, newer than this captain knows (up to "
        f"{LATEST}); upgrade captain on this host. Nothing was changed.",
        **extra,
    )


def migrate(conn: Any) -> Migrated:
    """Bring ``conn``'s database to ``LATEST`` in one transaction under the advisory lock;
    idempotent. A schema newer than this code knows is refused, never touched."""
    with conn.transaction():
        conn.execute("SELECT pg_advisory_xact_lock(%s)", (LOCK_KEY,))
        conn.execute(_BOOTSTRAP)
        before = current_version(conn)
        if before > LATEST:
            raise newer(before)
        applied = []
        for version, description, sql in STEPS:
            if version <= before:
                continue
            conn.execute(sql)
            conn.execute(
                "INSERT INTO schema_version (version, description) VALUES (%s, %s)",
                (version, description),
            )
            applied.append(version)
    return Migrated(before, applied[-1] if applied else before, tuple(applied))

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
- step 2: ``work_items.item_md5`` (the MD5 of the document captain wrote) and the functions
  ``captain_claim`` and ``captain_report``: a claim and a report in one statement
  (``pg_backend.claim_at_once``/``report_at_once``; docs/ledger.md, "Round trips").

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

# Step 2 (issue 28): a claim and a report in one statement, so one round trip each
# (docs/ledger.md, "Round trips"). ``item_md5`` is the MD5 of the item's document as captain
# wrote it (``pg_backend``'s every write of a row sets it): a row whose document no longer
# has it was changed by something else, so the functions leave it to the general path
# (which reads it through the model and refuses it as ``ledger_corrupt`` when it is).
# The functions decide as ``state.work.ledger.claim``/``report`` do, in their order, and
# say a refusal as a code the ledger turns into its refusal (the same code and sentence);
# 'general' means: nothing was written, take the general path. They are what those two
# functions' PostgreSQL path is, checked against the general path by
# tests/state/test_ledger_one_trip.py (the same events, items and refusals).
_V2 = """
ALTER TABLE work_items ADD COLUMN item_md5 text;

-- a time as the ledger's documents hold it: as pydantic writes the datetime psycopg reads
-- in this session (its TimeZone), the fraction only when there is one, Z for UTC
CREATE FUNCTION captain_ts(t timestamptz) RETURNS text LANGUAGE sql STABLE AS $$
    SELECT to_char(t, 'YYYY-MM-DD"T"HH24:MI:SS')
        || CASE WHEN to_char(t, 'US') = '000000' THEN '' ELSE to_char(t, '.US') END
        || CASE WHEN to_char(t, 'TZH:TZM') = '+00:00' THEN 'Z' ELSE to_char(t, 'TZH:TZM') END
$$;

-- whether the fast path may act on this row: its document is the one captain wrote (its
-- MD5), no larger than any record, and its columns say what its document says
CREATE FUNCTION captain_as_written(w work_items, max_bytes integer) RETURNS boolean
LANGUAGE sql STABLE AS $$
    SELECT coalesce(
        w.item_md5 = md5(w.item::text)
        AND octet_length(w.item::text) <= max_bytes
        AND jsonb_typeof(w.item) = 'object'
        AND w.item->>'work_id' = w.work_id
        AND w.item->>'state' = w.state
        AND (w.item->>'seq')::integer = w.seq
        AND (w.item->>'generation')::integer = w.generation
        AND w.item->>'crew' IS NOT DISTINCT FROM w.crew
        AND w.item->>'source' = w.source
        AND (w.item->>'max_attempts')::integer = w.max_attempts
        AND jsonb_typeof(w.item->'attempts') = 'array',
        false)
$$;

-- ledger.claim without ``start``: (outcome, state, crew, work_id, item, event)
CREATE FUNCTION captain_claim(
    p_work_id text, p_source text, p_at timestamptz, p_lease interval, p_slots integer,
    p_ledger_key bigint, p_item_class integer, p_max_bytes integer, p_channel text,
    p_event jsonb, p_attempt jsonb, p_at_text text, p_expires_text text
) RETURNS TABLE (outcome text, state text, crew text, work_id text, item text, event text)
LANGUAGE plpgsql AS $$
#variable_conflict use_column
DECLARE
    v_id text := p_work_id;
    v_row work_items;
    v_at timestamptz;
    v_holding integer;
    v_strays integer;
    v_gen integer;
    v_seq integer;
    v_exp timestamptz;
    v_when text;
    v_until text;
    v_event jsonb;
    v_item jsonb;
BEGIN
    PERFORM pg_advisory_xact_lock(p_ledger_key);
    IF v_id IS NULL THEN
        -- claim_view: the clock, the slot holders by their rows' state, the oldest queued
        -- row of no crew that no other transaction holds, locked
        v_at := clock_timestamp();
        SELECT count(*) INTO v_holding FROM work_items w
            WHERE w.state IN ('running', 'needs_reconciliation');
        SELECT w.* INTO v_row FROM work_items w
            WHERE w.state = 'queued' AND w.crew IS NULL
              AND (p_source IS NULL OR w.source = p_source)
            ORDER BY w.work_id LIMIT 1 FOR UPDATE SKIP LOCKED;
        IF NOT FOUND THEN
            outcome := 'not_queued'; RETURN NEXT;
            RETURN;
        END IF;
        IF NOT captain_as_written(v_row, p_max_bytes) THEN
            outcome := 'general'; RETURN NEXT;
            RETURN;
        END IF;
        v_id := v_row.work_id;
        IF v_holding >= p_slots THEN
            outcome := 'no_capacity'; work_id := v_id; RETURN NEXT;
            RETURN;
        END IF;
        v_at := coalesce(p_at, v_at);
    ELSE
        -- the item as read before its lock: a crew's assignment is a runner's to start
        SELECT w.* INTO v_row FROM work_items w WHERE w.work_id = v_id;
        IF FOUND AND NOT captain_as_written(v_row, p_max_bytes) THEN
            outcome := 'general'; RETURN NEXT;
            RETURN;
        END IF;
        IF FOUND AND v_row.crew IS NOT NULL THEN
            outcome := 'crew_item'; crew := v_row.crew; work_id := v_id; RETURN NEXT;
            RETURN;
        END IF;
        v_at := coalesce(p_at, clock_timestamp());
        -- the slot holders, as read through the model (a row that is not as written: the
        -- general path, which skips it and says so)
        SELECT count(*), count(*) FILTER (WHERE NOT captain_as_written(w, p_max_bytes))
            INTO v_holding, v_strays FROM work_items w
            WHERE w.state IN ('running', 'needs_reconciliation');
        IF v_strays > 0 THEN
            outcome := 'general'; RETURN NEXT;
            RETURN;
        END IF;
        IF v_holding >= p_slots THEN
            outcome := 'no_capacity'; work_id := v_id; RETURN NEXT;
            RETURN;
        END IF;
    END IF;
    -- the item's transaction: its lock, then its row
    PERFORM pg_advisory_xact_lock(p_item_class, hashtext(v_id));
    SELECT w.* INTO v_row FROM work_items w WHERE w.work_id = v_id FOR UPDATE;
    IF NOT FOUND THEN
        outcome := 'unknown_work'; work_id := v_id; RETURN NEXT;
        RETURN;
    END IF;
    IF NOT captain_as_written(v_row, p_max_bytes) THEN
        outcome := 'general'; RETURN NEXT;
        RETURN;
    END IF;
    IF v_row.state <> 'queued' THEN
        outcome := 'not_queued'; state := v_row.state; work_id := v_id; RETURN NEXT;
        RETURN;
    END IF;
    v_seq := v_row.seq + 1;
    v_gen := v_row.generation + 1;
    v_exp := v_at + p_lease;
    -- a time the caller named is written as the caller's (its own zone): p_*_text
    v_when := coalesce(p_at_text, captain_ts(v_at));
    v_until := coalesce(p_expires_text, captain_ts(v_exp));
    v_event := p_event || jsonb_build_object(
        'seq', v_seq, 'generation', v_gen, 'at', v_when, 'lease_expires_at', v_until);
    INSERT INTO work_events (work_id, seq, type, state, generation, actor, at, event, detail)
        VALUES (v_id, v_seq, 'claimed', 'running', v_gen, p_event->>'actor', v_at, v_event,
                NULL)
        ON CONFLICT DO NOTHING;
    IF NOT FOUND THEN  -- an event past the item's row: the general path says what it is
        outcome := 'general'; RETURN NEXT;
        RETURN;
    END IF;
    v_item := v_row.item || jsonb_build_object(
        'seq', v_seq, 'state', 'running', 'updated_at', v_when, 'generation', v_gen,
        'attempts', (v_row.item->'attempts') || jsonb_build_array(
            p_attempt || jsonb_build_object(
                'generation', v_gen, 'started_at', v_when, 'lease_expires_at', v_until)));
    UPDATE work_items w SET state = 'running', generation = v_gen, seq = v_seq,
        updated_at = v_at, item = v_item, item_md5 = md5(v_item::text)
        WHERE w.work_id = v_id;
    PERFORM pg_notify(p_channel, v_id);
    outcome := 'claimed'; state := 'running'; crew := v_row.crew; work_id := v_id;
    item := v_item::text; event := v_event::text; RETURN NEXT;
END $$;

-- ledger.report: (outcome, state, generation, work_id, item, event)
CREATE FUNCTION captain_report(
    p_work_id text, p_generation integer, p_outcome text, p_repeatable boolean,
    p_at timestamptz, p_max_attempts integer, p_ledger_key bigint, p_item_class integer,
    p_max_bytes integer, p_channel text, p_event jsonb, p_detail bytea, p_at_text text
) RETURNS TABLE (outcome text, state text, generation integer, work_id text, item text,
                event text)
LANGUAGE plpgsql AS $$
#variable_conflict use_column
DECLARE
    v_row work_items;
    v_at timestamptz;
    v_when text;
    v_retry boolean;
    v_kind text;
    v_state text;
    v_seq integer;
    v_tries integer;
    v_last jsonb;
    v_event jsonb;
    v_item jsonb;
BEGIN
    PERFORM pg_advisory_xact_lock(p_ledger_key);
    PERFORM pg_advisory_xact_lock(p_item_class, hashtext(p_work_id));
    SELECT w.* INTO v_row FROM work_items w WHERE w.work_id = p_work_id FOR UPDATE;
    IF NOT FOUND THEN
        outcome := 'unknown_work'; work_id := p_work_id; RETURN NEXT;
        RETURN;
    END IF;
    IF NOT captain_as_written(v_row, p_max_bytes) THEN
        outcome := 'general'; RETURN NEXT;
        RETURN;
    END IF;
    IF p_generation <> v_row.generation THEN
        outcome := 'stale_generation'; state := v_row.state; generation := v_row.generation;
        work_id := p_work_id; RETURN NEXT;
        RETURN;
    END IF;
    IF v_row.state NOT IN ('running', 'needs_reconciliation') THEN
        outcome := 'not_running'; state := v_row.state; generation := v_row.generation;
        work_id := p_work_id; RETURN NEXT;
        RETURN;
    END IF;
    v_tries := jsonb_array_length(v_row.item->'attempts');
    v_retry := p_outcome = 'failed' AND p_repeatable AND v_row.state = 'running'
        AND v_tries < least(v_row.max_attempts, p_max_attempts);
    v_kind := CASE WHEN v_retry THEN 'retry_queued' ELSE p_outcome END;
    v_state := CASE WHEN v_retry THEN 'queued' ELSE p_outcome END;
    v_at := coalesce(p_at, clock_timestamp());
    v_when := coalesce(p_at_text, captain_ts(v_at));
    v_seq := v_row.seq + 1;
    v_event := p_event || jsonb_build_object(
        'seq', v_seq, 'generation', v_row.generation, 'at', v_when,
        'type', v_kind, 'state', v_state);
    INSERT INTO work_events (work_id, seq, type, state, generation, actor, at, event, detail)
        VALUES (p_work_id, v_seq, v_kind, v_state, v_row.generation, p_event->>'actor', v_at,
                v_event, p_detail)
        ON CONFLICT DO NOTHING;
    IF NOT FOUND THEN
        outcome := 'general'; RETURN NEXT;
        RETURN;
    END IF;
    v_item := v_row.item || jsonb_build_object(
        'seq', v_seq, 'state', v_state, 'updated_at', v_when);
    v_last := v_row.item->'attempts'->-1;
    IF v_tries > 0 AND coalesce(jsonb_typeof(v_last->'ended_at'), 'null') = 'null' THEN
        v_last := v_last || jsonb_build_object(
            'ended_at', v_when,
            'outcome', CASE WHEN v_retry THEN 'failed' ELSE p_outcome END,
            'cost_usd', CASE WHEN jsonb_typeof(p_event->'cost_usd') = 'number'
                             THEN p_event->'cost_usd' ELSE v_last->'cost_usd' END);
        v_item := jsonb_set(v_item, ARRAY['attempts', (v_tries - 1)::text], v_last);
    END IF;
    UPDATE work_items w SET state = v_state, seq = v_seq, updated_at = v_at, item = v_item,
        item_md5 = md5(v_item::text)
        WHERE w.work_id = p_work_id;
    PERFORM pg_notify(p_channel, p_work_id);
    outcome := v_kind; state := v_state; generation := v_row.generation; work_id := p_work_id;
    item := v_item::text; event := v_event::text; RETURN NEXT;
END $$;
"""

# (version, what it does, SQL). Append only; never edit a released step.
STEPS: tuple[tuple[int, str, str], ...] = (
    (1, "work items, events, inputs, leases, slots, deliveries, tokens", _V1),
    (2, "a claim and a report in one statement each (captain_claim, captain_report)", _V2),
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

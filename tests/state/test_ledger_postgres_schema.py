"""The PostgreSQL ledger's location and schema: which ledger a home uses (no server needed),
and the versioned schema on a real server (tests/support/postgres.py: a throwaway cluster,
a fresh database per test). No mocks: every SQL statement runs on PostgreSQL."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from state.errors import CaptainError
from state.home import Home
from state.work import pg_schema, postgres
from state.work.location import ENV, ledger_location, parse_url

REPO = Path(__file__).resolve().parents[2]
SECRET = "Hunter2-Never-Print-77"

TABLES = {
    "schema_version",
    "work_items",
    "work_events",
    "work_inputs",
    "work_leases",
    "ledger_slots",
    "deliveries",
    "delivery_bodies",
    "delivery_body_claims",
    "delivery_rejections",
    "api_tokens",
    "ledger_meta",
}


# -- which ledger a home uses (no server) -----------------------------------------------------


def test_the_file_home_is_the_default(tmp_path: Path):
    home = Home(tmp_path / "home")
    where = ledger_location(home, environ={})
    assert (where.kind, where.origin, where.shown) == ("file", "default", str(home.root))
    assert where.as_json() == {"kind": "file", "origin": "default"}


def test_the_environment_wins_over_config_toml(tmp_path: Path):
    home = Home(tmp_path / "home")
    (home.root / "config.toml").write_text(
        '[ledger]\nurl = "postgresql://cfg@db.example:5433/captain"\n'
    )
    from_config = ledger_location(home, environ={})
    assert (from_config.kind, from_config.origin) == ("postgresql", "config.toml")
    assert from_config.targets == ("db.example:5433",)
    from_env = ledger_location(home, environ={ENV: "postgres://env@10.0.0.9/led"})
    assert (from_env.origin, from_env.shown) == (ENV, "postgres://env@10.0.0.9/led")
    assert from_env.targets == ("10.0.0.9:5432",)
    # an empty variable is unset (the shell's way of saying "not this")
    assert ledger_location(home, environ={ENV: ""}).origin == "config.toml"


@pytest.mark.parametrize(
    "url, shown",
    [
        (f"postgresql://bob:{SECRET}@db:5432/captain", "postgresql://bob:***@db:5432/captain"),
        (
            f"postgresql://bob@db/captain?password={SECRET}&sslmode=require",
            "postgresql://bob@db/captain?password=***&sslmode=require",
        ),
        (
            f"postgresql://bob:{SECRET}@h1:5432,h2:5433/captain",
            "postgresql://bob:***@h1:5432,h2:5433/captain",
        ),
        ("postgresql:///captain?host=/run/pg", "postgresql:///captain?host=/run/pg"),
        (f"postgresql://bob:{SECRET}@[::1]:6000/x", "postgresql://bob:***@[::1]:6000/x"),
    ],
)
def test_a_password_is_redacted_everywhere_it_is_shown(url: str, shown: str):
    where = parse_url(url)
    assert where.shown == shown
    for text in (where.shown, where.describe(), json.dumps(where.as_json()), repr(where)):
        assert SECRET not in text, text
    assert where.url == url  # the secret form is kept, for the driver only
    if SECRET in url:  # a driver's message that echoed it is scrubbed too
        assert where.scrub(f"server said: {SECRET}") == "server said: ***"


@pytest.mark.parametrize(
    "url, why",
    [
        (f"mysql://bob:{SECRET}@db/captain", "its scheme is mysql://"),
        (f"bob:{SECRET}@db/captain", "does not start with postgresql://"),
        (f"postgresql://bob:{SECRET}@db:99999/captain", "a port is not a number"),
        (f"postgresql://bob:{SECRET}@db:54x/captain", "a port is not a number"),
        (f"postgresql://bob:{SECRET}@db/cap tain", "a space or a control character"),
        (f"postgresql://bob:{SECRET}@db/captain#frag", "#fragment"),
        (f"postgresql://bob:{SECRET}@db/captain?sslmode", "not name=value pairs"),
        (f"postgresql://bob:{SECRET}@db/%zz", "not followed by two hex digits"),
        (f"postgresql://bob:{SECRET}@[::1/captain", "IPv6 host"),
        ("", "it is empty"),
    ],
)
def test_a_url_that_is_not_one_is_refused_without_repeating_it(url: str, why: str):
    with pytest.raises(CaptainError) as caught:
        parse_url(url, origin=ENV)
    assert caught.value.code == "invalid_ledger_url"
    assert why in caught.value.message and ENV in caught.value.message
    assert SECRET not in caught.value.message


@pytest.mark.parametrize("line", ["url = 5432", 'url = ""', 'url = "sqlite:///x.db"'])
def test_a_bad_url_in_config_toml_is_refused(tmp_path: Path, line: str):
    home = Home(tmp_path / "home")
    (home.root / "config.toml").write_text(f"[ledger]\n{line}\n")
    with pytest.raises(CaptainError) as caught:
        ledger_location(home, environ={})
    assert caught.value.code == "invalid_ledger_url"
    assert "[ledger] url in config.toml" in caught.value.message


def test_importing_state_loads_no_database_driver(tmp_path: Path):
    code = textwrap.dedent("""
        import importlib, json, pathlib, sys
        for p in sorted(pathlib.Path("state").rglob("*.py")):
            if p.stem != "__init__":
                importlib.import_module(".".join(p.with_suffix("").parts))
        print(json.dumps(sorted(m for m in sys.modules if m.split(".")[0] == "psycopg")))
    """)
    proc = subprocess.run(
        [sys.executable, "-c", code], cwd=REPO, capture_output=True, text=True, timeout=60
    )
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout.strip().splitlines()[-1]) == []


# -- the schema on a real server --------------------------------------------------------------


@pytest.fixture
def db(pg_url):
    import psycopg

    with psycopg.connect(pg_url, autocommit=True) as conn:
        yield conn


def _tables(conn) -> set[str]:
    rows = conn.execute("SELECT tablename FROM pg_tables WHERE schemaname = 'public'")
    return {r[0] for r in rows}


def test_migrate_on_an_empty_database_creates_the_latest_version(db):
    assert pg_schema.current_version(db) == 0 and _tables(db) == set()
    done = pg_schema.migrate(db)
    every = tuple(version for version, _, _ in pg_schema.STEPS)
    assert (done.from_version, done.version, done.applied) == (0, pg_schema.LATEST, every)
    assert _tables(db) == TABLES
    rows = db.execute(
        "SELECT version, applied_at <= now() FROM schema_version ORDER BY version"
    ).fetchall()
    assert rows == [(version, True) for version in every]


def test_migrate_twice_changes_nothing(db):
    pg_schema.migrate(db)
    catalog = "SELECT count(*) FROM pg_class WHERE relnamespace = 'public'::regnamespace"
    before = (db.execute(catalog).fetchone(), _tables(db))
    again = pg_schema.migrate(db)
    latest = pg_schema.LATEST
    assert (again.from_version, again.version, again.applied) == (latest, latest, ())
    assert (db.execute(catalog).fetchone(), _tables(db)) == before
    assert db.execute("SELECT count(*) FROM schema_version").fetchone() == (len(pg_schema.STEPS),)


def test_a_schema_newer_than_this_code_is_refused_and_left_alone(db):
    pg_schema.migrate(db)
    db.execute("INSERT INTO schema_version (version, description) VALUES (99, 'future')")
    with pytest.raises(CaptainError) as caught:
        pg_schema.migrate(db)
    assert caught.value.code == "ledger_schema_newer" and "99" in caught.value.message
    assert db.execute("SELECT max(version) FROM schema_version").fetchone() == (99,)


def _item(db, work_id: str = "wrk_1") -> None:
    db.execute(
        "INSERT INTO work_items (work_id, source, state, seq, requester, input_sha256, "
        "item) VALUES (%s, 'chat', 'queued', 1, 'captain', 'ab', '{}')",
        (work_id,),
    )


def test_events_are_append_only(db):
    import psycopg

    pg_schema.migrate(db)
    _item(db)
    db.execute(
        "INSERT INTO work_events (work_id, seq, type, state, generation, actor, event, "
        "detail) VALUES ('wrk_1', 1, 'accepted', 'queued', 0, 'captain', '{}', %s)",
        (b"a NUL \x00 is kept",),
    )
    for statement in (
        "UPDATE work_events SET actor = 'forger'",
        "DELETE FROM work_events",
        "TRUNCATE work_events",
    ):
        with pytest.raises(psycopg.errors.RestrictViolation, match="append-only"):
            db.execute(statement)
    with pytest.raises(psycopg.errors.UniqueViolation):  # unique (work_id, seq)
        db.execute(
            "INSERT INTO work_events (work_id, seq, type, state, generation, actor, "
            "event) VALUES ('wrk_1', 1, 'claimed', 'running', 1, 'w', '{}')"
        )
    assert db.execute("SELECT actor, detail FROM work_events").fetchall() == [
        ("captain", b"a NUL \x00 is kept")
    ]
    db.execute(
        "INSERT INTO work_inputs (work_id, sha256, input) VALUES ('wrk_1', 'ab', %s)", (b"{}",)
    )
    with pytest.raises(psycopg.errors.RestrictViolation):  # inputs are create-once
        db.execute("UPDATE work_inputs SET input = %s", (b"{}",))


def test_delivery_identity_is_a_unique_constraint(db):
    import psycopg

    pg_schema.migrate(db)
    insert = (
        "INSERT INTO deliveries (delivery_id, endpoint_id, source_delivery_id, "
        "body_sha256, body_bytes, raw_body_expires_at, record) "
        "VALUES (%s, %s, %s, 'ab', 2, now() + interval '7 days', '{}')"
    )
    db.execute(insert, ("whd_1", "github", "7f3a-01"))
    db.execute(insert, ("whd_2", "gitlab", "7f3a-01"))  # another endpoint: another identity
    with pytest.raises(psycopg.errors.UniqueViolation) as caught:
        db.execute(insert, ("whd_3", "github", "7f3a-01"))
    assert caught.value.diag.constraint_name == "deliveries_identity"
    with pytest.raises(psycopg.errors.RestrictViolation):  # a record is kept forever
        db.execute("DELETE FROM deliveries WHERE delivery_id = 'whd_1'")


def test_a_lease_is_judged_by_the_database_clock(db):
    pg_schema.migrate(db)
    _item(db)
    _item(db, "wrk_2")
    # stamped by the database unless told; expiry is asked of the database's now()
    with db.transaction():  # one transaction: one now()
        db.execute(
            "INSERT INTO work_leases (work_id, run_id, generation, holder, expires_at) "
            "VALUES ('wrk_1', 'run_1', 1, 'w', now() + interval '60 seconds'), "
            "('wrk_2', 'run_2', 1, 'w', now())"
        )
        rows = db.execute(
            "SELECT work_id, heartbeat_at = now(), expires_at <= now() "
            "FROM work_leases ORDER BY work_id"
        ).fetchall()
    assert rows == [("wrk_1", True, False), ("wrk_2", True, True)]
    import psycopg

    with pytest.raises(psycopg.errors.CheckViolation):  # never expiring before it began
        db.execute("UPDATE work_leases SET expires_at = heartbeat_at - interval '1 second'")


def test_a_slot_is_held_by_one_item_at_most(db):
    import psycopg

    pg_schema.migrate(db)
    _item(db)
    db.execute(
        "INSERT INTO ledger_slots (slot, work_id) SELECT g, NULL FROM generate_series(0, 7) g"
    )
    db.execute("UPDATE ledger_slots SET work_id = 'wrk_1' WHERE slot = 0")
    with pytest.raises(psycopg.errors.UniqueViolation):
        db.execute("UPDATE ledger_slots SET work_id = 'wrk_1' WHERE slot = 1")


def test_an_unreachable_server_is_a_refusal_naming_host_and_port():
    import socket

    pytest.importorskip("psycopg", reason="psycopg is not installed (pip install -e '.[test]')")

    with socket.socket() as s:  # a port nothing listens on
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    where = parse_url(f"postgresql://bob:{SECRET}@127.0.0.1:{port}/captain")
    with pytest.raises(CaptainError) as caught:
        postgres.migrate(where)
    assert caught.value.code == "ledger_unreachable"
    assert f"127.0.0.1:{port}" in caught.value.message
    assert SECRET not in json.dumps(caught.value.as_json())


def test_a_statement_the_database_refuses_is_a_ledger_error(db, pg_url):
    """A role that may connect but not create tables (PostgreSQL 15's default for the public
    schema): the refusal names the SQLSTATE, and nothing was created."""
    import uuid

    role = f"captain_ro_{uuid.uuid4().hex[:8]}"
    db.execute(f'CREATE ROLE "{role}" LOGIN')
    db.execute(f'REVOKE CREATE ON SCHEMA public FROM PUBLIC, "{role}"')
    try:
        url = pg_url.replace("postgresql://postgres@", f"postgresql://{role}:{SECRET}@", 1)
        with pytest.raises(CaptainError) as caught:
            postgres.migrate(parse_url(url))
        assert caught.value.code == "ledger_error"
        assert caught.value.extra["sqlstate"] == "42501", caught.value.message
        assert SECRET not in json.dumps(caught.value.as_json())
        assert _tables(db) == set()
    finally:
        db.execute(f'DROP OWNED BY "{role}"')
        db.execute(f'DROP ROLE "{role}"')

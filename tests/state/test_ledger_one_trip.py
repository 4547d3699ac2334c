"""A claim and a report on PostgreSQL are one statement each (pg_schema's ``captain_claim``
and ``captain_report``, schema step 2): one round trip, counted on the wire (a relay between
the backend and the real server: tests/support/roundtrips.py), with exactly what the general
path (one transaction of several statements: the path every other backend and every caller
inside a transaction takes) decides: the same item, the same events and rows, the same
refusals with the same codes and sentences.

Nothing is replaced: two fresh ledgers on the same real server run the same operations with
the same clock and IDs; one through the relay (the one-statement path), the other with a
transaction open around each call (a transaction open on the thread is the general path).
A row whose document is not the one captain wrote (a schema-1 row, a hand edit) goes the
general path, which reads it through the model; an older schema is refused with
``ledger_not_migrated`` until ``captain ledger migrate`` brings it up."""

from __future__ import annotations

import contextlib
from datetime import datetime, timedelta, timezone
from pathlib import Path

import psycopg
import pytest
from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import strategies as st
from support.corrupt import damage_item
from support.ledger_backends import close_backends, open_ledgers
from support.roundtrips import Relay

from state.errors import CaptainError
from state.home import Home
from state.ids import new_id
from state.work import ledger, pg_schema
from state.work.backend import backend_for

T0 = datetime(2030, 1, 1, 12, 0, tzinfo=timezone.utc)
SLOTS = 2  # small, so that claims meet a full ledger

_id = st.integers(0, 7)  # which of the items made so far (7, or none yet: an unknown ID)
_CLAIM = st.tuples(st.just("claim"), st.none() | _id, st.sampled_from([None, "chat", "webhook"]))
_REPORT = st.tuples(
    st.just("report"),
    _id,
    st.sampled_from([0, 0, 0, -1, 1]),  # the generation: the current one, or one off
    st.sampled_from(["succeeded", "failed"]),
    st.booleans(),  # repeatable
    st.sampled_from([None, 0.25, 3.0]),  # cost
    st.sampled_from([None, "a detail", "NUL \x00 kept"]),
    st.sampled_from([None, "the pane died"]),
)
_CANCEL = st.tuples(st.just("cancel"), _id)  # the stop unconfirmed: needs_reconciliation
_KINDS = {"claim": _CLAIM, "report": _REPORT, "cancel": _CANCEL}
OPS = st.sampled_from(["claim"] * 3 + ["report"] * 4 + ["cancel"]).flatmap(_KINDS.__getitem__)


@contextlib.contextmanager
def ledger_pair(request, tmp_path: Path):
    with open_ledgers(request, "postgresql") as made:
        yield made


def make_home(root: Path, url: str) -> Home:
    Home(root)
    (root / "config.toml").write_text(f'[ledger]\nslots = {SLOTS}\nurl = "{url}"\n')
    return Home(root)


class Rollback(Exception):
    """Ends the transaction opened around a refused call, keeping nothing."""


def outcome(call):
    """What a ledger call answered: its item, or its refusal (code, sentence, facts)."""
    try:
        return ("ok", call())
    except CaptainError as err:
        return ("refused", err.code, err.message, err.extra)


def rows(url: str) -> tuple[list, list]:
    """The items' columns and the events' rows, read past captain."""
    with psycopg.connect(url, autocommit=True) as db:
        items = db.execute(
            "SELECT work_id, source, state, generation, seq, requester, crew, max_attempts, "
            "created_at, updated_at, item FROM work_items ORDER BY work_id"
        ).fetchall()
        events = db.execute(
            "SELECT work_id, seq, type, state, generation, actor, at, event, detail "
            "FROM work_events ORDER BY work_id, seq"
        ).fetchall()
        stray = db.execute(
            "SELECT work_id FROM work_items WHERE item_md5 IS DISTINCT FROM md5(item::text)"
        ).fetchall()
    assert stray == [], "a row written without the MD5 of its document"
    return items, events


def test_one_statement_decides_as_the_general_path_in_one_round_trip(request, tmp_path) -> None:
    with ledger_pair(request, tmp_path) as made:
        runs = iter(range(10_000))

        @settings(
            max_examples=15,
            derandomize=True,
            deadline=None,
            suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
            phases=[Phase.explicit, Phase.reuse, Phase.generate],  # each example: two ledgers
        )
        @given(st.lists(OPS, min_size=6, max_size=24))
        def run(ops) -> None:
            n = next(runs)
            one_url, general_url = made.fresh_url() or "", made.fresh_url() or ""
            relay = Relay(one_url)
            try:
                one = make_home(tmp_path / f"one-{n}", relay.url)
                general = make_home(tmp_path / f"general-{n}", general_url)
                ledger.open_ids(one)  # connected: the connection's own round trips not counted
                ids: list[str] = []
                # four items: up to 1, 2 and 3 attempts, and a crew's (a runner starts it)
                first = [
                    ("accept", 1, False, "chat"),
                    ("accept", 2, False, "webhook"),
                    ("accept", 3, False, "chat"),
                    ("accept", 2, True, "webhook"),
                ]
                for step, op in enumerate(first + ops):
                    at = T0 + timedelta(seconds=step)
                    answers, trips = [], 0
                    for home in (one, general):
                        call = _call(op, ids, home, at, step)
                        if home is one:
                            # a read first: the relay counts a turn when the client speaks
                            # after the server, and a pipeline's end (a cancel's) may leave
                            # the client's last bytes unanswered, so the next turn is unseen
                            ledger.open_ids(home)
                            relay.take()
                            answers.append(outcome(call))
                            trips = relay.take()
                        else:  # a transaction open around it: the general path
                            with contextlib.suppress(Rollback):
                                with backend_for(home).transaction():
                                    answers.append(outcome(call))
                                    if answers[-1][0] == "refused":
                                        raise Rollback  # nothing of a refusal is kept
                    assert answers[0] == answers[1], (op, answers)
                    if op[0] == "accept" and answers[0][0] == "ok":
                        ids.append(answers[0][1].work_id)
                    if op[0] in ("claim", "report"):
                        # the refusal of a full ledger names the holders: a read of its own
                        # (and psycopg prepares a statement at its fifth use: one trip more)
                        full = answers[0][0] == "refused" and answers[0][1] == "no_capacity"
                        assert trips in ((2, 3) if full else (1,)), (op, answers[0], trips)
                for work_id in ids:
                    assert ledger.get(one, work_id) == ledger.get(general, work_id)
                    assert ledger.events(one, work_id) == ledger.events(general, work_id)
                assert rows(one_url) == rows(general_url)
            finally:
                close_backends(relay.url)
                close_backends(general_url)
                relay.close()

        run()


def _call(op, ids: list[str], home: Home, at: datetime, step: int):
    def pick(i: int) -> str:
        return ids[i % len(ids)] if ids and i < 7 else "wrk_00000000000000000000000000unknown"

    kind = op[0]
    if kind == "accept":
        _, attempts, crew, source = op
        work_id = f"wrk_{step:026d}"  # the same in both ledgers, in the order made
        return lambda: ledger.accept(
            home,
            source=source,
            input={"text": f"job {step}"},
            requester="alice",
            work_id=work_id,
            crew="alpha" if crew else None,
            max_attempts=attempts,
            at=at,
        )
    if kind == "claim":
        _, target, source = op
        work_id = None if target is None else pick(target)
        return lambda: ledger.claim(
            home, work_id, holder="worker", source=source, run_id=f"run_{step:026d}", at=at
        )
    if kind == "report":
        _, target, off, result, repeatable, cost, detail, reason = op
        work_id = pick(target)
        current = ledger.get(home, work_id).generation if work_id in ids else 1
        return lambda: ledger.report(
            home,
            work_id,
            max(0, current + off),
            result,
            actor="worker",
            cost_usd=cost,
            detail=detail,
            repeatable=repeatable,
            reason=reason,
            at=at,
        )
    _, target = op
    return lambda: ledger.cancel(
        home, pick(target), actor="captain", stop=lambda attempt: False, at=at
    )


@pytest.fixture
def one_home(request, tmp_path: Path):
    """A home on a fresh ledger reached through a counting relay, and its direct URL."""
    with open_ledgers(request, "postgresql") as made:
        url = made.fresh_url() or ""
        relay = Relay(url)
        try:
            yield make_home(tmp_path / "home", relay.url), relay, url
        finally:
            close_backends(relay.url)
            relay.close()


def test_a_row_not_as_captain_wrote_it_goes_the_general_path(one_home) -> None:
    home, relay, url = one_home
    first, second = (
        ledger.accept(home, source="chat", input={"text": t}, requester="alice") for t in ("a", "b")
    )
    ledger.open_ids(home)
    # a row from schema 1 (no MD5 yet): claimed by the general path, and written with it
    with psycopg.connect(url, autocommit=True) as db:
        db.execute("UPDATE work_items SET item_md5 = NULL")
    relay.take()
    claimed = ledger.claim(home, first.work_id, holder="worker")
    assert claimed.state == "running" and relay.take() > 1
    ledger.open_ids(home)  # a read: the general path's pipeline may end on the client's word
    relay.take()
    done = ledger.report(home, claimed.work_id, 1, "succeeded", actor="worker")
    assert done.state == "succeeded" and relay.take() == 1  # its row is as written now
    # a hand edit that still reads: the general path, and the same answer as ever
    with psycopg.connect(url, autocommit=True) as db:
        db.execute(
            "UPDATE work_items SET item = jsonb_set(item, '{requester}', '\"bob\"') "
            "WHERE work_id = %s",
            (second.work_id,),
        )
    relay.take()
    taken = ledger.claim(home, holder="worker")
    assert (taken.work_id, taken.requester, taken.generation) == (second.work_id, "bob", 1)
    assert relay.take() > 1
    # a damaged row: refused by its ID, nothing written
    third = ledger.accept(home, source="chat", input={"text": "c"}, requester="alice")
    damage_item(home, third.work_id, "wrong type")
    for call in (
        lambda: ledger.claim(home, third.work_id, holder="worker"),
        lambda: ledger.report(home, third.work_id, 0, "succeeded", actor="worker"),
    ):
        with pytest.raises(CaptainError) as err:
            call()
        assert err.value.code == "ledger_corrupt"
    with psycopg.connect(url, autocommit=True) as db:
        kept = db.execute(
            "SELECT count(*) FROM work_events WHERE work_id = %s", (third.work_id,)
        ).fetchone()
    assert kept == (1,), "the damaged item got an event"


def test_an_older_schema_is_refused_then_upgraded(pg_server, tmp_path: Path) -> None:
    name = pg_server.create_database()
    url = pg_server.url(name)
    try:
        with psycopg.connect(url) as conn:  # schema 1, as the captain before this one made it
            with conn.transaction():
                conn.execute(pg_schema._BOOTSTRAP)
                version, description, sql = pg_schema.STEPS[0]
                conn.execute(sql)
                conn.execute(
                    "INSERT INTO schema_version (version, description) VALUES (%s, %s)",
                    (version, description),
                )
        home = make_home(tmp_path / "home", url)
        with pytest.raises(CaptainError) as err:
            ledger.accept(home, source="chat", input={"text": "a"}, requester="alice")
        assert err.value.code == "ledger_not_migrated" and err.value.extra["version"] == 1
        with psycopg.connect(url) as conn:
            done = pg_schema.migrate(conn)
            assert (done.from_version, done.applied) == (1, (2,))
            again = pg_schema.migrate(conn)  # idempotent
            assert (again.from_version, again.applied) == (2, ())
        home = make_home(tmp_path / "home2", url)
        item = ledger.accept(home, source="chat", input={"text": "a"}, requester="alice")
        claimed = ledger.claim(home, holder="worker")
        assert claimed.work_id == item.work_id and claimed.generation == 1
        done_item = ledger.report(home, item.work_id, 1, "failed", actor="worker")
        assert done_item.state == "failed"
        assert [e.type for e in ledger.events(home, item.work_id)] == [
            "accepted",
            "claimed",
            "failed",
        ]
    finally:
        close_backends()
        pg_server.drop_database(name)


def test_a_new_id_is_unknown_on_both_paths(one_home) -> None:
    home, relay, _ = one_home
    ledger.open_ids(home)
    missing = new_id(ledger.WORK)
    relay.take()
    for call in (
        lambda: ledger.claim(home, missing, holder="worker"),
        lambda: ledger.report(home, missing, 1, "succeeded", actor="worker"),
    ):
        with pytest.raises(CaptainError) as err:
            call()
        assert err.value.code == "unknown_work" and missing in err.value.message
        assert relay.take() == 1

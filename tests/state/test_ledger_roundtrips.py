"""Round trips to PostgreSQL per ledger transaction, counted on the wire (a relay between
the backend and the real server: tests/support/roundtrips.py): a claim and a report are one
statement each (pg_schema's ``captain_claim``, ``captain_report``), one round trip
(docs/ledger.md, "Round trips"), so their cost on a distant database is one round trip,
not one per statement. And a write the database refuses (a trigger on the item's row)
still refuses the whole claim, with its code, and leaves nothing of it."""

from __future__ import annotations

from pathlib import Path

import psycopg
import pytest
from support.ledger_backends import close_backends, open_ledgers
from support.roundtrips import Relay

from state.errors import CaptainError
from state.home import Home
from state.work import ledger

# one statement each (pg_schema's captain_claim and captain_report), its own transaction:
# was 5 and 4 (one pipeline per transaction), and 12 and 10 before that (one per statement)
CLAIM_TRIPS = 1
REPORT_TRIPS = 1


@pytest.fixture
def relayed(request, tmp_path: Path):
    """A home on a fresh PostgreSQL ledger reached through a counting relay."""
    with open_ledgers(request, "postgresql") as made:
        relay = Relay(made.fresh_url() or "")
        try:
            root = tmp_path / "home"
            Home(root)
            (root / "config.toml").write_text(f'[ledger]\nslots = 4\nurl = "{relay.url}"\n')
            yield Home(root), relay
        finally:
            close_backends(relay.url)
            relay.close()


def test_a_claim_and_its_report_are_one_round_trip_each(relayed) -> None:
    home, relay = relayed
    for n in range(4):
        ledger.accept(home, source="chat", input={"text": f"job {n}"}, requester="alice")
    ledger.open_ids(home)  # connected: the connection's own round trips are not counted
    # The relay sees TCP, not the protocol: one statement is one message (never prepared:
    # a prepare is a turn of its own), and the server answers once it has all of it, so
    # each claim and each report is exactly one turn, however loaded the machine.
    claims, reports = [], []
    for _ in range(3):
        relay.take()
        item = ledger.claim(home, holder="worker")
        claims.append(relay.take())
        assert item.state == "running" and item.generation == 1
        done = ledger.report(home, item.work_id, item.generation, "succeeded", actor="worker")
        reports.append(relay.take())
        assert done.state == "succeeded"
    assert claims == [CLAIM_TRIPS] * 3 and reports == [REPORT_TRIPS] * 3, (claims, reports)
    assert ledger.get(home, item.work_id).state == "succeeded"  # committed, read back


def test_a_write_sent_without_waiting_that_is_refused_refuses_the_whole_claim(relayed) -> None:
    home, relay = relayed  # the item's row is written without waiting, with the COMMIT
    item = ledger.accept(home, source="chat", input={"text": "job"}, requester="alice")
    url = relay.url
    with psycopg.connect(url, autocommit=True) as db:  # the item's row refuses any change
        db.execute(
            "CREATE FUNCTION refuse() RETURNS trigger LANGUAGE plpgsql AS "
            "$$ BEGIN RAISE EXCEPTION 'no change to work items'; END $$"
        )
        db.execute(
            "CREATE TRIGGER refuse BEFORE UPDATE ON work_items "
            "FOR EACH ROW EXECUTE FUNCTION refuse()"
        )
    with pytest.raises(CaptainError) as err:
        ledger.claim(home, holder="worker")
    assert err.value.code == "ledger_error" and "no change to work items" in err.value.message
    after = ledger.get(home, item.work_id)
    assert after.state == "queued" and after.generation == 0
    assert [e.type for e in ledger.events(home, item.work_id)] == ["accepted"]  # no claim event
    with psycopg.connect(url, autocommit=True) as db:
        db.execute("DROP TRIGGER refuse ON work_items")
    assert ledger.claim(home, holder="worker").work_id == item.work_id  # the line still works

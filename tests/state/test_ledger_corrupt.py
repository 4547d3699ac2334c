"""A corrupted ledger row is reported, not fatal (state/work/corrupt.py).

Rows are damaged past captain (tests/support/corrupt.py): SQL UPDATEs on a real PostgreSQL
ledger, bytes over a file ledger's files. Asking for the damaged record is refused with
``ledger_corrupt`` naming its ID; every listing (a page, the queue, a claim's choice of the
next item, the held slots) skips it and serves the rest with correct cursors; the skip is
reported once per process however often the ledger is listed.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from support.corrupt import FILE_DAMAGE, ROW_DAMAGE, damage_delivery, damage_event, damage_item
from support.corrupt import database as raw_database
from support.ledger_backends import open_ledgers

from state.errors import CaptainError
from state.home import Home
from state.work import deliveries, ledger


def submit(home, text: str):
    return ledger.accept(home, source="chat", input={"text": text}, requester="alice")


def refused_corrupt(call, *args, ident: str, **kwargs) -> CaptainError:
    with pytest.raises(CaptainError) as caught:
        call(*args, **kwargs)
    assert caught.value.code == "ledger_corrupt", caught.value.as_json()
    assert caught.value.extra["id"] == ident
    assert ident in caught.value.message
    return caught.value


def reports_of(home: Home, ident: str) -> list[tuple[str, str]]:
    """What ``home``'s store reported about ``ident`` since the last call (moved or left)."""
    reports = home.store.reports
    return [r for r in reports.reported() + reports.warnings() if ident in r[0]]


@pytest.fixture
def pg(request):
    """A PostgreSQL ledger only: on the files, what these damage is the store's quarantine
    (rule 6, tests/state/test_store.py), which served the rest before this rule did."""
    with open_ledgers(request, "postgresql") as made:
        yield made


def damages(ledgers) -> list[str]:  # noqa: F811
    return list(ROW_DAMAGE if ledgers.postgres else FILE_DAMAGE)


def test_a_corrupt_item_is_refused_by_id_and_skipped_by_every_listing(
    tmp_path: Path, ledgers
) -> None:  # noqa: F811
    for n, how in enumerate(damages(ledgers)):
        home = ledgers.home(tmp_path / f"home-{n}")
        first, bad, last = (submit(home, t) for t in ("first", "bad", "last"))
        damage_item(home, bad.work_id, how)

        refused_corrupt(ledger.get, home, bad.work_id, ident=bad.work_id)
        # pages of one go past it, with cursors that still work
        page, cursor = ledger.page(home, limit=1)
        assert [i.work_id for i in page] == [first.work_id] and cursor == first.work_id, how
        page, cursor = ledger.page(home, limit=1, after=cursor)
        assert [i.work_id for i in page] == [last.work_id] and cursor is None, how
        assert [i.work_id for i in ledger.page(home)[0]] == [first.work_id, last.work_id]
        assert [i.work_id for i in ledger.queued(home)] == [first.work_id, last.work_id]
        said = reports_of(home, bad.work_id)
        assert said, (how, "the skip was not reported")
        if ledgers.postgres:  # once per process, however often it is listed
            assert len(said) == 1, said
            for _ in range(3):
                ledger.page(home)
                ledger.queued(home)
            assert reports_of(home, bad.work_id) == []
        # a claim takes the oldest readable item, then the next: never the corrupt one
        assert ledger.claim(home, holder="w").work_id == first.work_id
        assert ledger.claim(home, holder="w").work_id == last.work_id
        with pytest.raises(CaptainError) as none_left:
            ledger.claim(home, holder="w")
        assert none_left.value.code == "not_queued"
        assert {i.work_id for i in ledger.held(home)} == {first.work_id, last.work_id}
        if ledgers.postgres:  # the files quarantined it on the claim: it is gone from there
            refused_corrupt(ledger.cancel, home, bad.work_id, actor="alice", ident=bad.work_id)
            refused_corrupt(ledger.claim, home, bad.work_id, holder="w", ident=bad.work_id)
        ledgers.forget(ledgers.urls[-1] if ledgers.urls else None)


def test_a_corrupt_item_between_two_full_pages_keeps_the_cursor(tmp_path: Path, pg) -> None:
    home = pg.home(tmp_path / "home")
    made = [submit(home, str(n)) for n in range(5)]
    damage_item(home, made[2].work_id, "wrong shape")
    seen, cursor = [], None
    while True:
        page, cursor = ledger.page(home, limit=2, after=cursor)
        seen += [i.work_id for i in page]
        if cursor is None:
            break
    assert seen == [made[n].work_id for n in (0, 1, 3, 4)]


def test_a_corrupt_event_ends_the_history_shown_and_is_reported(tmp_path: Path, pg) -> None:
    home = pg.home(tmp_path / "home")
    item = submit(home, "x")
    ledger.claim(home, holder="w")
    ledger.heartbeat(home, item.work_id, 1)
    ledger.report(home, item.work_id, 1, "succeeded", actor="w")
    damage_event(home, item.work_id, 2)
    shown = ledger.public(home, ledger.get(home, item.work_id), detail=True)
    assert [e["seq"] for e in shown["events"]] == [1]
    assert shown["state"] == "succeeded"  # the item's own record is whole
    assert reports_of(home, item.work_id)


def test_a_corrupt_row_on_postgresql_in_every_table_the_ledger_reads(tmp_path: Path, pg) -> None:
    home = pg.home(tmp_path / "home")
    (home.root / "config.toml").write_text(
        (home.root / "config.toml").read_text() + "\n[endpoints.gh]\n"
    )
    from state.home import Home

    home = Home(home.root)
    item = submit(home, "x")
    ledger.claim(home, holder="w")
    ledger.report(home, item.work_id, 1, "failed", actor="w", detail="why it failed")
    with raw_database(home) as db:
        # an input that is not JSON; an event detail that is not UTF-8
        db.execute(
            "UPDATE work_inputs SET input = '\\xfffe'::bytea WHERE work_id = %s", (item.work_id,)
        )
        db.execute(
            "UPDATE work_events SET detail = '\\xff'::bytea WHERE work_id = %s AND seq = 3",
            (item.work_id,),
        )
    refused_corrupt(ledger.input_of, home, item.work_id, ident=item.work_id)
    assert [e.seq for e in ledger.events(home, item.work_id)] == [1, 2]
    # deliveries: the record of one is of the wrong shape
    one, two, three = (
        deliveries.ingest(home, "gh", f"d-{n}", b"{}").delivery.delivery_id for n in range(3)
    )
    damage_delivery(home, two)
    refused_corrupt(deliveries.get, home, two, ident=two)
    page, cursor = deliveries.page(home, limit=1)
    assert [r.delivery_id for r in page] == [one] and cursor == one
    page, cursor = deliveries.page(home, limit=1, after=cursor)
    assert [r.delivery_id for r in page] == [three] and cursor is None
    assert [r.delivery_id for r in deliveries.page(home, endpoint_id="gh")[0]] == [one, three]
    assert len(reports_of(home, two)) == 1


def test_an_input_edited_since_it_was_accepted_is_never_replayed(tmp_path: Path, ledgers) -> None:  # noqa: F811
    """Well-formed JSON, but not the input the item was accepted with (its fingerprint,
    ``input_sha256``, differs): a replay would run work nobody authorized. It is refused
    ``ledger_corrupt`` by the item's ID, and no new item is made."""
    home = ledgers.home(tmp_path / "home")
    item = submit(home, "the real task")
    ledger.claim(home, holder="w")
    ledger.report(home, item.work_id, 1, "failed", actor="w")
    tampered = b'{"input":{"text":"rm -rf ~"}}\n'
    with raw_database(home) as db:
        if db is None:
            (home.root / "work" / item.work_id / "input.json").write_bytes(tampered)
        else:
            db.execute(
                "UPDATE work_inputs SET input = %s WHERE work_id = %s", (tampered, item.work_id)
            )
    from state.work import replay

    refused_corrupt(
        replay.replay, home, item.work_id, actor="captain", reason="again", ident=item.work_id
    )
    assert len(ledger.all_ids(home)) == 1


def test_a_time_python_cannot_hold_fails_no_listing(tmp_path: Path, pg) -> None:
    """``infinity`` or a year past 9999 in a token's, a delivery's or the workspace's time
    (damaged past captain): the rows are served with the nearest time captain can hold,
    the damage is said once, and tokens, deliveries, the workspace and claims go on (they
    failed whole: "timestamp too large")."""
    from state.home import Home
    from state.work import tokens

    home = pg.home(tmp_path / "home")
    (home.root / "config.toml").write_text(
        (home.root / "config.toml").read_text() + "\n[endpoints.gh]\n"
    )
    home = Home(home.root)
    workspace = tokens.workspace_id(home)
    good, _ = tokens.create(home, "member", "good")
    bad, _ = tokens.create(home, "member", "bad")
    one, two = (
        deliveries.ingest(home, "gh", f"d-{n}", b"{}").delivery.delivery_id for n in range(2)
    )
    with raw_database(home) as db:
        db.execute("UPDATE ledger_meta SET created_at = 'infinity'")
        db.execute(
            "UPDATE api_tokens SET created_at = '-infinity', revoked_at = 'infinity' "
            "WHERE token_id = %s",
            (bad.token_id,),
        )
        db.execute("UPDATE deliveries SET received_at = 'infinity' WHERE delivery_id = %s", (one,))
    home.store.reports.warnings()
    for _ in range(3):  # said once however often it is read
        assert tokens.workspace_id(Home(home.root)) == workspace
        listed = {t.token_id: t for t in tokens.store_for(home).records()}
        assert set(listed) == {good.token_id, bad.token_id}
        assert listed[bad.token_id].revoked_at.year == 9999
        page, _ = deliveries.page(home, endpoint_id="gh")
        assert [r.delivery_id for r in page] == [two, one]  # 'infinity' sorts last
    said = [r for r in home.store.reports.warnings() if r[0].startswith("ledger timestamp")]
    assert sorted(p for p, _ in said) == [
        "ledger timestamp '-infinity'",
        "ledger timestamp 'infinity'",
    ], said

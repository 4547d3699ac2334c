"""Webhook deliveries behind their storage interface (state/work/delivery_store.py), on both
stores: the home's files, and the PostgreSQL ledger's database when the home's ledger is
there (tests/support/ledger_backends.py). The rules are ``state.work.deliveries``' alone;
these pin what each store must keep for them — the body-once window and its purge, the
refusals' bounds, the order and cursors of a list and its filters — and then what the
database store is for: two homes (two hosts, two ``captain serve``) on one database share
one set of deliveries, so a delivery made to each, even at the same instant from separate
processes, is one record and one work item.

What is stored is read past captain (tests/support/deliveries.py): the files, or the rows
over a connection of our own.
"""

from __future__ import annotations

import inspect
import json
import subprocess
import sys
import time
from datetime import datetime, timedelta, timezone
from pathlib import Path

import pytest
from support import deliveries as stored
from support.crew import refused
from support.ledger_backends import open_ledgers

from state.home import Home
from state.work import deliveries, delivery_store, ledger
from state.work.backend import backend_for
from state.work.delivery_files import FileDeliveries

T0 = datetime(2031, 5, 1, 9, 0, tzinfo=timezone.utc)
BODY = b'{"ref": "refs/heads/main", "marker": "DELIVERY-STORE-BODY"}'
OTHER = b'{"ref": "refs/heads/dev"}'
CONFIG = (
    '[endpoints.gh]\nevents = ["push"]\nretention_days = 7\n\n'
    "[endpoints.quiet]\n\n[endpoints.old]\n"
)


def on(ledgers, root: Path, config: str = CONFIG) -> Home:
    ledgers.home(root)
    with (root / "config.toml").open("a") as f:
        f.write("\n" + config)
    return Home(root)


# -- the interface, on both stores -------------------------------------------------------------


def test_each_store_implements_the_whole_interface(tmp_path: Path, ledgers) -> None:
    home = on(ledgers, tmp_path / "home")
    chosen = deliveries.store_for(home)
    assert chosen.name == backend_for(home).name  # one decision: where the ledger is
    if ledgers.postgres:
        from state.work.pg_deliveries import PostgresDeliveries as expected
    else:
        expected = FileDeliveries
    assert isinstance(chosen, expected)
    protocol = delivery_store.DeliveryStore
    for name, value in vars(protocol).items():
        if name.startswith("_") or not inspect.isfunction(value):
            continue
        assert hasattr(expected, name), f"{expected.__name__} lacks {name}"
        assert list(inspect.signature(getattr(expected, name)).parameters) == list(
            inspect.signature(value).parameters
        ), name


def test_a_body_once_body_is_claimed_for_its_window_then_purged(tmp_path: Path, ledgers) -> None:
    home = on(ledgers, tmp_path / "home")
    first = deliveries.ingest(home, "gh", "x-1", BODY, event="push", at=T0, body_once=True)
    assert not first.duplicate and stored.body_claims(home) == 1
    # the same body under another delivery id inside the window: a replay, refused, and the
    # refusal is on record (on PostgreSQL after the intake's transaction rolled back)
    err = refused(
        "delivery_conflict",
        deliveries.ingest,
        home,
        "gh",
        "x-2",
        BODY,
        event="push",
        at=T0 + timedelta(hours=1),
        body_once=True,
    )
    assert "replay" in err.message
    [rejection] = deliveries.rejections(home)
    assert (rejection.source_delivery_id, rejection.endpoint_id) == ("x-2", "gh")
    assert rejection.reason.startswith("replayed body: already delivered as x-1")
    assert deliveries.page(home, endpoint_id="gh", source_delivery_id="x-2") == ([], None)
    # the first delivery's own redelivery is a duplicate, never a replay
    again = deliveries.ingest(
        home, "gh", "x-1", BODY, event="push", at=T0 + timedelta(days=2), body_once=True
    )
    assert again.duplicate and again.delivery == first.delivery
    # past the window the body is new again: the claim is renewed for the new id
    later = deliveries.ingest(
        home, "gh", "x-3", BODY, event="push", at=T0 + timedelta(days=8), body_once=True
    )
    assert not later.duplicate and stored.body_claims(home) == 1
    items = sorted([first.delivery.work_id, later.delivery.work_id])
    assert ledger.all_ids(home) == items
    # the renewed claim outlives a purge inside its window; the first body's retention is
    # over, and the refusal (received today) is older than its bound by then
    assert deliveries.purge(home, at=T0 + timedelta(days=9)).as_json() == {
        "bodies_removed": 1,
        "body_claims_removed": 0,
        "rejections_removed": 1,
    }
    assert list(stored.bodies(home)) == [later.delivery.delivery_id]
    assert deliveries.raw_body(home, first.delivery) is None
    assert deliveries.raw_body_available(home, later.delivery, at=T0 + timedelta(days=9))
    assert deliveries.purge(home, at=T0 + timedelta(days=16)).as_json() == {
        "bodies_removed": 1,
        "body_claims_removed": 1,
        "rejections_removed": 0,
    }
    assert stored.bodies(home) == {} and stored.body_claims(home) == 0
    assert deliveries.rejections(home) == []
    for intake in (first, later):  # the records stay, and say the body is gone
        shown = deliveries.public(home, deliveries.get(home, intake.delivery.delivery_id))
        assert shown["raw_body_available"] is False
        assert (shown["body_sha256"], shown["body_bytes"]) == (
            intake.delivery.body_sha256,
            len(BODY),
        )


def test_refusals_are_bounded_by_count_and_by_age(tmp_path: Path, ledgers, monkeypatch) -> None:
    home = on(ledgers, tmp_path / "home")
    monkeypatch.setattr(deliveries, "MAX_REJECTIONS", 3)
    made = [
        deliveries.reject(home, "gh", f"r-{i}", b"{}", f"bad signature: {i}", event="push")
        for i in range(5)
    ]
    assert [r.rejection_id for r in made] == sorted(r.rejection_id for r in made)
    assert deliveries.rejections(home) == made[2:]  # the newest three, oldest first
    stored.age_rejection(home, made[2].rejection_id, deliveries.REJECTION_DAYS + 1)
    assert deliveries.purge(home).rejections == 1
    assert deliveries.rejections(home) == made[3:]
    assert deliveries.purge(home).rejections == 0
    # a sender's header is kept as said, cut to its bound; a NUL cannot stop it being kept
    odd = deliveries.reject(home, "gh", "\x00" + "x" * 300, b"{}", "why\x00" * 200)
    kept = deliveries.rejections(home)[-1]
    assert kept.rejection_id == odd.rejection_id
    assert len(kept.source_delivery_id) == deliveries.SOURCE_ID_MAX and len(kept.reason) == 500


def test_lists_keep_their_order_cursors_and_filters(tmp_path: Path, ledgers) -> None:
    home = on(ledgers, tmp_path / "home")
    # received out of ID order: the list is by (received_at, delivery_id), newest last
    late = deliveries.ingest(
        home, "gh", "d-late", BODY, event="push", at=T0 + timedelta(seconds=10)
    ).delivery
    early = deliveries.ingest(home, "gh", "d-early", BODY, event="push", at=T0).delivery
    ping = deliveries.ingest(
        home, "gh", "d-ping", OTHER, event="ping", at=T0 + timedelta(seconds=5)
    ).delivery
    old = deliveries.ingest(home, "old", "o-1", BODY, at=T0 + timedelta(seconds=20)).delivery
    assert ping.work_id is None and "ping" in ping.filter_reason
    order = [early, ping, late, old]
    assert deliveries.page(home) == (order, None)
    first, cursor = deliveries.page(home, limit=2)
    assert (first, cursor) == (order[:2], ping.delivery_id)
    assert deliveries.page(home, limit=2, after=cursor) == (order[2:], None)
    assert deliveries.page(home, limit=3) == (order[:3], late.delivery_id)
    assert deliveries.page(home, endpoint_id="gh", limit=2, after=cursor) == ([late], None)
    assert deliveries.page(home, endpoint_id="quiet") == ([], None)  # configured: a true no
    assert deliveries.page(home, endpoint_id="gh", source_delivery_id="d-ping") == ([ping], None)
    assert deliveries.page(home, endpoint_id="gh", source_delivery_id="d-never") == ([], None)
    for after in ("whd_NOTACURSOR", "../deliveries/x", old.delivery_id):  # old: not gh's
        refused("invalid_filter", deliveries.page, home, endpoint_id="gh", after=after)
    for kwargs in (
        {"limit": 0},
        {"limit": 101},
        {"source_delivery_id": "d-1"},
        {"endpoint_id": "gh", "source_delivery_id": ""},
    ):
        refused("invalid_filter", deliveries.page, home, **kwargs)
    err = refused("invalid_filter", deliveries.page, home, endpoint_id="typo")
    assert "gh" in err.message and "quiet" in err.message
    # an endpoint removed from config.toml keeps its history listable, and is still known
    (home.root / "config.toml").write_text(
        (home.root / "config.toml").read_text().replace("[endpoints.old]\n", "")
    )
    home = Home(home.root)
    assert deliveries.page(home, endpoint_id="old") == ([old], None)
    assert deliveries.page(home, endpoint_id="old", source_delivery_id="o-1") == ([old], None)
    assert "old" in refused("invalid_filter", deliveries.page, home, endpoint_id="typo").message
    refused("unknown_delivery", deliveries.get, home, "whd_01M8AAAAAAAAAAAAAAAAAAAAAA")
    refused("unknown_delivery", deliveries.get, home, "../../etc/passwd")


# -- two homes on one PostgreSQL ledger ---------------------------------------------------------


def homes_on(url: str, tmp_path: Path, *names: str) -> list[Home]:
    """Homes (standing for hosts) whose ledger is the one database at ``url``, each with its
    own config.toml configuring the same endpoints."""
    out = []
    for name in names:
        root = tmp_path / name
        Home(root)
        (root / "config.toml").write_text(f'[ledger]\nurl = "{url}"\n\n{CONFIG}')
        out.append(Home(root))
    return out


def no_delivery_files(*homes: Home) -> None:
    for home in homes:
        for folder in ("deliveries", "delivery-bodies"):
            assert not (home.root / folder).exists(), f"{home.root.name} wrote {folder}/"


def test_two_homes_sharing_one_postgresql_ledger_share_their_deliveries(request, tmp_path) -> None:
    with open_ledgers(request, "postgresql") as made:
        a, b = homes_on(made.fresh_url(), tmp_path, "host-a", "host-b")
        first = deliveries.ingest(a, "gh", "d-1", BODY, event="push")
        second = deliveries.ingest(b, "gh", "d-1", BODY, event="push")
        assert not first.duplicate and second.duplicate
        assert second.delivery == first.delivery
        record = first.delivery
        assert ledger.all_ids(a) == ledger.all_ids(b) == [record.work_id]
        assert stored.records(a) == [record.delivery_id]
        # the same identity with another body, through the other home: a conflict
        err = refused("delivery_conflict", deliveries.ingest, b, "gh", "d-1", OTHER, event="push")
        assert record.delivery_id in err.message and "different body" in err.message
        assert ledger.all_ids(a) == [record.work_id]
        # what one home received, the other lists, shows and can hand a replay's worker
        for home in (a, b):
            assert deliveries.page(home) == ([record], None)
            assert deliveries.page(home, endpoint_id="gh", source_delivery_id="d-1") == (
                [record],
                None,
            )
            assert deliveries.get(home, record.delivery_id) == record
            assert deliveries.raw_body(home, record) == BODY
        # the body-once guard is shared: A's body under another id through B is a replay
        deliveries.ingest(a, "gh", "g-1", OTHER, event="push", body_once=True)
        refused(
            "delivery_conflict",
            deliveries.ingest,
            b,
            "gh",
            "g-2",
            OTHER,
            event="push",
            body_once=True,
        )
        assert [r.source_delivery_id for r in deliveries.rejections(a)] == ["g-2"]
        assert deliveries.rejections(a) == deliveries.rejections(b)
        assert len(ledger.all_ids(b)) == 2
        no_delivery_files(a, b)


def ingest_process(cli, delivery_id: str) -> subprocess.Popen:
    """``captain deliveries ingest`` as a process of its own, reading BODY from stdin (it
    blocks there until the body is written: the starting line of a race)."""
    return subprocess.Popen(
        [
            sys.executable,
            "-m",
            "captain_tui",
            "deliveries",
            "ingest",
            "--endpoint",
            "gh",
            "--delivery-id",
            delivery_id,
            "--event",
            "push",
            "--json",
        ],
        cwd=cli.cwd,
        env=cli.env(),
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )


def release(proc: subprocess.Popen) -> None:
    """Give the process its body: it goes on from its stdin."""
    proc.stdin.write(BODY)
    proc.stdin.close()
    proc.stdin = None  # communicate() must not flush it again


def answer(proc: subprocess.Popen) -> dict:
    out, err = proc.communicate(timeout=120)
    assert proc.returncode == 0, (proc.returncode, out[-2000:], err[-2000:])
    payload = json.loads(out)
    assert BODY.decode() not in out.decode() + err.decode()  # a raw body is never printed
    return payload


def test_a_delivery_racing_into_two_homes_is_one_record_and_one_item(
    request, tmp_path, project
) -> None:
    """Real processes: an intake held open (uncommitted) in one home makes the same
    delivery's intake in the other wait on its identity and then find it; one rolled back
    leaves the identity free for the other; and four processes let loose at once on two
    homes agree on one record and one work item."""
    from conftest import Cli

    with open_ledgers(request, "postgresql") as made:
        url = made.fresh_url()
        a, b = homes_on(url, tmp_path, "host-a", "host-b")
        cli_a, cli_b = Cli(a.root, project), Cli(b.root, project)

        def waiting() -> int:
            with made.connect(url) as db:
                # the run's own server: a lock waited for is one of this test's intakes
                return db.execute("SELECT count(*) FROM pg_locks WHERE NOT granted").fetchone()[0]

        def until_waiting(proc: subprocess.Popen) -> None:
            deadline = time.monotonic() + 60
            while waiting() == 0:
                assert proc.poll() is None, proc.communicate()
                assert time.monotonic() < deadline, "the second intake never waited"
                time.sleep(0.05)

        # A's intake, not yet committed; B's waits for it, then finds it: a duplicate
        with backend_for(a).transaction():
            mine = deliveries.ingest(a, "gh", "d-1", BODY, event="push")
            racer = ingest_process(cli_b, "d-1")
            release(racer)
            until_waiting(racer)
        theirs = answer(racer)
        assert theirs["duplicate"] is True
        assert theirs["delivery"]["delivery_id"] == mine.delivery.delivery_id
        assert ledger.all_ids(b) == [mine.delivery.work_id]

        # A's intake rolled back (a host dying mid-intake): B's takes the identity itself
        racer = ingest_process(cli_b, "d-2")
        with pytest.raises(RuntimeError), backend_for(a).transaction():
            lost = deliveries.ingest(a, "gh", "d-2", BODY, event="push")
            release(racer)
            until_waiting(racer)
            raise RuntimeError("the host died")
        theirs = answer(racer)
        assert theirs["duplicate"] is False
        assert theirs["delivery"]["delivery_id"] != lost.delivery.delivery_id
        assert sorted(ledger.all_ids(a)) == sorted(
            [mine.delivery.work_id, theirs["delivery"]["work_id"]]
        )

        # four processes, two per home, released together
        racers = [ingest_process(cli, "d-3") for cli in (cli_a, cli_b, cli_a, cli_b)]
        time.sleep(1.0)  # each is up and waiting for its body
        for proc in racers:
            release(proc)
        answers = [answer(proc) for proc in racers]
        assert sorted(x["duplicate"] for x in answers) == [False, True, True, True]
        assert len({x["delivery"]["delivery_id"] for x in answers}) == 1
        work_id = answers[0]["delivery"]["work_id"]
        assert work_id and len(ledger.all_ids(a)) == 3 and work_id in ledger.all_ids(b)
        assert len(deliveries.page(b, endpoint_id="gh")[0]) == 3
        assert [e.type for e in ledger.events(a, work_id)] == ["accepted"]
        no_delivery_files(a, b)

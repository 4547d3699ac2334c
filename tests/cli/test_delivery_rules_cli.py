"""Webhook deliveries' remaining seed rules, through the real CLI (``python -m captain_tui``):

- raw bodies past their retention are purged — by ``captain deliveries purge`` and by a
  running ``captain watch`` — and the record keeps ``body_sha256`` / ``body_bytes`` with
  ``raw_body_available`` false; expired GitHub-style body claims and old refusals go too;
- a filter naming an endpoint nobody configured and nothing was delivered to is
  ``invalid_filter`` (exit 1), never an empty page; a removed endpoint's history stays
  listable;
- a routine endpoint's receipts offer no cancel or replay: ``routine_receipt``, exit 1.

Bulk set-up the CLI cannot make (a GitHub-style body claim, a refusal, which only the HTTP
door records) is written in-process through the same ``state.work.deliveries`` functions.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from datetime import timedelta
from pathlib import Path

import pytest
from support import deliveries as stored
from support.cli import IN_A_PROCESS, ok, refused, refused_human, runner
from support.ledger_backends import ON_BOTH

from state.clock import now
from state.home import Home
from state.work import deliveries, ledger

BODY = '{"marker": "RAW-WEBHOOK-BODY-NEVER-PRINTED-77c1"}'


@pytest.fixture
def run(request, cli, cli_ledger):  # files; ON_BOTH tests again on PostgreSQL
    return runner(request, cli, any_exit=True)


def configure(home: Home, text: str) -> None:
    (home.root / "config.toml").write_text(text)


def ingest(run, endpoint: str, delivery_id: str, body: str = BODY, event: str = "push") -> dict:
    return ok(
        run(
            "deliveries",
            "ingest",
            "--endpoint",
            endpoint,
            "--delivery-id",
            delivery_id,
            "--event",
            event,
            "--json",
            stdin=body,
        )
    )["delivery"]


def bodies(home: Home) -> list[str]:
    folder = Path(home.root) / "delivery-bodies"
    return sorted(p.name for p in folder.iterdir()) if folder.exists() else []


def files(home: Home) -> dict[str, bytes]:
    return {
        str(p.relative_to(home.root)): p.read_bytes()
        for p in Path(home.root).rglob("*")
        if p.is_file() and "locks" not in p.parts
    }


# -- 1. purging raw bodies ---------------------------------------------------------------


@ON_BOTH
def test_deliveries_purge_removes_expired_bodies_and_keeps_the_records(run, home):
    configure(
        home, "[endpoints.gone]\nretention_days = 0\n\n[endpoints.kept]\nretention_days = 7\n"
    )
    gone = ingest(run, "gone", "g-1")
    kept = ingest(run, "kept", "k-1")
    assert gone["raw_body_available"] is False  # zero days: expired on arrival ...
    assert len(stored.bodies(home)) == 2  # ... but its body is still held until a purge
    # a GitHub-style body claim past its window, and a refusal older than the bound
    claimed = deliveries.ingest(
        home, "gone", "g-2", b'{"n": 2}', event="push", body_once=True
    ).delivery
    assert stored.body_claims(home) == 1
    old = deliveries.reject(home, "kept", "k-9", b"{}", "bad signature: test")
    young = deliveries.reject(home, "kept", "k-8", b"{}", "bad signature: test")
    stored.age_rejection(home, old.rejection_id, deliveries.REJECTION_DAYS + 1)

    purged = ok(run("deliveries", "purge", "--json"))
    assert {
        k: purged[k] for k in ("bodies_removed", "body_claims_removed", "rejections_removed")
    } == {"bodies_removed": 2, "body_claims_removed": 1, "rejections_removed": 1}
    assert list(stored.bodies(home)) == [kept["delivery_id"]]
    assert stored.body_claims(home) == 0
    assert deliveries.rejections(home) == [young]
    assert sorted(stored.records(home)) == sorted(
        [gone["delivery_id"], kept["delivery_id"], claimed.delivery_id]
    )  # records stay
    quarantine = Path(home.root) / "quarantine"  # a claim is deleted, never quarantined
    assert not quarantine.exists() or list(quarantine.iterdir()) == []

    for before in (gone, claimed.model_dump(mode="json")):
        after = ok(run("deliveries", "show", before["delivery_id"], "--json"))["delivery"]
        assert after["raw_body_available"] is False
        assert (after["body_sha256"], after["body_bytes"]) == (
            before["body_sha256"],
            before["body_bytes"],
        )
        assert after["work_id"] == before["work_id"]
    held = ok(run("deliveries", "show", kept["delivery_id"], "--json"))["delivery"]
    assert held["raw_body_available"] is True

    # nothing left to purge; the human line says how many
    again = run("deliveries", "purge")
    assert again.code == 0 and again.out.startswith("Removed 0 raw bodies"), again.out
    assert "RAW-WEBHOOK-BODY" not in again.out + again.err


@IN_A_PROCESS
def test_deliveries_purge_is_the_captains(run, home):
    configure(home, "[endpoints.gone]\nretention_days = 0\n")
    ingest(run, "gone", "g-1")
    crew = ok(run("crew", "Jack", "--task", "Tidy", "--no-launch", "--json"))
    refused(run("deliveries", "purge", "--json", env=crew["env"]), "crew_forbidden")
    assert len(bodies(home)) == 1


def test_captain_watch_purges_expired_bodies(cli, home, tmp_path):
    configure(home, "[endpoints.gone]\nretention_days = 0\n")
    delivery = ok(
        cli(
            "deliveries",
            "ingest",
            "--endpoint",
            "gone",
            "--delivery-id",
            "g-1",
            "--json",
            stdin=BODY,
        )
    )["delivery"]
    assert len(bodies(home)) == 1
    log = tmp_path / "watch.log"
    with log.open("wb") as err:
        watch = subprocess.Popen(
            [sys.executable, "-m", "captain_tui", "watch"],
            env=cli.env(),
            cwd=cli.cwd,
            stdout=subprocess.DEVNULL,
            stderr=err,
            start_new_session=True,
        )
    try:
        deadline = time.monotonic() + 30
        while bodies(home) and time.monotonic() < deadline:
            assert watch.poll() is None, log.read_text()
            time.sleep(0.05)
        assert bodies(home) == [], f"watch did not purge in 30 s: {log.read_text()}"
    finally:
        os.killpg(watch.pid, signal.SIGINT)  # our own child's group, by its id
        try:
            watch.wait(timeout=15)
        except subprocess.TimeoutExpired:
            os.killpg(watch.pid, signal.SIGKILL)
            watch.wait(timeout=15)
    shown = ok(cli("deliveries", "show", delivery["delivery_id"], "--json"))["delivery"]
    assert shown["raw_body_available"] is False and shown["body_bytes"] == len(BODY)


# -- 2. filters: a typo is refused, never an empty page ------------------------------------


def test_an_unknown_endpoint_is_an_invalid_filter(run, home):
    configure(home, "[endpoints.gh]\n\n[endpoints.quiet]\n")
    delivery = ingest(run, "gh", "d-1")
    for args in (
        ("--endpoint", "typo"),
        ("--endpoint", ""),
        ("--endpoint", "gh!"),
        ("--endpoint", "typo", "--source-delivery-id", "d-1"),
    ):
        err = refused(run("deliveries", "list", *args, "--json"), "invalid_filter")
        assert "gh" in err["message"] and "quiet" in err["message"]  # what is known
    line = refused_human(run("deliveries", "list", "--endpoint", "typo"), "invalid_filter")
    assert "not configured" in line and "no deliveries on record" in line

    # configured, nothing received yet: a true empty page
    assert ok(run("deliveries", "list", "--endpoint", "quiet", "--json"))["deliveries"] == []
    # the identity question on a known endpoint: "never seen" is the right answer there
    assert (
        ok(run("deliveries", "list", "--endpoint", "gh", "--source-delivery-id", "d-9", "--json"))[
            "deliveries"
        ]
        == []
    )
    # a source id that could never have been recorded is a typo too
    refused(
        run("deliveries", "list", "--endpoint", "gh", "--source-delivery-id", "", "--json"),
        "invalid_filter",
    )
    refused(run("deliveries", "list", "--source-delivery-id", "d-1", "--json"), "invalid_filter")

    # an endpoint removed from config.toml keeps its history listable
    configure(home, "[endpoints.quiet]\n")
    listed = ok(run("deliveries", "list", "--endpoint", "gh", "--json"))["deliveries"]
    assert [d["delivery_id"] for d in listed] == [delivery["delivery_id"]]
    asked = ok(
        run("deliveries", "list", "--endpoint", "gh", "--source-delivery-id", "d-1", "--json")
    )["deliveries"]
    assert [d["delivery_id"] for d in asked] == [delivery["delivery_id"]]
    assert (
        "gh"
        in refused(run("deliveries", "list", "--endpoint", "typo", "--json"), "invalid_filter")[
            "message"
        ]
    )


def test_every_work_list_filter_refuses_a_typo(run):
    for args in (
        ("--state", "runnign"),
        ("--source", "hook"),
        ("--limit", "0"),
        ("--limit", "101"),
        ("--after", "nope"),
    ):
        refused(run("work", "list", *args, "--json"), "invalid_filter")
    refused(run("deliveries", "list", "--after", "whd_NOTACURSOR", "--json"), "invalid_filter")
    refused(run("deliveries", "list", "--limit", "0", "--json"), "invalid_filter")


# -- 4. routine receipts --------------------------------------------------------------------


@ON_BOTH
def test_a_routine_receipt_offers_no_cancel_or_replay(run, home):
    configure(home, "[endpoints.chores]\nroutine = true\n\n[endpoints.gh]\n")
    routine = ingest(run, "chores", "c-1")
    plain = ingest(run, "gh", "d-1")
    assert routine["routine"] is True and routine["work_id"] and plain["routine"] is False
    said = run("deliveries", "show", routine["delivery_id"])
    assert "routine receipt" in said.out
    wid = routine["work_id"]
    before = files(home)

    for args in (("work", "cancel", wid), ("work", "replay", wid, "--reason", "again")):
        err = refused(run(*args, "--json"), "routine_receipt")
        assert wid in err["message"] and "chores" in err["message"]
        assert err["delivery_id"] == routine["delivery_id"]
        refused_human(run(*args), "routine_receipt")
    assert files(home) == before  # nothing was written

    # a worker runs it, and it finishes: replay is still not captain's to do
    claimed = ok(run("work", "claim", wid, "--holder", "pipeline", "--json"))
    ok(
        run(
            "work",
            "report",
            wid,
            "--generation",
            str(claimed["generation"]),
            "--outcome",
            "succeeded",
            "--holder",
            "pipeline",
            "--json",
        )
    )
    refused(run("work", "replay", wid, "--reason", "again", "--json"), "routine_receipt")
    refused(run("work", "cancel", wid, "--json"), "routine_receipt")
    assert "routine receipt" in run("work", "show", wid).out

    # the endpoint beside it keeps both controls
    assert ok(run("work", "cancel", plain["work_id"], "--json"))["outcome"] == "cancelled"
    assert (
        ok(run("work", "replay", plain["work_id"], "--reason", "again", "--json"))["item"][
            "replay_of"
        ]
        == plain["work_id"]
    )


@ON_BOTH
def test_a_routine_item_needing_reconciliation_is_resolved_by_a_person(run, home):
    configure(home, "[endpoints.chores]\nroutine = true\n")
    wid = ingest(run, "chores", "c-1")["work_id"]
    ok(run("work", "claim", wid, "--holder", "pipeline", "--json"))
    # its lease lapses and its process cannot be verified (the reconciler's round)
    ledger.examine(home, lambda locator: "unknown", holder="test", at=now() + timedelta(hours=1))
    assert ok(run("work", "show", wid, "--json"))["item"]["state"] == "needs_reconciliation"
    refused(run("work", "cancel", wid, "--json"), "routine_receipt")
    resolved = ok(
        run(
            "work",
            "resolve",
            wid,
            "--generation",
            "1",
            "--to",
            "failed",
            "--reason",
            "the pipeline run failed",
            "--json",
        )
    )["item"]
    assert resolved["state"] == "failed"


def test_routine_is_decided_when_a_delivery_is_recorded(run, home):
    configure(home, "[endpoints.chores]\n")
    earlier = ingest(run, "chores", "c-1")
    configure(home, "[endpoints.chores]\nroutine = true\n")
    later = ingest(run, "chores", "c-2")
    assert (earlier["routine"], later["routine"]) == (False, True)
    # the history is not rewritten by a config change: the earlier item keeps its controls
    assert ok(run("work", "cancel", earlier["work_id"], "--json"))["outcome"] == "cancelled"
    refused(run("work", "cancel", later["work_id"], "--json"), "routine_receipt")
    configure(home, '[endpoints.chores]\nroutine = "yes"\n')  # only a TOML boolean: refused
    refused(
        run(
            "deliveries",
            "ingest",
            "--endpoint",
            "chores",
            "--delivery-id",
            "c-3",
            "--json",
            stdin="{}",
        ),
        "invalid_config",
    )

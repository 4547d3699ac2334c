"""The work ledger through the real CLI: ``captain work ...`` and ``captain deliveries ...``.

Every call is ``captain_tui.cli.main.main(argv)`` in this process, in the world a fresh
``python -m captain_tui`` would have (``support.cli.InProcess``); the tests marked
``in_a_process`` run every call as a real subprocess instead (the ``cli`` fixture), so the
entry point and exit codes are seen through a real process too (stdin and a crew's
environment are, in tests/cli/test_stdin_and_args.py and test_cli.py's round trip).
Refusals are checked by code and exit 1, in JSON and in the human line on stderr; usage
errors exit 2.
Only bulk set-up (a hundred items for paging) is written in-process, through the same
``state.work.ledger`` functions the CLI calls.
"""

from __future__ import annotations

import hashlib
import json
import re
from datetime import datetime, timedelta

import pytest
from support import deliveries as delivery_store
from support.cli import IN_A_PROCESS, InProcess, Run, ok, refused, refused_human, runner
from support.ledger_backends import ON_BOTH, stored_input_and_details

from state.work import ledger

SECRET = "PLEASE-NEVER-PRINT-THIS-INPUT-7f3a"
DETAIL = "PRIVATE-DETAIL-NEVER-PRINTED-91c2"
BODY = '{"marker": "RAW-WEBHOOK-BODY-NEVER-PRINTED-5d1e", "token": "hunter2"}'


# -- helpers --------------------------------------------------------------------------------


@pytest.fixture
def run(request, cli, cli_ledger):
    """The CLI, asserting on every call that no traceback reached a person: in this process,
    or a real process per call for a test marked ``IN_A_PROCESS``. Every test here is marked
    ``ON_BOTH``: it runs on the home's files, and again on a fresh PostgreSQL ledger
    (``CAPTAIN_LEDGER_URL`` in every call, this test's own ledger calls too)."""
    return runner(request, cli)


def usage(result) -> None:
    """Exit 2: argparse's text on stderr, or (asked with --json) one ``usage`` refusal on
    stdout and nothing on stderr."""
    assert result.code == 2, (result.code, result.out, result.err)
    if result.out:
        error = json.loads(result.out)["error"]
        assert error["code"] == "usage" and error["usage"].startswith("usage:"), error
        assert result.err == "", result.err
        return
    assert "usage:" in result.err and "error:" in result.err, result.err


def configure(home, text: str) -> None:
    (home.root / "config.toml").write_text(text)


def submit(run, text: str = "a chat task", *extra: str, env=None) -> dict:
    return ok(run("work", "submit", "--text", text, *extra, "--json", env=env))["item"]


def claim(run, *extra: str) -> dict:
    return ok(run("work", "claim", *extra, "--json"))


def show(run, work_id: str) -> dict:
    return ok(run("work", "show", work_id, "--json"))["item"]


def items(run, *flags: str) -> list[dict]:
    return ok(run("work", "list", "--limit", "100", *flags, "--json"))["items"]


def when(stamp: str) -> datetime:
    return datetime.fromisoformat(stamp.replace("Z", "+00:00"))


def running_item(run) -> dict:
    item = submit(run)
    claimed = claim(run, item["work_id"])
    assert claimed["item"]["state"] == "running"
    return claimed["item"]


def reconciling_item(run) -> dict:
    """A running item with no locator: its stop cannot be confirmed."""
    item = running_item(run)
    cancelled = ok(run("work", "cancel", item["work_id"], "--json"))
    assert cancelled["outcome"] == "stop_unconfirmed"
    assert cancelled["state"] == "needs_reconciliation"
    return cancelled["item"]


def recruit_no_launch(run, name: str, task: str = "Tidy the docs") -> dict:
    return ok(
        run(
            "crew",
            name,
            "--task",
            task,
            "--owns",
            f"src/{name.lower()}",
            "--allow",
            "edit",
            "--no-launch",
            "--json",
        )
    )


def crew_done(run, recruit: dict, report: str = "Changed x; tests pass"):
    """The crew process, from the env recruiting printed: read the task, then done."""
    env = recruit["env"]
    assert run("inbox", recruit["crew"], "--json", env=env).code == 0
    return run("done", recruit["crew"], "--report", report, "--json", env=env)


# -- refusals -------------------------------------------------------------------------------


@ON_BOTH
def test_invalid_filter_is_a_refusal_never_an_empty_page(run):
    submit(run)
    typo, source, zero, over, after = run.many(
        ("work", "list", "--state", "runnign", "--json"),
        ("work", "list", "--source", "email", "--json"),
        ("work", "list", "--limit", "0", "--json"),
        ("work", "list", "--limit", "101", "--json"),
        ("work", "list", "--after", "not-a-cursor", "--json"),
    )
    err = refused(typo, "invalid_filter")
    assert "runnign" in err["message"] and "running" in err["message"]
    assert "items" not in json.loads(typo.out)  # not an empty page
    assert "email" in refused(source, "invalid_filter")["message"]
    assert "100" in refused(zero, "invalid_filter")["message"]
    assert "100" in refused(over, "invalid_filter")["message"]
    refused(after, "invalid_filter")
    message = refused_human(run("work", "list", "--state", "runnign"), "invalid_filter")
    assert "runnign" in message
    # the correct spelling answers a page: the refusal above was about the typo
    assert ok(run("work", "list", "--state", "running", "--json"))["items"] == []
    assert len(ok(run("work", "list", "--limit", "100", "--json"))["items"]) == 1

    lone, zero_d, over_d = run.many(
        ("deliveries", "list", "--source-delivery-id", "abc", "--json"),
        ("deliveries", "list", "--limit", "0", "--json"),
        ("deliveries", "list", "--limit", "101", "--json"),
    )
    assert "--endpoint" in refused(lone, "invalid_filter")["message"]
    refused(zero_d, "invalid_filter")
    refused(over_d, "invalid_filter")
    refused_human(run("deliveries", "list", "--source-delivery-id", "abc"), "invalid_filter")


@ON_BOTH
def test_unknown_work_for_every_command(run):
    known = submit(run)["work_id"]
    unknown = "wrk_01JAAAAAAAAAAAAAAAAAAAAAAA"  # well-formed, never created
    jobs = [
        ("work", "show", unknown, "--json"),
        ("work", "cancel", unknown, "--json"),
        ("work", "replay", unknown, "--reason", "again", "--json"),
        (
            "work",
            "resolve",
            unknown,
            "--generation",
            "1",
            "--to",
            "failed",
            "--reason",
            "checked",
            "--json",
        ),
        ("work", "claim", unknown, "--json"),
        ("work", "heartbeat", unknown, "--generation", "1", "--json"),
        ("work", "report", unknown, "--generation", "1", "--outcome", "failed", "--json"),
    ]
    # malformed IDs never reach the store
    for bad in ("wrk_bogus", "nope", "../../etc/passwd", "wrk_a/b", known.lower()):
        jobs += [("work", "show", bad, "--json"), ("work", "cancel", bad, "--json")]
    for result in run.many(*jobs):
        refused(result, "unknown_work")
    assert unknown in refused_human(run("work", "show", unknown), "unknown_work")
    # asking created nothing, and the known item is untouched
    assert [i["work_id"] for i in items(run)] == [known]
    assert show(run, known)["state"] == "queued"


@ON_BOTH
def test_stale_generation_after_a_retry_reclaims_the_item(run):
    item = submit(run, "flaky job", "--max-attempts", "2")
    wid = item["work_id"]
    first = claim(run, wid)
    assert first["generation"] == 1
    ok(run("work", "heartbeat", wid, "--generation", "1", "--json"))
    retried = ok(
        run(
            "work",
            "report",
            wid,
            "--generation",
            "1",
            "--outcome",
            "failed",
            "--repeatable",
            "--json",
        )
    )["item"]
    assert retried["state"] == "queued" and retried["generation"] == 1
    second = claim(run, wid)
    assert second["generation"] == 2 and second["run_id"] != first["run_id"]

    # the first attempt's worker, still holding generation 1, is fenced out
    beat, late = run.many(
        ("work", "heartbeat", wid, "--generation", "1", "--json"),
        ("work", "report", wid, "--generation", "1", "--outcome", "succeeded", "--json"),
    )
    for result in (beat, late):
        err = refused(result, "stale_generation")
        assert err["generation"] == 2 and err["state"] == "running"
    refused_human(
        run("work", "report", wid, "--generation", "1", "--outcome", "failed"), "stale_generation"
    )
    refused(run("work", "heartbeat", wid, "--generation", "3", "--json"), "stale_generation")

    now_ = show(run, wid)
    assert now_["state"] == "running" and now_["generation"] == 2
    assert [a["run_id"] for a in now_["attempts"]] == [first["run_id"], second["run_id"]]
    assert [a["outcome"] for a in now_["attempts"]] == ["failed", None]
    assert [e["type"] for e in now_["events"]] == ["accepted", "claimed", "retry_queued", "claimed"]
    # the current generation still reports
    done = ok(run("work", "report", wid, "--generation", "2", "--outcome", "succeeded", "--json"))[
        "item"
    ]
    assert done["state"] == "succeeded"


@ON_BOTH
def test_not_running(run):
    queued = submit(run)["work_id"]
    beat, report = run.many(
        ("work", "heartbeat", queued, "--generation", "0", "--json"),
        ("work", "report", queued, "--generation", "0", "--outcome", "succeeded", "--json"),
    )
    assert refused(beat, "not_running")["state"] == "queued"
    assert refused(report, "not_running")["state"] == "queued"

    finished = running_item(run)["work_id"]
    ok(run("work", "report", finished, "--generation", "1", "--outcome", "succeeded", "--json"))
    beat, again = run.many(
        ("work", "heartbeat", finished, "--generation", "1", "--json"),
        ("work", "report", finished, "--generation", "1", "--outcome", "failed", "--json"),
    )
    assert refused(beat, "not_running")["state"] == "succeeded"
    assert refused(again, "not_running")["state"] == "succeeded"
    refused_human(run("work", "heartbeat", finished, "--generation", "1"), "not_running")
    assert show(run, finished)["state"] == "succeeded"
    assert show(run, queued)["state"] == "queued"


@ON_BOTH
def test_not_queued(run):
    err = refused(run("work", "claim", "--json"), "not_queued")
    assert "no work item is queued" in err["message"]
    live = running_item(run)["work_id"]
    assert refused(run("work", "claim", live, "--json"), "not_queued")["state"] == "running"
    ok(run("work", "report", live, "--generation", "1", "--outcome", "failed", "--json"))
    assert refused(run("work", "claim", live, "--json"), "not_queued")["state"] == "failed"
    refused_human(run("work", "claim", live), "not_queued")
    # a chat item queued does not satisfy a claim for webhook work
    submit(run)
    refused(run("work", "claim", "--source", "webhook", "--json"), "not_queued")
    assert show(run, live)["generation"] == 1


@ON_BOTH
def test_no_capacity(run, home):
    configure(home, "[ledger]\nslots = 1\n")
    a = submit(run, "first")["work_id"]
    b = submit(run, "second")["work_id"]
    assert claim(run)["item"]["work_id"] == a  # the oldest first
    err = refused(run("work", "claim", "--json"), "no_capacity")
    assert err["slots"] == 1 and a in err["message"]
    refused(run("work", "claim", b, "--json"), "no_capacity")
    assert "slots" in refused_human(run("work", "claim", b), "no_capacity")
    assert show(run, b)["state"] == "queued" and show(run, b)["attempts"] == []
    # the slot frees when the running item finishes
    ok(run("work", "report", a, "--generation", "1", "--outcome", "succeeded", "--json"))
    assert claim(run)["item"]["work_id"] == b


@ON_BOTH
def test_not_finished(run):
    queued = submit(run)["work_id"]
    live = running_item(run)["work_id"]
    stuck = reconciling_item(run)["work_id"]
    for wid, state in ((queued, "queued"), (live, "running"), (stuck, "needs_reconciliation")):
        err = refused(run("work", "replay", wid, "--reason", "try again", "--json"), "not_finished")
        assert err["state"] == state and "Cancel it first" in err["message"]
    refused_human(run("work", "replay", live, "--reason", "again"), "not_finished")
    assert len(items(run)) == 3  # no replay was created


@ON_BOTH
def test_payload_expired_names_the_expiry(run, home):
    configure(home, "[endpoints.gh]\nretention_days = 0\n\n[endpoints.keep]\n")
    got = ok(
        run(
            "deliveries",
            "ingest",
            "--endpoint",
            "gh",
            "--delivery-id",
            "d-1",
            "--event",
            "push",
            "--json",
            stdin=BODY,
        )
    )
    delivery = got["delivery"]
    assert delivery["raw_body_available"] is False  # kept for zero days
    wid = delivery["work_id"]
    assert ok(run("work", "cancel", wid, "--json"))["outcome"] == "cancelled"

    err = refused(
        run("work", "replay", wid, "--reason", "the sender asked", "--json"), "payload_expired"
    )
    expires = when(delivery["raw_body_expires_at"])
    assert when(err["raw_body_expires_at"]) == expires
    named = re.findall(r"\d{4}-\d\d-\d\dT[\d:.]+(?:Z|[+-]\d\d:\d\d)", err["message"])
    assert named and when(named[0]) == expires, err["message"]
    assert delivery["delivery_id"] in err["message"]
    message = refused_human(run("work", "replay", wid, "--reason", "again"), "payload_expired")
    assert "expired" in message
    # the record is still there: "received, cannot replay", not "never seen"
    shown = ok(run("deliveries", "show", delivery["delivery_id"], "--json"))["delivery"]
    assert shown["raw_body_available"] is False and shown["work_id"] == wid
    assert len(items(run)) == 1

    # the same path with a held body replays
    kept = ok(
        run(
            "deliveries",
            "ingest",
            "--endpoint",
            "keep",
            "--delivery-id",
            "d-1",
            "--json",
            stdin=BODY,
        )
    )["delivery"]
    assert kept["raw_body_available"] is True and kept["delivery_id"] != delivery["delivery_id"]
    ok(run("work", "cancel", kept["work_id"], "--json"))
    replayed = ok(run("work", "replay", kept["work_id"], "--reason", "resend", "--json"))["item"]
    assert replayed["replay_of"] == kept["work_id"]
    assert replayed["delivery_id"] == kept["delivery_id"] and replayed["source"] == "webhook"


@ON_BOTH
def test_evidence_required(run):
    stuck = reconciling_item(run)
    wid, gen = stuck["work_id"], str(stuck["generation"])
    no_reason, blank, unattested = run.many(
        ("work", "resolve", wid, "--generation", gen, "--to", "failed", "--json"),
        ("work", "resolve", wid, "--generation", gen, "--to", "failed", "--reason", "  ", "--json"),
        (
            "work",
            "resolve",
            wid,
            "--generation",
            gen,
            "--to",
            "cancelled",
            "--reason",
            "looked at it",
            "--json",
        ),
    )
    assert "--reason" in refused(no_reason, "evidence_required")["message"]
    refused(blank, "evidence_required")
    assert "--runtime-stopped" in refused(unattested, "evidence_required")["message"]
    refused_human(
        run("work", "resolve", wid, "--generation", gen, "--to", "succeeded"), "evidence_required"
    )
    assert show(run, wid)["state"] == "needs_reconciliation"  # nothing was resolved

    done = ok(
        run(
            "work",
            "resolve",
            wid,
            "--generation",
            gen,
            "--to",
            "cancelled",
            "--reason",
            "pane checked: process exited",
            "--runtime-stopped",
            "--json",
        )
    )["item"]
    assert done["state"] == "cancelled"
    assert done["resolution"]["runtime_stopped"] is True
    assert done["resolution"]["reason"] == "pane checked: process exited"

    for reason in ("", "   "):
        err = refused(run("work", "replay", wid, "--reason", reason, "--json"), "evidence_required")
        assert "--reason" in err["message"]
    assert len(items(run)) == 1


@ON_BOTH
def test_not_reconciling_and_stale_resolve(run):
    queued = submit(run)["work_id"]
    live = running_item(run)["work_id"]
    for wid, state, gen in ((queued, "queued", "0"), (live, "running", "1")):
        err = refused(
            run(
                "work",
                "resolve",
                wid,
                "--generation",
                gen,
                "--to",
                "failed",
                "--reason",
                "checked",
                "--json",
            ),
            "not_reconciling",
        )
        assert err["state"] == state
    refused_human(
        run("work", "resolve", live, "--generation", "1", "--to", "failed", "--reason", "checked"),
        "not_reconciling",
    )
    assert show(run, live)["state"] == "running"
    stuck = reconciling_item(run)["work_id"]
    err = refused(
        run(
            "work",
            "resolve",
            stuck,
            "--generation",
            "0",
            "--to",
            "failed",
            "--reason",
            "checked",
            "--json",
        ),
        "stale_generation",
    )
    assert err["generation"] == 1
    ok(
        run(
            "work",
            "resolve",
            stuck,
            "--generation",
            "1",
            "--to",
            "failed",
            "--reason",
            "checked",
            "--json",
        )
    )
    refused(
        run(
            "work",
            "resolve",
            stuck,
            "--generation",
            "1",
            "--to",
            "succeeded",
            "--reason",
            "again",
            "--json",
        ),
        "not_reconciling",
    )
    assert show(run, stuck)["state"] == "failed"


@ON_BOTH
def test_delivery_conflict(run, home):
    configure(home, "[endpoints.gh]\n")
    first = ok(
        run(
            "deliveries", "ingest", "--endpoint", "gh", "--delivery-id", "abc", "--json", stdin=BODY
        )
    )["delivery"]
    err = refused(
        run(
            "deliveries",
            "ingest",
            "--endpoint",
            "gh",
            "--delivery-id",
            "abc",
            "--json",
            stdin=BODY + " ",
        ),
        "delivery_conflict",
    )
    assert err["delivery_id"] == first["delivery_id"] and "abc" in err["message"]
    refused_human(
        run("deliveries", "ingest", "--endpoint", "gh", "--delivery-id", "abc", stdin="other"),
        "delivery_conflict",
    )
    rows = ok(run("deliveries", "list", "--json"))["deliveries"]
    assert len(rows) == 1
    assert rows[0]["body_sha256"] == hashlib.sha256(BODY.encode()).hexdigest()
    assert len(items(run)) == 1


@ON_BOTH
def test_unknown_endpoint(run, home):
    configure(home, "[endpoints.gh]\n")
    for name in ("github", "../gh", ""):
        err = refused(
            run(
                "deliveries",
                "ingest",
                "--endpoint",
                name,
                "--delivery-id",
                "x",
                "--json",
                stdin=BODY,
            ),
            "unknown_endpoint",
        )
        assert err["message"]
    assert (
        "gh"
        in refused(
            run(
                "deliveries",
                "ingest",
                "--endpoint",
                "github",
                "--delivery-id",
                "x",
                "--json",
                stdin=BODY,
            ),
            "unknown_endpoint",
        )["message"]
    )
    refused_human(
        run("deliveries", "ingest", "--endpoint", "github", "--delivery-id", "x", stdin=BODY),
        "unknown_endpoint",
    )
    assert ok(run("deliveries", "list", "--json"))["deliveries"] == []
    assert items(run) == []


@ON_BOTH
@IN_A_PROCESS
def test_unknown_delivery(run):
    for did in ("whd_AAAAAAAA", "nope"):
        refused(run("deliveries", "show", did, "--json"), "unknown_delivery")


@ON_BOTH
def test_crew_may_not_run_captain_ledger_commands(run):
    r = recruit_no_launch(run, "Jack")
    wid = r["work_id"]
    for args in (
        ("work", "cancel", wid),
        ("work", "replay", wid, "--reason", "x"),
        ("work", "resolve", wid, "--generation", "1", "--to", "failed", "--reason", "x"),
        ("work", "submit", "--text", "x"),
        ("work", "claim"),
        ("work", "heartbeat", wid, "--generation", "1"),
    ):
        refused(run(*args, "--json", env=r["env"]), "crew_forbidden")
    assert show(run, wid)["state"] == "running"


@ON_BOTH
def test_usage_errors_exit_2(run):
    wid = "wrk_01JAAAAAAAAAAAAAAAAAAAAAAA"
    cases = [
        ("work",),
        ("work", "frobnicate"),
        ("work", "list", "--limit", "ten"),
        ("work", "show"),
        ("work", "replay", wid),
        ("work", "resolve", wid, "--to", "failed", "--reason", "x"),
        ("work", "resolve", wid, "--generation", "1", "--to", "done", "--reason", "x"),
        ("work", "resolve", wid, "--generation", "-1", "--to", "failed", "--reason", "x"),
        ("work", "resolve", wid, "--generation", "one", "--to", "failed", "--reason", "x"),
        ("work", "heartbeat", wid),
        ("work", "report", wid, "--generation", "1"),
        ("work", "report", wid, "--generation", "1", "--outcome", "cancelled"),
        ("work", "report", wid, "--generation", "1", "--outcome", "failed", "--cost-usd", "-1"),
        ("work", "submit"),
        ("work", "submit", "--text", "x", "--max-attempts", "0"),
        ("work", "claim", "--source", "email"),
        ("deliveries",),
        ("deliveries", "ingest", "--delivery-id", "x"),
        ("deliveries", "ingest", "--endpoint", "gh"),
        ("deliveries", "show"),
        ("deliveries", "list", "--limit", "many"),
    ]
    for result in run.many(*[(*c, "--json") if len(c) > 1 else c for c in cases]):
        usage(result)


# -- reading --------------------------------------------------------------------------------


@ON_BOTH
def test_list_pagination_has_no_duplicates_or_skips(run, home):
    made = [
        ledger.accept(
            home, source="chat", input={"text": f"task {i}"}, requester="captain:test"
        ).work_id
        for i in range(105)
    ]
    expected = sorted(made)

    full = ok(run("work", "list", "--limit", "100", "--json"))
    assert len(full["items"]) == 100
    assert full["next_cursor"] == full["items"][-1]["work_id"]
    rest = ok(run("work", "list", "--limit", "100", "--after", full["next_cursor"], "--json"))
    assert len(rest["items"]) == 5 and rest["next_cursor"] is None
    assert [r["work_id"] for r in full["items"] + rest["items"]] == expected
    default = ok(run("work", "list", "--json"))
    assert len(default["items"]) == 50 and default["next_cursor"] == expected[49]

    # walk in pages of 15 (105 is an exact multiple: the last page says "no more")
    seen, cursor, pages = [], None, 0
    while True:
        flags = ["--after", cursor] if cursor else []
        page = ok(run("work", "list", "--limit", "15", *flags, "--json"))
        pages += 1
        assert len(page["items"]) == 15
        seen += [r["work_id"] for r in page["items"]]
        cursor = page["next_cursor"]
        if cursor is None:
            break
        assert cursor == page["items"][-1]["work_id"]
        assert pages < 10
    assert seen == expected and len(set(seen)) == len(seen) and pages == 7

    human = run("work", "list", "--limit", "3")
    assert human.code == 0
    assert f"More: captain work list --after {expected[2]}" in human.out
    assert all(w in human.out for w in expected[:3]) and expected[3] not in human.out

    # a filter pages the same way
    for wid in (expected[10], expected[40], expected[90]):
        ok(run("work", "claim", wid, "--json"))
    one = ok(run("work", "list", "--state", "running", "--limit", "2", "--json"))
    assert [r["work_id"] for r in one["items"]] == [expected[10], expected[40]]
    two = ok(
        run(
            "work",
            "list",
            "--state",
            "running",
            "--limit",
            "2",
            "--after",
            one["next_cursor"],
            "--json",
        )
    )
    assert [r["work_id"] for r in two["items"]] == [expected[90]] and two["next_cursor"] is None
    assert ok(run("work", "list", "--source", "webhook", "--json"))["items"] == []


@ON_BOTH
def test_show_has_attempts_and_events_and_never_the_input_or_detail(run, home, cli_ledger):
    item = submit(run, SECRET, "--target-revision", "rev-1")
    wid = item["work_id"]
    data = (
        json.dumps(
            {"input": {"text": SECRET}}, sort_keys=True, ensure_ascii=False, separators=(",", ":")
        ).encode()
        + b"\n"
    )
    assert item["input_sha256"] == hashlib.sha256(data).hexdigest()
    claimed = claim(run, wid, "--holder", "worker-7")
    beat = ok(run("work", "heartbeat", wid, "--generation", "1", "--json"))
    ok(
        run(
            "work",
            "report",
            wid,
            "--generation",
            "1",
            "--outcome",
            "succeeded",
            "--cost-usd",
            "0.25",
            "--detail-stdin",
            "--json",
            stdin=DETAIL,
        )
    )

    # the ledger did store both (so their absence below is a real test): in its files, or
    # in its rows (read on a connection of our own, as another host would)
    stored, details = stored_input_and_details(home.root, cli_ledger, wid)
    assert SECRET in stored
    assert any(DETAIL in d for d in details)

    shown = show(run, wid)
    assert shown["state"] == "succeeded" and shown["target_revision"] == "rev-1"
    [attempt] = shown["attempts"]
    assert attempt["run_id"] == claimed["run_id"] and attempt["generation"] == 1
    assert attempt["lease_holder"] == "worker-7" and attempt["outcome"] == "succeeded"
    assert attempt["cost_usd"] == 0.25
    assert attempt["heartbeat_at"] is not None
    assert when(attempt["lease_expires_at"]) == when(beat["lease_expires_at"])
    assert "runtime_locator" in attempt and attempt["runtime_locator"] is None
    events = shown["events"]
    assert [e["type"] for e in events] == ["accepted", "claimed", "succeeded"]
    assert [e["seq"] for e in events] == [1, 2, 3]
    assert [e["generation"] for e in events] == [0, 1, 1]
    assert all("detail" not in e for e in events)

    outputs = [
        run("work", "show", wid, "--json"),
        run("work", "show", wid),
        run("work", "list", "--json"),
        run("work", "list"),
        run("work", "cancel", wid, "--json"),
        run("work", "cancel", wid),
    ]
    for result in outputs:
        assert result.code == 0, result.err
        for secret in (SECRET, DETAIL):
            assert secret not in result.out and secret not in result.err
    human = outputs[1].out
    assert "attempt g1" in human and "cost $0.2500" in human and "#3" in human

    # cost unknown stays unknown, never an invented zero
    other = running_item(run)["work_id"]
    ok(run("work", "report", other, "--generation", "1", "--outcome", "failed", "--json"))
    assert show(run, other)["attempts"][0]["cost_usd"] is None
    assert "cost unknown" in run("work", "show", other).out


# -- cancel, replay, resolve ----------------------------------------------------------------


@ON_BOTH
def test_cancel_outcomes(run):
    queued = submit(run)["work_id"]
    first = ok(run("work", "cancel", queued, "--reason", "not needed", "--json"))
    assert first["outcome"] == "cancelled" and first["state"] == "cancelled"
    assert first["item"]["state"] == "cancelled"
    events = show(run, queued)["events"]
    assert [e["type"] for e in events] == ["accepted", "cancelled"]
    assert events[-1]["reason"] == "not needed"
    again = ok(run("work", "cancel", queued, "--json"))
    assert again["outcome"] == "already_terminal" and again["state"] == "cancelled"
    assert show(run, queued)["events"] == events
    assert "already cancelled; nothing was done" in run("work", "cancel", queued).out

    # a --no-launch crew's item runs with no pane: nothing can confirm its stop
    r = recruit_no_launch(run, "Jack")
    wid = r["work_id"]
    assert show(run, wid)["state"] == "running"
    unconfirmed = ok(run("work", "cancel", wid, "--json"))
    assert unconfirmed["outcome"] == "stop_unconfirmed"
    assert unconfirmed["state"] == "needs_reconciliation"
    after = show(run, wid)
    assert [e["type"] for e in after["events"]] == [
        "accepted",
        "claimed",
        "cancel_requested",
        "needs_reconciliation",
    ]
    for _ in range(2):  # repeating is safe and grows nothing
        repeat = ok(run("work", "cancel", wid, "--json"))
        assert repeat["outcome"] == "stop_unconfirmed"
        assert repeat["state"] == "needs_reconciliation"
        assert show(run, wid)["events"] == after["events"]
    human = run("work", "cancel", wid)
    assert (
        "could NOT be confirmed" in human.out and f"--generation {after['generation']}" in human.out
    )
    assert show(run, wid)["events"] == after["events"]
    listed = run("work", "list")
    assert "NEEDS_RECONCILIATION" in listed.out


@ON_BOTH
def test_replay_is_a_new_authorization(run):
    alice = {"LOGNAME": "alice", "USER": "alice"}
    bob = {"LOGNAME": "bob", "USER": "bob"}
    orig = submit(run, "build the thing", "--target-revision", "rev-a", env=alice)
    wid = orig["work_id"]
    assert orig["requester"] == "captain:alice"
    ok(run("work", "claim", wid, "--json"))
    ok(run("work", "report", wid, "--generation", "1", "--outcome", "failed", "--json"))
    before = show(run, wid)

    again = ok(run("work", "replay", wid, "--reason", "fixed the flake", "--json", env=bob))["item"]
    assert again["work_id"] != wid
    assert again["replay_of"] == wid and again["replay_reason"] == "fixed the flake"
    assert again["requester"] == "captain:bob"  # the replayer, not the original requester
    assert again["target_revision"] == "rev-a"  # inherited
    assert again["input_sha256"] == orig["input_sha256"]  # the original input
    assert again["state"] == "queued" and again["generation"] == 0
    assert show(run, again["work_id"])["attempts"] == []

    moved = ok(
        run(
            "work",
            "replay",
            wid,
            "--reason",
            "on the fix",
            "--target-revision",
            "rev-b",
            "--json",
            env=bob,
        )
    )["item"]
    assert moved["target_revision"] == "rev-b" and moved["replay_of"] == wid
    human = run("work", "replay", wid, "--reason", "third time")
    assert human.code == 0 and f"Replayed {wid} as wrk_" in human.out and "rev-a" in human.out

    # terminal history is never rewritten
    assert show(run, wid) == before
    assert len(items(run)) == 4


@ON_BOTH
def test_resolve_frees_the_slot(run, home):
    configure(home, "[ledger]\nslots = 1\n")
    stuck = reconciling_item(run)
    wid = stuck["work_id"]
    waiting = submit(run, "next in line")["work_id"]
    # needs_reconciliation keeps its slot
    refused(run("work", "claim", waiting, "--json"), "no_capacity")
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
            "the process was gone; no output",
            "--json",
            env={"LOGNAME": "carol", "USER": "carol"},
        )
    )["item"]
    assert resolved["state"] == "failed" and resolved["slot"] is False
    assert resolved["resolution"]["operator"] == "captain:carol"
    assert resolved["resolution"]["to"] == "failed"
    assert resolved["resolution"]["runtime_stopped"] is False
    after = show(run, wid)
    assert len(after["attempts"]) == 1 and after["generation"] == 1  # started nothing
    assert after["events"][-1]["type"] == "resolved"
    # the slot is free: the queued item can now be claimed
    assert claim(run)["item"]["work_id"] == waiting


# -- deliveries -----------------------------------------------------------------------------


@ON_BOTH
def test_deliveries_ingest_duplicate_filter_and_identity(run, home):
    configure(home, '[endpoints.gh]\nevents = ["push"]\n\n[endpoints.other]\n')
    first = ok(
        run(
            "deliveries",
            "ingest",
            "--endpoint",
            "gh",
            "--delivery-id",
            "d-1",
            "--event",
            "push",
            "--json",
            stdin=BODY,
        )
    )
    d = first["delivery"]
    assert first["duplicate"] is False
    assert d["delivery_id"].startswith("whd_") and d["work_id"].startswith("wrk_")
    assert d["filter_reason"] is None and d["raw_body_available"] is True
    assert d["body_sha256"] == hashlib.sha256(BODY.encode()).hexdigest()
    assert d["body_bytes"] == len(BODY.encode())
    assert when(d["raw_body_expires_at"]) - when(d["received_at"]) == timedelta(days=7)
    work = items(run, "--source", "webhook")
    assert [w["work_id"] for w in work] == [d["work_id"]]
    assert work[0]["delivery_id"] == d["delivery_id"] and work[0]["state"] == "queued"
    assert work[0]["requester"] == "webhook:gh"

    dup = ok(
        run(
            "deliveries",
            "ingest",
            "--endpoint",
            "gh",
            "--delivery-id",
            "d-1",
            "--event",
            "push",
            "--json",
            stdin=BODY,
        )
    )
    assert dup["duplicate"] is True
    assert dup["delivery"]["delivery_id"] == d["delivery_id"]
    assert dup["delivery"]["work_id"] == d["work_id"]
    assert len(items(run)) == 1  # no new work item
    assert (
        "a duplicate of"
        in run(
            "deliveries",
            "ingest",
            "--endpoint",
            "gh",
            "--delivery-id",
            "d-1",
            "--event",
            "push",
            stdin=BODY,
        ).out
    )

    # the same sender id on another endpoint is another delivery
    elsewhere = ok(
        run(
            "deliveries",
            "ingest",
            "--endpoint",
            "other",
            "--delivery-id",
            "d-1",
            "--json",
            stdin=BODY,
        )
    )
    assert elsewhere["duplicate"] is False
    assert elsewhere["delivery"]["delivery_id"] != d["delivery_id"]

    # a filtered event is recorded with its reason and no work
    ping = ok(
        run(
            "deliveries",
            "ingest",
            "--endpoint",
            "gh",
            "--delivery-id",
            "d-2",
            "--event",
            "ping",
            "--json",
            stdin="{}",
        )
    )["delivery"]
    assert ping["work_id"] is None and "ping" in ping["filter_reason"]
    assert len(items(run)) == 2
    listed = ok(run("deliveries", "list", "--json"))
    assert listed["next_cursor"] is None
    by_id = {r["delivery_id"]: r for r in listed["deliveries"]}
    assert set(by_id) == {
        d["delivery_id"],
        elsewhere["delivery"]["delivery_id"],
        ping["delivery_id"],
    }
    assert by_id[ping["delivery_id"]]["filter_reason"] == ping["filter_reason"]
    assert by_id[ping["delivery_id"]]["work_id"] is None
    assert "filtered: " in run("deliveries", "list").out
    gh_only = ok(run("deliveries", "list", "--endpoint", "gh", "--json"))["deliveries"]
    assert {r["delivery_id"] for r in gh_only} == {d["delivery_id"], ping["delivery_id"]}

    # the identity question: a page of zero or one
    one = ok(run("deliveries", "list", "--endpoint", "gh", "--source-delivery-id", "d-2", "--json"))
    assert [r["delivery_id"] for r in one["deliveries"]] == [ping["delivery_id"]]
    assert one["next_cursor"] is None
    none = ok(
        run("deliveries", "list", "--endpoint", "gh", "--source-delivery-id", "d-9", "--json")
    )
    assert none["deliveries"] == [] and none["next_cursor"] is None
    assert (
        ok(
            run(
                "deliveries", "list", "--endpoint", "other", "--source-delivery-id", "d-2", "--json"
            )
        )["deliveries"]
        == []
    )

    # deliveries pages too
    page1 = ok(run("deliveries", "list", "--limit", "2", "--json"))
    page2 = ok(run("deliveries", "list", "--limit", "2", "--after", page1["next_cursor"], "--json"))
    ids = [r["delivery_id"] for r in page1["deliveries"] + page2["deliveries"]]
    assert sorted(ids) == sorted(by_id) and page2["next_cursor"] is None


@ON_BOTH
def test_deliveries_never_print_the_body(run, home):
    configure(home, "[endpoints.gh]\n")
    d = ok(
        run(
            "deliveries", "ingest", "--endpoint", "gh", "--delivery-id", "d-1", "--json", stdin=BODY
        )
    )["delivery"]
    assert delivery_store.bodies(home)[d["delivery_id"]] == BODY.encode()  # files or rows
    outputs = [
        run("deliveries", "show", d["delivery_id"], "--json"),
        run("deliveries", "show", d["delivery_id"]),
        run("deliveries", "list", "--json"),
        run("deliveries", "list"),
        run("deliveries", "ingest", "--endpoint", "gh", "--delivery-id", "d-1", stdin=BODY),
        run("work", "show", d["work_id"], "--json"),
        run("work", "show", d["work_id"]),
    ]
    for result in outputs:
        assert result.code == 0, result.err
        for piece in ("RAW-WEBHOOK-BODY", "hunter2"):
            assert piece not in result.out and piece not in result.err
    shown = json.loads(outputs[0].out)["delivery"]
    assert set(shown) >= {
        "body_sha256",
        "body_bytes",
        "raw_body_available",
        "raw_body_expires_at",
        "filter_reason",
        "work_id",
    }
    assert "body" not in shown
    assert d["body_sha256"] in outputs[1].out and "held until" in outputs[1].out


# -- the protocol makes work items ----------------------------------------------------------


@ON_BOTH
def test_no_launch_crew_runs_an_item_and_done_succeeds_it(run):
    r = recruit_no_launch(run, "Jack", task=SECRET)
    assert r["queued"] is False
    item = show(run, r["work_id"])
    assert item["source"] == "assignment" and item["state"] == "running"
    assert item["crew"] == "Jack" and item["assignment_id"] == r["assignment_id"]
    assert item["generation"] == 1 and len(item["attempts"]) == 1
    assert item["attempts"][0]["runtime_locator"] is None
    assert SECRET not in run("work", "show", r["work_id"], "--json").out

    ok(crew_done(run, r))
    done = show(run, r["work_id"])
    assert done["state"] == "succeeded" and done["slot"] is False
    assert [e["type"] for e in done["events"]] == ["accepted", "claimed", "succeeded"]
    assert done["attempts"][0]["outcome"] == "succeeded"

    # the next assignment is a new item, claimed at once
    delivery = ok(run("wait", "Jack", "--timeout", "5", "--json"))
    assert delivery["status"] == "done"
    ok(run("wait", "Jack", "--ack", delivery["delivery_id"], "--timeout", "0", "--json"))
    nxt = ok(run("assign", "Jack", "--task", "next", "--handoff", r["assignment_id"], "--json"))
    second = show(run, ledger.work_id_for_assignment(nxt["assignment_id"]))
    assert second["state"] == "running" and second["assignment_id"] == nxt["assignment_id"]


@ON_BOTH
@IN_A_PROCESS
def test_dismissing_a_no_launch_crew_never_cancels_on_a_guess(run):
    r = recruit_no_launch(run, "Jack")
    dismissed = ok(run("dismiss", "Jack", "--json"))
    assert dismissed["pane_stopped"] is None
    item = show(run, r["work_id"])
    assert item["state"] == "needs_reconciliation" and item["slot"] is True
    assert [e["type"] for e in item["events"]][-2:] == ["cancel_requested", "needs_reconciliation"]
    assert "cancelled" not in [e["type"] for e in item["events"]]


@ON_BOTH
def test_a_crew_recruited_with_every_slot_held_is_queued_and_cannot_be_done(run, home):
    configure(home, "[ledger]\nslots = 1\n")
    a = recruit_no_launch(run, "Able")
    b = recruit_no_launch(run, "Baker")
    assert show(run, a["work_id"])["state"] == "running"
    waiting = show(run, b["work_id"])
    assert waiting["state"] == "queued" and waiting["attempts"] == []

    err = refused(crew_done(run, b), "not_running")
    assert err["work_id"] == b["work_id"] and "queued" in err["message"]
    assert show(run, b["work_id"])["state"] == "queued"

    ok(crew_done(run, a))
    assert show(run, a["work_id"])["state"] == "succeeded"
    # a runner hands the freed slot to Baker (no pane: its process is the person's)
    from captain_tui.runtime import ledger_probe as ledger_runtime

    assert ledger_runtime.dispatch(home) == [b["work_id"]]
    assert show(run, b["work_id"])["state"] == "running"
    ok(run("done", "Baker", "--report", "did it", "--json", env=b["env"]))
    assert show(run, b["work_id"])["state"] == "succeeded"


@ON_BOTH
def test_a_worker_claim_never_takes_a_crews_queued_assignment(run, home):
    """A crew's queued assignment is started by a runner (its pane is launched); a worker
    asking for the oldest queued item must not take it, or the crew would never start."""
    configure(home, "[ledger]\nslots = 1\n")
    a = recruit_no_launch(run, "Able")
    b = recruit_no_launch(run, "Baker")
    chat = submit(run, "a chat job")["work_id"]
    ok(crew_done(run, a))
    assert claim(run)["item"]["work_id"] == chat  # not Baker's older assignment
    assert show(run, b["work_id"])["state"] == "queued"
    ok(run("work", "report", chat, "--generation", "1", "--outcome", "succeeded", "--json"))
    refused(run("work", "claim", "--source", "assignment", "--json"), "not_queued")
    from captain_tui.runtime import ledger_probe as ledger_runtime

    assert ledger_runtime.dispatch(home) == [b["work_id"]]
    assert show(run, b["work_id"])["state"] == "running"


@ON_BOTH
def test_reasons_and_revisions_never_carry_control_characters(run):
    """What a person typed is shown in ``work show``: an escape sequence in a reason or a
    revision is refused at intake, never replayed to a terminal."""
    queued = submit(run)["work_id"]
    escape = "ok\x1b]0;owned\x07\x1b[2J"
    refused(run("work", "cancel", queued, "--reason", escape, "--json"), "invalid_text")
    assert show(run, queued)["state"] == "queued"
    err = refused(
        run("work", "submit", "--text", "x", "--target-revision", "main\x1b[31m", "--json"),
        "invalid_argument",
    )
    assert "revision" in err["message"]
    refused(
        run("work", "submit", "--text", "x", "--target-revision", "a\nb", "--json"),
        "invalid_argument",
    )
    refused(
        run("work", "submit", "--text", "x", "--target-revision", "r" * 201, "--json"),
        "invalid_argument",
    )
    ok(run("work", "cancel", queued, "--reason", "two lines\nare fine", "--json"))
    stuck = reconciling_item(run)["work_id"]
    refused(
        run(
            "work",
            "resolve",
            stuck,
            "--generation",
            "1",
            "--to",
            "failed",
            "--reason",
            escape,
            "--json",
        ),
        "invalid_text",
    )
    refused(run("work", "replay", queued, "--reason", escape, "--json"), "invalid_text")
    refused(
        run(
            "work", "replay", queued, "--reason", "again", "--target-revision", "\x1b[0m", "--json"
        ),
        "invalid_argument",
    )
    assert len(items(run)) == 2
    for result in (run("work", "show", queued), run("work", "show", stuck), run("work", "list")):
        assert "\x1b" not in result.out and "\x07" not in result.out


# -- two homes, one PostgreSQL ledger ----------------------------------------------------------


def test_two_homes_sharing_one_postgresql_ledger_see_one_ledger(request, tmp_path, project):
    """Two homes (standing for two hosts) on one database: what one submits, the other lists,
    claims, cancels and replays; the claim a generation already holds and a report at a
    stale generation are refused whichever home asks."""
    from conftest import Cli
    from support.ledger_backends import open_ledgers

    with open_ledgers(request, "postgresql") as made:
        env = {"CAPTAIN_LEDGER_URL": made.fresh_url()}
        a, b = (Run(InProcess(Cli(tmp_path / name, project))) for name in ("host-a", "host-b"))

        def both(*args: str):
            return [ok(host(*args, "--json", env=env)) for host in (a, b)]

        for status in both("status"):
            assert status["ledger"]["kind"] == "postgresql"

        wid = submit(a, "shared job", "--max-attempts", "2", env=env)["work_id"]
        assert [i["work_id"] for i in ok(b("work", "list", "--json", env=env))["items"]] == [wid]
        first = ok(b("work", "claim", wid, "--holder", "worker-b", "--json", env=env))
        assert first["generation"] == 1
        # the same generation is never claimed twice: host A is refused
        assert (
            refused(a("work", "claim", wid, "--json", env=env), "not_queued")["state"] == "running"
        )
        refused(a("work", "claim", "--json", env=env), "not_queued")  # nothing else queued
        ok(a("work", "heartbeat", wid, "--generation", "1", "--json", env=env))
        ok(
            a(
                "work",
                "report",
                wid,
                "--generation",
                "1",
                "--outcome",
                "failed",
                "--repeatable",
                "--json",
                env=env,
            )
        )
        second = ok(a("work", "claim", "--holder", "worker-a", "--json", env=env))
        assert second["item"]["work_id"] == wid and second["generation"] == 2
        # B's worker, still at generation 1, is fenced out
        for args in (
            ("heartbeat", wid, "--generation", "1"),
            ("report", wid, "--generation", "1", "--outcome", "succeeded"),
        ):
            err = refused(b("work", *args, "--json", env=env), "stale_generation")
            assert err["generation"] == 2 and err["state"] == "running"
        ok(b("work", "report", wid, "--generation", "2", "--outcome", "failed", "--json", env=env))
        for shown in (s["item"] for s in both("work", "show", wid)):
            assert shown["state"] == "failed" and shown["generation"] == 2
            assert [t["outcome"] for t in shown["attempts"]] == ["failed", "failed"]
            assert [e["type"] for e in shown["events"]] == [
                "accepted",
                "claimed",
                "retry_queued",
                "claimed",
                "failed",
            ]

        # cancelled through B, replayed through A, the replay seen and claimed through B
        other = submit(b, "cancel me", env=env)["work_id"]
        cancelled = ok(a("work", "cancel", other, "--reason", "not needed", "--json", env=env))
        assert cancelled["outcome"] == "cancelled"
        assert ok(b("work", "show", other, "--json", env=env))["item"]["state"] == "cancelled"
        again = ok(a("work", "replay", other, "--reason", "needed after all", "--json", env=env))[
            "item"
        ]
        assert again["replay_of"] == other and again["state"] == "queued"
        assert ok(b("work", "claim", "--json", env=env))["item"]["work_id"] == again["work_id"]
        pages = both("work", "list", "--limit", "100")
        assert pages[0]["items"] == pages[1]["items"]
        assert [i["work_id"] for i in pages[0]["items"]] == sorted([wid, other, again["work_id"]])
        # and nothing of it is in either home's files
        for host in (a, b):
            assert not (host.home / "work").exists() or not any((host.home / "work").iterdir())

"""``captain serve`` through a real uvicorn on a loopback port.

The server is the real command (``captain serve --port 0 --json --home H``) in a
subprocess; requests are raw ``http.client`` calls (tests/support/api.py). Tokens are made
with ``captain tokens create`` / ``revoke``; ledger state is built with the CLI where the
path matters (a chat input, a report's detail, a delivery from stdin) and otherwise with
the same ``state.work.ledger`` / ``state.work.deliveries`` functions the CLI and the server call.

One deployment (a home, its tokens, a second home with its own workspace and token) serves
the module; each test makes its own work items. Pagination counts rows, so it gets a home
and a server of its own.
"""

from __future__ import annotations

import base64
import hashlib
import json
import re
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from datetime import datetime

import pytest
from support import deliveries as delivery_store
from support.api import Reply, Server, captain, cli_env, ok, refused, sign_captain, sign_github
from support.ledger_backends import BACKENDS, open_ledgers, stored_input_and_details

from state.home import Home
from state.vocab import WORK_STATES
from state.work import deliveries, ledger, tokens
from state.work.location import ledger_location

GH_SECRET = "gh-webhook-secret-3b9d"
CAP_SECRET = "cap-webhook-secret-e41a"
SHORT_SECRET = "short-webhook-secret-7f20"
CONFIG = f"""\
[ledger]
slots = 1000

[endpoints.gh]
secret = "{GH_SECRET}"
signature = "github"
events = ["push"]
retention_days = 7

[endpoints.cap]
secret = "{CAP_SECRET}"
signature = "captain"

[endpoints.short]
secret = "{SHORT_SECRET}"
retention_days = 0

[endpoints.plain]
events = ["push"]
"""
OTHER_CONFIG = '[endpoints.gh]\nsecret = "other-secret"\n'

WS = "/api/workspaces/{ws}"
WORK = WS + "/work/{work}"


def when(stamp: str) -> datetime:
    return datetime.fromisoformat(stamp.replace("Z", "+00:00"))


@dataclass
class Deployment:
    server: Server
    home: Home
    manager: str
    member: str
    manager_id: str
    member_id: str
    revoked: str
    other_ws: str
    other_token: str
    other_work: str
    other_delivery: str

    @property
    def ws(self) -> str:
        return self.server.workspace_id

    def path(self, template: str, **values) -> str:
        return template.format(ws=values.pop("ws", self.ws), **values)

    # ledger state, through the functions the CLI calls
    def queued(self, text: str = "a task", **kw) -> str:
        return ledger.accept(
            self.home, source="chat", input={"text": text}, requester="captain:test", **kw
        ).work_id

    def running(self, **kw) -> str:
        work_id = self.queued(**kw)
        ledger.claim(self.home, work_id, holder="worker-a")
        return work_id

    def reconciling(self) -> str:
        """Claimed, then a cancel whose stop cannot be confirmed (no locator): generation 1."""
        work_id = self.running()
        assert ledger.cancel(self.home, work_id, actor="captain:test").outcome == "stop_unconfirmed"
        return work_id

    def succeeded(self, **kw) -> str:
        work_id = self.running(**kw)
        ledger.report(self.home, work_id, 1, "succeeded", actor="worker-a")
        return work_id

    def events(self, work_id: str) -> list[str]:
        return [e.type for e in ledger.events(self.home, work_id)]


def on_ledger(config: str, url: str | None) -> str:
    """``config`` with the home's ledger at ``url`` (the file home when None)."""
    if url is None:
        return config
    if "[ledger]\n" in config:
        return config.replace("[ledger]\n", f'[ledger]\nurl = "{url}"\n', 1)
    return f'[ledger]\nurl = "{url}"\n\n{config}'


@pytest.fixture(scope="module", params=BACKENDS)
def dep(request, tmp_path_factory) -> Deployment:
    """The deployment, on the file home and again on PostgreSQL: each home's ledger is
    ``[ledger] url`` in its config.toml (a schema of its own), so the server, the CLI and
    this process's in-process calls all reach it, and the other workspace's is another."""
    with open_ledgers(request, request.param) as made:
        yield from _deployment(tmp_path_factory, made)


def _deployment(tmp_path_factory, on):
    root = tmp_path_factory.mktemp("api")
    home = Home(root / "home")
    # read once, when the server starts
    (home.root / "config.toml").write_text(on_ledger(CONFIG, on.fresh_url()))
    with ThreadPoolExecutor(max_workers=2) as pool:  # the real CLI, two at a time
        made = list(
            pool.map(
                lambda args: captain(home.root, "tokens", "create", *args),
                [
                    ("--role", "manager", "--label", "ops"),
                    ("--role", "member", "--label", "viewer"),
                    ("--role", "manager", "--label", "leaver"),
                ],
            )
        )
    manager, member, leaver = made
    assert captain(home.root, "tokens", "revoke", leaver["token_id"])["revoked_at"]

    other = Home(root / "other")  # another workspace, with its own token, work and delivery
    (other.root / "config.toml").write_text(on_ledger(OTHER_CONFIG, on.fresh_url()))
    _, other_token = tokens.create(other, "manager")
    other_work = ledger.accept(
        other, source="chat", input={"text": "theirs"}, requester="captain:other"
    ).work_id
    other_delivery = deliveries.ingest(other, "gh", "other-1", b"{}", event="push").delivery
    assert tokens.workspace_id(other) != tokens.workspace_id(home)
    assert tokens.verify(other, other_token) is not None  # valid there, and only there

    server = Server(home.root, root / "serve.log").start()
    yield Deployment(
        server=server,
        home=home,
        manager=manager["token"],
        member=member["token"],
        manager_id=manager["token_id"],
        member_id=member["token_id"],
        revoked=leaver["token"],
        other_ws=tokens.workspace_id(other),
        other_token=other_token,
        other_work=other_work,
        other_delivery=other_delivery.delivery_id,
    )
    server.stop()
    assert server.proc.returncode is not None


# -- serving ------------------------------------------------------------------------------


def test_serving_off_loopback_needs_allow_remote_and_warns(tmp_path):
    home = Home(tmp_path / "home")
    _, token = tokens.create(home, "member")
    # 127.0.0.2 is not in the loopback list the server trusts, yet cannot be reached from
    # another machine: the test exercises the guard without exposing anything
    attempt = subprocess.run(
        [
            sys.executable,
            "-m",
            "captain_tui",
            "serve",
            "--host",
            "127.0.0.2",
            "--port",
            "0",
            "--json",
            "--home",
            str(home.root),
        ],
        env=cli_env(home.root),
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert attempt.returncode == 1, (attempt.stdout, attempt.stderr)
    error = json.loads(attempt.stdout)["error"]
    assert error["code"] == "invalid_argument" and "--allow-remote" in error["message"]

    server = Server(
        home.root, tmp_path / "serve.log", extra=("--host", "127.0.0.2", "--allow-remote")
    )
    try:
        server.start()
        assert server.url.startswith("http://127.0.0.2:")
        refused(server.get("/api/workspaces", None), 401, "unauthorized")
        assert ok(server.get("/api/workspaces", token))["workspaces"][0]["role"] == "member"
    finally:
        server.stop()
    warning = (tmp_path / "serve.log").read_text()
    assert "warning" in warning and "127.0.0.2" in warning and "not loopback" in warning


# -- workspaces and reading ----------------------------------------------------------------


def test_the_server_announces_the_workspace_status_shows_and_lists_it(dep):
    s = dep.server
    status = captain(dep.home.root, "status")
    assert status["workspace_id"] == s.workspace_id
    assert ok(s.get("/api/workspaces", dep.manager)) == {
        "workspaces": [{"workspace_id": s.workspace_id, "role": "manager"}]
    }
    assert ok(s.get("/api/workspaces", dep.member)) == {
        "workspaces": [{"workspace_id": s.workspace_id, "role": "member"}]
    }


def test_list_and_detail(dep):
    s = dep.server
    queued = dep.queued(target_revision="rev-1")
    running = dep.running()
    listed = ok(s.get(dep.path(WS + "/work"), dep.member, query={"limit": 100}))
    assert set(listed) == {"items", "next_cursor"}
    rows = {r["work_id"]: r for r in listed["items"]}
    assert rows[queued]["state"] == "queued" and rows[queued]["slot"] is False
    assert rows[queued]["target_revision"] == "rev-1"
    assert rows[running]["state"] == "running" and rows[running]["slot"] is True
    assert "attempts" not in rows[running] and "events" not in rows[running]

    only = ok(
        s.get(
            dep.path(WS + "/work"),
            dep.member,
            query={"state": "running", "source": "chat", "limit": 100},
        )
    )["items"]
    assert running in {r["work_id"] for r in only} and queued not in {r["work_id"] for r in only}
    assert {r["state"] for r in only} == {"running"}

    detail = ok(s.get(dep.path(WORK, work=running), dep.member))
    assert detail["work_id"] == running and detail["generation"] == 1
    [attempt] = detail["attempts"]
    assert attempt["generation"] == 1 and attempt["run_id"].startswith("run_")
    assert attempt["lease_holder"] == "worker-a" and attempt["outcome"] is None
    assert attempt["cost_usd"] is None  # unknown, never an invented zero
    assert [(e["seq"], e["type"], e["state"]) for e in detail["events"]] == [
        (1, "accepted", "queued"),
        (2, "claimed", "running"),
    ]


@pytest.mark.parametrize(
    "query, named",
    [
        ({"state": "runnign"}, "runnign"),
        ({"state": "RUNNING"}, "RUNNING"),
        ({"source": "x"}, "'x'"),
        ({"limit": 0}, "limit"),
        ({"limit": 101}, "limit"),
        ({"limit": "ten"}, "limit"),
        ({"after": "not-a-cursor"}, "not-a-cursor"),
        ({"stat": "running"}, "stat"),  # a misspelt filter name is not silently dropped
        ("state=running&state=queued", "more than once"),  # not "only the last one"
    ],
)
def test_a_filter_typo_is_a_400_never_an_empty_page(dep, query, named):
    dep.running()  # something is running: an empty page would be a lie
    message = refused(
        dep.server.get(dep.path(WS + "/work"), dep.manager, query=query), 400, "invalid_filter"
    )
    assert named in message, message


@pytest.mark.parametrize(
    "query, named",
    [
        ({"source_delivery_id": "d-1"}, "endpoint"),  # only unique within an endpoint
        ({"limit": 0}, "limit"),
        ({"limit": 101}, "limit"),
        ({"after": "whd_NOSUCHCURSOR"}, "whd_NOSUCHCURSOR"),
        ({"endpoint": "gh"}, "endpoint"),
        ("endpoint_id=gh&source_delivery_id=a&source_delivery_id=b", "more than once"),
    ],
)
def test_a_delivery_filter_typo_is_a_400(dep, query, named):
    message = refused(
        dep.server.get(dep.path(WS + "/deliveries"), dep.manager, query=query),
        400,
        "invalid_filter",
    )
    assert named in message, message


def test_unknown_and_foreign_ids_are_404_never_403(dep):
    s = dep.server
    mine = dep.queued()
    for token in (dep.member, dep.manager):
        for work_id in ("wrk_01M8AAAAAAAAAAAAAAAAAAAAAA", "nope", dep.other_work):
            refused(s.get(dep.path(WORK, work=work_id), token), 404, "unknown_work")
            refused(
                s.post(dep.path(WORK + "/cancel", work=work_id), token, {}),
                404 if token == dep.manager else 403,
                "unknown_work" if token == dep.manager else "forbidden",
            )
        for delivery_id in ("whd_01M8AAAAAAAAAAAAAAAAAAAAAA", "nope", dep.other_delivery):
            refused(
                s.get(dep.path(WS + "/deliveries/{d}", d=delivery_id), token),
                404,
                "unknown_delivery",
            )
        # another workspace's id in the path: 404 for every route, members' POSTs included
        for ws in (dep.other_ws, "ws_01M8AAAAAAAAAAAAAAAAAAAAAA", "anything"):
            for method, template, body in ROUTES[1:]:
                reply = s.request(
                    method,
                    dep.path(template, ws=ws, work=mine, delivery=dep.other_delivery),
                    token=token,
                    json_body=body,
                )
                message = refused(reply, 404, "unknown_workspace")
                assert ws not in message
    assert dep.events(mine) == ["accepted"]
    # the other workspace's item is still untouched, and is there
    assert ledger.exists(Home(dep.home.root.parent / "other"), dep.other_work)


# -- cancel -------------------------------------------------------------------------------


def test_cancel_says_what_actually_happened(dep):
    s = dep.server

    def cancel(work_id: str, body=None) -> dict:
        got = ok(
            s.post(
                dep.path(WORK + "/cancel", work=work_id), dep.manager, {} if body is None else body
            )
        )
        assert set(got) == {"item", "state", "outcome", "dismissed"}
        assert got["dismissed"] is None  # no crew's assignment: nobody is dismissed
        detail = ok(s.get(dep.path(WORK, work=work_id), dep.member))
        assert got["state"] == got["item"]["state"] == detail["state"]  # the true state
        return got

    queued = dep.queued()
    got = cancel(queued, {"reason": "not needed"})
    assert (got["outcome"], got["state"]) == ("cancelled", "cancelled")
    assert got["item"]["slot"] is False
    assert dep.events(queued) == ["accepted", "cancelled"]
    [*_, event] = ok(s.get(dep.path(WORK, work=queued), dep.member))["events"]
    assert event["reason"] == "not needed" and event["actor"] == f"token:{dep.manager_id} (ops)"
    got = cancel(queued)
    assert (got["outcome"], got["state"]) == ("already_terminal", "cancelled")
    assert dep.events(queued) == ["accepted", "cancelled"]

    done = dep.succeeded()
    got = cancel(done)
    assert (got["outcome"], got["state"]) == ("already_terminal", "succeeded")

    running = dep.running()  # no locator: the stop cannot be confirmed
    got = cancel(running, {"reason": "wrong branch"})
    assert (got["outcome"], got["state"]) == ("stop_unconfirmed", "needs_reconciliation")
    assert got["item"]["slot"] is True  # it keeps its capacity
    history = dep.events(running)
    assert history == ["accepted", "claimed", "cancel_requested", "needs_reconciliation"]
    for _ in range(3):  # polling does not grow the history
        got = cancel(running)
        assert (got["outcome"], got["state"]) == ("stop_unconfirmed", "needs_reconciliation")
    assert dep.events(running) == history

    refused(
        s.post(
            dep.path(WORK + "/cancel", work=dep.queued()),
            dep.manager,
            {"reason": "x", "force": True},
        ),
        400,
        "invalid_argument",
    )


def test_cancelling_an_assignment_dismisses_its_crew(dep, tmp_path):
    """The API's cancel is the CLI's and the cockpit's: an assignment's crew is dismissed,
    its unread mail bounces, and the answer says so."""
    from state.crew import crewlog, protocol

    jack = protocol.recruit(dep.home, "Jack", "a task", cwd=str(tmp_path))  # recorded only
    work_id = ledger.work_id_for_assignment(jack.assignment_id)
    got = ok(dep.server.post(dep.path(WORK + "/cancel", work=work_id), dep.manager, {}))
    assert got["outcome"] == "stop_unconfirmed"  # no pane on record: nothing confirms a stop
    assert got["dismissed"] == {
        "crew": "Jack",
        "assignment_id": jack.assignment_id,
        "bounced": [jack.message_id],
        "pane_stopped": None,
        "worktree": None,  # recruited outside git: it shared the checkout
    }
    assert crewlog.load(dep.home, "jack")[0].dismissed_at is not None


# -- replay -------------------------------------------------------------------------------


def test_replay_is_a_new_authorization(dep):
    s = dep.server
    original = dep.succeeded(target_revision="rev-1", max_attempts=2)
    before = ok(s.get(dep.path(WORK, work=original), dep.member))

    reply = s.post(
        dep.path(WORK + "/replay", work=original), dep.manager, {"reason": "the fix landed"}
    )
    new = ok(reply, 201)
    assert new["work_id"] != original and new["state"] == "queued"
    assert new["replay_of"] == original and new["replay_reason"] == "the fix landed"
    assert new["requester"] == f"token:{dep.manager_id} (ops)"  # the replayer, not the original
    assert new["target_revision"] == "rev-1"  # inherited
    assert new["input_sha256"] == before["input_sha256"] and new["max_attempts"] == 2
    assert new["generation"] == 0 and new["source"] == "chat"
    assert ledger.input_of(dep.home, new["work_id"]) == ledger.input_of(dep.home, original)

    named = ok(
        s.post(
            dep.path(WORK + "/replay", work=original),
            dep.manager,
            {"reason": "on the new base", "target_revision": "rev-2"},
        ),
        201,
    )
    assert named["target_revision"] == "rev-2"
    # terminal history is never rewritten
    assert ok(s.get(dep.path(WORK, work=original), dep.member)) == before


@pytest.mark.parametrize(
    "body, named",
    [
        ({"reason": "r", "target_revison": "rev-2"}, "target_revison"),  # a typo is not ignored
        ({"reason": "r", "requester": "someone-else"}, "requester"),
        ({}, "reason"),
        ({"reason": ""}, "reason"),
        ({"reason": 5}, "reason"),
        ({"reason": "   "}, "reason"),
        (None, "request"),
    ],
)
def test_replay_body_refusals_are_400_and_create_nothing(dep, body, named):
    s = dep.server
    original = dep.succeeded()
    reply = s.request(
        "POST", dep.path(WORK + "/replay", work=original), token=dep.manager, json_body=body
    )
    assert reply.status == 400, reply.raw
    assert reply.error["code"] in ("invalid_argument", "evidence_required")
    assert named in reply.error["message"], reply.error
    replays = [
        i
        for i in ok(
            s.get(dep.path(WS + "/work"), dep.member, query={"limit": 100, "after": original})
        )["items"]
        if i["replay_of"] == original
    ]
    assert replays == []


def test_replay_of_unfinished_work_is_409(dep):
    s = dep.server
    for work_id in (dep.queued(), dep.running(), dep.reconciling()):
        message = refused(
            s.post(dep.path(WORK + "/replay", work=work_id), dep.manager, {"reason": "again"}),
            409,
            "not_finished",
        )
        assert "Cancel it first" in message and work_id in message


def test_replay_after_the_raw_body_expired_is_409_naming_the_expiry(dep):
    s = dep.server
    body = b'{"ref": "main"}'
    receipt = ok(s.hook("short", body, sign_github(SHORT_SECRET, body, "short-1")), 202)
    delivery = ok(s.get(dep.path(WS + "/deliveries/{d}", d=receipt["delivery_id"]), dep.member))
    assert delivery["raw_body_available"] is False  # retention_days = 0
    work_id = delivery["work_id"]
    assert (
        ok(s.post(dep.path(WORK + "/cancel", work=work_id), dep.manager))["outcome"] == "cancelled"
    )

    message = refused(
        s.post(
            dep.path(WORK + "/replay", work=work_id), dep.manager, {"reason": "the sender asked"}
        ),
        409,
        "payload_expired",
    )
    named = re.findall(r"\d{4}-\d\d-\d\dT[\d:.]+(?:Z|[+-]\d\d:\d\d)", message)
    assert named and when(named[0]) == when(delivery["raw_body_expires_at"]), message
    assert "expired" in message and delivery["delivery_id"] in message
    # received, can no longer replay: the record is still served, unchanged
    assert (
        ok(s.get(dep.path(WS + "/deliveries/{d}", d=delivery["delivery_id"]), dep.member))
        == delivery
    )

    # the same with a held body replays, as a webhook item of the same delivery
    receipt = ok(s.hook("gh", body, sign_github(GH_SECRET, body, "held-1")), 202)
    held = ok(s.get(dep.path(WS + "/deliveries/{d}", d=receipt["delivery_id"]), dep.member))
    assert held["raw_body_available"] is True
    ok(s.post(dep.path(WORK + "/cancel", work=held["work_id"]), dep.manager))
    again = ok(
        s.post(dep.path(WORK + "/replay", work=held["work_id"]), dep.manager, {"reason": "resend"}),
        201,
    )
    assert again["source"] == "webhook" and again["delivery_id"] == held["delivery_id"]
    assert again["replay_of"] == held["work_id"]


# -- resolve ------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "body, code",
    [
        ({"generation": 1, "to": "failed"}, "evidence_required"),
        ({"generation": 1, "to": "failed", "reason": "  "}, "evidence_required"),
        ({"generation": 1, "to": "cancelled", "reason": "host rebooted"}, "evidence_required"),
        (
            {"generation": 1, "to": "cancelled", "reason": "r", "runtime_stopped": False},
            "evidence_required",
        ),
        (
            {"generation": 1, "to": "cancelled", "reason": "r", "runtime_stopped": "yes"},
            "invalid_argument",
        ),
        ({"generation": "1", "to": "failed", "reason": "r"}, "invalid_argument"),
        ({"generation": True, "to": "failed", "reason": "r"}, "invalid_argument"),
        ({"generation": 1.5, "to": "failed", "reason": "r"}, "invalid_argument"),
        ({"generation": -1, "to": "failed", "reason": "r"}, "invalid_argument"),
        ({"generation": 2**31, "to": "failed", "reason": "r"}, "invalid_argument"),
        ({"generation": None, "to": "failed", "reason": "r"}, "invalid_argument"),
        ({"to": "failed", "reason": "r"}, "invalid_argument"),
        ({"generation": 1, "to": "running", "reason": "r"}, "invalid_argument"),
        ({"generation": 1, "to": "failed", "reason": "r", "force": True}, "invalid_argument"),
    ],
)
def test_resolve_refusals_are_400_and_change_nothing(dep, body, code):
    work_id = dep.reconciling()
    history = dep.events(work_id)
    reply = dep.server.post(dep.path(WORK + "/resolve", work=work_id), dep.manager, body)
    message = refused(reply, 400, code)
    if code == "evidence_required":
        assert ("reason" in message) or ("runtime" in message), message
    assert dep.events(work_id) == history
    assert ledger.get(dep.home, work_id).state == "needs_reconciliation"


def test_resolve_conflicts_are_409_with_an_explanation(dep):
    s = dep.server
    work_id = dep.reconciling()  # generation 1
    message = refused(
        s.post(
            dep.path(WORK + "/resolve", work=work_id),
            dep.manager,
            {"generation": 0, "to": "failed", "reason": "checked"},
        ),
        409,
        "stale_generation",
    )
    assert "generation 0" in message and "(1)" in message, message
    for other in (dep.queued(), dep.running(), dep.succeeded()):
        state = ledger.get(dep.home, other).state
        message = refused(
            s.post(
                dep.path(WORK + "/resolve", work=other),
                dep.manager,
                {
                    "generation": ledger.get(dep.home, other).generation,
                    "to": "failed",
                    "reason": "checked",
                },
            ),
            409,
            "not_reconciling",
        )
        assert state in message and "needs_reconciliation" in message
        assert ledger.get(dep.home, other).state == state
    assert ledger.get(dep.home, work_id).state == "needs_reconciliation"


def test_resolve_frees_the_slot_and_starts_nothing(dep):
    s = dep.server
    work_id = dep.reconciling()
    assert work_id in {i.work_id for i in ledger.held(dep.home)}
    assert ok(s.get(dep.path(WORK, work=work_id), dep.member))["slot"] is True

    got = ok(
        s.post(
            dep.path(WORK + "/resolve", work=work_id),
            dep.manager,
            {"generation": 1, "to": "failed", "reason": "the host is gone"},
        )
    )
    assert got["state"] == "failed" and got["slot"] is False
    assert got["resolution"]["operator"] == f"token:{dep.manager_id} (ops)"
    assert got["resolution"]["reason"] == "the host is gone"
    assert got["resolution"]["to"] == "failed" and got["resolution"]["runtime_stopped"] is False
    assert work_id not in {i.work_id for i in ledger.held(dep.home)}
    detail = ok(s.get(dep.path(WORK, work=work_id), dep.member))
    assert len(detail["attempts"]) == 1 and detail["generation"] == 1  # no new attempt
    assert detail["events"][-1]["type"] == "resolved"
    # once resolved it is no longer reconciling
    refused(
        s.post(
            dep.path(WORK + "/resolve", work=work_id),
            dep.manager,
            {"generation": 1, "to": "failed", "reason": "again"},
        ),
        409,
        "not_reconciling",
    )

    stopped = dep.reconciling()
    got = ok(
        s.post(
            dep.path(WORK + "/resolve", work=stopped),
            dep.manager,
            {
                "generation": 1,
                "to": "cancelled",
                "reason": "no process left",
                "runtime_stopped": True,
            },
        )
    )
    assert got["state"] == "cancelled" and got["resolution"]["runtime_stopped"] is True


# -- pagination (a home of its own: it counts rows) ----------------------------------------


def test_a_landed_item_serves_where_its_work_landed(dep):
    work_id = dep.succeeded()
    before = ok(dep.server.get(dep.path(WORK, work=work_id), dep.member))
    assert before["landing"] is None
    ledger.landed(
        dep.home,
        work_id,
        commit="c" * 40,
        base_branch="main",
        operator="captain:tess",
        outside_grant=["top.txt"],
        reason="agreed",
    )
    got = ok(dep.server.get(dep.path(WORK, work=work_id), dep.member))
    assert got["state"] == "succeeded"
    assert got["landing"]["commit"] == "c" * 40 and got["landing"]["outside_grant"] == ["top.txt"]
    assert got["events"][-1]["type"] == "landed"
    assert got["events"][-1]["landed_commit"] == "c" * 40


@pytest.fixture(params=BACKENDS)
def own_server(request, tmp_path):
    with open_ledgers(request, request.param) as made:
        yield from _own_servers(tmp_path, made)


def _own_servers(tmp_path, made):
    servers = []

    def start(config: str = "") -> tuple[Server, Home, str]:
        home = Home(tmp_path / f"home{len(servers)}")
        (home.root / "config.toml").write_text(on_ledger(config, made.fresh_url()))
        _, secret = tokens.create(home, "member")
        servers.append(Server(home.root, tmp_path / f"serve{len(servers)}.log"))
        return servers[-1], home, secret

    yield start
    for server in servers:
        server.stop()


def test_keyset_pagination_has_no_duplicates_or_gaps(own_server):
    server, home, token = own_server('[endpoints.gh]\nsecret = "x"\n')
    made = sorted(
        ledger.accept(
            home, source="chat", input={"text": f"task {i}"}, requester="captain:test"
        ).work_id
        for i in range(105)
    )
    received = [
        deliveries.ingest(home, "gh", f"d-{i}", b"{}", event="push").delivery for i in range(7)
    ]
    made = sorted(made + [r.work_id for r in received])  # 112 items
    server.start()
    path = f"/api/workspaces/{server.workspace_id}"

    full = ok(server.get(path + "/work", token, query={"limit": 100}))
    assert len(full["items"]) == 100 and full["next_cursor"] == full["items"][-1]["work_id"]
    rest = ok(server.get(path + "/work", token, query={"limit": 100, "after": full["next_cursor"]}))
    assert len(rest["items"]) == 12 and rest["next_cursor"] is None
    assert [r["work_id"] for r in full["items"] + rest["items"]] == made
    default = ok(server.get(path + "/work", token))
    assert len(default["items"]) == 50 and default["next_cursor"] == made[49]

    seen, cursor, pages = [], None, 0
    while True:  # 112 = 16 pages of 7: the last full page says "no more"
        page = ok(
            server.get(
                path + "/work", token, query={"limit": 7, **({"after": cursor} if cursor else {})}
            )
        )
        pages += 1
        assert 1 <= len(page["items"]) <= 7
        seen += [r["work_id"] for r in page["items"]]
        cursor = page["next_cursor"]
        if cursor is None:
            break
        assert cursor == page["items"][-1]["work_id"] and pages < 40
    assert seen == made and pages == 16

    webhook = ok(server.get(path + "/work", token, query={"source": "webhook", "limit": 4}))
    assert [r["work_id"] for r in webhook["items"]] == sorted(r.work_id for r in received)[:4]
    tail = ok(
        server.get(
            path + "/work",
            token,
            query={"source": "webhook", "limit": 4, "after": webhook["next_cursor"]},
        )
    )
    assert len(tail["items"]) == 3 and tail["next_cursor"] is None

    order = [r.delivery_id for r in sorted(received, key=lambda r: (r.received_at, r.delivery_id))]
    got, cursor = [], None
    while True:
        page = ok(
            server.get(
                path + "/deliveries",
                token,
                query={"limit": 3, **({"after": cursor} if cursor else {})},
            )
        )
        got += [d["delivery_id"] for d in page["deliveries"]]
        cursor = page["next_cursor"]
        if cursor is None:
            break
    assert got == order
    assert len(ok(server.get(path + "/deliveries", token, query={"limit": 100}))["deliveries"]) == 7


# -- the auth matrix ----------------------------------------------------------------------

ROUTES = [  # (method, path template, a valid body)
    ("GET", "/api/workspaces", None),
    ("GET", WS + "/work", None),
    ("GET", WORK, None),
    ("POST", WORK + "/cancel", {"reason": "stop"}),
    ("POST", WORK + "/replay", {"reason": "again"}),
    ("POST", WORK + "/resolve", {"generation": 1, "to": "failed", "reason": "checked"}),
    ("GET", WS + "/deliveries", None),
    ("GET", WS + "/deliveries/{delivery}", None),
]


def bad_credentials(dep) -> dict[str, dict[str, str]]:
    wrong = dep.manager[:-1] + ("A" if dep.manager[-1] != "A" else "B")
    swapped = dep.manager.split("_")[:3]
    return {
        "none": {},
        "empty bearer": {"Authorization": "Bearer "},
        "no scheme": {"Authorization": dep.manager},
        "basic": {
            "Authorization": "Basic " + base64.b64encode(f"x:{dep.manager}".encode()).decode()
        },
        "garbage": {"Authorization": "Bearer garbage"},
        "malformed": {"Authorization": "Bearer cpt_tok_"},
        "wrong secret": {"Authorization": f"Bearer {wrong}"},
        "another token's secret": {
            "Authorization": "Bearer " + "_".join(swapped) + "_" + dep.member.split("_", 3)[3]
        },
        "revoked": {"Authorization": f"Bearer {dep.revoked}"},
        "another home's token": {"Authorization": f"Bearer {dep.other_token}"},
        "webhook secret": {"Authorization": f"Bearer {GH_SECRET}"},
    }


def test_every_route_refuses_without_a_valid_token_401(dep):
    s = dep.server
    work_id = dep.reconciling()
    receipt = deliveries.ingest(dep.home, "gh", "auth-1", b"{}", event="ping").delivery
    for label, headers in bad_credentials(dep).items():
        for method, template, body in ROUTES:
            path = dep.path(template, work=work_id, delivery=receipt.delivery_id)
            reply = s.request(method, path, json_body=body, headers=headers)
            assert reply.status == 401, (label, method, template, reply.raw)
            assert reply.error["code"] == "unauthorized"
            assert reply.headers.get("www-authenticate") == "Bearer"
    # a stranger's malformed body is not even looked at: 401, not 400
    refused(
        s.post(dep.path(WORK + "/replay", work=work_id), None, {"bogus": 1}), 401, "unauthorized"
    )
    refused(s.get(dep.path(WS + "/work"), None, query={"state": "runnign"}), 401, "unauthorized")
    # a receipt is not a capability: knowing the IDs opens nothing
    assert dep.events(work_id) == [
        "accepted",
        "claimed",
        "cancel_requested",
        "needs_reconciliation",
    ]


def test_members_read_managers_act(dep):
    s = dep.server
    target = {"cancel": dep.queued(), "replay": dep.succeeded(), "resolve": dep.reconciling()}
    delivery = deliveries.ingest(dep.home, "gh", "roles-1", b"{}", event="ping").delivery
    histories = {k: dep.events(v) for k, v in target.items()}
    for method, template, body in ROUTES:
        action = template.rsplit("/", 1)[-1]
        path = dep.path(
            template, work=target.get(action, target["cancel"]), delivery=delivery.delivery_id
        )
        if method == "GET":
            assert s.get(path, dep.member).status == 200, template
            assert s.get(path, dep.manager).status == 200, template
            continue
        message = refused(s.post(path, dep.member, body), 403, "forbidden")
        assert "manager" in message
    assert {k: dep.events(v) for k, v in target.items()} == histories  # nothing happened

    assert (
        ok(
            s.post(
                dep.path(WORK + "/cancel", work=target["cancel"]), dep.manager, {"reason": "stop"}
            )
        )["outcome"]
        == "cancelled"
    )
    assert (
        ok(
            s.post(
                dep.path(WORK + "/replay", work=target["replay"]), dep.manager, {"reason": "again"}
            ),
            201,
        )["replay_of"]
        == target["replay"]
    )
    assert (
        ok(
            s.post(
                dep.path(WORK + "/resolve", work=target["resolve"]),
                dep.manager,
                {"generation": 1, "to": "failed", "reason": "checked"},
            )
        )["state"]
        == "failed"
    )


def test_revoking_a_token_takes_effect_on_a_running_server(dep):
    s = dep.server
    made = captain(dep.home.root, "tokens", "create", "--role", "member")
    assert ok(s.get("/api/workspaces", made["token"]))["workspaces"][0]["role"] == "member"
    listed = captain(dep.home.root, "tokens", "list")["tokens"]
    assert made["token_id"] in {t["token_id"] for t in listed}
    assert made["token"] not in json.dumps(listed)  # stored hashed, never listed
    captain(dep.home.root, "tokens", "revoke", made["token_id"])
    refused(s.get("/api/workspaces", made["token"]), 401, "unauthorized")
    refused(s.get(dep.path(WS + "/work"), made["token"]), 401, "unauthorized")


# -- the webhook door ---------------------------------------------------------------------


def webhook_items(dep, delivery_id: str) -> list[str]:
    return [
        w for w in ledger.all_ids(dep.home) if ledger.get(dep.home, w).delivery_id == delivery_id
    ]


def identity(dep, endpoint: str, source_id: str) -> list[dict]:
    page = ok(
        dep.server.get(
            dep.path(WS + "/deliveries"),
            dep.member,
            query={"endpoint_id": endpoint, "source_delivery_id": source_id},
        )
    )
    assert page["next_cursor"] is None and len(page["deliveries"]) <= 1
    return page["deliveries"]


def test_a_new_delivery_is_on_disk_when_202_arrives_and_a_redelivery_is_200(dep):
    s = dep.server
    body = b'{"ref": "refs/heads/main", "after": "4be1c9e"}'
    reply = s.hook("gh", body, sign_github(GH_SECRET, body, "gh-new-1"))
    receipt = ok(reply, 202)
    assert set(receipt) == {"delivery_id", "duplicate"} and receipt["duplicate"] is False
    delivery_id = receipt["delivery_id"]
    # durable before the answer: the record, the body and the work item are already there
    record = deliveries.get(dep.home, delivery_id)
    assert delivery_id in delivery_store.records(dep.home)  # files, or the database rows
    assert deliveries.raw_body(dep.home, record) == body
    assert record.body_sha256 == hashlib.sha256(body).hexdigest()
    assert ledger.exists(dep.home, record.work_id)
    item = ledger.get(dep.home, record.work_id)
    assert (item.source, item.state, item.requester) == ("webhook", "queued", "webhook:gh")

    shown = ok(s.get(dep.path(WS + "/deliveries/{d}", d=delivery_id), dep.member))
    assert shown["source_delivery_id"] == "gh-new-1" and shown["event"] == "push"
    assert shown["body_bytes"] == len(body) and shown["work_id"] == record.work_id
    assert shown["raw_body_available"] is True and shown["filter_reason"] is None
    assert identity(dep, "gh", "gh-new-1") == [shown]
    assert identity(dep, "gh", "gh-never-sent") == []
    assert identity(dep, "cap", "gh-new-1") == []  # unique within an endpoint only

    for _ in range(2):  # the sender retries: same delivery, a fresh signature each time
        again = ok(s.hook("gh", body, sign_github(GH_SECRET, body, "gh-new-1")), 200)
        assert again == {"delivery_id": delivery_id, "duplicate": True}
    assert webhook_items(dep, delivery_id) == [record.work_id]
    assert identity(dep, "gh", "gh-new-1") == [shown]

    other = b'{"ref": "refs/heads/dev"}'
    message = refused(
        s.hook("gh", other, sign_github(GH_SECRET, other, "gh-new-1")), 409, "delivery_conflict"
    )
    assert "gh-new-1" in message and "different body" in message
    assert deliveries.get(dep.home, delivery_id).body_sha256 == record.body_sha256
    assert webhook_items(dep, delivery_id) == [record.work_id]


def test_a_filtered_event_is_recorded_with_its_reason_and_no_work(dep):
    s = dep.server
    body = b'{"zen": "Keep it logically awesome."}'
    receipt = ok(s.hook("gh", body, sign_github(GH_SECRET, body, "gh-ping-1", "ping")), 202)
    shown = ok(s.get(dep.path(WS + "/deliveries/{d}", d=receipt["delivery_id"]), dep.member))
    assert shown["work_id"] is None and shown["event"] == "ping"
    assert "ping" in shown["filter_reason"] and "push" in shown["filter_reason"]
    assert webhook_items(dep, receipt["delivery_id"]) == []


@pytest.mark.parametrize("style", ["github", "captain"])
def test_a_bad_signature_is_401_recorded_as_rejected_and_claims_nothing(dep, style):
    s = dep.server
    endpoint, secret, sign = (
        ("gh", GH_SECRET, sign_github) if style == "github" else ("cap", CAP_SECRET, sign_captain)
    )
    source_id = f"{style}-forged-1"
    body = b'{"ref": "refs/heads/main"}'
    good = sign(secret, body, source_id)
    name = "X-Hub-Signature-256" if style == "github" else "X-Captain-Signature"
    forged = [
        {k: v for k, v in good.items() if k != name},  # unsigned
        {**good, name: sign("not-the-secret", body, source_id)[name]},  # another key
        {**good, name: sign(secret, body + b" ", source_id)[name]},  # another body
        {**good, name: good[name].upper()},
    ]
    if style == "github":
        forged.append({**good, name: "sha1=" + good[name].split("=", 1)[1]})
    else:
        now = int(time.time())
        forged += [
            sign(secret, body, source_id, at=now - 3600),  # stale, validly signed
            sign(secret, body, source_id, at=now + 3600),  # from the future
            {**good, name: good[name].split(",")[1]},
        ]  # no timestamp
    before = {r.rejection_id for r in deliveries.rejections(dep.home)}
    records = len(delivery_store.records(dep.home))
    for headers in forged:
        message = refused(s.hook(endpoint, body, headers), 401, "bad_signature")
        assert "rejected" in message and "nothing was dispatched" in message
    new = [r for r in deliveries.rejections(dep.home) if r.rejection_id not in before]
    assert len(new) == len(forged)
    for r in new:
        assert r.endpoint_id == endpoint and r.source_delivery_id == source_id
        assert r.reason.startswith("bad signature") and r.event == "push"
    # the unsigned one is refused on its head, its body never read; the others were read
    unread = [r for r in new if "is missing (the body was not read)" in r.reason]
    assert len(unread) == 1 and unread[0].body_bytes == 0, [r.reason for r in new]
    assert all(r.body_sha256 == hashlib.sha256(body).hexdigest() for r in new if r not in unread)
    # nothing dispatched, no identity claimed: the genuine delivery is new
    assert len(delivery_store.records(dep.home)) == records
    assert identity(dep, endpoint, source_id) == []
    receipt = ok(s.hook(endpoint, body, good), 202)
    assert receipt["duplicate"] is False
    assert len(delivery_store.records(dep.home)) == records + 1
    [shown] = identity(dep, endpoint, source_id)
    assert shown["delivery_id"] == receipt["delivery_id"] and shown["work_id"]


def test_captain_signatures_allow_a_little_clock_skew(dep):
    body = b'{"n": 1}'
    headers = sign_captain(CAP_SECRET, body, "cap-skew-1", at=int(time.time()) - 60)
    assert ok(dep.server.hook("cap", body, headers), 202)["duplicate"] is False


def test_door_refusals(dep):
    s = dep.server
    body = b"{}"
    for endpoint in ("nope", "plain", "gh.x"):  # unknown, no secret, unknown
        message = refused(
            s.hook(endpoint, body, sign_github(GH_SECRET, body, "door-1")), 404, "unknown_endpoint"
        )
        assert "config.toml" not in message  # the door says nothing about the setup
    for path in ("/hooks/..%2Fconfig.toml", "/hooks/", "/hooks/gh/extra"):
        reply = s.request("POST", path, body=body)
        assert reply.status == 404 and reply.error["code"] in ("not_found", "unknown_endpoint"), (
            reply.raw
        )
    headers = sign_github(GH_SECRET, body, "x")
    del headers["X-GitHub-Delivery"]
    refused(s.hook("gh", body, headers), 400, "invalid_argument")
    big = b"x" * (deliveries.MAX_BODY_BYTES + 1)
    refused(s.hook("gh", big, sign_github(GH_SECRET, big, "door-big")), 413, "message_too_large")
    assert identity(dep, "gh", "door-big") == [] and identity(dep, "gh", "door-1") == []


def test_a_webhook_secret_grants_no_read_access(dep):
    s = dep.server
    body = b'{"ref": "main", "n": "secret-read-1"}'  # a body of its own: GitHub's is once-only
    headers = sign_github(GH_SECRET, body, "secret-read-1")
    receipt = ok(s.hook("gh", body, headers), 202)
    delivery_path = dep.path(WS + "/deliveries/{d}", d=receipt["delivery_id"])
    for credential in (
        GH_SECRET,
        headers["X-Hub-Signature-256"],
        headers["X-Hub-Signature-256"].split("=", 1)[1],
    ):
        for path in ("/api/workspaces", dep.path(WS + "/work"), delivery_path):
            refused(s.get(path, credential), 401, "unauthorized")
    refused(s.request("GET", delivery_path, headers=headers), 401, "unauthorized")
    # and the door is not a read route
    assert s.request("GET", "/hooks/gh").status == 405


# -- what responses never contain ---------------------------------------------------------

MARKER_INPUT = "MARKER-INPUT-conversation-4f1d9c"
MARKER_DETAIL = "MARKER-DETAIL-model-output-8a2e55"
MARKER_BODY = "MARKER-BODY-webhook-payload-c07b31"
FORBIDDEN_KEYS = {
    "input",
    "input_json",
    "detail",
    "body",
    "raw_body",
    "payload",
    "secret",
    "token",
    "sha256",
    "output",
    "text",
}


def keys(value) -> set[str]:
    if isinstance(value, dict):
        return set(value) | {k for v in value.values() for k in keys(v)}
    if isinstance(value, list):
        return {k for v in value for k in keys(v)}
    return set()


def test_no_response_ever_contains_input_detail_bodies_or_credentials(dep):
    s = dep.server
    home = dep.home
    ws = dep.ws
    hit: set[tuple[str, str]] = set()

    def call(
        method: str, template: str, token: str | None = None, body=None, expect: int = 200, **values
    ) -> Reply:
        reply = s.request(method, template.format(ws=ws, **values), token=token, json_body=body)
        assert reply.status == expect, (method, template, reply.status, reply.raw)
        if 200 <= reply.status < 300:
            hit.add(
                (
                    method.lower(),
                    template.split("?")[0]
                    .replace("{ws}", "{workspaceId}")
                    .replace("{work}", "{workId}")
                    .replace("{d}", "{deliveryId}")
                    .replace("{endpoint}", "{endpoint_id}"),
                )
            )
        return reply

    # the markers, through the real CLI: a chat input, a report's detail, a webhook body
    first = captain(
        home.root, "work", "submit", "--text", MARKER_INPUT, "--target-revision", "rev-m"
    )["item"]["work_id"]
    captain(home.root, "work", "claim", first, "--holder", "worker-m")
    captain(
        home.root,
        "work",
        "report",
        first,
        "--generation",
        "1",
        "--outcome",
        "succeeded",
        "--detail-stdin",
        stdin=f"{MARKER_DETAIL}\n{MARKER_INPUT}\n",
    )
    second = captain(home.root, "work", "submit", "--text", f"{MARKER_INPUT} 2")["item"]["work_id"]
    ingested = captain(
        home.root,
        "deliveries",
        "ingest",
        "--endpoint",
        "gh",
        "--delivery-id",
        "leak-cli-1",
        "--event",
        "push",
        stdin=json.dumps({"marker": MARKER_BODY}),
    )["delivery"]
    # and in-process, a running and a reconciling item with the marker as input
    third = ledger.accept(
        home, source="chat", input={"text": MARKER_INPUT}, requester="captain:test"
    ).work_id
    ledger.claim(home, third, holder="worker-m")
    fourth = dep.reconciling()
    ledger.report(home, fourth, 1, "failed", actor="worker-m", detail=MARKER_DETAIL)

    # the markers really are stored: the walk below could find them (in the ledger's files,
    # or in its rows, read on a connection of our own)
    stored, details = stored_input_and_details(home.root, ledger_location(home).url, first)
    assert MARKER_INPUT in stored
    assert any(MARKER_DETAIL in d for d in details)
    assert MARKER_BODY.encode() in delivery_store.bodies(home)[ingested["delivery_id"]]

    # webhook bodies with the marker through the door: new, duplicate, filtered, expired,
    # forged, conflicting, captain-style
    body = json.dumps({"marker": MARKER_BODY, "ref": "main"}).encode()
    other = json.dumps({"marker": MARKER_BODY, "ref": "dev"}).encode()
    ping = json.dumps({"marker": MARKER_BODY, "zen": "ping"}).encode()  # a body of its own
    receipts = []
    for endpoint, secret, headers_for, source_id, event, expect in [
        ("gh", GH_SECRET, sign_github, "leak-1", "push", 202),
        ("gh", GH_SECRET, sign_github, "leak-1", "push", 200),
        ("gh", GH_SECRET, sign_github, "leak-ping", "ping", 202),
        ("short", SHORT_SECRET, sign_github, "leak-short", "push", 202),
        ("cap", CAP_SECRET, sign_captain, "leak-cap", "push", 202),
    ]:
        sent = ping if event == "ping" else body
        reply = s.hook(endpoint, sent, headers_for(secret, sent, source_id, event))
        assert reply.status == expect, reply.raw
        hit.add(("post", "/hooks/{endpoint_id}"))
        receipts.append(reply.json["delivery_id"])
    assert s.hook("gh", body, sign_github("wrong", body, "leak-forged")).status == 401
    assert s.hook("gh", other, sign_github(GH_SECRET, other, "leak-1")).status == 409
    assert s.hook("gh", body, sign_github(GH_SECRET, body, "leak-replayed")).status == 409
    assert (
        s.hook(
            "cap", body, sign_captain(CAP_SECRET, body, "leak-old", at=int(time.time()) - 9999)
        ).status
        == 401
    )

    # every route, every page, every record
    for token in (dep.member, dep.manager):
        call("GET", "/api/workspaces", token)
        cursor, work_ids = None, []
        while True:
            page = call(
                "GET",
                "/api/workspaces/{ws}/work"
                + (f"?limit=100&after={cursor}" if cursor else "?limit=100"),
                token,
            ).json
            work_ids += [i["work_id"] for i in page["items"]]
            if not (cursor := page["next_cursor"]):
                break
        for state in WORK_STATES:
            call("GET", "/api/workspaces/{ws}/work?state=" + state, token)
        for source in ("chat", "webhook", "assignment"):
            call("GET", "/api/workspaces/{ws}/work?source=" + source, token)
        assert {first, second, third, fourth} <= set(work_ids)
        for work_id in work_ids:
            call("GET", "/api/workspaces/{ws}/work/{work}", token, work=work_id)
        cursor, delivery_ids = None, []
        while True:
            page = call(
                "GET",
                "/api/workspaces/{ws}/deliveries"
                + (f"?limit=100&after={cursor}" if cursor else "?limit=100"),
                token,
            ).json
            delivery_ids += [d["delivery_id"] for d in page["deliveries"]]
            if not (cursor := page["next_cursor"]):
                break
        assert set(receipts) | {ingested["delivery_id"]} <= set(delivery_ids)
        for delivery_id in delivery_ids:
            call("GET", "/api/workspaces/{ws}/deliveries/{d}", token, d=delivery_id)
        for source_id in ("leak-1", "leak-cli-1", "leak-forged"):
            call(
                "GET",
                "/api/workspaces/{ws}/deliveries?endpoint_id=gh&source_delivery_id=" + source_id,
                token,
            )

    # the POSTs: cancel's three outcomes, replay (which copies the input), resolve
    w = "/api/workspaces/{ws}/work/{work}"
    m = dep.manager
    assert call("POST", w + "/cancel", m, {}, work=second).json["outcome"] == "cancelled"
    assert call("POST", w + "/cancel", m, {}, work=first).json["outcome"] == "already_terminal"
    assert call("POST", w + "/cancel", m, {}, work=third).json["outcome"] == "stop_unconfirmed"
    replayed = call("POST", w + "/replay", m, {"reason": "again"}, expect=201, work=first).json
    call("GET", w, m, work=replayed["work_id"])
    call(
        "POST",
        w + "/resolve",
        m,
        {"generation": 1, "to": "succeeded", "reason": "checked"},
        work=third,
    )
    webhook_work = deliveries.get(home, receipts[0]).work_id
    call("POST", w + "/cancel", m, {}, work=webhook_work)
    call("POST", w + "/replay", m, {"reason": "again"}, expect=201, work=webhook_work)
    short_work = deliveries.get(home, receipts[3]).work_id
    call("POST", w + "/cancel", m, {}, work=short_work)

    # the refusals: 400, 401, 403, 404, 405, 409
    call("POST", w + "/replay", m, {"reason": "x", "extra": "y"}, expect=400, work=first)
    call("POST", w + "/resolve", m, {"generation": "x", "to": "failed"}, expect=400, work=fourth)
    call("GET", "/api/workspaces/{ws}/work?state=runnign", m, expect=400)
    call("GET", "/api/workspaces/{ws}/deliveries?source_delivery_id=leak-1", m, expect=400)
    call("GET", "/api/workspaces/{ws}/work/{work}", None, expect=401, work=first)
    for credential in (dep.revoked, dep.other_token, GH_SECRET, dep.manager + "x"):
        call("GET", "/api/workspaces/{ws}/work/{work}", credential, expect=401, work=first)
    call("POST", w + "/replay", dep.member, {"reason": "again"}, expect=403, work=first)
    call("GET", w, m, expect=404, work=dep.other_work)
    s.request("GET", f"/api/workspaces/{dep.other_ws}/work/{first}", token=m)
    call("DELETE", w, m, expect=405, work=first)
    call("POST", w + "/replay", m, {"reason": "again"}, expect=409, work=replayed["work_id"])
    call("POST", w + "/replay", m, {"reason": "again"}, expect=409, work=short_work)
    call(
        "POST",
        w + "/resolve",
        m,
        {"generation": 0, "to": "failed", "reason": "r"},
        expect=409,
        work=fourth,
    )
    call("GET", "/openapi.json")
    call("GET", "/docs")
    call("GET", "/redoc")
    call("GET", "/nowhere", m, expect=404)

    # every operation the document lists was answered with a 2xx during the walk
    document = s.get("/openapi.json", None).json
    listed = {(method, path) for path, ops in document["paths"].items() for method in ops}
    assert listed <= hit, listed - hit

    # the markers, every token (and its stored hash) and every webhook secret: nowhere
    secrets = [
        dep.manager,
        dep.member,
        dep.revoked,
        dep.other_token,
        GH_SECRET,
        CAP_SECRET,
        SHORT_SECRET,
    ]
    secrets += [t.split("_", 3)[3] for t in secrets[:4]]
    secrets += [t.sha256 for t in tokens.records(home)]
    needles = [MARKER_INPUT, MARKER_DETAIL, MARKER_BODY, *secrets]
    needles += [json.dumps(n)[1:-1] for n in needles]  # as it would look JSON-escaped
    assert len(s.seen) > 200
    for reply in s.seen:
        text = reply.raw.decode("utf-8", "replace")
        for needle in needles:
            assert needle not in text, (needle, reply.status, text[:300])
        for name, value in reply.headers.items():
            assert not any(n in value for n in needles), (name, value)
        if reply.headers.get("content-type", "").startswith(
            "application/json"
        ) and not text.startswith('{"openapi"'):
            assert not keys(reply.json) & FORBIDDEN_KEYS, (
                keys(reply.json) & FORBIDDEN_KEYS,
                text[:300],
            )

"""schemathesis against the OpenAPI document a real ``captain serve`` publishes.

One uvicorn on a loopback port serves a home seeded with work items in every state and
webhook deliveries (held, filtered, expired). schemathesis loads ``/openapi.json`` from it
and, for every operation, generates requests (examples, coverage and fuzzing phases;
positive and negative data) sent with a manager token. Path parameters are steered to the
real workspace, work and delivery IDs most of the time, so the GETs and POSTs act on real
records rather than only answering 404.

Every response is checked: never a 5xx, the status code is one the document lists, the
content type and body match the documented schema, and the response headers too. The
checks that judge the *inputs* the document allows (``positive_data_acceptance``: "every
schema-valid request must be accepted") are left out: a filter's dependence on another
(``source_delivery_id`` needs ``endpoint_id``) and a cursor that must come from a previous
page cannot be said in OpenAPI, and their 400s are specified behaviour (tests/api/test_api.py).
"""

from __future__ import annotations

import pytest
import schemathesis
from hypothesis import HealthCheck, settings
from hypothesis import strategies as st
from schemathesis.checks import load_all_checks
from schemathesis.specs.openapi import checks as openapi_checks
from support.api import Server, sign_github

from state.home import Home
from state.vocab import WORK_STATES
from state.work import deliveries, ledger, replay, tokens

load_all_checks()

CONFIG = """\
[ledger]
slots = 1000

[endpoints.gh]
secret = "gh-schema-secret"
events = ["push"]

[endpoints.cap]
secret = "cap-schema-secret"
signature = "captain"

[endpoints.short]
secret = "short-schema-secret"
retention_days = 0

[endpoints.plain]
"""

CHECKS = [
    schemathesis.checks.not_a_server_error,
    openapi_checks.status_code_conformance,
    openapi_checks.content_type_conformance,
    openapi_checks.response_schema_conformance,
    openapi_checks.response_headers_conformance,
    openapi_checks.negative_data_rejection,
    openapi_checks.unsupported_method,
    openapi_checks.ignored_auth,
]


def seed(home: Home) -> dict:
    """Work in every state and deliveries of every kind, through the ledger's functions."""
    actor = "captain:schema"

    def chat(text: str, **kw):
        return ledger.accept(home, source="chat", input={"text": text}, requester=actor, **kw)

    made = {}
    made["queued"] = chat("queued", target_revision="rev-1")
    running = chat("running")
    made["running"] = ledger.claim(home, running.work_id, holder="worker-a")
    ok = chat("succeeded", max_attempts=2)
    ledger.claim(home, ok.work_id, holder="worker-a")
    made["succeeded"] = ledger.report(
        home, ok.work_id, 1, "succeeded", actor="worker-a", cost_usd=0.25, detail="private detail"
    )
    bad = chat("failed")
    ledger.claim(home, bad.work_id, holder="worker-a")
    made["failed"] = ledger.report(home, bad.work_id, 1, "failed", actor="worker-a")
    made["cancelled"] = ledger.cancel(home, chat("cancelled").work_id, actor=actor).item
    stuck = chat("reconciling")
    ledger.claim(home, stuck.work_id, holder="worker-a")
    made["needs_reconciliation"] = ledger.cancel(home, stuck.work_id, actor=actor).item
    resolved = chat("resolved")
    ledger.claim(home, resolved.work_id, holder="worker-a")
    ledger.cancel(home, resolved.work_id, actor=actor)
    made["resolved"] = ledger.resolve(
        home,
        resolved.work_id,
        generation=1,
        to="cancelled",
        reason="checked",
        operator=actor,
        runtime_stopped=True,
    )
    made["replay"] = replay.replay(home, ok.work_id, actor=actor, reason="again")
    made["assignment"] = ledger.accept(
        home,
        source="assignment",
        input={"task": "t"},
        requester="captain",
        crew="ada",
        assignment_id="asg_01M8MNZ948DVX84YTWQ66N4BFQ",
    )
    body = b'{"ref": "main"}'
    pushed = deliveries.ingest(home, "gh", "gh-1", body, event="push").delivery
    pinged = deliveries.ingest(home, "gh", "gh-2", b'{"zen": 1}', event="ping").delivery
    expired = deliveries.ingest(home, "short", "s-1", body, event="push").delivery
    made["webhook"] = ledger.get(home, pushed.work_id)
    ledger.cancel(home, expired.work_id, actor=actor)
    return {
        "work": [i.work_id for i in made.values()] + [expired.work_id],
        "deliveries": [pushed.delivery_id, pinged.delivery_id, expired.delivery_id],
    }


@pytest.fixture(scope="module")
def served(tmp_path_factory):
    root = tmp_path_factory.mktemp("schema")
    home = Home(root / "home")
    (home.root / "config.toml").write_text(CONFIG)
    ids = seed(home)
    _, secret = tokens.create(home, "manager", "schemathesis")
    server = Server(home.root, root / "serve.log").start()
    yield server, secret, ids, home
    server.stop()


@pytest.fixture(scope="module")
def manager_headers(served) -> dict[str, str]:
    return {"Authorization": f"Bearer {served[1]}"}


@pytest.fixture(scope="module")
def api(served):
    server, _, ids, _ = served
    schema = schemathesis.openapi.from_url(server.url + "/openapi.json")

    real = {
        "workspaceId": [server.workspace_id],
        "workId": ids["work"],
        "deliveryId": ids["deliveries"],
        "endpoint_id": ["gh", "cap", "short", "plain"],
    }

    @schema.hook
    def flatmap_path_parameters(context, path_parameters):
        # mostly a real ID (the routes' real work), sometimes whatever was generated
        choices = {
            name: st.one_of(st.sampled_from(real[name]), st.just(value))
            if name in real and isinstance(value, str)
            else st.just(value)
            for name, value in (path_parameters or {}).items()
        }
        return st.fixed_dictionaries(choices)

    @schema.hook
    def flatmap_query(context, query):
        if not query:
            return st.just(query)
        steer = {
            "state": st.sampled_from(list(WORK_STATES)),
            "source": st.sampled_from(["chat", "webhook", "assignment"]),
            "endpoint_id": st.sampled_from(real["endpoint_id"]),
            "source_delivery_id": st.sampled_from(["gh-1", "gh-2", "s-1", "nope"]),
            "after": st.sampled_from(ids["work"] + ids["deliveries"]),
        }
        # only a string is steered: a negative case's value (an object, an array) stays what
        # schemathesis made it, or the check would judge a request that was never sent
        return st.fixed_dictionaries(
            {
                name: st.one_of(steer[name], st.just(value))
                if name in steer and isinstance(value, str)
                else st.just(value)
                for name, value in query.items()
            }
        )

    return schema


schema = schemathesis.pytest.from_fixture("api")


@schema.parametrize()
@settings(
    max_examples=25,
    deadline=None,
    suppress_health_check=[
        HealthCheck.filter_too_much,
        HealthCheck.too_slow,
        HealthCheck.function_scoped_fixture,
    ],
)
def test_every_operation_conforms_and_never_5xx(case, manager_headers):
    case.call_and_validate(headers=manager_headers, checks=CHECKS)


def test_the_document_covers_every_route_and_the_hook_door(served):
    server, secret, _, _ = served
    document = server.get("/openapi.json", None).json
    assert set(document["paths"]) == {
        "/api/workspaces",
        "/api/workspaces/{workspaceId}/work",
        "/api/workspaces/{workspaceId}/work/{workId}",
        "/api/workspaces/{workspaceId}/work/{workId}/cancel",
        "/api/workspaces/{workspaceId}/work/{workId}/replay",
        "/api/workspaces/{workspaceId}/work/{workId}/resolve",
        "/api/workspaces/{workspaceId}/deliveries",
        "/api/workspaces/{workspaceId}/deliveries/{deliveryId}",
        "/hooks/{endpoint_id}",
    }
    # every operation documents the error body it really sends (400, never FastAPI's 422),
    # and every /api operation declares bearer auth
    error = {"$ref": "#/components/schemas/ErrorOut"}
    for path, methods in document["paths"].items():
        for method, op in methods.items():
            codes = set(op["responses"])
            assert {"400", "401", "403", "404", "409", "503"} <= codes, (method, path, codes)
            assert "422" not in codes, (method, path)
            for code in ("400", "401", "403", "404", "409"):
                body = op["responses"][code]["content"]["application/json"]["schema"]
                assert body == error, (method, path, code, body)
            if path.startswith("/api"):
                assert op.get("security"), (method, path)
    assert "HTTPValidationError" not in document["components"]["schemas"]


CONFORMANCE = CHECKS[:5]


def test_the_answers_fuzzing_rarely_reaches_conform(served, api, manager_headers):
    """Resolve's 200, cancel's three outcomes, replay's 201 and the 409s need a record in
    a particular state and a matching body; they are sent by hand and validated against the
    document the same way."""
    server, _, _, home = served
    actor = "captain:schema"

    def call(path: str, method: str, params: dict, body=None, expected: int = 200):
        operation = api[path][method]
        kwargs = {"body": body, "media_type": "application/json"} if body is not None else {}
        case = operation.Case(
            path_parameters={"workspaceId": server.workspace_id, **params}, **kwargs
        )
        response = case.call(base_url=server.url, headers=manager_headers)
        assert response.status_code == expected, (path, response.status_code, response.text)
        case.validate_response(response, checks=CONFORMANCE)
        return response.json()

    work = "/api/workspaces/{workspaceId}/work/{workId}"

    def stuck():
        item = ledger.accept(home, source="chat", input={"text": "t"}, requester=actor)
        ledger.claim(home, item.work_id, holder="worker-a")
        return item.work_id

    queued = ledger.accept(home, source="chat", input={"text": "q"}, requester=actor).work_id
    assert call(work + "/cancel", "POST", {"workId": queued})["outcome"] == "cancelled"
    assert (
        call(work + "/cancel", "POST", {"workId": queued}, {"reason": "again"})["outcome"]
        == "already_terminal"
    )
    running = stuck()
    assert call(work + "/cancel", "POST", {"workId": running})["outcome"] == "stop_unconfirmed"
    resolved = call(
        work + "/resolve",
        "POST",
        {"workId": running},
        {"generation": 1, "to": "failed", "reason": "checked the host"},
    )
    assert resolved["state"] == "failed" and resolved["resolution"]["to"] == "failed"
    replayed = call(
        work + "/replay",
        "POST",
        {"workId": running},
        {"reason": "again", "target_revision": "rev-9"},
        expected=201,
    )
    assert replayed["replay_of"] == running
    error = call(
        work + "/replay", "POST", {"workId": replayed["work_id"]}, {"reason": "x"}, expected=409
    )
    assert error["error"]["code"] == "not_finished"
    other = stuck()
    ledger.cancel(home, other, actor=actor)
    error = call(
        work + "/resolve",
        "POST",
        {"workId": other},
        {"generation": 0, "to": "succeeded", "reason": "r"},
        expected=409,
    )
    assert error["error"]["code"] == "stale_generation"
    detail = call(work, "GET", {"workId": other})
    assert [a["outcome"] for a in detail["attempts"]] == [None]
    assert [e["type"] for e in detail["events"]] == [
        "accepted",
        "claimed",
        "cancel_requested",
        "needs_reconciliation",
    ]


def test_a_signed_delivery_through_the_door_conforms(served, api):
    """The door's success answers (202 new, 200 duplicate) against the document: generated
    requests cannot sign, so these two are sent by hand and validated the same way."""
    server, _, _, home = served
    operation = api["/hooks/{endpoint_id}"]["POST"]
    body = b'{"ref": "schema"}'
    for expected in (202, 200):
        case = operation.Case(
            path_parameters={"endpoint_id": "gh"},
            body=body,
            media_type="application/json",
            headers=sign_github("gh-schema-secret", body, "gh-door-1"),
        )
        response = case.call(base_url=server.url)
        assert response.status_code == expected, response.text
        case.validate_response(response, checks=CONFORMANCE)

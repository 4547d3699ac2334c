"""Webhook deliveries' remaining seed rules through a real ``captain serve`` (uvicorn in a
subprocess; tests/support/api.py):

- the server purges raw bodies past their retention when it starts (and then every few
  minutes), with expired GitHub-style body claims and old refusals; the record stays;
- ``?endpoint_id=`` naming no known endpoint is a 400 ``invalid_filter``, never an empty
  page; a removed endpoint's history stays listable;
- a routine endpoint's receipt answers cancel and replay with 409 ``routine_receipt``.

Deliveries made before the server starts are recorded with the real CLI where it can
(``captain deliveries ingest``), and in-process through ``state.work.deliveries`` for what
only the door records (a body claim, a refusal). All of it runs on the file home and again
with the home's ledger — and so its deliveries — on PostgreSQL (what is stored is read
past captain: tests/support/deliveries.py).
"""

from __future__ import annotations

import time

import pytest
from support import deliveries as stored
from support.api import Server, captain, ok, refused, sign_captain
from support.ledger_backends import BACKENDS, open_ledgers

from state.home import Home
from state.work import deliveries

ROUTINE_SECRET = "routine-webhook-secret-5c2e"
CONFIG = f"""\
[endpoints.gone]
retention_days = 0

[endpoints.kept]
retention_days = 7

[endpoints.idle]

[endpoints.chores]
secret = "{ROUTINE_SECRET}"
signature = "captain"
routine = true
"""
WS = "/api/workspaces/{ws}"


def until(predicate, what: str, timeout: float = 30.0) -> None:
    deadline = time.monotonic() + timeout
    while not predicate():
        assert time.monotonic() < deadline, f"timed out after {timeout} s waiting for {what}"
        time.sleep(0.05)


@pytest.fixture(scope="module", params=BACKENDS)
def setup(request, tmp_path_factory):
    """A home with deliveries made before the server starts (one of them on an endpoint
    since removed from config.toml), its server, and a manager token; on the file home,
    and again with the home's ledger (and so its deliveries) on PostgreSQL."""
    with open_ledgers(request, request.param) as on:
        yield from _setup(tmp_path_factory, on)


def _setup(tmp_path_factory, on):
    root = tmp_path_factory.mktemp("rules")
    home = Home(root / "home")
    url = on.fresh_url()
    ledger = f'[ledger]\nurl = "{url}"\n\n' if url else ""
    (home.root / "config.toml").write_text(ledger + CONFIG + "\n[endpoints.old]\n")
    made = {
        name: captain(
            home.root,
            "deliveries",
            "ingest",
            "--endpoint",
            name,
            "--delivery-id",
            f"{name}-1",
            "--event",
            "push",
            stdin=f'{{"n": "{name}"}}',
        )["delivery"]
        for name in ("gone", "kept", "old")
    }
    claim = deliveries.ingest(
        home, "gone", "gone-2", b'{"n": 2}', event="push", body_once=True
    ).delivery
    old = deliveries.reject(home, "kept", "kept-9", b"{}", "bad signature: test")
    stored.age_rejection(home, old.rejection_id, deliveries.REJECTION_DAYS + 1)
    (home.root / "config.toml").write_text(ledger + CONFIG)  # "old" is no longer configured
    assert len(stored.bodies(home)) == 4 and stored.body_claims(home) == 1
    manager = captain(home.root, "tokens", "create", "--role", "manager")["token"]
    server = Server(home.root, root / "serve.log").start()
    yield server, home, manager, made, claim
    server.stop()


def test_the_server_purges_expired_bodies_and_keeps_the_records(setup):
    server, home, manager, made, claim = setup
    gone = made["gone"]
    kept = made["kept"]
    until(
        lambda: (
            sorted(stored.bodies(home)) == sorted([kept["delivery_id"], made["old"]["delivery_id"]])
        ),
        "the expired bodies to be purged",
    )
    until(lambda: stored.body_claims(home) == 0, "the expired body claim to be purged")
    until(lambda: deliveries.rejections(home) == [], "the old refusal to be purged")
    for before in (gone, claim.model_dump(mode="json")):
        after = ok(
            server.get(
                WS.format(ws=server.workspace_id) + f"/deliveries/{before['delivery_id']}", manager
            )
        )
        assert after["raw_body_available"] is False
        assert (after["body_sha256"], after["body_bytes"], after["work_id"]) == (
            before["body_sha256"],
            before["body_bytes"],
            before["work_id"],
        )
    held = ok(
        server.get(
            WS.format(ws=server.workspace_id) + f"/deliveries/{kept['delivery_id']}", manager
        )
    )
    assert held["raw_body_available"] is True


def test_an_unknown_endpoint_filter_is_400(setup):
    server, home, manager, made, _ = setup
    path = WS.format(ws=server.workspace_id) + "/deliveries"
    for query in (
        {"endpoint_id": "typo"},
        {"endpoint_id": ""},
        {"endpoint_id": "typo", "source_delivery_id": "gone-1"},
        {"endpoint_id": "gone", "source_delivery_id": ""},
    ):
        message = refused(server.get(path, manager, query=query), 400, "invalid_filter")
        assert message.strip()
    assert "gone" in refused(
        server.get(path, manager, query={"endpoint_id": "typo"}), 400, "invalid_filter"
    )
    # configured, nothing received: a true empty page; removed, with history: listable
    assert ok(server.get(path, manager, query={"endpoint_id": "idle"})) == {
        "deliveries": [],
        "next_cursor": None,
    }
    listed = ok(server.get(path, manager, query={"endpoint_id": "old"}))["deliveries"]
    assert [d["delivery_id"] for d in listed] == [made["old"]["delivery_id"]]
    asked = ok(
        server.get(path, manager, query={"endpoint_id": "old", "source_delivery_id": "old-1"})
    )["deliveries"]
    assert [d["delivery_id"] for d in asked] == [made["old"]["delivery_id"]]
    never = ok(
        server.get(path, manager, query={"endpoint_id": "old", "source_delivery_id": "old-9"})
    )
    assert never == {"deliveries": [], "next_cursor": None}


def test_a_routine_receipt_refuses_cancel_and_replay_with_409(setup):
    server, home, manager, _, _ = setup
    ws = WS.format(ws=server.workspace_id)
    body = b'{"job": "nightly"}'
    receipt = ok(
        server.hook("chores", body, sign_captain(ROUTINE_SECRET, body, "r-1", "tick")), 202
    )
    delivery = ok(server.get(ws + f"/deliveries/{receipt['delivery_id']}", manager))
    assert delivery["routine"] is True and delivery["work_id"]
    work_id = delivery["work_id"]
    item = ok(server.get(ws + f"/work/{work_id}", manager))
    for action, body_json in (("cancel", None), ("replay", {"reason": "again"})):
        message = refused(
            server.post(ws + f"/work/{work_id}/{action}", manager, body_json),
            409,
            "routine_receipt",
        )
        assert work_id in message and "chores" in message and action in message
    assert ok(server.get(ws + f"/work/{work_id}", manager)) == item  # nothing changed
    # the other endpoints' deliveries say they are not routine
    listed = ok(server.get(ws + "/deliveries", manager, query={"limit": 100}))["deliveries"]
    assert {d["endpoint_id"]: d["routine"] for d in listed}["gone"] is False

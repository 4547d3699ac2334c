"""Two ``captain serve`` on one PostgreSQL ledger: the issue's "serve twice" proof.

Two homes (standing for two hosts), each with its own ``captain serve`` on its own port,
whose ``[ledger] url`` names one database (tests/support/ledger_backends.py): they are one
workspace with one set of tokens (state/work/pg_tokens.py) and one ledger, so a token
created once works on both, an item made through one is seen, cancelled and replayed
through the other, and a webhook delivered twice, once to each, is one delivery and one
work item (the second answer says duplicate).

Everything is done over HTTP, except what the API has no route for: the shared token is
made once through home A (``tokens.create``, what ``captain tokens create`` calls; a second
one is made and revoked with the real CLI through home B), and the chat item with
``captain work submit`` through home A (the API creates work only through the webhook
door, which the second test uses). A read through the other server after a write is polled with a
deadline: the write committed before its answer, so the first read is expected to see it.
The stored rows are counted on a connection of our own, as a third host would.
"""

from __future__ import annotations

import time
import uuid
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass

import pytest
from support.api import Server, captain, ok, refused, sign_github
from support.ledger_backends import open_ledgers

from state.home import Home
from state.work import tokens

GH_SECRET = "gh-shared-secret-51c7"
CONFIG = f"""\
[ledger]
url = "{{url}}"

[endpoints.gh]
secret = "{GH_SECRET}"
signature = "github"
events = ["push"]
retention_days = 7
"""
WS = "/api/workspaces/{ws}"
DEADLINE = 10.0  # seconds for the other server to show a committed write


@dataclass
class Pair:
    a: Server
    b: Server
    token: str  # one manager token, made once through home A, stored in the database
    token_id: str
    url: str  # the shared ledger (a schema of its own in the test database)
    made: object  # support.ledger_backends.Ledgers

    @property
    def ws(self) -> str:
        return self.a.workspace_id

    def path(self, rest: str = "") -> str:
        return WS.format(ws=self.ws) + rest

    def rows(self, sql: str, *params) -> list[tuple]:
        with self.made.connect(self.url) as conn:
            return conn.execute(sql, params).fetchall()


def eventually(what, check, deadline: float = DEADLINE):
    """``what()`` until ``check`` accepts it, or fail with the last value at the deadline."""
    end = time.monotonic() + deadline
    while True:
        value = what()
        if check(value):
            return value
        if time.monotonic() > end:
            raise AssertionError(f"not within {deadline} s; last seen: {value!r}")
        time.sleep(0.05)


@pytest.fixture(scope="module")
def pair(request, tmp_path_factory):
    with open_ledgers(request, "postgresql") as made:
        url = made.fresh_url()
        root = tmp_path_factory.mktemp("serve-twice")
        homes = []
        for name in ("host-a", "host-b"):
            home = Home(root / name).root  # made before anything is written into it
            (home / "config.toml").write_text(CONFIG.format(url=url))
            homes.append(home)
        # made once, through home A (in this process: the CLI's own path is the test's)
        record, secret = tokens.create(Home(homes[0]), "manager", "both")
        servers = [Server(home, root / f"{home.name}.log") for home in homes]
        try:
            with ThreadPoolExecutor(max_workers=2) as pool:  # both start at once
                list(pool.map(Server.start, servers))
            yield Pair(servers[0], servers[1], secret, record.token_id, url, made)
        finally:
            for server in servers:
                server.stop()


def test_one_workspace_one_token_and_an_item_shared_by_both_servers(pair: Pair):
    a, b, token = pair.a, pair.b, pair.token
    assert a.url != b.url
    assert a.workspace_id == b.workspace_id  # one workspace: the database's
    for server in (a, b):  # the token made once is accepted by both
        assert ok(server.get("/api/workspaces", token)) == {
            "workspaces": [{"workspace_id": pair.ws, "role": "manager"}]
        }

    # made through home A (the API has no route that submits chat work) ...
    made = captain(a.home, "work", "submit", "--text", "shared over HTTP")["item"]
    work_id = made["work_id"]
    # ... seen through B
    shown = eventually(
        lambda: b.get(pair.path(f"/work/{work_id}"), token), lambda r: r.status == 200
    )
    assert ok(shown)["state"] == "queued" and ok(shown)["input_sha256"] == made["input_sha256"]
    assert work_id in [i["work_id"] for i in ok(b.get(pair.path("/work"), token))["items"]]

    # cancelled through B, seen cancelled through A
    cancelled = ok(b.post(pair.path(f"/work/{work_id}/cancel"), token, {"reason": "not needed"}))
    assert cancelled["outcome"] == "cancelled" and cancelled["state"] == "cancelled"
    seen = eventually(
        lambda: ok(a.get(pair.path(f"/work/{work_id}"), token)),
        lambda item: item["state"] == "cancelled",
    )
    assert [e["type"] for e in seen["events"]][-1] == "cancelled"

    # replayed through A, the replay seen through B; replayed again through B
    replay = ok(
        a.post(pair.path(f"/work/{work_id}/replay"), token, {"reason": "needed after all"}), 201
    )
    assert replay["replay_of"] == work_id and replay["state"] == "queued"
    there = eventually(
        lambda: b.get(pair.path(f"/work/{replay['work_id']}"), token), lambda r: r.status == 200
    )
    assert (
        ok(there)["replay_of"] == work_id
        and ok(there)["requester"] == f"token:{pair.token_id} (both)"
    )
    again = ok(
        b.post(pair.path(f"/work/{work_id}/replay"), token, {"reason": "and once more"}), 201
    )
    assert ok(a.get(pair.path(f"/work/{again['work_id']}"), token))["replay_of"] == work_id
    assert pair.rows("SELECT count(*) FROM work_items WHERE replay_of = %s", work_id) == [(2,)]

    # a token made through B works on A until it is revoked through B
    other = captain(b.home, "tokens", "create", "--role", "member")
    assert ok(a.get(pair.path("/work"), other["token"]))["items"]
    captain(b.home, "tokens", "revoke", other["token_id"])
    for server in (a, b):
        refused(server.get(pair.path("/work"), other["token"]), 401, "unauthorized")
    assert not (a.home / "tokens").exists() and not (b.home / "tokens").exists()
    assert not (a.home / "workspace.json").exists()


def test_a_webhook_delivered_to_each_server_is_one_delivery_and_one_item(pair: Pair):
    a, b, token = pair.a, pair.b, pair.token
    body = b'{"ref": "refs/heads/main", "after": "4be1c9e"}'
    source_id = f"gh-{uuid.uuid4()}"

    first = a.hook("gh", body, sign_github(GH_SECRET, body, source_id))
    receipt = ok(first, 202)
    assert receipt["duplicate"] is False
    second = b.hook("gh", body, sign_github(GH_SECRET, body, source_id))  # a fresh signature
    assert ok(second, 200) == {"delivery_id": receipt["delivery_id"], "duplicate": True}
    delivery_id = receipt["delivery_id"]

    assert pair.rows(
        "SELECT count(*) FROM deliveries WHERE endpoint_id = 'gh' AND source_delivery_id = %s",
        source_id,
    ) == [(1,)]
    [(work_id,)] = pair.rows("SELECT work_id FROM work_items WHERE delivery_id = %s", delivery_id)
    for server in (a, b):  # both show the one delivery, and its one item
        page = ok(
            server.get(
                pair.path("/deliveries"),
                token,
                query={"endpoint_id": "gh", "source_delivery_id": source_id},
            )
        )
        assert [d["delivery_id"] for d in page["deliveries"]] == [delivery_id]
        assert page["deliveries"][0]["work_id"] == work_id
        items = ok(server.get(pair.path("/work"), token, query={"source": "webhook"}))
        assert [i["work_id"] for i in items["items"] if i["delivery_id"] == delivery_id] == [
            work_id
        ]

    # the item the webhook made through A: cancelled through B, replayed through A (its
    # raw body is in the shared ledger), the replay seen through B
    ok(b.post(pair.path(f"/work/{work_id}/cancel"), token))
    eventually(
        lambda: ok(a.get(pair.path(f"/work/{work_id}"), token))["state"],
        lambda state: state == "cancelled",
    )
    replay = ok(a.post(pair.path(f"/work/{work_id}/replay"), token, {"reason": "redo"}), 201)
    assert ok(b.get(pair.path(f"/work/{replay['work_id']}"), token))["replay_of"] == work_id

    # the same delivery sent to both at the same moment: one 202, one 200, one item
    racing = f"gh-{uuid.uuid4()}"
    pushed = b'{"ref": "refs/heads/main", "after": "77e0d1a"}'  # GitHub's: a body once
    with ThreadPoolExecutor(max_workers=2) as pool:
        replies = list(
            pool.map(
                lambda server: server.hook("gh", pushed, sign_github(GH_SECRET, pushed, racing)),
                (a, b),
            )
        )
    assert sorted(r.status for r in replies) == [200, 202], [(r.status, r.raw) for r in replies]
    assert len({r.json["delivery_id"] for r in replies}) == 1
    assert sorted(r.json["duplicate"] for r in replies) == [False, True]
    assert pair.rows(
        "SELECT count(*) FROM work_items WHERE delivery_id = %s", replies[0].json["delivery_id"]
    ) == [(1,)]

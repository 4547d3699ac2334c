"""``captain serve`` leaks nothing of its routes or its infrastructure to a client.

- Under ``/api`` the token is checked before anything else: without a valid one every path
  answers the same 401 — a route, a route with a trailing slash (no redirect), a route with
  the wrong method, a path that is no route — so a client learns nothing of which exist.
- With the ledger's database gone (dropped under a running server), every request is a 503
  with the stable code and one fixed sentence, with a token or without: never the
  database's user, host, port, name or password, and one line in serve's log per refusal,
  no traceback.

Real servers (tests/support/api.py), a real PostgreSQL (tests/support/postgres.py).
"""

from __future__ import annotations

import time
from urllib.parse import urlsplit

import pytest
from support.api import Server, refused, sign_github

from state.home import Home
from state.work import tokens

GH = "gh-leaks-secret"
CONFIG = f"""\
[endpoints.gh]
secret = "{GH}"
events = ["push"]
"""
WORK_ID = "wrk_01M8AAAAAAAAAAAAAAAAAAAAAA"


@pytest.fixture(scope="module")
def files_server(tmp_path_factory):
    root = tmp_path_factory.mktemp("leaks")
    home = Home(root / "home")
    (home.root / "config.toml").write_text(CONFIG)
    _, member = tokens.create(home, "member")
    server = Server(home.root, root / "serve.log").start()
    yield server, member
    server.stop()


def test_without_a_token_no_api_path_says_whether_it_exists(files_server):
    s, member = files_server
    ws = s.ws()
    probes = [  # (method, path): routes, routes with a slash, wrong methods, no routes
        ("GET", "/api/workspaces"),
        ("GET", "/api/workspaces/"),
        ("GET", ws + "/work"),
        ("GET", ws + "/work/"),
        ("GET", ws + f"/work/{WORK_ID}/"),
        ("GET", ws + "/deliveries/"),
        ("POST", ws + f"/work/{WORK_ID}/cancel/"),
        ("DELETE", ws + "/work"),
        ("GET", ws + f"/work/{WORK_ID}/cancel"),
        ("PUT", "/api/workspaces"),
        ("GET", "/api"),
        ("GET", "/api/"),
        ("GET", "/api/nowhere"),
        ("GET", ws + "/nowhere/"),
        ("GET", "/api/workspaces/ws_01M8AAAAAAAAAAAAAAAAAAAAAA/work/"),
    ]
    for method, path in probes:
        for token in (None, "cpt_tok_nope_x", member + "x"):
            reply = s.request(method, path, token=token)
            assert "location" not in reply.headers, (method, path, reply.headers)
            assert refused(reply, 401, "unauthorized"), (method, path)
            assert reply.headers.get("www-authenticate") == "Bearer"
    # with the token, a trailing slash is no route (404), never a redirect to one
    for path in ("/api/workspaces/", ws + "/work/", ws + "/deliveries/"):
        reply = s.get(path, member)
        assert "location" not in reply.headers, (path, reply.headers)
        refused(reply, 404, "not_found")
    assert s.get(ws + "/work", member).status == 200


def test_the_webhook_door_answers_a_trailing_slash_without_a_redirect(files_server):
    s, _ = files_server
    body = b'{"zen": "x"}'
    for endpoint in ("gh/", "nowhere/"):
        reply = s.hook(endpoint, body, sign_github(GH, body, "slash-1"))
        assert "location" not in reply.headers, (endpoint, reply.headers)
        refused(reply, 404, "not_found")


# -- the database goes away under a running server ------------------------------------------


def _with_password(url: str) -> str:
    """The URL with a password in it (the test cluster trusts local connections and
    ignores it), unless it has one already."""
    parts = urlsplit(url)
    if parts.password is not None or not parts.username:
        return url
    user, _, hostport = parts.netloc.rpartition("@")
    return parts._replace(netloc=f"{user}:Pw-leak-7c1e@{hostport}").geturl()


def test_with_the_database_gone_every_answer_is_503_and_the_code_only(tmp_path, pg_server):  # noqa: F811
    import psycopg

    from state.work import pg_schema

    name = pg_server.create_database()
    url = _with_password(pg_server.url(name))
    with psycopg.connect(url) as conn:
        pg_schema.migrate(conn)
    home = Home(tmp_path / "home")
    (home.root / "config.toml").write_text(f'{CONFIG}\n[ledger]\nurl = "{url}"\n')
    home = Home(home.root)
    _, member = tokens.create(home, "member")
    home.close()  # the test's own connections: only the server's are cut below
    server = Server(home.root, tmp_path / "serve.log").start()
    try:
        assert server.get("/api/workspaces", member).status == 200
        pg_server.drop_database(name)  # WITH (FORCE): the server's connections end too
        log_before = server.log.read_text()
        body = b'{"zen": "x"}'
        asks = [  # each needs the database; (without a token, nothing does: 401)
            lambda: server.get("/api/workspaces", member + "x"),
            lambda: server.get("/api/workspaces", member),
            lambda: server.get(server.ws("/work"), member),
            lambda: server.get(server.ws("/work/"), member + "x"),
            lambda: server.post(server.ws(f"/work/{WORK_ID}/cancel"), member, {}),
            lambda: server.hook("gh", body, sign_github(GH, body, "down-1")),
            lambda: server.hook("gh", body, sign_github("wrong", body, "down-2")),
        ]
        parts = urlsplit(url)
        needles = [
            parts.username,
            parts.hostname,
            str(parts.port),
            name,
            parts.password,
            "postgres",
            "Traceback",
            "psycopg",
            str(home.root),
        ]
        replies = [ask() for ask in asks]
        replies.append(server.get("/api/workspaces", None))
        for reply in replies:
            for needle in filter(None, needles):
                assert needle.lower() not in reply.raw.decode().lower(), (needle, reply.raw)
        for reply in replies[:-1]:
            assert "unavailable" in refused(reply, 503, "ledger_unreachable")
        refused(replies[-1], 401, "unauthorized")
        # serve's log: at most one line per refusal, the detail there (password redacted)
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline and server.log.read_text().count(
            "ledger_unreachable"
        ) < len(asks):
            time.sleep(0.05)
        added = server.log.read_text()[len(log_before) :]
        assert "Traceback" not in added, added
        assert len(added.splitlines()) <= len(asks), added
        assert added.count("ledger_unreachable") >= len(asks), added
        if parts.password:
            assert parts.password not in added, added
        assert name in added  # the operator sees where it tried
    finally:
        server.stop()

"""A ledger setting edited under a running ``captain serve`` is said, never followed.

The process resolves its ledger once (``state.work.backend.handle_of``): its work items,
deliveries and tokens stay on the ledger it started with after ``[ledger] url`` is pointed
elsewhere, and it says so once per change (``ledger_changed``, a warning line in its log).
Before, every request chose the ledger again from config.toml: a file home pointed at a
database refused every request (``ledger_not_imported``), and a database pointed at another
answered from the new one, where the items and the token did not exist.

A real ``captain serve`` on both backends; the other ledger is a database URL for the files
(never reached) and an empty migrated schema for PostgreSQL.
"""

from __future__ import annotations

import os
import time
from pathlib import Path

from support.api import Server

from state.home import CONFIG_SETTLE_SECONDS
from state.work import ledger, tokens

DEADLINE = 30.0
UNREACHED = "postgresql://nobody@127.0.0.1:1/elsewhere"  # port 1: nothing listens there


def _still(path: Path) -> None:
    """Age the file past the settle time, so the edit is believed at the next request."""
    past = time.time() - 10 * CONFIG_SETTLE_SECONDS
    os.utime(path, (past, past))


def _said(server: Server) -> list[str]:
    return [line for line in server.log.read_text().splitlines() if "ledger_changed" in line]


def test_serve_keeps_its_ledger_when_the_url_is_edited_and_says_so_once(tmp_path, ledgers):
    home = ledgers.home(tmp_path / "home")
    item = ledger.accept(home, source="chat", input={"text": "x"}, requester="test")
    _, token = tokens.create(home, "manager")
    config = home.root / "config.toml"
    before = config.read_text() if config.exists() else ""
    other = ledgers.fresh_url() or UNREACHED
    server = Server(home.root, tmp_path / "serve.log").start()
    try:
        assert server.get(server.ws(f"/work/{item.work_id}"), token).status == 200
        if "url = " in before:
            config.write_text(before.replace(ledgers.config(ledgers.urls[0]), f'url = "{other}"\n'))
        else:
            config.write_text(f'[ledger]\nurl = "{other}"\n')
        _still(config)
        said: list[str] = []
        deadline = time.monotonic() + DEADLINE
        while not said and time.monotonic() < deadline:
            reply = server.get(server.ws("/work"), token)
            assert reply.status == 200, reply.raw  # the token and the items: the old ledger
            assert [row["work_id"] for row in reply.json["items"]] == [item.work_id]
            said = _said(server)
            time.sleep(0.05)
        assert said, server.log.read_text()
        for _ in range(5):  # more requests: the same ledger, and nothing said again
            reply = server.get(server.ws(f"/work/{item.work_id}"), token)
            assert reply.status == 200 and reply.json["work_id"] == item.work_id, reply.raw
        lines = _said(server)
        assert len(lines) == 1, lines
        kept = "files" if ledgers.kind == "files" else "127.0.0.1"
        assert kept in lines[0] and "restart" in lines[0], lines[0]
        assert "elsewhere" in lines[0] or ledgers.kind == "postgresql", lines[0]
    finally:
        server.stop()
    if ledgers.kind == "postgresql":
        with ledgers.connect(other) as conn:  # the new ledger got nothing of it
            assert conn.execute("SELECT count(*) FROM work_items").fetchone() == (0,)

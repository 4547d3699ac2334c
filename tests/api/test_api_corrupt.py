"""A corrupted ledger row through a real ``captain serve`` (tests/support/api.py), on both
ledgers: the damaged item or delivery is ``500`` ``ledger_corrupt`` naming its ID (docs/api.md,
"Errors"), every list serves the rest with cursors that work, serve's log says which row it
skipped, and no traceback is anywhere.
"""

from __future__ import annotations

import time
from pathlib import Path

import pytest
from support.api import Server, ok, refused
from support.corrupt import damage_delivery, damage_item
from support.ledger_backends import BACKENDS, open_ledgers

from state.home import Home
from state.work import deliveries, ledger, tokens

CONFIG = '[endpoints.gh]\nsecret = "x"\n'


@pytest.fixture(params=BACKENDS)
def made(request):
    with open_ledgers(request, request.param) as made:
        yield made


def test_a_corrupt_row_is_a_stable_500_and_lists_skip_it(tmp_path: Path, made) -> None:
    home = Home(tmp_path / "home")
    url = made.fresh_url()
    (home.root / "config.toml").write_text((f'[ledger]\nurl = "{url}"\n\n' if url else "") + CONFIG)
    home = Home(home.root)
    _, token = tokens.create(home, "manager")
    first, bad, last = (
        ledger.accept(home, source="chat", input={"text": t}, requester="captain:test").work_id
        for t in ("first", "bad", "last")
    )
    received = [
        deliveries.ingest(home, "gh", f"d-{n}", b"{}", event="push").delivery for n in range(3)
    ]
    damage_item(home, bad, "wrong shape")
    bad_delivery = received[1].delivery_id
    damage_delivery(home, bad_delivery)
    server = Server(home.root, tmp_path / "serve.log").start()
    try:
        ws = server.ws()
        # asked for by its ID: the stable code, naming it
        assert bad in refused(server.get(f"{ws}/work/{bad}", token), 500, "ledger_corrupt")
        # on files the first read of a bad file quarantines it (the store's rule 6), and from
        # then on the ID is unknown, a 404 as stable: the start-up purge may be that read
        reply = server.get(f"{ws}/deliveries/{bad_delivery}", token)
        if url or reply.status == 500:
            assert bad_delivery in refused(reply, 500, "ledger_corrupt")
        else:
            refused(reply, 404, "unknown_delivery")
        if url:
            message = refused(
                server.post(f"{ws}/work/{bad}/cancel", token, {}), 500, "ledger_corrupt"
            )
            assert bad in message
        # every list serves the rest, a page at a time as well as whole
        items = [i["work_id"] for i in ok(server.get(f"{ws}/work", token))["items"]]
        webhook = [r.work_id for r in received if r.work_id]
        assert items == sorted([first, last, *webhook]), items
        page = ok(server.get(f"{ws}/work", token, query={"limit": 1}))
        assert [i["work_id"] for i in page["items"]] == [items[0]]
        queued = ok(server.get(f"{ws}/work", token, query={"state": "queued", "limit": 100}))
        assert bad not in [i["work_id"] for i in queued["items"]]
        listed = ok(server.get(f"{ws}/deliveries", token))["deliveries"]
        assert [d["delivery_id"] for d in listed] == [
            received[0].delivery_id,
            received[2].delivery_id,
        ]
        after = ok(
            server.get(
                f"{ws}/deliveries", token, query={"limit": 1, "after": received[0].delivery_id}
            )
        )
        assert [d["delivery_id"] for d in after["deliveries"]] == [received[2].delivery_id]
        assert all(
            reply.status < 500 or reply.json["error"]["code"] == "ledger_corrupt"
            for reply in server.seen
        )
    finally:
        server.stop()
    log = (tmp_path / "serve.log").read_text()
    assert "Traceback" not in log and "ValidationError" not in log, log
    deadline = time.monotonic() + 10
    while bad_delivery not in log and time.monotonic() < deadline:  # already flushed, in fact
        time.sleep(0.05)
        log = (tmp_path / "serve.log").read_text()
    said = [line for line in log.splitlines() if bad_delivery in line]
    assert len(said) == 1 and said[0].startswith("captain: warning: "), log

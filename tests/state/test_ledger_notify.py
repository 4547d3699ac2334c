"""Wake-ups from a PostgreSQL ledger (LISTEN/NOTIFY, ``state.work.pg_backend.Listener``): a
write committed by another process is heard, a rolled-back one never is, and a listener
whose connection is cut reconnects and asks for a rescan. The file backend has no
listener: watchfiles on the home is its wake-up.

Polled with deadlines, never timed: how fast is the benchmark's business."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import pytest
from conftest import REPO
from support.ledger_backends import open_ledgers

from state.home import Home
from state.work import backend, ledger, pg_backend
from state.work.pg_backend import EVERYTHING

DEADLINE = 20.0


@pytest.fixture
def pg(request):
    with open_ledgers(request, "postgresql") as made:
        yield made


def heard_until(listener, predicate, *, what: str, deadline: float = DEADLINE) -> list[str]:
    """Everything the listener hears until ``predicate(all heard so far)`` holds."""
    heard: list[str] = []
    end = time.monotonic() + deadline
    while not predicate(heard):
        assert time.monotonic() < end, f"never heard {what}; heard {heard}"
        heard += listener.wait(0.5)
    return heard


def accept(home: Home, text: str = "Summarise the incidents"):
    return ledger.accept(home, source="chat", input={"text": text}, requester="captain:test")


ACCEPT_ELSEWHERE = """
import sys
from state.home import Home
from state.work import ledger
home = Home(sys.argv[1])
print(ledger.accept(home, source="chat", input={"text": "from afar"},
                    requester="captain:other").work_id)
"""


def test_a_write_in_another_process_is_heard(tmp_path: Path, pg) -> None:
    home = pg.home(tmp_path / "home")
    listener = backend.listener_for(home)
    try:
        assert EVERYTHING in listener.wait(5)  # connected: re-read what came before
        env = {k: v for k, v in os.environ.items() if not k.startswith("CAPTAIN_")}
        env["PYTHONPATH"] = str(REPO)
        proc = subprocess.run(
            [sys.executable, "-c", ACCEPT_ELSEWHERE, str(home.root)],
            env=env,
            capture_output=True,
            text=True,
            timeout=60,
        )
        assert proc.returncode == 0, proc.stderr
        work_id = proc.stdout.strip()
        heard_until(listener, lambda h: work_id in h, what=work_id)
        # a claim and a report are heard too, each as the item's ID (once per transaction)
        item = ledger.claim(home, work_id, holder="worker")
        heard = heard_until(listener, lambda h: work_id in h, what="the claim")
        assert heard.count(work_id) == 1 and EVERYTHING not in heard
        ledger.report(home, work_id, item.generation, "succeeded", actor="worker")
        heard_until(listener, lambda h: work_id in h, what="the report")
    finally:
        listener.close()


def test_a_rolled_back_transaction_notifies_nothing(tmp_path: Path, pg) -> None:
    home = pg.home(tmp_path / "home")
    first = accept(home)
    listener = backend.listener_for(home)
    try:
        listener.wait(5)  # connected
        chosen = backend.backend_for(home)
        with pytest.raises(RuntimeError):
            with chosen.transaction(first.work_id):
                item = chosen.item(first.work_id)
                chosen.store_item(item.model_copy(update={"source": "chat"}))
                raise RuntimeError("changed my mind")
        marker = accept(home, "after the rollback")  # committed after it: heard after it
        heard = heard_until(listener, lambda h: marker.work_id in h, what="the marker")
        assert first.work_id not in heard
    finally:
        listener.close()


def test_a_transaction_writing_many_items_says_everything(tmp_path: Path, pg) -> None:
    home = pg.home(tmp_path / "home")
    items = [accept(home, f"task {n}") for n in range(pg_backend.NOTIFY_MAX + 1)]
    listener = backend.listener_for(home)
    try:
        listener.wait(5)
        chosen = backend.backend_for(home)
        with chosen.transaction():
            for item in items:
                chosen.store_item(chosen.item(item.work_id))
        heard = heard_until(listener, lambda h: EVERYTHING in h, what="everything")
        assert not {i.work_id for i in items} & set(heard)  # bounded: one payload
    finally:
        listener.close()


def test_a_listener_whose_connection_is_killed_reconnects_and_asks_for_a_rescan(
    tmp_path: Path, pg
) -> None:
    home = pg.home(tmp_path / "home")
    listener = backend.listener_for(home)
    try:
        assert EVERYTHING in listener.wait(5)
        pid = listener.backend_pid()
        with pg.connect(pg.urls[0]) as admin:
            assert admin.execute("SELECT pg_terminate_backend(%s)", (pid,)).fetchone()[0]
        heard_until(listener, lambda h: EVERYTHING in h, what="the rescan after the cut")
        assert listener.connects == 2 and listener.backend_pid() != pid
        item = accept(home)  # and it hears writes again
        heard_until(listener, lambda h: item.work_id in h, what="a write after the cut")
    finally:
        listener.close()


def test_the_file_ledger_has_no_listener(home: Home) -> None:
    assert backend.listener_for(home) is None

"""The ledger's storage interface (state/work/backend.py) and its file backend.

The behaviour is proved by the ledger's own suites (the state machine, the crash points,
the CLI, the API, the stress run), which go through the interface; these pin the interface
itself, on both backends (the home's files, and a PostgreSQL ledger named by the home's
``[ledger] url``: tests/support/ledger_backends.py): each backend implements every method,
transactions join in one order, leases are given by the backend's clock (the database's
on PostgreSQL), appending is a compare-and-set, and pages have the same cursors.
"""

from __future__ import annotations

import inspect
import threading
from datetime import datetime, timedelta, timezone
from pathlib import Path

import pytest

from state.clock import Fixed, using
from state.errors import CaptainError
from state.work import backend, ledger
from state.work.files import FileBackend

T0 = datetime(2031, 5, 1, 9, 0, tzinfo=timezone.utc)


def members(protocol: type) -> set[str]:
    return {
        name
        for name, value in vars(protocol).items()
        if not name.startswith("_") and (inspect.isfunction(value) or name == "name")
    }


def test_each_backend_implements_the_whole_interface(tmp_path: Path, ledgers) -> None:
    chosen = backend.backend_for(ledgers.home(tmp_path / "home"))
    if ledgers.postgres:
        from state.work.pg_backend import PostgresBackend as expected

        assert chosen.name == "postgresql"
    else:
        expected = FileBackend
        assert chosen.name == "files"
    assert isinstance(chosen, expected)
    for protocol in (backend.LedgerReader, backend.LedgerWriter, backend.LedgerBackend):
        for name in members(protocol):
            assert hasattr(chosen, name), f"{expected.__name__} lacks {protocol.__name__}.{name}"
            if name != "name":
                wanted = inspect.signature(getattr(protocol, name))
                got = inspect.signature(getattr(expected, name))
                assert list(got.parameters) == list(wanted.parameters), name


def test_a_transaction_inside_another_joins_it_in_one_order(tmp_path: Path, ledgers) -> None:
    home = ledgers.home(tmp_path / "home")
    item = ledger.accept(home, source="chat", input={"text": "x"}, requester="alice")
    with ledger.capacity_transaction(home):
        assert ledger.has_free_slot(home)
        claimed = ledger.claim_held(home, item.work_id, holder="worker")  # joins: no wait
        with backend.backend_for(home).transaction(item.work_id, ledger=True):
            pass  # both already held by this thread
    assert claimed.state == "running"
    with ledger._item_transaction(home, item.work_id), pytest.raises(CaptainError) as err:
        with ledger.capacity_transaction(home):
            pass  # the ledger after an item: refused, never a deadlock
    assert err.value.code == "store_error"


def test_another_thread_waits_for_the_ledger(tmp_path: Path, ledgers) -> None:
    home = ledgers.home(tmp_path / "home")
    entered = threading.Event()
    with ledger.capacity_transaction(home):

        def other() -> None:
            with ledger.capacity_transaction(home):
                entered.set()

        thread = threading.Thread(target=other)
        thread.start()
        assert not entered.wait(0.3), "a second thread joined a transaction not its own"
    thread.join(10)
    assert entered.is_set()


def test_leases_are_given_by_the_backends_clock(tmp_path: Path, ledgers) -> None:
    home = ledgers.home(tmp_path / "home")
    if ledgers.postgres:
        # the database's clock, never this host's: a lease taken here expires by the same
        # clock on every other host; the local clock is fixed years away to tell them apart
        with ledgers.connect(ledgers.urls[-1]) as db:

            def db_now() -> datetime:
                return db.execute("SELECT clock_timestamp()").fetchone()[0]

            with using(Fixed(T0)):
                before = db_now()
                assert before <= backend.backend_for(home).now() <= db_now()
                item = ledger.accept(home, source="chat", input={"text": "x"}, requester="alice")
                claimed = ledger.claim(home, item.work_id, holder="worker")
                after = db_now()
        times = [e.at for e in ledger.events(home, item.work_id)]
        assert before <= times[0] <= times[1] <= after and T0 not in times
        expected = times[1] + timedelta(seconds=ledger.lease_seconds(home))
        assert claimed.attempts[-1].lease_expires_at == expected
        return
    with using(Fixed(T0)):
        assert backend.backend_for(home).now() == T0
        item = ledger.accept(home, source="chat", input={"text": "x"}, requester="alice")
        claimed = ledger.claim(home, item.work_id, holder="worker")
    expected = T0 + timedelta(seconds=ledger.lease_seconds(home))
    assert claimed.attempts[-1].lease_expires_at == expected
    assert [e.at for e in ledger.events(home, item.work_id)] == [T0, T0]


def test_append_is_a_compare_and_set(tmp_path: Path, ledgers) -> None:
    home = ledgers.home(tmp_path / "home")
    item = ledger.accept(home, source="chat", input={"text": "x"}, requester="alice", at=T0)
    first = ledger.events(home, item.work_id)[0]
    chosen = backend.backend_for(home)
    with chosen.transaction(item.work_id) as tx:
        tx.append(item.work_id, first)  # the same event again: already there
    other = first.model_copy(update={"actor": "mallory"})
    with pytest.raises(CaptainError) as err, chosen.transaction(item.work_id) as tx:
        tx.append(item.work_id, other)
    assert err.value.code == "message_conflict"
    assert ledger.events(home, item.work_id) == [first]
    assert ledger.load(home, item.work_id) == item


def test_pages_have_the_same_cursors_on_every_backend(tmp_path: Path, ledgers) -> None:
    home = ledgers.home(tmp_path / "home")
    ids = [
        ledger.accept(
            home, source="chat" if n % 2 else "webhook", input={"n": n}, requester="alice", at=T0
        ).work_id
        for n in range(5)
    ]
    assert ids == sorted(ids)
    chat = [w for n, w in enumerate(ids) if n % 2]
    seen, after = [], None
    while True:
        items, after = ledger.page(home, limit=2, after=after)
        seen.append(([i.work_id for i in items], after))
        if after is None:
            break
    assert seen == [(ids[0:2], ids[1]), (ids[2:4], ids[3]), (ids[4:], None)]
    assert ledger.page(home, source="chat", limit=2) == ([ledger.get(home, w) for w in chat], None)
    assert ledger.page(home, source="chat", limit=1)[1] == chat[0]
    assert ledger.page(home, state="running", limit=5) == ([], None)
    assert ledger.page(home, limit=5, after=ids[-1]) == ([], None)

"""The ledger's storage interface (state/work/backend.py) and its file backend.

The behaviour is proved by the ledger's own suites (the state machine, the crash points,
the CLI, the API, the stress run), which go through the interface; these pin the interface
itself: the file backend implements every method, transactions join in one order, and
leases are given by the backend's clock.
"""

from __future__ import annotations

import inspect
import threading
from datetime import datetime, timedelta, timezone
from pathlib import Path

import pytest

from state.clock import Fixed, using
from state.errors import CaptainError
from state.home import Home
from state.work import backend, ledger
from state.work.files import FileBackend

T0 = datetime(2031, 5, 1, 9, 0, tzinfo=timezone.utc)


def members(protocol: type) -> set[str]:
    return {name for name, value in vars(protocol).items()
            if not name.startswith("_") and (inspect.isfunction(value) or name == "name")}


def test_the_file_backend_implements_the_whole_interface(tmp_path: Path) -> None:
    chosen = backend.backend_for(Home(tmp_path / "home"))
    assert isinstance(chosen, FileBackend) and chosen.name == "files"
    for protocol in (backend.LedgerReader, backend.LedgerWriter, backend.LedgerBackend):
        for name in members(protocol):
            assert hasattr(chosen, name), f"FileBackend lacks {protocol.__name__}.{name}"
            if name != "name":
                wanted = inspect.signature(getattr(protocol, name))
                got = inspect.signature(getattr(FileBackend, name))
                assert list(got.parameters) == list(wanted.parameters), name


def test_a_transaction_inside_another_joins_it_in_one_order(tmp_path: Path) -> None:
    home = Home(tmp_path / "home")
    item = ledger.accept(home, source="chat", input={"text": "x"}, requester="alice")
    with ledger.capacity(home):
        assert ledger.has_free_slot(home)
        claimed = ledger.claim_held(home, item.work_id, holder="worker")  # joins: no wait
        with backend.backend_for(home).transaction(item.work_id, ledger=True):
            pass  # both already held by this thread
    assert claimed.state == "running"
    with ledger._lock(home, item.work_id), pytest.raises(CaptainError) as err:
        with ledger.capacity(home):
            pass  # the ledger after an item: refused, never a deadlock
    assert err.value.code == "store_error"


def test_another_thread_waits_for_the_ledger(tmp_path: Path) -> None:
    home = Home(tmp_path / "home")
    entered = threading.Event()
    with ledger.capacity(home):
        def other() -> None:
            with ledger.capacity(home):
                entered.set()
        thread = threading.Thread(target=other)
        thread.start()
        assert not entered.wait(0.3), "a second thread joined a transaction not its own"
    thread.join(10)
    assert entered.is_set()


def test_leases_are_given_by_the_backends_clock(tmp_path: Path) -> None:
    home = Home(tmp_path / "home")
    with using(Fixed(T0)):
        assert backend.backend_for(home).now() == T0
        item = ledger.accept(home, source="chat", input={"text": "x"}, requester="alice")
        claimed = ledger.claim(home, item.work_id, holder="worker")
    expected = T0 + timedelta(seconds=ledger.lease_seconds(home))
    assert claimed.attempts[-1].lease_expires_at == expected
    assert [e.at for e in ledger.events(home, item.work_id)] == [T0, T0]

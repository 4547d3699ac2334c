"""The captain's fast path (``state.crew_side.captain``: ``tell``, ``answer`` and one
``wait`` poll on plain records, #28) writes exactly what the protocol writes, refuses as it
refuses, and leaves anything unusual to the full path, which quarantines as it always did.

Each story runs twice from copies of one home, under the same fixed clock: once on the fast
path, once on the protocol; the two homes must then hold the same bytes.
"""

from __future__ import annotations

import shutil
from datetime import datetime, timezone
from pathlib import Path

import pytest
from conftest import crew_ctx
from support.crew import EDITOR, hire

from state.clock import Fixed, using
from state.crew import notify, protocol
from state.crew.guards import CAPTAIN
from state.crew_side import captain, door, plain
from state.errors import CaptainError
from state.home import Home
from state.work import ledger

AT = datetime(2026, 12, 1, 12, 0, 0, 123456, tzinfo=timezone.utc)


def _twins(tmp_path: Path, project: Path, story) -> tuple[Home, Home, object]:
    """One home after ``story``, and an exact copy of it."""
    first = Home(tmp_path / "fast")
    r = hire(first, project, **EDITOR)
    story(first, r)
    shutil.copytree(first.root, tmp_path / "full", symlinks=True)
    return first, Home(tmp_path / "full"), r


def _files(home: Home) -> dict[str, bytes]:
    return {
        str(p.relative_to(home.root)): p.read_bytes()
        for p in sorted(home.root.rglob("*"))
        if p.is_file() and "locks" not in p.parts
    }


def _asked(home: Home, r) -> None:
    protocol.inbox(home, "Jack", deliver=lambda b: None, ctx=crew_ctx(r))
    protocol.ask(home, "Jack", "Which way?", ctx=crew_ctx(r))


def test_tell_poll_and_answer_write_the_protocols_bytes(tmp_path, project):
    fast_home, full_home, r = _twins(tmp_path, project, _asked)
    question = fast_home.store.read_json(fast_home.snapshot_path("jack"))["question"]
    qid = question["question_id"]
    with using(Fixed(AT)):
        told = captain.tell(
            fast_home, "Jack", "also this", assignment_id=r.assignment_id, ctx=CAPTAIN
        )
        polled = captain.poll(fast_home, "Jack", ctx=CAPTAIN)
        answered = captain.answer(
            fast_home, "Jack", qid, "This way", assignment_id=r.assignment_id, ctx=CAPTAIN
        )
        again = captain.poll(fast_home, None, ctx=CAPTAIN)  # the answer acknowledged it
    with using(Fixed(AT)):
        told_full = protocol.tell(full_home, "Jack", "also this", assignment_id=r.assignment_id)
        polled_full = notify.wait(full_home, "Jack", timeout=0)
        answered_full = protocol.answer(
            full_home, "Jack", qid, "This way", assignment_id=r.assignment_id
        )
        again_full = notify.wait(full_home, None, timeout=0)
    assert _files(fast_home) == _files(full_home)
    assert told.message_id == told_full.message_id
    assert (polled.delivery_id, polled.status, polled.question_id) == (
        polled_full.delivery_id,
        "asked",
        qid,
    )
    assert again is None and again_full is None
    assert answered.message_id == answered_full.message_id == f"msg_{qid}"
    assert f"acks/jack/{polled.delivery_id}.json" in _files(fast_home)


REFUSALS = {
    # name: (setup(home, r), call(home, r, qid) on the door, the same on the protocol)
    "tell: the same text twice": (
        lambda h, r: protocol.tell(h, "Jack", "more", assignment_id=r.assignment_id),
        lambda h, r, q: door.tell(h, "Jack", "more", assignment_id=r.assignment_id, ctx=CAPTAIN),
        lambda h, r, q: protocol.tell(h, "Jack", "more", assignment_id=r.assignment_id),
    ),
    "tell: a stale assignment": (
        None,
        lambda h, r, q: door.tell(h, "Jack", "more", assignment_id="asg_OLD", ctx=CAPTAIN),
        lambda h, r, q: protocol.tell(h, "Jack", "more", assignment_id="asg_OLD"),
    ),
    "tell: an unknown crew": (
        None,
        lambda h, r, q: door.tell(h, "Nobody", "more", assignment_id=r.assignment_id, ctx=CAPTAIN),
        lambda h, r, q: protocol.tell(h, "Nobody", "more", assignment_id=r.assignment_id),
    ),
    "tell: by a crew": (
        None,
        lambda h, r, q: door.tell(
            h, "Jack", "more", assignment_id=r.assignment_id, ctx=crew_ctx(r)
        ),
        lambda h, r, q: protocol.tell(
            h, "Jack", "more", assignment_id=r.assignment_id, ctx=crew_ctx(r)
        ),
    ),
    "tell: a control character": (
        None,
        lambda h, r, q: door.tell(
            h, "Jack", "bell\x07", assignment_id=r.assignment_id, ctx=CAPTAIN
        ),
        lambda h, r, q: protocol.tell(h, "Jack", "bell\x07", assignment_id=r.assignment_id),
    ),
    "answer: not its question": (
        None,
        lambda h, r, q: door.answer(
            h, "Jack", "q_OTHER", "yes", assignment_id=r.assignment_id, ctx=CAPTAIN
        ),
        lambda h, r, q: protocol.answer(h, "Jack", "q_OTHER", "yes", assignment_id=r.assignment_id),
    ),
    "answer: twice": (
        lambda h, r: protocol.answer(
            h, "Jack", _qid(h), "yes", assignment_id=r.assignment_id, ctx=CAPTAIN
        ),
        lambda h, r, q: door.answer(
            h, "Jack", q, "again", assignment_id=r.assignment_id, ctx=CAPTAIN
        ),
        lambda h, r, q: protocol.answer(h, "Jack", q, "again", assignment_id=r.assignment_id),
    ),
    "answer: a stale assignment": (
        None,
        lambda h, r, q: door.answer(h, "Jack", q, "yes", assignment_id="asg_OLD", ctx=CAPTAIN),
        lambda h, r, q: protocol.answer(h, "Jack", q, "yes", assignment_id="asg_OLD"),
    ),
    "wait: an unknown crew": (
        None,
        lambda h, r, q: door.poll(h, "Nobody", ctx=CAPTAIN),
        lambda h, r, q: notify.wait(h, "Nobody", timeout=0),
    ),
    "wait: returned and not acknowledged": (
        lambda h, r: notify.wait(h, "Jack", timeout=0),
        lambda h, r, q: door.poll(h, "Jack", ctx=CAPTAIN),
        lambda h, r, q: notify.wait(h, "Jack", timeout=0),
    ),
    "wait: by a crew": (
        None,
        lambda h, r, q: door.poll(h, "Jack", ctx=crew_ctx(r)),
        lambda h, r, q: notify.wait(h, "Jack", timeout=0, ctx=crew_ctx(r)),
    ),
}


def _qid(home: Home) -> str:
    return home.store.read_json(home.snapshot_path("jack"))["question"]["question_id"]


def _outcome(fn) -> tuple:
    try:
        fn()
    except CaptainError as err:
        return ("refused", err.code, err.message, err.extra)
    return ("done",)


@pytest.mark.parametrize("scenario", sorted(REFUSALS))
def test_the_fast_path_refuses_as_the_protocol_does_and_writes_nothing(tmp_path, project, scenario):
    setup, fast, full = REFUSALS[scenario]

    def story(h, r):
        _asked(h, r)
        if setup is not None:
            setup(h, r)

    fast_home, full_home, r = _twins(tmp_path, project, story)
    before = _files(fast_home)
    got = _outcome(lambda: fast(fast_home, r, _qid(fast_home)))
    assert got[0] == "refused", got
    assert _files(fast_home) == before, "a refusal writes nothing"
    assert got == _outcome(lambda: full(full_home, r, _qid(full_home)))


def test_a_damaged_notification_is_declined_and_quarantined_by_the_full_path(tmp_path, project):
    """The plain reader never judges a bad record: wait's poll leaves it to the models,
    which quarantine it with the same reason as a wait on the full path, and the poll
    still answers."""

    def story(h, r):
        _asked(h, r)
        (h.notifications_dir("jack") / "dlv_01BROKEN.json").write_bytes(b'{"schema": 1, "x"')

    fast_home, full_home, r = _twins(tmp_path, project, story)
    with pytest.raises(plain.Unsure):
        captain.poll(fast_home, "Jack", ctx=CAPTAIN)  # declines before writing anything
    with using(Fixed(AT)):
        got = door.poll(fast_home, "Jack", ctx=CAPTAIN)
    with using(Fixed(AT)):
        want = notify.wait(full_home, "Jack", timeout=0)
    assert got is not None and got.status == "asked"
    assert got.delivery_id == want.delivery_id
    assert fast_home.store.quarantined == full_home.store.quarantined
    ((path, reason),) = fast_home.store.quarantined
    assert path == "notifications/jack/dlv_01BROKEN.json" or path.endswith("dlv_01BROKEN.json")
    assert reason
    fast_files = {k: v for k, v in _files(fast_home).items() if not k.startswith("quarantine/")}
    full_files = {k: v for k, v in _files(full_home).items() if not k.startswith("quarantine/")}
    assert fast_files == full_files


def test_a_crew_with_anything_to_settle_takes_the_full_path(tmp_path, project):
    """An ``asked`` event whose notification a killed writer never wrote: the fast poll
    declines, and the full path writes the notification and hands it out."""

    def story(h, r):
        _asked(h, r)
        for n in h.notifications_dir("jack").iterdir():
            n.unlink()

    fast_home, _, r = _twins(tmp_path, project, story)
    with pytest.raises(plain.Unsure):
        captain.poll(fast_home, "Jack", ctx=CAPTAIN)
    with pytest.raises(plain.Unsure):  # tell looks before it writes, too
        captain.tell(fast_home, "Jack", "x", assignment_id=r.assignment_id, ctx=CAPTAIN)
    got = door.poll(fast_home, "Jack", ctx=CAPTAIN)
    assert got is not None and got.status == "asked"


# -- work list ----------------------------------------------------------------------------------


def _ledger_home(tmp_path: Path) -> Home:
    """Items of every kind a listing shows: queued, running (an attempt), succeeded with
    a cost, failed, cancelled, webhook and chat sources."""
    home = Home(tmp_path / "ledger-home")
    made = [
        ledger.accept(home, source=source, input={"n": n}, requester="captain")
        for n, source in enumerate(("chat", "webhook", "chat", "chat", "webhook", "chat"))
    ]
    for item in made[1:4]:
        ledger.claim(home, item.work_id, holder="worker")
    ledger.report(home, made[1].work_id, 1, "succeeded", actor="worker", cost_usd=0.25)
    ledger.report(home, made[2].work_id, 1, "failed", actor="worker", reason="broke")
    ledger.cancel(home, made[4].work_id, actor="captain", reason="not needed")
    return home


PAGES = [
    {"state": None, "source": None, "limit": 50, "after": None},
    {"state": None, "source": None, "limit": 2, "after": None},
    {"state": "queued", "source": None, "limit": 50, "after": None},
    {"state": None, "source": "chat", "limit": 1, "after": None},
    {"state": "running", "source": "chat", "limit": 50, "after": None},
]


def test_a_work_list_page_is_the_ledgers_row_for_row(tmp_path):
    home = _ledger_home(tmp_path)
    for ask in PAGES:
        items, cursor = captain.work_page(home, **ask)
        full, full_cursor = ledger.page(home, **ask)
        assert [captain.public(i) for i in items] == [ledger.public(home, i) for i in full], ask
        assert cursor == full_cursor, ask
        if cursor:  # and the next page from its cursor
            rest, _ = captain.work_page(home, **{**ask, "after": cursor})
            full_rest, _ = ledger.page(home, **{**ask, "after": cursor})
            assert [i.work_id for i in rest] == [i.work_id for i in full_rest], ask
    assert {i.state for i in captain.work_page(home, **PAGES[0])[0]} == {
        "queued",
        "running",
        "succeeded",
        "failed",
        "cancelled",
    }


@pytest.mark.parametrize(
    "ask",
    [
        {"state": "asleep", "source": None, "limit": 5, "after": None},
        {"state": None, "source": "email", "limit": 5, "after": None},
        {"state": None, "source": None, "limit": 0, "after": None},
        {"state": None, "source": None, "limit": 5, "after": "not-a-cursor"},
    ],
)
def test_a_bad_filter_is_refused_as_the_ledger_refuses_it(tmp_path, ask):
    home = _ledger_home(tmp_path)
    assert _outcome(lambda: captain.work_page(home, **ask))[0] == "refused"
    assert _outcome(lambda: captain.work_page(home, **ask)) == _outcome(
        lambda: ledger.page(home, **ask)
    )


def test_an_item_behind_or_damaged_is_left_to_the_full_path(tmp_path):
    """A cache behind its events (a writer killed before it republished) is folded by the
    full path; a damaged one is quarantined by it, with the reason it always gave."""
    home = _ledger_home(tmp_path)
    first = sorted(p.name for p in (home.root / "work").iterdir())[0]
    (home.root / "work" / first / "item.json").unlink()
    with pytest.raises(plain.Unsure):
        captain.work_page(home, **PAGES[0])
    items, _ = door.work_page(home, **PAGES[0])
    assert first in [i.work_id for i in items]  # folded from its events
    second = sorted(p.name for p in (home.root / "work").iterdir())[1]
    (home.root / "work" / second / "item.json").write_bytes(b"{broken")
    twin = Home(tmp_path / "twin")
    shutil.rmtree(twin.root, ignore_errors=True)
    shutil.copytree(home.root, twin.root, symlinks=True)
    got, _ = door.work_page(home, **PAGES[0])
    want, _ = ledger.page(twin, **PAGES[0])
    assert [door.work_public(home, i) for i in got] == [ledger.public(twin, i) for i in want]
    assert home.store.quarantined == twin.store.quarantined
    assert any("item.json" in path for path, _ in home.store.quarantined)


def test_a_database_ledger_is_left_to_its_driver(tmp_path, monkeypatch):
    home = _ledger_home(tmp_path)
    monkeypatch.setenv("CAPTAIN_LEDGER_URL", "postgresql://nobody@127.0.0.1:9/none")
    with pytest.raises(plain.Unsure):
        captain.work_page(home, **PAGES[0])

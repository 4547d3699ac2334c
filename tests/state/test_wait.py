"""Notifications and ``wait`` (state/crew/notify.py), crew signals, repair of side records."""

from __future__ import annotations

import os
import subprocess
import sys
import threading
import time
from datetime import timedelta

import pytest
from conftest import REPO, crew_ctx
from support.crew import hire, refused

from state.clock import now
from state.crew import crewlog, guards, mailbox, notify, protocol
from state.crew.guards import Context
from state.errors import CaptainError
from state.home import DEFAULT_WAIT_TIMEOUT, Home
from state.ids import DELIVERY, QUESTION, new_id
from state.records import (
    SUMMARY_MAX,
    Asked,
    Assigned,
    AssignmentSpec,
    BouncedMail,
    CrewSnapshot,
    Dismissed,
    Finished,
)
from state.store import encode

# -- helpers --------------------------------------------------------------------------------


def read_all(home: Home, r):
    return protocol.inbox(home, r.crew, deliver=lambda batch: None, ctx=crew_ctx(r))


def finish(home: Home, r, report: str = "changed it; checks pass"):
    read_all(home, r)
    return protocol.done(home, r.crew, report, ctx=crew_ctx(r))


def no_sleep(seconds: float) -> None:
    raise AssertionError(f"wait slept {seconds}s although it was told to poll once")


def notification_files(home: Home, key: str) -> dict[str, bytes]:
    d = home.notifications_dir(key)
    return {name: (d / f"{name}.json").read_bytes() for name in home.store.names(d)}


def write_event_by_hand(home: Home, key: str, event) -> None:
    """What a writer killed right after appending its event leaves behind: the event file,
    no side records, and a snapshot cache that is behind."""
    path = home.event_path(key, event.seq)
    home.store.create_once(path, encode(event))


def current_seq(home: Home, key: str) -> int:
    return max(e.seq for e in crewlog.events(home, key))


# -- polling, returning once, acknowledging -------------------------------------------------


def test_wait_with_timeout_zero_polls_once_and_returns_none(home, project):
    hire(home, project)
    assert notify.wait(home, "Jack", timeout=0, sleep=no_sleep) is None
    assert notify.wait(home, None, timeout=0, sleep=no_sleep) is None


def test_wait_with_a_short_timeout_returns_none(home, project):
    hire(home, project)
    assert notify.wait(home, "Jack", timeout=0.15) is None


def test_wait_default_timeout_is_a_day_and_config_overrides_it(home, project):
    assert home.wait_timeout() == DEFAULT_WAIT_TIMEOUT == 86400.0
    hire(home, project)
    (home.root / "config.toml").write_text("[crew]\nwait_timeout = 0\n")
    fresh = Home(home.root)
    assert fresh.wait_timeout() == 0
    assert notify.wait(fresh, "Jack", sleep=no_sleep) is None  # timeout omitted: from config


def test_wait_for_an_unknown_crew(home, project):
    refused("unknown_crew", notify.wait, home, "Nobody", timeout=0)
    refused("invalid_name", notify.wait, home, "../x", timeout=0)


def test_a_notification_carries_the_envelope_fields(home, project):
    r = hire(home, project)
    q = protocol.ask(home, "Jack", "Which behaviour is intended?", ctx=crew_ctx(r))
    n = notify.wait(home, "Jack", timeout=0)
    assert (n.status, n.delivery_id, n.crew, n.assignment_id, n.question_id) == (
        "asked",
        q.delivery_id,
        "Jack",
        r.assignment_id,
        q.question_id,
    )
    assert n.summary == "Which behaviour is intended?"
    task_mail = mailbox.messages(home, "jack")[0]
    assert n.queued_at == task_mail.queued_at  # the newest mail the crew had when it asked


def test_a_notification_is_returned_once_then_unacknowledged(home, project):
    r = hire(home, project)
    q = protocol.ask(home, "Jack", "which?", ctx=crew_ctx(r))
    assert notify.wait(home, "Jack", timeout=0).delivery_id == q.delivery_id
    err = refused("unacknowledged", notify.wait, home, "Jack", timeout=0)
    assert err.extra["delivery_id"] == q.delivery_id
    assert err.extra["status"] == "asked"
    assert err.extra["summary"] == "which?"
    assert q.delivery_id in err.message
    # also across all crew
    err = refused("unacknowledged", notify.wait, home, None, timeout=0)
    assert err.extra["delivery_id"] == q.delivery_id


def test_a_refusal_quoting_a_question_closes_its_sentence_once(home, project):
    """The question's own "?" ends the quoted sentence: never "format?. Run" (state.vocab
    .ended is the one place a sentence is closed after someone's words)."""
    r = hire(home, project)
    protocol.ask(home, "Jack", "Keep the old session format?", ctx=crew_ctx(r))
    notify.wait(home, "Jack", timeout=0)
    err = refused("unacknowledged", notify.wait, home, "Jack", timeout=0)
    assert "format? Run captain wait Jack --ack" in err.message, err.message
    assert "?." not in err.message


def test_ack_returns_the_next_notification(home, project):
    r = hire(home, project)
    q1 = protocol.ask(home, "Jack", "first?", ctx=crew_ctx(r))
    first = notify.wait(home, "Jack", timeout=0)
    assert first.delivery_id == q1.delivery_id
    # the answer acknowledges its `asked` (README); acking it again is harmless
    protocol.answer(home, "Jack", q1.question_id, "a", assignment_id=r.assignment_id)
    q2 = protocol.ask(home, "Jack", "second?", ctx=crew_ctx(r))
    second = notify.wait(home, "Jack", timeout=0, ack=q1.delivery_id)
    assert second.delivery_id == q2.delivery_id and second.question_id == q2.question_id
    assert notify.wait(home, "Jack", timeout=0, ack=q2.delivery_id) is None
    assert notify.wait(home, "Jack", timeout=0) is None
    assert mailbox.unacknowledged(home, "jack") == []


def test_ack_of_an_unknown_delivery(home, project):
    hire(home, project)
    gibbs = hire(home, project, "Gibbs")
    refused("unknown_delivery", notify.wait, home, "Jack", timeout=0, ack="dlv_NOPE")
    refused("unknown_delivery", notify.wait, home, None, timeout=0, ack="dlv_NOPE")
    refused("unknown_delivery", notify.wait, home, "Jack", timeout=0, ack="../../home")
    refused("unknown_delivery", notify.wait, home, "Jack", timeout=0, ack="")
    # a delivery of another crew is not Jack's
    g = protocol.ask(home, "Gibbs", "q?", ctx=crew_ctx(gibbs))
    refused("unknown_delivery", notify.wait, home, "Jack", timeout=0, ack=g.delivery_id)
    assert mailbox.acked(home, "gibbs") == set()


def test_ack_before_it_was_returned_skips_it(home, project):
    r = hire(home, project)
    q = protocol.ask(home, "Jack", "which?", ctx=crew_ctx(r))
    assert notify.wait(home, "Jack", timeout=0, ack=q.delivery_id) is None
    assert notify.wait(home, "Jack", timeout=0) is None


def test_acking_done_returns_one_idle_and_not_a_second(home, project):
    r = hire(home, project)
    d = finish(home, r)
    n = notify.wait(home, "Jack", timeout=0)
    assert (n.status, n.delivery_id) == ("done", d.delivery_id)
    idle = notify.wait(home, "Jack", timeout=0, ack=d.delivery_id)
    assert idle is not None and idle.status == "idle"
    assert (idle.crew, idle.assignment_id) == ("Jack", r.assignment_id)
    assert idle.delivery_id != d.delivery_id
    # the idle is already settled: no unacknowledged refusal, and no second idle
    assert notify.wait(home, "Jack", timeout=0) is None
    assert notify.wait(home, "Jack", timeout=0, ack=d.delivery_id) is None
    statuses = [x.status for x in mailbox.notifications(home, "jack")]
    assert statuses.count("idle") == 1
    assert mailbox.unacknowledged(home, "jack") == []


def test_wait_for_all_crew(home, project):
    jack = hire(home, project, "Jack")
    gibbs = hire(home, project, "Gibbs")
    assert notify.wait(home, None, timeout=0) is None
    qg = protocol.ask(home, "Gibbs", "gibbs?", ctx=crew_ctx(gibbs))
    n = notify.wait(home, None, timeout=0)
    assert (n.crew, n.delivery_id) == ("Gibbs", qg.delivery_id)
    qj = protocol.ask(home, "Jack", "jack?", ctx=crew_ctx(jack))
    n = notify.wait(home, None, timeout=0, ack=qg.delivery_id)
    assert (n.crew, n.delivery_id) == ("Jack", qj.delivery_id)
    # Gibbs' own wait is not blocked by Jack's returned-but-unacked notification
    assert notify.wait(home, "Gibbs", timeout=0) is None


def test_wait_returns_oldest_first_across_crew(home, project):
    jack = hire(home, project, "Jack")
    gibbs = hire(home, project, "Gibbs")
    qj = protocol.ask(home, "Jack", "jack?", ctx=crew_ctx(jack))
    qg = protocol.ask(home, "Gibbs", "gibbs?", ctx=crew_ctx(gibbs))
    assert notify.wait(home, None, timeout=0).delivery_id == qj.delivery_id
    assert notify.wait(home, None, timeout=0, ack=qj.delivery_id).delivery_id == qg.delivery_id


def test_wait_all_sees_crew_recruited_while_waiting(home, project):
    result = {}

    def waiter():
        result["n"] = notify.wait(Home(home.root), None, timeout=10)

    t = threading.Thread(target=waiter)
    t.start()
    try:
        r = hire(home, project)
        q = protocol.ask(home, "Jack", "new here?", ctx=crew_ctx(r))
    finally:
        t.join(15)
    assert not t.is_alive()
    assert result["n"] is not None and result["n"].delivery_id == q.delivery_id


def test_wait_blocks_until_another_thread_writes(home, project):
    r = hire(home, project)
    result: dict = {}
    started = threading.Event()

    def waiter():
        started.set()
        try:
            result["n"] = notify.wait(Home(home.root), "Jack", timeout=10)
        except BaseException as exc:  # noqa: BLE001 - reported below
            result["err"] = exc

    t = threading.Thread(target=waiter)
    t.start()
    started.wait(5)
    q = protocol.ask(home, "Jack", "are you there?", ctx=crew_ctx(r))
    t.join(15)
    assert not t.is_alive()
    assert "err" not in result, result.get("err")
    n = result["n"]
    assert n is not None, "wait timed out instead of returning the notification"
    assert (n.status, n.delivery_id) == ("asked", q.delivery_id)


def test_wait_blocks_until_another_process_writes(home, project):
    r = hire(home, project)
    result: dict = {}

    def waiter():
        result["n"] = notify.wait(Home(home.root), "Jack", timeout=20)

    t = threading.Thread(target=waiter)
    t.start()
    code = (
        "import sys\nfrom state.home import Home\nfrom state.crew import protocol\n"
        "from state.crew.protocol import Context\n"
        "ev = protocol.ask(Home(sys.argv[1]), 'Jack', 'from afar?', ctx=Context.from_env())\n"
        "print(ev.delivery_id)\n"
    )
    env = {k: v for k, v in os.environ.items() if not k.startswith("CAPTAIN_")}
    env.update(r.env, PYTHONPATH=str(REPO))
    proc = subprocess.run(
        [sys.executable, "-c", code, str(home.root)],
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )
    t.join(25)
    assert proc.returncode == 0, proc.stderr
    assert not t.is_alive()
    assert result["n"] is not None and result["n"].delivery_id == proc.stdout.strip()


def test_only_one_of_two_waiters_gets_a_notification(home, project):
    r = hire(home, project)
    results = []
    lock = threading.Lock()

    def waiter():
        try:
            n = notify.wait(Home(home.root), "Jack", timeout=5.0)
        except CaptainError as exc:
            n = exc.code
        with lock:
            results.append(n)

    threads = [threading.Thread(target=waiter) for _ in range(2)]
    for t in threads:
        t.start()
    q = protocol.ask(home, "Jack", "who gets me?", ctx=crew_ctx(r))
    for t in threads:
        t.join(10)
    got = [n for n in results if not isinstance(n, str) and n is not None]
    assert len(results) == 2
    assert [n.delivery_id for n in got] == [q.delivery_id]


# -- summaries ------------------------------------------------------------------------------


def test_summaries_are_capped_at_1600_characters(home, project):
    r = hire(home, project)
    protocol.ask(home, "Jack", "Q" * 10000, ctx=crew_ctx(r))
    n = notify.wait(home, "Jack", timeout=0)
    assert len(n.summary) == SUMMARY_MAX
    s = notify.signal(home, "Jack", "error", "E" * 5000, at=now())
    assert len(s.summary) == SUMMARY_MAX


# -- crew signals ---------------------------------------------------------------------------


def test_signal_older_than_the_newest_message_is_ignored(home, project):
    r = hire(home, project)
    m = protocol.tell(home, "Jack", "please also", assignment_id=r.assignment_id)
    stale = notify.signal(home, "Jack", "idle", "idle", at=m.queued_at - timedelta(seconds=1))
    assert stale is None
    assert mailbox.notifications(home, "jack") == []
    fresh = notify.signal(home, "Jack", "idle", "went idle", at=now())
    assert fresh is not None and fresh.status == "idle"
    assert fresh.queued_at == m.queued_at and fresh.assignment_id == r.assignment_id
    assert [n.delivery_id for n in mailbox.notifications(home, "jack")] == [fresh.delivery_id]
    assert notify.wait(home, "Jack", timeout=0).delivery_id == fresh.delivery_id


def test_signal_for_a_dismissed_or_unknown_crew_is_dropped(home, project):
    assert notify.signal(home, "Nobody", "idle", "x", at=now()) is None
    r = hire(home, project)
    read_all(home, r)
    protocol.dismiss(home, "Jack")
    assert notify.signal(home, "Jack", "idle", "x", at=now()) is None
    assert mailbox.notifications(home, "jack") == []


@pytest.mark.parametrize("status", ["working", "idle", "awaiting_approval", "held", "error"])
def test_signal_statuses(home, project, status):
    hire(home, project)
    n = notify.signal(home, "Jack", status, f"{status} now", at=now())
    assert notify.wait(home, "Jack", timeout=0).status == status == n.status


@pytest.mark.parametrize("status", ["asked", "done", "bounced", "timeout", "nonsense"])
def test_signal_refuses_statuses_that_only_protocol_events_raise(home, project, status):
    hire(home, project)
    refused("invalid_argument", notify.signal, home, "Jack", status, "x", at=now())
    assert mailbox.notifications(home, "jack") == []


def test_idle_is_raised_at_most_once_per_delivered_message(home, project):
    r = hire(home, project)
    first = notify.signal(home, "Jack", "idle", "went idle", at=now())
    assert first is not None
    assert notify.signal(home, "Jack", "idle", "idle again", at=now()) is None
    m = protocol.tell(home, "Jack", "one more thing", assignment_id=r.assignment_id)
    second = notify.signal(home, "Jack", "idle", "idle after the tell", at=now())
    assert second is not None and second.queued_at == m.queued_at
    idles = [n for n in mailbox.notifications(home, "jack") if n.status == "idle"]
    assert [n.delivery_id for n in idles] == [first.delivery_id, second.delivery_id]


def test_a_naive_signal_time_is_taken_as_utc(home, project):
    hire(home, project)
    naive = now().replace(tzinfo=None)
    assert notify.signal(home, "Jack", "working", "busy", at=naive).status == "working"


# -- crash repair ---------------------------------------------------------------------------


def test_asked_event_without_its_notification_is_repaired_once(home, project):
    r = hire(home, project)
    event = Asked(
        seq=current_seq(home, "jack") + 1,
        at=now(),
        actor="crew",
        assignment_id=r.assignment_id,
        question_id=new_id(QUESTION),
        delivery_id=new_id(DELIVERY),
        text="killed before notifying?",
        queued_at=None,
    )
    write_event_by_hand(home, "jack", event)
    assert notification_files(home, "jack") == {}

    # the event is the truth at once: a second question is refused ...
    refused("question_pending", protocol.ask, home, "Jack", "another?", ctx=crew_ctx(r))
    # ... and that locked operation settled the missing notification
    files = notification_files(home, "jack")
    assert list(files) == [event.delivery_id]

    # later locked operations repair again: idempotent, identical bytes, still one
    protocol.tell(home, "Jack", "a follow-up", assignment_id=r.assignment_id)
    with home.store.lock(guards.lock_name("jack")):
        crewlog.open_locked(home, "jack")
    assert notification_files(home, "jack") == files

    n = notify.wait(home, "Jack", timeout=0)
    assert (n.status, n.delivery_id, n.question_id) == (
        "asked",
        event.delivery_id,
        event.question_id,
    )
    assert notification_files(home, "jack") == files
    # the snapshot cache was brought up to date
    snap = home.store.read(home.snapshot_path("jack"), CrewSnapshot)
    assert snap.seq >= event.seq
    assert snap.question is not None and snap.question.question_id == event.question_id


def test_finished_event_without_its_notification_is_repaired_by_wait(home, project):
    r = hire(home, project)
    read_all(home, r)
    event = Finished(
        seq=current_seq(home, "jack") + 1,
        at=now(),
        actor="crew",
        assignment_id=r.assignment_id,
        delivery_id=new_id(DELIVERY),
        report="killed right after the event",
        queued_at=None,
    )
    write_event_by_hand(home, "jack", event)
    assert notification_files(home, "jack") == {}
    n = notify.wait(home, "Jack", timeout=0)
    assert n is not None and (n.status, n.delivery_id) == ("done", event.delivery_id)
    files = notification_files(home, "jack")
    assert list(files) == [event.delivery_id]
    idle = notify.wait(home, "Jack", timeout=0, ack=event.delivery_id)
    assert idle.status == "idle"
    done_bytes = files[event.delivery_id]
    assert notification_files(home, "jack")[event.delivery_id] == done_bytes
    assert [x.status for x in mailbox.notifications(home, "jack")] == ["done", "idle"]
    protocol.assign(home, "Jack", "next", handoff=r.assignment_id)
    assert notification_files(home, "jack")[event.delivery_id] == done_bytes


def test_dismissed_event_without_bounces_is_repaired_once(home, project):
    r = hire(home, project)
    task = mailbox.messages(home, "jack")[0]
    bounced = BouncedMail(
        message_id=task.message_id,
        delivery_id=new_id(DELIVERY),
        queued_at=task.queued_at,
        summary=task.text,
    )
    event = Dismissed(
        seq=current_seq(home, "jack") + 1,
        at=now(),
        actor="captain",
        assignment_id=r.assignment_id,
        reason="crew dismissed",
        bounced=[bounced],
    )
    write_event_by_hand(home, "jack", event)
    assert home.store.names(home.bounces_dir("jack")) == []
    n = notify.wait(home, "Jack", timeout=0)
    assert (n.status, n.delivery_id, n.message_id) == (
        "bounced",
        bounced.delivery_id,
        task.message_id,
    )
    assert home.store.names(home.bounces_dir("jack")) == [task.message_id]
    files = notification_files(home, "jack")
    bounce_bytes = (home.bounces_dir("jack") / f"{task.message_id}.json").read_bytes()
    notify.wait(home, "Jack", timeout=0, ack=bounced.delivery_id)
    assert notification_files(home, "jack") == files
    assert (home.bounces_dir("jack") / f"{task.message_id}.json").read_bytes() == bounce_bytes


def test_assigned_event_without_its_mail_is_repaired_once(home, project):
    r = hire(home, project)
    finish(home, r)
    done = notify.wait(home, "Jack", timeout=0)
    notify.wait(home, "Jack", timeout=0, ack=done.delivery_id)
    snap, _ = crewlog.load(home, "jack")
    spec = AssignmentSpec(
        assignment_id="asg_HANDWRITTEN",
        message_id="msg_HANDWRITTEN",
        task="the next task",
        owns=[],
        allow=[],
        project_dir=snap.assignment.project_dir,
        handoff_of=r.assignment_id,
    )
    write_event_by_hand(
        home, "jack", Assigned(seq=snap.seq + 1, at=now(), actor="captain", assignment=spec)
    )
    assert not (home.mail_dir("jack") / "msg_HANDWRITTEN.json").exists()
    protocol.tell(home, "Jack", "more", assignment_id="asg_HANDWRITTEN")  # locked: repairs
    path = home.mail_dir("jack") / "msg_HANDWRITTEN.json"
    first = path.read_bytes()
    with home.store.lock(guards.lock_name("jack")):
        crewlog.open_locked(home, "jack")
    assert path.read_bytes() == first
    ctx = Context("crew", "Jack", r.incarnation_id, "asg_HANDWRITTEN")
    got = protocol.inbox(home, "Jack", deliver=lambda b: None, ctx=ctx)
    assert [(m.message_id, m.kind) for m in got] == [
        ("msg_HANDWRITTEN", "assignment"),
        (got[1].message_id, "tell"),
    ]


def test_a_running_wait_repairs_an_event_left_unsettled_after_it_started(home, project):
    """A writer killed after its event, while the captain's wait is already running: the
    wait's periodic rescan must still surface the notification (nothing is lost)."""
    r = hire(home, project)
    polling = threading.Event()
    result: dict = {}

    def sleep(seconds: float) -> None:
        polling.set()  # the wait has done its start-up repair and is now polling
        time.sleep(seconds)

    def waiter():
        result["n"] = notify.wait(Home(home.root), "Jack", timeout=2.0, sleep=sleep)

    t = threading.Thread(target=waiter)
    t.start()
    assert polling.wait(10)
    event = Asked(
        seq=current_seq(home, "jack") + 1,
        at=now(),
        actor="crew",
        assignment_id=r.assignment_id,
        question_id=new_id(QUESTION),
        delivery_id=new_id(DELIVERY),
        text="killed mid-ask",
        queued_at=None,
    )
    write_event_by_hand(home, "jack", event)
    t.join(15)
    assert not t.is_alive()
    assert result["n"] is not None, "the running wait never surfaced the unsettled event"
    assert result["n"].delivery_id == event.delivery_id

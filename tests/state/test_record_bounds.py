"""Every record the store writes fits what its reader accepts (``store.MAX_RECORD_BYTES``).

Each record type is built at its maximum: every text field at its intake limit, every list
at its maximum count, filled with the characters JSON escapes most (a control character
becomes six bytes, '"' and '\\' two) or that take most bytes in UTF-8 (four), each value
first passed through the intake rule that bounds it, so only what the intake accepts is
built. Hypothesis mixes those characters; a worst case per type is checked outright. Each
record is encoded, written through the store and read back: it must be at most the cap and
come back exactly as written. Then: the intake refusals (a stable code, the limit named,
nothing written), the store's backstop, and the dismissal that bounces any amount of mail
without one record listing it.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable
from dataclasses import dataclass
from datetime import timedelta
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from pydantic_core import to_json

from captain_tui.runtime.doorbell import BODY_LIMIT, GATES
from state.clock import now
from state.crew import crewlog, notify, protocol
from state.errors import CODES, CaptainError
from state.home import Home
from state.ids import DELIVERY, derive, new_id
from state.inputs import (
    MAX_COMMAND_BYTES,
    MAX_OWNS,
    MAX_PATH_BYTES,
    MAX_TEXT_BYTES,
    check_owns,
    check_path,
    check_stored,
    check_text,
    summarize,
)
from state.records import (
    Ack,
    Asked,
    Assigned,
    AssignmentSpec,
    Bounce,
    CrewSnapshot,
    Dismissed,
    EventFile,
    Finished,
    HomeMeta,
    Launched,
    LaunchSpec,
    Message,
    Notification,
    PaneLocator,
    Question,
    Receipt,
    Recruited,
    Returned,
    RingStamp,
)
from state.store import MAX_RECORD_BYTES, Store, encode
from state.vocab import ACTIONS, STATUSES, SUMMARY_MAX
from state.work import deliveries, ledger, tokens
from state.work.ledger_records import Attempt, Delivery, Lease, Resolution, WorkEvent, WorkItem

# -- the values: each at its intake limit, in the costliest characters ---------------------

# Allowed by check_text: '"' and '\\' escape to two bytes, '\n' and '\t' too; the rest
# are long in UTF-8 or are characters some encoders escape (U+2028, '<').
TEXT = ('"', "\\", "\n", "\t", "\u2028", "\U0001f600", "\u20ac", "a", "<")
STORED = (*TEXT, "\x00", "\x1b", "\x1f", "\x7f", "\x9b")  # a detail is never shown
PATH = ('"', "\\", "\n", "\t", "\u2028", "\U0001f600", "a", " ")
PRINTABLE = ('"', "\\", "\U0001f600", "\u20ac", "a", "<")  # names: one printable line
ANY = (*STORED, "\ufffd")  # a summary keeps control characters (summarize cuts length only)


@dataclass(frozen=True)
class Kind:
    limit: int
    bytes: bool  # the limit counts UTF-8 bytes (else characters)
    alphabet: tuple[str, ...]
    intake: Callable[[str], object]  # the rule that must accept the value
    prefix: str = ""


def _summary_ok(text: str) -> None:
    assert summarize(text) == text


KINDS = {
    # text a person types starts with a letter: all whitespace is "empty"
    "text": Kind(MAX_TEXT_BYTES, True, TEXT, lambda v: check_text(v, "text"), prefix="a"),
    "stored": Kind(MAX_TEXT_BYTES, True, STORED, lambda v: check_stored(v, "detail")),
    "path": Kind(MAX_PATH_BYTES, True, PATH, check_path, prefix="/"),
    "command": Kind(
        MAX_COMMAND_BYTES,
        True,
        TEXT,
        lambda v: check_text(v, "command", limit=MAX_COMMAND_BYTES),
        prefix="a",
    ),
    "name": Kind(ledger.LINE_MAX, False, PRINTABLE, lambda v: ledger.check_name(v, "name")),
    "revision": Kind(
        ledger.LINE_MAX, False, PRINTABLE, lambda v: ledger.check_shown(target_revision=v)
    ),
    "summary": Kind(SUMMARY_MAX, False, ANY, _summary_ok),
    # what the doorbell typed: at most BODY_LIMIT characters of mail and a sentence around
    "typed": Kind(BODY_LIMIT + 200, False, TEXT, lambda v: None),
    "source_id": Kind(deliveries.SOURCE_ID_MAX, False, PRINTABLE, str.isprintable),
    "event": Kind(100, False, PRINTABLE, str.isprintable),
}


def _cost(char: str, kind: Kind) -> float:
    """Bytes in the record per unit of the limit."""
    return (len(to_json(char)) - 2) / (len(char.encode()) if kind.bytes else 1)


def fill(kind_name: str, chars: tuple[str, ...] | None = None) -> str:
    """A value exactly at the kind's limit, cycling ``chars`` (default: the costliest)."""
    kind = KINDS[kind_name]
    chars = chars or (max(kind.alphabet, key=lambda c: _cost(c, kind)),)
    size = (lambda s: len(s.encode())) if kind.bytes else len
    pattern = "".join(chars)
    value = kind.prefix + pattern * ((kind.limit - size(kind.prefix)) // size(pattern))
    for char in pattern:  # then what still fits of the pattern, topped up with 'a'
        if size(value) + size(char) > kind.limit:
            break
        value += char
    value += "a" * (kind.limit - size(value))
    assert size(value) == kind.limit
    kind.intake(value)  # raises if the intake would refuse it
    return value


# -- the records, each with every field at its maximum ------------------------------------

CREW = "J" + "x" * 31  # the longest crew name
Fill = Callable[[str], str]


def _pane(f: Fill) -> PaneLocator:
    return PaneLocator(
        socket=f("path"),
        session=f("name"),
        window_id="@" + "9" * 19,
        pane_id="%" + "9" * 19,
        pane_pid=2**31,
    )


def _spec(f: Fill) -> AssignmentSpec:
    return AssignmentSpec(
        assignment_id=new_id("asg"),
        message_id=new_id("msg"),
        task=f("text"),
        owns=[f("path") for _ in range(MAX_OWNS)],
        allow=list(ACTIONS),
        project_dir=f("path"),
        handoff_of=new_id("asg"),
    )


def _actor(f: Fill) -> str:
    """An actor or operator: ``captain:<user>`` (a name) or, through the API, a token's ID
    and its label (a name), the longer of the two."""
    return f"token:{new_id('tok')} ({f('name')})"


def _event(**kw):
    return dict(seq=2**31, at=now(), actor="captain", **kw)


def _attempt(f: Fill, generation: int) -> Attempt:
    t = now()
    return Attempt(
        run_id=new_id("run"),
        generation=generation,
        started_at=t,
        lease_holder=f("name"),
        lease_expires_at=t,
        heartbeat_at=t,
        runtime_locator=_pane(f),
        cost_usd=1e9 - 1,
        ended_at=t,
        outcome="succeeded",
    )


def _work_event(f: Fill) -> WorkEvent:
    t = now()
    return WorkEvent(
        seq=2**31,
        at=t,
        type="resolved",
        generation=2**31,
        actor=_actor(f),
        state="cancelled",
        detail=f("stored"),
        source="assignment",
        requester=f("name"),
        target_revision=f("revision"),
        input_sha256="f" * 64,
        replay_of=new_id("wrk"),
        reason=f("text"),
        crew=CREW,
        assignment_id=new_id("asg"),
        delivery_id=new_id("whd"),
        max_attempts=ledger.MAX_ATTEMPTS,
        run_id=new_id("run"),
        lease_holder=f("name"),
        lease_expires_at=t,
        runtime_locator=_pane(f),
        cost_usd=1e9 - 1,
        runtime_stopped=True,
    )


def _work_item(f: Fill) -> WorkItem:
    t = now()
    n = ledger.MAX_ATTEMPTS
    return WorkItem(
        work_id=new_id("wrk"),
        seq=2**31,
        source="assignment",
        state="cancelled",
        generation=n,
        target_revision=f("revision"),
        input_sha256="f" * 64,
        replay_of=new_id("wrk"),
        replay_reason=f("text"),
        requester=f("name"),
        crew=CREW,
        assignment_id=new_id("asg"),
        delivery_id=new_id("whd"),
        max_attempts=n,
        created_at=t,
        updated_at=t,
        attempts=[_attempt(f, g) for g in range(1, n + 1)],
        cancel_requested=list(range(1, n + 1)),
        resolution=Resolution(
            operator=_actor(f), reason=f("text"), to="cancelled", runtime_stopped=True, at=t
        ),
    )


def _delivery(f: Fill) -> Delivery:
    event = f("event")
    t = now()
    return Delivery(
        delivery_id=new_id("whd"),
        endpoint_id="e" * 64,
        source_delivery_id=f("source_id"),
        event=event,
        received_at=t,
        body_sha256="f" * 64,
        body_bytes=deliveries.MAX_BODY_BYTES,
        raw_body_expires_at=t + timedelta(days=3650),
        # config.toml names the events; here one, of the longest name
        filter_reason=deliveries._filter({"events": [event]}, event + "x"),
        work_id=None,
    )


BUILDERS: dict[str, tuple[type, Callable[[Fill], object]]] = {
    "Recruited": (
        EventFile,
        lambda f: Recruited(
            **_event(),
            name=CREW,
            incarnation_id=new_id("inc"),
            agent="program",
            assignment=_spec(f),
            pane=_pane(f),
            launch=LaunchSpec(
                program=f("command"), cwd=f("path"), socket=f("path"), session=f("name")
            ),
        ),
    ),
    "Assigned": (EventFile, lambda f: Assigned(**_event(), assignment=_spec(f))),
    "Asked": (
        EventFile,
        lambda f: Asked(
            **_event(),
            assignment_id=new_id("asg"),
            question_id=new_id("q"),
            delivery_id=new_id("dlv"),
            text=f("text"),
            queued_at=now(),
        ),
    ),
    "Finished": (
        EventFile,
        lambda f: Finished(
            **_event(),
            assignment_id=new_id("asg"),
            delivery_id=new_id("dlv"),
            report=f("text"),
            queued_at=now(),
        ),
    ),
    # the bounces are records of their own, never listed here (however much mail bounced)
    "Dismissed": (
        EventFile,
        lambda f: Dismissed(**_event(), assignment_id=new_id("asg"), reason=f("text"), bounced=[]),
    ),
    "Launched": (EventFile, lambda f: Launched(**_event(), pane=_pane(f))),
    "CrewSnapshot": (
        CrewSnapshot,
        lambda f: CrewSnapshot(
            seq=2**31,
            name=CREW,
            incarnation_id=new_id("inc"),
            agent="program",
            recruited_at=now(),
            assignment=_spec(f),
            assigned_at=now(),
            done_at=now(),
            report=f("text"),
            question=Question(question_id=new_id("q"), text=f("text"), asked_at=now()),
            dismissed_at=now(),
            pane=_pane(f),
            launched_at=now(),
        ),
    ),
    "Message": (
        Message,
        lambda f: Message(
            message_id=f"msg_{new_id('q')}",
            crew=CREW,
            incarnation_id=new_id("inc"),
            assignment_id=new_id("asg"),
            kind="answer",
            text=f("text"),
            question_id=new_id("q"),
            queued_at=now(),
        ),
    ),
    "Receipt": (
        Receipt,
        lambda f: Receipt(
            message_id=f"msg_{new_id('q')}",
            crew=CREW,
            assignment_id=new_id("asg"),
            read_at=now(),
            via="inbox",
        ),
    ),
    "Bounce": (
        Bounce,
        lambda f: Bounce(
            message_id=f"msg_{new_id('q')}",
            crew=CREW,
            delivery_id=derive(DELIVERY, f"msg_{new_id('q')}"),
            reason=f("text"),
            bounced_at=now(),
        ),
    ),
    "Notification": (
        Notification,
        lambda f: Notification(
            delivery_id=new_id("dlv") + "-idle",
            status=max(STATUSES, key=len),
            crew=CREW,
            assignment_id=new_id("asg"),
            summary=f("summary"),
            queued_at=now(),
            created_at=now(),
            question_id=new_id("q"),
            message_id=f"msg_{new_id('q')}",
        ),
    ),
    "Ack": (Ack, lambda f: Ack(delivery_id=new_id("dlv") + "-idle", crew=CREW, acked_at=now())),
    "Returned": (
        Returned,
        lambda f: Returned(delivery_id=new_id("dlv") + "-idle", crew=CREW, returned_at=now()),
    ),
    "HomeMeta": (HomeMeta, lambda f: HomeMeta(created_at=now())),
    "RingStamp": (
        RingStamp,
        lambda f: RingStamp(
            crew=CREW,
            incarnation_id=new_id("inc"),
            head=new_id("msg"),
            rung_at=now(),
            landed=True,
            typed=f("typed"),
            body_landed=True,
            gate=max(GATES, key=len),
            held_since=now(),
            held_head=new_id("msg"),
            held_notified=new_id("msg"),
            approval_seen=True,
            checked_at=now(),
        ),
    ),
    "WorkEvent": (WorkEvent, _work_event),
    "WorkItem": (WorkItem, _work_item),
    "Lease": (
        Lease,
        lambda f: Lease(
            work_id=new_id("wrk"),
            run_id=new_id("run"),
            generation=2**31,
            holder=f("name"),
            expires_at=now(),
            heartbeat_at=now(),
        ),
    ),
    "Delivery": (Delivery, _delivery),
    "Identity": (
        deliveries.Identity,
        lambda f: deliveries.Identity(
            delivery_id=new_id("whd"), endpoint_id="e" * 64, source_delivery_id=f("source_id")
        ),
    ),
    "Rejection": (
        deliveries.Rejection,
        lambda f: deliveries.Rejection(
            rejection_id=new_id("whr"),
            endpoint_id="e" * 64,
            source_delivery_id=f("source_id"),
            event=f("event"),
            received_at=now(),
            reason=f("text"),
            body_sha256="f" * 64,
            body_bytes=deliveries.MAX_BODY_BYTES,
        ),
    ),
    "Token": (
        tokens.Token,
        lambda f: tokens.Token(
            token_id=new_id("tok"),
            role=max(tokens.ROLES, key=len),
            label=f("name"),
            sha256="f" * 64,
            created_at=now(),
            revoked_at=now(),
        ),
    ),
    "Workspace": (
        tokens.Workspace,
        lambda f: tokens.Workspace(workspace_id=new_id("ws"), created_at=now()),
    ),
}


def round_trip(store: Store, model: type, record) -> int:
    """Write ``record`` as the store does, read it back; its encoded size."""
    data = encode(record)
    assert len(data) <= MAX_RECORD_BYTES, f"{type(record).__name__}: {len(data)} bytes"
    path = store.dir("records") / f"{os.urandom(8).hex()}.json"
    assert store.create_once(path, data) is True
    assert store.read(path, model) == record
    assert encode(store.read(path, model)) == data
    assert store.quarantined == []
    return len(data)


@pytest.fixture(scope="module")
def store(tmp_path_factory) -> Store:
    return Store(tmp_path_factory.mktemp("bounds"))


@pytest.mark.parametrize("name", sorted(BUILDERS))
def test_the_worst_case_of_every_record_fits_and_reads_back(store, name):
    model, build = BUILDERS[name]
    size = round_trip(store, model, build(fill))
    if name in ("CrewSnapshot", "WorkItem", "WorkEvent", "Recruited"):
        assert size > 200_000, "the worst case is not being built"


@pytest.mark.parametrize("name", sorted(BUILDERS))
@settings(
    max_examples=12,
    deadline=None,
    derandomize=True,
    suppress_health_check=[
        HealthCheck.function_scoped_fixture,
        HealthCheck.too_slow,
        HealthCheck.data_too_large,
    ],
)
@given(data=st.data())
def test_every_record_at_its_maximum_in_any_characters_fits(store, name, data):
    def f(kind_name: str) -> str:
        chars = data.draw(
            st.lists(st.sampled_from(KINDS[kind_name].alphabet), min_size=1, max_size=3),
            label=kind_name,
        )
        return fill(kind_name, tuple(chars))

    model, build = BUILDERS[name]
    round_trip(store, model, build(f))


def test_a_work_input_at_its_limit_fits(home):
    """``work/<id>/input.json``: the accepted input, whole, at most MAX_INPUT_BYTES."""
    task = fill("text")
    item = ledger.accept(
        home,
        source="assignment",
        requester="captain",
        input={"task": task, "crew": CREW, "assignment_id": new_id("asg")},
        crew=CREW,
        assignment_id=new_id("asg"),
    )
    assert ledger.input_of(home, item.work_id)["task"] == task
    err = _refused(
        lambda: ledger.accept(
            home, source="chat", requester="captain", input={"text": "\\" * ledger.MAX_INPUT_BYTES}
        ),
        "message_too_large",
        str(ledger.MAX_INPUT_BYTES),
    )
    assert "input" in err


# -- the intake: a stable code naming the limit, and nothing written -----------------------


def _refused(call, code: str, figure: str) -> str:
    with pytest.raises(CaptainError) as info:
        call()
    assert info.value.code == code and code in CODES, info.value.as_json()
    assert figure in info.value.message, info.value.message
    return info.value.message


@pytest.mark.parametrize(
    "call, code, figure",
    [
        (lambda: check_text("a" * (MAX_TEXT_BYTES + 1), "task"), "message_too_large", "65536"),
        (
            lambda: check_text("\U0001f600" * (MAX_TEXT_BYTES // 4) + "a", "message"),
            "message_too_large",
            "65536",
        ),
        (
            lambda: check_stored("\x00" * (MAX_TEXT_BYTES + 1), "detail"),
            "message_too_large",
            "65536",
        ),
        (
            lambda: check_text("x" * (MAX_COMMAND_BYTES + 1), "command", limit=MAX_COMMAND_BYTES),
            "message_too_large",
            "8192",
        ),
        (lambda: check_path("/" + "a" * MAX_PATH_BYTES), "invalid_path", "4096"),
        (lambda: check_owns(["/a"] * (MAX_OWNS + 1)), "invalid_argument", "32"),
        (lambda: ledger.check_name("h" * (ledger.LINE_MAX + 1), "holder"), "invalid_text", "200"),
    ],
)
def test_every_input_rule_names_its_limit(call, code, figure):
    _refused(call, code, figure)


def _work_files(home: Home) -> list[str]:
    root = home.root
    return sorted(
        str(p.relative_to(root)) for p in root.rglob("*") if p.is_file() and "locks" not in p.parts
    )


def test_ledger_refusals_write_nothing(home):
    item = ledger.accept(home, source="chat", requester="captain", input={"text": "x"})
    ledger.claim(home, item.work_id, holder="w1")
    before = _work_files(home)
    wid = item.work_id
    _refused(
        lambda: ledger.accept(home, source="chat", requester="captain", input={}, max_attempts=0),
        "invalid_argument",
        "1 to 20",
    )
    _refused(
        lambda: ledger.report(
            home, wid, 1, "succeeded", actor="w1", detail="a" * (MAX_TEXT_BYTES + 1)
        ),
        "message_too_large",
        "65536",
    )
    _refused(
        lambda: ledger.report(home, wid, 1, "succeeded", actor="w1", detail="\udc80"),
        "invalid_text",
        "UTF-8",
    )
    for cost in (float("inf"), float("nan"), -1.0):
        _refused(
            lambda: ledger.report(home, wid, 1, "succeeded", actor="w1", cost_usd=cost),
            "invalid_argument",
            "USD",
        )
    _refused(
        lambda: ledger.report(home, wid, 1, "succeeded", actor="w" * 201), "invalid_text", "200"
    )
    _refused(lambda: ledger.heartbeat(home, wid, 1, holder="w" * 201), "invalid_text", "200")
    assert _work_files(home) == before
    assert ledger.get(home, wid).state == "running"


def test_an_item_asking_more_attempts_gets_max_attempts(home):
    """A webhook endpoint's config (or the replay of an older item) may ask for more."""
    item = ledger.accept(
        home, source="webhook", requester="webhook:gh", input={}, max_attempts=10_000
    )
    assert item.max_attempts == ledger.MAX_ATTEMPTS


def test_retries_stop_at_max_attempts_even_for_an_older_item(home):
    """An item recorded before the bound with a larger max_attempts gets no more than
    MAX_ATTEMPTS attempts: its cache (one entry per attempt) stays readable."""
    item = ledger.accept(
        home,
        source="chat",
        requester="captain",
        input={"text": "x"},
        max_attempts=ledger.MAX_ATTEMPTS,
    )
    path = home.root / "work" / item.work_id / "events" / "00000001.json"
    record = json.loads(path.read_bytes())
    record["max_attempts"] = 10_000  # as an older captain would have accepted
    path.write_bytes(json.dumps(record).encode() + b"\n")
    (home.root / "work" / item.work_id / "item.json").unlink()
    for generation in range(1, ledger.MAX_ATTEMPTS + 1):
        ledger.claim(home, item.work_id, holder="w1")
        after = ledger.report(home, item.work_id, generation, "failed", actor="w1", repeatable=True)
    assert after.state == "failed" and len(after.attempts) == ledger.MAX_ATTEMPTS
    assert len(encode(after)) <= MAX_RECORD_BYTES


# -- the store's backstop -----------------------------------------------------------------


def test_the_store_never_writes_a_record_its_reader_would_refuse(tmp_path: Path):
    store = Store(tmp_path)
    folder = store.dir("records")
    snapshot = folder / "state.json"
    store.publish(snapshot, b"{}\n")
    too_big = b"x" * (MAX_RECORD_BYTES + 1)
    for write in (
        lambda: store.create_once(folder / "new.json", too_big),
        lambda: store.publish(snapshot, too_big),
    ):
        _refused(write, "record_too_large", str(MAX_RECORD_BYTES))
    assert sorted(os.listdir(folder)) == ["state.json"]  # no record, no temp file
    assert snapshot.read_bytes() == b"{}\n"  # the snapshot before it stands
    exact = b"y" * MAX_RECORD_BYTES
    assert store.create_once(folder / "exact.json", exact) is True
    assert store.read_bytes(folder / "exact.json") == exact


# -- dismissal: any amount of mail bounces, and the event stays small ------------------------


def _crew(home: Home, project: Path, unread: int) -> tuple[protocol.Recruit, list[str]]:
    r = protocol.recruit(home, "Jack", "the task", cwd=str(project))
    told = [
        protocol.tell(home, "Jack", f"note {i}", assignment_id=r.assignment_id).message_id
        for i in range(unread)
    ]
    return r, [r.message_id, *told]


def _side_records(home: Home) -> dict[str, bytes]:
    out = {}
    for folder in (home.bounces_dir("jack"), home.notifications_dir("jack")):
        for name in home.store.names(folder):
            out[f"{folder.parent.name}/{name}"] = (folder / f"{name}.json").read_bytes()
    return out


def test_a_dismissal_bounces_each_unread_message_as_records_of_its_own(home, project):
    r, mail = _crew(home, project, 3)
    bounced = protocol.dismiss(home, "Jack", reason="pane gone")
    assert [b.message_id for b in bounced] == mail
    assert [b.delivery_id for b in bounced] == [derive(DELIVERY, m) for m in mail]
    event = crewlog.events(home, "jack")[-1]
    assert isinstance(event, Dismissed) and event.bounced == []
    records = _side_records(home)
    assert sorted(records) == sorted(
        [f"bounces/{m}" for m in mail] + [f"notifications/{derive(DELIVERY, m)}" for m in mail]
    )
    n = notify.wait(home, "Jack", timeout=0)
    assert (n.status, n.message_id, n.delivery_id) == (
        "bounced",
        mail[0],
        derive(DELIVERY, mail[0]),
    )
    assert "pane gone" in n.summary and "the task" in n.summary
    assert _side_records(home) == records  # settling again changes nothing


def test_a_dismissal_killed_before_its_bounces_is_finished_by_the_next_writer(home, project):
    """A writer killed right after the event (or between a notification and its bounce)
    leaves the rest to the next writer, which derives the same records byte for byte."""
    r, mail = _crew(home, project, 2)
    snapshot = crewlog.load(home, "jack")[0]
    event = Dismissed(
        seq=snapshot.seq + 1,
        at=now(),
        actor="captain",
        assignment_id=r.assignment_id,
        reason="crew dismissed",
        bounced=[],
    )
    home.store.create_once(home.event_path("jack", event.seq), encode(event))
    assert _side_records(home) == {}
    n = notify.wait(home, "Jack", timeout=0)  # wait settles every crew it watches
    assert (n.status, n.message_id) == ("bounced", mail[0])
    records = _side_records(home)
    assert len(records) == 2 * len(mail)
    # killed between a notification and its bounce: the mail is still unread, found again
    (home.bounces_dir("jack") / f"{mail[1]}.json").unlink()
    crewlog.load(home, "jack", repair=True)
    with home.store.lock("crew-jack"):
        crewlog.open_locked(home, "jack")
    assert _side_records(home) == records

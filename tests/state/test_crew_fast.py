"""The crew-side fast path (``state.crew_side.fast`` over ``state.crew_side.plain``) answers
exactly as the protocol does, or declines (``Unsure``) and leaves the answer to it.

The fast path exists for start-up time (no pydantic on a crew's common commands); these
tests hold it to the models: its shapes are derived from them, whatever it accepts they
accept with the same values, and on every scenario its verdicts and refusals are the
protocol's, word for word.
"""

from __future__ import annotations

import json
import shutil
from datetime import datetime, timedelta, timezone
from pathlib import Path
from types import SimpleNamespace

import pytest
from conftest import crew_ctx
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from pydantic import BaseModel, Field, ValidationError
from support.crew import EDITOR, hire
from support.ledger_backends import open_ledgers

from state import records
from state.crew import crewlog, protocol
from state.crew.guards import Context
from state.crew_side import fast as crew_fast
from state.crew_side import plain, shapes_gen
from state.crew_side.shapes import EVENTS, SHAPES
from state.errors import CaptainError
from state.home import Home
from state.records import CrewSnapshot, Strict
from state.store import encode
from state.work import seen

# -- the shapes are the models' ---------------------------------------------------------------


def test_shapes_file_is_derived_from_the_models():
    """Regenerate with ``python -m state.crew_side.shapes_gen`` when a model changes."""
    assert SHAPES == shapes_gen.derive()
    assert EVENTS == shapes_gen.event_types()
    assert shapes_gen.TARGET.read_text() == shapes_gen.render(
        shapes_gen.derive(), shapes_gen.event_types()
    )


def test_a_constraint_the_plain_reader_cannot_check_stops_the_derivation():
    class Odd(Strict):
        x: int = Field(le=5)

    with pytest.raises(TypeError, match="constraints"):
        shapes_gen._model(Odd, {})


# -- plain accepts only what the models accept, with the same values ------------------------

STAMP = st.datetimes(
    min_value=datetime(2000, 1, 1),
    max_value=datetime(2100, 1, 1),
    timezones=st.sampled_from([timezone.utc, timezone(timedelta(hours=2))]),
)
TEXT = st.text(max_size=12)
IDS = st.text(alphabet="abcXYZ019_", min_size=1, max_size=10)


@st.composite
def snapshots(draw) -> CrewSnapshot:
    spec = dict(
        assignment_id=draw(IDS),
        message_id=draw(IDS),
        task=draw(TEXT),
        owns=draw(st.lists(TEXT, max_size=3)),
        allow=draw(st.lists(TEXT, max_size=3)),
        project_dir=draw(TEXT),
        handoff_of=draw(st.none() | IDS),
    )
    question = draw(st.none() | st.builds(dict, question_id=IDS, text=TEXT, asked_at=STAMP))
    pane = draw(
        st.none()
        | st.builds(
            dict,
            socket=TEXT,
            session=TEXT,
            window_id=TEXT,
            pane_id=TEXT,
            pane_pid=st.none() | st.integers(0, 2**31),
        )
    )
    return CrewSnapshot(
        seq=draw(st.integers(1, 10**6)),
        name=draw(IDS),
        incarnation_id=draw(IDS),
        agent=draw(st.sampled_from(["claude", "codex", "shell", "program"])),
        recruited_at=draw(STAMP),
        assignment=spec,
        assigned_at=draw(STAMP),
        done_at=draw(st.none() | STAMP),
        report=draw(st.none() | TEXT),
        question=question,
        dismissed_at=draw(st.none() | STAMP),
        pane=pane,
        launched_at=draw(st.none() | STAMP),
    )


def as_plain(value):
    """A model (or its parts) as the plain reader's attributes, for comparison."""
    if isinstance(value, BaseModel):
        return {attr: as_plain(getattr(value, attr)) for attr in type(value).model_fields}
    if isinstance(value, SimpleNamespace):
        return {attr: as_plain(v) for attr, v in vars(value).items() if attr != "_json"}
    if isinstance(value, list):
        return [as_plain(v) for v in value]
    return value


@settings(max_examples=300, suppress_health_check=[HealthCheck.too_slow])
@given(snapshots())
def test_every_snapshot_captain_writes_is_read_plainly_with_the_same_values(snapshot):
    data = json.loads(encode(snapshot))
    assert as_plain(plain.parse(data, "CrewSnapshot")) == as_plain(snapshot)


JUNK = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(-5, 5)
    | st.floats(allow_nan=False)
    | TEXT
    | st.sampled_from(
        [
            "2026-11-30T01:02:03",
            "2026-11-30T01:02:03Z",
            "2026-11-30 01:02:03Z",
            "2026-11-30T01:02:03.1234567Z",
            "2026-02-30T01:02:03Z",
            "1",
            "1.0",
            "2026-11-30T25:02:03+00:00",
            "claude",
            "2026-11-30T01:02:03.5-07:00",
        ]
    ),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(TEXT, inner, max_size=3),
    max_leaves=6,
)


def _paths(value, prefix=()):
    yield prefix
    if isinstance(value, dict):
        for k, v in value.items():
            yield from _paths(v, (*prefix, k))
    elif isinstance(value, list):
        for i, v in enumerate(value):
            yield from _paths(v, (*prefix, i))


@settings(max_examples=500, suppress_health_check=[HealthCheck.too_slow])
@given(snapshots(), st.data())
def test_whatever_the_plain_reader_accepts_the_models_accept_with_the_same_values(snapshot, data):
    """Damage a written snapshot anywhere (replace a value, drop or add a key): the plain
    reader either declines or agrees with the models."""
    record = json.loads(encode(snapshot))
    path = data.draw(st.sampled_from([p for p in _paths(record) if p]))
    *parent_path, last = path
    parent = record
    for step in parent_path:
        parent = parent[step]
    how = data.draw(st.sampled_from(["replace", "drop", "add"]))
    if how == "replace":
        parent[last] = data.draw(JUNK)
    elif how == "drop" and isinstance(parent, dict):
        del parent[last]
    elif isinstance(parent, dict):
        parent[data.draw(TEXT)] = data.draw(JUNK)
    try:
        got = plain.parse(record, "CrewSnapshot")
    except plain.Unsure:
        return
    try:
        model = CrewSnapshot.model_validate_json(json.dumps(record))
    except ValidationError as exc:  # pragma: no cover - the failure this test exists for
        pytest.fail(f"plain accepted what the models refuse: {exc}")
    assert as_plain(got) == as_plain(model)


def _values(kind):
    """Hypothesis values for one field kind of ``crew_side.shapes``, as the models hold them."""
    name = kind if isinstance(kind, str) else kind[0]
    if name == "str":
        return TEXT
    if name == "int":
        return st.integers(-(2**40), 2**40)
    if name == "float":  # a budget: any finite amount, whole ones included
        return st.floats(allow_nan=False, allow_infinity=False) | st.integers(0, 10**6).map(float)
    if name == "bool":
        return st.booleans()
    if name == "datetime":
        return STAMP
    if name == "int>=":
        return st.integers(kind[1], kind[1] + 2**40)
    if name == "str<=":
        return st.text(max_size=kind[1]) | st.just("x" * kind[1])
    if name == "lit":
        return st.sampled_from(kind[1:])
    if name == "opt":
        return st.none() | _values(kind[1])
    if name == "list":
        return st.lists(_values(kind[1]), max_size=3)
    return _records(kind[1])


def _records(shape: str):
    fields = SHAPES[shape]
    return st.fixed_dictionaries({attr: _values(kind) for _, attr, kind in fields}).map(
        lambda attrs: shapes_gen._named(shape).model_validate(attrs)
    )


def _writes_floats(shape: str) -> bool:
    """Whether a shape holds a float anywhere: plain reads those, never writes them (JSON
    libraries spell some floats differently: ``1e-07`` against ``1e-7``)."""
    return any(
        "float" in repr(kind) or ("model" in repr(kind) and _writes_floats(_inner(kind)))
        for _, _, kind in SHAPES[shape]
    )


def _inner(kind) -> str:
    while not (isinstance(kind, tuple) and kind[0] == "model"):
        kind = kind[1]
    return kind[1]


@settings(max_examples=60, suppress_health_check=[HealthCheck.too_slow])
@given(
    st.sampled_from(sorted(SHAPES)).flatmap(
        lambda shape: st.tuples(st.just(shape), _records(shape))
    )
)
def test_plain_writes_the_models_bytes_and_reads_them_back(case):
    """A record does not say which path wrote it: ``plain.encode`` is ``store.encode``."""
    shape, model = case
    written = encode(model)
    back = plain.parse(json.loads(written), shape)
    assert as_plain(back) == as_plain(model)
    assert back.model_dump() == model.model_dump(mode="json", by_alias=True)
    if _writes_floats(shape):  # read only (the ledger's items: captain work list)
        try:
            again = plain.encode(back, shape)
        except ValueError as refused:
            assert "float" in str(refused)
            return
        assert again == written  # no float in this one: the same bytes
        return
    assert plain.encode(model, shape) == written
    assert plain.encode(back, shape) == written


@pytest.mark.parametrize(
    "raw",
    [
        b'{"schema": 1, "schema": 1}',  # a key twice: the models would keep the last one
        b'{"name": "\\ud800"}',  # an escaped lone surrogate
        b"\xff\xfe",
        b"[]",
    ],
)
def test_unusual_bytes_are_left_to_the_models(tmp_path: Path, raw: bytes):
    home = Home(tmp_path / "home")
    path = home.store.dir("scratch") / "x.json"
    path.write_bytes(raw)
    with pytest.raises(plain.Unsure):
        plain.read(home.store, path, "CrewSnapshot")
    assert path.exists(), "the plain reader never quarantines"


# -- check: the same verdicts and refusals, word for word -----------------------------------


def outcome(fn) -> tuple:
    try:
        verdict = fn()
    except CaptainError as err:
        return ("refused", err.code, err.message)
    return ("verdict", verdict.allowed, verdict.reason)


def _done(home, r):
    protocol.inbox(home, r.crew, deliver=lambda b: None, ctx=crew_ctx(r))
    protocol.done(home, r.crew, "changed it", ctx=crew_ctx(r))


SCENARIOS = {
    # name: (setup(home, r) -> None, name, action, paths, assignment, ctx(r))
    "granted": (None, "Jack", "edit", ["src/a.py"], None, crew_ctx),
    "granted, another case of the name": (None, "JACK", "read", [], None, crew_ctx),
    "outside the owned paths": (None, "Jack", "edit", ["../elsewhere/a.py"], None, crew_ctx),
    "action not granted": (None, "Jack", "delete", ["src/a.py"], None, crew_ctx),
    "unknown action": (None, "Jack", "fly", [], None, crew_ctx),
    "bad path": (None, "Jack", "edit", [""], None, crew_ctx),
    "unknown crew": (None, "Nobody", "edit", [], None, crew_ctx),
    "invalid name": (None, "no such name!", "edit", [], None, crew_ctx),
    "another crew's process": (
        None,
        "Jack",
        "edit",
        [],
        None,
        lambda r: Context("crew", "Jill", r.incarnation_id, r.assignment_id),
    ),
    "stale incarnation": (
        None,
        "Jack",
        "edit",
        [],
        None,
        lambda r: Context("crew", "Jack", "inc_OLD", r.assignment_id),
    ),
    "no assignment in the env": (
        None,
        "Jack",
        "edit",
        [],
        None,
        lambda r: Context("crew", "Jack", r.incarnation_id, None),
    ),
    "stale assignment": (None, "Jack", "edit", [], "asg_OLD", crew_ctx),
    "the captain names it": (None, "Jack", "edit", ["src"], "self", lambda r: Context()),
    "the captain forgets it": (None, "Jack", "edit", ["src"], None, lambda r: Context()),
    "after done": (_done, "Jack", "edit", ["src/a.py"], None, crew_ctx),
    "a question pending": (
        lambda h, r: protocol.ask(h, "Jack", "which?", ctx=crew_ctx(r)),
        "Jack",
        "edit",
        ["src/a.py"],
        None,
        crew_ctx,
    ),
    "dismissed": (lambda h, r: protocol.dismiss(h, "Jack"), "Jack", "edit", [], None, crew_ctx),
}


@pytest.mark.parametrize("scenario", sorted(SCENARIOS))
def test_fast_check_says_what_the_protocol_says(home: Home, project: Path, scenario: str):
    setup, name, action, paths, assignment, ctx_of = SCENARIOS[scenario]
    r = hire(home, project, **EDITOR)
    if setup is not None:
        setup(home, r)
    assignment = r.assignment_id if assignment == "self" else assignment
    ctx = ctx_of(r)
    full = outcome(
        lambda: protocol.check(home, name, action, paths, assignment_id=assignment, ctx=ctx)
    )
    fast = outcome(
        lambda: crew_fast.check(home, name, action, paths, assignment_id=assignment, ctx=ctx)
    )
    assert fast == full


# -- when the fast path must decline ----------------------------------------------------------


def test_a_snapshot_behind_its_events_is_declined_and_the_full_path_folds_them(home, project):
    r = hire(home, project, **EDITOR)
    key = "jack"
    before = home.snapshot_path(key).read_bytes()
    protocol.ask(home, "Jack", "which?", ctx=crew_ctx(r))
    home.snapshot_path(key).write_bytes(before)  # as if killed before the snapshot was published
    with pytest.raises(plain.Unsure):
        crew_fast.snapshot(home, key)
    snapshot, _ = crewlog.load(home, key)
    assert snapshot.question is not None


def test_a_missing_or_damaged_snapshot_is_declined_and_quarantined_by_the_full_path(home, project):
    r = hire(home, project, **EDITOR)
    path = home.snapshot_path("jack")
    path.write_bytes(b'{"schema": 1, "seq": "one"}')
    with pytest.raises(plain.Unsure):
        crew_fast.check(home, "Jack", "edit", ["src/a.py"], assignment_id=None, ctx=crew_ctx(r))
    assert path.exists(), "declining is not quarantining"
    verdict = protocol.check(home, "Jack", "edit", ["src/a.py"], ctx=crew_ctx(r))
    assert verdict.allowed
    assert any("state.json" in p for p, _ in home.store.quarantined)
    assert not path.exists()  # quarantined; a reader does not republish it
    with pytest.raises(plain.Unsure):
        crew_fast.snapshot(home, "jack")


def _tail_not_settled(home: Home, r, key: str = "jack") -> None:
    """As if the writer of the newest event was killed before its records: remove them."""
    event = crewlog.events(home, key)[-1]
    if event.type in ("recruited", "assigned"):
        (home.mail_dir(key) / f"{event.assignment.message_id}.json").unlink()
    else:
        (home.notifications_dir(key) / f"{event.delivery_id}.json").unlink()


@pytest.mark.parametrize("tail", ["recruited", "asked"])
def test_a_newest_event_without_its_records_is_declined_and_the_full_path_settles_it(
    home, project, tail
):
    r = hire(home, project, **EDITOR)
    if tail == "asked":
        protocol.inbox(home, "Jack", deliver=lambda b: None, ctx=crew_ctx(r))
        protocol.ask(home, "Jack", "which?", ctx=crew_ctx(r))
    _tail_not_settled(home, r)
    with pytest.raises(plain.Unsure):
        crew_fast.open_locked(home, "jack")
    with pytest.raises(plain.Unsure):
        crew_fast.inbox(home, "Jack", deliver=lambda b: pytest.fail("delivered"), ctx=crew_ctx(r))
    protocol.inbox(home, "Jack", deliver=lambda b: None, ctx=crew_ctx(r))  # settles the tail
    assert crew_fast.open_locked(home, "jack") is not None


def test_a_recruit_whose_work_item_is_missing_is_declined(home, project):
    r = hire(home, project, **EDITOR)
    work = home.root / "work" / f"wrk_{r.assignment_id.split('_', 1)[1]}"
    (work / "events" / "00000001.json").rename(work / "moved-away")
    with pytest.raises(plain.Unsure):
        crew_fast.open_locked(home, "jack")


def test_on_a_shared_ledger_the_fast_path_knows_the_work_item_without_the_database(
    request, tmp_path, project
):
    """On PostgreSQL the item is in the database, not the home: the first full-path settle
    after it is committed notes it in the home (``work-seen/<id>``), so a crew's hooks stay
    on the fast path from then on; without the note they decline, and the full path (which
    asks the database) writes it. (A note written inside recruit's transaction would
    outlive a kill that rolled the item back: test_ledger_crash's crew scenarios.)"""
    with open_ledgers(request, "postgresql") as made:
        home = made.home(tmp_path / "home")
        r = hire(home, project, **EDITOR)
        work_id = f"wrk_{r.assignment_id.split('_', 1)[1]}"
        assert not (home.root / "work" / work_id).exists(), "the item is in the database"
        # recruit settles inside its own transaction: not noted before it is committed
        assert not seen.note_path(home, work_id).exists()
        with pytest.raises(plain.Unsure):
            crew_fast.open_locked(home, "jack")
        protocol.inbox(home, "Jack", deliver=lambda b: None, ctx=crew_ctx(r))  # the full path
        assert seen.note_path(home, work_id).exists()
        assert crew_fast.open_locked(home, "jack") is not None
        fast = outcome(
            lambda: crew_fast.check(
                home, "Jack", "edit", ["src/a.py"], assignment_id=None, ctx=crew_ctx(r)
            )
        )
        full = outcome(
            lambda: protocol.check(
                home, "Jack", "edit", ["src/a.py"], assignment_id=None, ctx=crew_ctx(r)
            )
        )
        assert fast == full


@pytest.mark.parametrize("tail", ["done", "dismissed"])
def test_a_finished_or_dismissed_crew_is_left_to_the_full_path(home, project, tail):
    r = hire(home, project, **EDITOR)
    _done(home, r) if tail == "done" else protocol.dismiss(home, "Jack")
    with pytest.raises(plain.Unsure):
        crew_fast.open_locked(home, "jack")


# -- inbox and ask: the same mail, records and refusals ---------------------------------------


def _normalised(home: Home, replace: dict[str, str]) -> dict[str, bytes]:
    """Every record in the home by path, with run-specific IDs and stamps replaced."""
    out = {}
    for path in sorted(home.root.rglob("*")):
        if path.is_file() and "locks" not in path.parts and path.name != "home.json":
            rel, data = str(path.relative_to(home.root)), path.read_bytes()
            for old, new in replace.items():
                rel, data = rel.replace(old, new), data.replace(old.encode(), new.encode())
            out[rel] = data
    return out


def _twins(tmp_path: Path, project: Path, story) -> tuple[list[Home], object]:
    """One home after ``story``, and an exact copy of it: the same crew, IDs and stamps."""
    first = Home(tmp_path / "fast")
    r = hire(first, project, **EDITOR)
    story(first, r)
    shutil.copytree(first.root, tmp_path / "full", symlinks=True)
    return [first, Home(tmp_path / "full")], r


def test_fast_inbox_delivers_and_marks_exactly_what_the_protocol_does(tmp_path, project):
    def story(h, r):
        protocol.tell(h, "Jack", "first", assignment_id=r.assignment_id)
        protocol.tell(h, "Jack", "second\nline", assignment_id=r.assignment_id)

    homes, r = _twins(tmp_path, project, story)
    got_fast, got_full = [], []
    crew_fast.inbox(homes[0], "Jack", deliver=got_fast.extend, ctx=crew_ctx(r))
    protocol.inbox(homes[1], "Jack", deliver=got_full.extend, ctx=crew_ctx(r))
    assert [m.text for m in got_fast] == ["Do the thing", "first", "second\nline"]
    mail = homes[0].mail_dir("jack")
    assert [m.model_dump() for m in got_fast] == [  # what the CLI prints for --json
        records.Message.model_validate_json(
            (mail / f"{m.message_id}.json").read_bytes()
        ).model_dump(mode="json", by_alias=True)
        for m in got_fast
    ]
    assert [m.model_dump() for m in got_fast] == [
        m.model_dump(mode="json", by_alias=True) for m in got_full
    ]
    for home, got in ((homes[0], got_fast), (homes[1], got_full)):
        receipts = home.store.records(home.receipts_dir("jack"), records.Receipt)
        assert sorted(x.message_id for x in receipts) == sorted(m.message_id for m in got)
        assert {x.via for x in receipts} == {"inbox"}
    assert crew_fast.inbox(homes[0], "Jack", deliver=got_fast.extend, ctx=crew_ctx(r)) == []


def test_fast_ask_writes_the_protocols_records_byte_for_byte(tmp_path, project):
    def story(h, r):
        protocol.inbox(h, "Jack", deliver=lambda b: None, ctx=crew_ctx(r))

    homes, r = _twins(tmp_path, project, story)
    text = "Which way? " + "long " * 400  # the notification's summary is cut
    fast = crew_fast.ask(homes[0], "Jack", text, assignment_id=None, ctx=crew_ctx(r))
    full = protocol.ask(homes[1], "Jack", text, ctx=crew_ctx(r))
    mapping = {
        fast.question_id: full.question_id,
        fast.delivery_id: full.delivery_id,
        plain.stamp(fast.at): plain.stamp(full.at),
    }
    after = _normalised(homes[1], {})
    assert _normalised(homes[0], mapping) == after
    assert any(name.startswith("notifications/") for name in after)
    # and the full path reads what the fast one wrote
    snapshot, _ = crewlog.load(homes[0], "jack", repair=True)
    assert snapshot.question.question_id == fast.question_id


ASKS = {
    # name: (setup(home, r), name, text, assignment, ctx(r))
    "a second question": (
        lambda h, r: protocol.ask(h, "Jack", "first?", ctx=crew_ctx(r)),
        "Jack",
        "second?",
        None,
        crew_ctx,
    ),
    "after done": (_done, "Jack", "why?", None, crew_ctx),
    "dismissed": (lambda h, r: protocol.dismiss(h, "Jack"), "Jack", "why?", None, crew_ctx),
    "stale assignment": (None, "Jack", "why?", "asg_OLD", crew_ctx),
    "stale incarnation": (
        None,
        "Jack",
        "why?",
        None,
        lambda r: Context("crew", "Jack", "inc_OLD", r.assignment_id),
    ),
    "unknown crew": (None, "Nobody", "why?", None, crew_ctx),
    "an empty question": (None, "Jack", "  ", None, crew_ctx),
    "a control character": (None, "Jack", "bell\x07", None, crew_ctx),
}


@pytest.mark.parametrize("scenario", sorted(ASKS))
def test_fast_ask_refuses_as_the_protocol_does(home, project, scenario):
    setup, name, text, assignment, ctx_of = ASKS[scenario]
    r = hire(home, project, **EDITOR)
    protocol.inbox(home, "Jack", deliver=lambda b: None, ctx=crew_ctx(r))
    if setup is not None:
        setup(home, r)
    before = _normalised(home, {})

    def fast():
        try:
            return crew_fast.ask(home, name, text, assignment_id=assignment, ctx=ctx_of(r))
        except plain.Unsure:  # the full path then answers; what it says is compared below
            return protocol.ask(home, name, text, assignment_id=assignment, ctx=ctx_of(r))

    got = outcome(fast)
    assert got[0] == "refused"
    assert _normalised(home, {}) == before, "a refusal writes nothing"
    assert got == outcome(
        lambda: protocol.ask(home, name, text, assignment_id=assignment, ctx=ctx_of(r))
    )


def test_the_fast_inbox_refuses_as_the_protocol_does(home, project):
    r = hire(home, project, **EDITOR)
    protocol.inbox(home, "Jack", deliver=lambda b: None, ctx=crew_ctx(r))
    stale = Context("crew", "Jack", "inc_OLD", r.assignment_id)
    for name, ctx in (("Jack", stale), ("Nobody", crew_ctx(r))):
        full = outcome(lambda: protocol.inbox(home, name, deliver=lambda b: None, ctx=ctx))
        fast = outcome(lambda: crew_fast.inbox(home, name, deliver=lambda b: None, ctx=ctx))
        assert fast == full and fast[0] == "refused"


@settings(max_examples=300, derandomize=True)
@given(st.floats(min_value=1e-4, max_value=1e16, exclude_max=True) | st.just(0.0))
def test_a_float_plain_writes_is_spelled_as_the_models_spell_it(value):
    """The one float the crew side writes (a budget's amount in the crew's snapshot) has
    the models' bytes; outside the range where every JSON writer agrees it is refused."""
    from pydantic import TypeAdapter

    assert json.dumps(plain._dump(value, "float")) == TypeAdapter(float).dump_json(value).decode()


def test_a_float_outside_the_agreed_spelling_is_never_written_plainly():
    for value in (1e-5, 1e16, float("inf"), float("nan"), 3):
        with pytest.raises(ValueError):
            plain._dump(value, "float")


def test_a_crew_with_a_budget_asks_and_checks_on_the_fast_path(tmp_path, project):
    """A budget puts a float in the crew's snapshot, which the crew side writes back when it
    asks: it used to refuse with an internal error ("plain writes no float")."""
    home = Home(tmp_path / "home")
    jack = hire(home, project, budget_usd=2.5)
    ctx = Context.from_env(jack.env)
    asked = crew_fast.ask(home, "Jack", "Which way?", assignment_id=None, ctx=ctx)
    assert asked is not None
    snapshot, _ = crewlog.load(home, "jack")
    assert snapshot is not None and snapshot.budget_usd == 2.5
    assert snapshot.question is not None and snapshot.question.text == "Which way?"

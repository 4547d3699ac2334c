"""Crash points: every ledger mutation SIGKILLed between its writes, then recovered.

``state.work.crash.crash_point(step)`` kills the process for real when ``CAPTAIN_LEDGER_CRASH``
names the step. Every step has at least one scenario (several where more than one writer
reaches it: a worker's report and the reconciler; a chat item, a crew's assignment and a
webhook's dispatch; ``report`` and ``done``). The parent prepares a home with the item in
the state the mutation needs, a child process (a real interpreter) runs the mutation with
the variable set and must die by SIGKILL, and the parent then audits the home:

- before any repair, readers are not fooled (the item reads as the fold of its events, the
  slots count what the events say);
- the next writer (the item's lock and ``load(repair=True)``, a crew's ``open_locked``, a
  runner's ``dispatch``) recovers, after which events are gapless and each legal, nothing
  follows a terminal state, generations are monotone, ``item.json`` equals the fold of the
  events, the open marker says exactly whether the item is terminal, every file parses and
  nothing was quarantined or left as temp debris;
- the operation is fully visible or retryable: retrying it in the parent succeeds or is
  refused with the expected code, and the item ends with exactly the history the uncrashed
  operation would have written — never a half state.

A step nothing reaches fails: the child must die by the signal, not exit.

On PostgreSQL (``test_crash_point_on_postgresql``: the home's ``[ledger] url`` names a fresh
ledger) every ledger scenario runs again: there a mutation is one transaction, so a kill
anywhere inside it leaves nothing of it (the server rolls it back): the item reads exactly
as before the kill, the audit reads the rows over a connection of its own, and the retry
ends with the same history as on files. A webhook intake is one transaction there too
(``test_intake_crash_point_on_postgresql``: the record, its body and its work item): killed
at any of its crash points it leaves nothing, and the redelivery makes exactly one item.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import signal
import subprocess
import sys
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime, timedelta, timezone
from pathlib import Path

import pytest
from support.ledger_backends import Ledgers, close_backends

from state.crew import crewlog, guards, protocol
from state.errors import CaptainError
from state.home import Home
from state.ids import new_id
from state.records import (
    Bounce,
    CrewSnapshot,
    EventFile,
    HomeMeta,
    Message,
    Notification,
    PaneLocator,
)
from state.store import TEMP_PREFIX
from state.work import deliveries, ledger, replay, seen
from state.work.crash import CRASH_ENV
from state.work.ledger_records import (
    EVENT_TYPES,
    TERMINAL,
    Delivery,
    Lease,
    WorkEvent,
    WorkItem,
)
from state.work.location import ledger_location

REPO = Path(__file__).resolve().parents[2]
TESTS = Path(__file__).resolve().parent

# one controlled clock, the same in the parent and the child (leases last 60 s by default)
T0 = datetime(2030, 1, 1, 12, 0, tzinfo=timezone.utc)
T1 = T0 + timedelta(minutes=10)  # every lease taken at T0 has expired
SECRET_INPUT = "INPUT-SECRET: the conversation itself"
SECRET_DETAIL = "DETAIL-SECRET: free-form detail"
LOCATOR = PaneLocator(
    socket="/nonexistent/captain-crash.sock",
    session="work",
    window_id="@1",
    pane_id="%1",
    pane_pid=4242,
)
BODY = b'{"ref": "refs/heads/main", "secret": "webhook body"}'
CONFIG = '[endpoints.hook]\nevents = ["push"]\nretention_days = 7\n'


# -- the mutations: run by the child (to be killed) and by the parent (the retry) ------------


def op_accept(home: Home, work_id: str, max_attempts: int = 1):
    return ledger.accept(
        home,
        source="chat",
        input={"text": SECRET_INPUT},
        requester="alice",
        work_id=work_id,
        detail=SECRET_DETAIL,
        max_attempts=max_attempts,
        at=T0,
    )


def op_replay(home: Home, work_id: str):
    return replay.replay(home, work_id, actor="bob", reason="run it again", at=T1)


def op_claim(home: Home, work_id: str):
    return ledger.claim(home, work_id, holder="worker", locator=LOCATOR, at=T0)


def op_report(home: Home, work_id: str, outcome: str, repeatable: bool = False):
    return ledger.report(
        home,
        work_id,
        1,
        outcome,
        actor="worker",
        repeatable=repeatable,
        cost_usd=0.25,
        detail=SECRET_DETAIL,
        at=T1,
    )


def op_cancel(home: Home, work_id: str, stop: bool | None):
    return ledger.cancel(
        home,
        work_id,
        actor="operator",
        reason="not needed any more",
        stop=lambda attempt: stop,
        at=T1,
    )


def op_land(home: Home, work_id: str):
    return ledger.landed(
        home, work_id, commit="c" * 40, base_branch="main", operator="oscar", at=T1
    )


def op_note(home: Home, work_id: str, type: str):
    if type == "spend":  # a crew's measured figure (state.work.spent): once, however retried
        return ledger.note(
            home,
            work_id,
            type,
            actor="Jack",
            cost_usd=0.25,
            input_tokens=1000,
            output_tokens=20,
            cache_read_tokens=300,
            cache_write_tokens=0,
            turns=1,
        )
    return ledger.note(
        home,
        work_id,
        type,
        actor="captain",
        request_id="apr_1",
        decision="allow" if type == "approval_decided" else None,
    )


def op_examine(home: Home, verdict: str):
    return ledger.examine(home, lambda locator: verdict, holder="reconciler", at=T1)


def op_resolve(home: Home, work_id: str, to: str):
    return ledger.resolve(
        home,
        work_id,
        generation=1,
        to=to,
        reason="looked at the pane",
        operator="oscar",
        runtime_stopped=True,
        at=T1,
    )


def op_ingest(home: Home):
    return deliveries.ingest(home, "hook", "delivery-1", BODY, event="push", at=T0)


def op_recruit(home: Home, project: str):
    return protocol.recruit(home, "alpha", "the crash-tested task", cwd=project)


def op_dismiss(home: Home, stopped: bool | None):
    return protocol.dismiss(home, "alpha", stopped=stopped)


def crew_context(home: Home) -> guards.Context:
    snapshot, _ = crewlog.load(home, "alpha")
    return guards.Context(
        "crew", snapshot.name, snapshot.incarnation_id, snapshot.assignment.assignment_id
    )


def op_inbox(home: Home):
    return protocol.inbox(home, "alpha", deliver=lambda batch: None, ctx=crew_context(home))


def op_done(home: Home):
    return protocol.done(home, "alpha", "did it; the checks pass", ctx=crew_context(home))


OPS: dict[str, Callable] = {
    name[3:]: fn for name, fn in globals().items() if name.startswith("op_")
}

CHILD = f"""
import json, sys
sys.path.insert(0, {str(TESTS)!r})
sys.path.insert(0, {str(TESTS.parent)!r})  # support/
from pathlib import Path
from state.home import Home
import test_ledger_crash as t

root, op, kwargs = sys.argv[1], sys.argv[2], json.loads(sys.argv[3])
t.OPS[op](Home(Path(root)), **kwargs)
print("the mutation finished: its crash point was never reached")
"""


def run_child(root: Path, step: str, op: str, kwargs: dict) -> None:
    env = {k: v for k, v in os.environ.items() if not k.startswith("CAPTAIN_")}
    env["PYTHONPATH"] = str(REPO) + os.pathsep + env.get("PYTHONPATH", "")
    env[CRASH_ENV] = step
    proc = subprocess.run(
        [sys.executable, "-c", CHILD, str(root), op, json.dumps(kwargs)],
        env=env,
        cwd=root.parent,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode == -signal.SIGKILL, (
        f"the child running {op}({kwargs}) was not killed at {step!r} (exit "
        f"{proc.returncode}):\n{proc.stdout}\n{proc.stderr[-3000:]}"
    )


# -- scenarios ---------------------------------------------------------------------------------

A, C = "accepted", "claimed"


@dataclass
class Scenario:
    step: str
    op: str
    kwargs: dict = field(default_factory=dict)  # "W": the item's work id; "P": the project
    prepare: list[tuple[str, dict]] = field(default_factory=list)
    visible: str | None = None  # the item's state right after the kill (None: no item)
    final: str | None = None  # ... after recovery and the retry
    types: list[str] = field(default_factory=list)  # its whole history after the retry
    refusals: frozenset[str] = frozenset()  # what the retry may answer instead of success
    variant: str = ""

    @property
    def id(self) -> str:
        return self.step + (f"[{self.variant}]" if self.variant else "")


RUNNING = [("accept", {"work_id": "W"}), ("claim", {"work_id": "W"})]
RUNNING2 = [("accept", {"work_id": "W", "max_attempts": 2}), ("claim", {"work_id": "W"})]
RECONCILING = [*RUNNING, ("examine", {"verdict": "unknown"})]
DONE = [*RUNNING, ("report", {"work_id": "W", "outcome": "succeeded"})]
CREW = [("recruit", {"project": "P"})]  # a crew whose assignment is running
CREW_READ = [*CREW, ("inbox", {})]  # ... and which has read its assignment mail


def _ledger_scenarios() -> list[Scenario]:
    out = []
    for when in ("after-event", "after-snapshot"):  # both come after the event is durable
        out += [
            Scenario(f"accepted:{when}", "accept", {"work_id": "W"}, [], "queued", "queued", [A]),
            Scenario(
                f"accepted:{when}",
                "replay",
                {"work_id": "W"},
                DONE,
                "succeeded",
                "succeeded",
                [A, C, "succeeded"],
                variant="replay",
            ),
            Scenario(
                f"claimed:{when}",
                "claim",
                {"work_id": "W"},
                RUNNING[:1],
                "running",
                "running",
                [A, C],
                frozenset({"not_queued"}),
            ),
            Scenario(
                f"succeeded:{when}",
                "report",
                {"work_id": "W", "outcome": "succeeded"},
                RUNNING,
                "succeeded",
                "succeeded",
                [A, C, "succeeded"],
                frozenset({"not_running"}),
            ),
            Scenario(
                f"failed:{when}",
                "report",
                {"work_id": "W", "outcome": "failed"},
                RUNNING,
                "failed",
                "failed",
                [A, C, "failed"],
                frozenset({"not_running"}),
            ),
            Scenario(
                f"failed:{when}",
                "examine",
                {"verdict": "gone"},
                RUNNING,
                "failed",
                "failed",
                [A, C, "failed"],
                variant="examine-gone",
            ),
            Scenario(
                f"retry_queued:{when}",
                "report",
                {"work_id": "W", "outcome": "failed", "repeatable": True},
                RUNNING2,
                "queued",
                "queued",
                [A, C, "retry_queued"],
                frozenset({"not_running"}),
            ),
            Scenario(
                f"retry_queued:{when}",
                "examine",
                {"verdict": "gone"},
                RUNNING2,
                "queued",
                "queued",
                [A, C, "retry_queued"],
                variant="examine-gone",
            ),
            Scenario(
                f"cancel_requested:{when}",
                "cancel",
                {"work_id": "W", "stop": True},
                RUNNING,
                "running",
                "cancelled",
                [A, C, "cancel_requested", "cancelled"],
            ),
            Scenario(
                f"cancelled:{when}",
                "cancel",
                {"work_id": "W", "stop": True},
                RUNNING,
                "cancelled",
                "cancelled",
                [A, C, "cancel_requested", "cancelled"],
            ),
            *(
                Scenario(
                    f"{note}:{when}",
                    "note",
                    {"work_id": "W", "type": note},
                    RUNNING,
                    "running",
                    "running",
                    [A, C, note],
                )
                for note in ("approval_requested", "approval_decided", "spend")
            ),
            Scenario(
                f"cancelled:{when}",
                "cancel",
                {"work_id": "W", "stop": None},
                RUNNING[:1],
                "cancelled",
                "cancelled",
                [A, "cancelled"],
                variant="queued",
            ),
            Scenario(
                f"needs_reconciliation:{when}",
                "cancel",
                {"work_id": "W", "stop": False},
                RUNNING,
                "needs_reconciliation",
                "needs_reconciliation",
                [A, C, "cancel_requested", "needs_reconciliation"],
            ),
            Scenario(
                f"needs_reconciliation:{when}",
                "examine",
                {"verdict": "unknown"},
                RUNNING,
                "needs_reconciliation",
                "needs_reconciliation",
                [A, C, "needs_reconciliation"],
                variant="examine-unknown",
            ),
            Scenario(
                f"resolved:{when}",
                "resolve",
                {"work_id": "W", "to": "failed"},
                RECONCILING,
                "failed",
                "failed",
                [A, C, "needs_reconciliation", "resolved"],
                frozenset({"not_reconciling"}),
            ),
            Scenario(
                f"landed:{when}",
                "land",
                {"work_id": "W"},
                DONE,
                "succeeded",
                "succeeded",
                [A, C, "succeeded", "landed"],
            ),
        ]
        # the same steps reached through the other writers of work items
        out += [
            Scenario(f"claimed:{when}", "recruit", {"project": "P"}, variant="recruit"),
            Scenario(f"succeeded:{when}", "done", {}, CREW_READ, variant="done"),
        ]
    out += [
        Scenario("accepted:after-input", "accept", {"work_id": "W"}, [], None, "queued", [A]),
        Scenario(
            "accepted:after-input",
            "replay",
            {"work_id": "W"},
            DONE,
            "succeeded",
            "succeeded",
            [A, C, "succeeded"],
            variant="replay",
        ),
    ]
    for when in ("after-input", "after-event", "after-snapshot"):
        out += [
            Scenario(f"accepted:{when}", "recruit", {"project": "P"}, variant="recruit"),
            Scenario(f"accepted:{when}", "ingest", variant="webhook"),
        ]
    return out


SCENARIOS = [
    *_ledger_scenarios(),
    Scenario("delivery:after-identity", "ingest"),
    Scenario("delivery:after-body", "ingest"),
    Scenario("delivery:after-record", "ingest"),
    Scenario("recruit:after-crew", "recruit", {"project": "P"}),
    *(
        Scenario(f"dismiss:{when}", "dismiss", {"stopped": stopped}, CREW, variant=variant)
        for when in ("after-work", "after-crew")
        for stopped, variant in ((True, "stop-confirmed"), (False, "stop-unconfirmed"))
    ),
]


def all_steps() -> list[str]:
    """Every crash point there is, from the sources: literal names plus one per event type
    for the two f-string steps of ``ledger._append``."""
    steps = set()
    for path in sorted((REPO / "state").rglob("*.py")):
        text = path.read_text()
        calls = re.findall(r"crash_point\((f?)\"([^\"]+)\"\)", text)
        assert len(calls) == len(re.findall(r"(?<!def )crash_point\(", text)), (
            f"{path.name}: a crash point this test cannot read (not a plain string literal)"
        )
        for call in calls:
            fstring, name = call
            if fstring:
                assert name in ("{event.type}:after-event", "{event.type}:after-snapshot"), (
                    f"{path.name}: a new templated crash point {name!r}: cover it here"
                )
                steps |= {name.replace("{event.type}", t) for t in EVENT_TYPES}
            else:
                steps.add(name)
    return sorted(steps)


def test_every_crash_point_has_a_scenario() -> None:
    steps = all_steps()
    assert {
        f"{t}:{when}" for t in EVENT_TYPES for when in ("after-event", "after-snapshot")
    } <= set(steps), steps
    covered = {s.step for s in SCENARIOS}
    assert covered == set(steps), (
        f"steps without a scenario: {sorted(set(steps) - covered)};"
        f" scenarios for no step: {sorted(covered - set(steps))}"
    )


# -- the audit -------------------------------------------------------------------------------


def database(home: Home):
    """A connection of the test's own to the home's PostgreSQL ledger (None on files)."""
    location = ledger_location(home)
    if not location.postgres:
        return None
    import psycopg

    return psycopg.connect(location.url, autocommit=True)


def stored_item(home: Home, work_id: str) -> WorkItem | None:
    """What the backend stored as the item: ``item.json``, or the item's row."""
    db = database(home)
    if db is None:
        return home.store.read(home.root / "work" / work_id / "item.json", WorkItem)
    with db:
        row = db.execute(
            "SELECT item::text FROM work_items WHERE work_id = %s", (work_id,)
        ).fetchone()
    return None if row is None else WorkItem.model_validate_json(row[0])


def history(home: Home, work_id: str) -> list[WorkEvent]:
    """A work item's events straight from disk (or the database's rows): gapless, each
    parses, each legal, nothing after a terminal state, generations monotone."""
    store = home.store
    db = database(home)
    if db is None:
        directory = home.root / "work" / work_id / "events"
        names = store.names(directory)
    else:
        with db:
            rows = db.execute(
                "SELECT seq, event::text, detail FROM work_events WHERE work_id = %s ORDER BY seq",
                (work_id,),
            ).fetchall()
        names = [f"{seq:08d}" for seq, _, _ in rows]
    assert names == [f"{i:08d}" for i in range(1, len(names) + 1)], (
        f"{work_id}: events have gaps: {names}"
    )
    if db is None:
        events = [store.read(directory / f"{n}.json", WorkEvent) for n in names]
    else:
        events = [
            WorkEvent.model_validate_json(doc).model_copy(
                update={"detail": None if detail is None else bytes(detail).decode()}
            )
            for _, doc, detail in rows
        ]
    assert all(e is not None for e in events), f"{work_id}: an event does not parse"
    state, generation = None, 0
    for e in events:
        # a terminal state is final; ``landed`` only notes where a succeeded item's work went
        assert state not in TERMINAL or e.type == "landed", (
            f"{work_id}: event {e.seq} ({e.type}) after {state}"
        )
        assert ledger.legal(state, e), f"{work_id}: {e.type} -> {e.state} after {state}"
        assert e.generation >= generation, f"{work_id}: generation went back at {e.seq}"
        state, generation = e.state, e.generation
    return events


def folded(events: list[WorkEvent], work_id: str) -> WorkItem | None:
    item = None
    for e in events:
        item = ledger.fold(item, e, work_id)
    return item


def readers_not_fooled(home: Home) -> None:
    """Before any repair: every reader sees exactly what the events say."""
    holding = {i.work_id for i in ledger.held(home)}
    for work_id in ledger.all_ids(home):
        expected = folded(history(home, work_id), work_id)
        assert ledger.load(home, work_id) == expected, work_id
        if expected is not None and expected.state in ("running", "needs_reconciliation"):
            assert work_id in holding, f"{work_id} holds a slot the capacity check misses"
        else:
            assert work_id not in holding


def recover(home: Home) -> None:
    """The next writers: each crew's and each item's, as any later command would be."""
    for key in home.crew_keys():
        with home.store.lock(guards.lock_name(key)):
            crewlog.open_locked(home, key)
    for work_id in ledger.all_ids(home):
        with ledger._item_transaction(home, work_id):
            ledger.load(home, work_id, repair=True)


def audit(home: Home, generations: dict[str, int]) -> None:
    """The invariants after recovery, for every work item in the home."""
    open_ids = set(ledger.open_ids(home))
    for work_id in ledger.all_ids(home):
        events = history(home, work_id)
        item = folded(events, work_id)
        if item is None:  # killed after its input, before its first event: no item at all
            assert ledger.load(home, work_id) is None
            assert stored_item(home, work_id) is None
            assert work_id not in open_ids, f"{work_id} is marked open with no events"
            assert work_id not in {i.work_id for i in ledger.page(home, limit=100)[0]}
            continue
        cached = stored_item(home, work_id)
        assert cached == item, f"{work_id}: item.json is not the fold of its events"
        assert (work_id in open_ids) == (item.state not in TERMINAL), (
            f"{work_id} is {item.state} but its open marker says otherwise"
        )
        assert item.generation == sum(e.type == "claimed" for e in events)
        assert item.generation >= generations.get(work_id, 0), f"{work_id}: generation fell"
        generations[work_id] = item.generation
        assert len({a.run_id for a in item.attempts}) == len(item.attempts)
        shown = json.dumps(ledger.public(home, item, detail=True))
        assert SECRET_INPUT not in shown and SECRET_DETAIL not in shown
    assert open_ids <= set(ledger.all_ids(home)), "an open marker names no work item"
    every_file_parses(home)


MODELS = {
    ("mail",): Message,
    ("notifications",): Notification,
    ("bounces",): Bounce,
    ("deliveries",): Delivery,
    ("deliveries", "by-identity"): deliveries.Identity,
    ("deliveries", "rejected"): deliveries.Rejection,
}


def every_file_parses(home: Home) -> None:
    root, store = home.root, home.store
    if ledger_location(home).postgres:  # the ledger is the database's, none of it in files
        assert not (root / "work").exists() and not (root / "ledger").exists()
    for dirpath, dirnames, filenames in os.walk(root):
        rel = Path(dirpath).relative_to(root)
        parts = rel.parts
        for name in filenames:
            path = Path(dirpath, name)
            where = rel / name
            assert not path.is_symlink(), where
            assert not name.startswith(TEMP_PREFIX), (
                f"temp debris {where}: a crash point came before a write finished"
            )
            if parts == ():
                assert name in ("home.json", "config.toml"), where
                if name == "home.json":
                    assert store.read(path, HomeMeta) is not None
            elif parts[0] == "locks":
                assert name.endswith(".lock"), where
            elif parts in (("ledger", "open"), ("ledger", "finished")):
                assert name.startswith("wrk_") and path.stat().st_size == 0, where
            elif parts == ("ledger",):  # the finished index's flag: empty
                assert name == "finished.built" and path.stat().st_size == 0, where
            elif parts == ("work-seen",):  # a shared ledger's note: empty, an item's ID
                assert name.startswith("wrk_") and path.stat().st_size == 0, where
            elif parts == ("deliveries", "pending"):
                assert name.startswith("whd_") and path.stat().st_size == 0, where
            elif parts[0] == "work" and len(parts) == 2:
                model = {"item.json": WorkItem, "lease.json": Lease}.get(name)
                if model is not None:
                    assert store.read(path, model) is not None, where
                else:
                    assert name == "input.json" and store.read_json(path) is not None, where
            elif parts[0] == "work" and parts[2:] == ("events",):
                assert store.read(path, WorkEvent) is not None, where
            elif parts[0] == "crew" and len(parts) == 2:
                assert name == "state.json" and store.read(path, CrewSnapshot) is not None, where
            elif parts[0] == "crew" and parts[2:] == ("events",):
                assert store.read(path, EventFile) is not None, where
            elif parts[0] == "delivery-bodies":
                assert path.read_bytes() == BODY, where
            elif parts in MODELS or parts[:1] in MODELS and len(parts) == 2:
                model = MODELS.get(parts) or MODELS[parts[:1]]
                assert store.read(path, model) is not None, where
            else:
                assert name.endswith(".json") and store.read_json(path) is not None, where
    quarantine = root / "quarantine"
    assert not quarantine.exists() or not os.listdir(quarantine), os.listdir(quarantine)
    assert store.reports.reported() == [], "something was quarantined"


# -- the test ----------------------------------------------------------------------------------


def fill(kwargs: dict, work_id: str, project: Path) -> dict:
    out = {}
    for k, v in kwargs.items():
        out[k] = work_id if v == "W" else str(project) if v == "P" else v
    return out


def retry(home: Home, op: str, kwargs: dict, refusals: frozenset[str]):
    try:
        return OPS[op](home, **kwargs)
    except CaptainError as err:
        assert err.code in refusals, f"retrying {op} was refused with {err.code}: {err}"
        return err


@pytest.mark.parametrize("scenario", SCENARIOS, ids=lambda s: s.id)
def test_crash_point(tmp_path: Path, scenario: Scenario) -> None:
    root = tmp_path / "home"
    home = Home(root)
    (root / "config.toml").write_text(CONFIG)
    project = tmp_path / "project"
    project.mkdir()
    work_id = new_id(ledger.WORK)
    home = Home(root)
    for op, kwargs in scenario.prepare:
        OPS[op](home, **fill(kwargs, work_id, project))
    generations = {w: ledger.get(home, w).generation for w in ledger.all_ids(home)}
    before = set(ledger.all_ids(home))
    kwargs = fill(scenario.kwargs, work_id, project)

    run_child(root, scenario.step, scenario.op, kwargs)

    home = Home(root)  # a new process's view
    readers_not_fooled(home)
    recover(home)
    audit(home, generations)
    check = CHECKS.get(scenario.op, check_item)
    check(home, scenario, work_id, kwargs, before, generations, project)
    audit(home, generations)


def check_item(
    home: Home,
    s: Scenario,
    work_id: str,
    kwargs: dict,
    before: set[str],
    generations: dict[str, int],
    project: Path,
    visible: str | None = "files",
) -> None:
    """A ledger mutation on one item: visible as the events say, and retryable.
    ``visible``: on PostgreSQL, the state the item had before the killed transaction."""
    item = ledger.load(home, work_id)
    visible = s.visible if visible == "files" else visible
    assert (item.state if item else None) == visible, (
        f"after the kill at {s.step} the item reads {item.state if item else None}"
    )
    retry(home, s.op, kwargs, s.refusals)
    audit(home, generations)
    item = ledger.get(home, work_id)
    assert item.state == s.final
    assert [e.type for e in ledger.events(home, work_id)] == s.types, (
        "the retry did not end with the history of one uncrashed operation"
    )
    if s.final == "queued" and s.types[-1] == "retry_queued":  # the retry can run
        again = ledger.claim(home, work_id, holder="worker", at=T1)
        assert again.generation == 2 and again.attempts[-1].run_id != again.attempts[0].run_id


def check_replay(
    home: Home,
    s: Scenario,
    work_id: str,
    kwargs: dict,
    before: set[str],
    generations: dict[str, int],
    project: Path,
    visible: str | None = "files",
) -> None:
    """A replay is a new item: killed after its input it does not exist (not listed, not
    open); killed after its event it exists in full. Retrying makes a (new) replay. On
    PostgreSQL the killed replay's transaction left nothing: only the retry's exists."""
    check_item(
        home, s, work_id, kwargs, before, generations, project, visible
    )  # original unchanged
    new = sorted(set(ledger.all_ids(home)) - before)
    items = [ledger.load(home, w) for w in new]
    made = [i for i in items if i is not None]
    if visible != "files":
        assert len(new) == 1 and len(made) == 1, "the killed replay left nothing behind"
    elif s.step == "accepted:after-input":
        assert len(new) == 2 and len(made) == 1, "the half-made replay is invisible"
    else:
        assert len(made) == 2, "the replay killed after its event is complete"
    for i in made:
        assert i.replay_of == work_id and i.requester == "bob" and i.state == "queued"
        assert ledger.input_of(home, i.work_id) == {"text": SECRET_INPUT}
        assert i.input_sha256 == ledger.get(home, work_id).input_sha256


def check_ingest(
    home: Home,
    s: Scenario,
    work_id: str,
    kwargs: dict,
    before: set[str],
    generations: dict[str, int],
    project: Path,
) -> None:
    """Recorded before dispatch: killed before the record there is none (the identity is
    claimed, the sender's retry completes it); killed after the record (or inside the
    dispatch) the retry is a duplicate that creates or completes the work item. Either
    way one record, one item."""
    recorded = s.step not in ("delivery:after-identity", "delivery:after-body")
    records, _ = deliveries.page(home, endpoint_id="hook", source_delivery_id="delivery-1")
    assert len(records) == recorded and len(deliveries.page(home)[0]) == recorded
    if s.step.startswith("delivery:"):
        assert ledger.all_ids(home) == [], "nothing is dispatched before the record"
    else:  # killed inside the dispatch: the item is the record's, complete or not at all
        assert ledger.all_ids(home) == [records[0].work_id]
        item = ledger.load(home, records[0].work_id)
        assert (item.state if item else None) == (
            None if s.step == "accepted:after-input" else "queued"
        )
    identities = list((home.root / "deliveries" / "by-identity").glob("*.json"))
    assert len(identities) == 1, identities
    claimed = home.store.read(identities[0], deliveries.Identity)
    if s.step == "delivery:after-record":  # a runner finishes it without a redelivery
        assert deliveries.settle_pending(home) == 1
        assert ledger.load(home, records[0].work_id).state == "queued"
    intake = retry(home, "ingest", {}, frozenset())
    assert intake.duplicate == recorded
    record = deliveries.get(home, intake.delivery.delivery_id)
    assert record.delivery_id == claimed.delivery_id, "the claimed identity was completed"
    assert record.work_id == deliveries.work_id_for(record.delivery_id)
    assert record.body_bytes == len(BODY) and deliveries.raw_body(home, record) == BODY
    item = ledger.get(home, record.work_id)
    assert item.source == "webhook" and item.delivery_id == record.delivery_id
    assert [e.type for e in ledger.events(home, record.work_id)] == [A]
    assert [r.delivery_id for r in deliveries.page(home)[0]] == [record.delivery_id]
    again = deliveries.ingest(home, "hook", "delivery-1", BODY, event="push", at=T1)
    assert again.duplicate and ledger.all_ids(home) == [record.work_id]
    assert not list((home.root / "deliveries" / "pending").iterdir()), "an intake left open"


def check_recruit(
    home: Home,
    s: Scenario,
    work_id: str,
    kwargs: dict,
    before: set[str],
    generations: dict[str, int],
    project: Path,
) -> None:
    """The crew is recorded, so its assignment's item is settled by the crew log's next
    writer (accepted again if the kill came first); a claim the kill prevented is handed
    over by the next runner's dispatch. Recruiting again is refused (crew_exists)."""
    from captain_tui.runtime import ledger_probe as ledger_runtime

    snapshot, _ = crewlog.load(home, "alpha")
    assert snapshot is not None
    wid = ledger.work_id_for_assignment(snapshot.assignment.assignment_id)
    item = ledger.get(home, wid)
    claimed = s.step.startswith("claimed:")
    assert item.state == ("running" if claimed else "queued") and item.crew == "alpha"
    err = retry(home, "recruit", kwargs, frozenset({"crew_exists"}))
    assert isinstance(err, CaptainError)
    assert ledger_runtime.dispatch(home) == ([] if claimed else [wid])
    item = ledger.get(home, wid)
    assert item.state == "running" and item.generation == 1
    assert [e.type for e in ledger.events(home, wid)] == [A, C]
    assert ledger.input_of(home, wid)["assignment_id"] == snapshot.assignment.assignment_id


def check_done(
    home: Home,
    s: Scenario,
    work_id: str,
    kwargs: dict,
    before: set[str],
    generations: dict[str, int],
    project: Path,
) -> None:
    """``done`` succeeds the item through the crew log; killed after the event, the item
    reads succeeded and a second done is refused (assignment_done)."""
    snapshot, _ = crewlog.load(home, "alpha")
    assert snapshot.done_at is not None
    wid = ledger.work_id_for_assignment(snapshot.assignment.assignment_id)
    assert ledger.get(home, wid).state == "succeeded"
    err = retry(home, "done", kwargs, frozenset({"assignment_done"}))
    assert isinstance(err, CaptainError)
    assert [e.type for e in ledger.events(home, wid)] == [A, C, "succeeded"]


def check_dismiss(
    home: Home,
    s: Scenario,
    work_id: str,
    kwargs: dict,
    before: set[str],
    generations: dict[str, int],
    project: Path,
) -> None:
    """Dismissal settles the assignment's work item before it records the crew dismissed:
    a dismissed crew never leaves its item running. Killed in between, the crew is still
    live and dismissing it again completes it; either way the item ends cancelled only on
    a confirmed stop, otherwise in needs_reconciliation, with one cancel request."""
    snapshot, _ = crewlog.load(home, "alpha")
    wid = ledger.work_id_for_assignment(snapshot.assignment.assignment_id)
    final = "cancelled" if kwargs["stopped"] is True else "needs_reconciliation"
    assert ledger.get(home, wid).state == final, "the item is settled before the crew record"
    crew_recorded = s.step == "dismiss:after-crew"
    assert (snapshot.dismissed_at is not None) == crew_recorded
    result = retry(home, "dismiss", kwargs, frozenset({"crew_dismissed"}))
    assert isinstance(result, CaptainError) == crew_recorded
    snapshot, _ = crewlog.load(home, "alpha")
    assert snapshot.dismissed_at is not None
    assert ledger.get(home, wid).state == final
    assert [e.type for e in ledger.events(home, wid)] == [A, C, "cancel_requested", final]


CHECKS = {
    "replay": check_replay,
    "ingest": check_ingest,
    "recruit": check_recruit,
    "dismiss": check_dismiss,
    "done": check_done,
}


# -- the same crash points on PostgreSQL ----------------------------------------------------

LEDGER_OPS = (
    "accept",
    "replay",
    "claim",
    "report",
    "examine",
    "cancel",
    "resolve",
    "land",
    "note",
)
PG_SCENARIOS = [s for s in SCENARIOS if s.op in LEDGER_OPS]


@pytest.fixture(scope="module")
def pg_ledgers(pg_server):
    """One database for the module; each scenario's home gets a fresh ledger (a schema)."""
    name = pg_server.create_database()
    try:
        yield Ledgers("postgresql", pg_server, name)
    finally:
        close_backends()
        pg_server.drop_database(name)


def test_every_ledger_op_has_its_crash_points_on_postgresql() -> None:
    assert {s.op for s in PG_SCENARIOS} == set(LEDGER_OPS)
    steps = {s.step for s in PG_SCENARIOS}
    assert {
        f"{t}:{when}" for t in EVENT_TYPES for when in ("after-event", "after-snapshot")
    } <= steps and "accepted:after-input" in steps


@contextlib.contextmanager
def prepared_on_postgresql(tmp_path: Path, scenario: Scenario, pg_ledgers):
    """A home on a fresh ledger of the module's database with the scenario's preparation
    done: ``(root, project, work_id, generations, before)``; the ledger is forgotten after."""
    root = tmp_path / "home"
    Home(root)
    url = pg_ledgers.fresh_url()
    (root / "config.toml").write_text(CONFIG + "\n[ledger]\n" + pg_ledgers.config(url))
    project = tmp_path / "project"
    project.mkdir()
    work_id = new_id(ledger.WORK)
    home = Home(root)
    try:
        for op, kwargs in scenario.prepare:
            OPS[op](home, **fill(kwargs, work_id, project))
        generations = {w: ledger.get(home, w).generation for w in ledger.all_ids(home)}
        yield root, project, work_id, generations, set(ledger.all_ids(home))
    finally:
        pg_ledgers.forget(url)


@pytest.mark.parametrize("scenario", PG_SCENARIOS, ids=lambda s: s.id)
def test_crash_point_on_postgresql(tmp_path: Path, scenario: Scenario, pg_ledgers) -> None:
    with prepared_on_postgresql(tmp_path, scenario, pg_ledgers) as prepared:
        root, project, work_id, generations, before = prepared
        was = ledger.load(Home(root), work_id)
        kwargs = fill(scenario.kwargs, work_id, project)

        run_child(root, scenario.step, scenario.op, kwargs)

        home = Home(root)  # a new process's view
        readers_not_fooled(home)
        recover(home)
        audit(home, generations)
        assert set(ledger.all_ids(home)) == before, "the killed transaction left an item"
        check = check_replay if scenario.op == "replay" else check_item
        check(
            home,
            scenario,
            work_id,
            kwargs,
            before,
            generations,
            project,
            visible=was.state if was else None,
        )
        audit(home, generations)


# -- a webhook intake's crash points on PostgreSQL ---------------------------------------------

# the intake's own steps, and one inside the accept of its work item (the three accept steps
# sit in one transaction with the record; the ledger's scenarios above cover them all)
PG_INGEST = [
    s
    for s in SCENARIOS
    if s.op == "ingest" and (s.step.startswith("delivery:") or s.step == "accepted:after-event")
]


def test_every_intake_crash_point_runs_on_postgresql() -> None:
    assert {s.step for s in PG_INGEST} == {
        "delivery:after-identity",
        "delivery:after-body",
        "delivery:after-record",
        "accepted:after-event",
    }
    assert {s.step for s in SCENARIOS if s.op == "ingest" and s.step.startswith("delivery:")} <= {
        s.step for s in PG_INGEST
    }


@pytest.mark.parametrize("scenario", PG_INGEST, ids=lambda s: s.id)
def test_intake_crash_point_on_postgresql(tmp_path: Path, scenario: Scenario, pg_ledgers) -> None:
    """An intake is one transaction on PostgreSQL (the record, its body and its work item):
    killed anywhere inside it, nothing of it is left — no record, no body, no item, no
    claimed identity, nothing pending — and the sender's redelivery is then new and creates
    exactly one item; a third delivery is a duplicate."""
    from support import deliveries as stored

    root = tmp_path / "home"
    Home(root)
    url = pg_ledgers.fresh_url()
    (root / "config.toml").write_text(CONFIG + "\n[ledger]\n" + pg_ledgers.config(url))
    home = Home(root)
    try:
        run_child(root, scenario.step, "ingest", {})

        home = Home(root)  # a new process's view
        assert stored.records(home) == [] and stored.bodies(home) == {}, (
            f"the intake killed at {scenario.step} left part of itself"
        )
        assert deliveries.page(home) == ([], None)
        assert deliveries.page(home, endpoint_id="hook", source_delivery_id="delivery-1") == (
            [],
            None,
        )
        assert ledger.all_ids(home) == [], "the killed intake left a work item"
        assert deliveries.settle_pending(home) == 0  # nothing is ever pending here
        for folder in ("deliveries", "delivery-bodies", "work", "ledger"):
            assert not (root / folder).exists(), f"{folder}/ was written on a database home"

        intake = op_ingest(home)
        assert not intake.duplicate
        record = intake.delivery
        assert deliveries.get(home, record.delivery_id) == record
        assert record.work_id == deliveries.work_id_for(record.delivery_id)
        assert deliveries.raw_body(home, record) == BODY
        item = ledger.get(home, record.work_id)
        assert (item.source, item.state, item.delivery_id) == (
            "webhook",
            "queued",
            record.delivery_id,
        )
        assert [e.type for e in ledger.events(home, record.work_id)] == [A]
        again = deliveries.ingest(home, "hook", "delivery-1", BODY, event="push", at=T1)
        assert again.duplicate and again.delivery == record
        assert ledger.all_ids(home) == [record.work_id]
        assert stored.records(home) == [record.delivery_id]
        assert list(stored.bodies(home)) == [record.delivery_id]
        audit(home, {})
    finally:
        pg_ledgers.forget(url)


# -- a crew's steps on PostgreSQL: the crew's files here, the ledger's rows there -------------

PG_CREW = [s for s in SCENARIOS if s.op in ("recruit", "done", "dismiss")]


def check_recruit_on_postgresql(
    home: Home,
    s: Scenario,
    work_id: str,
    kwargs: dict,
    before: set[str],
    generations: dict[str, int],
    project: Path,
) -> None:
    """Recruit's ledger part is one transaction (its capacity): killed anywhere in it, the
    crew (files, durable as written) is recorded and its item rolled back whole; the crew
    log's next writer accepted it again (queued: the claim is not derivable), the next
    dispatch claims it, and recruiting again is refused."""
    from captain_tui.runtime import ledger_probe as ledger_runtime

    snapshot, _ = crewlog.load(home, "alpha")
    assert snapshot is not None
    wid = ledger.work_id_for_assignment(snapshot.assignment.assignment_id)
    assert ledger.get(home, wid).state == "queued" and ledger.get(home, wid).crew == "alpha"
    assert seen.note_path(home, wid).exists(), "settled outside a transaction: noted"
    err = retry(home, "recruit", kwargs, frozenset({"crew_exists"}))
    assert isinstance(err, CaptainError)
    assert ledger_runtime.dispatch(home) == [wid]
    item = ledger.get(home, wid)
    assert item.state == "running" and item.generation == 1
    assert [e.type for e in ledger.events(home, wid)] == [A, C]


def notes_never_lie(home: Home) -> None:
    """Every ``work-seen`` note names an item the ledger holds (committed)."""
    folder = home.root / "work-seen"
    for note in sorted(folder.iterdir()) if folder.exists() else []:
        assert ledger.exists(home, note.name), f"work-seen/{note.name} names no item"


@pytest.mark.parametrize("scenario", PG_CREW, ids=lambda s: s.id)
def test_crew_crash_point_on_postgresql(tmp_path: Path, scenario: Scenario, pg_ledgers) -> None:
    with prepared_on_postgresql(tmp_path, scenario, pg_ledgers) as prepared:
        root, project, work_id, generations, before = prepared
        kwargs = fill(scenario.kwargs, work_id, project)

        run_child(root, scenario.step, scenario.op, kwargs)

        home = Home(root)  # a new process's view
        notes_never_lie(home)
        readers_not_fooled(home)
        recover(home)
        notes_never_lie(home)
        audit(home, generations)
        check = check_recruit_on_postgresql if scenario.op == "recruit" else CHECKS[scenario.op]
        check(home, scenario, work_id, kwargs, before, generations, project)
        audit(home, generations)
        notes_never_lie(home)

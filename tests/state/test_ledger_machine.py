"""A Hypothesis state machine over the work ledger, on a real home, against an in-memory model.

Every rule calls ``state.work.ledger`` the way a worker, the reconciler or an operator would
(accept, claim, heartbeat, the clock passing a lease, examine with a probe, report with the
current or a stale generation, cancel twice, resolve, replay, reopening the home from disk)
and predicts the outcome from the model first: the new state, or the exact refusal code.
After every step the invariants are checked against what is on disk: states equal the
model's, generations monotone and equal to the number of claims, capacity respected, events
gapless and each legal, nothing after a terminal state, ``item.json`` equal to a fold of the
events from scratch, the open markers exactly the non-terminal items, distinct run ids, and
``public`` never carrying an input or an event's detail.

All times come from a controlled clock that only moves forward (every ledger call takes
``at=``), so leases expire exactly when the model says they do. Hypothesis explores at
random (swarm testing leaves some rules out of each run); ``test_ledger_machine_tour``
drives the same machine through a fixed script that reaches every transition and every
refusal, so none of them can silently go unchecked. fsync is a no-op here (see
``no_fsync``): durability is the crash test's subject.

Every test here runs on both backends (tests/support/ledger_backends.py): the home's files,
and a fresh PostgreSQL ledger per run named by the home's ``[ledger] url``. What the
invariants read beside the ledger is the backend's own storage: on files ``input.json``,
``events/`` and ``item.json``; on PostgreSQL the rows, over a connection of the test's own.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import tempfile
from collections import Counter
from dataclasses import dataclass, field
from datetime import datetime, timedelta, timezone
from pathlib import Path

import pytest
from hypothesis import HealthCheck, settings
from hypothesis import strategies as st
from hypothesis.stateful import (
    Bundle,
    RuleBasedStateMachine,
    initialize,
    invariant,
    multiple,
    precondition,
    rule,
    run_state_machine_as_test,
)
from support.ledger_backends import Ledgers

from state.errors import CaptainError
from state.home import Home
from state.records import PaneLocator
from state.store import Reports
from state.work import ledger, replay
from state.work.ledger_records import HOLDS_SLOT, TERMINAL, WorkItem

SLOTS = 2
LEASE = 10  # seconds
START = datetime(2030, 1, 1, 12, 0, tzinfo=timezone.utc)
VERDICTS = ("alive", "gone", "unknown")
DETAIL_MARK = "DETAIL-SECRET"
INPUT_MARK = "INPUT-SECRET"

# how far from the current generation a stale one is
offsets = st.integers(min_value=1, max_value=3)
EXAMPLES = 40
STEPS = 50
MAX_ITEMS = 6  # bounds the per-step audit; with 2 slots, plenty to contend for

REACHED: Counter[str] = Counter()  # label -> how many runs reached it (non-vacuity)
_THIS_RUN: set[str] = set()


def event(label: str) -> None:
    _THIS_RUN.add(label)


@dataclass
class Model:
    work_id: str
    input: dict
    max_attempts: int
    target_revision: str | None
    requester: str
    replay_of: str | None = None
    replay_reason: str | None = None
    state: str = "queued"
    generation: int = 0
    types: list[str] = field(default_factory=lambda: ["accepted"])
    run_ids: list[str] = field(default_factory=list)
    lease_until: datetime | None = None
    locator: PaneLocator | None = None
    cancel_gens: list[int] = field(default_factory=list)
    resolution: tuple | None = None
    input_sha256: str = ""

    def wrong_generation(self, offset: int) -> int:
        """A generation that is not the current one: an older one when there is one."""
        return (
            self.generation - offset if self.generation - offset >= 0 else self.generation + offset
        )


def refused(code: str, call) -> CaptainError:
    try:
        call()
    except CaptainError as err:
        assert err.code == code, f"expected refusal {code}, got {err.code}: {err}"
        event(f"refused {code}")
        return err
    raise AssertionError(f"expected refusal {code}, but the call succeeded")


class LedgerMachine(RuleBasedStateMachine):
    base: Path | None = None  # set by the test: where each run's home is made
    ledgers: Ledgers = Ledgers("files")  # set by the test: which backend each run's is on

    items = Bundle("items")

    def __init__(self) -> None:
        super().__init__()
        self.root = Path(tempfile.mkdtemp(prefix="ledger-", dir=self.base)) / "home"
        self.reports = Reports()  # every Home of this run reports here: a quarantine is a bug
        self.home = Home(self.root, reports=self.reports)
        self.url = self.ledgers.fresh_url()  # None on files: the home is the ledger
        self.db = self.ledgers.connect(self.url) if self.url else None
        (self.root / "config.toml").write_text(
            f"[ledger]\nslots = {SLOTS}\nlease_seconds = {LEASE}\n" + self.ledgers.config(self.url)
        )
        self.home = Home(self.root, reports=self.reports)  # config is read once per Home
        assert ledger.slots(self.home) == SLOTS
        assert ledger.lease_seconds(self.home) == LEASE
        self.clock = START
        self.model: dict[str, Model] = {}
        self.generations: dict[str, int] = {}  # last generation seen, for monotonicity
        self.n = 0
        self.panes = 0
        self.secrets: list[str] = []
        _THIS_RUN.clear()

    def teardown(self) -> None:
        REACHED.update(_THIS_RUN)
        REACHED["runs"] += 1
        if self.db is not None:
            self.db.close()
        self.ledgers.forget(self.url)
        shutil.rmtree(self.root.parent, ignore_errors=True)

    # -- helpers ----------------------------------------------------------------------------

    def stored(self, work_id: str) -> tuple[bytes, list[str], WorkItem | None]:
        """What the backend's storage holds for the item, read beside the ledger: the
        input's bytes, the events' names (``NNNNNNNN``), the stored item. Files:
        ``input.json``, ``events/``, the ``item.json`` cache; PostgreSQL: the rows."""
        if self.db is None:
            item_dir = self.root / "work" / work_id
            assert (item_dir / "events").is_dir()
            return (
                (item_dir / "input.json").read_bytes(),
                self.home.store.names(item_dir / "events"),
                self.home.store.read(item_dir / "item.json", WorkItem),
            )
        stored_input = self.db.execute(
            "SELECT input FROM work_inputs WHERE work_id = %s", (work_id,)
        ).fetchone()
        seqs = self.db.execute(
            "SELECT seq FROM work_events WHERE work_id = %s ORDER BY seq", (work_id,)
        ).fetchall()
        row = self.db.execute(
            "SELECT item::text FROM work_items WHERE work_id = %s", (work_id,)
        ).fetchone()
        assert stored_input is not None and row is not None, work_id
        return (
            bytes(stored_input[0]),
            [f"{seq:08d}" for (seq,) in seqs],
            WorkItem.model_validate_json(row[0]),
        )

    def held(self) -> list[Model]:
        return [m for m in self.model.values() if m.state in HOLDS_SLOT]

    def queued(self) -> list[Model]:
        return sorted(
            (m for m in self.model.values() if m.state == "queued"), key=lambda m: m.work_id
        )

    def locator(self) -> PaneLocator:
        self.panes += 1
        return PaneLocator(
            socket="/nonexistent/captain-test.sock",
            session="work",
            window_id=f"@{self.panes}",
            pane_id=f"%{self.panes}",
            pane_pid=100000 + self.panes,
        )

    def claimed(self, m: Model, item: WorkItem, locator: PaneLocator | None) -> None:
        m.state = "running"
        m.generation += 1
        m.types.append("claimed")
        m.lease_until = self.clock + timedelta(seconds=LEASE)
        m.locator = locator
        assert item.state == "running" and item.generation == m.generation
        attempt = item.attempts[-1]
        assert attempt.generation == m.generation
        assert attempt.lease_expires_at == m.lease_until
        assert attempt.runtime_locator == locator
        assert attempt.run_id.startswith("run_")
        m.run_ids.append(attempt.run_id)

    def retry_or_fail(self, m: Model, *, repeatable: bool) -> None:
        """A failure of a running attempt: back to the queue when attempts remain."""
        if repeatable and m.state == "running" and len(m.run_ids) < m.max_attempts:
            m.state = "queued"
            m.types.append("retry_queued")
        else:
            m.state = "failed"
            m.types.append("failed")

    def new_model(
        self,
        item: WorkItem,
        input_: dict,
        *,
        replay_of: str | None = None,
        replay_reason: str | None = None,
    ) -> Model:
        m = Model(
            work_id=item.work_id,
            input=input_,
            max_attempts=item.max_attempts,
            target_revision=item.target_revision,
            requester=item.requester,
            replay_of=replay_of,
            replay_reason=replay_reason,
            input_sha256=item.input_sha256,
        )
        assert item.work_id not in self.model
        self.model[item.work_id] = m
        return m

    # -- rules ------------------------------------------------------------------------------

    @initialize(target=items)
    def first(self):
        return self._accept(3, None)

    def room(self) -> bool:
        return len(self.model) < MAX_ITEMS

    @precondition(room)
    @rule(
        target=items,
        max_attempts=st.sampled_from([1, 2, 3]),
        target_revision=st.sampled_from([None, "rev-a", "rev-b"]),
    )
    def accept(self, max_attempts, target_revision):
        return self._accept(max_attempts, target_revision)

    def _accept(self, max_attempts, target_revision):
        self.n += 1
        text = f"{INPUT_MARK}-{self.n}: please summarise the conversation"
        detail = f"{DETAIL_MARK}-accept-{self.n}"
        self.secrets += [text, detail]
        input_ = {"text": text, "turns": [text, "and more"]}
        item = ledger.accept(
            self.home,
            source="chat",
            input=input_,
            requester="alice",
            target_revision=target_revision,
            max_attempts=max_attempts,
            detail=detail,
            at=self.clock,
        )
        assert item.state == "queued" and item.generation == 0 and item.source == "chat"
        assert item.requester == "alice" and item.max_attempts == max_attempts
        assert item.target_revision == target_revision and item.replay_of is None
        self.new_model(item, input_)
        return item.work_id

    @rule(has_locator=st.booleans())
    def claim_oldest(self, has_locator):
        queued = self.queued()
        locator = self.locator() if has_locator else None
        if not queued:
            refused(
                "not_queued",
                lambda: ledger.claim(self.home, holder="worker-a", locator=locator, at=self.clock),
            )
            return
        if len(self.held()) >= SLOTS:
            refused(
                "no_capacity",
                lambda: ledger.claim(self.home, holder="worker-a", locator=locator, at=self.clock),
            )
            return
        item = ledger.claim(self.home, holder="worker-a", locator=locator, at=self.clock)
        assert item.work_id == queued[0].work_id, "the oldest queued item is claimed first"
        self.claimed(queued[0], item, locator)

    @rule(work_id=items, has_locator=st.booleans())
    def claim_one(self, work_id, has_locator):
        m = self.model[work_id]
        locator = self.locator() if has_locator else None
        call = lambda: ledger.claim(  # noqa: E731
            self.home,
            work_id,
            holder="worker-b",
            locator=locator,
            at=self.clock,
        )
        if len(self.held()) >= SLOTS:
            refused("no_capacity", call)
        elif m.state != "queued":
            err = refused("not_queued", call)
            assert err.extra.get("state") == m.state
        else:
            self.claimed(m, call(), locator)

    @rule(work_id=items, stale=st.booleans(), offset=offsets)
    def heartbeat(self, work_id, stale, offset):
        m = self.model[work_id]
        generation = m.wrong_generation(offset) if stale else m.generation
        call = lambda: ledger.heartbeat(  # noqa: E731
            self.home,
            work_id,
            generation,
            holder="worker-hb",
            at=self.clock,
        )
        if stale:
            if m.generation >= 2 and generation < m.generation:
                event("stale after a takeover")
            refused("stale_generation", call)
        elif m.state != "running":
            refused("not_running", call)
        else:
            item = call()
            m.lease_until = self.clock + timedelta(seconds=LEASE)
            assert item.generation == m.generation

    @rule(seconds=st.sampled_from([0, 1, 4, 9, 10, 11, 25]))
    def tick(self, seconds):
        self.clock += timedelta(seconds=seconds)

    @rule(data=st.data(), past_lease=st.booleans())
    def examine(self, data, past_lease):
        self.examine_with(
            lambda work_id: data.draw(st.sampled_from(VERDICTS), label=work_id), past_lease
        )

    def examine_with(self, verdict_of, past_lease: bool) -> None:
        """One reconciler pass; the probe answers ``verdict_of(work_id)`` per item."""
        if past_lease:  # move the clock past every running lease
            leases = [m.lease_until for m in self.model.values() if m.state == "running"]
            if leases:
                self.clock = max(self.clock, max(leases) + timedelta(seconds=1))
        verdicts: dict[str, str] = {}
        by_pane: dict[str, str] = {}
        for m in sorted(self.model.values(), key=lambda m: m.work_id):
            if m.state == "running" and m.locator is not None:
                verdicts[m.work_id] = verdict_of(m.work_id)
                by_pane[m.locator.pane_id] = m.work_id
        probed: list[str] = []

        def probe(locator: PaneLocator) -> str:
            work_id = by_pane[locator.pane_id]
            probed.append(work_id)
            return verdicts[work_id]

        for work_id, verdict in verdicts.items():
            expired = self.model[work_id].lease_until <= self.clock
            event(f"examine {verdict} {'expired' if expired else 'live'}")
        changes = ledger.examine(self.home, probe, holder="reconciler", at=self.clock)
        assert sorted(probed) == sorted(verdicts), (
            "every running item with a locator is probed exactly once, nothing else"
        )
        expected_changes = set()
        for m in self.model.values():
            if m.state != "running":
                continue
            verdict = verdicts.get(m.work_id, "unknown")
            expired = m.lease_until <= self.clock
            if verdict == "alive":
                m.lease_until = self.clock + timedelta(seconds=LEASE)
                if expired:
                    expected_changes.add(m.work_id)
            elif expired:
                expected_changes.add(m.work_id)
                if verdict == "gone":
                    self.retry_or_fail(m, repeatable=True)
                else:  # a timer never turns "cannot verify" into anything but reconciliation
                    m.state = "needs_reconciliation"
                    m.types.append("needs_reconciliation")
        assert {c.split(":", 1)[0] for c in changes} == expected_changes, changes

    @rule(
        work_id=items,
        outcome=st.sampled_from(["succeeded", "failed"]),
        repeatable=st.booleans(),
        stale=st.booleans(),
        offset=offsets,
        cost=st.sampled_from([None, 0.0, 1.25]),
    )
    def report(self, work_id, outcome, repeatable, stale, offset, cost):
        m = self.model[work_id]
        generation = m.wrong_generation(offset) if stale else m.generation
        detail = f"{DETAIL_MARK}-report-{work_id}-{len(m.types)}"
        self.secrets.append(detail)
        call = lambda: ledger.report(  # noqa: E731
            self.home,
            work_id,
            generation,
            outcome,
            actor="worker-r",
            cost_usd=cost,
            detail=detail,
            repeatable=repeatable,
            at=self.clock,
        )
        if stale:
            if m.generation >= 2 and generation < m.generation:
                event("stale after a takeover")
            refused("stale_generation", call)
            return
        event(f"report {m.state} {outcome}{' repeatable' if repeatable else ''}")
        if m.state not in ("running", "needs_reconciliation"):
            refused("not_running", call)
            return
        was_running = m.state == "running"
        item = call()
        if outcome == "failed":
            self.retry_or_fail(m, repeatable=repeatable)
        else:
            m.state = "succeeded"
            m.types.append("succeeded")
        assert item.state == m.state
        ended = item.attempts[-1]
        assert ended.ended_at == self.clock
        assert ended.outcome == ("failed" if outcome == "failed" else "succeeded")
        assert ended.cost_usd == cost, "an unknown cost stays null, never an invented zero"
        if was_running and m.state == "queued":
            assert item.generation == m.generation, "a retry keeps the generation until claimed"

    @rule(
        work_id=items,
        first=st.sampled_from([True, False, None, "raises"]),
        second=st.sampled_from([True, False, None, "raises"]),
        with_stop=st.booleans(),
    )
    def cancel_twice(self, work_id, first, second, with_stop):
        m = self.model[work_id]
        for answer in (first, second):
            event(f"cancel {m.state} stop={answer if with_stop else 'absent'}")
            stops: list = []

            def stop(attempt, answer=answer, stops=stops):
                stops.append(attempt.run_id)
                if answer == "raises":  # the runtime failed to stop: confirms nothing
                    raise OSError("the pane could not be closed")
                return answer

            before = (m.state, m.generation)
            result = ledger.cancel(
                self.home,
                work_id,
                actor="operator",
                reason="no longer needed",
                stop=stop if with_stop else None,
                at=self.clock,
            )
            answer = answer if with_stop else None
            if m.state in TERMINAL:
                assert result.outcome == "already_terminal"
                assert not stops
            elif m.state == "queued":
                assert result.outcome == "cancelled" and not stops
                m.state = "cancelled"
                m.types.append("cancelled")
            else:
                if with_stop:
                    assert stops == [m.run_ids[-1]], "stop is asked of the current attempt"
                if m.generation not in m.cancel_gens:
                    m.cancel_gens.append(m.generation)
                    m.types.append("cancel_requested")
                if answer is True:
                    assert result.outcome == "cancelled"
                    m.state = "cancelled"
                    m.types.append("cancelled")
                else:
                    assert result.outcome == "stop_unconfirmed"
                    if m.state == "running":  # never cancelled on a guess
                        m.state = "needs_reconciliation"
                        m.types.append("needs_reconciliation")
            assert result.item.state == m.state, (before, result)
            assert result.item.generation == m.generation
            on_disk = [e.type for e in ledger.events(self.home, work_id)]
            assert on_disk == m.types, "a second cancel in one generation adds no event"
            assert on_disk.count("cancel_requested") == len(m.cancel_gens)

    @rule(
        work_id=items,
        to=st.sampled_from(["succeeded", "failed", "cancelled"]),
        reason=st.sampled_from([None, "  ", "checked the pane: it is gone"]),
        runtime_stopped=st.booleans(),
        stale=st.booleans(),
        offset=offsets,
    )
    def resolve(self, work_id, to, reason, runtime_stopped, stale, offset):
        m = self.model[work_id]
        generation = m.wrong_generation(offset) if stale else m.generation
        call = lambda: ledger.resolve(  # noqa: E731
            self.home,
            work_id,
            generation=generation,
            to=to,
            reason=reason,
            operator="oscar",
            runtime_stopped=runtime_stopped,
            at=self.clock,
        )
        if not reason or not reason.strip():
            refused("evidence_required", call)
        elif to == "cancelled" and not runtime_stopped:
            refused("evidence_required", call)
        elif m.state != "needs_reconciliation":
            refused("not_reconciling", call)
        elif stale:
            refused("stale_generation", call)
        else:
            item = call()
            m.state = to
            m.types.append("resolved")
            m.resolution = ("oscar", reason, to, runtime_stopped, self.clock)
            event("resolved")
            assert item.state == to
            assert item.attempts[-1].ended_at == self.clock

    @precondition(room)
    @rule(
        target=items,
        work_id=items,
        reason=st.sampled_from([None, "", "the first run hit a flaky network"]),
        target_revision=st.sampled_from([None, "rev-c"]),
    )
    def replay(self, work_id, reason, target_revision):
        original = self.model[work_id]
        call = lambda: replay.replay(  # noqa: E731
            self.home,
            work_id,
            actor="bob",
            reason=reason,
            target_revision=target_revision,
            at=self.clock,
        )
        if not reason:
            refused("evidence_required", call)
            return multiple()
        if original.state not in TERMINAL:
            refused("not_finished", call)
            return multiple()
        item = call()
        event("replayed")
        assert item.work_id != work_id
        assert item.replay_of == work_id and item.replay_reason == reason
        assert item.requester == "bob", "a replay carries the replayer, not the requester"
        assert item.input_sha256 == original.input_sha256
        assert item.target_revision == (
            target_revision if target_revision is not None else original.target_revision
        )
        assert item.max_attempts == original.max_attempts
        assert item.state == "queued" and item.generation == 0 and not item.attempts
        self.new_model(item, original.input, replay_of=work_id, replay_reason=reason)
        return item.work_id

    # targeted rules: the same operations aimed at an item in the state they act on, so the
    # interesting transitions (retries, resolutions, replays) are reached often

    def pick(self, data, states) -> str:
        return data.draw(
            st.sampled_from(sorted(w for w, m in self.model.items() if m.state in states)),
            label="work_id",
        )

    @precondition(lambda self: any(m.state == "queued" for m in self.model.values()))
    @rule(data=st.data(), has_locator=st.sampled_from([True, True, False]))
    def claim_queued(self, data, has_locator):
        self.claim_one(self.pick(data, {"queued"}), has_locator)

    @precondition(lambda self: any(m.state == "running" for m in self.model.values()))
    @rule(
        data=st.data(), outcome=st.sampled_from(["succeeded", "failed"]), repeatable=st.booleans()
    )
    def report_running(self, data, outcome, repeatable):
        self.report(self.pick(data, {"running"}), outcome, repeatable, False, 1, None)

    @precondition(lambda self: any(m.generation >= 2 for m in self.model.values()))
    @rule(data=st.data(), outcome=st.sampled_from(["succeeded", "failed"]))
    def superseded_worker(self, data, outcome):
        """The worker of an attempt that was taken over (a retry was claimed again) wakes
        up: it may neither renew nor report, whatever the item's state now."""
        work_id = data.draw(
            st.sampled_from(sorted(w for w, m in self.model.items() if m.generation >= 2)),
            label="work_id",
        )
        old = data.draw(
            st.integers(min_value=1, max_value=self.model[work_id].generation - 1), label="old"
        )
        self.superseded(work_id, old, outcome)

    def superseded(self, work_id: str, old: int, outcome: str) -> None:
        assert 1 <= old < self.model[work_id].generation
        refused(
            "stale_generation",
            lambda: ledger.heartbeat(self.home, work_id, old, holder="old-worker", at=self.clock),
        )
        refused(
            "stale_generation",
            lambda: ledger.report(
                self.home, work_id, old, outcome, actor="old-worker", at=self.clock
            ),
        )
        event("stale after a takeover")

    @precondition(lambda self: any(m.state == "needs_reconciliation" for m in self.model.values()))
    @rule(
        data=st.data(),
        to=st.sampled_from(["succeeded", "failed", "cancelled"]),
        runtime_stopped=st.sampled_from([True, True, False]),
        stale=st.sampled_from([False, False, True]),
        offset=offsets,
    )
    def resolve_reconciling(self, data, to, runtime_stopped, stale, offset):
        self.resolve(
            self.pick(data, {"needs_reconciliation"}),
            to,
            "operator looked at the pane",
            runtime_stopped,
            stale,
            offset,
        )

    @precondition(
        lambda self: self.room() and any(m.state in TERMINAL for m in self.model.values())
    )
    @rule(target=items, data=st.data(), target_revision=st.sampled_from([None, "rev-d"]))
    def replay_finished(self, data, target_revision):
        return self.replay(self.pick(data, TERMINAL), "run it again", target_revision)

    @precondition(lambda self: any(m.state == "running" for m in self.model.values()))
    @rule(
        data=st.data(),
        first=st.sampled_from([True, False, None, "raises"]),
        second=st.sampled_from([True, False, None, "raises"]),
    )
    def cancel_running(self, data, first, second):
        self.cancel_twice(self.pick(data, {"running"}), first, second, True)

    @precondition(lambda self: any(m.state == "running" for m in self.model.values()))
    @rule(data=st.data())
    def examine_past_lease(self, data):
        self.examine(data, True)

    @rule()
    def reopen(self):
        """A new process's view: a fresh Home (and Store) on the same root."""
        self.home.close()  # the old view's ledger handle: its connections
        self.home = Home(self.root, reports=self.reports)

    # -- invariants -------------------------------------------------------------------------

    @invariant()
    def matches_the_model(self):
        home = self.home
        if self.db is not None:  # the work is in the database, none of it in the files
            assert not (self.root / "work").exists() and not (self.root / "ledger").exists()
        assert ledger.slots(home) == SLOTS
        all_run_ids: list[str] = []
        for work_id, m in self.model.items():
            item = ledger.load(home, work_id)
            assert item is not None
            assert item.state == m.state, (work_id, item.state, m.state)
            # generation: monotone, and the number of claims
            assert item.generation == m.generation
            assert item.generation >= self.generations.get(work_id, 0)
            self.generations[work_id] = item.generation
            assert [a.run_id for a in item.attempts] == m.run_ids
            assert [a.generation for a in item.attempts] == list(range(1, m.generation + 1))
            assert item.cancel_requested == m.cancel_gens
            assert (
                item.source,
                item.requester,
                item.replay_of,
                item.replay_reason,
                item.target_revision,
                item.max_attempts,
                item.input_sha256,
            ) == (
                "chat",
                m.requester,
                m.replay_of,
                m.replay_reason,
                m.target_revision,
                m.max_attempts,
                m.input_sha256,
            )
            if m.resolution is None:
                assert item.resolution is None
            else:
                r = item.resolution
                assert (r.operator, r.reason, r.to, r.runtime_stopped, r.at) == m.resolution
            assert ledger.input_of(home, work_id) == m.input
            stored, names, cached = self.stored(work_id)
            assert item.input_sha256 == hashlib.sha256(stored).hexdigest(), (
                "input_sha256 is the fingerprint of the stored input"
            )
            if m.state == "running":
                assert ledger.lease_expires(home, item) == m.lease_until
            all_run_ids += m.run_ids

            # events: gapless, each legal, generations monotone, nothing after terminal
            events = ledger.events(home, work_id)
            assert names == [f"{i:08d}" for i in range(1, len(names) + 1)], names
            assert len(events) == len(names), f"an event of {work_id} failed to parse"
            assert [e.seq for e in events] == list(range(1, len(events) + 1))
            assert [e.type for e in events] == m.types
            state, generation, folded = None, 0, None
            for ev in events:
                assert state not in TERMINAL, f"{work_id}: event {ev.seq} after {state}"
                assert ledger.legal(state, ev), (work_id, state, ev.type, ev.state)
                assert ev.generation >= generation
                event(f"transition {state} -{ev.type}-> {ev.state}")  # coverage
                state, generation = ev.state, ev.generation
                folded = ledger.fold(folded, ev, work_id)
            assert generation == m.generation
            assert sum(e.type == "claimed" for e in events) == m.generation
            # item.json (the item's row) is exactly the fold of the events from scratch
            assert cached is not None and cached == folded, work_id
            assert item == folded

            # what may be shown: never the input, never an event's detail
            shown = json.dumps(ledger.public(home, item, detail=True)) + json.dumps(
                ledger.public(home, item)
            )
            for secret in self.secrets:
                assert secret not in shown, f"public({work_id}) leaks {secret!r}"
            assert INPUT_MARK not in shown and DETAIL_MARK not in shown

        assert len(all_run_ids) == len(set(all_run_ids)), "a run id was reused"
        # capacity: running + needs_reconciliation never exceed the slots
        held = ledger.held(home)
        assert len(held) <= SLOTS
        assert sorted(i.work_id for i in held) == sorted(m.work_id for m in self.held())
        assert [i.work_id for i in ledger.queued(home)] == [m.work_id for m in self.queued()]
        # open markers: exactly the items that are not terminal
        open_ids = set(ledger.open_ids(home))
        live = {w for w, m in self.model.items() if m.state not in TERMINAL}
        assert open_ids >= live, f"non-terminal items without an open marker: {live - open_ids}"
        assert open_ids == live, f"terminal items still marked open: {open_ids - live}"
        assert not (self.root / "quarantine").exists(), list((self.root / "quarantine").iterdir())
        assert self.reports.reported() == []


# Every transition and refusal the ledger has. The scripted tour below must reach all of
# them through the machine's own rules (so the model and the invariants are exercised on
# each); the random runs must reach at least CORE (each label is reached by a third or
# more of the runs, so missing one means the machine broke, not bad luck). The rest is
# printed with -s: retries, takeovers and resolutions need longer chains and are reached
# by some runs only.
TRANSITIONS = [
    "transition None -accepted-> queued",
    "transition queued -claimed-> running",
    "transition queued -cancelled-> cancelled",
    "transition running -succeeded-> succeeded",
    "transition running -failed-> failed",
    "transition running -retry_queued-> queued",
    "transition running -cancel_requested-> running",
    "transition running -cancelled-> cancelled",
    "transition running -needs_reconciliation-> needs_reconciliation",
    "transition needs_reconciliation -cancel_requested-> needs_reconciliation",
    "transition needs_reconciliation -cancelled-> cancelled",
    "transition needs_reconciliation -succeeded-> succeeded",
    "transition needs_reconciliation -failed-> failed",
    "transition needs_reconciliation -resolved-> succeeded",
    "transition needs_reconciliation -resolved-> failed",
    "transition needs_reconciliation -resolved-> cancelled",
]
REFUSALS = [
    f"refused {code}"
    for code in (
        "no_capacity",
        "not_queued",
        "stale_generation",
        "not_running",
        "evidence_required",
        "not_reconciling",
        "not_finished",
    )
]
EVERYTHING = [
    *TRANSITIONS,
    *REFUSALS,
    "replayed",
    "stale after a takeover",
    *(f"examine {v} {w}" for v in VERDICTS for w in ("expired", "live")),
]
CORE = [
    "transition queued -claimed-> running",
    "transition running -cancel_requested-> running",
    "transition running -needs_reconciliation-> needs_reconciliation",
    "refused no_capacity",
    "refused not_queued",
    "refused stale_generation",
    "refused not_running",
    "refused evidence_required",
    "replayed",
]


@pytest.fixture
def no_fsync(monkeypatch):
    # Durability is the crash test's subject (tests/state/test_ledger_crash.py, real fsyncs); here
    # fsync only makes every step wait for the disk, so it is a no-op in these two tests.
    # Every write still goes through the store's temp-file, link and rename rules.
    monkeypatch.setattr(os, "fsync", lambda fd: None)


def test_ledger_state_machine(tmp_path: Path, no_fsync, ledgers) -> None:
    LedgerMachine.base = tmp_path
    LedgerMachine.ledgers = ledgers
    REACHED.clear()
    run_state_machine_as_test(
        LedgerMachine,
        settings=settings(
            max_examples=EXAMPLES,
            stateful_step_count=STEPS,
            deadline=None,
            suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much],
        ),
    )
    print(
        f"ledger machine: {REACHED['runs']} runs; runs reaching each label:",
        *sorted(REACHED.items()),
        sep="\n  ",
    )
    missing = [label for label in CORE if not REACHED[label]]
    assert not missing, f"the machine never reached {missing}: it proved nothing about them"


def test_ledger_machine_tour(tmp_path: Path, no_fsync, ledgers) -> None:
    """The same machine driven through a fixed script that reaches every transition and
    every refusal, checking the invariants after each step like a Hypothesis run does."""
    LedgerMachine.base = tmp_path
    LedgerMachine.ledgers = ledgers
    _THIS_RUN.clear()
    m = LedgerMachine()
    ids = m.model

    def step(rule, *args):
        result = rule(*args)
        m.matches_the_model()
        return result

    try:
        m.matches_the_model()
        a = step(m.first)  # max_attempts 3
        b = step(m.accept, 1, "rev-a")
        step(m.claim_one, a, True)
        step(m.claim_one, b, True)
        c = step(m.accept, 2, None)
        step(m.claim_one, c, True)  # no_capacity: both slots held
        step(m.claim_oldest, True)  # no_capacity
        step(m.heartbeat, a, True, 1)  # stale_generation (a generation that never was)
        step(m.tick, 4)
        step(m.heartbeat, a, False, 1)  # renewed
        step(m.examine_with, lambda w: "alive", False)  # alive, lease still live
        step(m.examine_with, lambda w: "unknown", False)  # unknown, live: nothing happens
        step(m.examine_with, lambda w: "gone", False)  # gone, live: nothing happens
        step(m.report, b, "succeeded", False, False, 1, 0.5)
        step(m.report, b, "failed", False, False, 1, None)  # not_running
        step(m.claim_one, b, False)  # not_queued
        step(m.replay, b, None, None)  # evidence_required
        step(m.replay, c, "again", None)  # not_finished
        # the lease runs out: a's process is confirmed gone -> a retry, same work id
        step(m.examine_with, lambda w: "gone", True)
        assert ids[a].state == "queued" and ids[a].generation == 1
        step(m.claim_one, a, True)  # generation 2: a new attempt, a new run id
        step(m.superseded, a, 1, "succeeded")  # the first attempt's worker is fenced out
        step(m.heartbeat, a, True, 1)
        step(m.claim_oldest, True)  # c
        step(m.claim_oldest, False)  # no_capacity or not_queued, as the model says
        step(m.examine_with, lambda w: "alive" if w == a else "unknown", True)
        assert ids[c].state == "needs_reconciliation"
        step(m.resolve, c, "cancelled", None, True, False, 1)  # evidence_required
        step(m.resolve, c, "cancelled", "looked", False, False, 1)  # evidence_required
        step(m.resolve, c, "failed", "looked", False, True, 1)  # stale_generation
        step(m.resolve, a, "failed", "looked", False, False, 1)  # not_reconciling
        step(m.resolve, c, "failed", "the pane is gone, no report", False, False, 1)
        step(m.cancel_twice, a, None, True, True)  # unconfirmed, then confirmed
        assert ids[a].state == "cancelled"
        step(m.reopen)
        d = step(m.replay, a, "run it again", None)
        assert ids[d].replay_of == a and ids[d].max_attempts == 3
        e = step(m.replay, c, "on another revision", "rev-z")
        step(m.claim_one, d, True)
        step(m.claim_one, e, True)
        step(m.cancel_twice, d, False, False, True)  # needs_reconciliation, asked once
        step(m.cancel_twice, d, True, None, True)  # confirmed from needs_reconciliation
        step(m.report, e, "failed", False, False, 1, None)  # running -> failed
        f = step(m.accept, 1, None)
        step(m.cancel_twice, f, True, True, True)  # queued: cancelled, then already terminal
        g = step(m.accept, 1, None)
        step(m.claim_one, g, True)
        step(m.cancel_twice, g, True, True, True)  # running: stop confirmed
        for to, outcome in (
            (None, "succeeded"),
            (None, "failed"),
            ("failed", None),
            ("succeeded", None),
            ("cancelled", None),
        ):
            h = step(m.accept, 1, None)
            step(m.claim_one, h, True)
            step(m.examine_with, lambda w: "unknown", True)
            assert ids[h].state == "needs_reconciliation"
            if outcome is None:  # an operator's verdict
                step(m.resolve, h, to, "checked", True, False, 1)
            else:  # a late report from the still-live attempt
                step(m.report, h, outcome, True, False, 1, None)
        i = step(m.accept, 2, None)
        step(m.claim_one, i, False)  # no locator: the probe cannot be asked
        step(m.examine_with, lambda w: "alive", True)
        assert ids[i].state == "needs_reconciliation"
        step(m.cancel_twice, i, None, None, False)  # no stop at all
        step(m.report, i, "failed", True, False, 1, None)  # no retry out of reconciliation
        assert ids[i].state == "failed"
        step(m.replay, i, "", None)
        step(m.claim_oldest, True)  # not_queued
    finally:
        m.teardown()
    missing = [label for label in EVERYTHING if label not in _THIS_RUN]
    assert not missing, f"the tour no longer reaches {missing}"


def test_listing_work_in_a_home_without_any_creates_nothing(tmp_path, ledgers):
    home = ledgers.home(tmp_path / "home")
    before = sorted(p.name for p in home.root.iterdir())
    assert ledger.open_ids(home) == [] and ledger.all_ids(home) == []
    assert sorted(p.name for p in home.root.iterdir()) == before

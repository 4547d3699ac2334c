"""A stress worker: a random mix of the whole protocol and ledger on a real home.

Run as a script, this module is the *zygote*: it imports everything once, then forks a
worker per ``spawn IDX GEN SEED`` line on stdin (printing its pid) and reaps one per
``reap PID`` line (printing its exit code), so a respawn after a SIGKILL costs
milliseconds and the kills land mid-operation.

A worker is one identity (``w<IDX>``) across its lives. It owns its crews (named
``w<IDX>-<GEN>-<N>``) and its work items, so protocol refusals are rare. After an operation
*returns* it appends one fsynced JSON line to ``logs/w<IDX>.log``: that line is the
acknowledgement the audit holds the home to. A refusal (``CaptainError``) is logged with
its code. Anything else kills the worker with a traceback, which the harness reports.

A new life continues from its log (its crews and items) and reads every state it acts on
from the home, as a person at a terminal would: the log is behind the home by at most the
one operation the kill interrupted.

With several homes sharing one PostgreSQL ledger (two hosts), worker ``w<IDX>`` lives in
home ``IDX mod homes``: its crews, mail and notifications are that home's files, its work
items the shared ledger's. There a worker also acts on the other workers' items, across
hosts, the way the ledger allows anyone to: it replays their finished items (the replay is
its own) and tries stale reports and heartbeats on their taken-over attempts, which the
fence must refuse whichever host holds the attempt.

``CAPTAIN_STRESS_BREAK`` switches on a negative control, inside this process only:

- ``in-place``: the store writes records in place (open, write half, pause, write the
  rest; no temp file, no fsync, no rename), so readers can see torn records and a kill in
  the pause leaves one behind;
- ``no-fence``: the ledger's generation check is a no-op, so the stale reports and
  heartbeats workers deliberately attempt now and then succeed (on PostgreSQL a report
  then takes the general path, where that check is: the one statement's is SQL's, held to
  the general path's by tests/state/test_ledger_one_trip.py).
"""

from __future__ import annotations

import json
import os
import random
import sys
import time
import traceback
from collections import deque
from pathlib import Path

import stress_layout

from state.crew import crewlog, guards, mailbox, notify, protocol
from state.crew.guards import Context
from state.errors import CaptainError
from state.home import Home
from state.store import FILE_MODE, Quarantined, Store
from state.work import ledger, replay
from state.work.ledger_records import TERMINAL

BREAK_ENV = "CAPTAIN_STRESS_BREAK"
BREAKS = ("in-place", "no-fence")
SLOT_CAP = 14  # slots one worker may hold (4 workers x 14 < the home's 64)
MAX_CREWS = 5  # live crews per worker
MAX_OPEN_ITEMS = 6  # unfinished chat items per worker
KEEP_RETIRED = 8  # dismissed crews remembered for re-recruiting and acks
TEAR_PAUSE = 0.003  # in-place control: seconds between the two halves of a record
# a stale attempt acts at a generation below the current one, on a running item at this
# generation or more: 2 (an attempt taken over by a retry's claim); the no-fence control
# also uses 1 (generation 0, before any claim), so it is caught within seconds
STALE_FROM = 2

# how often each kind is picked when it has a target (a stale attempt needs a retried item
# that is running again, which is rare: when there is one, it is likely to be tried)
WEIGHTS = {
    "recruit": 4,
    "tell": 10,
    "ask": 6,
    "answer": 7,
    "inbox": 7,
    "done": 6,
    "assign": 6,
    "dismiss": 2,
    "wait": 9,
    "ack": 8,
    "accept": 5,
    "claim": 7,
    "heartbeat": 5,
    "report": 6,
    "stale": 20,
    "cancel": 4,
    "resolve": 6,
    "replay": 3,
}


# -- negative controls ------------------------------------------------------------------------


def _write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view) :]


def _write_torn(fd: int, data: bytes) -> None:
    half = max(1, len(data) // 2)
    _write_all(fd, data[:half])
    time.sleep(TEAR_PAUSE)  # a reader (or a kill) between the halves sees half a record
    _write_all(fd, data[half:])


def _publish_in_place(self: Store, path: Path, data: bytes) -> None:
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW, FILE_MODE)
    try:
        _write_torn(fd, data)
    finally:
        os.close(fd)


def _create_once_in_place(self: Store, path: Path, data: bytes, same=None) -> bool:
    try:
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, FILE_MODE)
    except FileExistsError:
        try:
            existing = self.read_bytes(path)
        except Quarantined as bad:
            raise CaptainError("store_error", f"{path} {bad}") from None
        if existing == data or (same is not None and existing is not None and same(existing, data)):
            return False
        raise CaptainError("message_conflict", f"{path.name} exists with other content")
    try:
        _write_torn(fd, data)
    finally:
        os.close(fd)
    return True


def apply_break(mode: str) -> None:
    """Switch a negative control on in this process (never in product code)."""
    if not mode:
        return
    if mode == "in-place":
        Store.publish = _publish_in_place
        Store.create_once = _create_once_in_place
    elif mode == "no-fence":
        from state.work.pg_backend import PostgresBackend

        ledger._fenced = lambda item, generation, what: None
        PostgresBackend.report_at_once = lambda self, **ask: None  # the general path
        global STALE_FROM
        STALE_FROM = 1  # the first claim's item is a target too: caught in a short run
    else:
        raise SystemExit(f"{BREAK_ENV}={mode!r} is not one of {', '.join(BREAKS)}")


# -- the worker ---------------------------------------------------------------------------------


class Worker:
    def __init__(
        self,
        idx: int,
        gen: int,
        root: Path,
        logs: Path,
        project: Path,
        seed: int,
        shared: bool = False,
    ) -> None:
        self.idx, self.gen, self.me = idx, gen, f"w{idx}"
        self.root = root
        self.shared = shared  # the ledger is shared with workers of another home
        self.home = Home(root)
        self.project = str(project)
        self.rng = random.Random(seed)
        self.n = 0
        log_path = logs / f"w{idx}.log"
        existing = log_path.read_bytes() if log_path.exists() else b""
        self.fd = os.open(log_path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
        if existing and not existing.endswith(b"\n"):
            os.write(self.fd, b"\n")  # end a line torn by the kill: it was never acknowledged
        self.crews: dict[str, bool] = {}  # name -> dismissed (as far as this worker knows)
        self.items: list[str] = []  # own chat items, unfinished as far as known
        self.finished: deque[str] = deque(maxlen=12)  # own finished items: replay candidates
        self.reconcile: set[str] = set()  # items of dismissed crews that may need a resolve
        self._continue(existing)
        self.log("start", seed=seed)

    # -- the log ---------------------------------------------------------------------------

    def log(self, op: str, **entry) -> None:
        line = json.dumps({"w": self.idx, "g": self.gen, "op": op, "ok": True, **entry})
        os.write(self.fd, line.encode() + b"\n")
        os.fsync(self.fd)

    def refused(self, op: str, err: CaptainError, **entry) -> None:
        line = json.dumps(
            {
                "w": self.idx,
                "g": self.gen,
                "op": op,
                "ok": False,
                "refused": err.code,
                "message": err.message[:300],
                **entry,
            }
        )
        os.write(self.fd, line.encode() + b"\n")
        os.fsync(self.fd)

    def _continue(self, existing: bytes) -> None:
        """Pick up where earlier lives left off: their log, then crews the log missed."""
        for raw in existing.splitlines():
            try:
                e = json.loads(raw)
            except ValueError:
                continue  # a torn last line: never acknowledged
            if not e.get("ok"):
                continue
            op = e["op"]
            if op in ("recruit", "assign"):
                self.crews[e["crew"]] = False
            elif op == "dismiss":
                self.crews[e["crew"]] = True
                self.reconcile.add(e["work_id"])
            elif op in ("accept", "replay"):
                self.items.append(e["work_id"])
            elif op in ("report", "cancel", "resolve") and e.get("state") in TERMINAL:
                self._finish(e["work_id"])
        crew_dir = self.root / "crew"
        if crew_dir.is_dir():  # a recruit killed before its log line still made a crew
            for key in sorted(os.listdir(crew_dir)):
                if key.startswith(f"{self.me}-") and key not in self.crews:
                    self.crews[key] = False
        retired = [name for name, gone in self.crews.items() if gone]
        for name in retired[:-KEEP_RETIRED]:
            del self.crews[name]

    def _finish(self, work_id: str) -> None:
        if work_id in self.items:
            self.items.remove(work_id)
        self.reconcile.discard(work_id)
        if work_id not in self.finished:
            self.finished.append(work_id)

    # -- reading the home ------------------------------------------------------------------

    def survey(self) -> None:
        self.snaps = {}
        for name in list(self.crews):
            snap, _ = crewlog.load(self.home, name)
            if snap is None:
                continue  # a recruit killed before its first event: no crew at all
            self.snaps[name] = snap
            if snap.dismissed_at is not None and not self.crews[name]:
                self.crews[name] = True
                self.reconcile.add(ledger.work_id_for_assignment(snap.assignment.assignment_id))
        self.work = {}
        for work_id in [*self.items, *sorted(self.reconcile)]:
            item = ledger.load(self.home, work_id)
            if item is None:  # an accept killed before its first event: no item
                if work_id in self.items:
                    self.items.remove(work_id)
                self.reconcile.discard(work_id)
                continue
            if item.state in TERMINAL:
                self._finish(work_id)
            else:
                self.work[work_id] = item

    def live(self, *, done: bool | None = None) -> list[str]:
        return sorted(
            n
            for n, s in self.snaps.items()
            if s.dismissed_at is None and (done is None or (s.done_at is not None) == done)
        )

    def held(self) -> int:
        busy = sum(1 for i in self.work.values() if i.state in ("running", "needs_reconciliation"))
        return busy + len(self.live(done=False))

    def ctx(self, name: str) -> Context:
        snap = self.snaps[name]
        return Context("crew", snap.name, snap.incarnation_id, snap.assignment.assignment_id)

    def pick(self, seq):
        seq = list(seq)
        return self.rng.choice(seq) if seq else None

    # -- the loop --------------------------------------------------------------------------

    def run(self) -> None:
        while True:
            self.n += 1
            self.survey()
            kinds = sorted(
                WEIGHTS, key=lambda k: self.rng.random() ** (1.0 / WEIGHTS[k]), reverse=True
            )
            for kind in kinds:
                try:
                    if getattr(self, f"op_{kind}")():
                        break
                except CaptainError as err:
                    self.refused(kind, err)
                    break

    # -- crews -----------------------------------------------------------------------------

    def op_recruit(self) -> bool:
        if self.held() >= SLOT_CAP or len(self.live()) >= MAX_CREWS:
            return False
        again = [
            n
            for n, s in self.snaps.items()
            if s.dismissed_at is not None
            and not mailbox.unacknowledged(self.home, n, s.assignment.assignment_id)
        ]
        if again and self.rng.random() < 0.5:
            name = self.pick(again)
            handoff = self.snaps[name].assignment.assignment_id
        else:
            name, handoff = f"{self.me}-{self.gen}-{self.n}", None
        rec = protocol.recruit(
            self.home,
            name,
            f"task {name} {self.gen}.{self.n}",
            owns=None if handoff else [f"src/{name}"],
            allow=None if handoff else ["edit", "test"],
            handoff=handoff,
            cwd=self.project,
        )
        self.crews[name] = False
        self.log(
            "recruit",
            crew=name,
            incarnation_id=rec.incarnation_id,
            assignment_id=rec.assignment_id,
            message_id=rec.message_id,
            work_id=rec.work_id,
            handoff=handoff,
        )
        return True

    def op_tell(self) -> bool:
        name = self.pick(self.live(done=False))
        if name is None:
            return False
        text = f"tell {name} {self.gen}.{self.n} {self.rng.getrandbits(40):010x}"
        msg = protocol.tell(
            self.home, name, text, assignment_id=self.snaps[name].assignment.assignment_id
        )
        self.log(
            "tell", crew=name, message_id=msg.message_id, text=text, assignment_id=msg.assignment_id
        )
        return True

    def op_ask(self) -> bool:
        ready = [
            n
            for n in self.live(done=False)
            if guards.pending_question(self.home, n, self.snaps[n]) is None
        ]
        name = self.pick(ready)
        if name is None:
            return False
        event = protocol.ask(
            self.home, name, f"question {name} {self.gen}.{self.n}?", ctx=self.ctx(name)
        )
        self.log(
            "ask",
            crew=name,
            seq=event.seq,
            question_id=event.question_id,
            delivery_id=event.delivery_id,
            assignment_id=event.assignment_id,
        )
        return True

    def op_answer(self) -> bool:
        waiting = [
            (n, q)
            for n in self.live(done=False)
            if (q := guards.pending_question(self.home, n, self.snaps[n]))
        ]
        if not waiting:
            return False
        name, question = self.rng.choice(waiting)
        text = f"answer {question.question_id}"
        msg = protocol.answer(
            self.home,
            name,
            question.question_id,
            text,
            assignment_id=self.snaps[name].assignment.assignment_id,
        )
        self.log(
            "answer",
            crew=name,
            message_id=msg.message_id,
            text=text,
            question_id=question.question_id,
            assignment_id=msg.assignment_id,
        )
        return True

    def _inbox(self, name: str) -> None:
        got = protocol.inbox(self.home, name, deliver=lambda batch: None, ctx=self.ctx(name))
        self.log("inbox", crew=name, receipts=[m.message_id for m in got])

    def op_inbox(self) -> bool:
        name = self.pick(self.live())
        if name is None:
            return False
        self._inbox(name)
        return True

    def op_done(self) -> bool:
        ready = []
        for name in self.live(done=False):
            snap = self.snaps[name]
            item = ledger.load(
                self.home, ledger.work_id_for_assignment(snap.assignment.assignment_id)
            )
            if (
                guards.pending_question(self.home, name, snap) is None
                and item is not None
                and item.state in ("running", "needs_reconciliation")
            ):
                ready.append(name)
        name = self.pick(ready)
        if name is None:
            return False
        if mailbox.unread(self.home, name, self.snaps[name]):
            self._inbox(name)  # done refuses unread mail: read it first, as a crew would
        asg = self.snaps[name].assignment.assignment_id
        event = protocol.done(self.home, name, f"report {name} {asg}", ctx=self.ctx(name))
        self.log(
            "done",
            crew=name,
            seq=event.seq,
            delivery_id=event.delivery_id,
            assignment_id=asg,
            work_id=ledger.work_id_for_assignment(asg),
        )
        return True

    def op_assign(self) -> bool:
        if self.held() >= SLOT_CAP:
            return False
        ready = [
            n
            for n in self.live(done=True)
            if not mailbox.unacknowledged(self.home, n, self.snaps[n].assignment.assignment_id)
        ]
        name = self.pick(ready)
        if name is None:
            return False
        handoff = self.snaps[name].assignment.assignment_id
        spec = protocol.assign(self.home, name, f"task {name} {self.gen}.{self.n}", handoff=handoff)
        self.log(
            "assign",
            crew=name,
            assignment_id=spec.assignment_id,
            message_id=spec.message_id,
            handoff=handoff,
            work_id=ledger.work_id_for_assignment(spec.assignment_id),
        )
        return True

    def op_dismiss(self) -> bool:
        live = self.live()
        if len(live) < 3 and self.rng.random() < 0.8:
            return False  # keep a few crews around for the rest of the mix
        name = self.pick(live)
        if name is None:
            return False
        stopped = self.rng.choice([True, None])
        asg = self.snaps[name].assignment.assignment_id
        bounced = protocol.dismiss(self.home, name, stopped=stopped)
        self.crews[name] = True
        self.reconcile.add(ledger.work_id_for_assignment(asg))
        self.log(
            "dismiss",
            crew=name,
            assignment_id=asg,
            stopped=stopped,
            work_id=ledger.work_id_for_assignment(asg),
            bounced=[[b.message_id, b.delivery_id] for b in bounced],
        )
        return True

    # -- wait / ack ------------------------------------------------------------------------

    def op_wait(self) -> bool:
        owed = []
        for name in self.snaps:  # crews with news and no returned notification still owed
            unacked = {n.delivery_id for n in mailbox.unacknowledged(self.home, name)}
            if unacked and not unacked & mailbox.returned(self.home, name):
                owed.append(name)
        name = self.pick(owed)
        if name is None:
            return False
        try:
            got = notify.wait(self.home, name, timeout=0)
        except CaptainError as err:
            if err.code != "unacknowledged":
                raise
            # a wait whose result a kill swallowed: the next one names it, so ack it
            self.refused("wait", err, crew=name, delivery_id=err.extra.get("delivery_id"))
            self._ack(name, err.extra["delivery_id"])
            return True
        self.log(
            "wait",
            crew=name,
            delivery_id=got.delivery_id if got else None,
            status=got.status if got else "timeout",
        )
        return True

    def _ack(self, name: str, delivery_id: str) -> None:
        if self.rng.random() < 0.3:  # the `wait --ack ID` form: ack, then wait again
            got = notify.wait(self.home, name, timeout=0, ack=delivery_id)
            self.log("ack", crew=name, delivery_id=delivery_id, via="wait")
            if got is not None:
                self.log("wait", crew=name, delivery_id=got.delivery_id, status=got.status)
            return
        idle = notify.acknowledge(self.home, name, delivery_id)
        self.log("ack", crew=name, delivery_id=delivery_id, idle=idle.delivery_id if idle else None)

    def op_ack(self) -> bool:
        owed = [
            (n, d)
            for n in self.snaps
            for d in sorted(mailbox.returned(self.home, n) - mailbox.acked(self.home, n))
        ]
        if not owed:
            return False
        self._ack(*self.rng.choice(owed))
        return True

    # -- the ledger --------------------------------------------------------------------------

    def _mine(self, *states: str, min_generation: int = 0):
        return [
            i for i in self.work.values() if i.state in states and i.generation >= min_generation
        ]

    def op_accept(self) -> bool:
        if len(self.items) >= MAX_OPEN_ITEMS:
            return False
        attempts = self.rng.choice([1, 2, 3, 3, 3])
        item = ledger.accept(
            self.home,
            source="chat",
            requester=self.me,
            input={"text": f"chat {self.me} {self.gen}.{self.n}"},
            max_attempts=attempts,
        )
        self.items.append(item.work_id)
        self.log("accept", work_id=item.work_id, seq=item.seq, max_attempts=attempts)
        return True

    def op_claim(self) -> bool:
        if self.held() >= SLOT_CAP:
            return False
        item = self.pick(i for i in self._mine("queued") if i.crew is None)
        if item is None:
            return False
        got = ledger.claim(self.home, item.work_id, holder=self.me)
        self.log(
            "claim",
            work_id=got.work_id,
            seq=got.seq,
            generation=got.generation,
            run_id=got.attempts[-1].run_id,
        )
        return True

    def op_heartbeat(self) -> bool:
        item = self.pick(self._mine("running"))
        if item is None:
            return False
        got = ledger.heartbeat(self.home, item.work_id, item.generation, holder=self.me)
        self.log("heartbeat", work_id=item.work_id, generation=item.generation, seq=got.seq)
        return True

    def op_report(self) -> bool:
        item = self.pick(i for i in self._mine("running", "needs_reconciliation") if i.crew is None)
        if item is None:
            return False
        outcome = self.rng.choice(["succeeded", "failed", "failed"])
        repeatable = self.rng.random() < 0.8
        cost = self.rng.choice([None, 0.25])
        got = ledger.report(
            self.home,
            item.work_id,
            item.generation,
            outcome,
            actor=self.me,
            repeatable=repeatable,
            cost_usd=cost,
        )
        self.log(
            "report",
            work_id=item.work_id,
            generation=item.generation,
            seq=got.seq,
            outcome=outcome,
            state=got.state,
        )
        return True

    def _theirs(self) -> list:
        """Other workers' chat items running at generation 2 or more (any home's)."""
        return [
            i
            for i in ledger.held(self.home)
            if i.state == "running"
            and i.generation >= 2
            and i.source == "chat"
            and i.requester != self.me
        ]

    def op_stale(self) -> bool:
        """Act for an attempt that was taken over: the fence must refuse it."""
        if self.shared and self.rng.random() < 0.4:
            item = self.pick(self._theirs())  # an attempt another host's worker holds
        else:
            item = self.pick(self._mine("running", min_generation=STALE_FROM))
        if item is None:
            return False
        old = self.rng.randrange(STALE_FROM - 1, item.generation)
        kind = self.rng.choice(["report", "heartbeat"])
        try:
            if kind == "report":
                got = ledger.report(self.home, item.work_id, old, "succeeded", actor=self.me)
                self.log(
                    "report",
                    work_id=item.work_id,
                    generation=old,
                    seq=got.seq,
                    outcome="succeeded",
                    state=got.state,
                    stale=True,
                )
            else:
                got = ledger.heartbeat(self.home, item.work_id, old, holder=self.me)
                self.log("heartbeat", work_id=item.work_id, generation=old, seq=got.seq, stale=True)
        except CaptainError as err:
            self.refused(kind, err, work_id=item.work_id, generation=old, stale=True)
        return True

    def op_cancel(self) -> bool:
        mine = [i for i in self.work.values() if i.crew is None]
        running = [i for i in mine if i.state == "running"]
        item = self.pick(running if running and self.rng.random() < 0.7 else mine)
        if item is None:
            return False
        stopped = self.rng.choice([True, None])
        got = ledger.cancel(
            self.home,
            item.work_id,
            actor=self.me,
            reason="stress cancel",
            stop=lambda attempt: stopped,
        )
        self.log(
            "cancel",
            work_id=item.work_id,
            seq=got.item.seq,
            outcome=got.outcome,
            state=got.item.state,
            stopped=stopped,
        )
        return True

    def op_resolve(self) -> bool:
        item = self.pick(self._mine("needs_reconciliation"))
        if item is None:
            return False
        to = self.rng.choice(sorted(TERMINAL))
        got = ledger.resolve(
            self.home,
            item.work_id,
            generation=item.generation,
            to=to,
            reason=f"checked by {self.me}",
            operator=self.me,
            runtime_stopped=True,
        )
        self.log(
            "resolve",
            work_id=item.work_id,
            generation=item.generation,
            seq=got.seq,
            to=to,
            state=got.state,
        )
        return True

    def op_replay(self) -> bool:
        if len(self.items) >= MAX_OPEN_ITEMS:
            return False
        if self.shared and self.rng.random() < 0.3:  # another worker's, maybe another host's
            done = [
                i.work_id
                for state in sorted(TERMINAL)
                for i in ledger.page(self.home, state=state, source="chat", limit=20)[0]
                if i.requester != self.me
            ]
            original = self.pick(done)
        else:
            original = self.pick(self.finished)
        if original is None:
            return False
        got = replay.replay(self.home, original, actor=self.me, reason="run it again")
        self.items.append(got.work_id)
        self.log("replay", work_id=got.work_id, seq=got.seq, replay_of=original)
        return True


# -- the zygote ---------------------------------------------------------------------------------


def _warm_up_ledger(roots: tuple[Path, ...]) -> None:
    """Import the PostgreSQL driver and backend now when a home's ledger is a database, so
    no forked life pays for it (nothing connects here: each life opens its own)."""
    if any(ledger.backend_for(Home(root)).name != "files" for root in roots):
        from state.work import postgres

        postgres.driver()
        import psycopg.types.json  # noqa: F401 - what the backend's writes use


def zygote(logs: Path, project: Path, *roots: Path) -> None:
    stress_layout.warm_up()
    _warm_up_ledger(roots)
    for line in sys.stdin:
        cmd, *args = line.split()
        if cmd == "spawn":
            idx, gen, seed = (int(a) for a in args)
            pid = os.fork()
            if pid == 0:
                try:
                    devnull = os.open(os.devnull, os.O_RDWR)
                    os.dup2(devnull, 0)
                    os.dup2(devnull, 1)
                    apply_break(os.environ.get(BREAK_ENV, ""))
                    Worker(
                        idx,
                        gen,
                        roots[idx % len(roots)],
                        logs,
                        project,
                        seed,
                        shared=len(roots) > 1,
                    ).run()
                except BaseException:  # noqa: BLE001 - see the comment below
                    traceback.print_exc()
                    sys.stderr.flush()
                finally:
                    os._exit(3)  # the loop never ends on its own: getting here is a death
            print(pid, flush=True)
        elif cmd == "reap":
            _, status = os.waitpid(int(args[0]), 0)
            print(os.waitstatus_to_exitcode(status), flush=True)
        elif cmd == "quit":
            return


if __name__ == "__main__":
    zygote(*(Path(a) for a in sys.argv[1:]))

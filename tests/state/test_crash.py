"""SQLite-style crash test: protocol writers SIGKILLed at random, then the home is audited.

Worker processes loop over recruit / tell / inbox / ask / answer on one home. After an
operation *returns*, the worker appends one fsynced line to its own ops log: that line is
the worker's acknowledgement, and everything it names must survive. The parent SIGKILLs a
random worker every 20-300 ms and respawns it. Afterwards a fresh process-level view of the
home must show: every acknowledged message exactly once, no torn or unparseable file,
receipts pointing at real messages, gapless event numbers, side records repaired, and no
temp debris after a sweep.

Workers are forked from a "zygote" that has already imported the package, so a respawn
costs milliseconds instead of an interpreter start, and the kills land mid-operation.
"""

from __future__ import annotations

import json
import os
import random
import signal
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path

from state.crew import crewlog, guards
from state.home import Home
from state.records import (
    Ack,
    Asked,
    Assigned,
    CrewSnapshot,
    EventFile,
    HomeMeta,
    Message,
    Notification,
    Receipt,
    Recruited,
)
from state.store import STALE_TEMP_SECONDS, TEMP_PREFIX, Store
from state.work import ledger
from state.work.ledger_records import WorkEvent, WorkItem

REPO = Path(__file__).resolve().parents[2]

WORKERS = 3
CHAOS_SECONDS = 10.0
MIN_KILLS = 15

ZYGOTE = r'''
import json, os, random, sys, traceback
from pathlib import Path

from state.crew import crewlog, guards, mailbox, protocol
from state.errors import CaptainError
from state.home import Home
from state.crew.guards import Context
from state.inputs import crew_key

ROOT, LOGS, PROJECT = (Path(a) for a in sys.argv[1:4])
# refusals that concurrent question traffic legitimately produces; anything else is a bug
RACE_CODES = {"question_pending", "question_answered", "unknown_question"}


def known_crews():
    """Crews acknowledged in any worker's log: name -> assignment ID."""
    crews = {}
    for log in sorted(LOGS.glob("w*.log")):
        for line in log.read_bytes().splitlines():
            try:
                entry = json.loads(line)
            except ValueError:
                continue  # a line torn by SIGKILL was never acknowledged
            if entry.get("op") == "recruit":
                crews[entry["crew"]] = entry["assignment_id"]
    return crews


def worker(idx, gen):
    log_path = LOGS / f"w{idx}.log"
    fd = os.open(log_path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
    existing = log_path.read_bytes()
    if existing and not existing.endswith(b"\n"):
        os.write(fd, b"\n")  # end a torn line so it cannot swallow our first one

    def record(**entry):
        os.write(fd, (json.dumps(entry) + "\n").encode())
        os.fsync(fd)

    home = Home(ROOT)
    crews = known_crews()  # this worker's earlier crews (and the others'), reused
    rng = random.Random()
    n = 0
    recruited_this_life = False
    while True:
        n += 1
        roll = rng.random()
        if not recruited_this_life or roll < 0.06:
            name = f"w{idx}g{gen}c{n}"  # every worker life recruits under new names
            rec = protocol.recruit(home, name, f"task for {name}", cwd=str(PROJECT))
            crews[name] = rec.assignment_id
            recruited_this_life = True
            record(op="recruit", crew=name, assignment_id=rec.assignment_id,
                   message_id=rec.message_id, incarnation_id=rec.incarnation_id)
            continue
        name = rng.choice(sorted(crews))
        if roll < 0.55:
            text = f"tell {idx}/{gen}/{n} {rng.getrandbits(64):016x}"
            msg = protocol.tell(home, name, text, assignment_id=crews[name])
            record(op="tell", crew=name, message_id=msg.message_id, text=text)
        elif roll < 0.80:
            got = protocol.inbox(home, name, deliver=lambda batch: None)
            record(op="inbox", crew=name, receipts=[m.message_id for m in got])
        else:
            key = crew_key(name)
            snap, _ = crewlog.load(home, key)
            pending = guards.pending_question(home, key, snap)
            try:
                if pending is not None:
                    msg = protocol.answer(home, name, pending.question_id,
                                          f"answer {idx}/{gen}/{n}",
                                          assignment_id=crews[name])
                    record(op="answer", crew=name, message_id=msg.message_id,
                           question_id=pending.question_id)
                else:
                    ctx = Context("crew", snap.name, snap.incarnation_id,
                                  snap.assignment.assignment_id)
                    event = protocol.ask(home, name, f"question {idx}/{gen}/{n}?", ctx=ctx)
                    record(op="ask", crew=name, question_id=event.question_id,
                           delivery_id=event.delivery_id, seq=event.seq)
            except CaptainError as err:
                if err.code not in RACE_CODES:
                    raise
                record(op="refused", crew=name, code=err.code)


def main():
    for line in sys.stdin:
        cmd, *args = line.split()
        if cmd == "spawn":
            idx, gen = int(args[0]), int(args[1])
            pid = os.fork()
            if pid == 0:
                try:
                    devnull = os.open(os.devnull, os.O_RDWR)
                    os.dup2(devnull, 0)
                    os.dup2(devnull, 1)
                    worker(idx, gen)
                except BaseException:
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


main()
'''


class Zygote:
    """The zygote subprocess: forks workers on request and reports how they ended."""

    def __init__(self, script: Path, root: Path, logs: Path, project: Path, errlog: Path):
        env = {k: v for k, v in os.environ.items() if not k.startswith("CAPTAIN_")}
        env["PYTHONPATH"] = str(REPO) + os.pathsep + env.get("PYTHONPATH", "")
        self.errlog = errlog
        self._err = open(errlog, "wb")
        self.proc = subprocess.Popen(
            [sys.executable, str(script), str(root), str(logs), str(project)],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=self._err,
            text=True,
            env=env,
        )

    def _ask(self, line: str) -> str:
        self.proc.stdin.write(line + "\n")
        self.proc.stdin.flush()
        answer = self.proc.stdout.readline()
        assert answer, f"the zygote died: {self.errlog.read_text()}"
        return answer.strip()

    def spawn(self, idx: int, gen: int) -> int:
        return int(self._ask(f"spawn {idx} {gen}"))

    def reap(self, pid: int) -> int:
        return int(self._ask(f"reap {pid}"))

    def close(self) -> None:
        if self.proc.poll() is None:
            try:
                self.proc.stdin.write("quit\n")
                self.proc.stdin.flush()
                self.proc.wait(timeout=30)
            except (OSError, subprocess.TimeoutExpired):
                self.proc.kill()
                self.proc.wait()
        self._err.close()


def read_logs(logs: Path) -> tuple[list[dict], int]:
    entries, torn = [], 0
    for log in sorted(logs.glob("w*.log")):
        for line in log.read_bytes().splitlines():
            if not line.strip():
                continue
            try:
                entries.append(json.loads(line))
            except ValueError:
                torn += 1
    return entries, torn


def run_chaos(tmp_path: Path, root: Path, project: Path) -> dict:
    logs = tmp_path / "logs"
    logs.mkdir()
    script = tmp_path / "zygote.py"
    script.write_text(ZYGOTE)
    seed = random.randrange(2**32)
    rng = random.Random(seed)
    zygote = Zygote(script, root, logs, project, tmp_path / "workers.err")
    pids: dict[int, int] = {}
    gens = [0] * WORKERS
    exits: list[tuple[int, int]] = []  # (worker, exit code) of every ended worker
    kills = 0
    try:
        for i in range(WORKERS):
            pids[i] = zygote.spawn(i, 0)
        deadline = time.monotonic() + CHAOS_SECONDS
        while time.monotonic() < deadline:
            time.sleep(rng.uniform(0.02, 0.3))  # the kill schedule, not a wait for anything
            i = rng.randrange(WORKERS)
            os.kill(pids[i], signal.SIGKILL)
            kills += 1
            exits.append((i, zygote.reap(pids.pop(i))))
            gens[i] += 1
            pids[i] = zygote.spawn(i, gens[i])
        for i in list(pids):
            os.kill(pids[i], signal.SIGKILL)
            kills += 1
            exits.append((i, zygote.reap(pids.pop(i))))
    finally:
        for pid in pids.values():  # only on failure: our own workers, by pid
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        zygote.close()
    return {
        "seed": seed,
        "kills": kills,
        "exits": exits,
        "logs": logs,
        "errors": (tmp_path / "workers.err").read_text(errors="replace"),
    }


# the record kind each directory holds
# acks: an answer acknowledges its question's `asked` notification
MODELS = {"mail": Message, "receipts": Receipt, "notifications": Notification, "acks": Ack}


def test_random_sigkill_loses_nothing_duplicates_nothing_tears_nothing(
    tmp_path: Path, project: Path
) -> None:
    root = tmp_path / "home"
    Home(root)
    chaos = run_chaos(tmp_path, root, project)
    where = f"(seed {chaos['seed']}; worker stderr:\n{chaos['errors'][-3000:]})"

    # -- the harness itself: every worker died by our SIGKILL, none by itself --------------
    died = [(i, code) for i, code in chaos["exits"] if code != -signal.SIGKILL]
    assert not died, f"workers exited on their own: {died} {where}"
    assert not chaos["errors"].strip(), f"a worker printed errors {where}"
    assert chaos["kills"] >= MIN_KILLS, chaos["kills"]

    entries, torn_lines = read_logs(chaos["logs"])
    assert torn_lines <= chaos["kills"]
    ops = Counter(e["op"] for e in entries)
    # not vacuous: plenty of every kind of operation was acknowledged
    assert ops["recruit"] >= 10, ops
    assert ops["tell"] >= 50, ops
    assert ops["inbox"] >= 20, ops
    assert ops["ask"] >= 5, ops
    assert ops["answer"] >= 3, ops
    receipts_acked = [
        (e["crew"], mid) for e in entries if e["op"] == "inbox" for mid in e["receipts"]
    ]
    print(
        f"crash test: seed {chaos['seed']}, {chaos['kills']} kills, ops {dict(ops)}, "
        f"{len(receipts_acked)} receipts acknowledged, {torn_lines} torn log lines"
    )
    assert len(receipts_acked) >= 20, len(receipts_acked)

    home = Home(root)  # a fresh view of the home: any quarantine it reports is a finding
    store = home.store

    # -- every acknowledged message exists exactly once and parses -------------------------
    acked: dict[str, dict] = {}
    for e in entries:
        if e["op"] in ("recruit", "tell", "answer"):
            assert e["message_id"] not in acked, f"one ID acknowledged twice: {e}"
            acked[e["message_id"]] = e
    for mid, e in acked.items():
        copies = list(root.glob(f"mail/*/{mid}.json"))
        assert len(copies) == 1, f"{mid} ({e['op']}) found {len(copies)} times {where}"
        assert copies[0].parent.name == e["crew"].lower()
        message = store.read(copies[0], Message)
        assert message is not None, f"{copies[0]} does not parse {where}"
        assert message.message_id == mid
        assert message.crew == e["crew"]
        if e["op"] == "tell":
            assert message.text == e["text"] and message.kind == "tell"
        if e["op"] == "recruit":
            assert message.kind == "assignment"
            assert message.assignment_id == e["assignment_id"]
        if e["op"] == "answer":
            assert message.kind == "answer" and message.question_id == e["question_id"]

    # -- nothing duplicated: every mail file is one distinct message -------------------------
    texts: Counter[str] = Counter()
    for key_dir in sorted((root / "mail").iterdir()):
        for name in store.names(key_dir):
            message = store.read(key_dir / f"{name}.json", Message)
            assert message is not None, f"mail/{key_dir.name}/{name}.json {where}"
            assert message.message_id == name
            texts[message.text] += 1
    dupes = [t for t, c in texts.items() if c > 1]
    assert not dupes, f"messages written twice: {dupes[:5]} {where}"

    # -- every receipt points to an existing message; every acknowledged one exists --------
    for crew, mid in receipts_acked:
        assert (root / "receipts" / crew.lower() / f"{mid}.json").is_file(), (crew, mid)
    n_receipts = 0
    for key_dir in sorted((root / "receipts").iterdir()):
        for name in store.names(key_dir):
            receipt = store.read(key_dir / f"{name}.json", Receipt)
            assert receipt is not None, f"receipts/{key_dir.name}/{name}.json {where}"
            assert receipt.message_id == name
            assert (root / "mail" / key_dir.name / f"{name}.json").is_file(), (
                f"receipt {key_dir.name}/{name} points to no message {where}"
            )
            n_receipts += 1
    assert n_receipts >= len(set(receipts_acked))
    # every ack (an answer's, of its `asked`) points at that crew's notification
    for key_dir in sorted((root / "acks").iterdir()) if (root / "acks").exists() else []:
        for name in store.names(key_dir):
            assert (root / "notifications" / key_dir.name / f"{name}.json").is_file(), (
                f"ack {key_dir.name}/{name} points to no notification {where}"
            )

    # -- every acknowledged question has its event and its notification --------------------
    for e in entries:
        if e["op"] == "ask":
            key = e["crew"].lower()
            event = store.read(root / "crew" / key / "events" / f"{e['seq']:08d}.json", EventFile)
            assert event is not None and isinstance(event, Asked)
            assert event.question_id == e["question_id"]
            note = store.read(
                root / "notifications" / key / f"{e['delivery_id']}.json", Notification
            )
            assert note is not None and note.question_id == e["question_id"], e

    # -- events: numbered 1..N without gaps, each parses, each snapshot is consistent -------
    keys = home.crew_keys()
    recruited = {e["crew"].lower() for e in entries if e["op"] == "recruit"}
    assert recruited <= set(keys)
    longest = 0
    for key in keys:
        names = store.names(root / "crew" / key / "events")
        if not names:
            # a recruit killed before its first event: an empty directory, no crew at all
            assert key not in recruited, f"acknowledged crew {key} has no events {where}"
            assert crewlog.load(home, key) == (None, None)
            continue
        assert names == [f"{i:08d}" for i in range(1, len(names) + 1)], (
            f"crew {key} events have gaps: {names} {where}"
        )
        events = [
            store.read(root / "crew" / key / "events" / f"{n}.json", EventFile) for n in names
        ]
        assert all(ev is not None for ev in events), f"crew {key} {where}"
        assert [ev.seq for ev in events] == list(range(1, len(names) + 1))
        assert isinstance(events[0], Recruited)
        longest = max(longest, len(names))
        snapshot, _ = crewlog.load(home, key)
        assert snapshot is not None and snapshot.seq == len(names)
    assert longest >= 3, "no crew got past its first events: the gap check proved nothing"

    # -- recovery: the next writer of each crew settles whatever a kill left unsettled ------
    for key in keys:
        with store.lock(guards.lock_name(key)):
            crewlog.open_locked(home, key)
    for key in keys:
        for event in crewlog.events(home, key):
            if isinstance(event, (Recruited, Assigned)):
                mid = event.assignment.message_id
                assert (root / "mail" / key / f"{mid}.json").is_file(), (
                    f"{key}: event {event.seq} has no assignment mail after repair {where}"
                )
                # every assignment is a work item, accepted even when a kill came between
                item = ledger.load(
                    home, ledger.work_id_for_assignment(event.assignment.assignment_id)
                )
                assert item is not None and item.source == "assignment", (
                    f"{key}: assignment {event.assignment.assignment_id} has no work item {where}"
                )
            if isinstance(event, Asked):
                assert (root / "notifications" / key / f"{event.delivery_id}.json").is_file(), (
                    f"{key}: question {event.question_id} has no notification after repair"
                )

    # -- every file in the home parses; nothing was quarantined ----------------------------
    temps = []
    for dirpath, dirnames, filenames in os.walk(root):
        rel = Path(dirpath).relative_to(root)
        for name in dirnames:
            assert not os.path.islink(Path(dirpath, name)), f"symlink {rel / name}"
        for name in filenames:
            path = Path(dirpath, name)
            assert not path.is_symlink(), f"symlink {rel / name}"
            if name.startswith(TEMP_PREFIX):
                temps.append(path)
                continue
            parts = rel.parts
            if parts == ():
                assert name == "home.json", f"unexpected file {name}"
                assert store.read(path, HomeMeta) is not None
            elif parts == ("locks",):
                assert name.endswith(".lock"), name
            elif len(parts) == 2 and parts[0] == "crew":
                assert name == "state.json", f"unexpected file {rel / name}"
                assert store.read(path, CrewSnapshot) is not None, f"{rel / name} {where}"
            elif len(parts) == 3 and parts[0] == "crew" and parts[2] == "events":
                assert store.read(path, EventFile) is not None, f"{rel / name} {where}"
            elif parts == ("ledger", "open"):
                assert name.startswith("wrk_") and path.stat().st_size == 0, name
            elif len(parts) == 2 and parts[0] == "work":
                assert name in ("item.json", "input.json"), f"unexpected file {rel / name}"
                if name == "item.json":
                    assert store.read(path, WorkItem) is not None, f"{rel / name} {where}"
                else:
                    assert store.read_json(path) is not None, f"{rel / name} {where}"
            elif len(parts) == 3 and parts[0] == "work" and parts[2] == "events":
                assert store.read(path, WorkEvent) is not None, f"{rel / name} {where}"
            elif len(parts) == 2 and parts[0] in MODELS:
                assert name.endswith(".json"), f"unexpected file {rel / name}"
                assert store.read(path, MODELS[parts[0]]) is not None, f"{rel / name} {where}"
            else:
                raise AssertionError(f"unexpected file {rel / name} {where}")
    for kind, model in MODELS.items():
        for key_dir in (root / kind).iterdir() if (root / kind).exists() else []:
            assert len(store.records(key_dir, model)) == len(store.names(key_dir))
    quarantine = root / "quarantine"
    assert not quarantine.exists() or not os.listdir(quarantine), (
        f"quarantined: {os.listdir(quarantine)} {where}"
    )
    assert store.reports.reported() == []

    # -- temp debris from the kills is swept once it is stale -------------------------------
    old = time.time() - STALE_TEMP_SECONDS - 60
    for path in temps:
        os.utime(path, (old, old), follow_symlinks=False)
    print(
        f"crash test: {len(temps)} temp files left by kills, {len(keys)} crew directories, "
        f"longest history {longest} events"
    )
    assert Store(root).sweep() == len(temps)
    left = [Path(d, n) for d, _, files in os.walk(root) for n in files if n.startswith(TEMP_PREFIX)]
    assert not left, f"stale temp files survived the sweep: {left[:5]}"

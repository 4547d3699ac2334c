"""The audit: after the chaos, hold the home to its invariants and to the workers' logs.

Two phases:

1. **As the kills left it** (nothing written): every file parses; nothing quarantined or
   unknown; crew and work histories gapless and legal; generations monotone; caches equal
   the fold of their events; every record's IDs point to records that exist and belong
   together (no phantom, no dangling receipt/ack/returned marker, no ID twice); and every
   operation a worker logged as completed is in the home exactly once, at the generation
   that was current (the fence).
2. **After the next writer**: each crew and work item is settled the way the next command
   would (``crewlog.open_locked``, ``ledger.load(repair=True)``); then every side record an
   event implies exists, terminal items are closed, and the product's own ``Store.read``
   parses every record without quarantining anything.

**On PostgreSQL** (two homes sharing one database: stress_harness) the crews' part is
each home's files, as before (crew names are unique across the homes: a record of one home
in the other is a finding), and the ledger's part reads the ledger *through the backend*
(``backend_for``: its items, events, inputs and leases, from the database), never from
files: a ledger file in a PostgreSQL home is itself a finding (``unexpected``). The checks
are the same: gapless legal histories (``illegal`` also catches an event appended after
the end), one claim per generation and run, every logged report, heartbeat and resolve at
the generation that was current (``unfenced``), the item's row equal to the fold of its
events (``snapshot``), the input's hash, the open set, and capacity rebuilt from the events'
times (the database's clock, stamped under the ledger's lock) against the homes' ``slots``.

Each finding is a ``Violation(kind, detail)``. Kinds: unparseable, quarantined, unexpected,
gap, illegal, generation, snapshot, phantom, dangling, duplicate, inconsistent, lost,
unfenced, open_marker, capacity, unexpected_refusal, unsettled, audit_error.
"""

from __future__ import annotations

import os
import traceback
from collections import Counter, defaultdict
from dataclasses import dataclass
from pathlib import Path

from stress_layout import (
    MODELS,
    PER_CREW,
    Unreadable,
    classify,
    is_temp,
    parse,
    read_bytes,
)

from state.crew import crewlog, guards
from state.home import Home
from state.ids import DELIVERY, derive
from state.records import Asked, Assigned, Dismissed, Finished, Recruited
from state.store import Reports
from state.work import ledger
from state.work.backend import backend_for
from state.work.ledger_records import HOLDS_SLOT, TERMINAL

# refusals a correct run produces: (op, code). Anything else is a finding.
EXPECTED_REFUSALS = {
    ("wait", "unacknowledged"),  # a kill swallowed the previous wait's result: ack it
    # A kill between a crew event (done, dismissed) and its notification leaves the tail
    # unsettled: the worker saw nothing owed, the command settled the tail first (as it
    # must) and then found the new notification unacknowledged. Correct, and rare.
    ("assign", "unacknowledged"),
    ("recruit", "unacknowledged"),
    ("claim", "no_capacity"),  # the other workers hold every slot for a moment
    ("done", "not_running"),  # recruited while every slot was held: still queued
}
REPORTS = {"succeeded": {"succeeded"}, "failed": {"failed", "retry_queued"}}
# the ledger's own records in a file home; a PostgreSQL home has none of them
LEDGER_FILES = {
    "work_item",
    "work_event",
    "work_input",
    "lease",
    "open_marker",
    "finished_marker",
    "finished_built",
}


@dataclass(frozen=True)
class Violation:
    kind: str
    detail: str

    def __str__(self) -> str:
        return f"[{self.kind}] {self.detail}"


class Audit:
    def __init__(self, roots: Path | list[Path], entries: list[dict]) -> None:
        self.roots = [Path(roots)] if isinstance(roots, (str, Path)) else [Path(r) for r in roots]
        self.root = self.roots[0]
        self.homes = {root: Home(root) for root in self.roots}
        self.backend = backend_for(self.homes[self.root])
        self.postgres = self.backend.name != "files"
        self.entries = entries
        self.cross: Counter[str] = Counter()  # operations on another worker's item
        self.violations: list[Violation] = []
        self.checked = 0  # logged operations (completed or refused) held to the home
        self.ops: Counter[str] = Counter()
        self.refusals: Counter[str] = Counter()
        self.stale_refused = 0

    def flag(self, kind: str, detail: str) -> None:
        self.violations.append(Violation(kind, detail[:600]))

    def run(self) -> None:
        for step in (
            self.scan,
            self.check_crews,
            self.check_crew_records,
            self.check_work,
            self.check_log,
        ):
            self._guard(step)

    def run_after_repair(self) -> None:
        for step in (self.repair, self.check_settled, self.check_store_reads):
            self._guard(step)

    def _guard(self, step) -> None:
        try:
            step()
        except Exception:  # noqa: BLE001 - a broken home must be reported, not crash us
            self.flag("audit_error", f"{step.__name__}: {traceback.format_exc()[-1500:]}")

    # -- phase 1: read everything ---------------------------------------------------------------

    def scan(self) -> None:
        self.crew_events: dict[str, dict[int, object]] = defaultdict(dict)
        self.crew_snap: dict[str, object] = {}
        self.crew_dirs: set[str] = set()
        self.recs = {kind: defaultdict(dict) for kind in PER_CREW}
        self.work_events: dict[str, dict[int, object]] = defaultdict(dict)
        self.work_item: dict[str, object] = {}
        self.work_input: dict[str, bytes] = {}
        self.leases: dict[str, object] = {}
        self.work_dirs: set[str] = set()
        self.open: set[str] = set()
        self.crew_root: dict[str, Path] = {}  # crew key -> the home it lives in
        self.seen_notes: list[tuple[str, str]] = []  # (home, work id): work-seen/ notes
        self.files = self.temps = 0
        for home_root in self.roots:
            self._scan_home(home_root)
        if self.postgres:
            self._read_ledger()

    def _scan_home(self, home_root: Path) -> None:
        root = str(home_root)
        for dirpath, _dirnames, filenames in os.walk(root):
            rel_dir = os.path.relpath(dirpath, root)
            parts_dir = () if rel_dir == "." else tuple(rel_dir.split(os.sep))
            if len(parts_dir) >= 2 and parts_dir[0] in PER_CREW + ("crew",):
                owner = self.crew_root.setdefault(parts_dir[1], home_root)
                if owner != home_root:
                    self.flag(
                        "duplicate",
                        f"crew {parts_dir[1]} has records in {owner.name} and in {home_root.name}",
                    )
            if len(parts_dir) == 2 and parts_dir[0] == "crew":
                self.crew_dirs.add(parts_dir[1])
            if len(parts_dir) == 2 and parts_dir[0] == "work":
                self.work_dirs.add(parts_dir[1])
            for name in filenames:
                if is_temp(name):
                    self.temps += 1
                    continue
                parts = (*parts_dir, name)
                rel = "/".join(parts)
                kind = classify(parts)
                if kind is None:
                    self.flag("unexpected", f"{rel} is no record captain writes")
                    continue
                if self.postgres and kind in LEDGER_FILES:
                    self.flag(
                        "unexpected",
                        f"{home_root.name}/{rel}: a home whose ledger is "
                        "PostgreSQL writes no ledger files",
                    )
                    continue
                if kind == "quarantined":
                    self.flag("quarantined", rel)
                    continue
                try:
                    data = read_bytes(os.path.join(dirpath, name))
                    if data is None:
                        self.flag("audit_error", f"{rel} vanished while nothing runs")
                        continue
                    record = parse(kind, data)
                except Unreadable as bad:
                    self.flag("unparseable", f"{rel}: {bad}")
                    continue
                self.files += 1
                stem = name[:-5] if name.endswith(".json") else name
                if kind == "crew_snapshot":
                    self.crew_snap[parts[1]] = record
                elif kind == "crew_event":
                    self.crew_events[parts[1]][int(stem)] = record
                elif kind in PER_CREW:
                    self.recs[kind][parts[1]][stem] = record
                elif kind == "work_event":
                    self.work_events[parts[1]][int(stem)] = record
                elif kind == "work_item":
                    self.work_item[parts[1]] = record
                elif kind == "work_input":
                    self.work_input[parts[1]] = data
                elif kind == "lease":
                    self.leases[parts[1]] = record
                elif kind == "open_marker":
                    self.open.add(name)
                elif kind == "work_seen":
                    self.seen_notes.append((home_root.name, name))

    def _read_ledger(self) -> None:
        """The shared ledger, through its backend (the database), into the same maps the
        files fill: every item's events, its row, its input's bytes, its lease, the open
        set. Rows are read one item at a time; nothing writes while the audit runs."""
        backend = self.backend
        ids = backend.all_ids()
        self.open = set(backend.open_ids())
        for wid in ids:
            self.work_dirs.add(wid)
            for ev in backend.events(wid):
                if ev.seq in self.work_events[wid]:
                    self.flag("duplicate", f"work {wid} has two events {ev.seq}")
                self.work_events[wid][ev.seq] = ev
            item = backend.item(wid)
            if item is not None:
                self.work_item[wid] = item
            data = backend.input_bytes(wid)
            if data is not None:
                self.work_input[wid] = data
            lease = backend.lease(wid)
            if lease is not None:
                self.leases[wid] = lease

    # -- crews ----------------------------------------------------------------------------------

    def check_crews(self) -> None:
        self.assignments: dict[str, tuple[str, str, object]] = {}  # asg -> key, inc, spec
        self.questions: dict[str, tuple[str, Asked]] = {}
        self.asked_by_delivery: dict[str, tuple[str, Asked]] = {}
        self.finished: dict[str, tuple[str, Finished]] = {}
        self.bounced: dict[str, tuple[str, object]] = {}  # message id -> key, BouncedMail
        self.dismissals: dict[str, list[Dismissed]] = defaultdict(list)
        self.dismissed_incs: dict[str, set[str]] = defaultdict(set)  # key -> incarnations
        for key in sorted(self.crew_dirs | set(self.crew_events) | set(self.crew_snap)):
            events = self.crew_events.get(key, {})
            seqs = sorted(events)
            if not seqs:
                if key in self.crew_snap:
                    self.flag("phantom", f"crew {key} has a snapshot and no history")
                continue  # a recruit killed before its first event: no crew at all
            if seqs != list(range(1, len(seqs) + 1)):
                self.flag("gap", f"crew {key} events {seqs[:3]}..{seqs[-3:]} are not 1..N")
            self._crew_history(key, [events[s] for s in seqs], seqs)

    def _crew_history(self, key: str, events: list, seqs: list[int]) -> None:
        state, spec, incarnations, question, inc = None, None, set(), None, None
        snapshot, folded = None, []
        answered = self.recs["mail"].get(key, {})
        for seq, ev in zip(seqs, events):
            where = f"crew {key} event {seq} ({ev.type})"
            if ev.seq != seq:
                self.flag("inconsistent", f"{where} says seq {ev.seq}")
            legal = True
            if isinstance(ev, Recruited):
                expected = spec.assignment_id if state == "dismissed" else None
                legal = (
                    state in (None, "dismissed")
                    and ev.name.lower() == key
                    and ev.assignment.handoff_of == expected
                    and ev.incarnation_id not in incarnations
                )
                incarnations.add(ev.incarnation_id)
                inc = ev.incarnation_id
                state, spec, question = "active", ev.assignment, None
            elif isinstance(ev, Assigned):
                legal = state == "done" and ev.assignment.handoff_of == spec.assignment_id
                state, spec, question = "active", ev.assignment, None
            elif isinstance(ev, Asked):
                legal = (
                    state == "active"
                    and ev.assignment_id == spec.assignment_id
                    and (question is None or f"msg_{question}" in answered)
                )
                question = ev.question_id
                self.questions[ev.question_id] = (key, ev)
                self.asked_by_delivery[ev.delivery_id] = (key, ev)
            elif isinstance(ev, Finished):
                legal = (
                    state == "active"
                    and ev.assignment_id == spec.assignment_id
                    and (question is None or f"msg_{question}" in answered)
                )
                state = "done"
                self.finished[ev.delivery_id] = (key, ev)
            elif isinstance(ev, Dismissed):
                legal = state in ("active", "done") and ev.assignment_id == spec.assignment_id
                state = "dismissed"
                self.dismissals[key].append(ev)
                self.dismissed_incs[key].add(inc)
                for b in ev.bounced:
                    self.bounced[b.message_id] = (key, b)
            else:
                legal = False  # launched: these crews are never launched
            if not legal:
                self.flag("illegal", f"{where} is not legal after {state}")
                return
            if isinstance(ev, (Recruited, Assigned)):
                a = ev.assignment.assignment_id
                if a in self.assignments:
                    self.flag("duplicate", f"{where}: assignment {a} recorded twice")
                inc = ev.incarnation_id if isinstance(ev, Recruited) else snapshot.incarnation_id
                self.assignments[a] = (key, inc, ev.assignment)
            snapshot = crewlog.fold(snapshot, ev)
            folded.append(snapshot)
        cached = self.crew_snap.get(key)
        if cached is not None:
            if cached.seq > len(folded) or cached != folded[cached.seq - 1]:
                self.flag(
                    "snapshot",
                    f"crew {key} state.json (seq {cached.seq}) is not the fold of its events",
                )

    def check_crew_records(self) -> None:
        mail = self.recs["mail"]
        owners: dict[str, list[str]] = defaultdict(list)
        texts: Counter[str] = Counter()
        for key, box in mail.items():
            for name, m in box.items():
                owners[name].append(key)
                where = f"mail/{key}/{name}"
                if m.message_id != name or m.crew.lower() != key:
                    self.flag("inconsistent", f"{where} names {m.message_id} of {m.crew}")
                owner = self.assignments.get(m.assignment_id)
                if owner is None or owner[0] != key or owner[1] != m.incarnation_id:
                    self.flag(
                        "phantom",
                        f"{where}: no assignment {m.assignment_id} of "
                        f"incarnation {m.incarnation_id} on this crew",
                    )
                    continue
                if m.kind == "assignment":
                    if owner[2].message_id != name or owner[2].task != m.text:
                        self.flag("phantom", f"{where} is not {m.assignment_id}'s task mail")
                elif m.kind == "answer":
                    q = self.questions.get(m.question_id or "")
                    if (
                        name != f"msg_{m.question_id}"
                        or q is None
                        or q[0] != key
                        or q[1].assignment_id != m.assignment_id
                    ):
                        self.flag("phantom", f"{where} answers no question of this crew")
                elif m.text.split()[:2] != ["tell", m.crew]:
                    self.flag("phantom", f"{where} is a tell no worker sent: {m.text[:80]!r}")
                else:
                    texts[m.text] += 1
        for name, keys in owners.items():
            if len(keys) > 1:
                self.flag("duplicate", f"message {name} is in {keys}")
        for text, count in texts.items():
            if count > 1:
                self.flag("duplicate", f"tell {text!r} was written {count} times")
        for key, box in self.recs["receipts"].items():
            for name, r in box.items():
                m = mail.get(key, {}).get(name)
                if m is None:
                    self.flag("dangling", f"receipts/{key}/{name} points to no message")
                elif r.message_id != name or r.assignment_id != m.assignment_id:
                    self.flag("inconsistent", f"receipts/{key}/{name} does not match its mail")
        for key, box in self.recs["bounces"].items():
            for name, b in box.items():
                if name not in mail.get(key, {}):
                    self.flag("dangling", f"bounces/{key}/{name} points to no message")
                elif self._bounce_of(key, name) != b.delivery_id:
                    self.flag("phantom", f"bounces/{key}/{name} is in no dismissal")
        notes = self.recs["notifications"]
        for key, box in notes.items():
            for name, n in box.items():
                where = f"notifications/{key}/{name} ({n.status})"
                if n.delivery_id != name or n.crew.lower() != key:
                    self.flag("inconsistent", f"{where} names {n.delivery_id} of {n.crew}")
                if n.status == "asked":
                    q = self.asked_by_delivery.get(name)
                    ok = q is not None and q[0] == key and q[1].question_id == n.question_id
                elif n.status == "done":
                    f = self.finished.get(name)
                    ok = f is not None and f[0] == key and f[1].assignment_id == n.assignment_id
                elif n.status == "idle":
                    base = box.get(name.removesuffix("-idle"))
                    ok = name.endswith("-idle") and base is not None and base.status == "done"
                elif n.status == "bounced":
                    ok = n.message_id is not None and self._bounce_of(key, n.message_id) == name
                else:
                    ok = False  # nobody raises crew signals here
                if not ok:
                    self.flag("phantom", f"{where} follows from no event")
        for kind in ("returned", "acks"):
            for key, box in self.recs[kind].items():
                for name, r in box.items():
                    if name not in notes.get(key, {}):
                        self.flag("dangling", f"{kind}/{key}/{name} points to no notification")
                    elif r.delivery_id != name:
                        self.flag("inconsistent", f"{kind}/{key}/{name} says {r.delivery_id}")
        self.mail_owners = owners

    def _bounce_of(self, key: str, message_id: str) -> str | None:
        """The delivery ID a bounce of this message carries: listed by an older dismissal,
        or derived (msg_X -> dlv_X) when a dismissal of its incarnation bounced it unread."""
        listed = self.bounced.get(message_id)
        if listed is not None:
            return listed[1].delivery_id if listed[0] == key else None
        m = self.recs["mail"].get(key, {}).get(message_id)
        if m is not None and m.incarnation_id in self.dismissed_incs.get(key, ()):
            return derive(DELIVERY, message_id)
        return None

    # -- work items -----------------------------------------------------------------------------

    def check_work(self) -> None:
        self.runs: dict[str, tuple[str, int]] = {}  # run id -> work id, generation
        self.items: dict[str, object] = {}  # work id -> the fold of all its events
        self.slot_changes: list[tuple] = []  # (at, +1 | -1, work id): slots taken, freed
        for wid in sorted(self.work_dirs | set(self.work_events)):
            events = self.work_events.get(wid, {})
            seqs = sorted(events)
            if not seqs:
                if wid in self.work_item or wid in self.leases:
                    self.flag("phantom", f"work {wid} has a cache or lease and no history")
                continue  # an accept killed before its first event: not an item
            if seqs != list(range(1, len(seqs) + 1)):
                self.flag("gap", f"work {wid} events {seqs} are not 1..N")
            item, folded, run_gens = None, [], {}
            for seq in seqs:
                ev = events[seq]
                where = f"work {wid} event {seq} ({ev.type})"
                if ev.seq != seq:
                    self.flag("inconsistent", f"{where} says seq {ev.seq}")
                if not ledger.legal(item.state if item else None, ev):
                    self.flag(
                        "illegal", f"{where} is not legal after {item.state if item else 'nothing'}"
                    )
                    break
                before = item.generation if item else 0
                if ev.type == "claimed":
                    if ev.generation != before + 1:
                        self.flag(
                            "generation",
                            f"{where} claims generation {ev.generation} after {before}",
                        )
                    if ev.run_id in self.runs:
                        self.flag("duplicate", f"{where}: run {ev.run_id} claimed twice")
                    self.runs[ev.run_id] = (wid, ev.generation)
                    run_gens[ev.run_id] = ev.generation
                elif ev.generation != before:
                    self.flag(
                        "generation",
                        f"{where} at generation {ev.generation}, the item is at {before}",
                    )
                item = ledger.fold(item, ev, wid)
                folded.append(item)
            if not folded:
                continue
            self.items[wid] = item
            holding = False
            for ev, state in zip((events[s] for s in seqs), (i.state for i in folded)):
                if (state in HOLDS_SLOT) != holding:
                    holding = not holding
                    self.slot_changes.append((ev.at, 1 if holding else -1, wid))
            first = events[seqs[0]]
            data = self.work_input.get(wid)
            if data is None or ledger.input_sha256(data) != first.input_sha256:
                self.flag("phantom", f"work {wid}: input.json is missing or not what was accepted")
            cached = self.work_item.get(wid)
            if self.postgres and (cached is None or cached.seq != len(folded)):
                self.flag(
                    "snapshot",
                    f"work {wid}: its row (seq "
                    f"{cached.seq if cached else None}) is not at its last "
                    f"event ({len(folded)}): a database row is never behind",
                )
            if cached is not None and (
                cached.seq > len(folded) or cached != folded[cached.seq - 1]
            ):
                self.flag(
                    "snapshot",
                    f"work {wid} item.json (seq {cached.seq}) is not the fold of its events",
                )
            lease = self.leases.get(wid)
            if lease is not None and (
                lease.work_id != wid or run_gens.get(lease.run_id) != lease.generation
            ):
                self.flag(
                    "unfenced",
                    f"work {wid} lease.json: generation {lease.generation} "
                    f"for run {lease.run_id}, which is generation "
                    f"{run_gens.get(lease.run_id)}",
                )
            if item.state not in TERMINAL and wid not in self.open:
                self.flag(
                    "open_marker",
                    f"work {wid} is {item.state} with no open marker: capacity would not count it",
                )
            if item.source == "chat" and any(e.actor != item.requester for e in events.values()):
                self.flag(
                    "phantom",
                    f"work {wid}: an event by someone other than its owner {item.requester}",
                )
            if item.replay_of:
                self._check_replay(wid, first)
            elif item.source == "assignment":
                owner = self.assignments.get(item.assignment_id or "")
                if (
                    owner is None
                    or owner[0] != (item.crew or "").lower()
                    or ledger.work_id_for_assignment(item.assignment_id) != wid
                ):
                    self.flag("phantom", f"work {wid} is the item of no assignment")

        for home_name, wid in self.seen_notes:  # "an item is never removed": never a lie
            item = self.items.get(wid)
            if item is None or item.source != "assignment":
                self.flag(
                    "phantom",
                    f"{home_name}/work-seen/{wid} notes an assignment's item "
                    "the ledger does not have",
                )
        self._check_capacity()

    def _check_capacity(self) -> None:
        """Claims and releases hold the ledger lock and stamp their events inside it, so
        replaying them in time order never holds more slots than the home has."""
        self.slots = slots = min(ledger.slots(home) for home in self.homes.values())
        held = self.peak_slots = self.full = 0
        for at, delta, wid in sorted(self.slot_changes):  # at a tie, -1 sorts first
            held += delta
            self.full += delta > 0 and held == slots  # a claim that took the last slot
            if held > slots:
                self.flag(
                    "capacity",
                    f"{held} slots held at {at.isoformat()} ({wid}), the home has {slots}",
                )
            self.peak_slots = max(self.peak_slots, held)

    def _check_replay(self, wid: str, accepted) -> None:
        original = self.work_events.get(accepted.replay_of, {})
        ended = [e.at for e in original.values() if e.state in TERMINAL]
        if not ended or min(ended) > accepted.at:
            self.flag("phantom", f"work {wid} replays {accepted.replay_of}, which had not finished")

    # -- the workers' logs ----------------------------------------------------------------------

    def check_log(self) -> None:
        made: dict[tuple[str, int], dict] = {}
        for e in self.entries:
            op = e["op"]
            if op == "start":
                continue
            self.checked += 1
            if not e["ok"]:
                self._check_refusal(e)
                continue
            self.ops[op] += 1
            if op == "replay" and (whose := self._foreign(e, e.get("replay_of"))):
                self.cross[f"replay of {whose}'s"] += 1
            try:
                getattr(self, f"_log_{op}")(e)
            except (KeyError, AttributeError, TypeError) as exc:
                self.flag("lost", f"{op} logged by w{e['w']} not found: {exc!r} in {e}")
            if op in ("accept", "replay", "claim", "report", "resolve") and "seq" in e:
                key = (e["work_id"], e["seq"])
                if key in made:
                    self.flag("duplicate", f"two operations made {key}: {made[key]} and {e}")
                made[key] = e

    def _foreign(self, e: dict, work_id: str | None) -> str | None:
        """Whose item a logged operation acted on, when not the worker's own: "other
        worker", or "other host" (a worker of another home; on a shared ledger)."""
        item = self.items.get(work_id or "")
        if item is None or item.source != "chat" or item.requester == f"w{e['w']}":
            return None
        owner = item.requester.removeprefix("w")
        if (
            owner.isdigit()
            and len(self.roots) > 1
            and int(owner) % len(self.roots) != e["w"] % len(self.roots)
        ):
            return "other host"
        return "other worker"

    def _check_refusal(self, e: dict) -> None:
        self.refusals[f"{e['op']}:{e['refused']}"] += 1
        if e.get("stale"):
            if e["refused"] == "stale_generation":
                self.stale_refused += 1
                if whose := self._foreign(e, e.get("work_id")):
                    self.cross[f"stale {e['op']} refused, {whose}'s"] += 1
                return
        elif (e["op"], e["refused"]) in EXPECTED_REFUSALS:
            return
        self.flag(
            "unexpected_refusal", f"w{e['w']} {e['op']} refused [{e['refused']}] {e['message']}"
        )

    def _event(self, key: str, e: dict):
        ev = self.crew_events[key].get(e["seq"])
        if ev is None:
            raise KeyError(f"crew {key} event {e['seq']}")
        return ev

    def _mail_once(self, key: str, mid: str, e: dict):
        owners = self.mail_owners.get(mid, [])
        if owners != [key]:
            kind = "lost" if not owners else "duplicate"
            self.flag(kind, f"{e['op']} of {mid} acknowledged, found in {owners}")
            return None
        return self.recs["mail"][key][mid]

    def _assignment(self, e: dict) -> None:
        key = e["crew"].lower()
        owner = self.assignments.get(e["assignment_id"])
        if (
            owner is None
            or owner[0] != key
            or owner[2].message_id != e["message_id"]
            or owner[2].handoff_of != e.get("handoff")
        ):
            self.flag(
                "lost", f"{e['op']} {e['assignment_id']} of {key} acknowledged, not in its history"
            )
            return
        if e["op"] == "recruit" and owner[1] != e["incarnation_id"]:
            self.flag("lost", f"recruit of {key}: incarnation {e['incarnation_id']} missing")
        self._mail_once(key, e["message_id"], e)
        if e["work_id"] not in self.items:
            self.flag("lost", f"{e['op']} of {key}: work item {e['work_id']} missing")

    _log_recruit = _log_assign = _assignment

    def _log_tell(self, e: dict) -> None:
        m = self._mail_once(e["crew"].lower(), e["message_id"], e)
        if m is not None and (m.text != e["text"] or m.assignment_id != e["assignment_id"]):
            self.flag("inconsistent", f"{e['op']} {e['message_id']} differs from its log line")

    _log_answer = _log_tell

    def _log_inbox(self, e: dict) -> None:
        key = e["crew"].lower()
        for mid in e["receipts"]:
            if mid not in self.recs["receipts"].get(key, {}):
                self.flag("lost", f"inbox of {key} read {mid}, which has no receipt")

    def _log_ask(self, e: dict) -> None:
        key = e["crew"].lower()
        ev = self._event(key, e)
        if (
            not isinstance(ev, Asked)
            or ev.question_id != e["question_id"]
            or ev.delivery_id != e["delivery_id"]
        ):
            self.flag("lost", f"ask {e['question_id']} of {key} is not event {e['seq']}")
        elif e["delivery_id"] not in self.recs["notifications"].get(key, {}):
            self.flag("lost", f"ask {e['question_id']} of {key} has no notification")

    def _log_done(self, e: dict) -> None:
        key = e["crew"].lower()
        ev = self._event(key, e)
        if not isinstance(ev, Finished) or ev.delivery_id != e["delivery_id"]:
            self.flag("lost", f"done of {key} on {e['assignment_id']} is not event {e['seq']}")
        elif e["delivery_id"] not in self.recs["notifications"].get(key, {}):
            self.flag("lost", f"done of {key} has no notification")
        events = self.work_events.get(e["work_id"], {}).values()
        if not any(x.type == "succeeded" and x.actor == "crew" for x in events):
            self.flag("lost", f"done of {key}: {e['work_id']} never succeeded")

    def _log_dismiss(self, e: dict) -> None:
        key = e["crew"].lower()
        if not any(d.assignment_id == e["assignment_id"] for d in self.dismissals[key]):
            self.flag("lost", f"dismiss of {key} ({e['assignment_id']}) is not in its history")
        for mid, dlv in e["bounced"]:
            b = self.recs["bounces"].get(key, {}).get(mid)
            if (
                b is None
                or b.delivery_id != dlv
                or dlv not in self.recs["notifications"].get(key, {})
            ):
                self.flag("lost", f"dismiss of {key}: bounce of {mid} missing")
        item = self.items.get(e["work_id"])
        if item is None or item.state in ("queued", "running"):
            self.flag("lost", f"dismiss of {key}: its item is {item.state if item else 'missing'}")

    def _log_wait(self, e: dict) -> None:
        key = e["crew"].lower()
        if e["delivery_id"] and e["delivery_id"] not in self.recs["returned"].get(key, {}):
            self.flag("lost", f"wait on {key} returned {e['delivery_id']}, not marked returned")

    def _log_ack(self, e: dict) -> None:
        key, dlv = e["crew"].lower(), e["delivery_id"]
        acks = self.recs["acks"].get(key, {})
        if dlv not in acks:
            self.flag("lost", f"ack of {dlv} ({key}) has no ack record")
        note = self.recs["notifications"].get(key, {}).get(dlv)
        if note is not None and note.status == "done" and f"{dlv}-idle" not in acks:
            self.flag("lost", f"ack of done {dlv} ({key}): its idle is not acknowledged")

    def _work_event(self, e: dict):
        ev = self.work_events[e["work_id"]].get(e["seq"])
        if ev is None:
            raise KeyError(f"work {e['work_id']} event {e['seq']}")
        return ev

    def _log_accept(self, e: dict) -> None:
        ev = self._work_event(e)
        if (
            ev.type != "accepted"
            or ev.requester != f"w{e['w']}"
            or ev.replay_of != e.get("replay_of")
        ):
            self.flag("lost", f"{e['op']} {e['work_id']} is not its first event")

    _log_replay = _log_accept

    def _log_claim(self, e: dict) -> None:
        ev = self._work_event(e)
        if ev.type != "claimed" or ev.run_id != e["run_id"] or ev.generation != e["generation"]:
            self.flag(
                "lost", f"claim of {e['work_id']} (run {e['run_id']}) is not event {e['seq']}"
            )

    def _log_heartbeat(self, e: dict) -> None:
        ev = self._work_event(e)
        if ev.generation != e["generation"]:
            self.flag(
                "unfenced",
                f"w{e['w']} heartbeat {e['work_id']} at generation "
                f"{e['generation']} succeeded; it was at {ev.generation}",
            )

    def _log_report(self, e: dict) -> None:
        ev = self._work_event(e)
        if ev.generation != e["generation"]:
            self.flag(
                "unfenced",
                f"w{e['w']} report {e['work_id']} at generation "
                f"{e['generation']} succeeded; it was at {ev.generation}",
            )
        elif ev.type not in REPORTS[e["outcome"]] or ev.state != e["state"]:
            self.flag("lost", f"report of {e['work_id']} is not event {e['seq']}")

    def _log_cancel(self, e: dict) -> None:
        ev = self._work_event(e)
        if ev.state != e["state"]:
            self.flag("lost", f"cancel of {e['work_id']}: event {e['seq']} is {ev.state}")

    def _log_resolve(self, e: dict) -> None:
        ev = self._work_event(e)
        if ev.generation != e["generation"]:
            self.flag(
                "unfenced",
                f"w{e['w']} resolve {e['work_id']} at generation "
                f"{e['generation']} succeeded; it was at {ev.generation}",
            )
        elif ev.type != "resolved" or ev.state != e["to"]:
            self.flag("lost", f"resolve of {e['work_id']} is not event {e['seq']}")

    # -- phase 2: the next writer -----------------------------------------------------------------

    def _home_of(self, key: str) -> Home:
        return self.homes[self.crew_root.get(key, self.root)]

    def repair(self) -> None:
        self.reports = Reports()  # from here on, any quarantine is this audit's finding
        self.homes = {root: Home(root, reports=self.reports) for root in self.roots}
        for key in sorted(self.crew_events):
            home = self._home_of(key)
            with home.store.lock(guards.lock_name(key)):
                crewlog.open_locked(home, key)
        for wid in sorted(self.items):  # PostgreSQL: the row is never behind, nothing to do
            with self.backend.transaction(wid):
                ledger.load(self.homes[self.root], wid, repair=True)

    def check_settled(self) -> None:
        for key in sorted(self.crew_events):
            inc = None
            home = self._home_of(key)
            root = home.root
            for ev in crewlog.events(home, key):
                where = f"crew {key} event {ev.seq} ({ev.type}) after repair"
                inc = ev.incarnation_id if isinstance(ev, Recruited) else inc
                if isinstance(ev, (Recruited, Assigned)):
                    spec = ev.assignment
                    if not (root / "mail" / key / f"{spec.message_id}.json").is_file():
                        self.flag("unsettled", f"{where}: no task mail")
                    if ledger.load(home, ledger.work_id_for_assignment(spec.assignment_id)) is None:
                        self.flag("unsettled", f"{where}: no work item")
                elif isinstance(ev, (Asked, Finished)):
                    if not (root / "notifications" / key / f"{ev.delivery_id}.json").is_file():
                        self.flag("unsettled", f"{where}: no notification")
                elif isinstance(ev, Dismissed):
                    for b in ev.bounced:
                        if (
                            not (root / "bounces" / key / f"{b.message_id}.json").is_file()
                            or not (
                                root / "notifications" / key / f"{b.delivery_id}.json"
                            ).is_file()
                        ):
                            self.flag("unsettled", f"{where}: bounce of {b.message_id}")
                    # and the incarnation's mail is read or bounced, nothing left unread
                    for name, m in self.recs["mail"].get(key, {}).items():
                        if (
                            m.incarnation_id != inc
                            or (root / "receipts" / key / f"{name}.json").is_file()
                        ):
                            continue
                        dlv = self._bounce_of(key, name)
                        if (
                            not (root / "bounces" / key / f"{name}.json").is_file()
                            or not (root / "notifications" / key / f"{dlv}.json").is_file()
                        ):
                            self.flag("unsettled", f"{where}: {name} neither read nor bounced")
        open_ids = set(self.backend.open_ids())
        for wid in sorted(self.items):
            item = ledger.load(self.homes[self.root], wid)
            if self.postgres:
                marker = wid in open_ids
            else:
                marker = (self.root / "ledger" / "open" / wid).exists()
            if item is not None and marker == (item.state in TERMINAL):
                self.flag("open_marker", f"work {wid} is {item.state}, open: {marker}")

    def check_store_reads(self) -> None:
        """The product's reader over every record: nothing may be quarantined."""
        for root, home in self.homes.items():
            for dirpath, _dirnames, filenames in os.walk(root):
                rel_dir = os.path.relpath(dirpath, root)
                parts_dir = () if rel_dir == "." else tuple(rel_dir.split(os.sep))
                for name in filenames:
                    kind = classify((*parts_dir, name))
                    if not is_temp(name) and kind in MODELS:
                        home.store.read(Path(dirpath, name), MODELS[kind])
        for rel, reason in self.reports.reported():
            self.flag("quarantined", f"Store.read quarantined {rel}: {reason}")

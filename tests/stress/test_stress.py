"""The stress suite: the whole protocol and ledger under random SIGKILL, audited.

Four worker processes run a random mix of recruit (no launch), tell, ask, answer, inbox,
done, assign, dismiss, wait, ack, accept, claim, heartbeat, report (and deliberately stale
reports and heartbeats), cancel, resolve and replay against one real home, logging every
completed operation (fsynced) after it returns. The harness SIGKILLs a random worker every
20-300 ms and respawns it; a reader process parses every file continuously; a watcher
process indexes the home from watchfiles. Afterwards ``stress_checks.Audit`` holds the home
to its invariants and to the logs (see that module), the reader must have seen no torn
record, and the watcher's index must equal a full rescan.

``CAPTAIN_STRESS_SECONDS`` sets the chaos time of the main run (default below),
``CAPTAIN_STRESS_SEED`` replays a kill schedule and worker choices (timing still varies),
``CAPTAIN_STRESS_REPORT`` names a JSON file for the summary, and ``CAPTAIN_STRESS_BREAK``
(``in-place`` or ``no-fence``) switches a negative control on for the main run, which must
then fail. ``test_negative_control_is_caught`` proves that each control is caught, and
``test_the_audit_finds_each_kind_of_damage`` that the audit finds each kind of damage done
to a clean home (so a clean audit means something).
"""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import pytest
import stress_harness

from state.clock import now
from state.home import Home
from state.ids import new_id
from state.models import Ack, CrewSnapshot, Notification
from state.store import encode
from state.work import ledger
from state.work.models import TERMINAL, Lease, WorkEvent

DEFAULT_SECONDS = 90.0
CONTROL_SECONDS = 15.0

# Each kind must have run at least this often in the main run, or the run proved little
# (scaled down for a shorter CAPTAIN_STRESS_SECONDS; every kind still at least once).
MINIMUMS = {  # about 40 % of what a 90 s run does on a loaded 2-core machine
    "recruit": 35, "tell": 200, "ask": 90, "answer": 80, "inbox": 200, "done": 45,
    "assign": 20, "dismiss": 30, "wait": 180, "ack": 150, "accept": 80, "claim": 110,
    "heartbeat": 60, "report": 80, "cancel": 80, "resolve": 12, "replay": 45,
}
MIN_KILLS_PER_SECOND = 2.0
MIN_STALE_REFUSED = 60  # deliberately stale reports and heartbeats the fence refused


def test_stress_suite(tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    seconds = float(os.environ.get("CAPTAIN_STRESS_SECONDS") or DEFAULT_SECONDS)
    run = stress_harness.run(tmp_path, seconds,
                             brk=os.environ.get(stress_harness.BREAK_ENV) or None)
    report = run.report()
    with capsys.disabled():  # the line README quotes, shown even when pytest captures
        print("\n" + run.summary())
    shown = ("ops", "refusals", "stale_refused", "files", "crews", "work_items",
             "peak_slots_held", "chaos_seconds", "total_seconds")
    print(json.dumps({k: report[k] for k in shown}))
    if os.environ.get("CAPTAIN_STRESS_REPORT"):
        Path(os.environ["CAPTAIN_STRESS_REPORT"]).write_text(json.dumps(report, indent=2)
                                                              + "\n")
    assert not run.violations, run.explain()

    scale = min(1.0, seconds / DEFAULT_SECONDS)
    assert run.kills >= MIN_KILLS_PER_SECOND * seconds, run.summary()
    short = {kind: (report["ops"].get(kind, 0), need)
             for kind, minimum in MINIMUMS.items()
             if report["ops"].get(kind, 0) < (need := max(1, int(minimum * scale)))}
    assert not short, f"operation kinds that ran too rarely (ran, needed): {short}"
    assert report["stale_refused"] >= max(1, int(MIN_STALE_REFUSED * scale)), report
    assert report["watcher_equal"] is True


@pytest.mark.parametrize("control, caught", [
    ("in-place", "torn"),  # the reader sees half-written records
    ("no-fence", "unfenced"),  # stale reports and heartbeats succeed, the audit sees them
])
def test_negative_control_is_caught(tmp_path: Path, control: str, caught: str) -> None:
    run = stress_harness.run(tmp_path, CONTROL_SECONDS, brk=control)
    print("\n" + run.summary(), dict(run.kinds))
    assert run.kinds[caught] >= 1, f"{control} was not caught as {caught}:\n{run.explain()}"


# -- the audit is not vacuous: each kind of damage to a clean home is found ---------------------


def _logged(root: Path, op: str) -> dict:
    entries = [e for log in sorted((root.parent / "logs").glob("w*.log"))
               for e in stress_harness._read_lines(log)]
    return next(e for e in reversed(entries) if e["op"] == op and e["ok"])


def _write(path: Path, record) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(encode(record))


def _open_item(root: Path):
    home = Home(root)
    for work_id in ledger.open_ids(home):
        item = ledger.load(home, work_id)
        if item is not None and item.state not in TERMINAL:
            return item
    raise AssertionError("no open item")


def _finished_item(root: Path):
    home = Home(root)
    for wid in ledger.all_ids(home):
        item = ledger.load(home, wid)
        if item is not None and item.state in TERMINAL:
            return item
    raise AssertionError("no finished item")


def lose_a_told_message(root: Path) -> None:
    e = _logged(root, "tell")
    (root / "mail" / e["crew"] / f"{e['message_id']}.json").unlink()


def copy_a_message_to_another_crew(root: Path) -> None:
    e = _logged(root, "tell")
    other = next(d for d in sorted((root / "mail").iterdir()) if d.name != e["crew"])
    shutil.copy(root / "mail" / e["crew"] / f"{e['message_id']}.json", other)


def tear_a_message(root: Path) -> None:
    e = _logged(root, "tell")
    path = root / "mail" / e["crew"] / f"{e['message_id']}.json"
    path.write_bytes(path.read_bytes()[:40])


def cut_a_crew_history(root: Path) -> None:
    events = next(d for d in sorted(root.glob("crew/*/events")) if len(list(d.iterdir())) >= 3)
    (events / "00000002.json").unlink()


def ack_nothing(root: Path) -> None:
    e = _logged(root, "tell")
    _write(root / "acks" / e["crew"] / "dlv_NOTHING.json",
           Ack(delivery_id="dlv_NOTHING", crew=e["crew"], acked_at=now()))


def notify_from_nowhere(root: Path) -> None:
    e = _logged(root, "tell")
    delivery = new_id("dlv")
    _write(root / "notifications" / e["crew"] / f"{delivery}.json", Notification(
        delivery_id=delivery, status="asked", crew=e["crew"], assignment_id=e["assignment_id"],
        summary="who asked?", queued_at=None, created_at=now(), question_id="q_NOBODY"))


def stale_lease(root: Path) -> None:
    path = next(iter(sorted(root.glob("work/*/lease.json"))))
    lease = Lease.model_validate_json(path.read_bytes())
    _write(path, lease.model_copy(update={"generation": lease.generation + 1}))


def claim_after_the_end(root: Path) -> None:
    item = _finished_item(root)
    _write(root / "work" / item.work_id / "events" / f"{item.seq + 1:08d}.json", WorkEvent(
        seq=item.seq + 1, at=now(), type="claimed", generation=item.generation + 1,
        actor="intruder", state="running", run_id=new_id("run"), lease_holder="intruder",
        lease_expires_at=now()))


def falsify_a_crew_snapshot(root: Path) -> None:
    path = next(iter(sorted(root.glob("crew/*/state.json"))))
    snap = CrewSnapshot.model_validate_json(path.read_bytes())
    _write(path, snap.model_copy(update={"agent": "codex" if snap.agent != "codex" else "shell"}))


def drop_an_open_marker(root: Path) -> None:
    (root / "ledger" / "open" / _open_item(root).work_id).unlink()


TAMPERS = [
    (lose_a_told_message, "lost"), (copy_a_message_to_another_crew, "duplicate"),
    (tear_a_message, "unparseable"), (cut_a_crew_history, "gap"), (ack_nothing, "dangling"),
    (notify_from_nowhere, "phantom"), (stale_lease, "unfenced"),
    (claim_after_the_end, "illegal"), (falsify_a_crew_snapshot, "snapshot"),
    (drop_an_open_marker, "open_marker"),
]


def test_the_audit_finds_each_kind_of_damage(tmp_path: Path) -> None:
    run = stress_harness.run(tmp_path / "clean", 10.0)
    assert not run.violations, run.explain()
    missed = {}
    for tamper, kind in TAMPERS:
        copy = tmp_path / tamper.__name__
        shutil.copytree(tmp_path / "clean", copy, symlinks=True)
        tamper(copy / "home")
        audit = stress_harness.audit_home(copy / "home", copy / "logs")
        kinds = {v.kind for v in audit.violations}
        if kind not in kinds:
            missed[tamper.__name__] = (kind, [str(v) for v in audit.violations[:5]])
    assert not missed, missed

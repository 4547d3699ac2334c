"""An idle runner's ledger round reads no work item while nothing it reads changed: the
file ledger's change stamp (``ledger.change_stamp``: the open markers, the slots) and the
waiting crews' files stand for what ``dispatch`` read, so the round is skipped; a freed slot
still starts the queued crew at the next round. Crews are recorded only (no pane, no tmux);
the ledger round is forced due each tick, never slept for."""

from __future__ import annotations

import os
from pathlib import Path

from support.cockpit import crew

from captain_tui.runtime.runner import Runner
from state.home import Home
from state.work import ledger
from state.work.files import FileBackend

ROUNDS = 4


def _settled(home: Home) -> None:
    """Backdate the ledger's open markers and the crews' files, as if nothing had changed
    for a minute (a change within the last second is never trusted: mtimes come in ticks)."""
    old = os.stat(home.root).st_mtime - 60
    places = [home.root / "ledger" / "open", *(home.root / "ledger" / "open").iterdir()]
    for key in home.crew_keys():
        places += [home.root / "crew" / key / "events", home.root / "crew" / key / "state.json"]
    for place in places:
        os.utime(place, (old, old))


def _ledger_round_due(runner: Runner) -> None:
    runner._next_ledger = 0.0  # the round's 5 s clock brought forward
    runner._next_examine = float("inf")  # heartbeats are not dispatch (they read leases)


def test_an_idle_ledger_round_reads_no_item_and_a_freed_slot_still_starts(
    home: Home, project: Path, monkeypatch
):
    (home.root / "config.toml").write_text("[ledger]\nslots = 1\n")
    first = crew(home, "Ada", project=project)
    second = crew(home, "Brook", project=project)
    held = ledger.get(home, f"wrk_{first.assignment_id.removeprefix('asg_')}")
    waiting = ledger.get(home, f"wrk_{second.assignment_id.removeprefix('asg_')}")
    assert (held.state, waiting.state) == ("running", "queued")
    _settled(home)
    reads: list[str] = []
    real = FileBackend.item

    def counted(self, work_id, **kwargs):
        reads.append(work_id)
        return real(self, work_id, **kwargs)

    monkeypatch.setattr(FileBackend, "item", counted)
    runner = Runner(home)
    try:
        _ledger_round_due(runner)
        runner.tick()  # the first round reads the open items: one queued, no free slot
        assert reads, "the first round read nothing"
        reads.clear()
        for _ in range(ROUNDS):
            _ledger_round_due(runner)
            runner.tick()
        # nothing changed: no item read (each round read both open items before)
        assert reads == [], reads
        assert ledger.get(home, waiting.work_id).state == "queued"
        # the running item reports: its slot is free, and the next round starts the queue
        ledger.report(home, held.work_id, held.generation, "succeeded", actor="worker")
        _ledger_round_due(runner)
        runner.tick()
        assert ledger.get(home, waiting.work_id).state == "running"
    finally:
        runner.close()

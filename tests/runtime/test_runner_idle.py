"""An idle runner (the cockpit's doorbell, ``captain wait``, ``watch``) does not parse its
crews' histories again on every probe: the death probe, the start-up dialog probe and the
approval check share one cache of snapshots (``death_watch.Snapshots``), read again only
when a crew's files change. No tmux needed: crews are recorded without panes (each probe
still reads every crew's snapshot to learn that)."""

from __future__ import annotations

import os
from pathlib import Path

from captain_tui.runtime.runner import Runner
from state.crew import crewlog, protocol
from state.home import Home

CREWS = ("Jack", "Kim", "Lee")


def _settled(home: Home, key: str) -> None:
    """Backdate the crew's history and snapshot, as if nothing had changed for a minute (a
    change within the last second is never trusted: mtimes come in clock ticks)."""
    old = os.stat(home.root).st_mtime - 60
    for place in (f"crew/{key}/events", f"crew/{key}/state.json"):
        os.utime(home.root / place, (old, old))


def _every_probe_due(runner: Runner) -> None:
    """The probes' clocks (3 s, 3 s, 30 s) brought forward: each runs in the next tick."""
    runner._next_deaths = runner._next_dialogs = runner._next_approval = 0.0


def test_an_idle_runners_probes_parse_no_crew_history_again_until_it_changes(
    home: Home, project: Path, monkeypatch
):
    for name in CREWS:
        protocol.recruit(home, name, "Fix the bug", cwd=str(project))
        _settled(home, name.lower())
    loads: list[str] = []
    real = crewlog.load

    def counted(home_, key, *args, **kwargs):
        loads.append(key)
        return real(home_, key, *args, **kwargs)

    monkeypatch.setattr(crewlog, "load", counted)
    runner = Runner(home)
    try:
        _every_probe_due(runner)
        runner.tick()  # the first round reads every crew
        assert set(loads) >= {n.lower() for n in CREWS}, loads
        loads.clear()
        for _ in range(3):
            _every_probe_due(runner)
            runner.tick()
        # nothing changed: no history parsed (each probe parsed every crew's before: 2 x 3
        # crews a round here, 20 crews every 3 s in a cockpit)
        assert loads == [], loads
        # a crew's history changes: that crew, and only it, is read again
        events = home.root / "crew" / "kim" / "events"
        os.utime(events, (os.stat(events).st_mtime + 5,) * 2)
        _every_probe_due(runner)
        runner.tick()
        assert set(loads) == {"kim"}, loads
    finally:
        runner.close()


def _ring_settled(home: Home, key: str) -> None:
    """Backdate every place a doorbell round looks at (``doorbell._signature``)."""
    old = os.stat(home.root).st_mtime - 60
    for place in (
        f"crew/{key}",
        f"crew/{key}/events",
        f"crew/{key}/state.json",
        f"mail/{key}",
        f"receipts/{key}",
        f"bounces/{key}",
        f"doorbell/{key}.json",
    ):
        path = home.root / place
        if path.exists():
            os.utime(path, (old, old))


def test_an_idle_runner_skips_doorbell_rounds_while_its_watcher_hears_nothing(
    home: Home, project: Path, monkeypatch
):
    """The cockpit hands its runner what its watcher heard (``FeedPump.heard``): while it
    heard nothing and every crew was quiet, a round looks at no crew (it stat'ed seven
    places of each crew every 0.5 s); a change heard, or a watcher that cannot tell, and
    the next round looks again."""
    from captain_tui.runtime import doorbell

    jack = protocol.recruit(home, "Jack", "Fix the bug", cwd=str(project))
    for name in CREWS[1:]:
        protocol.recruit(home, name, "Fix the bug", cwd=str(project))
    for name in CREWS:
        _ring_settled(home, name.lower())
    rounds: list[int] = []
    real = doorbell.ring_all

    def counted(*args, **kwargs):
        rounds.append(1)
        return real(*args, **kwargs)

    monkeypatch.setattr(doorbell, "ring_all", counted)
    heard: list[int | None] = [0]
    runner = Runner(home)
    runner.heard = lambda: heard[0]

    def ring_round() -> int:
        runner._next_ring = 0.0  # the doorbell's 0.5 s clock, brought forward
        before = len(rounds)
        runner.tick()
        return len(rounds) - before

    try:
        assert ring_round() == 1  # the first round looks at every crew
        assert [ring_round() for _ in range(3)] == [0, 0, 0]  # nothing heard: none looked at
        protocol.tell(home, "Jack", "One more thing", assignment_id=jack.assignment_id)
        heard[0] = 1  # the watcher's batch for the new mail
        assert ring_round() == 1
        heard[0] = None  # the watcher is down: nothing says the home is quiet
        assert [ring_round() for _ in range(2)] == [1, 1]
    finally:
        runner.close()

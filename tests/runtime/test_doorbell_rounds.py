"""Doorbell rounds stay cheap: a crew with nothing to ring is not read again every round,
yet new mail (or anything else the attempt read) is attempted in the very next round, and a
held ring is retried every round. No tmux needed: crews are recorded without panes."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

from captain_tui.runtime import doorbell
from state.crew import protocol
from state.home import Home


def _settled(home: Home, key: str) -> None:
    """Backdate every place a round looks at, as if nothing had changed for a minute (a
    change within the last second is never trusted: mtimes come in clock ticks)."""
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


def _counting(monkeypatch) -> list[str]:
    calls: list[str] = []
    real = doorbell.ring
    monkeypatch.setattr(
        doorbell, "ring", lambda home, key, **kw: calls.append(key) or real(home, key, **kw)
    )
    return calls


def test_a_quiet_crew_is_attempted_again_as_soon_as_new_mail_arrives(
    home: Home, project: Path, monkeypatch
):
    jack = protocol.recruit(home, "Jack", "Fix the bug", cwd=str(project))
    _settled(home, "jack")
    calls = _counting(monkeypatch)
    quiet: dict = {}
    first = doorbell.ring_all(home, quiet)
    again = doorbell.ring_all(home, quiet)
    assert [o.action for o in first] == [o.action for o in again] == ["skipped"]
    assert calls == ["jack"]  # the second round looked at mtimes only
    protocol.tell(home, "Jack", "One more thing", assignment_id=jack.assignment_id)
    doorbell.ring_all(home, quiet)
    assert calls == ["jack", "jack"]  # the new mail: attempted in the next round


def test_without_a_memory_every_round_attempts_every_crew(home: Home, project: Path, monkeypatch):
    protocol.recruit(home, "Jack", "Fix the bug", cwd=str(project))
    _settled(home, "jack")
    calls = _counting(monkeypatch)
    doorbell.ring_all(home)
    doorbell.ring_all(home)
    assert calls == ["jack", "jack"]


def test_a_fresh_change_is_never_trusted_to_its_mtime(home: Home, project: Path, monkeypatch):
    protocol.recruit(home, "Jack", "Fix the bug", cwd=str(project))  # written just now
    calls = _counting(monkeypatch)
    quiet: dict = {}
    doorbell.ring_all(home, quiet)
    doorbell.ring_all(home, quiet)
    assert calls == ["jack", "jack"]


def test_a_held_ring_is_retried_every_round(home: Home, project: Path, monkeypatch):
    protocol.recruit(home, "Jack", "Fix the bug", cwd=str(project))
    _settled(home, "jack")
    calls: list[str] = []
    monkeypatch.setattr(
        doorbell,
        "ring",
        lambda home, key, **kw: (
            calls.append(key) or doorbell.Outcome("Jack", "held", "human_draft")
        ),
    )
    quiet: dict = {}
    for _ in range(3):
        assert [o.action for o in doorbell.ring_all(home, quiet)] == ["held"]
    assert calls == ["jack"] * 3


def test_a_remembered_crew_is_attempted_again_after_the_recheck_period(
    home: Home, project: Path, monkeypatch
):
    protocol.recruit(home, "Jack", "Fix the bug", cwd=str(project))
    _settled(home, "jack")
    calls = _counting(monkeypatch)
    monkeypatch.setattr(doorbell, "QUIET_RECHECK", 0.0)  # the slow sweep, made immediate
    quiet: dict = {}
    doorbell.ring_all(home, quiet)
    doorbell.ring_all(home, quiet)
    assert calls == ["jack", "jack"]


def test_a_crew_whose_directory_is_gone_leaves_the_memory(home: Home, project: Path):
    protocol.recruit(home, "Jack", "Fix the bug", cwd=str(project))
    _settled(home, "jack")
    quiet: dict = {}
    doorbell.ring_all(home, quiet)
    assert set(quiet) == {"jack"}
    shutil.rmtree(home.root / "crew" / "jack")
    doorbell.ring_all(home, quiet)
    assert quiet == {}

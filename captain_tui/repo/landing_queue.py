"""The landing queue as others see it: who is landing, waiting, or was killed mid-way
(``status``, the cockpit's land confirmation), and whether a queue entry's process still
runs. ``captain_tui.repo.landing`` writes the queue and takes the turns; this reads it
without importing the land's machinery (git, the ledger), which ``status`` does not need.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path

from state.home import Home


def alive(pid: int, started: str | None) -> bool:
    """Whether the process that wrote a queue entry still runs (its pid and start time)."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as f:
            fields = f.read().rsplit(b")", 1)[1].split()
    except (OSError, IndexError):
        return False
    return started is None or fields[19].decode() == started


def start_time(pid: int) -> str | None:
    try:
        with open(f"/proc/{pid}/stat", "rb") as f:
            return f.read().rsplit(b")", 1)[1].split()[19].decode()
    except (OSError, IndexError):
        return None


def queue(home: Home) -> list[dict]:
    """Every land waiting or running, oldest first, for ``status`` and the cockpit: each
    ``{repo, project, crew, assignment_id, base_branch, queued_at, state}`` where state is
    ``landing`` (it holds the repository's turn), ``queued`` or ``interrupted`` (a land
    killed after it began to move the base: the next land of the repository finishes it)."""
    root = home.store.dir("landing", create=False)
    if not root.is_dir():
        return []
    rows = []
    for repo in sorted(os.listdir(root)):
        where = root / repo
        if not where.is_dir() or where.is_symlink():
            continue
        journal = _read(home, where / "journal.json", _JOURNAL)
        if journal is not None:
            rows.append({**_public(journal, repo), "state": "interrupted"})
        queued = where / "queue"
        names = sorted(os.listdir(queued)) if queued.is_dir() else []
        for name in names:
            if not name.endswith(".json"):
                continue
            entry = _read(home, queued / name, _ENTRY)
            if entry is None or not alive(entry["pid"], entry.get("started")):
                continue
            rows.append({**_public(entry, repo), "state": entry.get("state", "queued")})
    rows.sort(key=lambda r: r["queued_at"] or "")
    return rows


_TEXT = ("project", "crew", "assignment_id", "base_branch", "queued_at")  # text or null


def _pid(value: object) -> bool:
    return type(value) is int and value > 0


_JOURNAL: dict[
    str, Callable[[object], bool]
] = {}  # a journal: only the fields shown (_TEXT) are read here
_ENTRY: dict[str, Callable[[object], bool]] = {
    "pid": _pid,
    "started": lambda v: v is None or type(v) is str,
    "state": lambda v: v in (None, "queued", "landing"),
}


def _read(home: Home, path: Path, checks: dict[str, Callable[[object], bool]]) -> dict | None:
    """A queue entry or a journal as ``captain_tui.repo.landing`` writes it, or None: absent,
    or not one (the fields shown not text or null; an entry's pid not a process ID, its
    start time not text, its state not one a land writes), which the store reports and
    sets aside as any bad record (``Store.quarantine``). An entry of another shape made
    ``status`` fail with ``internal_error`` (a ``queued_at`` that is a number, sorted
    against text; a NaN where a name goes) or showed a land that is not one (a pid of
    ``"self"`` read ``/proc/self``)."""
    found = home.store.read_json(path)
    if found is None:
        return None
    fine = all(found.get(k) is None or type(found.get(k)) is str for k in _TEXT) and all(
        check(found.get(k)) for k, check in checks.items()
    )
    if fine:
        return found
    home.store.quarantine(path, "is not a landing queue entry or journal")
    return None


def _public(entry: dict, repo: str) -> dict:
    return {
        "repo": repo,
        "project": entry.get("project"),
        "crew": entry.get("crew"),
        "assignment_id": entry.get("assignment_id"),
        "base_branch": entry.get("base_branch"),
        "queued_at": entry.get("queued_at"),
    }

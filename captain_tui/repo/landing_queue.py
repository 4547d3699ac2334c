"""The landing queue as others see it: who is landing, waiting, or was killed mid-way
(``status``, the cockpit's land confirmation), and whether a queue entry's process still
runs. ``captain_tui.repo.landing`` writes the queue and takes the turns; this reads it
without importing the land's machinery (git, the ledger), which ``status`` does not need.
"""

from __future__ import annotations

import os

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
        journal = home.store.read_json(where / "journal.json")
        if journal is not None:
            rows.append({**_public(journal, repo), "state": "interrupted"})
        queued = where / "queue"
        names = sorted(os.listdir(queued)) if queued.is_dir() else []
        for name in names:
            if not name.endswith(".json"):
                continue
            entry = home.store.read_json(queued / name)
            if entry is None or not alive(entry.get("pid", 0), entry.get("started")):
                continue
            rows.append({**_public(entry, repo), "state": entry.get("state", "queued")})
    rows.sort(key=lambda r: r["queued_at"] or "")
    return rows


def _public(entry: dict, repo: str) -> dict:
    return {
        "repo": repo,
        "project": entry.get("project"),
        "crew": entry.get("crew"),
        "assignment_id": entry.get("assignment_id"),
        "base_branch": entry.get("base_branch"),
        "queued_at": entry.get("queued_at"),
    }

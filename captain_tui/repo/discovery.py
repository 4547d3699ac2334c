"""Whether a directory can be inside a git work tree, answered without running git.

git finds a repository by looking, from the directory up to ``/``, for a ``.git`` entry
(a directory, or a file naming one) or a directory that is itself a repository (``HEAD``
beside ``objects`` and ``refs``). Where no directory on the way has either, git can only say
"not a repository" (``captain_tui.repo.git`` drops every variable that would point it
elsewhere), so ``git.top_level`` answers None without starting it, and ``status`` does not
even import git for a crew whose project is outside any repository. Imports only ``os``.
"""

from __future__ import annotations

import os


def outside_any_repository(path: str) -> bool:
    """True when no directory from ``path`` (its real path, as git resolves it) up to ``/``
    holds ``.git`` or ``HEAD``: git would find no repository there. False when one might
    (git decides)."""
    current = os.path.realpath(path)
    while True:
        if os.path.lexists(os.path.join(current, ".git")) or os.path.lexists(
            os.path.join(current, "HEAD")
        ):
            return False
        parent = os.path.dirname(current)
        if parent == current:
            return True
        current = parent


def may_have_change(snapshot: object, memo: dict[str, bool] | None = None) -> bool:
    """Whether ``captain_tui.repo.change.where_of`` could find a change for this crew
    snapshot: it has a worktree, or its project is not outside every repository. ``memo``
    keeps the answer per project directory (crews share one) for one caller's look."""
    if getattr(snapshot, "workspace", None) is not None:
        return True
    project_dir: str = snapshot.assignment.project_dir  # type: ignore[attr-defined]
    if memo is not None and project_dir in memo:
        return memo[project_dir]
    found = os.path.isdir(project_dir) and not outside_any_repository(project_dir)
    if memo is not None:
        memo[project_dir] = found
    return found

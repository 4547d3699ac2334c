"""Real git repositories for tests: made in a tmp dir with the real ``git`` CLI, never a
mock. ``git`` runs one command and returns its stdout; ``repository`` makes one with a first
commit on ``main``; ``head``, ``tree_of`` and ``clean`` read what tests assert on."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

# git's identity and config for every call: the developer's ~/.gitconfig stays out of it
ENV = {
    "GIT_AUTHOR_NAME": "Tess",
    "GIT_AUTHOR_EMAIL": "tess@example.invalid",
    "GIT_COMMITTER_NAME": "Tess",
    "GIT_COMMITTER_EMAIL": "tess@example.invalid",
    "GIT_CONFIG_NOSYSTEM": "1",
    "LC_ALL": "C",
}


def git(*args: str, cwd: Path | str, check: bool = True) -> str:
    env = {k: v for k, v in os.environ.items() if not k.startswith("GIT_")} | ENV
    proc = subprocess.run(
        ["git", *args], cwd=cwd, env=env, capture_output=True, text=True, timeout=60
    )
    if check:
        assert proc.returncode == 0, (args, proc.stdout, proc.stderr)
    return proc.stdout.strip()


def repository(path: Path, files: dict[str, str] | None = None) -> Path:
    """A repository at ``path`` on branch ``main`` with ``files`` in its first commit."""
    path.mkdir(parents=True, exist_ok=True)
    git("init", "-q", "-b", "main", cwd=path)
    for name, text in (files or {"README": "hello\n"}).items():
        (path / name).parent.mkdir(parents=True, exist_ok=True)
        (path / name).write_text(text)
    git("add", "-A", cwd=path)
    git("commit", "-q", "-m", "first", cwd=path)
    return path


def head(cwd: Path | str, ref: str = "HEAD") -> str:
    return git("rev-parse", ref, cwd=cwd)


def clean(cwd: Path | str) -> bool:
    """No change at all in the checkout, untracked files included."""
    return git("status", "--porcelain", "--untracked-files=all", cwd=cwd) == ""


def worktrees(project: Path | str) -> list[str]:
    out = git("worktree", "list", "--porcelain", cwd=project)
    return [line[len("worktree ") :] for line in out.splitlines() if line.startswith("worktree ")]

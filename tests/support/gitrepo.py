"""Real git repositories for tests: made in tmp dirs, committed with a fixed identity, never
reading the user's git configuration."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

IDENTITY = {
    "GIT_AUTHOR_NAME": "test",
    "GIT_AUTHOR_EMAIL": "test@example.invalid",
    "GIT_COMMITTER_NAME": "test",
    "GIT_COMMITTER_EMAIL": "test@example.invalid",
    "GIT_CONFIG_NOSYSTEM": "1",
    "GIT_CONFIG_GLOBAL": os.devnull,
    # fixed dates: the same files make the same commits, so a snapshot's shas hold
    "GIT_AUTHOR_DATE": "2026-11-29T12:00:00Z",
    "GIT_COMMITTER_DATE": "2026-11-29T12:00:00Z",
}


def git(cwd: Path | str, *args: str) -> str:
    env = {k: v for k, v in os.environ.items() if not k.startswith("GIT_")} | IDENTITY
    done = subprocess.run(
        ["git", *args], cwd=cwd, env=env, capture_output=True, text=True, check=False
    )
    assert done.returncode == 0, (args, done.stderr)
    return done.stdout


def init(path: Path, files: dict[str, str] | None = None) -> str:
    """A repository at ``path`` on branch main with one commit of ``files``; its sha."""
    path.mkdir(parents=True, exist_ok=True)
    git(path, "init", "-q", "-b", "main")
    for name, text in (files or {"README.md": "# project\n"}).items():
        (path / name).parent.mkdir(parents=True, exist_ok=True)
        (path / name).write_text(text)
    git(path, "add", "-A")
    git(path, "commit", "-qm", "base")
    return git(path, "rev-parse", "HEAD").strip()


def commit(path: Path | str, message: str) -> str:
    git(path, "add", "-A")
    git(path, "commit", "-qm", message)
    return git(path, "rev-parse", "HEAD").strip()


def commit_many(path: Path, count: int, folder: str = "src") -> str:
    """Commit ``count`` small files under ``folder`` (100 a directory) on top of HEAD with
    ``git fast-import``, moving HEAD only (``reset --soft``): the index and the working
    tree stay without them, so against the new HEAD they are ``count`` files deleted — a
    10,000-file change made without writing 10,000 files."""
    head = git(path, "rev-parse", "HEAD").strip()
    lines = [
        "commit refs/heads/main",
        "committer test <test@example.invalid> 1764417600 +0000",
        "data 4",
        "many",
        f"from {head}",
    ]
    for i in range(count):
        body = f"{i}\n"
        lines += [f"M 100644 inline {folder}/d{i // 100:03}/f{i % 100:03}.txt", f"data {len(body)}"]
        lines.append(body.rstrip("\n"))
    stream = "\n".join(lines) + "\n"
    env = {k: v for k, v in os.environ.items() if not k.startswith("GIT_")} | IDENTITY
    subprocess.run(
        ["git", "fast-import", "--quiet"], cwd=path, env=env, input=stream, text=True, check=True
    )
    git(path, "reset", "-q", "--soft", "main")
    return git(path, "rev-parse", "HEAD").strip()

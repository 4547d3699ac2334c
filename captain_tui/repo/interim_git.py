"""Interim: running git until ``captain_tui/repo/git.py`` (t25-worktree) is merged."""

from __future__ import annotations

import os
import subprocess

from state.errors import CaptainError

TIMEOUT = 60.0
LIMIT = 64 * 1024 * 1024


def _env(extra: dict | None) -> dict:
    env = {k: v for k, v in os.environ.items() if not k.startswith("GIT_")}
    env |= {"GIT_TERMINAL_PROMPT": "0", "LC_ALL": "C", "GIT_OPTIONAL_LOCKS": "0"}
    return env | (extra or {})


def run(
    args: list[str],
    *,
    cwd: str,
    env: dict | None = None,
    literal: bool = False,
    limit: int = LIMIT,
    truncate: bool = False,
) -> bytes:
    head = ["git", "-c", "core.quotepath=false"] + (["--literal-pathspecs"] if literal else [])
    try:
        p = subprocess.run(
            head + args,
            cwd=cwd,
            env=_env(env),
            stdin=subprocess.DEVNULL,
            capture_output=True,
            timeout=TIMEOUT,
        )
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise CaptainError("git_failed", f"git {args[0]} could not run: {exc}.") from None
    if p.returncode != 0:
        err = p.stderr.decode("utf-8", "replace").strip().splitlines()
        raise CaptainError(
            "git_failed", f"git {args[0]} failed: {err[-1] if err else p.returncode}."
        )
    if len(p.stdout) > limit and not truncate:
        raise CaptainError("git_failed", f"git {args[0]} printed more than {limit} bytes.")
    return p.stdout[:limit]


def ok(args: list[str], *, cwd: str) -> bool:
    try:
        run(args, cwd=cwd)
    except CaptainError:
        return False
    return True

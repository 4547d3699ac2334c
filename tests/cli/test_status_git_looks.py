"""``captain status`` asks git where each crew's project is (to show its change); crews
share a project, so it asks once per directory, not once per crew (#28: twenty crew were
twenty git processes before a single row was shown), and not at all for a project outside
any repository (no ``.git`` or ``HEAD`` from it up to ``/``: git could only say "not a
repository")."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

from support.repos import repository


def _logging_git(tmp_path: Path) -> tuple[dict[str, str], Path]:
    """A PATH whose ``git`` is the real one, run through a script that first appends its
    arguments to a log: every git process status starts, counted."""
    real = shutil.which("git")
    assert real, "git is installed here (.ci/install-agents)"
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    log = tmp_path / "git.log"
    script = bin_dir / "git"
    script.write_text(f'#!/bin/sh\necho "$*" >> {log}\nexec {real} "$@"\n')
    script.chmod(0o755)
    return {"PATH": f"{bin_dir}{os.pathsep}{os.environ['PATH']}"}, log


def test_status_asks_git_once_for_crews_that_share_a_project(cli, tmp_path: Path):
    repo = repository(tmp_path / "repo", {"src/a.py": "a = 1\n"})
    for name, owns in (("Ann", "src/a"), ("Bo", "src/b"), ("Cy", "src/c")):
        done = cli("crew", name, "--task", "T", "--owns", owns, "--allow", "edit", "--no-launch")
        assert done.code == 0, done.err
    env, log = _logging_git(tmp_path)
    shown = cli("status", "--json", env=env)
    assert shown.code == 0, shown.err
    assert [r["name"] for r in shown.json["crew"]] == ["Ann", "Bo", "Cy"]
    assert all(r["change"] is None for r in shown.json["crew"])  # not a git project
    assert not log.exists(), log.read_text()  # and git was never started to say so

    for name in ("Di", "Ed"):  # two crew sharing a real repository's checkout
        done = cli(
            "crew", name, "--task", "T", "--owns", f"src/{name}", "--allow", "edit",
            "--no-launch", "--no-worktree", "--cwd", str(repo),
        )  # fmt: skip
        assert done.code == 0, done.err
    shown = cli("status", "--json", env=env)
    assert shown.code == 0, shown.err
    changes = {r["name"]: r["change"] for r in shown.json["crew"]}
    assert changes["Ann"] is None and changes["Di"]["shared_checkout"] is True, changes
    looks = [line for line in log.read_text().splitlines() if "--show-toplevel" in line]
    assert len(looks) == 1, looks

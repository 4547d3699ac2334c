"""``captain status`` asks git where each crew's project is (to show its change); crews
share a project, so it asks once per directory, not once per crew (#28: twenty crew were
twenty git processes before a single row was shown)."""

from __future__ import annotations

import os
import shutil
from pathlib import Path


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
    for name, owns in (("Ann", "src/a"), ("Bo", "src/b"), ("Cy", "src/c")):
        done = cli("crew", name, "--task", "T", "--owns", owns, "--allow", "edit", "--no-launch")
        assert done.code == 0, done.err
    env, log = _logging_git(tmp_path)
    shown = cli("status", "--json", env=env)
    assert shown.code == 0, shown.err
    assert [r["name"] for r in shown.json["crew"]] == ["Ann", "Bo", "Cy"]
    assert all(r["change"] is None for r in shown.json["crew"])  # not a git project
    looks = [line for line in log.read_text().splitlines() if "--show-toplevel" in line]
    assert len(looks) == 1, looks

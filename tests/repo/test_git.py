"""``captain_tui/repo/git.py``, the one way captain runs git: real git, real repositories.

Each test names one promise of the module: a failure is ``git_failed`` with a sentence
(never an exception of another kind, never a terminal escape), output past the bound and a
command past its deadline are refused (and the process is gone), the caller's ``GIT_DIR``
cannot point git elsewhere, and paths come back as bytes, ``-z``-separated, unquoted.
"""

from __future__ import annotations

import os
import subprocess
import time
from pathlib import Path

import pytest

from captain_tui.repo import git
from state.errors import CaptainError

ID = ["-c", "user.name=Test", "-c", "user.email=test@example.com"]


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    path = tmp_path / "repo"
    path.mkdir()
    subprocess.run(["git", "init", "-q", "-b", "main"], cwd=path, check=True)
    (path / "a.txt").write_text("a\n")
    subprocess.run(["git", "add", "-A"], cwd=path, check=True)
    subprocess.run(["git", *ID, "commit", "-q", "-m", "one"], cwd=path, check=True)
    return path


def test_a_failure_is_git_failed_with_gits_words_escaped_on_one_line(repo):
    with pytest.raises(CaptainError) as caught:
        git.run(["rev-parse", "--verify", "no-such-\x1b[31mref\nsecond"], cwd=str(repo))
    err = caught.value
    assert err.code == "git_failed" and err.extra["exit_status"] == 128
    assert "\x1b" not in err.message and "\n" not in err.message
    assert "fatal" in err.message  # git's own words, in English whatever the locale
    with pytest.raises(CaptainError) as caught:
        git.run(["status"], cwd=str(repo / "missing"))
    assert caught.value.code == "git_failed" and "does not exist" in caught.value.message
    with pytest.raises(CaptainError) as caught:
        git.run(["log", "a\0b"], cwd=str(repo))
    assert caught.value.code == "git_failed"


def test_output_past_the_bound_is_refused_not_half_read(repo):
    with pytest.raises(CaptainError) as caught:
        git.run(["cat-file", "-p", "HEAD"], cwd=str(repo), limit=16)
    assert caught.value.code == "git_failed" and "more than 16 bytes" in caught.value.message


def test_a_command_past_its_deadline_is_stopped_and_refused(repo, tmp_path):
    started = time.monotonic()
    marker = tmp_path / "still-running"
    with pytest.raises(CaptainError) as caught:
        # an alias runs a shell command: one that outlives the deadline by far
        git.run(
            ["-c", f"alias.hang=!sleep 30; touch {marker}", "hang"],
            cwd=str(repo),
            timeout=0.5,
        )
    assert caught.value.code == "git_failed" and "0.5 seconds" in caught.value.message
    assert time.monotonic() - started < 10
    # the whole process group went with it: nothing is left to touch the marker later
    out = subprocess.run(["pgrep", "-f", f"touch {marker}"], capture_output=True, text=True)
    assert out.stdout.strip() == ""


def test_the_callers_git_environment_cannot_point_git_elsewhere(repo, tmp_path, monkeypatch):
    other = tmp_path / "other"
    other.mkdir()
    subprocess.run(["git", "init", "-q", "-b", "elsewhere"], cwd=other, check=True)
    monkeypatch.setenv("GIT_DIR", str(other / ".git"))
    monkeypatch.setenv("GIT_WORK_TREE", str(other))
    monkeypatch.setenv("LC_ALL", "de_DE.UTF-8")
    top = git.run(["rev-parse", "--show-toplevel"], cwd=str(repo)).text.strip()
    assert os.path.realpath(top) == os.path.realpath(repo)
    assert git.top_level(str(repo)) == os.path.realpath(repo)
    assert git.top_level(str(tmp_path)) is None  # not a repository: None, no refusal


def test_paths_come_back_as_they_are_nul_separated(repo):
    odd = ["new\nline.txt", "tab\there.txt", "esc\x1b[2Jname.txt", "ünï cödé.txt"]
    for name in odd:
        (repo / name).write_text("x\n")
    out = git.run(["status", "--porcelain=v1", "-z", "--untracked-files=all"], cwd=str(repo))
    assert sorted(f[3:] for f in out.fields()) == sorted(odd)

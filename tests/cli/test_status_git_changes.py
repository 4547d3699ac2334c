"""``captain status`` with crews in git worktrees (#28): each row's change shape is read with
fewer git processes than the full change (no tree written: ``change.summarize``; the heads
of crews sharing a repository asked at once), the crews' git work runs concurrently, and
the shape is always exactly what the full change (``change.compute``, which ``diff``,
review and land use) says, over every kind of change an agent leaves: modified, added,
deleted, binary, symlink, mode, a file become a symlink or a directory, untracked,
ignored, staged, intent-to-add, outside the grant, commits, a commit reverted in the
working tree, a history rewritten under the base, and nothing.

Every call is ``main(argv)`` in this process (``support.cli.InProcess``); the repositories
and git are real.
"""

from __future__ import annotations

import os
import shutil
import tempfile
from pathlib import Path

import pytest
from support import gitrepo
from support.cli import ok, runner

from captain_tui.repo import change
from state.crew import crewlog
from state.home import Home


@pytest.fixture
def run(request, cli):
    return runner(request, cli)


def _recruit(run, name: str, owns: str) -> Path:
    """A crew in its own worktree of the project; returns the worktree."""
    r = ok(run("crew", name, "--task", "change src", "--owns", owns, "--no-launch", "--json"))
    return Path(r["workspace"]["worktree"])


def _edits(top: Path) -> None:  # modified, untracked, deleted, outside the grant
    (top / "src/a.py").write_text("a = 2\nb = 3\n")
    (top / "src/new.py").write_text("n = 1\n")
    (top / "src/gone.py").unlink()
    (top / "README.md").write_text("r\nmore\n")


def _binary_symlink_mode(top: Path) -> None:
    (top / "src/blob.bin").write_bytes(b"\x00\x01\x02binary\xff" * 50)
    os.symlink("/etc/passwd", top / "src/link")  # inside src/, leads out of it
    (top / "src/a.py").chmod(0o755)
    (top / "src/dir").mkdir()
    (top / "src/dir/deep.txt").write_text("deep\n")
    (top / "src/gone.py").unlink()  # a file become a symlink: a typechange
    os.symlink("a.py", top / "src/gone.py")
    (top / "README.md").unlink()  # a file become a directory
    (top / "README.md").mkdir()
    (top / "README.md/inside").write_text("i\n")


def _commits(top: Path) -> None:  # committed, then more not committed, one reverted
    (top / "src/a.py").write_text("a = 1\nc = 2\n")
    (top / "src/gone.py").write_text("changed in a commit\n")
    gitrepo.commit(top, "the crew's commit")
    (top / "src/gone.py").write_text("x\n")  # back to the base: not in the change, yet dirty
    (top / "src/c.py").write_text("c\n")


def _rewritten(top: Path) -> None:  # the branch squashed under its base
    (top / "src/a.py").write_text("a\nb\n")
    gitrepo.commit(top, "the crew's commit")
    gitrepo.git(top, "reset", "-q", "--soft", "HEAD~2")
    gitrepo.commit(top, "squashed over the base")


def _staged(top: Path) -> None:  # in the crew's own index, then changed again; -N; ignored
    (top / "src/staged.py").write_text("s = 1\n")
    gitrepo.git(top, "add", "src/staged.py")
    (top / "src/staged.py").write_text("s = 2\n")
    (top / "src/later.py").write_text("l = 1\n")
    gitrepo.git(top, "add", "-N", "src/later.py")
    (top / ".gitignore").write_text("build/\n")
    (top / "build").mkdir()
    (top / "build/out.o").write_text("ignored\n")


def _nothing(top: Path) -> None:
    pass


CHANGES = {
    "Ann": _edits,
    "Bo": _binary_symlink_mode,
    "Cy": _commits,
    "Di": _rewritten,
    "Ed": _staged,
    "Flo": _nothing,
}


def test_the_status_shape_is_exactly_the_full_changes_over_every_kind_of_change(run, project):
    files = {"src/a.py": "a = 1\n", "src/gone.py": "x\n", "README.md": "r\n"}
    gitrepo.init(project, files)
    gitrepo.git(project, "commit", "-q", "--allow-empty", "-m", "second")
    for name, make in CHANGES.items():  # Ann owns src/, the others what nobody changes
        make(_recruit(run, name, "src" if name == "Ann" else f"lib/{name.lower()}"))

    home = Home(project.parent / "home")
    snapshots = [crewlog.load(home, name.lower())[0] for name in CHANGES]
    full = [change.compute(change.where_of(s), s).summary() for s in snapshots]
    fast = [change.summarize(change.where_of(s), s) for s in snapshots]
    assert fast == full
    assert change.summaries_of(snapshots) == full  # the threads' answer, in order
    rows = {r["name"]: r["change"] for r in ok(run("status", "--json"))["crew"]}
    assert [rows[name] for name in CHANGES] == full

    shapes = dict(zip(CHANGES, full, strict=True))
    # each kind really is what its crew left (so the equality above covers it)
    assert sorted(shapes["Ann"]["outside_grant"]) == ["README.md"]
    assert shapes["Ann"]["files_changed"] == 4 and shapes["Ann"]["commits"] == 0
    assert shapes["Bo"]["files_changed"] == 7 and shapes["Bo"]["outside_grant_count"] == 7
    assert shapes["Cy"]["commits"] == 1 and shapes["Cy"]["uncommitted"] == ["src/c.py"]
    assert shapes["Di"]["history_rewritten"] is True
    assert shapes["Ed"]["uncommitted_count"] == 3  # staged.py, later.py, .gitignore
    assert "build/out.o" not in shapes["Ed"]["uncommitted"]
    assert (
        shapes["Flo"]["files_changed"] == 0
        and shapes["Flo"]["head"] == shapes["Flo"]["base_commit"]
    )


def _git_that_waits_for_company(tmp_path: Path) -> tuple[dict[str, str], Path]:
    """A PATH whose ``git`` is the real one behind a script that logs its arguments, and
    whose ``add --all`` (staging a crew's working tree) first waits, polling up to 5 s, for
    another crew's ``add --all`` to have started: with crews read one after another it
    never has, and the script logs ``alone``."""
    real = shutil.which("git")
    assert real, "git is installed here (.ci/install-agents)"
    bin_dir, marks = tmp_path / "bin", tmp_path / "marks"
    bin_dir.mkdir()
    marks.mkdir()
    log = tmp_path / "git.log"
    script = bin_dir / "git"
    script.write_text(
        f"""#!/bin/sh
echo "$*" >> {log}
case " $* " in *" add --all "*)
  touch {marks}/$$
  n=0
  while [ "$(ls {marks} | wc -l)" -lt 2 ] && [ $n -lt 100 ]; do sleep 0.05; n=$((n+1)); done
  [ "$(ls {marks} | wc -l)" -lt 2 ] && echo alone >> {log} ;;
esac
exec {real} "$@"
"""
    )
    script.chmod(0o755)
    return {"PATH": f"{bin_dir}{os.pathsep}{os.environ['PATH']}"}, log


def test_status_reads_the_crews_changes_together_with_no_tree_written(run, project, tmp_path):
    gitrepo.init(project, {"src/a.py": "a = 1\n", "README.md": "r\n"})
    for name in ("Ann", "Bo", "Cy"):  # each with a commit and more not committed
        top = _recruit(run, name, f"src/{name.lower()}")
        (top / "src/a.py").write_text(f"a = '{name}'\n")
        gitrepo.commit(top, "the crew's commit")
        (top / "src/new.py").write_text("n = 1\n")
    _recruit(run, "Di", "src/di")  # at its base, nothing changed

    env, log = _git_that_waits_for_company(tmp_path)
    rows = ok(run("status", "--json", env=env))["crew"]

    assert [r["change"]["files_changed"] for r in rows] == [2, 2, 2, 0]
    said = log.read_text().splitlines()
    assert "alone" not in said, said  # two crews' git ran at once
    assert not [line for line in said if "write-tree" in line], said
    # one for the four crews' heads (they share a repository), then four git processes
    # for a crew with commits and two for one still at its base
    heads = [line for line in said if "rev-parse" in line]
    assert len(heads) == 1 and heads[0].count("/HEAD^{commit}") == 4, said
    assert len(said) == 1 + 3 * 4 + 2, said


def test_a_crews_read_that_fails_in_its_thread_fails_the_caller_never_shows_no_change(
    run, project, tmp_path, monkeypatch
):
    """A failure that is not git's (here: no temporary directory for the staged index)
    reaches the caller of ``summaries_of`` as it would reading the crews one by one: a
    crew's change is never shown as None ("no change") because its thread failed."""
    gitrepo.init(project, {"src/a.py": "a = 1\n"})
    for name in ("Ann", "Bo"):
        (_recruit(run, name, f"src/{name.lower()}") / "src/new.py").write_text("n\n")
    home = Home(project.parent / "home")
    snapshots = [crewlog.load(home, key)[0] for key in ("ann", "bo")]
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path / "no-such-directory"))
    with pytest.raises(FileNotFoundError):
        change.summary_of(snapshots[0])
    with pytest.raises(FileNotFoundError):
        change.summaries_of(snapshots)


def test_a_crew_whose_head_git_cannot_read_spoils_only_its_own_row(run, project):
    """The heads of crews sharing a repository are asked at once; when git cannot answer
    for one (its branch deleted under it), each crew asks for itself: that crew's row says
    git could not read its change, and the others' rows are whole."""
    gitrepo.init(project, {"src/a.py": "a = 1\n"})
    tops = {}
    for name in ("Ann", "Bo", "Cy"):
        tops[name] = _recruit(run, name, f"src/{name.lower()}")
        (tops[name] / "src/new.py").write_text("n\n")
    gitdir = gitrepo.git(tops["Bo"], "rev-parse", "--absolute-git-dir").strip()
    Path(gitdir, "HEAD").write_text("ref: refs/heads/captain/no-such-branch\n")

    home = Home(project.parent / "home")
    snapshots = [crewlog.load(home, key)[0] for key in ("ann", "bo", "cy")]
    ann, bo, cy = change.summaries_of(snapshots)
    assert bo["error"]["code"] == "git_failed", bo
    assert ann == change.compute(change.where_of(snapshots[0]), snapshots[0]).summary()
    assert ann["files_changed"] == cy["files_changed"] == 1, (ann, cy)
    rows = {r["name"]: r["change"] for r in ok(run("status", "--json"))["crew"]}
    assert rows == {"Ann": ann, "Bo": bo, "Cy": cy}

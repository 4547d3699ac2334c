"""#25 points 2 and 3 through the real CLI on real git repositories: ``captain diff`` (the
unified diff, ``--stat``, ``--json``), the change's shape in ``wait``'s done and in
``status``, and what a hostile change (odd file names, a symlink out, bytes that are not
UTF-8) can and cannot do to a terminal.

Every call is ``main(argv)`` in this process (``support.cli.InProcess``).
"""

from __future__ import annotations

import os
import re
from pathlib import Path

import pytest
from support import gitrepo
from support.cli import ok, refused, runner

# what a terminal would obey: C0 controls but newline, DEL, C1
UNSAFE = re.compile(r"[\x00-\x09\x0b-\x1f\x7f-\x9f]")


@pytest.fixture
def run(request, cli):
    return runner(request, cli)


def recruit(run, project: Path, name: str = "Ann", owns: str = "src") -> dict:
    r = ok(run("crew", name, "--task", "change src", "--owns", owns, "--no-launch", "--json"))
    return r


def where(run, name: str = "Ann") -> Path:
    """The crew's working tree, as ``diff --json`` names it."""
    return Path(ok(run("diff", name, "--json"))["worktree"])


def crew_env(r: dict) -> dict:
    return r["env"]


def test_diff_counts_uncommitted_untracked_deleted_and_marks_outside_owns(run, project):
    gitrepo.init(project, {"src/a.py": "a = 1\n", "src/gone.py": "x\n", "README.md": "r\n"})
    recruit(run, project)
    top = where(run)
    index = Path(gitrepo.git(top, "rev-parse", "--git-path", "index").strip())
    index = index if index.is_absolute() else top / index
    (top / "src/a.py").write_text("a = 2\nb = 3\n")  # modified: +2 -1
    (top / "src/new.py").write_text("n = 1\n")  # untracked: +1
    (top / "src/gone.py").unlink()  # deleted: -1
    (top / "README.md").write_text("r\nmore\n")  # outside --owns: +1
    os.symlink("/etc/passwd", top / "src/link")  # inside src/, leads out of it
    before = (index.read_bytes(), gitrepo.git(top, "status", "--porcelain", "-z"))

    shape = ok(run("diff", "Ann", "--json"))

    files = {f["path"]: f for f in shape["files"]}
    assert set(files) == {"src/a.py", "src/new.py", "src/gone.py", "README.md", "src/link"}
    assert (files["src/a.py"]["added"], files["src/a.py"]["removed"]) == (2, 1)
    assert files["src/new.py"]["status"] == "added"
    assert files["src/gone.py"]["status"] == "deleted"
    assert files["src/link"]["symlink"] is True
    assert sorted(shape["outside_grant"]) == ["README.md", "src/link"]
    assert "/etc/passwd" in files["src/link"]["why_outside"]
    assert shape["uncommitted_count"] == 5 and shape["files_changed"] == 5
    assert (shape["lines_added"], shape["lines_removed"]) == (2 + 1 + 1 + 1, 1 + 1)
    # the crew's own index and status are untouched by reading its change
    assert (index.read_bytes(), gitrepo.git(top, "status", "--porcelain", "-z")) == before

    stat = run("diff", "Ann", "--stat")
    assert stat.code == 0
    lines = stat.out.splitlines()
    assert "5 files, +5 -2" in lines[0] and "2 OUTSIDE --owns" in lines[0]
    assert any(line.startswith("!u A") and line.endswith("src/link") for line in lines)
    assert any(line.startswith(" u M") and line.endswith("src/a.py") for line in lines)

    body = run("diff", "Ann")
    assert body.code == 0
    assert "+b = 3" in body.out and "-a = 1" in body.out and "+n = 1" in body.out


def test_diff_escapes_hostile_names_and_bodies_for_the_terminal(run, project):
    gitrepo.init(project, {"src/a.py": "a\n"})
    recruit(run, project)
    top = where(run)
    names = ["src/new\nline.py", "src/\x1b[31mred", "src/\x1b]0;title\x07osc", "src/tab\there"]
    for name in names:
        (top / name).write_text("x\n")
    (top / "src/a.py").write_bytes(b"a\n\x1b[2J\x1b]52;c;cHduZWQ=\x07\xff\xfe not utf-8\r\n")

    shape = ok(run("diff", "Ann", "--json"))
    assert sorted(f["path"] for f in shape["files"]) == sorted(names + ["src/a.py"])
    # the one grant rule: a name with escape characters is never granted; newline and tab
    # are characters a grant can hold (as captain check judges them)
    assert sorted(shape["outside_grant"]) == sorted(names[1:3])

    for argv in (("diff", "Ann"), ("diff", "Ann", "--stat"), ("diff", "Ann", "--json")):
        result = run(*argv)
        assert result.code == 0
        assert not UNSAFE.search(result.out), (argv, UNSAFE.findall(result.out))
    stat = run("diff", "Ann", "--stat").out
    assert "src/new\\nline.py" in stat and "src/\\x1b[31mred" in stat
    body = run("diff", "Ann").out
    assert "\\x1b[2J" in body and "\\x1b]52;c;" in body and "\\udcff" in body


def test_done_in_wait_and_status_carry_the_change(run, project):
    gitrepo.init(project, {"src/a.py": "a\n"})
    r = recruit(run, project)
    top = where(run)
    (top / "src/a.py").write_text("a\nb\n")
    (top / "notes.txt").write_text("outside\n")
    env = crew_env(r)
    ok(run("inbox", "Ann", "--json", env=env))
    ok(run("done", "Ann", "--report", "changed a", "--json", env=env))

    done = ok(run("wait", "Ann", "--json", "--timeout", "5"))
    assert done["status"] == "done"
    change = done["change"]
    assert change["files_changed"] == 2 and change["lines_added"] == 2
    assert change["outside_grant"] == ["notes.txt"] and change["outside_grant_count"] == 1
    assert sorted(change["uncommitted"]) == ["notes.txt", "src/a.py"]
    human = run("wait", "Ann", "--timeout", "0", "--ack", done["delivery_id"])
    assert human.code == 0

    row = ok(run("status", "--json"))["crew"][0]
    assert row["change"]["files_changed"] == 2
    table = run("status").out
    assert "2f +2 -0 u2 !1 outside" in table


def test_a_project_that_is_not_a_repository_has_no_change(run, project):
    r = recruit(run, project)
    refused(run("diff", "Ann", "--json"), "no_change")
    env = crew_env(r)
    ok(run("inbox", "Ann", "--json", env=env))
    ok(run("done", "Ann", "--report", "done", "--json", env=env))
    done = ok(run("wait", "Ann", "--json", "--timeout", "5"))
    assert "change" not in done
    assert ok(run("status", "--json"))["crew"][0]["change"] is None
    refused(run("diff", "Nobody", "--json"), "unknown_crew")


def test_commits_on_the_crews_branch_count_and_a_rewritten_history_is_said(run, project):
    gitrepo.init(project, {"src/a.py": "a\n"})
    gitrepo.git(project, "commit", "-q", "--allow-empty", "-m", "second")
    recruit(run, project)
    top = where(run)
    assert top != project and ok(run("diff", "Ann", "--json"))["branch"].startswith("captain/")
    (top / "src/a.py").write_text("a\nb\n")
    gitrepo.commit(top, "the crew's commit")
    (top / "src/c.py").write_text("c\n")  # not committed

    shape = ok(run("diff", "Ann", "--json"))
    assert shape["commits"] == 1 and shape["history_rewritten"] is False
    assert shape["uncommitted"] == ["src/c.py"] and shape["files_changed"] == 2

    # the crew rewrites its branch under its base: the base is no longer an ancestor
    gitrepo.git(top, "reset", "-q", "--soft", "HEAD~2")
    gitrepo.commit(top, "squashed over the base")
    shape = ok(run("diff", "Ann", "--json"))
    assert shape["history_rewritten"] is True and shape["commits"] == 1
    assert "history was rewritten" in run("diff", "Ann", "--stat").out.splitlines()[0]
    assert {f["path"] for f in shape["files"]} == {"src/a.py", "src/c.py"}
    assert project.joinpath("src/a.py").read_text() == "a\n"  # the user's checkout untouched

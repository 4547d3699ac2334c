"""#25 point 4 through the real CLI: ``captain land`` (docs/landing.md) on crews recruited in
a git project, each in its own worktree, and a land SIGKILLed at each of its steps.

Real git on a repository the test makes, the home in tmp_path, calls through ``main(argv)``
in this process (``support.cli.InProcess``); the killed lands are real processes.
"""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
from pathlib import Path

import pytest
from support.cli import ok, refused, runner
from support.repos import clean, git, head, repository, worktrees

from captain_tui.repo import landing
from state.home import Home
from state.work import ledger
from state.work.crash import CRASH_ENV


@pytest.fixture
def repo(project: Path) -> Path:
    return repository(project, {"src/a.txt": "a\n", "docs/d.txt": "d\n", "top.txt": "t\n"})


@pytest.fixture
def run(request, cli):
    return runner(request, cli)


def hired(run, name: str, owns: str) -> dict:
    """A --no-launch crew owning ``owns``, in its own worktree; with its task read."""
    r = ok(
        run(
            "crew",
            name,
            "--task",
            "work",
            "--owns",
            owns,
            "--allow",
            "edit",
            "--no-launch",
            "--json",
        )
    )
    r["as_crew"] = {k: v for k, v in r["env"].items() if k != "CAPTAIN_HOME"}
    ok(run("inbox", name, "--json", env=r["as_crew"]))
    return r


def works(r: dict, files: dict[str, str], commit: bool = True) -> None:
    """The crew edits its worktree (and commits, as a crew would, unless told not to)."""
    tree = Path(r["workspace"]["worktree"])
    for path, text in files.items():
        (tree / path).parent.mkdir(parents=True, exist_ok=True)
        (tree / path).write_text(text)
    if commit:
        git("add", "-A", cwd=tree)
        git("commit", "-q", "-m", "work", cwd=tree)


def done(run, name: str, r: dict) -> None:
    ok(run("done", name, "--report", "did it", "--json", env=r["as_crew"]))


def land(run, name: str, r: dict, *extra: str):
    return run("land", name, "--assignment", r["assignment_id"], *extra, "--json")


def landing_of(run, r: dict) -> dict | None:
    return ok(run("work", "show", r["work_id"], "--json"))["item"]["landing"]


def test_two_crews_with_disjoint_paths_both_land(run, repo) -> None:
    ann, bob = hired(run, "Ann", "src"), hired(run, "Bob", "docs")
    works(ann, {"src/a.txt": "ann\n"}, commit=False)  # left uncommitted: land commits it
    works(bob, {"docs/d.txt": "bob\n"})
    done(run, "Ann", ann)
    refused(land(run, "Bob", bob), "not_done")  # not before the crew says done
    done(run, "Bob", bob)

    first = ok(land(run, "Ann", ann))
    second = ok(land(run, "Bob", bob))

    assert head(repo, "main") == second["commit"] and second["old_base"] == first["commit"]
    assert (repo / "src/a.txt").read_text() == "ann\n" and (repo / "docs/d.txt").read_text() == (
        "bob\n"
    )
    assert clean(repo) and first["checkout"] == os.path.realpath(repo)
    assert first["crew_commit"] and second["crew_commit"] is None
    shown = landing_of(run, ann)
    assert shown["commit"] == first["commit"] and shown["base_branch"] == "main"
    assert shown["crew_commit"] == first["crew_commit"]
    human = run("work", "show", ann["work_id"]).out
    assert f"landed on main at {first['commit']}" in human
    refused(land(run, "Ann", ann), "already_landed")
    # both landed: dismissal removes their worktrees and branches (nothing is lost)
    for name in ("Ann", "Bob"):
        assert ok(run("dismiss", name, "--json"))["worktree"]["action"] == "removed"
    assert worktrees(repo) == [os.path.realpath(repo)]


def test_two_crews_that_conflict_get_conflict_and_the_second_lands_after_a_fix(run, repo):
    ann, bob = hired(run, "Ann", "src"), hired(run, "Bob", "docs")
    works(ann, {"src/a.txt": "ann\n"})
    works(bob, {"src/a.txt": "bob\n", "docs/d.txt": "bob\n"})
    done(run, "Ann", ann)
    done(run, "Bob", bob)
    ok(land(run, "Ann", ann))
    before = head(repo, "main")
    allow = ("--allow-outside", "--reason", "bob fixes a typo in src/a.txt")
    for n in (ok(run("wait", "Bob", "--timeout", "0", "--json")),):
        ok(run("wait", "Bob", "--ack", n["delivery_id"], "--timeout", "0", "--json"))

    err = refused(land(run, "Bob", bob, *allow, "--tell"), "conflict")

    assert err["files"] == ["src/a.txt"] and "src/a.txt" in err["message"]
    assert head(repo, "main") == before and clean(repo)
    # told: Bob's assignment was done, so the files came as its next assignment, on the
    # same worktree and branch
    told = err["told"]
    assert told["kind"] == "assignment"
    status = ok(run("status", "--json"))
    row = next(r for r in status["crew"] if r["name"] == "Bob")
    assert row["assignment_id"] == told["assignment_id"] and status["landing"] == []
    box = ok(run("inbox", "Bob", "--json", env=bob["as_crew"]))
    assert "src/a.txt" in box["messages"][0]["text"]
    # the fix, in Bob's worktree: main merged in, the file resolved, committed; done
    tree = bob["workspace"]["worktree"]
    git("merge", "-q", "main", cwd=tree, check=False)
    Path(tree, "src/a.txt").write_text("ann and bob\n")
    git("commit", "-q", "-am", "resolved", cwd=tree)
    ok(
        run(
            "done",
            "Bob",
            "--report",
            "resolved",
            "--assignment",
            told["assignment_id"],
            "--json",
            env=bob["as_crew"],
        )
    )

    again = ok(run("land", "Bob", "--assignment", told["assignment_id"], *allow, "--json"))
    assert (repo / "src/a.txt").read_text() == "ann and bob\n" and clean(repo)
    assert again["outside_grant"] == ["src/a.txt"]


def test_a_change_outside_the_grant_is_refused_and_lands_with_allow_outside(run, repo):
    ann = hired(run, "Ann", "src")
    works(ann, {"src/a.txt": "ann\n", "top.txt": "ann was here\n"})
    done(run, "Ann", ann)

    err = refused(land(run, "Ann", ann), "outside_grant")
    assert err["paths"] == ["top.txt"] and "--allow-outside" in err["message"]
    refused(land(run, "Ann", ann, "--allow-outside"), "invalid_argument")  # needs a reason
    human = run("land", "Ann", "--assignment", ann["assignment_id"])
    assert human.code == 1 and "[outside_grant]" in human.err and "top.txt" in human.err
    assert (repo / "top.txt").read_text() == "t\n"

    landed = ok(land(run, "Ann", ann, "--allow-outside", "--reason", "agreed in review"))

    assert landed["outside_grant"] == ["top.txt"]
    assert (repo / "top.txt").read_text() == "ann was here\n"
    shown = landing_of(run, ann)
    assert shown["outside_grant"] == ["top.txt"] and shown["reason"] == "agreed in review"
    assert shown["operator"].startswith("captain")


def test_a_dirty_checkout_is_refused_and_the_queue_and_crew_rules_hold(run, repo, cli):
    ann = hired(run, "Ann", "src")
    works(ann, {"src/a.txt": "ann\n"})
    done(run, "Ann", ann)
    (repo / "top.txt").write_text("mine, not committed\n")

    err = refused(land(run, "Ann", ann), "dirty_checkout")

    assert err["paths"] == ["top.txt"] and (repo / "top.txt").read_text() == (
        "mine, not committed\n"
    )
    # a crew may not land, not even its own work
    refused(
        land(run, "Ann", ann)
        if False
        else run("land", "Ann", "--assignment", ann["assignment_id"], "--json", env=ann["as_crew"]),
        "crew_forbidden",
    )
    refused(run("land", "Ann", "--assignment", "asg_nope", "--json"), "stale_assignment")
    git("checkout", "-q", "top.txt", cwd=repo)
    # a killed land's queue entry is not shown; a live one is, in text and JSON
    queued = Home(cli.home).store.dir("landing", landing.repo_id(str(repo)), "queue")
    (queued / "lnd_x.json").write_text(
        json.dumps({"crew": "Zed", "pid": 2**22 + 7, "queued_at": "2030-01-01T00:00:00Z"})
    )
    assert ok(run("status", "--json"))["landing"] == []
    (queued / "lnd_y.json").write_text(
        json.dumps(
            {
                "crew": "Ann",
                "assignment_id": ann["assignment_id"],
                "base_branch": "main",
                "project": str(repo),
                "pid": os.getpid(),
                "state": "queued",
                "queued_at": "2030-01-01T00:00:00Z",
            }
        )
    )
    rows = ok(run("status", "--json"))["landing"]
    assert [(r["crew"], r["state"]) for r in rows] == [("Ann", "queued")]
    assert "LANDING" in run("status").out
    os.unlink(queued / "lnd_y.json")
    ok(land(run, "Ann", ann))
    assert list(queued.iterdir()) == []  # the dead one swept by the land


# -- SIGKILL at each step of land ------------------------------------------------------------

# every crash point of a land, in order (rebase mode with a test command reaches them all);
# the ledger's own two steps of the landed note are tests/state/test_ledger_crash.py's
STEPS = [
    "land:after-commit",
    "land:after-build",
    "land:after-tests",
    "land:after-journal",
    "land:after-base",
    "land:after-branch",
    "land:after-checkout",
    "land:after-ledger",
]


def test_the_crash_points_of_land_are_the_ones_listed_here() -> None:
    text = Path(landing.__file__).read_text()

    assert set(re.findall(r'crash_point\("([^"]+)"\)', text)) == set(STEPS)


def test_a_land_killed_at_each_step_leaves_things_consistent_and_reruns(run, repo, cli):
    (cli.home / "config.toml").parent.mkdir(parents=True, exist_ok=True)
    (cli.home / "config.toml").write_text('[review]\nland = "rebase"\ntest_command = "true"\n')
    crews = {}
    for i, step in enumerate(STEPS):
        name = f"c{i}"
        r = hired(run, name, f"part{i}")
        works(r, {f"part{i}/f.txt": f"{step}\n"}, commit=False)
        done(run, name, r)
        crews[step] = (name, r)
    home = Home(cli.home)
    for step, (name, r) in crews.items():
        before = head(repo, "main")
        proc = subprocess.run(
            [sys.executable, "-m", "captain_tui", "land", name, "--assignment", r["assignment_id"]],
            cwd=cli.cwd,
            env=cli.env({CRASH_ENV: step}),
            capture_output=True,
            text=True,
            timeout=60,
        )
        assert proc.returncode == -signal.SIGKILL, (step, proc.returncode, proc.stderr[-2000:])
        # killed: the base is where it was or where it was going, never between; git whole
        moved = head(repo, "main") != before
        assert moved == (STEPS.index(step) >= STEPS.index("land:after-base")), step
        git("fsck", "--no-progress", "--connectivity-only", cwd=repo)
        if moved:
            status = ok(run("status", "--json"))  # what was moving is shown
            assert [(q["crew"], q["state"]) for q in status["landing"]] == [
                (name, "interrupted")
            ], step

        again = ok(run("land", name, "--assignment", r["assignment_id"], "--json"))

        assert again["recovered"] == moved, step
        assert head(repo, "main") == again["commit"] and again["old_base"] == before, step
        assert (repo / f"part{STEPS.index(step)}/f.txt").read_text() == f"{step}\n", step
        assert clean(repo) and clean(r["workspace"]["worktree"]), step
        branch = r["workspace"]["branch"]
        git("merge-base", "--is-ancestor", branch, "main", cwd=repo)
        assert git("symbolic-ref", "HEAD", cwd=r["workspace"]["worktree"]) == (
            f"refs/heads/{branch}"
        )
        events = [e.type for e in ledger.events(home, r["work_id"])]
        assert events.count("landed") == 1, (step, events)
        item = ledger.get(home, r["work_id"])
        assert item.landing.commit == again["commit"] and item.landing.crew_commit, step
        assert not [w for w in worktrees(repo) if "landing" in w], step
        assert ok(run("status", "--json"))["landing"] == [], step
        refused(run("land", name, "--assignment", r["assignment_id"], "--json"), "already_landed")
    # one line of history per crew, nothing lost, nothing twice
    log = git("log", "--format=%s", "main", cwd=repo).splitlines()
    assert sorted(s for s in log if "uncommitted work" in s) == sorted(
        f"{n}: uncommitted work of {r['assignment_id']}" for n, r in crews.values()
    )

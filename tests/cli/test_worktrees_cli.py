"""#25 points 1 and 5 through the real CLI: a worktree per crew in a git project, and cleanup
that never loses work (docs/worktrees.md).

Real git on repositories each test makes in its tmp_path, the home in tmp_path (worktrees
under ``<home>/worktrees``), calls through ``main(argv)`` in this process
(``support.cli.InProcess``), a real tmux crew on the run's private server for the pane's
working directory, and real processes SIGKILLed at each step of recruit and dismiss.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from support.cli import ok, refused, runner
from support.tmux import needs_tmux, poll

from captain_tui.repo import git as gitcli
from captain_tui.repo import worktree
from state.errors import CaptainError
from state.home import Home
from state.inputs import NAME_RE
from state.work.crash import CRASH_ENV

ID = ["-c", "user.name=Test", "-c", "user.email=test@example.com"]


def git(cwd, *args: str) -> str:
    return subprocess.run(
        ["git", *ID, *args], cwd=cwd, check=True, capture_output=True, text=True
    ).stdout


@pytest.fixture
def repo(project: Path) -> Path:
    """The ``project`` fixture as a git repository on ``main`` with one commit."""
    git(project, "init", "-q", "-b", "main")
    (project / "src" / "a.txt").write_text("a\n")
    (project / "README").write_text("readme\n")
    git(project, "add", "-A")
    git(project, "commit", "-q", "-m", "first")
    return project


@pytest.fixture
def run(request, cli):
    return runner(request, cli)


def recruit(run, name: str = "Ann", *extra: str) -> dict:
    """A --no-launch crew; Ann owns src, anyone else the folder of its own name."""
    return ok(
        run(
            "crew",
            name,
            "--task",
            "work",
            "--owns",
            "src" if name == "Ann" else name.lower(),
            "--allow",
            "edit",
            "--no-launch",
            *extra,
            "--json",
        )
    )


def as_crew(r: dict) -> dict[str, str]:
    return {k: v for k, v in r["env"].items() if k != "CAPTAIN_HOME"}


def worktrees(repo: Path) -> dict[str, str | None]:
    return worktree.registered_worktrees(str(repo))


def branches(repo: Path) -> set[str]:
    out = git(repo, "for-each-ref", "--format=%(refname:short)", "refs/heads/")
    return set(out.split())


def commit_in(path: str, name: str, text: str = "x\n") -> str:
    Path(path, name).parent.mkdir(parents=True, exist_ok=True)
    Path(path, name).write_text(text)
    git(path, "add", "-A")
    git(path, "commit", "-q", "-m", f"add {name}")
    return git(path, "rev-parse", "HEAD").strip()


def snapshot(cli, key: str) -> dict:
    return json.loads((cli.home / "crew" / key / "state.json").read_text())


def events(home: Path, key: str) -> list[dict]:
    folder = home / "crew" / key / "events"
    return [json.loads(p.read_text()) for p in sorted(folder.glob("*.json"))]


# -- point 1: the worktree -------------------------------------------------------------------


def test_a_crew_in_a_git_project_gets_its_own_worktree_on_its_own_branch_from_the_base(
    run, repo, cli
):
    head = git(repo, "rev-parse", "HEAD").strip()
    r = recruit(run)
    space = r["workspace"]
    assert space["project"] == os.path.realpath(repo)
    assert space["base_branch"] == "main" and space["base_commit"] == head
    assert space["branch"] == f"captain/ann-{r['assignment_id'][-8:].lower()}"
    # under the home, never inside the user's checkout
    assert Path(space["worktree"]).is_relative_to(os.path.realpath(cli.home / "worktrees"))
    assert not Path(space["worktree"]).is_relative_to(os.path.realpath(repo))
    assert r["cwd"] == space["worktree"]
    assert worktrees(repo)[space["worktree"]] == space["branch"]
    assert git(space["worktree"], "rev-parse", "HEAD").strip() == head
    assert (Path(space["worktree"]) / "src" / "a.txt").read_text() == "a\n"
    # the recorded base commit is the work item's target revision
    item = ok(run("work", "show", r["work_id"], "--json"))["item"]
    assert item["target_revision"] == head
    # the user's checkout is untouched: still on main, nothing new in it
    assert git(repo, "status", "--porcelain") == ""
    assert git(repo, "symbolic-ref", "--short", "HEAD").strip() == "main"
    # a recruit from a folder of the project starts in the same folder of its worktree
    sub = ok(
        run(
            "crew",
            "Bob",
            "--task",
            "t",
            "--cwd",
            str(repo / "src"),
            "--no-launch",
            "--json",
        )
    )
    assert sub["cwd"] == os.path.join(sub["workspace"]["worktree"], "src")


def test_no_worktree_the_config_and_a_plain_folder_share_the_checkout_as_before(
    run, repo, cli, tmp_path
):
    shared = recruit(run, "Ann", "--no-worktree")
    assert shared["workspace"] is None and shared["cwd"] == os.path.realpath(repo)
    item = ok(run("work", "show", shared["work_id"], "--json"))["item"]
    assert item["target_revision"] is None
    (cli.home / "config.toml").write_text("[worktree]\nenabled = false\n")
    assert recruit(run, "Bob")["workspace"] is None
    assert set(worktrees(repo)) == {os.path.realpath(repo)}
    # [worktree] root: where they live, checked like every setting
    elsewhere = tmp_path / "trees"
    (cli.home / "config.toml").write_text(f'[worktree]\nroot = "{elsewhere}"\n')
    assert Path(recruit(run, "Cid")["workspace"]["worktree"]).is_relative_to(elsewhere)
    (cli.home / "config.toml").write_text('[worktree]\nroot = "trees"\n')
    err = refused(run("crew", "Dee", "--task", "t", "--no-launch", "--json"), "invalid_config")
    assert "[worktree] root" in err["message"]
    (cli.home / "config.toml").write_text(f'[worktree]\nroot = "{repo}/.trees"\n')
    err = refused(run("crew", "Dee", "--task", "t", "--no-launch", "--json"), "invalid_config")
    assert "inside the project" in err["message"]
    assert not (repo / ".trees").exists()
    # a folder that is no git repository: as today
    (cli.home / "config.toml").write_text("")
    plain = tmp_path / "plain"
    plain.mkdir()
    r = ok(run("crew", "Eve", "--task", "t", "--cwd", str(plain), "--no-launch", "--json"))
    assert r["workspace"] is None and r["cwd"] == str(plain)


def test_a_detached_head_or_a_project_without_commits_is_refused_and_nothing_is_written(
    run, repo, cli, tmp_path
):
    git(repo, "checkout", "-q", "--detach")
    err = refused(run("crew", "Ann", "--task", "t", "--no-launch", "--json"), "detached_head")
    assert "--no-worktree" in err["message"]
    assert refused(run("wait", "Ann", "--timeout", "0", "--json"), "unknown_crew")
    assert set(worktrees(repo)) == {os.path.realpath(repo)} and branches(repo) == {"main"}
    git(repo, "checkout", "-q", "main")
    assert recruit(run)["workspace"]["base_branch"] == "main"
    empty = tmp_path / "empty"
    empty.mkdir()
    git(empty, "init", "-q", "-b", "main")
    err = refused(
        run("crew", "Bob", "--task", "t", "--cwd", str(empty), "--no-launch", "--json"),
        "git_failed",
    )
    assert "no commit yet" in err["message"]


def test_an_existing_branch_or_folder_of_that_name_is_refused_never_taken_over(repo, tmp_path):
    home = Home(tmp_path / "home")
    space = worktree.plan(home, str(repo), "ann", "asg_01TESTTESTTESTTESTTESTTEST")
    git(repo, "branch", space.branch)
    with pytest.raises(CaptainError) as caught:
        worktree.make(space)
    assert caught.value.code == "branch_exists"
    git(repo, "branch", "-D", space.branch)
    Path(space.worktree).mkdir(parents=True)
    (Path(space.worktree) / "mine.txt").write_text("a person's file\n")
    with pytest.raises(CaptainError) as caught:
        worktree.make(space)
    assert caught.value.code == "worktree_exists"
    assert (Path(space.worktree) / "mine.txt").read_text() == "a person's file\n"
    assert branches(repo) == {"main"} and set(worktrees(repo)) == {os.path.realpath(repo)}


def test_a_recruit_that_fails_after_making_the_worktree_takes_it_back(run, repo, tmp_path):
    # the window cannot open (its tmux socket's folder does not exist): recruit fails after
    # the worktree was made, and takes back the worktree and the branch with the rest
    bad = tmp_path / "no-such-dir" / "sock"
    err = refused(
        run("crew", "Ann", "--task", "t", "--socket", str(bad), "--json"), "tmux_unavailable"
    )
    assert err["message"]
    assert set(worktrees(repo)) == {os.path.realpath(repo)} and branches(repo) == {"main"}
    r = recruit(run)  # and the name is free: the next recruit has its worktree
    assert set(worktrees(repo)) == {os.path.realpath(repo), r["workspace"]["worktree"]}


def test_grants_are_the_projects_judged_in_the_crews_worktree(run, repo, cli, tmp_path):
    r = recruit(run)
    tree = r["workspace"]["worktree"]
    crew = as_crew(r)

    def check(path: str):
        return run("check", "Ann", "edit", path, "--json", env=crew)

    assert ok(check("src/a.txt"))["allowed"]
    assert ok(check(f"{tree}/src/new.txt"))["allowed"]
    # the user's own checkout is not the crew's to edit, nor is the rest of its worktree
    assert (
        "outside the paths Ann owns"
        in refused(check(f"{repo}/src/a.txt"), "grant_denied")["message"]
    )
    refused(check(f"{tree}/README"), "grant_denied")
    # a symlink in the worktree that leads out of it is judged where it leads
    os.symlink(repo / "src" / "a.txt", Path(tree, "src", "link.txt"))
    assert "leads to" in refused(check("src/link.txt"), "grant_denied")["message"]


def test_the_homes_sweep_never_walks_into_a_crews_worktree(run, repo, cli):
    space = recruit(run)["workspace"]
    mine = Path(space["worktree"], "src", ".tmp-the-crews-own")  # a name the store uses
    mine.write_text("the crew's file\n")
    old = os.stat(mine).st_mtime - 3600
    os.utime(mine, (old, old))
    debris = cli.home / "mail" / "ann" / ".tmp-killed-writer"
    debris.write_text("")
    os.utime(debris, (old, old))
    run("wait", "Ann", "--timeout", "0.1", "--json")  # a waiter sweeps the home first
    assert not debris.exists()  # the home's own debris went
    assert mine.read_text() == "the crew's file\n"


def test_assign_handoff_continues_in_the_same_worktree(run, repo, cli):
    r = recruit(run)
    space = r["workspace"]
    ok(run("inbox", "Ann", "--json", env=as_crew(r)))
    ok(run("done", "Ann", "--report", "first part", "--json", env=as_crew(r)))
    waited = ok(run("wait", "Ann", "--timeout", "5", "--json"))
    ok(run("wait", "Ann", "--ack", waited["delivery_id"], "--json", "--timeout", "0"))
    nxt = ok(
        run("assign", "Ann", "--task", "second part", "--handoff", r["assignment_id"], "--json")
    )
    snap = snapshot(cli, "ann")
    assert snap["assignment"]["assignment_id"] == nxt["assignment_id"]
    assert snap["workspace"] == space
    item = ok(run("work", "show", nxt["assignment_id"].replace("asg_", "wrk_"), "--json"))["item"]
    assert item["target_revision"] == space["base_commit"]
    assert set(worktrees(repo)) == {os.path.realpath(repo), space["worktree"]}


def test_a_handoff_recruit_carries_on_in_the_worktree_its_dismissal_kept(run, repo, cli):
    first = recruit(run)
    ok(run("inbox", "Ann", "--json", env=as_crew(first)))  # read: nothing bounces
    space = first["workspace"]
    tip = commit_in(space["worktree"], "src/b.txt")
    assert ok(run("dismiss", "Ann", "--json"))["worktree"]["action"] == "kept"
    again = recruit(run, "Ann", "--handoff", first["assignment_id"])
    assert again["workspace"] == space and again["cwd"] == space["worktree"]
    assert git(space["worktree"], "rev-parse", "HEAD").strip() == tip  # its work is there
    item = ok(run("work", "show", again["work_id"], "--json"))["item"]
    assert item["target_revision"] == space["base_commit"]
    # dismissed with nothing new, it is still kept: the commit has not landed
    ok(run("inbox", "Ann", "--json", env=as_crew(again)))
    assert ok(run("dismiss", "Ann", "--json"))["worktree"]["action"] == "kept"
    # once the worktree is gone, a handoff gets a new one
    ok(run("dismiss", "Ann", "--discard", "--json"))
    third = recruit(run, "Ann", "--handoff", again["assignment_id"])
    assert third["workspace"]["worktree"] != space["worktree"]
    assert set(worktrees(repo)) == {os.path.realpath(repo), third["workspace"]["worktree"]}


@needs_tmux
def test_a_launched_crews_pane_and_hooks_start_in_its_worktree(run, repo, cli):
    r = ok(run("crew", "Ann", "--task", "t", "--owns", "src", "--allow", "edit", "--json"))
    tree, pane = r["workspace"]["worktree"], r["pane"]

    def where() -> str | None:
        out = subprocess.run(
            [
                "tmux",
                "-S",
                pane["socket"],
                "display-message",
                "-p",
                "-t",
                pane["pane_id"],
                "#{pane_current_path}",
            ],
            capture_output=True,
            text=True,
        )
        return out.stdout.strip() or None

    assert poll(where, timeout=10, what="the pane's working directory") == tree
    # what the crew runs there, as the crew: its own check, judged in its worktree
    subprocess.run(
        [
            "tmux",
            "-S",
            pane["socket"],
            "send-keys",
            "-t",
            pane["pane_id"],
            "-l",
            f"{sys.executable} -m captain_tui check Ann edit src/a.txt > {tree}/checked 2>&1\n",
        ],
        check=True,
    )
    said = poll(
        lambda: Path(tree, "checked").exists() and Path(tree, "checked").read_text(),
        timeout=20,
        what="the crew's check",
    )
    assert said.startswith("granted"), said
    ok(run("dismiss", "Ann", "--json"))


# -- point 5: cleanup that never loses work ------------------------------------------------------


def test_dismissal_removes_an_empty_or_landed_worktree_and_keeps_one_with_work(run, repo, cli):
    empty = recruit(run, "Ann")["workspace"]
    landed = recruit(run, "Bob")["workspace"]
    committed = recruit(run, "Cid")["workspace"]
    dirty = recruit(run, "Dee")["workspace"]
    picked = recruit(run, "Eve")["workspace"]
    commit_in(landed["worktree"], "lib/b.txt")
    git(repo, "merge", "-q", "--ff-only", landed["branch"])  # it landed on main
    git(repo, "cherry-pick", commit_in(picked["worktree"], "eve/e.txt"))  # landed as a copy
    tip = commit_in(committed["worktree"], "doc/c.txt")
    Path(dirty["worktree"], "etc").mkdir()
    Path(dirty["worktree"], "etc", "new\nname\x1b[31m.txt").write_text("not committed\n")

    d = ok(run("dismiss", "Ann", "--json"))["worktree"]
    assert d["action"] == "removed" and "nothing new since main" in d["reason"]
    d = ok(run("dismiss", "Bob", "--json"))["worktree"]
    assert d["action"] == "removed" and "landed on main" in d["reason"]
    d = ok(run("dismiss", "Eve", "--json"))["worktree"]
    assert d["action"] == "removed" and "landed on main" in d["reason"]
    d = ok(run("dismiss", "Cid", "--json"))["worktree"]
    assert (d["action"], d["commits"], d["uncommitted"], d["tip"]) == ("kept", 1, 0, tip)
    assert "captain dismiss Cid --discard" in d["reason"]
    d = ok(run("dismiss", "Dee", "--json"))["worktree"]
    assert (d["action"], d["commits"], d["uncommitted"]) == ("kept", 0, 1)
    human = run("dismiss", "Dee").err  # dismissed: said with what to do, on one line
    assert "--discard" in human and "\x1b" not in human

    for gone in (empty, landed, picked):
        assert not os.path.exists(gone["worktree"]) and gone["branch"] not in branches(repo)
    for kept in (committed, dirty):
        assert os.path.isdir(kept["worktree"]) and kept["branch"] in branches(repo)
    assert Path(dirty["worktree"], "etc", "new\nname\x1b[31m.txt").exists()
    assert set(worktrees(repo)) == {
        os.path.realpath(repo),
        committed["worktree"],
        dirty["worktree"],
    }
    # the human line says it too
    assert events(cli.home, "cid")[-1]["worktree"] == "kept"


def test_discard_removes_work_and_is_recorded_at_dismissal_or_after(run, repo, cli):
    a = recruit(run, "Ann")["workspace"]
    b = recruit(run, "Bob")["workspace"]
    tip_a = commit_in(a["worktree"], "src/a2.txt")
    tip_b = commit_in(b["worktree"], "lib/b.txt")
    d = ok(run("dismiss", "Ann", "--discard", "--json"))["worktree"]
    assert (d["action"], d["commits"], d["tip"]) == ("discarded", 1, tip_a)
    last = events(cli.home, "ann")[-1]
    assert (last["type"], last["worktree"], last["worktree_tip"]) == (
        "dismissed",
        "discarded",
        tip_a,
    )
    assert not os.path.exists(a["worktree"]) and a["branch"] not in branches(repo)
    # a symlink in the worktree that leads out of it: discarding removes the link, never
    # what it leads to
    outside = cli.home.parent / "outside"
    outside.mkdir()
    (outside / "keep.txt").write_text("not the crew's\n")
    os.symlink(outside, Path(b["worktree"], "lib", "out"))
    # kept at dismissal, discarded later: its own event, the tip recorded
    assert ok(run("dismiss", "Bob", "--json"))["worktree"]["action"] == "kept"
    later = run("dismiss", "Bob", "--discard")
    assert later.code == 0 and "Finished dismissing Bob" in later.out and "discarded" in later.out
    last = events(cli.home, "bob")[-1]
    assert (last["type"], last["tip"]) == ("worktree_discarded", tip_b)
    assert not os.path.exists(b["worktree"]) and b["branch"] not in branches(repo)
    assert (outside / "keep.txt").read_text() == "not the crew's\n"
    assert refused(run("dismiss", "Bob", "--discard", "--json"), "crew_dismissed")
    assert set(worktrees(repo)) == {os.path.realpath(repo)} and branches(repo) == {"main"}


@pytest.mark.parametrize("how", ["deleted by hand", "deleted and pruned"])
def test_a_worktree_deleted_by_hand_is_handled(run, repo, cli, how):
    a = recruit(run, "Ann")["workspace"]
    b = recruit(run, "Bob")["workspace"]
    tip = commit_in(b["worktree"], "lib/b.txt")
    for space in (a, b):
        subprocess.run(["rm", "-rf", space["worktree"]], check=True)
    if how == "deleted and pruned":
        git(repo, "worktree", "prune")
    d = ok(run("dismiss", "Ann", "--json"))["worktree"]
    assert d["action"] == "removed" and "already gone" in d["reason"]
    d = ok(run("dismiss", "Bob", "--json"))["worktree"]
    assert (d["action"], d["commits"], d["tip"]) == ("kept", 1, tip)  # its commit lives on
    assert branches(repo) == {"main", b["branch"]}
    assert set(worktrees(repo)) == {os.path.realpath(repo)}  # the registrations pruned
    ok(run("dismiss", "Bob", "--discard", "--json"))
    assert branches(repo) == {"main"}


def test_a_broken_repository_never_stops_a_dismissal_and_nothing_is_touched(run, repo, cli):
    space = recruit(run)["workspace"]
    os.rename(repo / ".git", repo / ".git-away")  # git cannot find the repository now
    d = ok(run("dismiss", "Ann", "--json"))
    assert d["worktree"]["action"] == "kept" and "left as they are" in d["worktree"]["reason"]
    assert snapshot(cli, "ann")["dismissed_at"] is not None
    os.rename(repo / ".git-away", repo / ".git")
    assert os.path.isdir(space["worktree"]) and space["branch"] in branches(repo)
    assert "--discard" in refused(run("dismiss", "Ann", "--json"), "crew_dismissed")["message"]
    assert ok(run("dismiss", "Ann", "--discard", "--json"))["worktree"]["action"] == "discarded"
    assert set(worktrees(repo)) == {os.path.realpath(repo)} and branches(repo) == {"main"}


def test_a_crew_that_rewrites_its_branch_history_is_judged_by_what_the_branch_holds(run, repo, cli):
    a = recruit(run, "Ann")["workspace"]
    b = recruit(run, "Bob")["workspace"]
    # Ann commits, lands, then rewrites her branch to a commit that never landed
    commit_in(a["worktree"], "src/one.txt")
    git(repo, "merge", "-q", "--ff-only", a["branch"])
    Path(a["worktree"], "src", "one.txt").write_text("rewritten\n")
    git(a["worktree"], "commit", "-q", "-a", "--amend", "-m", "rewritten")
    # Bob commits, then resets his branch to before the base: nothing of his is left
    commit_in(b["worktree"], "lib/two.txt")
    git(b["worktree"], "reset", "-q", "--hard", b["base_commit"])
    d = ok(run("dismiss", "Ann", "--json"))["worktree"]
    assert (d["action"], d["commits"]) == ("kept", 1)
    d = ok(run("dismiss", "Bob", "--json"))["worktree"]
    assert d["action"] == "removed"


def test_a_recruit_sweeps_only_the_orphans_with_nothing_on_them(run, repo, cli):
    # two worktrees of crew Ann no record names (recruits killed before their record):
    # one clean, one where something was committed since
    home = Home(cli.home)
    clean = worktree.plan(home, str(repo), "ann", "asg_01TESTTESTTESTTESTTESTCLEAN")
    worked = worktree.plan(home, str(repo), "ann", "asg_01TESTTESTTESTTESTTESTWORKD")
    worktree.make(clean)
    worktree.make(worked)
    commit_in(worked.worktree, "src/w.txt")
    other = worktree.plan(home, str(repo), "ann-b", "asg_01TESTTESTTESTTESTTESTOTHER")
    worktree.make(other)  # another crew's (ann-b): never Ann's to sweep
    space = recruit(run)["workspace"]
    assert set(worktrees(repo)) == {
        os.path.realpath(repo),
        worked.worktree,
        other.worktree,
        space["worktree"],
    }
    assert clean.branch not in branches(repo) and worked.branch in branches(repo)


@settings(
    max_examples=20,
    derandomize=True,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture],
)
@given(name=st.from_regex(NAME_RE, fullmatch=True))
def test_every_crew_name_makes_a_valid_branch_and_a_plain_folder_name(name, tmp_path):
    from state.inputs import crew_key

    key = crew_key(name)
    branch = worktree.branch_name(key, "asg_01M8SCHZ4HBEA8ZQ0J40E1DRM4")
    checked = gitcli.run(["check-ref-format", "--branch", branch], cwd=str(tmp_path))
    assert checked.text.strip() == branch
    folder = f"{key}-{worktree.short_id('asg_01M8SCHZ4HBEA8ZQ0J40E1DRM4')}"
    assert "/" not in folder and not folder.startswith((".", "-"))


# -- SIGKILL at each step --------------------------------------------------------------------------

RECRUIT_STEPS = ["recruit:after-worktree", "recruit:after-crew"]
DISMISS_STEPS = [
    "dismiss:after-work",
    "dismiss:after-crew",
    "dismiss:before-worktree",
    "worktree:before-branch",
]


def killed(cli, step: str, *args: str) -> None:
    """Run ``captain ARGS`` as a real process that SIGKILLs itself at ``step``."""
    proc = subprocess.run(
        [sys.executable, "-m", "captain_tui", *args],
        cwd=cli.cwd,
        env=cli.env({CRASH_ENV: step}),
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert proc.returncode == -signal.SIGKILL, (step, proc.returncode, proc.stderr[-2000:])


def consistent(repo: Path) -> None:
    """Every worktree git lists exists and is on a branch that exists; the objects are whole."""
    listed = worktrees(repo)
    assert all(os.path.isdir(p) for p in listed), listed
    assert set(listed.values()) <= branches(repo), listed
    git(repo, "fsck", "--no-progress", "--connectivity-only")


@pytest.mark.parametrize("step", RECRUIT_STEPS)
def test_a_recruit_killed_at_each_step_leaves_a_consistent_repository_and_reruns(
    run, repo, cli, step
):
    killed(cli, step, "crew", "Ann", "--task", "t", "--no-launch")
    consistent(repo)
    if step == "recruit:after-crew":  # recorded: the next writer settles it forward
        assert refused(run("crew", "Ann", "--task", "t", "--no-launch", "--json"), "crew_exists")
        space = snapshot(cli, "ann")["workspace"]
    else:  # never recorded: the name is free, and the orphan is swept by the next recruit
        space = recruit(run)["workspace"]
    assert set(worktrees(repo)) == {os.path.realpath(repo), space["worktree"]}
    assert {b for b in branches(repo) if b.startswith("captain/")} == {space["branch"]}
    ok(run("dismiss", "Ann", "--json"))
    assert set(worktrees(repo)) == {os.path.realpath(repo)} and branches(repo) == {"main"}


@pytest.mark.parametrize(
    "step, discard",
    # each step once, each of the two ways a worktree goes twice
    [(step, i % 2 == 1) for i, step in enumerate(DISMISS_STEPS)],
)
def test_a_dismissal_killed_at_each_step_is_finished_by_running_it_again(
    run, repo, cli, step, discard
):
    space = recruit(run)["workspace"]
    commit_in(space["worktree"], "src/b.txt")
    if not discard:
        git(repo, "merge", "-q", "--ff-only", space["branch"])
    flags = ["--discard"] if discard else []
    killed(cli, step, "dismiss", "Ann", *flags)
    consistent(repo)
    again = ok(run("dismiss", "Ann", *flags, "--json"))
    assert again["worktree"]["action"] == ("discarded" if discard else "removed")
    consistent(repo)
    assert set(worktrees(repo)) == {os.path.realpath(repo)} and branches(repo) == {"main"}
    assert not os.path.exists(space["worktree"])
    kinds = [e["type"] for e in events(cli.home, "ann")]
    assert kinds.count("dismissed") == 1, kinds


def test_every_crash_point_captain_tui_has_is_killed_here():
    """A new step in recruit's or dismiss's git part gets its SIGKILL test here (the ledger's
    and the crew log's own points are tests/state/test_ledger_crash.py's, land's are
    tests/cli/test_land_cli.py's)."""
    import re

    from cli.test_land_cli import STEPS as LAND_STEPS

    root = Path(__file__).resolve().parents[2] / "captain_tui"
    found = set()
    for path in root.rglob("*.py"):
        found |= set(re.findall(r"crash_point\(\"([^\"]+)\"\)", path.read_text()))
    assert found and found <= set(RECRUIT_STEPS) | set(DISMISS_STEPS) | set(LAND_STEPS), found


def test_a_ten_thousand_file_change_is_counted_kept_and_discarded_whole(run, repo, cli):
    space = recruit(run)["workspace"]
    folder = Path(space["worktree"], "src", "many")
    folder.mkdir()
    for i in range(10_000):
        (folder / f"f{i:05d}.txt").write_bytes(b"x")
    d = ok(run("dismiss", "Ann", "--json"))["worktree"]
    assert (d["action"], d["uncommitted"]) == ("kept", 10_000)
    assert "10000 uncommitted files" in d["reason"]
    d = ok(run("dismiss", "Ann", "--discard", "--json"))["worktree"]
    assert (d["action"], d["uncommitted"]) == ("discarded", 10_000)
    assert not os.path.exists(space["worktree"]) and branches(repo) == {"main"}

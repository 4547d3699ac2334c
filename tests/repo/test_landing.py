"""``captain_tui.repo.landing`` on real repositories: a crew's branch in its own worktree
landed onto ``main`` by the real ``git``, the refusals that leave the base where it was, the
queue, and the user's checkout. The work item is a real ledger item (files backend).

The CLI's side (crews recruited with worktrees, ``captain land``) and the SIGKILL at each
step are in tests/cli/test_land_cli.py.
"""

from __future__ import annotations

import json
import os
import threading
import time
from dataclasses import replace
from pathlib import Path
from types import SimpleNamespace

import pytest
from support.crew import refused
from support.repos import clean, git, head, repository, worktrees

from captain_tui.repo import landing
from state.crew import guards
from state.home import Home
from state.records import Workspace
from state.work import ledger


class Scene:
    def __init__(self, tmp_path: Path) -> None:
        self.root = tmp_path
        self.project = repository(
            tmp_path / "project", {"a/one.txt": "a\n", "b/two.txt": "b\n", "top.txt": "t\n"}
        )
        self.base = head(self.project)
        self.home = Home(tmp_path / "home")

    def crew(
        self,
        name: str,
        files: dict[str, str],
        owns: tuple[str, ...] = ("a",),
        commit: bool = False,
        **kw,
    ) -> landing.Request:
        """A crew's worktree on its own branch from the base, with ``files`` written
        (committed with ``commit``), and its done assignment's work item."""
        tree = self.root / "worktrees" / name
        branch = f"captain/{name}"
        git("worktree", "add", "-q", "-b", branch, str(tree), self.base, cwd=self.project)
        for path, text in files.items():
            (tree / path).parent.mkdir(parents=True, exist_ok=True)
            (tree / path).write_text(text)
        if commit:
            git("add", "-A", cwd=tree)
            git("commit", "-q", "-m", f"{name}'s work", cwd=tree)
        item = ledger.accept(self.home, source="assignment", input={"t": name}, requester="t")
        ledger.claim(self.home, item.work_id, holder="crew")
        ledger.report(self.home, item.work_id, 1, "succeeded", actor="crew")
        space = Workspace(
            project=str(self.project),
            worktree=str(tree),
            branch=branch,
            base_branch="main",
            base_commit=self.base,
        )
        grant = SimpleNamespace(  # what the grant's rule reads of a crew's record
            name=name,
            workspace=space,
            assignment=SimpleNamespace(
                project_dir=str(self.project), owns=[str(self.project / o) for o in owns]
            ),
        )
        return landing.Request(
            project=str(self.project),
            worktree=str(tree),
            branch=branch,
            base_branch="main",
            base_commit=self.base,
            outside=lambda paths: guards.outside_grant(grant, str(tree), paths),
            crew=name,
            assignment_id=f"asg_{name}",
            work_id=item.work_id,
            **kw,
        )


@pytest.fixture
def scene(tmp_path: Path) -> Scene:
    return Scene(tmp_path)


def untouched(scene: Scene, before: str) -> None:
    """What every refusal leaves: the base where it was, the user's checkout clean, no
    landing worktree, no journal."""
    assert head(scene.project, "main") == before
    assert clean(scene.project)
    assert [w for w in worktrees(scene.project) if "landing" in w] == []
    assert not list((scene.home.root / "landing").glob("*/journal.json"))


# merge here; rebase is what tests/cli/test_land_cli.py's killed lands use, step by step
@pytest.mark.parametrize("mode", ["merge"])
def test_two_crews_with_disjoint_paths_both_land(scene: Scene, mode: str) -> None:
    alpha = scene.crew("alpha", {"a/one.txt": "alpha\n"}, mode=mode)
    beta = scene.crew("beta", {"b/two.txt": "beta\n"}, owns=("b",), mode=mode, commit=True)

    first = landing.land(scene.home, alpha)
    second = landing.land(scene.home, beta)

    assert head(scene.project, "main") == second.commit and first.commit != second.commit
    # the user's checkout has main checked out: brought forward, clean, both changes in it
    assert second.checkout == str(scene.project) and second.checkout_problem is None
    assert clean(scene.project)
    assert (scene.project / "a/one.txt").read_text() == "alpha\n"
    assert (scene.project / "b/two.txt").read_text() == "beta\n"
    # alpha left its file uncommitted: land committed it on its branch, recorded
    assert first.crew_commit is not None and second.crew_commit is None
    assert git("log", "-1", "--format=%s", first.crew_commit, cwd=scene.project) == (
        "alpha: uncommitted work of asg_alpha"
    )
    for req in (alpha, beta):  # every branch is inside the base now; its worktree clean
        git("merge-base", "--is-ancestor", req.branch, "main", cwd=scene.project)
        assert clean(req.worktree)
    item = ledger.get(scene.home, alpha.work_id)
    assert item.state == "succeeded"
    assert item.landing.commit == first.commit and item.landing.base_branch == "main"
    assert item.landing.crew_commit == first.crew_commit
    assert [e.type for e in ledger.events(scene.home, alpha.work_id)][-1] == "landed"
    if mode == "rebase":  # a straight line: no merge commit
        assert git("rev-list", "--merges", "--count", "main", cwd=scene.project) == "0"


def test_a_conflict_is_refused_with_its_files_and_lands_after_a_fix(scene: Scene) -> None:
    alpha = scene.crew("alpha", {"a/one.txt": "alpha\n"}, commit=True)
    beta = scene.crew("beta", {"a/one.txt": "beta\n"}, commit=True)
    landing.land(scene.home, alpha)
    before = head(scene.project, "main")
    beta_tip = head(scene.project, beta.branch)

    err = refused("conflict", landing.land, scene.home, beta)

    assert err.extra["files"] == ["a/one.txt"] and "a/one.txt" in err.message
    untouched(scene, before)
    assert head(scene.project, beta.branch) == beta_tip and clean(beta.worktree)
    assert ledger.get(scene.home, beta.work_id).landing is None
    # the fix, as the crew would make it in its worktree: main merged in, the file resolved
    git("merge", "-q", "main", cwd=beta.worktree, check=False)
    (Path(beta.worktree) / "a/one.txt").write_text("alpha and beta\n")
    git("commit", "-q", "-am", "resolved", cwd=beta.worktree)

    done = landing.land(scene.home, beta)

    assert (scene.project / "a/one.txt").read_text() == "alpha and beta\n"
    assert ledger.get(scene.home, beta.work_id).landing.commit == done.commit


def test_a_change_outside_the_grant_is_refused_and_lands_when_allowed(scene: Scene) -> None:
    req = scene.crew("alpha", {"a/one.txt": "mine\n", "top.txt": "not mine\n"}, commit=True)
    before = head(scene.project, "main")

    err = refused("outside_grant", landing.land, scene.home, req)

    assert err.extra["paths"] == ["top.txt"] and "top.txt" in err.message
    untouched(scene, before)
    allowed = replace(req, allow_outside=True, reason="the top file was agreed in chat")
    done = landing.land(scene.home, allowed)
    assert done.outside_grant == ("top.txt",)
    item = ledger.get(scene.home, req.work_id)
    assert item.landing.outside_grant == ["top.txt"]
    assert item.landing.reason == "the top file was agreed in chat"


def test_a_dirty_checkout_of_the_base_is_refused_and_never_touched(scene: Scene) -> None:
    req = scene.crew("alpha", {"a/one.txt": "alpha\n"}, commit=True)
    (scene.project / "top.txt").write_text("the user's own edit\n")
    before = head(scene.project, "main")

    err = refused("dirty_checkout", landing.land, scene.home, req)

    assert err.extra["paths"] == ["top.txt"]
    assert head(scene.project, "main") == before
    assert (scene.project / "top.txt").read_text() == "the user's own edit\n"
    assert git("stash", "list", cwd=scene.project) == ""  # never stashed for them
    # a checkout on another branch is not the base's: the land goes ahead
    git("checkout", "-q", "-b", "elsewhere", cwd=scene.project)
    done = landing.land(scene.home, req)
    assert head(scene.project, "main") == done.commit and done.checkout is None
    assert (scene.project / "top.txt").read_text() == "the user's own edit\n"


def test_failing_tests_are_refused_with_their_last_lines(scene: Scene) -> None:
    command = "for i in $(seq 1 40); do echo line $i; done; test -f a/one.txt && exit 7"
    req = scene.crew("alpha", {"a/one.txt": "alpha\n"}, commit=True, test_command=command)
    before = head(scene.project, "main")

    err = refused("tests_failed", landing.land, scene.home, req)

    assert err.extra["exit_status"] == 7
    assert err.extra["lines"] == [f"line {i}" for i in range(21, 41)]
    assert "line 40" in err.message and "line 20\n" not in err.message
    untouched(scene, before)
    # a command bounded in time is stopped at its bound, its whole group with it
    slow = replace(req, test_command="sleep 30 & sleep 30", test_timeout=1)
    started = time.monotonic()
    err = refused("tests_failed", landing.land, scene.home, slow)
    assert time.monotonic() - started < 10 and "within 1 seconds" in err.message
    untouched(scene, before)
    # the command sees the result (alpha's file on the base) and passes: it lands
    passing = replace(req, test_command='test "$(cat a/one.txt)" = alpha')
    assert landing.land(scene.home, passing).tested


def test_hostile_file_names_are_judged_and_shown_escaped(scene: Scene) -> None:
    odd = "a/new\nline\x1b[31m.txt"  # inside a/, but a name the path rules refuse
    title = "b/\x1b]0;title\x07"
    req = scene.crew("alpha", {odd: "x\n", title: "y\n", "a/fine.txt": "z\n"}, commit=True)

    err = refused("outside_grant", landing.land, scene.home, req)

    # the names as git has them (read -z), judged by the grant's rule: neither is granted
    assert err.extra["paths"] == [odd, title]
    assert "\n" not in err.message and "\x1b" not in err.message  # escaped, one line
    assert "a/new\\nline" in err.message
    done = landing.land(scene.home, replace(req, allow_outside=True, reason="ok"))
    assert git("show", f"main:{odd}", cwd=scene.project) == "x"
    assert done.files == 3 and done.outside_grant == (odd, title)


def test_a_symlink_in_the_worktree_leading_out_of_it_is_outside_the_grant(scene: Scene) -> None:
    req = scene.crew("alpha", {"a/one.txt": "alpha\n"})
    os.symlink(str(scene.root), os.path.join(req.worktree, "a", "escape"))  # a/ is owned

    err = refused("outside_grant", landing.land, scene.home, req)

    assert err.extra["paths"] == ["a/escape"]
    assert head(scene.project, "main") == scene.base


def test_a_branch_whose_history_was_rewritten_lands_from_where_it_forks(scene: Scene) -> None:
    req = scene.crew("alpha", {"a/one.txt": "alpha\n"}, commit=True)
    # the crew rewrites its branch: the first commit amended, then the base's own commit
    # replaced under it (an orphan root) — the recorded base commit is no longer in it
    git("commit", "-q", "--amend", "-m", "rewritten", cwd=req.worktree)
    landing.land(scene.home, req)
    assert (scene.project / "a/one.txt").read_text() == "alpha\n"
    refused("already_landed", landing.land, scene.home, req)


def test_nothing_to_land_and_a_missing_worktree_branch(scene: Scene) -> None:
    req = scene.crew("alpha", {})
    refused("nothing_to_land", landing.land, scene.home, req)
    git("checkout", "-q", "--detach", cwd=req.worktree)
    refused("no_worktree", landing.land, scene.home, req)


def test_one_land_at_a_time_per_repository_and_the_queue_shows_it(scene: Scene) -> None:
    slow = scene.crew(
        "alpha",
        {"a/one.txt": "alpha\n"},
        commit=True,
        test_command="touch ../started; while [ ! -e ../go ]; do sleep 0.05; done",
    )
    quick = scene.crew("beta", {"b/two.txt": "beta\n"}, owns=("b",), commit=True, wait=0.3)
    marker = scene.home.root / "landing" / landing.repo_id(str(scene.project)) / "started"
    results: list = []
    holder = threading.Thread(target=lambda: results.append(landing.land(scene.home, slow)))
    holder.start()
    try:
        deadline = time.monotonic() + 20
        while not marker.exists():
            assert time.monotonic() < deadline, "the first land never reached its tests"
            time.sleep(0.02)
        rows = landing.queue(scene.home)
        assert [(r["crew"], r["state"]) for r in rows] == [("alpha", "landing")]
        err = refused("land_busy", landing.land, scene.home, quick)
        assert "captain status" in err.message
        assert head(scene.project, "main") == scene.base
    finally:
        (marker.parent / "go").touch()
        holder.join(30)
    assert results and head(scene.project, "main") == results[0].commit
    assert landing.queue(scene.home) == []
    landing.land(scene.home, replace(quick, wait=5))
    assert (scene.project / "b/two.txt").read_text() == "beta\n"


def test_a_queue_entry_of_a_dead_land_is_not_shown(scene: Scene) -> None:
    req = scene.crew("alpha", {"a/one.txt": "alpha\n"}, commit=True)
    queued = scene.home.store.dir("landing", landing.repo_id(req.project), "queue")
    (queued / "lnd_dead.json").write_text(
        '{"crew": "ghost", "pid": %d, "started": "1", "queued_at": "2030"}' % os.getpid()
    )
    assert landing.queue(scene.home) == []  # its pid runs, but not since that start time
    landing.land(scene.home, req)
    assert list(queued.iterdir()) == []  # swept by the next land of the repository


def test_a_ten_thousand_file_change_is_judged_listed_briefly_and_recorded_small(
    scene: Scene,
) -> None:
    req = scene.crew("alpha", {})
    many = Path(req.worktree) / "c"
    many.mkdir()
    for i in range(10_000):
        (many / f"{i:05d}.txt").write_text("x\n")

    err = refused("outside_grant", landing.land, scene.home, req)  # c/ is not alpha's

    assert err.extra["count"] == 10_000 and len(err.extra["paths"]) == 1000
    assert "and 9980 more" in err.message and len(err.message) < 2000
    assert head(scene.project, "main") == scene.base
    # landed anyway (allowed), the ledger's record keeps 100 paths and a count
    item = ledger.landed(
        scene.home,
        req.work_id,
        commit="c" * 40,
        base_branch="main",
        operator="captain",
        outside_grant=[f"c/{i:05d}.txt" for i in range(10_000)],
        reason="generated",
    )
    assert len(item.landing.outside_grant) == 101
    assert item.landing.outside_grant[-1] == "... and 9900 more"


@pytest.mark.parametrize("mode", ["merge", "rebase"])
def test_a_link_where_the_landing_worktree_goes_is_never_followed(scene: Scene, mode: str) -> None:
    """A process that can write the home puts a symlink to another crew's worktree where
    the private landing worktree goes: removing "the landing worktree" must remove the link,
    never the worktree it leads to (git's ``worktree remove --force --force`` follows it and
    deleted that crew's worktree, uncommitted work and all)."""
    kim = scene.root / "worktrees" / "kim"
    git("worktree", "add", "-q", "-b", "captain/kim", str(kim), scene.base, cwd=scene.project)
    (kim / "a" / "one.txt").write_text("kim's uncommitted work\n")
    where = scene.home.store.dir("landing", landing.repo_id(str(scene.project)))
    os.symlink(kim, where / "tree")
    req = scene.crew("alpha", {"a/one.txt": "alpha\n"}, commit=True, mode=mode)

    landed = landing.land(scene.home, replace(req, test_command="true"))

    assert landed.tested and head(scene.project, "main") == landed.commit
    assert (kim / "a" / "one.txt").read_text() == "kim's uncommitted work\n"
    assert str(kim) in worktrees(scene.project)
    assert not os.path.lexists(where / "tree")


def _a_journal(scene: Scene, req: landing.Request, **fields) -> dict:
    """A journal as a land killed after writing it leaves one (base not yet moved)."""
    journal = {
        "project": req.project,
        "worktree": req.worktree,
        "crew": req.crew,
        "assignment_id": req.assignment_id,
        "work_id": req.work_id,
        "branch": req.branch,
        "base_branch": "main",
        "queued_at": "2026-12-02T00:00:00Z",
        "mode": "merge",
        "old": scene.base,
        "new": scene.base,
        "tip": scene.base,
        "crew_commit": None,
        "outside_grant": [],
        "reason": None,
        "operator": "captain",
        "files": 1,
        "tested": False,
    }
    journal.update(fields)
    return {k: v for k, v in journal.items() if v is not ...}


@pytest.mark.parametrize(
    "fields",
    [
        {"old": ...},  # a field missing
        {"work_id": 7},  # a number where an ID goes
        {"new": "--output=/tmp/x", "old": "0" * 40},  # an option where a commit goes
        {"mode": "sideways", "old": "0" * 40},  # a mode no land writes
        {"outside_grant": "a"},
    ],
    ids=["missing", "number", "option", "mode", "grant"],
)
def test_a_journal_not_as_a_land_writes_it_is_set_aside_and_the_land_goes_on(
    scene: Scene, fields: dict
) -> None:
    """A journal of a killed land, edited by hand or restored damaged, is reported and set
    aside as any bad record (the quarantine, with its reason), never handed to git or the
    ledger: the next land goes on and lands (it was an internal_error, or git was handed
    an option where a commit goes)."""
    alpha = scene.crew("alpha", {"a/one.txt": "alpha\n"})
    journal = landing._dir(scene.home, alpha.project) / "journal.json"
    journal.write_text(json.dumps(_a_journal(scene, alpha, **fields)))

    landed = landing.land(scene.home, alpha)

    assert head(scene.project, "main") == landed.commit != scene.base
    assert not journal.exists()
    reasons = [p.read_text() for p in (scene.home.root / "quarantine").glob("*.reason")]
    assert any("is not a landing journal" in r for r in reasons), reasons
    assert ledger.get(scene.home, alpha.work_id).landing.commit == landed.commit

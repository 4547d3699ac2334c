"""#25 point 5 in the cockpit: dismissing a crew with its own worktree asks first saying
what happens to the worktree, and the toast says whether it was removed or kept (the same
sentence as the CLI's, from ``usecases.words``). Real git, a real repository in tmp_path.
"""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest
from support.cockpit import Cockpit, drive, select_row, toasts, until

from captain_tui import usecases
from state.crew import crewlog
from state.crew.guards import CAPTAIN
from state.home import Home
from widgets.screens.forms import ConfirmScreen

pytestmark = pytest.mark.usefixtures("plain_terminal", "private_config")

ID = ["-c", "user.name=Test", "-c", "user.email=test@example.com"]


def git(cwd, *args: str) -> str:
    return subprocess.run(
        ["git", *ID, *args], cwd=cwd, check=True, capture_output=True, text=True
    ).stdout


def test_dismissing_a_crew_with_work_in_its_worktree_keeps_it_and_the_toast_says_so(
    home: Home, project: Path
):
    git(project, "init", "-q", "-b", "main")
    (project / "src" / "a.txt").write_text("a\n")
    git(project, "add", "-A")
    git(project, "commit", "-q", "-m", "first")
    kept = usecases.recruit(
        home, usecases.Recruitment("Jack", "t", cwd=str(project), launch=False), ctx=CAPTAIN
    ).workspace
    gone = usecases.recruit(
        home, usecases.Recruitment("Gibbs", "t", cwd=str(project), launch=False), ctx=CAPTAIN
    ).workspace
    Path(kept.worktree, "src", "b.txt").write_text("b\n")
    git(kept.worktree, "add", "-A")
    git(kept.worktree, "commit", "-q", "-m", "work")
    app = Cockpit(home, run_doorbell=False)

    async def scenario(pilot):
        for name, key in (("Jack", "jack"), ("Gibbs", "gibbs")):
            await select_row(pilot, "crew", key)
            await pilot.press("d")
            await until(pilot, lambda: isinstance(app.screen, ConfirmScreen))
            assert f"Its worktree and branch captain/{key}-" in app.screen.body
            await pilot.press("y")
            await until(pilot, lambda key=key: app.view.crew(key) is None, what=f"{name} gone")
        await until(pilot, lambda: len([t for t in toasts(app) if "Dismissed" in t]) == 2)

    drive(app, scenario)
    said = "\n".join(toasts(app))
    assert f"the worktree {kept.worktree} and branch {kept.branch} were kept: 1 commit" in said
    assert "captain dismiss Jack --discard" in said
    assert f"the worktree {gone.worktree} and branch {gone.branch} were removed" in said
    assert os.path.isdir(kept.worktree) and not os.path.exists(gone.worktree)
    assert crewlog.load(home, "jack")[0].worktree == "kept"
    assert crewlog.load(home, "gibbs")[0].worktree == "removed"


def test_the_watcher_skips_the_worktrees_and_still_hears_a_folder_made_after_it(tmp_path):
    """The cockpit's watcher process (watchfiles in a child) does not watch the crews'
    worktrees under the home — a crew's build would flood it and use up inotify's watches —
    yet a record in a folder the home gained after it started is reported."""
    import json
    import select
    import sys

    from captain_tui.cockpit.feed import watcher
    from state.store import WORKTREES

    root = tmp_path / "home"
    (root / WORKTREES / "p-1" / "jack-1").mkdir(parents=True)
    proc = subprocess.Popen(
        [sys.executable, "-c", watcher._WATCHER, str(root), "20", "5", "300", WORKTREES],
        stdout=subprocess.PIPE,
        text=True,
    )

    def until_seen(wanted: tuple[int, str], seen: set) -> set:
        for _ in range(40):  # a quiet 0.3 s reports [] ; the change comes within a few
            ready, _, _ = select.select([proc.stdout], [], [], 30)
            assert ready, "the watcher process said nothing"
            seen |= {(c, p) for c, p in json.loads(proc.stdout.readline())}
            if wanted in seen:
                return seen
        raise AssertionError(f"{wanted} never reported: {sorted(seen)[:20]}")

    try:
        ready, _, _ = select.select([proc.stdout], [], [], 30)
        assert ready and json.loads(proc.stdout.readline()) == []  # up
        seen: set = set()
        (root / "config.toml").write_text("")
        until_seen((1, str(root / "config.toml")), seen)
        for i in range(200):  # a crew's build in its worktree
            (root / WORKTREES / "p-1" / "jack-1" / f"o{i}.o").write_text("x")
        (root / "mail" / "jack").mkdir(parents=True)  # a folder the home gains now
        (root / "mail" / "jack" / "msg_1.json").write_text("{}")
        seen = until_seen((1, str(root / "mail" / "jack" / "msg_1.json")), seen)
        (root / "mail" / "jack" / "msg_2.json").write_text("{}")  # and once it is watched
        seen = until_seen((1, str(root / "mail" / "jack" / "msg_2.json")), seen)
        assert not [p for _, p in seen if f"/{WORKTREES}/" in p], sorted(seen)[:20]
    finally:
        proc.kill()
        proc.wait()

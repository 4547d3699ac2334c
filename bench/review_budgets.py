"""A crew's ``done`` to its diff on the captain's screen (budget: p95 <= 300 ms for a
2,000-line change, docs/review.md), and the change's shape for a 10,000-file change.

1. done -> diff visible: the real ``CaptainApp``, headless, on a real git repository. Each
   round recruits a crew (``usecases.recruit``: its own worktree, untimed), writes a
   2,000-line change in its worktree (10 files of 200 lines, uncommitted, untimed), and
   the crew reads its task. Timed from just before the crew's ``done`` is written to the
   moment the first file's syntax-coloured diff is on the review screen: the done reaches
   the Notifications panel (the feed), the captain presses ``D`` on the crew, the change
   is read (git, off the UI thread), its file list shown and the first file drawn.
2. the shape of a 10,000-file change (``captain diff --json``'s computation, in process):
   how long git and the outside-grant judgement take, for the record (the UI is never
   blocked by it: tests/cockpit/test_review_screen.py).

    python bench/review_budgets.py [--rounds 20] [--quick] [--smoke] [--json PATH]
"""

from __future__ import annotations

import argparse
import asyncio
import os
import platform
import sys
import tempfile
import time
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from state.home import Home

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from bench.report import (  # noqa: E402
    SMOKE,
    latency_row,
    print_report,
    run_script,
    write_json,
)

SIZE = (160, 50)
IDENTITY = {
    "GIT_AUTHOR_NAME": "bench",
    "GIT_AUTHOR_EMAIL": "bench@example.invalid",
    "GIT_COMMITTER_NAME": "bench",
    "GIT_COMMITTER_EMAIL": "bench@example.invalid",
}


def _project(root: Path, files: int) -> Path:
    from captain_tui.repo import git

    project = root / "project"
    (project / "src").mkdir(parents=True)
    for i in range(files):
        (project / "src" / f"m{i}.py").write_text("".join(f"x{j} = {j}\n" for j in range(200)))
    git.run(["init", "-q", "-b", "main"], cwd=str(project))
    git.run(["add", "-A"], cwd=str(project))
    git.run(["commit", "-q", "-m", "base"], cwd=str(project), env=IDENTITY)
    return project


def _recruit(home, project: Path, name: str):
    from captain_tui import usecases
    from state.crew import protocol
    from state.crew.guards import CAPTAIN, Context

    r = usecases.recruit(
        home,
        usecases.Recruitment(
            name=name,
            task="change every module",
            owns=("src",),
            allow=("edit",),
            cwd=str(project),
            launch=False,
        ),
        ctx=CAPTAIN,
    )
    ctx = Context.from_env(r.env)
    protocol.inbox(home, name, deliver=lambda batch: None, ctx=ctx)
    return ctx


def _write_change(top: Path, files: int, tag: int) -> None:
    """200 lines changed in each of ``files`` modules: +200 -200 each."""
    for i in range(files):
        body = "".join(f"x{j} = {j * 7 + tag}  # changed\n" for j in range(200))
        (top / "src" / f"m{i}.py").write_text(body)


async def _done_to_diff(
    home: Home, project: Path, rounds: int
) -> tuple[list[float], list[tuple[float, float, float]]]:
    """Each round's done -> first file drawn (ms), and its three parts."""
    from captain_tui.cockpit.app import CaptainApp
    from state.crew import crewlog, protocol
    from widgets.panels.crew_panel import CrewPanel
    from widgets.screens.review_screen import ReviewScreen

    app = CaptainApp(home, run_doorbell=False)
    times: list[float] = []
    parts: list[tuple[float, float, float]] = []  # feed, change read and listed, first diff
    async with app.run_test(size=SIZE) as pilot:

        async def until(pred, what: str, timeout: float = 30.0):
            deadline = time.monotonic() + timeout
            while True:
                value = pred()
                if value:
                    return value
                if time.monotonic() > deadline:
                    raise TimeoutError(f"timed out waiting for {what}")
                await asyncio.sleep(0.002)

        await until(lambda: app.scanned and app.last_refresh is not None, "the first scan")
        for n in range(rounds):
            name = f"crew{n}"
            ctx = _recruit(home, project, name)
            snapshot, _ = crewlog.load(home, name)
            assert snapshot is not None and snapshot.workspace is not None  # just recruited
            _write_change(Path(snapshot.workspace.worktree), 10, n)
            panel = app.query_one(CrewPanel)
            await until(lambda: name in panel._keys, f"{name} in Crew")
            panel.table.focus()
            await pilot.press("g", *["j"] * panel._keys.index(name))
            await pilot.pause()
            start = time.perf_counter()
            protocol.done(home, name, "changed every module", ctx=ctx)
            await until(
                lambda: (
                    any(r.crew == name and r.status == "done" for r in app.view.notifications())
                    or False
                ),
                "the done in Notifications",
            )
            seen = time.perf_counter()
            # the D key's action, posted as the key's binding would (pilot.press would wait
            # for the whole app to be idle, feed and timers included, and time that)
            app.call_later(app.run_action, "review")
            screen = await until(
                lambda: isinstance(app.screen, ReviewScreen) and app.screen, "the review"
            )
            await until(lambda: screen.files, "the file list")
            listed = time.perf_counter()
            await until(lambda: screen.current is not None, "the first file's diff")
            times.append((time.perf_counter() - start) * 1000)
            parts.append(
                (
                    (seen - start) * 1000,
                    (listed - seen) * 1000,
                    (time.perf_counter() - listed) * 1000,
                )
            )
            assert len(screen.files) == 10 and screen.current.picture.plain.count("\n+x") == 200
            await pilot.press("escape")
            await until(lambda: not isinstance(app.screen, ReviewScreen), "the review closed")
    return times, parts


def _big_shape(root: Path, count: int) -> dict:
    sys.path.insert(0, str(REPO / "tests"))
    from support import gitrepo

    from captain_tui import usecases
    from state.crew import protocol
    from state.home import Home

    project = root / "big"
    gitrepo.init(project, {"README.md": "r\n"})
    gitrepo.commit_many(project, count)  # the working tree lacks them: `count` deletions
    home = Home(root / "big-home")
    (root / "big-home").mkdir(exist_ok=True)
    protocol.recruit(home, "Big", "delete them", owns=["src"], allow=["delete"], cwd=str(project))
    start = time.perf_counter()
    change = usecases.change(home, "Big")
    took = (time.perf_counter() - start) * 1000
    assert len(change.files) == count
    return {
        "what": f"shape of a {count:,}-file change (git + outside-grant judgement)",
        "measured": f"{took:.0f} ms",
        "budget": "info (off the UI thread)",
        "verdict": "info",
        "ms": took,
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=20)
    parser.add_argument("--files", type=int, default=10_000, help="the big change's files")
    parser.add_argument("--quick", action="store_true", help="--rounds 8 --files 2000")
    parser.add_argument("--smoke", action="store_true", help=f"{SMOKE}: --rounds 1 --files 100")
    parser.add_argument("--json", type=Path, default=None, help="also write results here")
    args = parser.parse_args()
    if args.quick:
        args.rounds, args.files = 8, 2000
    if args.smoke:
        args.rounds, args.files = 1, 100
    with tempfile.TemporaryDirectory(prefix="captain-bench-review-") as tmp:
        root = Path(tmp)
        os.environ["CAPTAIN_HOME"] = str(root / "home")
        os.environ["CAPTAIN_CONFIG_DIR"] = str(root / "config")
        from state.home import Home

        (root / "home").mkdir()
        home = Home(root / "home")
        project = _project(root, 10)
        times, parts = asyncio.run(_done_to_diff(home, project, args.rounds))
        rows = [
            latency_row(
                "done -> diff visible in the cockpit, 2,000-line change",
                times,
                "p95 <= 300 ms",
                300,
            ),
            *[
                latency_row(f"  of which: {what}", [p[i] for p in parts], "info")
                for i, what in enumerate(
                    (
                        "the done reaches Notifications (the feed)",
                        "D -> the change read (git), listed, its first file drawn",
                        "after the list, until the first file is drawn",
                    )
                )
            ],
            _big_shape(root, args.files),
        ]
    heading = (
        f"{platform.machine()}, {os.cpu_count()} cores, Python {platform.python_version()}, "
        f"load average {os.getloadavg()[0]:.2f}"
    )
    print_report(heading, rows)
    write_json(args.json, {"rows": rows, "done_to_diff_ms": times, "parts_ms": parts})
    return 0 if all(r["verdict"] != "MISSED" for r in rows) else 1


if __name__ == "__main__":
    run_script(main)

"""#25 "a review comment reaches the crew's pane as mail": a real crew (the simulated agent)
in a private tmux server, in its own worktree of a real git repository; the captain opens
its review in the cockpit, comments on a hunk, and the comment is rung into the crew's pane
and read there with ``captain inbox`` — quoting ``path:line`` and the lines."""

from __future__ import annotations

import json
import time
from pathlib import Path

import pytest
from support import gitrepo
from support.cockpit import Cockpit, drive, select_row, toasts, type_text, until
from support.tmux import PrivateTmux, SimLog, needs_tmux, recruit_into, sim_command

from state.crew import crewlog
from state.home import Home
from widgets.screens.review_screen import ReviewScreen

pytestmark = [needs_tmux, pytest.mark.usefixtures("private_config")]


def test_a_review_comment_reaches_the_crews_pane_as_mail(cli, project: Path, tmp_path: Path):
    gitrepo.init(project, {"src/a.py": "".join(f"line {i}\n" for i in range(1, 20))})
    tmux = PrivateTmux()
    log = SimLog(tmp_path / "sim.log")
    try:
        r = recruit_into(
            cli,
            tmux,
            "Ann",
            "tidy src",
            "--owns",
            "src",
            "--allow",
            "edit",
            command=sim_command(log.path),
        )
        top = Path(r["workspace"]["worktree"])
        (top / "src/a.py").write_text(
            "".join(f"line {i}\n" if i != 10 else "line ten\n" for i in range(1, 20))
        )
        home = Home(cli.home)
        app = Cockpit(home, run_doorbell=False, socket=tmux.socket)

        async def scenario(pilot):
            await select_row(pilot, "crew", "ann")
            await pilot.press("D")
            screen = await until(
                pilot, lambda: isinstance(pilot.app.screen, ReviewScreen) and pilot.app.screen
            )
            await until(pilot, lambda: screen.current is not None, what="the diff", timeout=30)
            await pilot.press("c")
            await until(pilot, lambda: pilot.app.screen is not screen, what="the comment form")
            await type_text(pilot, "Why ten in words?")
            await pilot.press("ctrl+s")
            await until(pilot, lambda: any("Sent your comment" in t for t in toasts(app)))

        drive(app, scenario)
        deadline = time.monotonic() + 45
        read: list[dict] = []
        while time.monotonic() < deadline:  # the ring types; the crew reads its inbox
            read = [m for batch in log.lines("inbox") for m in json.loads(batch)]
            if any("Review comment" in m["text"] for m in read):
                break
            time.sleep(0.2)
        comments = [m for m in read if "Review comment" in m["text"]]
        assert comments, (read, log.lines())
        text = comments[0]["text"]
        assert text.startswith("Review comment on src/a.py:7:")
        assert "> -line 10" in text and "> +line ten" in text and "Why ten in words?" in text
        snapshot, _ = crewlog.load(home, "ann")
        assert snapshot.done_at is None and snapshot.assignment.assignment_id == r["assignment_id"]
    finally:
        tmux.kill()

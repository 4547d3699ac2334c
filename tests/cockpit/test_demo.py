"""The demo's crew carry on by themselves: task -> question -> answer -> done, then a next
task under a new assignment ID."""

from __future__ import annotations

import os

from support.tmux import PrivateTmux, needs_tmux

from captain_tui import usecases as ops
from captain_tui.cockpit.demo import CREW, Demo
from captain_tui.runtime.runner import Runner
from state.crew import crewlog, notify, protocol

pytestmark = needs_tmux


def _next(home, runner, timeout=30.0):
    n = notify.wait(home, None, timeout=timeout, sleep=runner.sleep)
    assert n is not None, "no notification before the timeout"
    return n


def test_demo_crew_ask_get_answered_and_finish(tmp_path):
    server = PrivateTmux()
    demo = Demo(tmp_path / "demo", work=0.3, socket=server.socket)
    try:
        demo.start()
        home = demo.home
        runner = Runner(home)  # what the cockpit runs: it rings the doorbells
        asked = {}
        pending = None
        while len(asked) < len(CREW):
            n = notify.wait(home, None, timeout=40, ack=pending, sleep=runner.sleep)
            assert n is not None, f"only {sorted(asked)} asked before the timeout"
            pending = n.delivery_id
            if n.status == "asked":
                asked[n.crew] = n
        for crew, n in asked.items():
            protocol.answer(
                home, crew, n.question_id, f"Yes, {crew}: go ahead.", assignment_id=n.assignment_id
            )
        finished = set()
        while finished != {c[0] for c in CREW}:
            n = notify.wait(home, None, timeout=40, ack=pending, sleep=runner.sleep)
            assert n is not None, f"only {sorted(finished)} finished before the timeout"
            pending, last = n.delivery_id, n
            if n.status == "done":
                finished.add(n.crew)
                task = next(c[1] for c in CREW if c[0] == n.crew)
                assert task[:30] in n.summary and "Yes," not in n.summary  # not an echo
        # the demo shows a crew's diff: Brook's edits in its own worktree, one outside --owns
        brook = ops.change(home, "Brook")
        assert not brook.where.shared and brook.where.top != str(demo.project)
        assert {f.path for f in brook.files} == {
            "src/export.py",
            "tests/test_export.py",
            "CHANGELOG.md",
        }
        assert brook.outside == ["CHANGELOG.md"] and len(brook.uncommitted) == 3
        assert b"+# Brook: Add a --verbose flag" in ops.diff_bytes(brook, ["src/export.py"])
        assert ops.change(home, "Cy").files == ()
        # Next task (the cockpit's n): the crew still carries the first CAPTAIN_ASSIGNMENT
        # in its environment; it must learn the new ID from the new task's mail
        ops.acknowledge(home, last.crew, last.delivery_id)
        first = crewlog.load(home, "ada")[0].assignment.assignment_id
        spec = ops.assign(home, "Ada", "Now fix the changelog links too.", handoff=first)
        while True:
            n = notify.wait(home, "Ada", timeout=40, sleep=runner.sleep)
            assert n is not None, "Ada did not finish its second task before the timeout"
            ops.acknowledge(home, "Ada", n.delivery_id)
            assert n.status != "error", n
            if n.status == "asked":  # it asks about each assignment: answer this one too
                protocol.answer(home, "Ada", n.question_id, "Yes.", assignment_id=n.assignment_id)
            if n.status == "done":
                break
        assert n.assignment_id == spec.assignment_id != first
        assert crewlog.load(home, "ada")[0].done_at is not None
        runner.close()
    finally:
        demo.stop(keep=False)
        server.kill()
    assert not demo.root.exists(), "the demo home is removed unless --keep"
    assert not os.path.exists(server.socket)

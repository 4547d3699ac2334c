"""The demo's crew carry on by themselves: task -> question -> answer -> done."""

from __future__ import annotations

import os

from support.tmux import PrivateTmux, needs_tmux

from captain_tui.cockpit.demo import CREW, Demo
from captain_tui.runtime.runner import Runner
from state.crew import notify, protocol

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
            protocol.answer(home, crew, n.question_id, f"Yes, {crew}: go ahead.",
                            assignment_id=n.assignment_id)
        finished = set()
        while finished != {c[0] for c in CREW}:
            n = notify.wait(home, None, timeout=40, ack=pending, sleep=runner.sleep)
            assert n is not None, f"only {sorted(finished)} finished before the timeout"
            pending = n.delivery_id
            if n.status == "done":
                finished.add(n.crew)
                assert "Yes," in n.summary or "Done" in n.summary
        runner.close()
    finally:
        demo.stop(keep=False)
        server.kill()
    assert not demo.root.exists(), "the demo home is removed unless --keep"
    assert not os.path.exists(server.socket)

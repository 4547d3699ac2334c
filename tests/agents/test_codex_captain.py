"""captain and the REAL Codex CLI: recruiting, the doorbell's gates, the hooks, a death.

One Codex crew, ``Jack``, is recruited through the real ``captain crew Jack --agent codex``
into a tmux server inside a loopback-only network namespace (``support.codex``), talking
to a Responses-API stand-in there, and shared by the tests below in file order (Codex
takes seconds to start, and the CI budget is tight): each test first waits until Jack is
at rest. The last one kills Codex. The doorbell is driven in-process (``doorbell.ring``),
polled the way a running ``captain wait`` retries it.

What Codex 0.169.0 does with captain's ``-c`` hooks, as these tests rely on it: no "Hooks
need review" screen; ``PermissionRequest`` runs as the approval prompt appears, ``Stop`` at
each turn's end, neither for the internal title-generation turn. Assertions are on what
the pane shows, what the stand-in receives and what captain's notices say. They skip, with
the reason, when Codex, tmux, bubblewrap or the network namespace is missing.
"""

from __future__ import annotations

import json
import os
import signal
import time

import pytest
from support.agents import STEP, LiveCrew
from support.codex import (
    Shell,
    codex_available,
    process_name,
    start_codex_crew,
    surviving_codex,
)

from captain_tui.runtime import doorbell
from captain_tui.runtime.pane_reader import read_screen
from state.crew import notify

RELEASE = 2.0  # a ring lands within this long after its gate clears
TASK = "TASK-5120: tidy the docs under docs/ and keep the examples runnable"
PROMPT = "Would you like to run the following command?"


class Jack(LiveCrew):
    """The shared crew (``support.agents.LiveCrew``: what the tests do with it)."""

    def at_rest(self, outcome: doorbell.Outcome) -> bool:
        """The newest mail was rung, the stand-in has been quiet for a second and the
        composer reads clear."""
        return (
            outcome.action == "nothing" and self.stand_in.quiet_for() > 1.0 and self.screen_clear()
        )


@pytest.fixture(scope="module")
def jack(tmp_path_factory):
    reason = codex_available()
    if reason:
        pytest.skip(reason)
    crew = start_codex_crew(tmp_path_factory.mktemp("codex"), name="Jack", task=TASK)
    try:
        yield Jack(crew)
    finally:
        pids = set(crew.codex_pids()) | crew.started_pids
        crew.close()
        # Only the pids this crew started: a person's own Codex elsewhere is not ours.
        assert surviving_codex(pids) == [], "Codex processes survived the tests"
        # Whatever Codex tried to reach besides the stand-in was refused at the proxy trap
        # (and the jail has no other interface to reach it by).
        assert all(r.method == "CONNECT" for r in crew.stand_in.blocked), [
            (r.method, r.path) for r in crew.stand_in.blocked
        ]


# --------------------------------------------------------------------------------------
# 1. Recruit: the ring brings the task to the model; the turn's end is heard once
# --------------------------------------------------------------------------------------


def test_recruit_rings_the_task_in_and_the_turn_end_is_one_idle_notice(jack: Jack):
    crew, stand_in = jack.crew, jack.stand_in
    req, _ = jack.ring_until_request(
        lambda r: TASK in r.last_user, crew.recruited_at + jack.grace + STEP, what="the task"
    )
    # Typed into the composer as the person's prompt, with the inbox line and the ID.
    assert req.last_user.startswith("Mail from the captain: " + TASK), req.last_user
    assert "captain inbox Jack" in req.last_user and crew.assignment in req.last_user
    assert "Hooks need review" not in jack.pane.capture()
    # The Stop hook: one idle notice carrying the model's last message.
    (idle,) = jack.wait_notices("idle", 1)
    assert idle.summary == "Jack: Done. (stand-in reply)", idle.summary
    # Codex also names the thread with a side turn of its own; that is no turn of Jack's.
    stand_in.wait_for(lambda r: r.kind == "title", timeout=STEP)
    jack.settle()
    assert len(jack.notices("idle")) == 1
    assert jack.notices("awaiting_approval") == []


# --------------------------------------------------------------------------------------
# 2. A human draft holds the ring; clearing it lets the mail land
# --------------------------------------------------------------------------------------


def test_human_draft_holds_the_ring_and_the_mail_lands_once_it_is_cleared(jack: Jack):
    pane, stand_in = jack.pane, jack.stand_in
    jack.settle()
    mark = stand_in.mark()
    draft = "half-written thought about the README"
    pane.send_literal(draft)
    pane.wait_for(lambda s: read_screen(s, "codex").draft == draft, STEP)

    tell_text = "TELL-2208: also update the changelog"
    jack.tell_held(tell_text, "human_draft")
    # The draft is intact (nothing appended), nothing was submitted, the model asked nothing.
    screen = jack.screen()
    assert screen.draft == draft, screen
    assert tell_text not in pane.capture()
    assert jack.mains_after(mark) == []

    pane.send_keys("C-u")
    pane.wait_for(lambda s: read_screen(s, "codex").draft == "", STEP)
    jack.rings_within(RELEASE + 1.0, "ring after the clear")

    # The task's body was typed once already: later rings are the inbox line.
    req = stand_in.wait_main(after=mark, timeout=STEP)
    assert req.last_user == doorbell.inbox_line("Jack"), req.last_user
    assert all(draft not in r.text for r in stand_in.snapshot() if r.seq > mark)
    # This turn's end is heard too: the second idle notice (one per turn).
    idles = jack.wait_notices("idle", 2)
    assert len(idles) == 2


# --------------------------------------------------------------------------------------
# 3. An approval prompt holds the ring and is reported once, by the hook
# --------------------------------------------------------------------------------------


def test_approval_prompt_holds_the_ring_is_one_notice_and_the_mail_lands_after_yes(jack: Jack):
    pane, stand_in = jack.pane, jack.stand_in
    jack.settle()
    before = len(jack.notices("awaiting_approval"))
    stand_in.push(Shell("make release"))
    mark = stand_in.mark()
    pane.send_literal("rebuild the release")
    pane.wait_for(lambda s: read_screen(s, "codex").draft == "rebuild the release", STEP)
    pane.send_enter()
    first = stand_in.wait_main(after=mark, timeout=STEP)
    screen = pane.wait_for(PROMPT, STEP)
    assert "$ make release" in screen

    tell_text = "TELL-3310: use the new config format"
    jack.tell_held(tell_text, "approval_prompt", rings=3, or_gates=("not_quiescent",))
    assert PROMPT in pane.capture()
    assert jack.mains_after(first.seq) == []  # nothing answered, nothing submitted

    # The PermissionRequest hook raised the notice, at once and once; the 30 s screen check
    # (the runner's) leaves Codex to its hook and adds nothing.
    notices = jack.wait_notices("awaiting_approval", before + 1)
    assert "permission prompt: Bash: make release" in notices[-1].summary, notices[-1].summary
    for _ in range(2):
        assert doorbell.check_approval(jack.home, "Jack") is False
    assert len(jack.notices("awaiting_approval")) == before + 1

    # The person approves with y (re-sent, bounded, until the prompt is gone).
    deadline = time.monotonic() + STEP
    while PROMPT in pane.capture():
        assert time.monotonic() < deadline, pane.capture()
        pane.send_keys("y")
        time.sleep(0.3)
    stand_in.wait_for(lambda r: r.kind == "main" and r.has_output, timeout=STEP, after=first.seq)
    _, outcomes = jack.ring_until_request(
        lambda r: r.last_user == doorbell.inbox_line("Jack"),
        time.monotonic() + STEP,
        after=first.seq,
        what="the tell",
    )
    assert all(o.gate != "approval_prompt" for o in outcomes)
    jack.settle()
    assert len(jack.notices("awaiting_approval")) == before + 1


# --------------------------------------------------------------------------------------
# 4. Killing Codex is reported once (last: it ends the shared crew)
# --------------------------------------------------------------------------------------


def test_killing_codex_is_one_error_notice(jack: Jack):
    jack.settle()
    # Acknowledge what came before, so the wait below answers with what comes next.
    ack = None
    while (n := notify.wait(jack.home, "Jack", timeout=0, ack=ack)) is not None:
        ack = n.delivery_id  # acknowledged by the next call, which returns the next one
    pids = [p for p in jack.crew.codex_pids() if process_name(p) == "codex"]
    assert pids, "no codex process under the pane"
    for pid in pids:
        os.kill(pid, signal.SIGKILL)
    # A running `captain wait` reports it: tmux's pane-died hook, or (when tmux lost the
    # SIGCHLD, tmux/tmux#311) the wait's own probe of the pane.
    r = jack.crew.cli("wait", "Jack", "--json", "--timeout", "20")
    assert r.returncode == 0, (r.stdout, r.stderr)
    got = json.loads(r.stdout)
    assert got["status"] == "error" and got["crew"] == "Jack", got
    assert "killed by signal 9" in got["summary"] or "its process ended" in got["summary"], got
    # The pane is dead, and the death is reported once.
    deadline = time.monotonic() + 2.0
    while time.monotonic() < deadline:
        assert len(jack.notices("error")) == 1
        time.sleep(0.2)
    assert not any(process_name(p) == "codex" for p in pids)

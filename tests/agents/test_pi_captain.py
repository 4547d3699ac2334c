"""captain and the REAL pi coding agent: recruiting, the doorbell's gates, the extension's hooks.

One pi crew (``Jack``) is recruited, for the whole module, through the real
``captain crew --agent pi`` into a tmux server inside a loopback-only network namespace
(``support.pi.start_pi_crew``): pi runs with captain's extension (``pi -e``, the wake line
as first prompt) and pi's example ``permission-gate.ts``, against the stand-in Messages API.
Sharing one pi keeps the module well under a minute and a half; the tests run in file order
and each starts by letting the crew settle. The doorbell is driven in-process
(``doorbell.ring``), as a running ``captain wait`` retries it.

Assertions are on what the pane shows, what the stand-in received and what the home holds.
They skip, with the reason shown, when pi, node, tmux or the network namespace is missing.

What pi 0.73.1 does with captain's extension, as these tests rely on it:
- a ``before_agent_start`` message reaches the same request as the prompt, as a user
  message of its own (after the prompt's), and shows in the pane under ``[captain-mail]``;
- ``agent_end`` carries the turn's messages, the last assistant text among them;
- an extension's ``ctx.ui.select`` replaces the editor until answered; Down + Enter picks
  No, and permission-gate then blocks the call ("Blocked by user") and the turn goes on;
- ``C-c`` clears the editor.
"""

from __future__ import annotations

import os
import signal
import time

import pytest
from support.agents import STEP, LiveCrew
from support.claude import Request, ToolUse
from support.pi import PERMISSION_GATE, pi_available, pi_pid, start_pi_crew

from captain_tui.runtime import death_watch, doorbell

STEP_TIMEOUT = STEP
RELEASE = 2.0  # a ring lands within this long after its gate clears
TASK = "TASK-7301: tidy the docs under docs/ and keep the examples runnable"
REPLY = "Done. (pi stand-in reply 5521)"
WAKE = doorbell.WAKE_LINE
MAIL_HEAD = "Mail from the captain for Jack"


# --------------------------------------------------------------------------------------
# The crew
# --------------------------------------------------------------------------------------


class Jack(LiveCrew):
    """The module's pi crew (``support.agents.LiveCrew``: what the tests do with it)."""

    def at_rest(self, outcome: doorbell.Outcome) -> bool:
        """No mail is unread, the stand-in has been quiet for a second and the editor reads
        idle and empty."""
        return self.main_quiet() and self.screen_clear() and not self.unread()

    def wait_screen(self, predicate, what: str, timeout: float = STEP_TIMEOUT):
        deadline = time.monotonic() + timeout
        while True:
            s = self.screen()
            if predicate(s):
                return s
            if time.monotonic() >= deadline:
                raise AssertionError(f"the screen never showed {what}: {s}\n{self.pane.capture()}")
            time.sleep(0.05)


@pytest.fixture(scope="module")
def jack(tmp_path_factory):
    reason = pi_available()
    if reason:
        pytest.skip(reason)
    root = tmp_path_factory.mktemp("pi-crew")
    with start_pi_crew(
        root, name="Jack", task=TASK, extensions=[PERMISSION_GATE], default_text=REPLY
    ) as crew:
        yield Jack(crew)
        # Nothing tried to leave the machine through the proxy trap either.
        assert crew.stand_in.blocked == [], [f"{r.method} {r.path}" for r in crew.stand_in.blocked]


def wakes(req: Request) -> int:
    return req.user_texts().count(WAKE)


def mail_block(req: Request, needle: str) -> str:
    blocks = [t for t in req.user_texts() if needle in t]
    assert blocks, f"{needle!r} is in no user message of request {req.seq}"
    return blocks[-1]


# --------------------------------------------------------------------------------------
# 1. Recruited: the wake line starts the first turn and the extension hands over the task
# --------------------------------------------------------------------------------------


def test_recruited_pi_gets_its_task_in_context(jack: Jack):
    task_id = jack.crew.data["message_id"]
    # a wait retries the doorbell meanwhile; it must not ring again
    req, _ = jack.ring_until_request(
        lambda r: TASK in r.text, jack.crew.recruited_at + jack.grace + 10.0, what="the task"
    )
    # The wake line (pi's first prompt) started the turn; the task came with it as the
    # extension's message, never typed.
    assert wakes(req) == 1, req.user_texts()
    block = mail_block(req, TASK)
    assert block.startswith(MAIL_HEAD) and task_id in block, block[:300]
    assert f"captain done Jack --assignment {jack.assignment}" in block
    assert jack.unread() == []
    receipt = jack.receipt(task_id)
    assert receipt is not None and receipt.via == "hook"
    screen = jack.pane.wait_for(lambda s: "[captain-mail]" in s and REPLY in s, STEP_TIMEOUT)
    assert WAKE in screen
    jack.settle()
    assert doorbell.ring(jack.home, "Jack").action == "nothing"
    assert all(wakes(r) <= 1 for r in jack.stand_in.main_requests)


# --------------------------------------------------------------------------------------
# 2. The turn's end is heard
# --------------------------------------------------------------------------------------


def test_turn_end_is_an_idle_notice_with_the_assistant_text(jack: Jack):
    notice = jack.next_notice("idle")
    assert notice.summary == f"Jack: {REPLY}", notice.summary


# --------------------------------------------------------------------------------------
# 3. A human draft holds the doorbell; clearing it lets the ring land
# --------------------------------------------------------------------------------------


def test_human_draft_holds_the_ring_and_it_lands_once_the_draft_is_cleared(jack: Jack):
    jack.settle()
    mark = jack.stand_in.mark()
    draft = "half-written thought about the README"
    jack.pane.send_literal(draft)
    jack.wait_screen(lambda s: s.draft == draft, "the draft in the editor")

    tell_text = "TELL-2208: also update the changelog"
    told = jack.tell_held(tell_text, "human_draft")
    s = jack.screen()
    assert s.draft == draft, (s, jack.pane.capture())  # nothing appended, nothing sent
    assert jack.mains_after(mark) == []
    assert [m.text for m in jack.unread()] == [tell_text]

    jack.pane.send_keys("C-c")  # pi: clears the editor
    jack.wait_screen(
        lambda s: s.composer_readable and s.draft == "" and not s.working, "the cleared editor"
    )
    jack.rings_within(RELEASE, "ring after the clear")

    req = jack.stand_in.wait_main(after=mark, timeout=STEP_TIMEOUT, containing=tell_text)
    assert req.user_texts()[-2:-1] == [WAKE]  # the ring's wake line started this turn
    assert mail_block(req, tell_text).startswith(MAIL_HEAD)
    assert all(draft not in r.text for r in jack.mains_after(mark))  # never submitted
    assert jack.unread() == []
    assert jack.receipt(told["message_id"]).via == "hook"


# --------------------------------------------------------------------------------------
# 4. An extension's approval dialog holds the doorbell and is reported once
# --------------------------------------------------------------------------------------


def test_approval_dialog_holds_the_ring_is_one_notice_and_the_mail_lands_after(jack: Jack):
    jack.settle()
    marker = jack.crew.project / "build-cache"
    marker.mkdir()
    before = len(jack.notices("awaiting_approval"))
    jack.stand_in.push(ToolUse("bash", {"command": "rm -rf build-cache"}))
    mark = jack.stand_in.mark()
    jack.pane.send_literal("clean the build cache")
    jack.wait_screen(lambda s: s.draft == "clean the build cache", "the prompt typed")
    jack.pane.send_enter()
    first = jack.stand_in.wait_main(after=mark, timeout=STEP_TIMEOUT)
    jack.pane.wait_for("Allow?", STEP_TIMEOUT)

    tell_text = "TELL-3310: use the new config format"
    told = jack.tell_held(tell_text, "approval_prompt")
    # The runner's screen check sees pi's dialog (pi's hooks cannot): one notice, however
    # often it looks while the dialog stands.
    assert doorbell.check_approval(jack.home, "Jack") is True
    assert doorbell.check_approval(jack.home, "Jack") is True
    raised = jack.notices("awaiting_approval")[before:]
    assert len(raised) == 1, raised
    assert raised[0].summary.startswith("Jack is waiting at an approval prompt")
    assert "Allow?" in jack.pane.capture()
    assert jack.mains_after(first.seq) == []  # nothing answered, nothing submitted
    assert marker.exists()
    assert [m.text for m in jack.unread()] == [tell_text]

    jack.pane.send_keys("Down")  # "No"
    jack.pane.wait_for(lambda s: "→ No" in s, STEP_TIMEOUT)
    jack.pane.send_keys("Enter")
    jack.pane.wait_for("Blocked by user", STEP_TIMEOUT)
    assert marker.exists()  # the gate held the command back
    req, outcomes = jack.ring_until_request(
        lambda r: tell_text in r.text,
        time.monotonic() + STEP_TIMEOUT,
        after=first.seq,
        what="the tell",
    )
    assert not any(o.gate == "approval_prompt" for o in outcomes[1:])
    assert mail_block(req, tell_text).startswith(MAIL_HEAD)
    assert jack.unread() == []
    assert jack.receipt(told["message_id"]).via == "hook"
    assert doorbell.check_approval(jack.home, "Jack") is False  # the dialog is gone
    assert len(jack.notices("awaiting_approval")[before:]) == 1


# --------------------------------------------------------------------------------------
# 5. pi killed: one error notice (last: the module's crew is gone after it)
# --------------------------------------------------------------------------------------


def test_killing_pi_is_reported_once(jack: Jack):
    """Observed as a runner (the cockpit, ``captain wait``) observes it: tmux's pane-died
    hook, and the runner's probe, which holds a pidfd on the pane's process (the hook can
    wait for a SIGCHLD tmux lost: tests/runtime/test_crew_death.py)."""
    before = len(jack.notices("error"))
    probe = death_watch.Probe()
    try:
        probe.round(jack.home)  # now watching pi's process
        os.kill(pi_pid(jack.crew), signal.SIGKILL)
        deadline = time.monotonic() + STEP_TIMEOUT
        while len(jack.notices("error")) == before:
            if time.monotonic() >= deadline:
                raise AssertionError(
                    "no error notice for the killed pi; screen:\n" + jack.pane.capture()
                )
            probe.quick(jack.home)
            probe.round(jack.home)
            time.sleep(0.1)
        for _ in range(10):  # the hook, the probe and the rounds all had their chance
            probe.quick(jack.home)
            probe.round(jack.home)
            time.sleep(0.1)
    finally:
        probe.close()
    errors = jack.notices("error")[before:]
    assert len(errors) == 1, errors
    assert "killed by signal 9 (SIGKILL)" in errors[0].summary, errors[0].summary

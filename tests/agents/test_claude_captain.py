"""captain and the REAL Claude Code CLI: recruiting, the doorbell's gates, the hooks.

Each test recruits ``Jack`` through the real ``captain crew --agent claude`` into a tmux
server that runs inside a loopback-only network namespace (``support.claude.NetJail``) and
carries the offline Claude Code environment (``claude_env``: a throwaway HOME, the stand-in
API as ``ANTHROPIC_BASE_URL``). captain's window inherits that environment plus its own
``CAPTAIN_*`` and ``PATH``, and runs ``claude --settings <captain's hook settings>
<wake line>``, so every hook Claude Code runs is the real ``captain hook claude EVENT``
against the test's home. The doorbell is driven in-process (``doorbell.ring``), polled
the way a running ``captain wait`` retries it.

Assertions are on what the pane shows and on what the stand-in API receives, never on the
arguments captain sent. They skip, with the reason shown, when Claude Code, tmux or the
network namespace is not available.

What Claude Code 2.1.332 does with captain's hooks, as these tests rely on it:
- ``SessionStart`` / ``UserPromptSubmit`` ``additionalContext`` reaches the next request as
  a text block beginning ``"<Event> hook additional context: "``;
- a blocking ``Stop`` decision continues the turn, its reason reaching the next request in
  a block that begins ``"Stop hook blocking error from command: "``, and the pane shows
  the reason under "Ran 1 stop hook";
- Esc on a permission prompt interrupts the turn without running the Stop hook;
- while a permission prompt stands, the pending tool call's bullet blinks (the pane is
  never still for long).
"""

from __future__ import annotations

import json
import threading
import time
from pathlib import Path

import pytest
from support.agents import STEP, LiveCrew
from support.claude import (
    Request,
    Text,
    ToolUse,
    approve_permission_prompt,
    claude_available,
    composer_line,
    is_idle_composer,
    start_claude_crew,
)

from captain_tui.runtime import doorbell

STEP_TIMEOUT = STEP
RELEASE = 2.0  # a ring lands within this long after its gate clears (the bound)
TASK = "TASK-4417: tidy the docs under docs/ and keep the examples runnable"
WAKE = doorbell.WAKE_LINE


def _flat(text: str) -> str:
    return " ".join(text.replace("\xa0", " ").split())


# --------------------------------------------------------------------------------------
# The crew: Claude Code recruited by the real captain CLI into a jailed tmux server
# --------------------------------------------------------------------------------------


class Crew(LiveCrew):
    """The test's crew (``support.agents.LiveCrew``: what the tests do with it)."""

    def at_rest(self, outcome: doorbell.Outcome) -> bool:
        """The task mail is read, the stand-in has been quiet for a second and the
        composer is idle."""
        return not self.unread() and self.main_quiet() and is_idle_composer(self.pane.capture())

    def wakes_before(self, mark: int) -> int:
        """How many wake lines the conversation held as of the last request up to ``mark``."""
        earlier = [r for r in self.stand_in.main_requests if r.seq <= mark]
        return wakes(earlier[-1]) if earlier else 0


@pytest.fixture
def jack(tmp_path: Path, cli):
    reason = claude_available()
    if reason:
        pytest.skip(reason)
    # The tmux server lives in the jail and carries Claude Code's offline environment;
    # captain's window inherits it (plus CAPTAIN_* and PATH, which captain passes).
    with start_claude_crew(
        tmp_path, name="Jack", task=TASK, home_root=cli.home, project=cli.cwd
    ) as crew:
        yield Crew(crew)
        # Nothing may have tried to leave the machine through the proxy trap either.
        assert crew.stand_in.blocked == [], [f"{r.method} {r.path}" for r in crew.stand_in.blocked]


def hook_block(req: Request, needle: str) -> str:
    """The text block of ``req`` that carries ``needle`` (AssertionError if none)."""
    blocks = [t for t in req.texts() if needle in t]
    assert blocks, f"{needle!r} is in no message of request {req.seq}"
    return blocks[-1]


def wakes(req: Request) -> int:
    """How many times the conversation in ``req`` was prompted with the wake line."""
    return req.user_texts().count(WAKE)


def submitted_prompts(screen: str) -> list[str]:
    """The prompts the transcript shows as submitted (``❯ text`` lines above the
    composer box), flattened."""
    lines = screen.splitlines()
    box = composer_line(screen)
    out = []
    for line in lines:
        if line.lstrip().startswith("❯") and line != box:
            out.append(_flat(line.lstrip()[1:]))
    return out


# --------------------------------------------------------------------------------------
# 1. Recruit, ring, and the hook delivers the task
# --------------------------------------------------------------------------------------


def test_recruited_crew_is_woken_and_the_hook_delivers_its_task(jack: Crew):
    """Recruited, the crew must start on its task by itself: SessionStart alone starts no
    turn. captain starts Claude Code with the wake line as its first prompt; a doorbell
    retried by a wait (held by the launch grace meanwhile) must not ring it again."""
    pane, stand_in = jack.pane, jack.stand_in
    task_id = jack.crew.data["message_id"]

    # Retry the doorbell as a running `captain wait` would until the task reaches the
    # model.
    req, _ = jack.ring_until_request(
        lambda r: TASK in r.text, jack.crew.recruited_at + jack.grace + 5.0, what="the task"
    )

    # The stand-in: the turn was started by the wake line, and the task arrived as hook
    # context (never as typed text).
    assert wakes(req) == 1, req.user_texts()
    block = hook_block(req, TASK)
    assert (
        "SessionStart hook additional context" in block
        or "UserPromptSubmit hook additional context" in block
    ), block[:300]
    assert task_id in block
    # The pane: the wake line was submitted (it is in the transcript, not on the composer)
    # and the body never crossed the terminal.
    screen = pane.wait_for(lambda s: WAKE in submitted_prompts(s), STEP_TIMEOUT)
    assert not any(TASK in p for p in submitted_prompts(screen))
    assert WAKE not in _flat(composer_line(screen) or "")
    # Delivery is proven by the receipt, which the hook wrote ...
    assert jack.unread() == []
    receipt = jack.receipt(task_id)
    assert receipt is not None and receipt.via == "hook"
    # ... and a delivered task is never rung again, however long a wait keeps trying.
    jack.settle()
    assert doorbell.ring(jack.home, "Jack").action == "nothing"
    assert all(wakes(r) == 1 for r in stand_in.main_requests)
    assert submitted_prompts(pane.capture()).count(WAKE) == 1


# --------------------------------------------------------------------------------------
# 2. A human draft holds the ring; clearing it lets the ring land
# --------------------------------------------------------------------------------------


def test_human_draft_holds_the_ring_and_it_lands_once_the_draft_is_cleared(jack: Crew):
    pane, stand_in = jack.pane, jack.stand_in
    jack.settle()
    mark = stand_in.mark()
    prompts = submitted_prompts(pane.capture())
    draft = "half-written thought about the README"
    pane.send_literal(draft)
    pane.wait_for(lambda s: _flat(composer_line(s) or "") == f"❯ {draft}", STEP_TIMEOUT)

    tell_text = "TELL-2208: also update the changelog"
    # Its own ring does not type either, and it keeps holding while the draft stands
    # (about a second of retries) ...
    told = jack.tell_held(tell_text, "human_draft")
    status = jack.crew.cli("status", "--json")
    assert json.loads(status.stdout)["crew"][0]["doorbell"]["gate"] == "human_draft", status.stdout
    # ... the draft is untouched on screen (nothing appended, nothing submitted) ...
    screen = pane.capture()
    assert _flat(composer_line(screen) or "") == f"❯ {draft}", screen
    assert submitted_prompts(screen) == prompts, screen
    # ... and the model was asked nothing.
    assert jack.mains_after(mark) == []
    assert [m.text for m in jack.unread()] == [tell_text]

    # The person clears the draft: the held mail rings within RELEASE seconds.
    pane.send_keys("C-u")
    pane.wait_for(is_idle_composer, STEP_TIMEOUT)
    jack.rings_within(RELEASE, "ring after the clear")

    req = stand_in.wait_main(after=mark, timeout=STEP_TIMEOUT, containing=tell_text)
    assert wakes(req) == jack.wakes_before(mark) + 1  # the ring's wake line started it
    assert "UserPromptSubmit hook additional context" in hook_block(req, tell_text)
    assert all(draft not in r.text for r in jack.mains_after(mark))  # never submitted
    screen = pane.wait_for(lambda s: WAKE in submitted_prompts(s), STEP_TIMEOUT)
    assert not any(draft in p for p in submitted_prompts(screen))
    assert jack.unread() == []
    assert jack.receipt(told["message_id"]).via == "hook"


# --------------------------------------------------------------------------------------
# 3./4. The permission prompt holds the ring
# --------------------------------------------------------------------------------------


def _prompt_for_bash(jack: Crew, marker: Path) -> tuple[Request, str]:
    """A person asks; the model answers with a Bash call; the permission prompt shows.
    Returns the request that got the Bash call, and the screen with the prompt."""
    pane, stand_in = jack.pane, jack.stand_in
    stand_in.push(
        ToolUse("Bash", {"command": f"touch {marker.name}", "description": "Create a marker file"})
    )
    mark = stand_in.mark()
    pane.send_literal("make the marker")
    pane.wait_for(lambda s: "make the marker" in (composer_line(s) or ""), STEP_TIMEOUT)
    pane.send_enter()
    first = stand_in.wait_main(after=mark, timeout=STEP_TIMEOUT)
    screen = pane.wait_for("Do you want to proceed?", STEP_TIMEOUT)
    assert f"touch {marker.name}" in screen
    return first, screen


def _hold_at_the_prompt(
    jack: Crew, first: Request, prompt_screen: str, marker: Path, tell_text: str
) -> dict:
    """Tell while the prompt stands: the ring holds (approval_prompt) and types nothing."""
    # It keeps holding while the prompt stands. Claude Code blinks the pending tool call's
    # bullet (about every 0.6 s) under the prompt, so an attempt whose two quiescence
    # samples straddle a blink holds as not_quiescent before it reads the prompt.
    told = jack.tell_held(tell_text, "approval_prompt", or_gates=("not_quiescent",))
    screen = jack.pane.capture()
    assert "Do you want to proceed?" in screen, screen
    assert submitted_prompts(screen) == submitted_prompts(prompt_screen), screen
    assert composer_line(screen) is None  # the prompt still has the screen
    assert jack.mains_after(first.seq) == []  # nothing was answered or submitted
    assert not marker.exists()
    assert [m.text for m in jack.unread()] == [tell_text]
    return told


def test_permission_prompt_holds_the_ring_and_the_mail_arrives_after_approval(jack: Crew):
    pane, stand_in = jack.pane, jack.stand_in
    jack.settle()
    marker = jack.crew.project / "approved-marker"
    first, prompt_screen = _prompt_for_bash(jack, marker)
    tell_text = "TELL-3310: use the new config format"
    told = _hold_at_the_prompt(jack, first, prompt_screen, marker, tell_text)

    # The hooks told the captain's wait about it. Claude Code runs both PermissionRequest
    # ("permission prompt: Bash: touch ...") and Notification ("Claude needs your
    # permission"), in either order; whichever signals first raises the one notice.
    notice = jack.next_notice("awaiting_approval", STEP_TIMEOUT)
    assert notice.summary.startswith("Jack: ") and "permission" in notice.summary.lower(), (
        notice.summary
    )

    # The person approves; the tool runs and the turn goes on.
    approve_permission_prompt(pane, stand_in, after=first.seq, timeout=STEP_TIMEOUT)
    assert marker.exists()
    # A wait keeps retrying the doorbell; the mail reaches the model either through the
    # ring (wake line -> UserPromptSubmit) or, when the turn ends first, through the Stop
    # hook (which blocks while mail is unread). Whichever: once, as hook output.
    req, outcomes = jack.ring_until_request(
        lambda r: tell_text in r.text,
        time.monotonic() + STEP_TIMEOUT,
        after=first.seq,
        what="the tell",
    )
    assert all(o.gate != "approval_prompt" for o in outcomes)  # the prompt is gone
    block = hook_block(req, tell_text)
    assert "UserPromptSubmit hook additional context" in block or "Stop hook" in block, block[:300]
    assert jack.unread() == []
    assert jack.receipt(told["message_id"]).via == "hook"
    screen = pane.capture()
    assert not any(tell_text in p for p in submitted_prompts(screen))  # never typed


def test_declined_permission_prompt_releases_the_ring_and_it_lands(jack: Crew):
    pane, stand_in = jack.pane, jack.stand_in
    jack.settle()
    marker = jack.crew.project / "declined-marker"
    first, prompt_screen = _prompt_for_bash(jack, marker)
    tell_text = "TELL-4471: do not touch files outside docs/"
    told = _hold_at_the_prompt(jack, first, prompt_screen, marker, tell_text)

    # The person declines (Esc): the turn is interrupted and no Stop hook runs, so only
    # the doorbell can deliver the mail now.
    pane.send_keys("Escape")
    screen = pane.wait_for(is_idle_composer, STEP_TIMEOUT)
    assert "Do you want to proceed?" not in screen
    jack.rings_within(RELEASE, "ring after the prompt")

    req = stand_in.wait_main(after=first.seq, timeout=STEP_TIMEOUT, containing=tell_text)
    assert wakes(req) == wakes(first) + 1  # the ring's wake line started this turn
    assert "UserPromptSubmit hook additional context" in hook_block(req, tell_text)
    assert not marker.exists()  # the ring's Enter never answered the prompt
    pane.wait_for(lambda s: WAKE in submitted_prompts(s), STEP_TIMEOUT)
    assert jack.unread() == []
    assert jack.receipt(told["message_id"]).via == "hook"


# --------------------------------------------------------------------------------------
# 5. The Stop hook blocks while mail is unread
# --------------------------------------------------------------------------------------


def test_stop_hook_delivers_mail_that_arrived_mid_turn(jack: Crew):
    """No waiter runs: mail told while Claude is mid-turn is delivered at the end of that
    turn by the Stop hook, which blocks the stop with the mail as its reason."""
    pane, stand_in = jack.pane, jack.stand_in
    jack.settle()
    release = threading.Event()
    stand_in.push(Text("working on the docs", hold=release))
    mark = stand_in.mark()
    try:
        pane.send_literal("start on the docs")
        pane.wait_for(lambda s: "start on the docs" in (composer_line(s) or ""), STEP_TIMEOUT)
        pane.send_enter()
        turn = stand_in.wait_main(after=mark, timeout=STEP_TIMEOUT)
        pane.wait_for("esc to interrupt", STEP_TIMEOUT)  # mid-turn on screen
        tell_text = "TELL-5123: the examples must stay runnable"
        told = jack.tell(tell_text)
        assert told["doorbell"]["action"] == "held", told  # typed nothing into a busy pane
    finally:
        release.set()
    req = stand_in.wait_main(after=turn.seq, timeout=STEP_TIMEOUT, containing=tell_text)
    block = hook_block(req, tell_text)
    assert "Stop hook" in block, block[:300]
    assert wakes(req) == wakes(turn)  # no ring was involved
    assert jack.unread() == []
    assert jack.receipt(told["message_id"]).via == "hook"
    # The pane shows the stop hook's reason (the mail), and the turn then ends.
    screen = pane.wait_for(lambda s: tell_text in s and is_idle_composer(s), STEP_TIMEOUT)
    assert "stop hook" in screen.lower()
    assert submitted_prompts(screen)[-1] == "start on the docs"  # no wake line after it

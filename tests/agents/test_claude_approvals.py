"""Approvals with the REAL Claude Code (docs/approvals.md): a Bash call held by captain's
``PermissionRequest`` hook is allowed from the CLI (``captain approve --allow``: the tool
runs, nobody touches the pane) and from the cockpit (``y`` on its row in Approvals, the
cockpit driven in-process by the Pilot), denied with a reason the model receives (the stand-in sees
it in the next request's tool result), and, left undecided, handed to Claude Code's own
prompt once ``[crew] approval_timeout`` has passed (Claude Code 2.1.332 draws its prompt
while the hook runs; the hook's answer takes it away). One crew for the three, in a
loopback-only jail against the stand-in API, as tests/agents/test_claude_captain.py.
"""

from __future__ import annotations

import json
import time
from pathlib import Path

import pytest
from support.agents import STEP
from support.claude import ToolUse, claude_available, composer_line, start_claude_crew
from support.cockpit import decide_in_cockpit
from test_claude_captain import Crew

from state.crew import approvals

pytestmark = pytest.mark.usefixtures("plain_terminal", "private_config")  # the cockpit's

HOLD = 6.0  # [crew] approval_timeout for this crew: time enough to decide under load


@pytest.fixture
def jack(tmp_path: Path, cli):
    reason = claude_available()
    if reason:
        pytest.skip(reason)
    with start_claude_crew(
        tmp_path,
        name="Jack",
        task="TASK-5120: run the marker tools you are asked to run",
        home_root=cli.home,
        project=cli.cwd,
        approval_timeout=HOLD,
    ) as crew:
        yield Crew(crew)
        assert crew.stand_in.blocked == []


def ask_for_bash(jack: Crew, command: str) -> int:
    """The person asks; the model answers with a Bash call; returns the stand-in's mark."""
    jack.stand_in.push(ToolUse("Bash", {"command": command, "description": "Run it"}))
    mark = jack.stand_in.mark()
    jack.pane.send_literal(f"please run {command}")
    jack.pane.wait_for(lambda s: "please run" in (composer_line(s) or ""), STEP)
    jack.pane.send_enter()
    return jack.stand_in.wait_main(after=mark, timeout=STEP).seq


def the_request(jack: Crew, command: str) -> str:
    end = time.monotonic() + STEP
    while time.monotonic() < end:
        for o in approvals.open_requests(jack.home, "Jack"):
            if command in o.request.excerpt:
                return o.request.request_id
        time.sleep(0.05)
    raise AssertionError(f"no open request for {command!r}; screen:\n{jack.pane.capture()}")


def decide(jack: Crew, rid: str, *flags: str) -> dict:
    r = jack.crew.cli("approve", "Jack", rid, *flags, "--json")
    assert r.returncode == 0, r.stdout + r.stderr
    return json.loads(r.stdout)


def tool_result(jack: Crew, after: int) -> str:
    return jack.stand_in.wait_main(after=after, timeout=STEP).last_user_text()


def test_held_bash_is_allowed_denied_with_a_reason_and_else_left_to_its_prompt(jack: Crew):
    jack.settle()
    project = jack.crew.project

    # 1. allowed from the CLI: the tool runs, and no key was pressed in the pane
    asked = ask_for_bash(jack, "touch allowed-marker")
    rid = the_request(jack, "touch allowed-marker")
    assert decide(jack, rid, "--allow")["decision"] == "allow"
    tool_result(jack, asked)
    assert (project / "allowed-marker").exists()
    jack.pane.wait_for(lambda s: "Do you want to proceed?" not in s, STEP)  # answered

    # 1b. allowed from the cockpit (y on its row in Approvals): the same, through the panel
    asked = ask_for_bash(jack, "touch cockpit-marker")
    rid = the_request(jack, "touch cockpit-marker")
    assert not (project / "cockpit-marker").exists()  # held, not run
    shown = decide_in_cockpit(jack.home, rid, "y")
    assert any("Allowed Jack to run Bash" in t for t in shown), shown
    tool_result(jack, asked)
    assert (project / "cockpit-marker").exists()
    jack.pane.wait_for(lambda s: "Do you want to proceed?" not in s, STEP)  # answered

    # 2. denied with a reason: the model is told it, and the tool never ran
    asked = ask_for_bash(jack, "touch denied-marker")
    rid = the_request(jack, "touch denied-marker")
    decide(jack, rid, "--deny", "--reason", "REASON-7781: markers stay out of the project")
    assert "REASON-7781" in tool_result(jack, asked)
    assert not (project / "denied-marker").exists()

    # 3. undecided: after the hold, Claude Code's own prompt takes it, and a late decision
    # changes nothing
    ask_for_bash(jack, "touch undecided-marker")
    rid = the_request(jack, "touch undecided-marker")
    end = time.monotonic() + HOLD + STEP
    while any(o.request.request_id == rid for o in approvals.open_requests(jack.home)):
        assert time.monotonic() < end, "the hook never let the request go"
        time.sleep(0.1)
    time.sleep(1.0)  # the prompt stays after the hook let go: nothing answered it
    assert "Do you want to proceed?" in jack.pane.capture()
    r = jack.crew.cli("approve", "Jack", rid, "--allow", "--json")
    assert r.returncode == 1 and json.loads(r.stdout)["error"]["code"] == "approval_closed"
    assert not (project / "undecided-marker").exists()
    jack.pane.send_keys("Escape")

    work = jack.crew.cli("work", "show", "wrk_" + jack.crew.assignment.split("_", 1)[1], "--json")
    ends = [
        e["decision"]
        for e in json.loads(work.stdout)["item"]["events"]
        if e["type"] == "approval_decided"
    ]
    assert ends == ["allow", "allow", "deny", "expired", "late"]

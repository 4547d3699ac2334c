"""Approvals with the REAL pi (docs/approvals.md): pi asks about nothing itself, so captain's
extension holds only the tools ``[crew] pi_approval_tools`` names (here ``bash``). A held
``bash`` call is allowed from the CLI (the command runs, no key pressed in the pane),
denied with a reason the model receives (through the use case ``captain approve`` runs;
the stand-in sees it in the next request's tool result), and, left undecided, handed to
pi's own confirm dialog in the pane once ``[crew] approval_timeout`` has passed (never run
meanwhile; a late decision changes nothing; the person's Yes runs it). "Allow for this
session" from the cockpit's Approvals panel (``Y``) lets the extension run the tool's later
calls unasked. An ungated tool (``read``) is never held. One crew for all of it, in a
loopback-only jail against the stand-in Messages API, as tests/agents/test_pi_captain.py.
"""

from __future__ import annotations

import time

import pytest
from support.agents import STEP
from support.claude import ToolUse
from support.cockpit import Cockpit, drive, focus_panel, toasts, until
from support.crew import refused
from support.pi import pi_available, start_pi_crew
from test_pi_captain import Jack

from captain_tui import usecases
from captain_tui.runtime.pane_reader import read_screen
from state.crew import approvals
from state.work import ledger

pytestmark = pytest.mark.usefixtures("plain_terminal", "private_config")

HOLD = 5.0  # [crew] approval_timeout for this crew: time enough to decide under load
DIALOG = "Allow bash? (the captain did not answer)"


@pytest.fixture
def jack(tmp_path):
    reason = pi_available()
    if reason:
        pytest.skip(reason)
    with start_pi_crew(
        tmp_path,
        name="Jack",
        task="TASK-6120: run the marker tools you are asked to run",
        default_text="Done. (pi stand-in reply 6121)",
        approval_timeout=HOLD,
        approval_tools=["bash"],
    ) as crew:
        yield Jack(crew)
        assert crew.stand_in.blocked == []


def idle(s) -> bool:
    return not s.approval and s.composer_readable and s.draft == "" and not s.working


def ask(jack: Jack, call: ToolUse, prompt: str) -> int:
    """The person asks; the model answers with ``call``; returns that request's seq."""
    jack.wait_screen(idle, "the turn over, the editor empty")
    jack.stand_in.push(call)
    mark = jack.stand_in.mark()
    jack.pane.send_literal(prompt)
    jack.wait_screen(lambda s: s.draft == prompt, "the prompt typed")
    jack.pane.send_enter()
    return jack.stand_in.wait_main(after=mark, timeout=STEP).seq


def bash(jack: Jack, command: str) -> int:
    return ask(jack, ToolUse("bash", {"command": command}), f"please run {command}")


def request_for(jack: Jack, command: str) -> str:
    end = time.monotonic() + STEP
    while time.monotonic() < end:
        for o in approvals.open_requests(jack.home, "Jack"):
            if command in o.request.excerpt:
                return o.request.request_id
        time.sleep(0.05)
    raise AssertionError(f"no open request for {command!r}; screen:\n{jack.pane.capture()}")


def tool_result(jack: Jack, after: int) -> str:
    """The tool's result, as the model receives it in the next request."""
    return jack.stand_in.wait_main(after=after, timeout=STEP).last_user_text()


def requested(jack: Jack) -> int:
    work_id = ledger.work_id_for_assignment(jack.assignment)
    return sum(e.type == "approval_requested" for e in ledger.events(jack.home, work_id))


def test_a_gated_call_is_held_for_the_captain_and_else_left_to_pis_own_dialog(jack: Jack):
    project = jack.crew.project
    # The first turn (pi's wake-line prompt, the task with it) reached the model; then it is
    # over. (Settling alone can see an idle editor in the moment between the extension's
    # hook taking the mail and pi sending it: a slow start would take the first tool call.)
    jack.stand_in.wait_main(timeout=jack.grace + 2 * STEP, containing="TASK-6120")
    jack.settle()

    # 0. an ungated tool runs as without captain: no request, nothing held
    (project / "notes.txt").write_text("NOTES-4410\n")
    asked = ask(jack, ToolUse("read", {"path": "notes.txt"}), "read the notes")
    assert "NOTES-4410" in tool_result(jack, asked)
    assert requested(jack) == 0

    # 1. allowed from the CLI: the command runs, and no key was pressed in the pane
    asked = bash(jack, "touch allowed-marker")
    rid = request_for(jack, "touch allowed-marker")
    (held,) = approvals.open_requests(jack.home, "Jack")
    assert held.request.agent == "pi" and held.request.tool == "bash"
    assert not (project / "allowed-marker").exists()  # held, not run
    r = jack.crew.cli("approve", "Jack", rid, "--allow", "--json")
    assert r.returncode == 0, r.stdout + r.stderr
    tool_result(jack, asked)
    assert (project / "allowed-marker").exists()

    # 2. denied with a reason: the model reads it as the call's result; nothing ran
    asked = bash(jack, "touch denied-marker")
    rid = request_for(jack, "touch denied-marker")
    usecases.approve(jack.home, "Jack", rid, "deny", "REASON-7781: not here")  # as the CLI
    assert "The captain denied this: REASON-7781: not here" in tool_result(jack, asked)
    assert not (project / "denied-marker").exists()

    # 3. undecided: after the hold, pi's own confirm dialog asks the person in the pane;
    # waiting never allowed it, and a late decision changes nothing
    asked = bash(jack, "touch undecided-marker")
    rid = request_for(jack, "touch undecided-marker")
    end = time.monotonic() + HOLD + STEP
    while any(o.request.request_id == rid for o in approvals.open_requests(jack.home)):
        assert time.monotonic() < end, "the hook never let the request go"
        time.sleep(0.1)
    screen = jack.pane.wait_for(DIALOG, STEP)
    assert "touch undecided-marker" in screen
    assert read_screen(jack.pane.capture(ansi=True), "pi").approval  # the doorbell holds
    refused("approval_closed", usecases.approve, jack.home, "Jack", rid, "allow")
    assert not (project / "undecided-marker").exists()
    assert jack.mains_after(asked) == []  # nothing answered, nothing sent
    jack.pane.send_keys("Enter")  # the person's "Yes"
    tool_result(jack, asked)
    assert (project / "undecided-marker").exists()

    # 4. allowed for the session from the cockpit (Y): this call runs, and so do bash's
    # later calls in this pi session, unasked
    asked = bash(jack, "touch session-marker")
    request_for(jack, "touch session-marker")
    app = Cockpit(jack.home, run_doorbell=False)

    async def scenario(pilot):
        await until(pilot, lambda: app.view.approvals(), what="the request in Approvals")
        await focus_panel(pilot, "approvals")
        await pilot.press("Y")
        await until(pilot, lambda: not app.view.approvals(), what="the request to leave")
        assert any("for the rest of its session" in t for t in toasts(app)), toasts(app)

    drive(app, scenario)
    tool_result(jack, asked)
    assert (project / "session-marker").exists()
    before = requested(jack)
    asked = bash(jack, "touch unasked-marker")
    tool_result(jack, asked)
    assert (project / "unasked-marker").exists()
    assert requested(jack) == before  # not held again

    work_id = ledger.work_id_for_assignment(jack.assignment)
    ends = [e.decision for e in ledger.events(jack.home, work_id) if e.type == "approval_decided"]
    assert ends == ["allow", "deny", "expired", "late", "allow_session"]

"""Approvals with the REAL Codex (docs/approvals.md): a shell call held by captain's
``PermissionRequest`` hook is allowed from the CLI (the command runs, no key pressed in the
pane) and from the cockpit (``y`` on its row in Approvals, the cockpit driven in-process by
the Pilot), denied with a reason the model receives (the stand-in sees it in the next request's
tool output), and, left undecided, handed to Codex's own prompt once ``[crew]
approval_timeout`` has passed. One crew for the three, in a loopback-only jail against the
stand-in Responses API, as tests/agents/test_codex_captain.py.
"""

from __future__ import annotations

import json
import time

import pytest
from support.agents import STEP
from support.cockpit import decide_in_cockpit
from support.codex import Shell, codex_available, start_codex_crew
from test_codex_captain import PROMPT, Jack

from captain_tui.runtime.pane_reader import read_screen
from state.crew import approvals

pytestmark = pytest.mark.usefixtures("plain_terminal", "private_config")  # the cockpit's

HOLD = 6.0


@pytest.fixture
def jack(tmp_path):
    reason = codex_available()
    if reason:
        pytest.skip(reason)
    crew = start_codex_crew(tmp_path, name="Jack", approval_timeout=HOLD)
    try:
        yield Jack(crew)
    finally:
        crew.close()


def ask(jack: Jack, command: str) -> int:
    jack.stand_in.push(Shell(command))
    mark = jack.stand_in.mark()
    jack.pane.send_literal(f"please run {command}")
    jack.pane.wait_for(lambda s: read_screen(s, "codex").draft == f"please run {command}", STEP)
    jack.pane.send_enter()
    return jack.stand_in.wait_main(after=mark, timeout=STEP).seq


def request_for(jack: Jack, command: str) -> str:
    end = time.monotonic() + STEP
    while time.monotonic() < end:
        for o in approvals.open_requests(jack.home, "Jack"):
            if command in o.request.excerpt:
                return o.request.request_id
        time.sleep(0.05)
    raise AssertionError(f"no open request for {command!r}; screen:\n{jack.pane.capture()}")


def output_after(jack: Jack, seq: int):
    return jack.stand_in.wait_for(
        lambda r: r.kind == "main" and r.has_output, timeout=STEP, after=seq
    )


def test_held_shell_call_is_allowed_denied_with_a_reason_and_else_left_to_its_prompt(jack: Jack):
    jack.settle()
    project = jack.crew.project

    asked = ask(jack, "touch allowed-marker")
    rid = request_for(jack, "touch allowed-marker")
    r = jack.crew.cli("approve", "Jack", rid, "--allow", "--json")
    assert r.returncode == 0, r.stdout + r.stderr
    output_after(jack, asked)
    assert (project / "allowed-marker").exists()
    r = jack.crew.cli("approve", "Jack", rid, "--allow-session", "--json")  # decided once
    assert json.loads(r.stdout)["error"]["code"] in ("approval_decided", "invalid_argument")
    jack.settle()

    # allowed from the cockpit (y on its row in Approvals): the same, through the panel
    asked = ask(jack, "touch cockpit-marker")
    rid = request_for(jack, "touch cockpit-marker")
    assert not (project / "cockpit-marker").exists()  # held, not run
    shown = decide_in_cockpit(jack.home, rid, "y")
    assert any("Allowed Jack to run" in t for t in shown), shown
    output_after(jack, asked)
    assert (project / "cockpit-marker").exists()
    jack.settle()

    asked = ask(jack, "touch denied-marker")
    rid = request_for(jack, "touch denied-marker")
    r = jack.crew.cli("approve", "Jack", rid, "--deny", "--reason", "REASON-7781: not here")
    assert r.returncode == 0, r.stdout + r.stderr
    assert "REASON-7781" in output_after(jack, asked).text
    assert not (project / "denied-marker").exists()
    jack.settle()

    ask(jack, "touch undecided-marker")
    rid = request_for(jack, "touch undecided-marker")
    end = time.monotonic() + HOLD + STEP
    while any(o.request.request_id == rid for o in approvals.open_requests(jack.home)):
        assert time.monotonic() < end, "the hook never let the request go"
        time.sleep(0.1)
    jack.pane.wait_for(PROMPT, STEP)  # Codex's own prompt, for a person to answer
    assert not (project / "undecided-marker").exists()
    jack.pane.send_keys("Escape")

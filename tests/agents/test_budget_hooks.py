"""The budget's gates through the real hook handlers (``run_hook`` in this process, real
home, real transcripts on disk; docs/budgets.md): Claude Code's and Codex's ``PreToolUse``
and pi's ``tool_call`` measure the spend from the file the agent names and refuse a tool
call once it reaches the budget, in each agent's own answer; Claude Code's Stop lets a
held crew stop; ``tell --budget-usd`` releases it; a transcript that is garbage, missing,
a directory or repeats its turns neither breaks the gate nor inflates the figure.
"""

from __future__ import annotations

import io
import json
import threading
import time
from datetime import datetime
from pathlib import Path

import pytest
from support.cli import invoke
from support.crew import hire

from captain_tui.agents.hooks import run_hook
from state.clock import now
from state.crew import mailbox, notify, protocol, spend
from state.home import Home

# a priced model (state/crew/spend.py's table): $3 per million input tokens
MODEL = "claude-sonnet-4-5"


def turn(message_id: str, input_tokens: int, model: str = MODEL) -> str:
    """One assistant line of a Claude Code transcript."""
    return json.dumps(
        {
            "type": "assistant",
            "message": {
                "id": message_id,
                "model": model,
                "usage": {"input_tokens": input_tokens, "output_tokens": 0},
            },
        }
    )


def pi_turn(entry_id: str, input_tokens: int) -> str:
    """One assistant message entry of pi's session file."""
    return json.dumps(
        {
            "type": "message",
            "id": entry_id,
            "message": {
                "role": "assistant",
                "model": MODEL,
                "usage": {"input": input_tokens, "output": 0, "cacheRead": 0, "cacheWrite": 0},
            },
        }
    )


class Gate:
    def __init__(self, env: dict[str, str], source: Path) -> None:
        self.env, self.source = env, source

    def __call__(self, agent: str = "claude", event: str = "PreToolUse", **fields) -> str:
        data = {"hook_event_name": event, "tool_name": "Bash", **fields}
        if agent == "pi":
            data.setdefault("session_file", str(self.source))
        else:
            data.setdefault("transcript_path", str(self.source))
        out = io.StringIO()
        assert run_hook(agent, event, None, io.StringIO(json.dumps(data)), out, self.env) == 0
        return out.getvalue()

    def add(self, *lines: str) -> None:
        with self.source.open("a") as f:
            f.write("".join(line + "\n" for line in lines))


def denied(out: str) -> str:
    """Exactly the PreToolUse refusal Claude Code and Codex 0.169 take; returns the reason."""
    payload = json.loads(out)
    assert set(payload) == {"hookSpecificOutput"}, payload
    inner = payload["hookSpecificOutput"]
    assert set(inner) == {"hookEventName", "permissionDecision", "permissionDecisionReason"}
    assert inner["hookEventName"] == "PreToolUse" and inner["permissionDecision"] == "deny"
    assert inner["permissionDecisionReason"].strip()
    return inner["permissionDecisionReason"]


def statuses(home: Home) -> list[str]:
    return [
        n.status
        for n in sorted(mailbox.notifications(home, "jack"), key=lambda n: n.created_at)
        if n.status != "idle"
    ]


@pytest.fixture
def jack(home: Home, project: Path):
    return hire(home, project, "Jack", "Write the docs", budget_usd=1.0)


@pytest.fixture
def gate(jack, tmp_path: Path) -> Gate:
    return Gate(dict(jack.env), tmp_path / "transcript.jsonl")


def test_claude_code_is_refused_at_the_budget_and_released_when_it_is_raised(
    home: Home, jack, gate: Gate
):
    gate.add(turn("m1", 100_000))  # $0.30
    assert gate() == ""
    gate.add(turn("m2", 170_000))  # $0.81: the captain is told, the call runs
    assert gate() == ""
    assert statuses(home) == ["working"]
    gate.add(turn("m3", 100_000))  # $1.11
    reason = denied(gate())
    assert "budget" in reason and jack.assignment_id in reason and "$1.11 spent" in reason
    assert denied(gate()) == reason  # every call after it: refused, said once
    assert statuses(home) == ["working", "held"]
    assert protocol.crew_state(home, "jack") == "held"

    # held, the crew may stop (it is sent back to work otherwise)
    protocol.inbox(home, "Jack", deliver=lambda b: None, ctx=_ctx(jack))
    assert gate("claude", "Stop", stop_hook_active=False) == ""

    code, told, _ = invoke(
        "tell",
        "Jack",
        "--assignment",
        jack.assignment_id,
        "--budget-usd",
        "5",
        "--home",
        str(home.root),
        "--json",
    )
    assert code == 0 and told["budget_usd"] == 5.0, told
    assert protocol.crew_state(home, "jack") == "assigned"  # the held notice is settled
    assert gate() == ""  # released: the next tool call runs
    stop = json.loads(gate("claude", "Stop", stop_hook_active=False))
    assert stop["decision"] == "block"  # no longer held: an unfinished crew keeps working


def test_codex_pre_tool_use_answers_the_same_refusal(home: Home, jack, gate: Gate):
    # Codex's own session record is read by its reader; here the spend is already measured
    # (a Claude-shaped transcript through the claude hook), and Codex's gate refuses on it
    gate.add(turn("m1", 400_000))  # $1.20
    denied(gate("claude"))
    reason = denied(gate("codex", transcript_path=str(gate.source.with_name("none.jsonl"))))
    assert "budget" in reason


def test_pi_tool_call_blocks_with_a_reason(home: Home, jack, tmp_path: Path):
    pi = Gate(dict(jack.env), tmp_path / "session.jsonl")
    pi.add(pi_turn("e1", 100_000))
    assert pi("pi", "budget") == ""
    pi.add(pi_turn("e2", 300_000))  # $1.20
    answer = json.loads(pi("pi", "budget"))
    assert set(answer) == {"block", "reason"} and answer["block"] is True
    assert "budget" in answer["reason"] and jack.assignment_id in answer["reason"]
    assert statuses(home) == ["held"]  # from 30 % to 120 % in one turn: held, nothing else


def test_a_crew_with_no_budget_is_never_refused(home: Home, project: Path, tmp_path: Path):
    kim = hire(home, project, "Kim", "Anything")
    gate = Gate(dict(kim.env), tmp_path / "t.jsonl")
    gate.add(turn("m1", 10**9))
    assert gate() == "" and gate("pi", "budget") == ""
    assert [n.status for n in mailbox.notifications(home, "kim")] == []


@pytest.mark.parametrize(
    "hostile",
    [
        "garbage",
        "truncated",
        "repeated",
        "missing",
        "directory",
        "unpriced",
    ],
)
def test_a_hostile_transcript_neither_breaks_the_gate_nor_inflates_it(
    home: Home, jack, gate: Gate, hostile: str
):
    gate.add(turn("m1", 200_000))  # $0.60
    if hostile == "garbage":
        gate.add("\x00\xff not json", "[1, 2]", '{"type": "assistant", "message": 5}')
    elif hostile == "truncated":
        gate.add(turn("m2", 10**9)[:-3])  # a huge turn cut mid-line: not counted
    elif hostile == "repeated":
        gate.add(*[turn("m1", 200_000)] * 5)  # the same turn again: counted once
    elif hostile == "missing":
        gate.source = gate.source.with_name("gone.jsonl")
    elif hostile == "directory":
        gate.source = gate.source.parent
    elif hostile == "unpriced":
        gate.add(turn("m9", 10**9, model="model-with-no-price"))
    out = gate()
    assert out == "", out  # never refused on what it could not count
    if hostile == "unpriced":
        (told,) = [n for n in mailbox.notifications(home, "jack") if n.status == "working"]
        assert "cannot be enforced" in told.summary and "model-with-no-price" in told.summary
    else:
        assert statuses(home) == []
    assert notify.wait(home, "Jack", timeout=0) is None or hostile == "unpriced"


def _ctx(recruit):
    from state.crew.guards import Context

    return Context.from_env(recruit.env)


@pytest.mark.parametrize("planted", ["marker symlink", "marker garbage", "folder symlink"])
def test_something_planted_where_the_notice_is_claimed_never_lets_a_call_through(
    home: Home, jack, gate: Gate, tmp_path: Path, planted: str
):
    """A crew process can write the home: whatever it leaves where the held notice's claim
    goes, the call past the budget is still refused (the notice is what may be lost)."""
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    folder = home.root / "budget" / "jack"
    folder.parent.mkdir(exist_ok=True)
    if planted == "folder symlink":
        folder.symlink_to(elsewhere)  # the store never follows it: store_error
    else:
        folder.mkdir()
        marker = folder / f"{jack.assignment_id}.held.1.000000.json"
        if planted == "marker symlink":
            (elsewhere / "x.json").write_text('{"delivery_id": "dlv_X"}')
            marker.symlink_to(elsewhere / "x.json")
        else:
            marker.write_bytes(b"\x00not json")
    gate.add(turn("m1", 400_000))  # $1.20
    assert "budget" in denied(gate())
    assert "budget" in denied(gate())
    assert sorted(p.name for p in elsewhere.iterdir()) == (
        ["x.json"] if planted == "marker symlink" else []
    )  # nothing written through a link


def stamped(line: str, at: datetime) -> str:
    """A transcript line as the agent stamps it (Claude Code, Codex and pi each write an
    ISO ``timestamp`` on every line/entry)."""
    return json.dumps({**json.loads(line), "timestamp": at.isoformat().replace("+00:00", "Z")})


def test_the_last_turn_of_an_assignment_is_never_charged_to_the_next(home: Home, jack, gate):
    """Two assignments in a row: the crew said ``done`` mid-turn, the captain assigned the
    next (with its own budget) before that turn's last model call was measured. That call
    belongs to the assignment it was made for: the next one starts at nothing, and its
    budget is not reached by spend made before it began."""
    first = jack.assignment_id
    gate.add(stamped(turn("m1", 100_000), now()))  # $0.30 on the first
    assert gate() == ""
    protocol.inbox(home, "Jack", deliver=lambda b: None, ctx=_ctx(jack))
    protocol.done(home, "Jack", "wrote them", ctx=_ctx(jack))
    gate.add(stamped(turn("m2", 200_000), now()))  # $0.60: the turn after done, unmeasured
    notify.acknowledge(home, "Jack", notify.wait(home, "Jack", timeout=0).delivery_id)
    second = protocol.assign(
        home, "Jack", "Now the tutorial", handoff=first, budget_usd=0.5
    ).assignment_id
    # the next tool call (the pane's env still names the first: the hook follows the crew)
    assert gate() == ""  # $0.60 of the first's is not the second's: under its $0.50
    assert spend.assignment_spend(home, "jack", first).input_tokens == 300_000
    assert spend.assignment_spend(home, "jack", second).turns == 0
    gate.add(stamped(turn("m3", 100_000), now()))  # $0.30 on the second
    assert gate() == ""
    assert spend.assignment_spend(home, "jack", second).input_tokens == 100_000
    assert spend.assignment_spend(home, "jack", first).input_tokens == 300_000


def test_a_crew_dismissed_mid_turn_has_its_last_turn_counted(home: Home, jack, gate: Gate):
    """Dismissed mid-turn, the crew's Stop hook never runs: what its agent recorded after
    the last hook is read from the transcripts its hooks named once its pane is closed, and
    put on its attempt (the ledger) and its figure (status)."""
    from state.work import ledger

    gate.add(turn("m1", 100_000))
    assert gate() == ""  # the hooks have named the transcript
    gate.add(turn("m2", 200_000))  # the turn in flight: no hook measures it
    code, _, err = invoke("dismiss", "Jack", "--home", str(home.root), "--json")
    assert code == 0, err
    assert spend.assignment_spend(home, "jack", jack.assignment_id).input_tokens == 300_000
    attempt = ledger.get(home, jack.work_id).attempts[-1]
    assert (attempt.input_tokens, attempt.turns) == (300_000, 2)


def test_the_gate_waits_for_the_answer_that_asked_for_the_call(home: Home, jack, gate: Gate):
    """Claude Code may run PreToolUse before the answer that asked for the call is in its
    transcript (seen under load in the live test): the gate waits, bounded, until the
    call's ``tool_use_id`` is there, so the answer that crosses the budget is counted and
    its call refused (it ran: the spend was measured without it)."""
    gate.add(turn("m1", 300_000))  # $0.90
    assert gate(tool_use_id="toolu_01") == ""
    crossing = json.loads(turn("m2", 100_000))  # $1.20 with it
    crossing["message"]["content"] = [{"type": "tool_use", "id": "toolu_02", "name": "Bash"}]

    def later() -> None:
        time.sleep(0.3)
        gate.add(json.dumps(crossing))

    writer = threading.Thread(target=later)
    writer.start()
    try:
        reason = denied(gate(tool_use_id="toolu_02"))
    finally:
        writer.join()
    assert "budget" in reason and "$1.20 spent" in reason

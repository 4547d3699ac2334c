"""The budget's gate before every tool call when the crew has no budget
(``state.crew_side.gate``, which ``captain hook AGENT PreToolUse`` asks before importing
anything else): it says "nothing to do" only when it is sure from the crew's events listing
and snapshot, and in every other case the full gate (``captain_tui.agents.hooks``) decides,
so a budget set later by ``tell --budget-usd`` is enforced from the next tool call on.
Real homes, real files, the real entry point (``main``) in this process.
"""

from __future__ import annotations

import io
import json
import os
import shutil
import sys
from pathlib import Path

import pytest
from support.crew import hire

from captain_tui.agents import hooks
from captain_tui.cli.main import main
from state.crew import crewlog, protocol
from state.crew_side import gate
from state.home import Home

MODEL = "claude-sonnet-4-5"  # priced: $3 per million input tokens


def run_gate(monkeypatch, capsys, env: dict[str, str], data: dict, agent: str = "claude"):
    """``captain hook AGENT PreToolUse`` (pi: ``budget``) through ``main``, as the agent runs
    it: the crew's environment only, the hook JSON on stdin. Returns (exit code, stdout)."""
    for key in [k for k in os.environ if k.startswith("CAPTAIN_")]:
        monkeypatch.delenv(key)
    for key, value in env.items():
        monkeypatch.setenv(key, value)
    raw = io.BytesIO(json.dumps(data).encode())
    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(raw, encoding="utf-8"))
    code = main(["hook", agent, "budget" if agent == "pi" else "PreToolUse"])
    out = capsys.readouterr().out
    assert raw.tell() == len(raw.getvalue()), "the agent's stdin was not read"
    return code, out


def spend(path: Path, message_id: str, input_tokens: int) -> None:
    line = {
        "type": "assistant",
        "message": {
            "id": message_id,
            "model": MODEL,
            "usage": {"input_tokens": input_tokens, "output_tokens": 0},
        },
    }
    with path.open("a") as f:
        f.write(json.dumps(line) + "\n")


def test_no_budget_says_nothing_and_a_budget_set_later_refuses_from_the_next_call(
    home: Home, project: Path, tmp_path: Path, monkeypatch, capsys
):
    jack = hire(home, project, "Jack", "Write the docs")
    transcript = tmp_path / "t.jsonl"
    spend(transcript, "m1", 1_000_000)  # $3.00 spent already
    data = {"hook_event_name": "PreToolUse", "tool_name": "Bash"}
    data["transcript_path"] = str(transcript)
    assert gate.unbudgeted(jack.env) is True
    assert run_gate(monkeypatch, capsys, jack.env, data) == (0, "")

    protocol.set_budget(home, "Jack", 1.0, assignment_id=jack.assignment_id)  # under the spend
    assert gate.unbudgeted(jack.env) is False
    code, out = run_gate(monkeypatch, capsys, jack.env, data)
    answer = json.loads(out)["hookSpecificOutput"]
    assert code == 0 and answer["permissionDecision"] == "deny", out
    assert "$1.00" in answer["permissionDecisionReason"]
    pi = {"session_file": str(tmp_path / "none.jsonl")}  # pi's gate: the same crew is held
    code, out = run_gate(monkeypatch, capsys, jack.env, pi, agent="pi")
    assert code == 0 and json.loads(out)["block"] is True, out


def _stale(home: Home, env: dict[str, str]) -> dict[str, str]:
    return {**env, "CAPTAIN_INCARNATION": "inc_01M8T18ZWASCCBH6TCTSW1JS11"}


def _behind(home: Home, env: dict[str, str]) -> dict[str, str]:
    """A writer killed between an event and the snapshot: the snapshot is behind."""
    newest = home.event_seqs("jack")[-1]
    shutil.copy(home.event_path("jack", newest), home.event_path("jack", newest + 1))
    return env


def _not_an_event(home: Home, env: dict[str, str]) -> dict[str, str]:
    (home.events_dir("jack") / "junk.json").write_text("{}")
    return env


def _snapshot(text: str):
    def change(home: Home, env: dict[str, str]) -> dict[str, str]:
        home.snapshot_path("jack").write_text(text)
        return env

    return change


def _linked_crew(home: Home, env: dict[str, str]) -> dict[str, str]:
    real = home.root / "crew" / "jack"
    real.rename(home.root / "elsewhere")
    real.symlink_to(home.root / "elsewhere")
    return env


def _linked_snapshot(home: Home, env: dict[str, str]) -> dict[str, str]:
    path = home.snapshot_path("jack")
    path.rename(home.root / "state.json")
    path.symlink_to(home.root / "state.json")
    return env


def _budgeted(home: Home, env: dict[str, str]) -> dict[str, str]:
    protocol.set_budget(home, "Jack", 50.0, assignment_id=env["CAPTAIN_ASSIGNMENT"])
    return env


def _dismissed(home: Home, env: dict[str, str]) -> dict[str, str]:
    protocol.dismiss(home, "Jack")
    return env


NOT_SURE = {
    "a budget": _budgeted,
    "the captain's environment": lambda home, env: {"CAPTAIN_HOME": env["CAPTAIN_HOME"]},
    "a stale incarnation": _stale,
    "another crew's name": lambda home, env: {**env, "CAPTAIN_CREW": "Kim"},
    "a name that is a path": lambda home, env: {**env, "CAPTAIN_CREW": "../crew/jack"},
    "no home": lambda home, env: {k: v for k, v in env.items() if k != "CAPTAIN_HOME"},
    "dismissed": _dismissed,
    "a snapshot behind its events": _behind,
    "a file in events that is not an event": _not_an_event,
    "a snapshot that is not JSON": _snapshot("{not json"),
    "a snapshot nested past reason": _snapshot("[" * 100_000 + "]" * 100_000),
    "a snapshot that is not an object": _snapshot("[]"),
    "the crew folder a link": _linked_crew,
    "the snapshot a link": _linked_snapshot,
}


@pytest.mark.parametrize("case", sorted(NOT_SURE))
def test_the_gate_answers_only_when_it_is_sure(
    case: str, home: Home, project: Path, monkeypatch, capsys
):
    """Each of these is "not sure" (False), so the full gate decides, and the full gate
    still answers without a traceback (it fails open or refuses as it always did)."""
    jack = hire(home, project, "Jack", "Write the docs")
    assert gate.unbudgeted(jack.env) is True  # the same crew, before the change
    env = NOT_SURE[case](home, dict(jack.env))
    assert gate.unbudgeted(env) is False, case
    code, out = run_gate(monkeypatch, capsys, env, {"tool_name": "Bash"})
    assert code == 0 and out == "", (case, out)  # no budget measured: nothing to refuse
    assert "Traceback" not in capsys.readouterr().err


def test_sure_means_the_full_path_reads_no_budget_either(home: Home, project: Path):
    """When the gate says "no budget", the models' own reading of the crew agrees: the same
    live incarnation, not dismissed, and no budget on its current assignment."""
    jack = hire(home, project, "Jack", "Write the docs")
    protocol.tell(home, "Jack", "one more thing", assignment_id=jack.assignment_id)
    assert gate.unbudgeted(jack.env) is True
    snapshot, _ = crewlog.load(home, "jack")
    assert snapshot is not None and snapshot.budget_usd is None
    assert snapshot.dismissed_at is None
    assert snapshot.incarnation_id == jack.env["CAPTAIN_INCARNATION"]


def test_the_gates_are_exactly_the_hooks_budget_handlers():
    """``gate.GATES`` (what ``main`` asks the gate about) is every hook the full gate runs
    for: a new agent's budget hook missing from it would only be slower; one too many
    would skip a handler that is not the gate."""
    budget_handlers = {
        k for k, h in hooks.HANDLERS.items() if h in (hooks._pre_tool_use, hooks._pi_budget)
    }
    assert gate.GATES == budget_handlers

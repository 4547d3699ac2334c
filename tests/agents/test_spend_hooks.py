"""Spend at each turn's end, through the real hooks: Claude Code's and Codex's ``Stop`` and
pi's ``agent_end`` measure the turn from the agent's own record, and a detached
``captain hook AGENT spend`` (a real process) puts the figure on the assignment's attempt —
on both ledgers — only when it changed; ``work show``, the API and ``status --json`` say it.
"""

from __future__ import annotations

import contextlib
import io
import json
import time
from pathlib import Path

from support.crew import hire

from captain_tui.agents.hooks import run_hook
from captain_tui.cli.main import main
from state.crew import spend
from state.home import Home
from state.work import ledger

SONNET = "claude-sonnet-4-5-20250929"
DEADLINE = 30.0  # the detached recorder is a fresh process on a loaded 2-core box


def claude_line(mid: str, i: int, o: int, cr: int = 0, cw: int = 0) -> str:
    usage = {
        "input_tokens": i,
        "output_tokens": o,
        "cache_read_input_tokens": cr,
        "cache_creation_input_tokens": cw,
    }
    message = {"id": mid, "model": SONNET, "role": "assistant", "usage": usage, "content": []}
    return json.dumps({"type": "assistant", "message": message}) + "\n"


def stop(env: dict[str, str], agent: str, event: str, **fields) -> str:
    out = io.StringIO()
    body = json.dumps({"hook_event_name": event, "session_id": "s", **fields})
    assert run_hook(agent, event, None, io.StringIO(body), out, env) == 0
    return out.getvalue()


def attempt_when(home: Home, work_id: str, turns: int):
    """The item's attempt once it carries ``turns`` measured turns (polled)."""
    deadline = time.monotonic() + DEADLINE
    while True:
        attempt = ledger.get(home, work_id).attempts[-1]
        if attempt.turns == turns:
            return attempt
        assert time.monotonic() < deadline, attempt
        time.sleep(0.05)


def spend_events(home: Home, work_id: str) -> list:
    return [e for e in ledger.events(home, work_id) if e.type == "spend"]


def test_claude_stop_puts_each_turn_once_on_the_attempt_on_both_ledgers(
    ledgers, tmp_path: Path, project: Path
):
    home = ledgers.home(tmp_path / "h")
    jack = hire(home, project)
    work_id = ledger.work_id_for_assignment(jack.assignment_id)
    transcript = tmp_path / "session.jsonl"
    # one message in three lines (one per content block), another, a user line
    transcript.write_text(
        claude_line("msg_1", 1201, 31, 5003, 707) * 3
        + json.dumps({"type": "user", "message": {"content": "go on"}})
        + "\n"
        + claude_line("msg_2", 1301, 37, 6007, 0)
    )
    stop(jack.env, "claude", "Stop", transcript_path=str(transcript), stop_hook_active=True)
    attempt = attempt_when(home, work_id, 2)
    want = (1201 + 1301, 31 + 37, 5003 + 6007, 707)
    assert (
        attempt.input_tokens,
        attempt.output_tokens,
        attempt.cache_read_tokens,
        attempt.cache_write_tokens,
    ) == want
    price = spend.PRICES["claude-sonnet-4-5"]
    cost = round(sum(n * p for n, p in zip(want, price, strict=True)) / 1e6, 6)
    assert attempt.cost_usd == cost
    assert len(spend_events(home, work_id)) == 1

    # the same turns again (a repeated Stop, the recorder run again): nothing appended
    stop(jack.env, "claude", "Stop", transcript_path=str(transcript), stop_hook_active=True)
    assert run_hook("claude", "spend", jack.assignment_id, None, io.StringIO(), jack.env) == 0
    assert len(spend_events(home, work_id)) == 1

    # a new turn: the figure changes, one more note
    with transcript.open("a") as f:
        f.write(claude_line("msg_3", 10, 3))
    stop(jack.env, "claude", "Stop", transcript_path=str(transcript), stop_hook_active=True)
    attempt = attempt_when(home, work_id, 3)
    assert attempt.output_tokens == 71
    assert len(spend_events(home, work_id)) == 2
    # work show says it per attempt, and status --json per crew and per assignment
    from support.cli import invoke

    code, shown, _ = invoke("work", "show", work_id, "--json", "--home", str(home.root))
    assert code == 0
    (served,) = shown["item"]["attempts"]
    assert (served["turns"], served["output_tokens"]) == (3, 71)
    assert served["cost_usd"] == attempt.cost_usd
    code, status, _ = invoke("status", "--json", "--home", str(home.root))
    (row,) = status["crew"]
    assert row["spend"]["assignment"]["turns"] == 3
    assert row["spend"]["assignment"]["cost_usd"] == attempt.cost_usd
    assert row["spend"]["turns"] == 3 and status["spend"]["turns"] == 3
    if not ledgers.postgres:  # the API serves it too (the same read on both ledgers)
        from support.api import Server, captain, ok

        token = captain(home.root, "tokens", "create", "--role", "member")["token"]
        server = Server(home.root, tmp_path / "serve.log").start()
        try:
            item = ok(server.get(server.ws(f"/work/{work_id}"), token))
        finally:
            server.stop()
        (api_attempt,) = item["attempts"]
        assert (api_attempt["turns"], api_attempt["cache_read_tokens"]) == (3, 5003 + 6007)
        assert api_attempt["cost_usd"] == attempt.cost_usd
        assert [e["turns"] for e in item["events"] if e["type"] == "spend"] == [2, 3]
    shown_human = io.StringIO()
    with contextlib.redirect_stdout(shown_human):
        assert main(["work", "show", work_id, "--home", str(home.root)]) == 0
    assert (
        f"cost ${attempt.cost_usd:.4f} (3 turns: 2512 in, 71 out, 11010 cache read, "
        "707 cache write)" in shown_human.getvalue()
    ), shown_human.getvalue()
    human = io.StringIO()
    with contextlib.redirect_stdout(human):
        assert main(["status", "--home", str(home.root)]) == 0
    header, jack_row = human.getvalue().splitlines()[:2]
    assert header.split()[-1] == "SPEND" and jack_row.split()[-1] == f"${attempt.cost_usd:.2f}"
    assert f"Spend: ${attempt.cost_usd:.2f} in all" in human.getvalue().splitlines()[-3]


def test_codex_stop_and_pi_agent_end_measure_their_own_records(tmp_path: Path, project: Path):
    home = Home(tmp_path / "h")
    kim = hire(home, project, "Kim", agent="codex")
    rollout = tmp_path / "rollout.jsonl"
    rows = [
        {"type": "session_meta", "payload": {"id": "sess"}},
        {"type": "turn_context", "payload": {"model": "gpt-5-codex"}},
    ]
    usage = {"input_tokens": 900, "cached_input_tokens": 600, "output_tokens": 41}
    info = {"total_token_usage": usage, "last_token_usage": usage}
    rows.append({"type": "event_msg", "payload": {"type": "token_count", "info": info}})
    rollout.write_text("".join(json.dumps(r) + "\n" for r in rows))
    stop(kim.env, "codex", "Stop", transcript_path=str(rollout), last_assistant_message="ok")
    attempt = attempt_when(home, ledger.work_id_for_assignment(kim.assignment_id), 1)
    assert (attempt.input_tokens, attempt.cache_read_tokens, attempt.output_tokens) == (
        300,
        600,
        41,
    )

    ann = hire(home, project, "Ann", agent="pi", owns=["docs"])
    session = tmp_path / "pi.jsonl"
    message = {
        "role": "assistant",
        "model": "pi-stand-in-model",  # no price: tokens, cost unknown
        "usage": {"input": 70, "output": 9, "cacheRead": 0, "cacheWrite": 0},
    }
    session.write_text(json.dumps({"type": "message", "id": "e1", "message": message}) + "\n")
    stop(ann.env, "pi", "agent_end", session_file=str(session), last_assistant_text="ok")
    attempt = attempt_when(home, ledger.work_id_for_assignment(ann.assignment_id), 1)
    assert (attempt.input_tokens, attempt.output_tokens, attempt.cost_usd) == (70, 9, None)


def test_a_turn_the_agent_writes_just_after_its_stop_hook_is_still_recorded(
    tmp_path: Path, project: Path
):
    """Claude Code may append a turn's last line just after its Stop hook ran (seen under
    load): the hook then measures nothing new, and the figure must still reach the ledger
    — the detached recorder reads the transcript again itself before it records."""
    home = Home(tmp_path / "h")
    jack = hire(home, project)
    work_id = ledger.work_id_for_assignment(jack.assignment_id)
    transcript = tmp_path / "session.jsonl"
    transcript.write_text(claude_line("msg_1", 1000, 10))
    stop(jack.env, "claude", "Stop", transcript_path=str(transcript), stop_hook_active=True)
    attempt_when(home, work_id, 1)
    # the next turn's Stop hook runs before the agent has written that turn's line
    stop(jack.env, "claude", "Stop", transcript_path=str(transcript), stop_hook_active=True)
    with transcript.open("a") as f:
        f.write(claude_line("msg_2", 2000, 20))
    attempt = attempt_when(home, work_id, 2)
    assert (attempt.input_tokens, attempt.output_tokens) == (3000, 30)

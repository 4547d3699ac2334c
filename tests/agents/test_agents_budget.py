"""Budgets with the REAL Claude Code, Codex and pi in tmux, offline (docs/budgets.md): the
agent's own record is read by captain's pre-tool hook before each tool call, and once the
measured spend passes the assignment's budget the call is refused in the agent's own way —
the loopback stand-in sees the refusal in the next request's tool result, and the tool did
not run —, ``captain wait`` returns the ``held`` notice, and after ``captain tell NAME
--budget-usd`` the next tool call runs.

The stand-ins report usage distinct per answer (``support.claude.usage_for``); prices in
``config.toml`` make one answer cost a quarter of a dollar or more, so a budget ten cents
above what was spent is passed by the next answer alone. Each test skips, with the reason,
when its agent, tmux or the network namespace is missing.
"""

from __future__ import annotations

import json
import time
from pathlib import Path

import pytest
from support.agents import STEP

from state.crew import spend

DEADLINE = 60.0  # turns and hooks on a loaded 2-core box

# about $1.14 for one of Claude Code's answers, $0.25 for one of pi's (usage_for)
PRICES = """
[prices."claude-opus-5-5"]
input = 700.0
output = 3100.0
cache_read = 70.0
cache_write = 850.0
[prices."standin-model"]
input = 150.0
output = 600.0
cache_read = 15.0
cache_write = 175.0
[prices."gpt-5.5"]
input = 250.0
output = 1900.0
cache_read = 25.0
cache_write = 250.0
"""


def home_with_prices(root: Path) -> Path:
    root.mkdir(parents=True)
    (root / "config.toml").write_text(PRICES)
    return root


def spent(crew) -> float:
    figure = spend.assignment_spend(crew.home, crew.key, crew.assignment)
    assert figure.cost_usd is not None, figure
    return figure.cost_usd


def cli_json(crew, *args: str) -> dict:
    r = getattr(crew, "crew", crew).cli(*args, "--json")  # a LiveCrew's AgentCrew
    assert r.returncode == 0, (r.stdout, r.stderr)
    return json.loads(r.stdout)


def set_budget(crew, amount: float, text: str | None = None) -> dict:
    words = [text] if text else []
    told = cli_json(
        crew,
        "tell",
        crew.name,
        *words,
        "--assignment",
        crew.assignment,
        "--budget-usd",
        f"{amount:.2f}",
    )
    assert told["budget_usd"] == round(amount, 2), told
    return told


def wait_for_held(crew) -> dict:
    """``captain wait NAME`` (the real CLI) until it returns ``held``, acknowledging what
    comes before it (each ``--ack`` also waits for the next); the held notification."""
    deadline = time.monotonic() + DEADLINE
    seen: list[tuple[str, str]] = []
    ack: list[str] = []
    while time.monotonic() < deadline:
        got = cli_json(crew, "wait", crew.name, "--timeout", "1", *ack)
        ack = []
        if got["status"] == "timeout":
            continue
        seen.append((got["status"], got["summary"][:80]))
        if got["status"] == "held":
            return got
        ack = ["--ack", got["delivery_id"]]
    raise AssertionError(f"captain wait returned no held notice; saw {seen}")


def until(check, what: str, timeout: float = DEADLINE):
    deadline = time.monotonic() + timeout
    while True:
        got = check()
        if got:
            return got
        assert time.monotonic() < deadline, what
        time.sleep(0.2)


# --------------------------------------------------------------------------------------
# Claude Code: PreToolUse reads its transcript (transcript_path)
# --------------------------------------------------------------------------------------


def test_claude_code_is_refused_at_its_budget_and_runs_again_when_it_is_raised(tmp_path: Path):
    from support.claude import ToolUse, claude_available, composer_line, start_claude_crew
    from test_claude_captain import Crew

    reason = claude_available()
    if reason:
        pytest.skip(reason)
    home_root = home_with_prices(tmp_path / "home")
    project = tmp_path / "project"
    project.mkdir()
    (project / "notes.txt").write_text("NOTES-4471: the file the crew reads\n")
    with start_claude_crew(
        tmp_path, name="Jack", task="BUDGET-1: read the notes", home_root=home_root, project=project
    ) as started:
        jack = Crew(started)
        stand_in = jack.stand_in

        def read_notes(prompt: str) -> int:
            stand_in.push(ToolUse("Read", {"file_path": str(project / "notes.txt")}))
            mark = stand_in.mark()
            jack.pane.send_literal(prompt)
            jack.pane.wait_for(lambda s: prompt in (composer_line(s) or ""), STEP)
            jack.pane.send_enter()
            return stand_in.wait_main(after=mark, timeout=STEP).seq

        def tool_result(after: int) -> str:
            return stand_in.wait_main(after=after, timeout=STEP).last_user_text()

        jack.settle()

        # a budget a fraction of a turn above what was spent: the next answer passes it,
        # and its tool call is refused with a reason the model receives
        set_budget(jack, spent(jack) + 0.1)
        asked = read_notes("read the notes again")
        refused = tool_result(asked)
        assert "budget" in refused and jack.assignment in refused, refused
        assert "NOTES-4471" not in refused
        held = wait_for_held(jack)
        assert "reached its" in held["summary"] and "--budget-usd" in held["summary"]
        assert cli_json(jack, "status")["crew"][0]["state"] == "held"
        jack.settle()

        # raised: the next tool call runs
        set_budget(jack, spent(jack) + 100)
        asked = read_notes("and once more")
        assert "NOTES-4471" in tool_result(asked)
        assert stand_in.blocked == []


# --------------------------------------------------------------------------------------
# pi: captain's extension's tool_call reads pi's session file (session_file)
# --------------------------------------------------------------------------------------


def test_pi_is_refused_at_its_budget_and_runs_again_when_it_is_raised(tmp_path: Path):
    from support.claude import ToolUse
    from support.pi import pi_available, start_pi_crew
    from test_pi_captain import Jack

    reason = pi_available()
    if reason:
        pytest.skip(reason)
    home_root = home_with_prices(tmp_path / "home")
    project = tmp_path / "project"
    project.mkdir()
    (project / "notes.txt").write_text("NOTES-5512: the file the crew reads\n")
    with start_pi_crew(
        tmp_path, name="Ann", task="BUDGET-2: read the notes", home_root=home_root, project=project
    ) as started:
        ann = Jack(started)
        stand_in = ann.stand_in

        def read_notes(prompt: str) -> int:
            stand_in.push(ToolUse("read", {"path": str(project / "notes.txt")}))
            mark = stand_in.mark()
            ann.pane.send_literal(prompt)
            ann.wait_screen(lambda s: s.draft == prompt, "the prompt typed")
            ann.pane.send_enter()
            return stand_in.wait_main(after=mark, timeout=STEP).seq

        def tool_result(after: int) -> str:
            return stand_in.wait_main(after=after, timeout=STEP).last_user_text()

        ann.settle()

        set_budget(ann, spent(ann) + 0.1)  # one of pi's answers costs about $0.25
        asked = read_notes("read the notes again")
        refused = tool_result(asked)
        assert "budget" in refused and ann.assignment in refused, refused
        assert "NOTES-5512" not in refused
        held = wait_for_held(ann)
        assert "reached its" in held["summary"]
        ann.settle()

        set_budget(ann, spent(ann) + 100)
        asked = read_notes("and once more")
        assert "NOTES-5512" in tool_result(asked)
        assert stand_in.blocked == []


# --------------------------------------------------------------------------------------
# Codex: PreToolUse reads its rollout (transcript_path)
# --------------------------------------------------------------------------------------


def test_codex_is_refused_at_its_budget_and_runs_again_when_it_is_raised(tmp_path: Path):
    from support.codex import codex_available, start_codex_crew
    from test_codex_approvals import HOLD, ask, output_after, request_for
    from test_codex_captain import Jack

    reason = codex_available()
    if reason:
        pytest.skip(reason)
    home_root = home_with_prices(tmp_path / "captain-home")
    crew = start_codex_crew(
        tmp_path,
        name="Jack",
        task="BUDGET-3: run what you are asked",
        home=home_root,
        approval_timeout=HOLD,
    )
    try:
        jack = Jack(crew)
        project = crew.project

        def run_allowed(marker: str) -> None:
            asked = ask(jack, f"touch {marker}")
            rid = request_for(jack, f"touch {marker}")
            r = crew.cli("approve", "Jack", rid, "--allow", "--json")
            assert r.returncode == 0, r.stdout + r.stderr
            output_after(jack, asked)
            until(lambda: (project / marker).exists(), f"{marker} was made")

        jack.settle()

        # Codex 0.169 writes a response's token count to its rollout only after the hook
        # before that response's tool call may have run: a budget crossed by the answer
        # that makes the call holds from the next call. Set under what was spent, the
        # crew is held at once (docs/budgets.md), and the next call is refused.
        set_budget(jack, spent(jack) - 0.05)
        asked = ask(jack, "touch refused-marker")
        refused = output_after(jack, asked).text
        assert "budget" in refused and crew.assignment in refused, refused[-2000:]
        assert not (project / "refused-marker").exists()
        held = wait_for_held(jack)
        assert "reached its" in held["summary"]
        jack.settle()

        set_budget(jack, spent(jack) + 100)
        run_allowed("after-marker")
    finally:
        crew.close()

"""Spend with the REAL Claude Code, Codex and pi in tmux, offline: each agent's own record
(Claude Code's transcript, Codex's rollout, pi's session file) is read at each turn's end
by captain's hooks, and the attempt on the ledger carries exactly the tokens the loopback
stand-in reported — distinct per answer (``usage_for``), so a turn counted twice or missed
shows — and the cost the price table gives them.

Each test skips, with the reason, when its agent, tmux or the network namespace is missing.
"""

from __future__ import annotations

import time
from pathlib import Path

import pytest
from support.agents import STEP

from state.crew import spend
from state.home import Home
from state.work import ledger

DEADLINE = 60.0  # turns, hooks and the detached recorder on a loaded 2-core box


def recorded(home: Home, assignment_id: str, want: tuple[int, ...]):
    """The attempt once its spend note carries ``want`` (input, output, cache read, cache
    write, turns), polled; on the deadline, the assertion shows what it carried."""
    work_id = ledger.work_id_for_assignment(assignment_id)
    deadline = time.monotonic() + DEADLINE
    while True:
        attempt = ledger.get(home, work_id).attempts[-1]
        got = (
            attempt.input_tokens,
            attempt.output_tokens,
            attempt.cache_read_tokens,
            attempt.cache_write_tokens,
            attempt.turns,
        )
        if got == want or time.monotonic() > deadline:
            assert got == want, (got, want)
            return attempt
        time.sleep(0.2)


def priced(model: str, figures: list[tuple[int, int, int, int]], home: Home) -> float | None:
    price = spend.price_of(home, model)
    if price is None:
        return None
    return round(sum(n * p for f in figures for n, p in zip(f, price, strict=True)) / 1e6, 6)


# Prices for the stand-ins' models, distinct per field, so the cost checks each figure
# against its own price (Claude Code 2.1.332 asks for claude-opus-5-5, which the shipped
# table does not price: config.toml does, as a person would)
PRICES = """
[prices."claude-opus-5-5"]
input = 7.0
output = 31.0
cache_read = 0.7
cache_write = 8.5
[prices."gpt-5.5"]
input = 2.5
output = 19.0
cache_read = 0.25
cache_write = 2.5
[prices."standin-model"]
input = 1.5
output = 6.0
cache_read = 0.15
cache_write = 1.75
"""


def home_with_prices(root: Path) -> Path:
    root.mkdir(parents=True)
    (root / "config.toml").write_text(PRICES)
    return root


def ring_until(crew, enough, what: str) -> None:
    """Ring the doorbell (as a running ``captain wait`` retries it) until ``enough()``."""
    from captain_tui.runtime import doorbell

    deadline = time.monotonic() + STEP * 3
    while not enough():
        assert time.monotonic() < deadline, what
        doorbell.ring(crew.home, crew.name)
        time.sleep(0.5)


def anthropic_figures(requests) -> list[tuple[int, int, int, int]]:
    return [
        (
            r.usage["input_tokens"],
            r.usage["output_tokens"],
            r.usage["cache_read_input_tokens"],
            r.usage["cache_creation_input_tokens"],
        )
        for r in requests
    ]


def summed(figures: list[tuple[int, int, int, int]]) -> tuple[int, ...]:
    return (*(sum(f[i] for f in figures) for i in range(4)), len(figures))


# --------------------------------------------------------------------------------------
# Claude Code: its transcript (the Stop hook's transcript_path)
# --------------------------------------------------------------------------------------


def test_claude_code_turns_are_recorded_once_with_the_stand_ins_figures(tmp_path: Path):
    from support.claude import claude_available, start_claude_crew

    reason = claude_available()
    if reason:
        pytest.skip(reason)
    home_root = home_with_prices(tmp_path / "home")
    with start_claude_crew(
        tmp_path, name="Jack", task="SPEND-1: say ok", home_root=home_root
    ) as crew:
        stand_in = crew.stand_in
        # the wake line starts a turn; the Stop hook blocks it once (the assignment is not
        # done), so Claude Code answers again (a second message, another ID), then stops
        ring_until(crew, lambda: len(stand_in.main_requests) >= 2, "two answers")
        mains = stand_in.main_requests
        figures = anthropic_figures(mains)
        # streamed: each message's lines carry output_tokens 1 until the last, which
        # carries the final figure; the turn is raised to it, never added twice
        attempt = recorded(crew.home, crew.assignment, summed(figures))
        assert {r.model for r in mains} == {"claude-opus-5-5"}
        assert attempt.cost_usd == priced("claude-opus-5-5", figures, crew.home)
        assert attempt.cost_usd is not None and attempt.cost_usd > 0
        # status --json sums it for the crew and its assignment
        figure = spend.assignment_spend(crew.home, "jack", crew.assignment)
        assert figure.cost_usd == attempt.cost_usd and figure.turns == len(mains)


# --------------------------------------------------------------------------------------
# Codex: its rollout (the Stop hook's transcript_path)
# --------------------------------------------------------------------------------------


def test_codex_turns_are_recorded_once_with_the_stand_ins_figures(tmp_path: Path):
    from support.codex import MODEL, codex_available, start_codex_crew

    reason = codex_available()
    if reason:
        pytest.skip(reason)
    home_root = home_with_prices(tmp_path / "captain-home")
    crew = start_codex_crew(tmp_path, name="Kim", task="SPEND-2: say ok", home=home_root)
    try:
        stand_in = crew.stand_in
        ring_until(crew, lambda: stand_in.main_requests, "the task")
        mains = stand_in.main_requests
        # Codex's figures: input includes the cached part, which is priced as cache reads
        figures = [
            (
                r.usage["input_tokens"] - r.usage["cached_tokens"],
                r.usage["output_tokens"],
                r.usage["cached_tokens"],
                0,
            )
            for r in mains
        ]
        attempt = recorded(crew.home, crew.assignment, summed(figures))
        assert attempt.cost_usd == priced(MODEL, figures, crew.home)
        assert attempt.cost_usd is not None and attempt.cost_usd > 0
    finally:
        crew.close()


# --------------------------------------------------------------------------------------
# pi: its session file (the extension's session_file at agent_end)
# --------------------------------------------------------------------------------------


def test_pi_turns_are_recorded_once_with_the_stand_ins_figures(tmp_path: Path):
    from support.pi import MODEL, pi_available, start_pi_crew

    reason = pi_available()
    if reason:
        pytest.skip(reason)
    home_root = home_with_prices(tmp_path / "home")
    with start_pi_crew(tmp_path, name="Ann", task="SPEND-3: say ok", home_root=home_root) as crew:
        stand_in = crew.stand_in
        ring_until(crew, lambda: stand_in.main_requests, "the task")
        mains = stand_in.main_requests
        figures = anthropic_figures(mains)
        attempt = recorded(crew.home, crew.assignment, summed(figures))
        assert {r.model for r in mains} == {MODEL}
        assert attempt.cost_usd == priced(MODEL, figures, crew.home)
        assert attempt.cost_usd is not None and attempt.cost_usd > 0

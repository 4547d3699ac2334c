"""What every bench script does the same way: polls until a condition holds, and reports:
percentiles, a latency row, the what | measured | budget | verdict table, the JSON file;
and how a script says it cannot run here (``CannotRun``, ``run_script``)."""

from __future__ import annotations

import json
import statistics
import sys
import time
from pathlib import Path

# The exit code of a script that cannot run here (no tmux, no PostgreSQL, ...): it printed
# one line, ``cannot run: <why>``, on stderr, and measured nothing. ``python -m bench``
# shows that sentence in the part's row; any other failure is a crash.
CANNOT_RUN = 3
CANNOT_RUN_PREFIX = "cannot run: "
# every script's --smoke (its help begins with this): the tests run each part so
SMOKE = "the smallest run that goes through every step (seconds; its numbers mean nothing)"


class CannotRun(Exception):
    """This part cannot run on this machine; the message says why, in one sentence."""


def run_script(main) -> None:
    """``sys.exit(main())``, but a ``CannotRun`` is one line on stderr and ``CANNOT_RUN``."""
    try:
        code = main()
    except CannotRun as exc:
        print(f"{CANNOT_RUN_PREFIX}{exc}", file=sys.stderr, flush=True)
        code = CANNOT_RUN
    sys.exit(code)


def need_tmux() -> None:
    """``CannotRun`` unless tmux is on PATH."""
    import shutil

    if not shutil.which("tmux"):
        raise CannotRun("tmux is not installed (.ci/install-agents installs it)")


def until(pred, timeout: float = 15.0, what: str = "condition", interval: float = 0.005):
    """The first truthy ``pred()``, polled every ``interval`` seconds; TimeoutError after
    ``timeout`` seconds."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = pred()
        if value:
            return value
        time.sleep(interval)
    raise TimeoutError(f"timed out waiting for {what}")


def pct(values, p):
    """The ``p``-th percentile of ``values``: the nearest rank, no interpolation."""
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(round(p / 100 * (len(ordered) - 1))))]


def latency_row(
    name: str, values: list[float], budget: str, limit: float | None = None, judged_by: str = "p95"
) -> dict:
    """One timed measurement as a table row: p50 / p95 / max in ms, judged against
    ``limit`` by its p95 (or by its max: ``judged_by="max"``); no limit is "info"."""
    p50, p95, worst = statistics.median(values), pct(values, 95), max(values)
    judged = {"p95": p95, "max": worst}[judged_by]
    verdict = "info" if limit is None else ("met" if judged <= limit else "MISSED")
    return {
        "what": f"{name} ({len(values)} runs)",
        "measured": f"p50 {p50:.0f} / p95 {p95:.0f} / max {worst:.0f} ms",
        "budget": budget,
        "verdict": verdict,
        "p50_ms": p50,
        "p95_ms": p95,
        "max_ms": worst,
    }


def table(rows: list[dict]) -> str:
    """The Markdown table of ``rows`` (each with what, measured, budget and verdict)."""
    lines = ["| what | measured | budget | verdict |", "|---|---|---|---|"]
    lines += [
        f"| {row['what']} | {row['measured']} | {row['budget']} | {row['verdict']} |"
        for row in rows
    ]
    return "\n".join(lines)


def print_report(heading: str, rows: list[dict]) -> None:
    """A script's answer on stdout: its heading line (the machine), a blank line, the
    table."""
    print(f"{heading}\n")
    print(table(rows))


def write_json(path: Path | None, data: dict, *, indent: int = 1, **dumps) -> None:
    """``data`` as JSON into ``path``, when the script was asked for it (``--json PATH``)."""
    if path:
        path.write_text(json.dumps(data, indent=indent, **dumps) + "\n")

"""Cold start of the crew-side commands (budget: median <= 150 ms, docs/design.md).

Runs each command as a fresh process, the way an agent pane runs it, N times against a
throwaway home, and prints medians as a Markdown table. `ask` is measured on its success
path: the question is answered (untimed) between runs. `inbox` is measured twice: with the
answer waiting (delivered, then read) and with nothing waiting. `hook claude Stop` runs with
no mail waiting on an unfinished assignment (it blocks the stop), the common case; `hook
claude Stop (spend)` the same with a transcript holding one new turn, which it measures
(docs/ledger.md "Spend") and hands to the detached recorder. `hook claude PreToolUse
(budget)` is the budget's gate before every tool call (docs/budgets.md): the assignment has
a budget, its transcript one new turn, which the gate measures and finds under it.

    python bench/cold_start.py [--runs 10] [--smoke] [--json PATH]

Two baselines are measured in the same run, so ratios hold on a noisy machine even when
the milliseconds do not: `python -c pass` on the same interpreter, and the floor of any
command that validates a record with pydantic (import it, build and validate one model).
Bytecode is cached as on a user's machine (a warm-up run writes it; a
PYTHONDONTWRITEBYTECODE in the environment would make every run compile captain afresh).
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench.report import SMOKE, print_report, run_script, write_json  # noqa: E402

# What every command that reads a record through the models pays before doing anything.
PYDANTIC_FLOOR = (
    "from pydantic import BaseModel\n"
    "class R(BaseModel):\n    x: int\n"
    "R.model_validate_json('{\"x\": 1}')"
)
BASELINES = {
    "python -c pass": "`python -c pass` (baseline, same run)",
    "pydantic floor": "import pydantic, build and validate one model "
    "(the floor of any full-path command, same run)",
}


def _captain() -> list[str]:
    found = shutil.which("captain", path=str(Path(sys.executable).parent))
    return [found] if found else [sys.executable, "-m", "captain_tui"]


def _run(cmd: list[str], env: dict[str, str]) -> tuple[float, subprocess.CompletedProcess]:
    start = time.perf_counter()
    proc = subprocess.run(cmd, env=env, capture_output=True, text=True)
    return (time.perf_counter() - start) * 1000, proc


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=10)
    parser.add_argument("--smoke", action="store_true", help=f"{SMOKE}: --runs 1")
    parser.add_argument("--json", type=Path, default=None, help="also write results here")
    args = parser.parse_args()
    if args.smoke:
        args.runs = 1
    captain = _captain()
    with tempfile.TemporaryDirectory() as tmp:
        base = {
            k: v
            for k, v in os.environ.items()
            if not k.startswith("CAPTAIN_") and k != "PYTHONDONTWRITEBYTECODE"
        }
        base["CAPTAIN_HOME"] = str(Path(tmp) / "home")
        # recorded only: the crew's commands need no pane, and a launch would start a tmux
        # server on the default socket, where the user's own crews run
        _, proc = _run(
            captain
            + [
                "crew",
                "Jack",
                "--task",
                "bench",
                "--owns",
                "src",
                "--allow",
                "edit",
                "--json",
                "--cwd",
                tmp,
                "--no-launch",
            ],
            base,
        )
        recruit = json.loads(proc.stdout)
        crew_env = {**base, **recruit["env"]}
        results: dict[str, list[float]] = {
            "python -c pass": [],
            "pydantic floor": [],
            "check": [],
            "ask": [],
            "inbox (mail waiting)": [],
            "inbox (nothing waiting)": [],
            "hook claude Stop": [],
            "hook claude Stop (spend)": [],
            "hook claude PreToolUse (budget)": [],
        }
        stop = json.dumps({"session_id": "bench", "stop_hook_active": False})

        def timed(name: str, argv: list[str], stdin: str | None = None) -> Any:
            start = time.perf_counter()
            proc = subprocess.run(
                captain + argv, env=crew_env, input=stdin, capture_output=True, text=True
            )
            results[name].append((time.perf_counter() - start) * 1000)
            assert proc.returncode == 0, proc.stderr
            return json.loads(proc.stdout) if "--json" in argv else proc.stdout

        # the Stop hook with spend accounting: one new turn in the transcript each run, so
        # it reads, counts, publishes and starts the detached recorder (waited for untimed,
        # so its process does not slow the next measurement)
        transcript = Path(tmp) / "transcript.jsonl"
        transcript.write_text("")
        spend_stop = json.dumps(
            {"session_id": "bench", "stop_hook_active": False, "transcript_path": str(transcript)}
        )
        events = Path(tmp) / "home" / "work" / recruit["work_id"] / "events"

        def new_turn(n: int) -> int:
            usage = {"input_tokens": 900 + n, "output_tokens": 40 + n}
            line = {
                "type": "assistant",
                "message": {"id": f"msg_{n}", "model": "claude-sonnet-4-5", "usage": usage},
            }
            with transcript.open("a") as f:
                f.write(json.dumps(line) + "\n")
            return len(list(events.iterdir()))

        def recorded(before: int) -> None:
            deadline = time.monotonic() + 30
            while len(list(events.iterdir())) <= before and time.monotonic() < deadline:
                time.sleep(0.02)

        # the budget's gate: a budget on the assignment (set untimed), a transcript of its own
        gated = Path(tmp) / "gated.jsonl"
        gated.write_text("")
        pre_tool = json.dumps(
            {"session_id": "bench", "tool_name": "Bash", "transcript_path": str(gated)}
        )
        _run(
            captain
            + ["tell", "Jack", "--assignment", recruit["assignment_id"], "--budget-usd", "1000"],
            base,
        )

        def gated_turn(n: int) -> None:
            usage = {"input_tokens": 700 + n, "output_tokens": 30 + n}
            line = {
                "type": "assistant",
                "message": {"id": f"pre_{n}", "model": "claude-sonnet-4-5", "usage": usage},
            }
            with gated.open("a") as f:
                f.write(json.dumps(line) + "\n")

        _run(captain + ["check", "Jack", "edit", "src/a.py"], crew_env)  # warm-up: bytecode
        for _ in range(args.runs):
            results["python -c pass"].append(_run([sys.executable, "-c", "pass"], base)[0])
            results["pydantic floor"].append(_run([sys.executable, "-c", PYDANTIC_FLOOR], base)[0])
            timed("check", ["check", "Jack", "edit", "src/a.py"])
            qid = timed("ask", ["ask", "Jack", "Which way?", "--json"])["question_id"]
            _run(
                captain
                + ["answer", "Jack", qid, "This way", "--assignment", recruit["assignment_id"]],
                base,
            )
            assert "This way" in timed("inbox (mail waiting)", ["inbox", "Jack"])
            assert "No unread mail" in timed("inbox (nothing waiting)", ["inbox", "Jack"])
            assert '"block"' in timed("hook claude Stop", ["hook", "claude", "Stop"], stop)
            before = new_turn(len(results["hook claude Stop (spend)"]))
            out = timed("hook claude Stop (spend)", ["hook", "claude", "Stop"], spend_stop)
            assert '"block"' in out
            recorded(before)
            gated_turn(len(results["hook claude PreToolUse (budget)"]))
            said = timed(
                "hook claude PreToolUse (budget)", ["hook", "claude", "PreToolUse"], pre_tool
            )
            assert said == "", said  # under the budget: the call runs
    base_ms = statistics.median(results["python -c pass"])
    rows = []
    for name, values in results.items():
        median = statistics.median(values)
        if name in BASELINES:
            rows.append(
                {
                    "what": BASELINES[name],
                    "measured": f"{median:.0f} ms median",
                    "budget": "—",
                    "verdict": "info",
                    "median_ms": median,
                }
            )
            continue
        rows.append(
            {
                "what": f"crew-side `captain {name}` cold start",
                "measured": f"{median:.0f} ms median (x{median / base_ms:.1f} the "
                f"baseline; min {min(values):.0f})",
                "budget": "median <= 150 ms",
                "verdict": "met" if median <= 150 else "MISSED",
                "median_ms": median,
                "ratio": median / base_ms,
            }
        )
    machine = (
        f"{platform.machine()}, {os.cpu_count()} cores, Python "
        f"{platform.python_version()}, load {os.getloadavg()[0]:.2f}"
    )
    print_report(f"machine: {machine}, {args.runs} runs each", rows)
    write_json(args.json, {"machine": machine, "runs": args.runs, "raw_ms": results, "rows": rows})
    return 0


if __name__ == "__main__":
    run_script(main)

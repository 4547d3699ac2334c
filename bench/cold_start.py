"""Cold start of the crew-side commands (budget: median <= 150 ms, docs/design.md) and of
the captain's (#28 budget 1: median <= 120 ms, <= 6x `python -c pass`, <= 0.4x the anchor).

Runs each command as a fresh process, the way an agent pane runs it, N times against a
throwaway home, and prints medians as a Markdown table. `ask` is measured on its success
path: the question is answered (untimed) between runs. `inbox` is measured twice: with the
answer waiting (delivered, then read) and with nothing waiting. `hook claude Stop` runs with
no mail waiting on an unfinished assignment (it blocks the stop), the common case; `hook
claude Stop (spend)` the same with a transcript holding one new turn, which it measures
(docs/ledger.md "Spend") and hands to the detached recorder. `hook claude PreToolUse
(budget)` is the budget's gate before every tool call (docs/budgets.md): the assignment has
a budget, its transcript one new turn, which the gate measures and finds under it; `(no
budget)` the same hook of a second crew, recorded only, whose assignment has none (the
common case: the hook runs before every tool call all the same, since a budget can be set
at any time).

The captain's commands -- `status` with 20 crew, `tell`, `answer`, `wait --timeout 0`
(nothing waiting) and `work list` -- run the same way against a second throwaway home whose
crew are recorded only (`--no-launch`: no pane to ring, and no tmux server on the default
socket) in a project directory that is not a git repository (so `status` runs no git for
their changes). `answer` answers a question the crew asked (untimed) just before. `status`
is measured once more on a third home whose crews each work in a worktree of their own of
one real git repository (the default in a git project), each left as an agent leaves it:
one commit on its branch, a modified file and an untracked one not committed, so the row
shows every crew's change shape (read with git) as `captain status` does.

The anchor is another program's `--version`: captain-barbossa (a PyPI package), installed
once into a throwaway venv in the temp directory (its row says why not when it cannot be
installed here, e.g. offline); --smoke leaves it out.

    python bench/cold_start.py [--runs 10] [--crews 20] [--smoke] [--json PATH]

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


# The anchor: a comparable program's cold start (issue #28), measured in the same run.
ANCHOR = "captain-barbossa==0.47.2"
ANCHOR_ROW = "anchor: captain-barbossa 0.47.2 `captain --version` (a PyPI package; same run)"
CAPTAIN_BUDGET_MS = 120
CAPTAIN_BUDGET_X_PASS = 6.0
CAPTAIN_BUDGET_X_ANCHOR = 0.4


def _anchor() -> tuple[list[str] | None, str | None]:
    """(the anchor's ``--version`` command, None), or (None, why it cannot run here).

    Installed once into a venv of its own under the temp directory and kept for the next
    run; one without its ``complete`` stamp (an install that was killed) is made again."""
    name, version = ANCHOR.split("==")
    where = Path(tempfile.gettempdir()) / (
        f"captain-bench-anchor-{name}-{version}-py{sys.version_info[0]}{sys.version_info[1]}"
    )
    program = where / "bin" / "captain"
    if not (where / "complete").exists():
        shutil.rmtree(where, ignore_errors=True)
        try:
            subprocess.run(
                [sys.executable, "-m", "venv", str(where)], check=True, capture_output=True
            )
            proc = subprocess.run(
                [
                    str(where / "bin" / "python"),
                    "-m",
                    "pip",
                    "install",
                    "--quiet",
                    "--disable-pip-version-check",
                    "--no-input",
                    ANCHOR,
                ],
                capture_output=True,
                text=True,
                timeout=600,
            )
        except (OSError, subprocess.SubprocessError) as exc:
            return None, f"could not make a venv for {ANCHOR}: {exc}"
        if proc.returncode != 0:
            last = (proc.stderr.strip().splitlines() or ["no output"])[-1]
            return None, f"pip could not install {ANCHOR} (offline?): {last}"
        if not program.exists():
            return None, f"{ANCHOR} installed no `captain` program"
        (where / "complete").touch()
    proc = subprocess.run([str(program), "--version"], capture_output=True, text=True)
    if proc.returncode != 0 or version not in proc.stdout:
        return None, f"{program} --version did not answer {version}: {proc.stderr.strip()[-200:]}"
    return [str(program), "--version"], None


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
    parser.add_argument("--crews", type=int, default=20, help="crew in the captain's home")
    parser.add_argument(
        "--smoke", action="store_true", help=f"{SMOKE}: --runs 1, --crews 2, no anchor"
    )
    parser.add_argument("--json", type=Path, default=None, help="also write results here")
    args = parser.parse_args()
    if args.smoke:
        args.runs, args.crews = 1, 2
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
            "hook claude PreToolUse (no budget)": [],
        }
        stop = json.dumps({"session_id": "bench", "stop_hook_active": False})

        def timed(
            name: str, argv: list[str], stdin: str | None = None, env: dict | None = None
        ) -> Any:
            start = time.perf_counter()
            proc = subprocess.run(
                captain + argv, env=env or crew_env, input=stdin, capture_output=True, text=True
            )
            results[name].append((time.perf_counter() - start) * 1000)
            assert proc.returncode == 0, f"{name}: {proc.stdout[-500:]} {proc.stderr[-500:]}"
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

        # a crew with no budget: the same gate, with nothing to measure against
        _, proc = _run(
            captain
            + ["crew", "Nob", "--task", "bench", "--owns", "lib", "--allow", "edit", "--json"]
            + ["--cwd", tmp, "--no-launch"],
            base,
        )
        assert proc.returncode == 0, proc.stdout + proc.stderr
        unbudgeted_env = {**base, **json.loads(proc.stdout)["env"]}

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
            said = timed(
                "hook claude PreToolUse (no budget)",
                ["hook", "claude", "PreToolUse"],
                pre_tool,
                unbudgeted_env,
            )
            assert said == "", said  # no budget: the call runs
    anchor_cmd, anchor_why = (None, "left out in --smoke") if args.smoke else _anchor()
    captain_results = _captain_side(captain, base, args.runs, args.crews, anchor_cmd, results)
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
    rows += _captain_rows(captain_results, base_ms, args.crews, anchor_why)
    machine = (
        f"{platform.machine()}, {os.cpu_count()} cores, Python "
        f"{platform.python_version()}, load {os.getloadavg()[0]:.2f}"
    )
    print_report(f"machine: {machine}, {args.runs} runs each", rows)
    write_json(
        args.json,
        {
            "machine": machine,
            "runs": args.runs,
            "crews": args.crews,
            "raw_ms": {**results, **captain_results},
            "rows": rows,
        },
    )
    return 0


CAPTAIN_SIDE = (
    "status",
    "status (git worktrees)",
    "tell",
    "answer",
    "wait --timeout 0",
    "work list",
)
# git's identity for the crews' commits in the bench's repository (the user's config aside)
GIT_ENV = {
    "GIT_AUTHOR_NAME": "Bench",
    "GIT_AUTHOR_EMAIL": "bench@example.invalid",
    "GIT_COMMITTER_NAME": "Bench",
    "GIT_COMMITTER_EMAIL": "bench@example.invalid",
    "GIT_CONFIG_NOSYSTEM": "1",
    "LC_ALL": "C",
}


def _git(cwd: Path, *args: str) -> str:
    env = {k: v for k, v in os.environ.items() if not k.startswith("GIT_")} | GIT_ENV
    proc = subprocess.run(["git", *args], cwd=cwd, env=env, capture_output=True, text=True)
    assert proc.returncode == 0, (args, proc.stdout, proc.stderr)
    return proc.stdout


def _worktree_crews(captain: list[str], env: dict[str, str], tmp: Path, crews: int) -> None:
    """A home whose ``crews`` crew each work in a worktree of their own of one git
    repository (40 files), each with one commit on its branch (a file changed), one file
    modified and one untracked file not committed: what an agent leaves."""
    project = tmp / "repo"
    for i in range(40):
        path = project / "src" / f"m{i:02d}" / "code.py"
        path.parent.mkdir(parents=True)
        path.write_text("".join(f"line_{n} = {n}\n" for n in range(60)))
    (project / "README.md").write_text("the bench's project\n")
    _git(project, "init", "-q", "-b", "main")
    _git(project, "add", "-A")
    _git(project, "commit", "-q", "-m", "first")
    for i in range(crews):
        name = f"Tree{i:02d}"
        _, proc = _run(
            captain
            + ["crew", name, "--task", f"bench {i}", "--owns", f"src/m{i % 40:02d}"]
            + ["--allow", "edit", "--json", "--cwd", str(project), "--no-launch"],
            env,
        )
        assert proc.returncode == 0, proc.stdout + proc.stderr
        top = Path(json.loads(proc.stdout)["workspace"]["worktree"])
        mine = top / "src" / f"m{i % 40:02d}" / "code.py"
        mine.write_text(mine.read_text() + f"committed_{i} = {i}\n")
        _git(top, "commit", "-q", "-am", f"crew {i}'s change")
        mine.write_text(mine.read_text().replace("line_3 = 3", f"line_3 = {100 + i}"))
        (mine.parent / "new.py").write_text(f"new_{i} = {i}\n")


def _captain_side(
    captain: list[str],
    base: dict[str, str],
    runs: int,
    crews: int,
    anchor: list[str] | None,
    baselines: dict[str, list[float]],
) -> dict[str, list[float]]:
    """The captain's commands, each a fresh process, ``runs`` times, interleaved with
    ``python -c pass`` (into ``baselines``) and the anchor's ``--version``."""
    results: dict[str, list[float]] = {name: [] for name in CAPTAIN_SIDE}
    if anchor is not None:
        results["anchor"] = []
    with tempfile.TemporaryDirectory() as tmp:
        env = {**base, "CAPTAIN_HOME": str(Path(tmp) / "home")}
        project = Path(tmp) / "project"  # not a git repository: status runs no git
        project.mkdir()
        recruits = []
        for i in range(crews):
            _, proc = _run(
                captain
                + ["crew", f"Crew{i:02d}", "--task", f"bench {i}", "--owns", f"src/{i}"]
                + ["--allow", "edit", "--json", "--cwd", str(project), "--no-launch"],
                env,
            )
            assert proc.returncode == 0, proc.stdout + proc.stderr
            recruits.append(json.loads(proc.stdout))
        first, second = recruits[0], recruits[-1]
        asker = {**env, **second["env"]}
        trees = {**base, "CAPTAIN_HOME": str(Path(tmp) / "trees-home")}
        has_git = shutil.which("git") is not None  # else its row says so; the rest run
        if has_git:
            _worktree_crews(captain, trees, Path(tmp), crews)

        def timed(name: str, argv: list[str], expect: str) -> None:
            ms, proc = _run(captain + argv, env)
            assert proc.returncode == 0 and expect in proc.stdout, (argv, proc.stdout, proc.stderr)
            results[name].append(ms)

        def one_round(n: int, keep: bool) -> None:
            ask = _run(captain + ["ask", second["crew"], f"Which way {n}?", "--json"], asker)[1]
            assert ask.returncode == 0, ask.stdout + ask.stderr
            question = json.loads(ask.stdout)["question_id"]
            rounds = [
                ("status", ["status"], first["crew"]),
                (
                    "tell",
                    ["tell", first["crew"], f"note {n}", "--assignment", first["assignment_id"]],
                    "Queued",
                ),
                (
                    "answer",
                    ["answer", second["crew"], question, f"This way {n}"]
                    + ["--assignment", second["assignment_id"]],
                    "Answered",
                ),
                ("wait --timeout 0", ["wait", first["crew"], "--timeout", "0"], "timeout"),
                ("work list", ["work", "list"], first["work_id"]),
            ]
            for name, argv, expect in rounds:
                if keep:
                    timed(name, argv, expect)
                else:
                    _run(captain + argv, env)
            # status on the worktrees' home: every crew's row shows its change (two files,
            # +3 -1, both uncommitted), read with git
            if has_git:
                ms, proc = _run(captain + ["status"], trees)
                shown = proc.stdout.count("2f +3 -1 u2")
                assert proc.returncode == 0 and shown == crews, (proc.stdout, proc.stderr)
                if keep:
                    results["status (git worktrees)"].append(ms)
            if keep:
                baselines["python -c pass"].append(_run([sys.executable, "-c", "pass"], base)[0])
                if anchor is not None:
                    results["anchor"].append(_run(anchor, base)[0])

        one_round(-1, keep=False)  # warm-up: bytecode written, the anchor's too
        if anchor is not None:
            _run(anchor, base)
        for n in range(runs):
            one_round(n, keep=True)
    return results


def _captain_rows(
    results: dict[str, list[float]], base_ms: float, crews: int, anchor_why: str | None
) -> list[dict]:
    rows = []
    anchor_ms = statistics.median(results["anchor"]) if results.get("anchor") else None
    if anchor_ms is not None:
        rows.append(
            {
                "what": ANCHOR_ROW,
                "measured": f"{anchor_ms:.0f} ms median",
                "budget": "—",
                "verdict": "info",
                "median_ms": anchor_ms,
            }
        )
    elif anchor_why != "left out in --smoke":
        rows.append(
            {
                "what": ANCHOR_ROW,
                "measured": f"cannot run here: {anchor_why}",
                "budget": "—",
                "verdict": "not run",
            }
        )
    for name in CAPTAIN_SIDE:
        values = results[name]
        if not values:  # status in git worktrees, with no git here
            rows.append(
                {
                    "what": f"captain-side `captain {name}` cold start",
                    "measured": "cannot run here: git is not installed",
                    "budget": "—",
                    "verdict": "not run",
                }
            )
            continue
        median = statistics.median(values)
        x_pass = median / base_ms
        x_anchor = median / anchor_ms if anchor_ms else None
        said = f"{median:.0f} ms median (x{x_pass:.1f} `python -c pass`"
        said += f", x{x_anchor:.2f} the anchor" if x_anchor is not None else ", no anchor"
        said += f"; min {min(values):.0f})"
        misses = []
        if median > CAPTAIN_BUDGET_MS:
            misses.append(f"+{median - CAPTAIN_BUDGET_MS:.0f} ms")
        if x_pass > CAPTAIN_BUDGET_X_PASS:
            misses.append(f"x{x_pass:.1f} > x{CAPTAIN_BUDGET_X_PASS:.0f}")
        if x_anchor is not None and x_anchor > CAPTAIN_BUDGET_X_ANCHOR:
            misses.append(f"x{x_anchor:.2f} > x{CAPTAIN_BUDGET_X_ANCHOR}")
        shown = {
            "status": f"status ({crews} crew)",
            "status (git worktrees)": f"status ({crews} crew, each in its own git worktree)",
        }.get(name, name)
        rows.append(
            {
                "what": f"captain-side `captain {shown}` cold start",
                "measured": said,
                "budget": f"median <= {CAPTAIN_BUDGET_MS} ms, <= x{CAPTAIN_BUDGET_X_PASS:.0f} "
                f"`python -c pass`, <= x{CAPTAIN_BUDGET_X_ANCHOR} the anchor",
                "verdict": "met" if not misses else f"MISSED ({', '.join(misses)})",
                "median_ms": median,
                "ratio": x_pass,
                "ratio_anchor": x_anchor,
            }
        )
    return rows


if __name__ == "__main__":
    run_script(main)

"""Cold start of the crew-side commands (budget: median <= 150 ms, DESIGN.md).

Runs each command as a fresh process, the way an agent pane runs it, N times against a
throwaway home, and prints medians as a Markdown table. `ask` is measured on its success
path: the question is answered (untimed) between runs.

    python bench/cold_start.py [--runs 10]
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
    args = parser.parse_args()
    captain = _captain()
    with tempfile.TemporaryDirectory() as tmp:
        base = {k: v for k, v in os.environ.items() if not k.startswith("CAPTAIN_")}
        base["CAPTAIN_HOME"] = str(Path(tmp) / "home")
        _, proc = _run(captain + ["crew", "Jack", "--task", "bench", "--owns", "src",
                                  "--allow", "edit", "--json", "--cwd", tmp], base)
        recruit = json.loads(proc.stdout)
        crew_env = {**base, **recruit["env"]}
        results: dict[str, list[float]] = {"python -c pass": [], "check": [], "ask": [],
                                           "inbox": []}
        for _ in range(args.runs):
            results["python -c pass"].append(_run([sys.executable, "-c", "pass"], base)[0])
            ms, proc = _run(captain + ["check", "Jack", "edit", "src/a.py"], crew_env)
            assert proc.returncode == 0, proc.stderr
            results["check"].append(ms)
            ms, proc = _run(captain + ["ask", "Jack", "Which way?", "--json"], crew_env)
            assert proc.returncode == 0, proc.stderr
            results["ask"].append(ms)
            qid = json.loads(proc.stdout)["question_id"]
            _run(captain + ["answer", "Jack", qid, "This way", "--assignment",
                            recruit["assignment_id"]], base)
            ms, proc = _run(captain + ["inbox", "Jack"], crew_env)
            assert proc.returncode == 0, proc.stderr
            results["inbox"].append(ms)
    print(f"machine: {platform.machine()}, {os.cpu_count()} cores, Python "
          f"{platform.python_version()}, {args.runs} runs each\n")
    print("| command | median ms | min ms | max ms | budget |")
    print("|---|---|---|---|---|")
    for name, values in results.items():
        budget = "" if name.startswith("python") else "<= 150 ms median"
        print(f"| `{name}` | {statistics.median(values):.0f} | {min(values):.0f} | "
              f"{max(values):.0f} | {budget} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())

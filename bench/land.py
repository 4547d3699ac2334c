"""``captain land`` of a one-commit change without a test command (budget: <= 1 s,
docs/design.md), timed as a person runs it: a fresh ``captain land`` process, from its start
to its exit, the base branch moved and the user's checkout brought forward.

Each run recruits a crew (untimed, ``--no-launch``: no tmux) in a throwaway git repository,
commits one file in its worktree, says done, then times the land. Both modes of
``[review] land`` are measured (merge, the default, and rebase), with ``python -c pass`` in
the same run as the baseline.

    python bench/land.py [--runs 10] [--smoke] [--json PATH]
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench.report import SMOKE, latency_row, print_report, run_script, write_json  # noqa: E402

GIT_ENV = {
    "GIT_AUTHOR_NAME": "Bench",
    "GIT_AUTHOR_EMAIL": "bench@example.invalid",
    "GIT_COMMITTER_NAME": "Bench",
    "GIT_COMMITTER_EMAIL": "bench@example.invalid",
    "GIT_CONFIG_NOSYSTEM": "1",
}


def _captain() -> list[str]:
    found = shutil.which("captain", path=str(Path(sys.executable).parent))
    return [found] if found else [sys.executable, "-m", "captain_tui"]


def _git(cwd: Path | str, *args: str) -> None:
    env = {k: v for k, v in os.environ.items() if not k.startswith("GIT_")} | GIT_ENV
    subprocess.run(["git", *args], cwd=cwd, env=env, check=True, capture_output=True)


def _ok(argv: list[str], env: dict[str, str], cwd: Path) -> dict:
    proc = subprocess.run(argv, env=env, cwd=cwd, capture_output=True, text=True)
    assert proc.returncode == 0, (argv, proc.stdout, proc.stderr)
    return json.loads(proc.stdout)


def measure(mode: str, runs: int, tmp: Path) -> list[float]:
    captain = _captain()
    repo = tmp / mode / "project"
    repo.mkdir(parents=True)
    _git(repo, "init", "-q", "-b", "main")
    (repo / "README").write_text("bench\n")
    _git(repo, "add", "-A")
    _git(repo, "commit", "-q", "-m", "first")
    env = {k: v for k, v in os.environ.items() if not k.startswith("CAPTAIN_")}
    env["CAPTAIN_HOME"] = str(tmp / mode / "home")
    os.makedirs(env["CAPTAIN_HOME"], exist_ok=True)
    Path(env["CAPTAIN_HOME"], "config.toml").write_text(f'[review]\nland = "{mode}"\n')
    times = []
    for i in range(runs):
        name = f"c{i}"
        r = _ok(
            captain
            + ["crew", name, "--task", "bench", "--owns", f"part{i}", "--allow", "edit"]
            + ["--no-launch", "--json"],
            env,
            repo,
        )
        crew_env = {**env, **r["env"]}
        tree = Path(r["workspace"]["worktree"])
        (tree / f"part{i}").mkdir()
        (tree / f"part{i}" / "f.txt").write_text(f"{i}\n")
        _git(tree, "add", "-A")
        _git(tree, "commit", "-q", "-m", f"change {i}")
        _ok(captain + ["inbox", name, "--json"], crew_env, repo)
        _ok(captain + ["done", name, "--report", "done", "--json"], crew_env, repo)
        argv = captain + ["land", name, "--assignment", r["assignment_id"], "--json"]
        start = time.perf_counter()
        landed = _ok(argv, env, repo)
        times.append((time.perf_counter() - start) * 1000)
        assert landed["commit"] and (repo / f"part{i}" / "f.txt").exists(), landed
    return times


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=10)
    parser.add_argument("--smoke", action="store_true", help=f"{SMOKE}: --runs 1")
    parser.add_argument("--json", type=Path, default=None, help="also write results here")
    args = parser.parse_args()
    if args.smoke:
        args.runs = 1
    if not shutil.which("git"):
        from bench.report import CannotRun

        raise CannotRun("git is not installed")
    with tempfile.TemporaryDirectory() as tmp:
        base, floor = [], []
        env = {k: v for k, v in os.environ.items() if not k.startswith("CAPTAIN_")}
        env["CAPTAIN_HOME"] = str(Path(tmp) / "floor")
        for _ in range(args.runs):
            start = time.perf_counter()
            subprocess.run([sys.executable, "-c", "pass"], check=True)
            base.append((time.perf_counter() - start) * 1000)
            start = time.perf_counter()
            subprocess.run(_captain() + ["status"], env=env, check=True, capture_output=True)
            floor.append((time.perf_counter() - start) * 1000)
        results = {mode: measure(mode, args.runs, Path(tmp)) for mode in ("merge", "rebase")}
    rows = [
        latency_row(
            f"`captain land` of a one-commit change, {mode}, no test command",
            values,
            "p95 <= 1000 ms",
            1000,
        )
        for mode, values in results.items()
    ]
    rows.append(latency_row("`python -c pass` (baseline, same run)", base, "—"))
    rows.append(latency_row("`captain status` (any captain command's floor, same run)", floor, "—"))
    machine = (
        f"{platform.machine()}, {os.cpu_count()} cores, Python "
        f"{platform.python_version()}, load {os.getloadavg()[0]:.2f}"
    )
    print_report(f"machine: {machine}, {args.runs} runs each", rows)
    write_json(args.json, {"machine": machine, "raw_ms": results, "base_ms": base, "rows": rows})
    return 0


if __name__ == "__main__":
    run_script(main)

"""Approvals (docs/approvals.md): how soon a held permission hook hears the captain.

Each round runs the real hook as the agent does (``python -m captain_tui hook claude
PermissionRequest``, the crew's environment, the tool call's JSON on stdin) against a
throwaway home, then:

1. **Request raised -> listed.** From starting the hook's process to the request being in
   ``state.crew.approvals.open_requests`` (what ``captain approvals`` lists): the hook's
   cold start included. Info: the cockpit's Approvals row is timed by cockpit_budgets.py.
2. **Decision -> the hook returns.** From the call that writes the decision
   (``usecases.approve``, its own time included) to the hook's process having printed its
   answer and exited. Budget: p95 <= 200 ms (the hook polls every 20 ms).

    python bench/approvals_budgets.py [--rounds 20] [--quick] [--smoke] [--json PATH]
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from bench.report import SMOKE, latency_row, print_report, run_script, until, write_json  # noqa: E402

BUDGET_MS = 200.0


def rounds_of(root: Path, rounds: int) -> tuple[list[float], list[float]]:
    from captain_tui import usecases
    from state.crew import approvals, protocol
    from state.home import Home

    home = Home(root / "home")
    (home.root / "config.toml").write_text("[crew]\napproval_timeout = 60\n")
    project = root / "project"
    project.mkdir()
    jack = protocol.recruit(home, "Jack", "bench the approvals", cwd=str(project))
    env = {
        **{k: v for k, v in os.environ.items() if not k.startswith("CAPTAIN_")},
        **jack.env,
        "PYTHONPATH": str(REPO),
    }
    listed, answered = [], []
    for i in range(rounds):
        data = {
            "hook_event_name": "PermissionRequest",
            "tool_name": "Bash",
            "tool_input": {"command": f"make target-{i}"},
        }
        start = time.monotonic()
        proc = subprocess.Popen(
            [sys.executable, "-m", "captain_tui", "hook", "claude", "PermissionRequest"],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            env=env,
            cwd=project,
        )
        assert proc.stdin is not None and proc.stdout is not None  # both PIPE
        proc.stdin.write(json.dumps(data).encode())
        proc.stdin.close()
        found = until(
            lambda: approvals.open_requests(home, "Jack"), 30, "the request", interval=0.002
        )
        listed.append((time.monotonic() - start) * 1000)
        decided = time.monotonic()
        usecases.approve(home, "Jack", found[0].request.request_id, "allow")
        out = proc.stdout.read()
        proc.wait(30)
        answered.append((time.monotonic() - decided) * 1000)
        if b'"allow"' not in out:
            raise RuntimeError(f"the hook did not answer allow: {out[:200]!r}")
    return listed, answered


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=20)
    parser.add_argument("--quick", action="store_true", help="--rounds 5")
    parser.add_argument("--smoke", action="store_true", help=f"{SMOKE}: --rounds 1")
    parser.add_argument("--json", type=Path)
    args = parser.parse_args()
    rounds = 1 if args.smoke else 5 if args.quick else args.rounds
    tmp = Path(tempfile.mkdtemp(prefix="captain-bench-approvals-"))
    os.environ["CAPTAIN_HOME"] = str(tmp / "default-home")  # never the user's home
    load = f"{os.getloadavg()[0]:.2f}"
    try:
        listed, answered = rounds_of(tmp, rounds)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    rows = [
        latency_row(
            "agent runs its PermissionRequest hook -> the request is listed (the hook's "
            "cold start included)",
            listed,
            "info (the cockpit's row: the cockpit part)",
        ),
        latency_row(
            "captain approve -> the held hook has answered and exited",
            answered,
            f"p95 <= {BUDGET_MS:.0f} ms",
            BUDGET_MS,
        ),
    ]
    print_report(f"approvals, {os.cpu_count()} cores, load {load}", rows)
    write_json(args.json, {"rows": rows})
    return 0 if all(r["verdict"] != "MISSED" for r in rows) else 1


if __name__ == "__main__":
    run_script(main)

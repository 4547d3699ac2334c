"""A crew that dies -> ``captain wait`` returns ``error`` (budget in docs/design.md).

1. the agent's process killed (SIGKILL) -> a running ``captain wait NAME`` returns its
   ``error`` (tmux's pane-died hook or the runner's pidfd watch, whichever is first;
   p95 <= 2 s);
2. the same with no runner alive: how soon tmux's hook alone records it, and how often it
   does (a tmux built with libutempter can lose the SIGCHLD; then the next runner does);
3. the whole tmux server killed -> ``captain wait`` returns it (the slow probe; no budget).

Each run recruits a crew through the real CLI into a private tmux server, lets it read its
mail (unread mail would bounce first), arms ``captain wait``, kills, and times the line
``wait`` prints. The crew is dismissed afterwards, so every run is one fresh death.

    python bench/crew_death.py [--runs 20] [--smoke] [--json PATH]
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time
import uuid
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from bench.report import (  # noqa: E402
    SMOKE,
    latency_row,
    need_tmux,
    print_report,
    run_script,
    write_json,
)
from captain_tui.runtime.tmux import socket_path_for  # noqa: E402

# the pane's own process, alone on its terminal (the shell tmux starts execs it), as an
# agent CLI is: killed, its terminal closes at once (the path where a tmux built with
# libutempter can lose the SIGCHLD, and the runner's pidfd watch has to notice)
SLEEPER = "sleep 600"


class Bench:
    def __init__(self, tmp: Path) -> None:
        self.env = {
            k: v for k, v in os.environ.items() if not k.startswith("CAPTAIN_") and k != "TMUX"
        }
        self.env.update(CAPTAIN_HOME=str(tmp / "home"), PYTHONPATH=str(REPO))
        self.cwd = tmp

    def captain(self, *args: str, env: dict | None = None) -> dict:
        proc = subprocess.run(
            [sys.executable, "-m", "captain_tui", *args, "--json"],
            env={**self.env, **(env or {})},
            cwd=self.cwd,
            capture_output=True,
            text=True,
            timeout=60,
        )
        out = json.loads(proc.stdout or "{}")
        if not out.get("ok"):
            raise RuntimeError(f"captain {' '.join(args)}: {proc.stdout} {proc.stderr}")
        return out

    def one(self, name: str, socket: str, kill) -> float:
        """Recruit, read the mail, arm a wait, kill; milliseconds until wait answers."""
        r = self.captain("crew", name, "--task", "bench", "--command", SLEEPER, "--socket", socket)
        self.captain("inbox", name, env=r["env"])
        waiter = subprocess.Popen(
            [sys.executable, "-m", "captain_tui", "wait", name, "--timeout", "60", "--json"],
            env=self.env,
            cwd=self.cwd,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        try:
            time.sleep(1.0)  # the waiter is up and sleeping on inotify
            start = time.monotonic()
            kill(r)
            assert waiter.stdout is not None  # stdout=PIPE
            line = waiter.stdout.readline()
            took = (time.monotonic() - start) * 1000
            got = json.loads(line)
            if got.get("status") != "error":
                raise RuntimeError(f"{name}: wait returned {line.strip()}")
            waiter.wait(timeout=10)
        finally:
            if waiter.poll() is None:
                waiter.kill()
                waiter.wait()
        self.captain("wait", name, "--ack", got["delivery_id"], "--timeout", "0")
        self.captain("dismiss", name)
        return took

    def hook_alone(self, name: str, socket: str, limit: float = 5.0) -> float | None:
        """No runner: kill, then watch the home for the hook's record (None: not within
        ``limit`` seconds)."""
        r = self.captain("crew", name, "--task", "bench", "--command", SLEEPER, "--socket", socket)
        self.captain("inbox", name, env=r["env"])
        note = (
            self.cwd
            / "home"
            / "notifications"
            / name.lower()
            / f"dlv_{r['incarnation_id'].split('_', 1)[1]}.json"
        )
        time.sleep(0.5)
        start = time.monotonic()
        os.kill(r["pane"]["pane_pid"], signal.SIGKILL)
        while not note.exists() and time.monotonic() - start < limit:
            time.sleep(0.005)
        took = (time.monotonic() - start) * 1000 if note.exists() else None
        self.captain("dismiss", name)  # its error (late or not) stays unacknowledged
        return took


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=20)
    parser.add_argument("--smoke", action="store_true", help=f"{SMOKE}: one run of each kind")
    parser.add_argument("--json", type=Path, default=None, help="also write results here")
    args = parser.parse_args()
    if args.smoke:
        args.runs = 1
    need_tmux()
    tmp = Path(tempfile.mkdtemp())
    bench = Bench(tmp)
    sockets = []

    def new_socket() -> str:
        sockets.append(socket_path_for(f"captain-bench-{uuid.uuid4().hex[:8]}"))
        return sockets[-1]

    try:
        socket = new_socket()
        killed = [
            bench.one(f"K{i}", socket, lambda r: os.kill(r["pane"]["pane_pid"], signal.SIGKILL))
            for i in range(args.runs)
        ]
        alone = [
            bench.hook_alone(f"H{i}", socket)
            for i in range(1 if args.smoke else max(5, args.runs // 2))
        ]
        server = []
        for i in range(1 if args.smoke else max(3, args.runs // 4)):
            own = new_socket()
            server.append(
                bench.one(
                    f"S{i}",
                    own,
                    lambda r, own=own: subprocess.run(
                        ["tmux", "-S", own, "kill-server"], capture_output=True
                    ),
                )
            )
    finally:
        for socket in sockets:
            subprocess.run(["tmux", "-S", socket, "kill-server"], capture_output=True)
            Path(socket).unlink(missing_ok=True)
        shutil.rmtree(tmp, ignore_errors=True)

    machine = f"{os.uname().machine}, {os.cpu_count()} cores, load {os.getloadavg()[0]:.2f}"
    rows = []
    fired = [v for v in alone if v is not None]
    if fired:
        rows.append(
            {
                "what": f"agent killed, no runner alive -> tmux's pane-died hook alone records the "
                f"error ({len(alone)} runs)",
                "measured": f"{len(fired)} of {len(alone)} within 5 s: p50 "
                f"{statistics.median(fired):.0f} / max {max(fired):.0f} ms (the rest "
                "when a runner starts)",
                "budget": "—",
                "verdict": "info",
                "recorded": len(fired),
                "runs": len(alone),
            }
        )
    for name, values, budget, limit in (
        (
            "agent killed (SIGKILL) -> captain wait returns error (hook or the runner's "
            "pidfd watch)",
            killed,
            "p95 <= 2000 ms",
            2000,
        ),
        ("tmux server killed -> captain wait returns error (the slow probe)", server, "—", None),
    ):
        rows.append(latency_row(name, values, budget, limit))
    print_report(f"machine: {machine}", rows)
    write_json(
        args.json,
        {
            "machine": machine,
            "rows": rows,
            "raw_ms": {"killed": killed, "alone": alone, "server": server},
        },
    )
    return 0


if __name__ == "__main__":
    run_script(main)

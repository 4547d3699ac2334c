"""Doorbell and wait latencies against real tmux (budgets in docs/design.md).

1. mail written, gates clear -> the keys arrive in the crew's pane (p95 <= 500 ms);
2. a held gate clears (a person clears their draft) -> the held mail lands (<= 2 s),
   with a real `captain wait` retrying the doorbell, as in use;
3. a notification written -> a running `captain wait` returns it (p95 <= 100 ms).

The crew is the simulated agent (captain_tui.cockpit.simcrew), which logs the time each line
reaches it. The per-crew cooldown is a gate, not latency: it is set to 0 here.

    python bench/doorbell_latency.py [--rounds 20] [--smoke] [--json PATH]
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
import uuid
from datetime import timedelta
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from bench.report import (  # noqa: E402
    SMOKE,
    latency_row,
    need_tmux,
    print_report,
    run_script,
    until,
    write_json,
)
from captain_tui.runtime import doorbell  # noqa: E402
from captain_tui.runtime.tmux import socket_path_for  # noqa: E402
from state import clock  # noqa: E402
from state.crew import crewlog, mailbox, notify, protocol  # noqa: E402
from state.home import Home  # noqa: E402


def _received(log: Path, after: float) -> float | None:
    if not log.exists():
        return None
    for raw in log.read_text().splitlines():
        entry = json.loads(raw)
        if entry["kind"] == "line" and entry["at"] > after:
            return entry["at"]
    return None


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=20)
    parser.add_argument("--smoke", action="store_true", help=f"{SMOKE}: --rounds 1, one held gate")
    parser.add_argument("--json", type=Path, default=None, help="also write results here")
    args = parser.parse_args()
    if args.smoke:
        args.rounds = 1
    need_tmux()
    doorbell.COOLDOWN = timedelta(0)
    socket = socket_path_for(f"captain-bench-{uuid.uuid4().hex[:8]}")
    tmp = Path(tempfile.mkdtemp())
    env = {**os.environ, "CAPTAIN_HOME": str(tmp / "home"), "PYTHONPATH": str(REPO)}
    log = tmp / "sim.log"
    try:
        out = subprocess.run(
            [
                sys.executable,
                "-m",
                "captain_tui",
                "crew",
                "Sim",
                "--task",
                "bench",
                "--command",
                f"{sys.executable} -m captain_tui.cockpit.simcrew --log {log}",
                "--socket",
                socket,
                "--json",
            ],
            env=env,
            cwd=tmp,  # not the checkout it runs from: a git project gives a crew a worktree
            capture_output=True,
            text=True,
        )
        recruit = json.loads(out.stdout)
        pane = recruit["pane"]["pane_id"]
        home = Home(tmp / "home")
        time.sleep(doorbell.DEFAULT_GRACE + 0.5)
        until(lambda: doorbell.ring(home, "Sim").action == "rang")

        def unread():
            return mailbox.unread(home, "sim", crewlog.load(home, "sim")[0])

        def settled():
            """No unread mail, and every inbox run a ring started has finished (a late one
            would read the next round's mail)."""
            entries = [json.loads(x) for x in log.read_text().splitlines()]
            asked = sum(e["kind"] == "line" and "captain inbox" in e["text"] for e in entries)
            done = sum(e["kind"] == "inbox" for e in entries)
            return not unread() and asked == done

        ring_ms = []
        for i in range(args.rounds):
            until(settled)
            time.sleep(2.1)  # let window_activity age, as for a crew that sat idle
            start = time.time()
            protocol.tell(home, "Sim", f"round {i}", assignment_id=recruit["assignment_id"])
            doorbell.ring(home, "Sim")  # what `captain tell` does right after writing
            got = until(lambda: _received(log, start))
            ring_ms.append((got - start) * 1000)

        release_ms = []
        for i in range(1 if args.smoke else max(3, args.rounds // 4)):
            until(settled)
            subprocess.run(["tmux", "-S", socket, "send-keys", "-t", pane, "-l", "draft"])
            time.sleep(0.5)
            protocol.tell(home, "Sim", f"held {i}", assignment_id=recruit["assignment_id"])
            waiter = subprocess.Popen(
                [sys.executable, "-m", "captain_tui", "wait", "Sim", "--timeout", "20", "--json"],
                env=env,
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                text=True,
            )
            try:
                until(lambda: doorbell.read_stamp(home, "sim").gate == "human_draft")
            except TimeoutError:
                waiter.kill()
                print(
                    "stamp:",
                    doorbell.read_stamp(home, "sim"),
                    "waiter:",
                    waiter.communicate(),
                    file=sys.stderr,
                )
                raise
            cleared = time.time()
            subprocess.run(["tmux", "-S", socket, "send-keys", "-t", pane, "C-u"])
            got = until(lambda: _received(log, cleared))
            release_ms.append((got - cleared) * 1000)
            waiter.kill()
            waiter.wait()

        wait_ms = []
        previous = None
        for i in range(args.rounds):
            cmd = [
                sys.executable,
                "-m",
                "captain_tui",
                "wait",
                "Sim",
                "--timeout",
                "30",
                "--json",
            ] + (["--ack", previous] if previous else [])
            waiter = subprocess.Popen(cmd, env=env, stdout=subprocess.PIPE, text=True)
            time.sleep(1.0)  # the waiter is up and sleeping on inotify
            start = time.time()
            notify.signal(home, "Sim", "error", f"bench {i}", at=clock.now())
            line = waiter.stdout.readline()
            wait_ms.append((time.time() - start) * 1000)
            previous = json.loads(line)["delivery_id"]
            waiter.wait()
    finally:
        subprocess.run(["tmux", "-S", socket, "kill-server"], capture_output=True)
        Path(socket).unlink(missing_ok=True)
        shutil.rmtree(tmp, ignore_errors=True)

    machine = f"{os.uname().machine}, {os.cpu_count()} cores, load {os.getloadavg()[0]:.2f}"
    rows = []
    for name, values, budget, limit, stat in (
        ("mail written, gates clear -> keys in the pane", ring_ms, "p95 <= 500 ms", 500, "p95"),
        (
            "gate clears (draft cleared) -> held mail lands, captain wait running",
            release_ms,
            "<= 2000 ms",
            2000,
            "max",
        ),
        ("notification written -> captain wait returns", wait_ms, "p95 <= 100 ms", 100, "p95"),
    ):
        rows.append(latency_row(name, values, budget, limit, judged_by=stat))
    print_report(f"machine: {machine}", rows)
    write_json(
        args.json,
        {
            "machine": machine,
            "rows": rows,
            "raw_ms": {"ring": ring_ms, "release": release_ms, "wait": wait_ms},
        },
    )
    return 0


if __name__ == "__main__":
    run_script(main)

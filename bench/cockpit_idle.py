"""The cockpit idle with 20 crew in live tmux panes (docs/design.md, "Budgets": <= 1 % of
one core over 60 s), split by process and by thread.

A home of ``--crews`` crew, each in a live tmux window on a private server (the real
launcher, running a program that sleeps: nothing changes), all mail read. The cockpit runs
as ``captain`` runs it (doorbell on, the watcher process, the preview following the
selected crew) in a process of its own, left alone; once it is warm, this script reads
``/proc/PID/stat`` (utime + stime) and ``/proc/PID/status`` (voluntary context switches:
wake-ups) before and after ``--seconds`` of idling, for:

- the cockpit process, thread by thread (the driver names its threads);
- what it ran and reaped meanwhile (tmux clients: ``capture-pane``, ``list-panes``; the
  cockpit's ``cutime + cstime``);
- its live children (the watcher process);
- the tmux server.

The baseline, from the same run: the same tmux server with the same panes and no cockpit,
over the same window, measured first (what the panes cost on their own).

This is the one measurement of the idle cockpit and ``BUDGET`` its one budget: the cockpit
part's idle row with every crew holding an approval request open
(``bench/cockpit_budgets.py``, ``approvals_phase``) is ``measure`` too, on its own home.

    python bench/cockpit_idle.py [--crews 20] [--seconds 60] [--quick] [--smoke] [--json PATH]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import platform
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from bench.report import SMOKE, need_tmux, print_report, run_script, write_json  # noqa: E402

BUDGET = 1.0  # % of one core, everything the idle cockpit costs (tmux server included)
# (docs/design.md's "Budgets" table; every idle row of the bench is judged against this)
SIZE = (160, 50)
TICK = os.sysconf("SC_CLK_TCK")
OURS = ("captain_tui", "state", "widgets")  # captain's own packages


def _log(text: str) -> None:
    print(f"[bench {time.strftime('%H:%M:%S')}] {text}", file=sys.stderr, flush=True)


# -- /proc ------------------------------------------------------------------------------------


def _stat(path: str) -> list[str] | None:
    try:
        return Path(path).read_text().rsplit(")", 1)[1].split()
    except OSError:
        return None


def _cpu(path: str, children: bool = False) -> float:
    """utime + stime (``children``: cutime + cstime, what it reaped) in seconds."""
    fields = _stat(path)
    if fields is None:
        return 0.0
    at = 13 if children else 11
    return (int(fields[at]) + int(fields[at + 1])) / TICK


def _wakeups(path: str) -> int:
    """Voluntary context switches: how often it went to sleep (and so woke up again)."""
    try:
        for line in Path(path).read_text().splitlines():
            if line.startswith("voluntary_ctxt_switches:"):
                return int(line.split()[1])
    except OSError:
        pass
    return 0


def _children_of(pid: int) -> list[int]:
    out = []
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            fields = _stat(f"/proc/{entry}/stat")
            if fields is not None and fields[1] == str(pid):
                out.append(int(entry))
    return out


class Sample:
    """CPU seconds and wake-ups of the cockpit (per thread), its reaped and live children,
    and the tmux server, at one moment."""

    def __init__(self, cockpit: int | None, server: int | None, threads: dict[int, str]) -> None:
        self.at = time.monotonic()
        self.threads: dict[str, tuple[float, int]] = {}
        self.live: dict[int, tuple[float, int]] = {}
        self.cockpit = self.reaped = 0.0
        self.cockpit_wakeups = 0
        if cockpit is not None:
            self.cockpit = _cpu(f"/proc/{cockpit}/stat")
            self.reaped = _cpu(f"/proc/{cockpit}/stat", children=True)
            for tid in os.listdir(f"/proc/{cockpit}/task"):
                base = f"/proc/{cockpit}/task/{tid}"
                name = threads.get(int(tid), "other thread")
                cpu, wakes = self.threads.get(name, (0.0, 0))
                self.threads[name] = (
                    cpu + _cpu(f"{base}/stat"),
                    wakes + _wakeups(f"{base}/status"),
                )
                self.cockpit_wakeups += _wakeups(f"{base}/status")
            for child in _children_of(cockpit):
                self.live[child] = (
                    _cpu(f"/proc/{child}/stat"),
                    sum(
                        _wakeups(f"/proc/{child}/task/{t}/status")
                        for t in os.listdir(f"/proc/{child}/task")
                    ),
                )
        self.server = _cpu(f"/proc/{server}/stat") if server else 0.0  # no tmux server
        self.server_wakeups = _wakeups(f"/proc/{server}/status") if server else 0


def split(before: Sample, after: Sample) -> dict:
    """What was spent between two samples, as % of one core and wake-ups a second."""
    wall = after.at - before.at

    def pct(seconds: float) -> float:
        return 100 * seconds / wall

    live_cpu = sum(after.live[p][0] - before.live[p][0] for p in before.live if p in after.live)
    live_wakes = sum(after.live[p][1] - before.live[p][1] for p in before.live if p in after.live)
    out: dict[str, Any] = {
        "wall_s": wall,
        "cockpit_pct": pct(after.cockpit - before.cockpit),
        "cockpit_wakeups_per_s": (after.cockpit_wakeups - before.cockpit_wakeups) / wall,
        "watcher_pct": pct(live_cpu),
        "watcher_wakeups_per_s": live_wakes / wall,
        "tmux_clients_pct": pct(after.reaped - before.reaped),
        "tmux_server_pct": pct(after.server - before.server),
        "tmux_server_wakeups_per_s": (after.server_wakeups - before.server_wakeups) / wall,
        "threads": {
            name: {
                "pct": pct(cpu - before.threads.get(name, (0.0, 0))[0]),
                "wakeups_per_s": (wakes - before.threads.get(name, (0.0, 0))[1]) / wall,
            }
            for name, (cpu, wakes) in after.threads.items()
        },
    }
    out["total_pct"] = sum(
        out[k] for k in ("cockpit_pct", "watcher_pct", "tmux_clients_pct", "tmux_server_pct")
    )
    return out


# -- the cockpit, in a process of its own -----------------------------------------------------


def driver(root: str, warm: float) -> int:
    """The cockpit as ``captain`` runs it (doorbell on), headless; once warm, one JSON line
    (its threads' names by native ID), then idle until stdin closes."""
    from captain_tui.cockpit.app import CaptainApp
    from state.home import Home

    async def main() -> None:
        app = CaptainApp(Home(Path(root)))
        async with app.run_test(size=SIZE, notifications=True):
            deadline = time.monotonic() + 300
            while not (app.scanned and app._watcher is not None):  # noqa: SLF001 - the bench
                if time.monotonic() > deadline:
                    raise TimeoutError("the cockpit never finished its first scan")
                await asyncio.sleep(0.1)
            await asyncio.sleep(warm)  # start-up work done: now it is idle
            import threading

            frames = sys._current_frames()  # noqa: SLF001 - which work each thread runs
            names = {
                t.native_id: _work_of(frames.get(t.ident or 0), t.name)
                for t in threading.enumerate()
                if t.native_id is not None
            }
            names[threading.main_thread().native_id or 0] = "main (Textual's event loop)"
            print(json.dumps({"threads": names}), flush=True)
            await asyncio.get_running_loop().run_in_executor(None, sys.stdin.readline)
            os._exit(0)  # the numbers are taken; tearing down is not measured

    asyncio.run(main())
    return 0


def _work_of(frame, default: str) -> str:
    """A thread's name: the outermost of captain's functions on its stack (a thread
    worker runs in an executor thread named ``asyncio_N``)."""
    found = default
    while frame is not None:
        code = frame.f_code
        if any(code.co_filename.startswith(f"{REPO}/{top}/") for top in OURS):
            found = f"{Path(code.co_filename).stem}.{code.co_name}"
        frame = frame.f_back
    return found


class Panes:
    """A private tmux server; ``launch`` opens each crew's window on it (the real launcher)."""

    def __init__(self) -> None:
        from captain_tui.runtime.tmux import socket_path_for

        self.socket = socket_path_for(f"captain-bench-idle-{os.getpid()}")

    def launch(self, home, name: str, key: str):
        from captain_tui.runtime.launch import launcher

        return launcher(
            home,
            name=name,
            key=key,
            agent="program",
            program="sleep 1000000",
            socket=self.socket,
            session="bench",
            cwd=str(home.root.parent),
        )

    def server_pid(self) -> int:
        out = subprocess.run(
            ["tmux", "-S", self.socket, "display-message", "-p", "#{pid}"],
            capture_output=True,
            text=True,
            check=True,
        )
        return int(out.stdout.strip())

    def kill(self) -> None:
        subprocess.run(["tmux", "-S", self.socket, "kill-server"], capture_output=True)
        Path(self.socket).unlink(missing_ok=True)


def measure(root: Path, panes: Panes | None, seconds: float, warm: float) -> dict:
    """The cockpit on ``root``, idle for ``seconds`` once warm, by process and by thread
    (``split``); with ``panes``, its tmux server too, and first the same server alone over
    the same window (``baseline``; None without panes)."""
    server = panes.server_pid() if panes is not None else None
    baseline = None
    if server is not None:
        _log(f"baseline: the tmux server with {seconds:.0f} s of no cockpit")
        before = Sample(None, server, {})
        time.sleep(seconds)
        baseline = split(before, Sample(None, server, {}))
    _log(f"the cockpit, idle for {seconds:.0f} s")
    proc = subprocess.Popen(
        [sys.executable, __file__, "--driver", str(root), "--warm", str(warm)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env={**os.environ, "PYTHONPATH": str(REPO)},
    )
    try:
        assert proc.stdout is not None and proc.stdin is not None
        line = proc.stdout.readline()
        if not line:
            why = proc.stderr.read()[-2000:] if proc.stderr is not None else ""
            raise RuntimeError(f"the cockpit driver failed: {why}")
        threads = {int(k): v for k, v in json.loads(line)["threads"].items()}
        before = Sample(proc.pid, server, threads)
        time.sleep(seconds)
        idle = split(before, Sample(proc.pid, server, threads))
        proc.stdin.close()
        proc.wait(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    return {"baseline": baseline, "idle": idle}


def rows(results: dict) -> list[dict]:
    idle, base = results["idle"], results["baseline"]
    crews, seconds = results["crews"], idle["wall_s"]
    threads = ", ".join(
        f"{name} {t['pct']:.2f} % / {t['wakeups_per_s']:.1f} wake-ups/s"
        for name, t in sorted(idle["threads"].items(), key=lambda kv: -kv[1]["pct"])
        if t["pct"] >= 0.005 or t["wakeups_per_s"] >= 0.05
    )
    total = idle["total_pct"]
    out = [
        {
            "what": f"cockpit idle, {crews} crew in live tmux panes, doorbell on, over "
            f"{seconds:.0f} s (load average {results['loadavg']})",
            "measured": f"{total:.2f} % of one core: cockpit {idle['cockpit_pct']:.2f}, "
            f"watcher process {idle['watcher_pct']:.2f}, tmux clients "
            f"{idle['tmux_clients_pct']:.2f}, tmux server {idle['tmux_server_pct']:.2f} "
            f"(baseline, same server without the cockpit: {base['tmux_server_pct']:.2f})",
            "budget": f"<= {BUDGET:g} %",
            "verdict": "met" if total <= BUDGET else "MISSED",
            "total_pct": total,
        },
        {
            "what": "cockpit idle: wake-ups a second (voluntary context switches)",
            "measured": f"cockpit {idle['cockpit_wakeups_per_s']:.1f}, watcher process "
            f"{idle['watcher_wakeups_per_s']:.1f}, tmux server "
            f"{idle['tmux_server_wakeups_per_s']:.1f} (baseline "
            f"{base['tmux_server_wakeups_per_s']:.1f}); by thread: {threads or 'none'}",
            "budget": "—",
            "verdict": "info",
        },
    ]
    return out


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--crews", type=int, default=20)
    parser.add_argument("--seconds", type=float, default=None, help="default 60; --quick 15")
    parser.add_argument("--warm", type=float, default=3.0, help=argparse.SUPPRESS)
    parser.add_argument("--quick", action="store_true", help="a 15 s window")
    parser.add_argument("--smoke", action="store_true", help=f"{SMOKE}: 3 crew, 0.5 s")
    parser.add_argument("--json", type=Path, default=None, help="also write results here")
    parser.add_argument("--driver", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.driver:
        return driver(args.driver, args.warm)
    need_tmux()
    if args.smoke:
        args.crews, args.seconds, args.warm = 3, 0.5, 0.2
    seconds = args.seconds or (15.0 if args.quick else 60.0)

    from bench.cockpit_budgets import build_home

    tmp = Path(tempfile.mkdtemp(prefix="captain-bench-idle-"))
    os.environ["CAPTAIN_CONFIG_DIR"] = str(tmp / "config")  # not the person's settings
    os.environ.pop("CAPTAIN_HOME", None)
    panes = Panes()
    load = " ".join(f"{x:.2f}" for x in os.getloadavg())
    try:
        root = tmp / "home"
        _log(f"{args.crews} crew in live tmux panes")
        build_home(
            root, args.crews, 25 * args.crews, 25 * args.crews, launch=panes.launch, unread_frac=0.0
        )
        results = {"crews": args.crews, "loadavg": load, **measure(root, panes, seconds, args.warm)}
    finally:
        panes.kill()
        shutil.rmtree(tmp, ignore_errors=True)
    results["loadavg_end"] = " ".join(f"{x:.2f}" for x in os.getloadavg())
    results["machine"] = f"{platform.platform()}, {os.cpu_count()} cores"
    results["rows"] = rows(results)
    print_report(
        f"machine: {results['machine']}; load average {load} at the start, "
        f"{results['loadavg_end']} at the end",
        results["rows"],
    )
    write_json(args.json, results)
    return 0 if results["rows"][0]["verdict"] == "met" else 1


if __name__ == "__main__":
    run_script(main)

"""The stress harness: workers under SIGKILL, a reader and a watcher, then the audit.

``run(tmp, seconds, brk)`` builds a real home in ``tmp``, starts the watcher (and waits
until inotify is set up), the reader and the workers' zygote, then SIGKILLs a random worker
every 20-300 ms and respawns it (same identity, next generation) until ``seconds`` have
passed. Then every worker is killed, the reader finishes its last pass, the watcher's index
is compared with a full rescan (polled until equal or a deadline), and ``Audit`` holds the
home to its invariants and to the workers' logs. The result carries every violation and a
one-line summary.

``run(..., ledger_url=URL)`` is the same run on a PostgreSQL ledger shared by two homes
(two hosts, on one machine): ``home-a`` and ``home-b`` each have their own crews, mail and
notifications (per host, as in production), and both name the same database in
``[ledger] url``. Workers alternate between the homes (``w0``, ``w2`` in ``home-a``; ``w1``,
``w3`` in ``home-b``), the one reader and the one watcher cover both homes' files, and the
audit reads the ledger through the backend, from the database (stress_checks).
"""

from __future__ import annotations

import json
import os
import random
import signal
import subprocess
import sys
import time
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

from stress_checks import Audit, Violation
from stress_layout import rescan_homes

from state.home import Home

HERE = Path(__file__).resolve().parent
REPO = HERE.parents[1]
WORKERS = 4
KILL_EVERY = (0.02, 0.3)  # seconds between two kills
CONFIG = "[ledger]\nslots = {slots}\nlease_seconds = 3600\n"
SLOTS = 64  # a file home: more than the workers ever hold (4 x stress_worker.SLOT_CAP)
# the shared ledger: fewer than the two hosts' workers would hold, so claims from both
# hosts meet a full ledger and "never more than slots" is a real contest between hosts
SHARED_SLOTS = 12
HOMES_SHARING = ("home-a", "home-b")  # on PostgreSQL: two hosts, one ledger
BREAK_ENV = "CAPTAIN_STRESS_BREAK"
SEED_ENV = "CAPTAIN_STRESS_SEED"
WATCHER_SETTLE = 60.0  # seconds the watcher gets to catch up once the writers are gone


@dataclass
class Outcome:
    seed: int
    seconds: float
    brk: str | None
    workers: int = WORKERS
    kills: int = 0
    spawns: int = 0
    violations: list[Violation] = field(default_factory=list)
    stats: dict = field(default_factory=dict)
    worker_errors: str = ""

    @property
    def kinds(self) -> Counter[str]:
        return Counter(v.kind for v in self.violations)

    ledger: str = "files"  # or "postgresql": two homes sharing one database
    homes: int = 1

    def summary(self) -> str:
        s = self.stats
        where = (
            "" if self.ledger == "files" else f"{self.homes} homes sharing one PostgreSQL ledger, "
        )
        return (
            f"stress{'' if self.ledger == 'files' else ' (postgresql)'}: {self.kills} "
            f"kills survived, {s.get('operations_checked', 0)} "
            f"operations checked, {s.get('reader_parses', 0)} reads by the reader, "
            f"watcher index {s.get('watcher_files', 0)} files = rescan: "
            f"{s.get('watcher_equal')}, violations: {len(self.violations)} "
            f"({where}{self.workers} workers, {self.seconds:.0f} s, seed {self.seed}"
            f"{', break ' + self.brk if self.brk else ''})"
        )

    def report(self) -> dict:
        return {
            "summary": self.summary(),
            "seed": self.seed,
            "seconds": self.seconds,
            "break": self.brk,
            "ledger": self.ledger,
            "homes": self.homes,
            "workers": self.workers,
            "kills": self.kills,
            "spawns": self.spawns,
            "violations": len(self.violations),
            "violation_kinds": dict(self.kinds),
            **self.stats,
        }

    def explain(self, limit: int = 40) -> str:
        lines = [self.summary(), f"violations by kind: {dict(self.kinds)}"]
        lines += [f"  {v}" for v in self.violations[:limit]]
        if len(self.violations) > limit:
            lines.append(f"  ... and {len(self.violations) - limit} more")
        if self.worker_errors.strip():
            lines.append("worker stderr (tail):\n" + self.worker_errors[-3000:])
        return "\n".join(lines)


def _env(brk: str | None) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("CAPTAIN_")}
    env["PYTHONPATH"] = str(REPO) + os.pathsep + env.get("PYTHONPATH", "")
    if brk:
        env[BREAK_ENV] = brk
    return env


def _poll(condition, timeout: float, what: str, interval: float = 0.05):
    deadline = time.monotonic() + timeout
    while True:
        value = condition()
        if value:
            return value
        if time.monotonic() >= deadline:
            raise TimeoutError(f"{what} within {timeout} s")
        time.sleep(interval)


class Zygote:
    """Forks workers on request and reports how each ended (see stress_worker)."""

    def __init__(self, roots: list[Path], logs: Path, project: Path, err: Path, env: dict) -> None:
        self.err_path = err
        self._err = open(err, "wb")
        self.proc = subprocess.Popen(
            [
                sys.executable,
                str(HERE / "stress_worker.py"),
                str(logs),
                str(project),
                *map(str, roots),
            ],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=self._err,
            text=True,
            env=env,
        )

    def _ask(self, line: str) -> str:
        self.proc.stdin.write(line + "\n")
        self.proc.stdin.flush()
        answer = self.proc.stdout.readline()
        if not answer:
            raise RuntimeError(f"the zygote died: {self.err_path.read_text()[-3000:]}")
        return answer.strip()

    def spawn(self, idx: int, gen: int, seed: int) -> int:
        return int(self._ask(f"spawn {idx} {gen} {seed}"))

    def reap(self, pid: int) -> int:
        return int(self._ask(f"reap {pid}"))

    def close(self) -> None:
        if self.proc.poll() is None:
            try:
                self.proc.stdin.write("quit\n")
                self.proc.stdin.flush()
                self.proc.wait(timeout=30)
            except (OSError, subprocess.TimeoutExpired):
                self.proc.kill()
                self.proc.wait()
        self._err.close()


def _stop(proc: subprocess.Popen, flag: Path, timeout: float) -> int | None:
    """Ask a helper to finish (its stop file), wait for it; kill it (by pid) if it will not."""
    flag.touch()
    try:
        return proc.wait(timeout=timeout)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()
        return None


def _read_lines(path: Path) -> list[dict]:
    out = []
    if path.exists():
        for line in path.read_bytes().splitlines():
            try:
                out.append(json.loads(line))
            except ValueError:
                continue  # a line torn by SIGKILL was never acknowledged
    return out


def _compare_watcher(roots: list[Path], ctl: Path, outcome: Outcome) -> None:
    """Poll the watcher's index until it equals a full rescan, or report the difference."""
    truth = rescan_homes(roots)
    deadline = time.monotonic() + WATCHER_SETTLE
    n, diff, stats = 0, None, {}
    while True:
        n += 1
        tmp = ctl / ".req"
        tmp.write_text(str(n))
        os.replace(tmp, ctl / "req")
        answer = ctl / f"index-{n}.json"
        try:
            _poll(answer.exists, max(1.0, deadline - time.monotonic()), "the watcher's index")
        except TimeoutError as late:
            outcome.violations.append(Violation("watcher", f"no answer: {late}"))
            return
        got = json.loads(answer.read_text())
        index, stats = got["index"], got["stats"]
        missing = sorted(set(truth) - set(index))
        extra = sorted(set(index) - set(truth))
        stale = sorted(p for p in set(truth) & set(index) if truth[p] != index[p])
        diff = (missing, extra, stale)
        if not any(diff) or time.monotonic() >= deadline:
            break
        time.sleep(0.2)
    outcome.stats.update(
        watcher_files=len(truth),
        watcher_equal=not any(diff),
        watcher_batches=stats.get("batches"),
        watcher_paths=stats.get("paths"),
        watcher_rescans=stats.get("rescans"),
        watcher_dir_rescans=stats.get("dir_rescans"),
        watcher_errors=stats.get("errors"),
    )
    if any(diff):
        missing, extra, stale = diff
        outcome.violations.append(
            Violation(
                "watcher",
                f"index != rescan after {WATCHER_SETTLE:.0f} s: {len(missing)} "
                f"missing {missing[:5]}, {len(extra)} extra {extra[:5]}, "
                f"{len(stale)} stale {stale[:5]}",
            )
        )
    for message in stats.get("error_messages", [])[:3]:
        outcome.stats.setdefault("watcher_error_messages", []).append(message[-300:])


def audit_home(roots: Path | list[Path], logs: Path) -> Audit:
    """Both phases of the audit over a home (or the homes sharing one ledger) and its
    workers' logs."""
    entries = []
    for log in sorted(logs.glob("w*.log")):
        entries += _read_lines(log)
    audit = Audit(roots, entries)
    audit.run()
    audit.run_after_repair()
    return audit


def home_roots(tmp: Path, ledger_url: str | None) -> list[Path]:
    """Where a run's homes are: one (its files are the ledger), or two sharing a database."""
    return [tmp / name for name in (HOMES_SHARING if ledger_url else ("home",))]


def run(
    tmp: Path,
    seconds: float,
    brk: str | None = None,
    seed: int | None = None,
    workers: int = WORKERS,
    ledger_url: str | None = None,
) -> Outcome:
    if seed is None:
        seed = int(os.environ.get(SEED_ENV) or random.randrange(2**32))
    rng = random.Random(seed)
    roots = home_roots(tmp, ledger_url)
    outcome = Outcome(
        seed=seed,
        seconds=seconds,
        brk=brk,
        workers=workers,
        ledger="postgresql" if ledger_url else "files",
        homes=len(roots),
    )
    logs, ctl, project = tmp / "logs", tmp / "watcher", tmp / "project"
    for d in (logs, ctl, project / "src"):
        d.mkdir(parents=True)
    config = CONFIG.format(slots=SHARED_SLOTS if ledger_url else SLOTS) + (
        f'url = "{ledger_url}"\n' if ledger_url else ""
    )
    for root in roots:
        Home(root)
        (root / "config.toml").write_text(config)
    env = _env(brk)
    helper_env = _env(None)  # the reader and the watcher are never broken
    started = time.monotonic()

    watcher_err = open(tmp / "watcher.err", "wb")
    watcher = subprocess.Popen(
        [sys.executable, str(HERE / "stress_watcher.py"), str(ctl), *map(str, roots)],
        env=helper_env,
        stderr=watcher_err,
        stdout=subprocess.DEVNULL,
    )
    reader_out, reader_stop = tmp / "reader.jsonl", tmp / "reader.stop"
    reader_err = open(tmp / "reader.err", "wb")
    reader = zygote = None
    pids: dict[int, int] = {}
    exits: list[tuple[int, int]] = []
    try:
        _poll(
            lambda: (ctl / "ready").exists() or watcher.poll() is not None,
            120,
            "the watcher set up inotify",
        )
        assert watcher.poll() is None, (tmp / "watcher.err").read_text()[-3000:]
        reader = subprocess.Popen(
            [
                sys.executable,
                str(HERE / "stress_reader.py"),
                str(reader_out),
                str(reader_stop),
                *map(str, roots),
            ],
            env=helper_env,
            stderr=reader_err,
            stdout=subprocess.DEVNULL,
        )
        _poll(lambda: reader_out.exists() or reader.poll() is not None, 120, "the reader started")
        zygote = Zygote(roots, logs, project, tmp / "workers.err", env)
        gens = [0] * workers
        for i in range(workers):
            pids[i] = zygote.spawn(i, 0, rng.randrange(2**32))
            outcome.spawns += 1
        deadline = time.monotonic() + seconds
        while time.monotonic() < deadline:
            time.sleep(rng.uniform(*KILL_EVERY))  # the kill schedule, not a wait for anything
            i = rng.randrange(workers)
            os.kill(pids[i], signal.SIGKILL)  # a worker that already died keeps its status
            outcome.kills += 1
            exits.append((i, zygote.reap(pids.pop(i))))
            gens[i] += 1
            pids[i] = zygote.spawn(i, gens[i], rng.randrange(2**32))
            outcome.spawns += 1
        for i in list(pids):
            os.kill(pids[i], signal.SIGKILL)
            outcome.kills += 1
            exits.append((i, zygote.reap(pids.pop(i))))
        chaos = time.monotonic() - started

        # -- the reader's last pass, over the home as the kills left it ----------------------
        code = _stop(reader, reader_stop, 300)
        found = _read_lines(reader_out)
        summary = [f for f in found if f["kind"] == "summary"]
        if code != 0 or not summary:
            outcome.violations.append(
                Violation("reader_died", f"exit {code}: {(tmp / 'reader.err').read_text()[-2000:]}")
            )
        for f in found:
            if f["kind"] in ("torn", "unexpected", "quarantined", "reader_error"):
                outcome.violations.append(
                    Violation(
                        f["kind"],
                        f"reader: {f.get('path', '')} {f.get('reason', '')} "
                        f"{f.get('error', '')} head={f.get('head', '')!r}".strip(),
                    )
                )
        if summary:
            outcome.stats.update(
                reader_passes=summary[-1]["passes"], reader_parses=summary[-1]["parses"]
            )

        # -- the watcher's index must equal a full rescan --------------------------------------
        if watcher.poll() is not None:
            outcome.violations.append(
                Violation(
                    "watcher", "the watcher died: " + (tmp / "watcher.err").read_text()[-2000:]
                )
            )
        else:
            _compare_watcher(roots, ctl, outcome)
    finally:
        for pid in pids.values():  # only when something above failed: our workers, by pid
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        if zygote is not None:
            for pid in list(pids.values()):
                exits.append((-1, zygote.reap(pid)))
            zygote.close()
            outcome.worker_errors = (tmp / "workers.err").read_text(errors="replace")
        if reader is not None and reader.poll() is None:
            _stop(reader, reader_stop, 60)
        _stop(watcher, ctl / "stop", 30)
        watcher_err.close()
        reader_err.close()

    # -- the harness itself: every worker died by our SIGKILL, none by itself -----------------
    for i, code in exits:
        if code != -signal.SIGKILL:
            outcome.violations.append(
                Violation("worker_died", f"w{i} exited {code} without being killed")
            )
    if outcome.worker_errors.strip():
        outcome.violations.append(
            Violation("worker_died", "worker stderr: " + outcome.worker_errors[-1500:])
        )

    # -- the audit ---------------------------------------------------------------------------
    audit = audit_home(roots, logs)
    outcome.violations += audit.violations
    if audit.backend.name != outcome.ledger:  # e.g. CAPTAIN_LEDGER_URL set around the test
        outcome.violations.append(
            Violation(
                "audit_error",
                f"the audit read the ledger from "
                f"{audit.backend.name}, the workers from "
                f"{outcome.ledger}",
            )
        )
    outcome.stats.update(
        chaos_seconds=round(chaos, 1),
        total_seconds=round(time.monotonic() - started, 1),
        operations_checked=audit.checked,
        ops=dict(sorted(audit.ops.items())),
        refusals=dict(sorted(audit.refusals.items())),
        stale_refused=audit.stale_refused,
        files=audit.files,
        temp_files_left=audit.temps,
        crews=len(audit.crew_events),
        work_items=len(audit.items),
        slots=getattr(audit, "slots", None),
        peak_slots_held=getattr(audit, "peak_slots", None),
        slots_filled=getattr(audit, "full", None),
        cross_worker=dict(sorted(audit.cross.items())),
    )
    return outcome

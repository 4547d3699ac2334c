"""The work ledger's claims, file home vs PostgreSQL, side by side in one run (issue 16).

1. **Throughput.** N queued items (``ledger.accept``) drained by 1, 4 and 16 worker
   *processes* (spawned, not forked: the file backend fences with ``flock``, PostgreSQL
   with one connection per thread), each looping ``claim`` -> ``report succeeded`` at the
   claimed generation until nothing is queued. Claims per second is the number of claims
   over the wall time from the start signal to the last worker's end (so it includes the
   reports: a claim's slot is freed by its report); the latency is ``ledger.claim`` alone.
   Every home sets ``[ledger] slots = 64``, so workers measure claiming, never waiting for
   a slot. Afterwards each item must have been claimed exactly once and have succeeded.
2. **Growth.** One ledger per backend grows from empty to ``--sizes`` finished items (each
   accepted, claimed and succeeded: three events) with ``--queued`` items always queued;
   at each size one process times ``--samples`` claims (one accepted before each, untimed,
   so the queue stays the same length; each claimed item is reported, untimed). The cost
   of a claim must not grow with finished items: the file backend's claim reads only the
   open set (``ledger/open/``), PostgreSQL's the partial indexes on open states. Judged by
   the ratio of the p50 at the largest size to the empty ledger's (<= 1.5).

   Making 100k finished items through the API costs three fsynced transactions each (about
   23 ms on files on a small VM: ~40 minutes), so the first ``--via-api`` items are made
   through ``ledger.accept/claim/report`` (that rate is reported), and the rest by the
   documented shortcut ``_finished_records``: the same events and folded item the ledger
   would write (built by the ledger's own ``_next``/``fold``/``encode``), written without
   locks or fsync (files) or in batches of 1,000 items per transaction with the backend's
   own SQL (PostgreSQL; then ``ANALYZE``, as autovacuum would by then).

3. **The CLI** (issue 28). ``captain work claim`` + ``captain work report`` as the
   processes a worker runs, PostgreSQL only: ``--cli-workers`` workers (threads, each
   running one process at a time) on two homes sharing one database (two hosts' workers)
   drain ``--cli-items`` items; each call is timed from before its process starts to
   after it exits, and a cycle is a claim and its report. Then, one call at a time, each
   round measuring every part once (the same minutes of load): ``python -c pass`` (Python's
   start), a whole claim and report call, their imports (the modules a real call loaded,
   imported again in a fresh process, timed from its first line), a connection
   (libpq's, and the schema check the backend does first); and in this process, on a warm
   connection, the claim and report transactions (their statements, the time spent
   waiting on the database) and their round trips counted on the wire
   (tests/support/roundtrips.py). What is left of a call is the parser, the home, the
   config, the output and the exit. The medians of the parts are shown.

The PostgreSQL server is ``CAPTAIN_BENCH_PG_URL`` (a role that may CREATE DATABASE), else
a throwaway cluster started here from the installed server binaries (tests/support/
postgres.py's ``Cluster``; as root via ``runuser -u postgres``), fsync off, and stopped at
the end. Every home is a temporary directory (``CAPTAIN_HOME`` points into it too).

    python bench/ledger_claims.py [--items 400] [--workers 1,4,16]
                                  [--sizes 10000,100000] [--samples 200] [--quick] [--smoke]
                                  [--cli-items 60] [--cli-workers 6] [--cli-runs 15]
                                  [--cli-only] [--json PATH]
"""

from __future__ import annotations

import argparse
import contextlib
import multiprocessing as mp
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
import uuid
from datetime import timedelta
from pathlib import Path
from typing import TYPE_CHECKING, cast
from urllib.parse import urlsplit

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(REPO / "tests"))

from bench.report import (  # noqa: E402
    SMOKE,
    CannotRun,
    latency_row,
    pct,
    print_report,
    run_script,
    write_json,
)

if TYPE_CHECKING:
    from state.work.pg_backend import PostgresBackend

SLOTS = 64
BACKENDS = ("files", "postgresql")
GROWTH_BUDGET = "must not grow with finished items (ratio <= 1.5)"
GROWTH_LIMIT = 1.5
PG_BATCH = 1000


# -- PostgreSQL: a server, one fresh database per ledger ----------------------------------------


class Postgres:
    """``CAPTAIN_BENCH_PG_URL``, or a throwaway cluster of our own (stopped by ``stop``)."""

    def __init__(self) -> None:
        self.cluster = None
        self.admin_url = os.environ.get("CAPTAIN_BENCH_PG_URL", "")
        self.databases: list[str] = []
        if not self.admin_url:
            from support.postgres import Cluster, server_bindir, why_not

            reason = why_not()
            if reason:
                raise CannotRun(
                    f"no PostgreSQL server for the bench: {reason} (or set CAPTAIN_BENCH_PG_URL)"
                )
            self.cluster = Cluster(server_bindir())
            try:
                self.cluster.start()
            except (RuntimeError, OSError, subprocess.SubprocessError) as exc:
                self.cluster.stop()
                first = str(exc).strip().splitlines()[0] if str(exc).strip() else repr(exc)
                raise CannotRun(f"a throwaway PostgreSQL cluster did not start: {first}") from None
            except BaseException:
                self.cluster.stop()
                raise
            self.admin_url = self.cluster.url()

    def version(self) -> str:
        import psycopg

        with psycopg.connect(self.admin_url, autocommit=True) as conn:
            row = conn.execute("SHOW server_version").fetchone()
            assert row is not None  # SHOW answers one row
            return row[0]

    def fresh_url(self) -> str:
        """A new database with the ledger's schema migrated into it."""
        import psycopg

        from state.work import pg_schema

        name = f"captain_bench_{uuid.uuid4().hex[:10]}"
        with psycopg.connect(self.admin_url, autocommit=True) as conn:
            conn.execute(f'CREATE DATABASE "{name}" TEMPLATE template0')
        self.databases.append(name)
        url = urlsplit(self.admin_url)._replace(path=f"/{name}").geturl()
        with psycopg.connect(url) as conn:
            pg_schema.migrate(conn)
        return url

    def stop(self) -> None:
        # the homes' own connections end with the cluster, or with DROP DATABASE … FORCE
        if self.cluster is not None:
            self.cluster.stop()
            return
        import psycopg

        with psycopg.connect(self.admin_url, autocommit=True) as conn:
            for name in self.databases:
                conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


def make_home(root: Path, url: str | None):
    """A home at ``root`` with ``[ledger] slots = 64`` (and ``url`` on PostgreSQL)."""
    from state.home import Home

    Home(root)  # made empty first: a home refuses a directory with files in it
    (root / "config.toml").write_text(
        f"[ledger]\nslots = {SLOTS}\n" + (f'url = "{url}"\n' if url else "")
    )
    return Home(root)


def _input(n: int) -> dict:
    return {"text": f"bench item {n}: summarise the thread", "turns": ["hello", "and more"]}


# -- 1. throughput: worker processes ------------------------------------------------------------


def _worker(root: str, index: int, ready, go, out) -> None:
    """One worker process: claim -> report succeeded until nothing is queued."""
    from state.errors import CaptainError
    from state.home import Home
    from state.work import ledger

    home = Home(Path(root))
    holder = f"bench-w{index}"
    ledger.open_ids(home)  # connect (PostgreSQL) and warm the imports before the start
    ready.put(index)
    go.wait()
    latencies, claimed, start = [], [], time.monotonic()
    while True:
        t0 = time.perf_counter()
        try:
            item = ledger.claim(home, holder=holder)
        except CaptainError as exc:
            if exc.code == "not_queued":
                break
            raise
        latencies.append((time.perf_counter() - t0) * 1000)
        claimed.append((item.work_id, item.generation))
        ledger.report(home, item.work_id, item.generation, "succeeded", actor=holder)
    out.put(
        {
            "index": index,
            "start": start,
            "end": time.monotonic(),
            "latencies": latencies,
            "claimed": claimed,
        }
    )


def throughput(kind: str, root: Path, url: str | None, items: int, workers: int) -> dict:
    from state.work import ledger

    home = make_home(root, url)
    t0 = time.monotonic()
    ids = {
        ledger.accept(home, source="chat", input=_input(n), requester="bench").work_id
        for n in range(items)
    }
    fill = time.monotonic() - t0
    ctx = mp.get_context("spawn")
    ready, out, go = ctx.Queue(), ctx.Queue(), ctx.Event()
    procs = [
        ctx.Process(target=_worker, args=(str(root), i, ready, go, out)) for i in range(workers)
    ]
    for p in procs:
        p.start()
    try:
        for _ in procs:
            ready.get(timeout=120)
        began = time.monotonic()
        go.set()
        results = [out.get(timeout=600) for _ in procs]
    finally:
        for p in procs:
            p.join(timeout=30)
            if p.is_alive():
                p.kill()
    ended = max(r["end"] for r in results)
    latencies = [x for r in results for x in r["latencies"]]
    claimed = [c for r in results for c in r["claimed"]]
    # the ledger's guarantees, checked: each item claimed once, at generation 1, succeeded
    if sorted(w for w, _ in claimed) != sorted(ids) or any(g != 1 for _, g in claimed):
        raise RuntimeError(f"{kind}, {workers} workers: claims do not match the queue")
    states = {ledger.get(home, w).state for w in ids}
    if states != {"succeeded"}:
        raise RuntimeError(f"{kind}, {workers} workers: items ended {states}")
    seconds = ended - began
    per_worker = [len(r["latencies"]) for r in results]
    return {
        "backend": kind,
        "workers": workers,
        "items": items,
        "seconds": seconds,
        "claims_per_s": len(claimed) / seconds,
        "latencies_ms": latencies,
        "claims_per_worker": per_worker,
        "prefill_s": fill,
    }


# -- 2. growth: finished items ------------------------------------------------------------------


def _finished_records(n: int, at):
    """One finished item as the ledger writes it: its input's bytes, its three events
    (accepted, claimed, succeeded: built by the ledger's own ``_next``), and the item those
    fold to. The shortcut's only departure from ``accept/claim/report`` is how it is stored
    (no locks, no fsync, batched): the records are the same."""
    from state.ids import WORK, new_id
    from state.work import ledger
    from state.work.ledger_records import WorkEvent
    from state.work.transitions import fold

    work_id = new_id(WORK)
    data = ledger._canonical({"input": _input(n)}) + b"\n"
    accepted = WorkEvent(
        seq=1,
        at=at,
        type="accepted",
        generation=0,
        actor="bench",
        state="queued",
        source="chat",
        requester="bench",
        input_sha256=ledger.input_sha256(data),
        max_attempts=1,
    )
    item = fold(None, accepted, work_id)
    claimed = ledger._next(
        None,  # type: ignore[arg-type]  # at is given: no clock is asked
        item,
        "claimed",
        "bench-w",
        "running",
        at,
        generation=1,
        run_id=new_id(ledger.RUN),
        lease_holder="bench-w",
        runtime_locator=None,
        lease_expires_at=at + timedelta(seconds=ledger.DEFAULT_LEASE_SECONDS),
    )
    item = fold(item, claimed, work_id)
    done = ledger._next(
        None,  # type: ignore[arg-type]  # at is given: no clock is asked
        item,
        "succeeded",
        "bench-w",
        "succeeded",
        at,
        cost_usd=None,
        detail=None,
        reason=None,
    )
    item = fold(item, done, work_id)
    return work_id, data, [accepted, claimed, done], item


def _write_files(home, records) -> None:
    from state.store import DIR_MODE, encode
    from state.work.files import EVENT_NAME

    base = home.store.dir("work")

    def put(path: Path, data: bytes) -> None:
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        try:
            os.write(fd, data)
        finally:
            os.close(fd)

    for work_id, data, events, item in records:
        d = base / work_id
        os.mkdir(d, DIR_MODE)
        os.mkdir(d / "events", DIR_MODE)
        put(d / "input.json", data)
        for event in events:
            put(d / "events" / f"{EVENT_NAME.format(event.seq)}.json", encode(event))
        put(d / "item.json", encode(item))
    # finished items the index of the newest finished (ledger/finished/) does not hold: the
    # next writer to close an item builds it again from the work/ listing
    with contextlib.suppress(FileNotFoundError):
        os.unlink(home.root / "ledger" / "finished.built")


class _Recorder:
    """The PostgreSQL backend's writes, recorded instead of run: ``(sql, params)`` each, so
    a batch is executed with exactly the statements ``put_input/append/store_item`` run.

    A ``PostgresBackend`` whose public ``run`` (every statement goes through it) records;
    its location is the ledger's own, so a write that went around ``run`` would hit the
    database's deferred foreign keys at once, and ``WRITES_PER_ITEM`` is checked: the
    shortcut fails loudly rather than fill nothing."""

    WRITES_PER_ITEM = 5  # the input, three events, the item

    def __init__(self, location) -> None:
        from state.work.pg_backend import PostgresBackend

        calls: list[tuple[str, tuple]] = []

        class Recording(PostgresBackend):
            def run(self, sql, params=(), *, fetch=None, wait=True, prepare=None):
                calls.append((sql, tuple(params)))
                return (1,) if fetch == "one" else None

        self.backend = Recording(location)
        self.calls = calls


def _write_pg(home, records) -> None:
    import psycopg

    from state.work.backend import backend_for
    from state.work.pg_backend import PostgresBackend

    location = cast(PostgresBackend, backend_for(home)).location
    rec = _Recorder(location)
    for work_id, data, events, item in records:
        rec.backend.put_input(work_id, data)
        for event in events:
            rec.backend.append(work_id, event)
        rec.backend.store_item(item)
    if len(rec.calls) != _Recorder.WRITES_PER_ITEM * len(records):
        raise RuntimeError(
            f"the PostgreSQL backend made {len(rec.calls)} writes through "
            f"run() for {len(records)} finished items, not "
            f"{_Recorder.WRITES_PER_ITEM} each: the shortcut must follow it"
        )
    by_sql: dict[str, list[tuple]] = {}
    for sql, params in rec.calls:
        by_sql.setdefault(sql, []).append(params)
    assert location.url is not None  # a PostgreSQL ledger's
    with psycopg.connect(location.url) as conn:  # one transaction: the FKs are deferred
        with conn.cursor() as cur:
            for sql, rows in by_sql.items():
                cur.executemany(sql, rows)


def add_finished(kind: str, home, count: int, via_api: int) -> dict:
    """``count`` more finished items: the first ``via_api`` through the ledger's API (its
    rate measured), the rest by the shortcut."""
    from state.work import ledger
    from state.work.backend import backend_for

    api = min(via_api, count)
    t0 = time.monotonic()
    for n in range(api):
        item = ledger.accept(home, source="chat", input=_input(n), requester="bench")
        item = ledger.claim(home, holder="bench-fill", work_id=item.work_id)
        ledger.report(home, item.work_id, item.generation, "succeeded", actor="bench-fill")
    api_s = time.monotonic() - t0
    t0 = time.monotonic()
    backend = backend_for(home)
    at = backend.now()
    before = len(ledger.all_ids(home))
    left = count - api
    while left > 0:
        batch = [_finished_records(n, at) for n in range(min(PG_BATCH, left))]
        (_write_pg if kind == "postgresql" else _write_files)(home, batch)
        left -= len(batch)
    made = len(ledger.all_ids(home)) - before
    if made != count - api:  # a shortcut that wrote nothing must not pass for a grown ledger
        raise RuntimeError(f"{kind}: the shortcut made {made} finished items, not {count - api}")
    if kind == "postgresql" and count > api:
        cast("PostgresBackend", backend).run("ANALYZE")
    return {
        "api_items": api,
        "api_s": api_s,
        "shortcut_items": count - api,
        "shortcut_s": time.monotonic() - t0,
    }


def time_claims(home, samples: int, warm: int = 5) -> list[float]:
    """``samples`` claims of the oldest queued item, the queue kept at its length (one
    accepted before each claim, untimed; each claimed item reported, untimed)."""
    from state.work import ledger

    out = []
    for n in range(samples + warm):  # the first ``warm`` fill caches and are not counted
        ledger.accept(home, source="chat", input=_input(n), requester="bench")
        t0 = time.perf_counter()
        item = ledger.claim(home, holder="bench-timer")
        took = (time.perf_counter() - t0) * 1000
        ledger.report(home, item.work_id, item.generation, "succeeded", actor="bench-timer")
        if n >= warm:
            out.append(took)
    return out


def interleaved(grown, control, samples: int, rounds: int = 10) -> tuple[list, list]:
    """Claims timed on the grown ledger and on an empty control ledger in alternating
    rounds (at most ``samples``), so both see the same minutes of machine load."""
    a, b = [], []
    rounds = max(1, min(rounds, samples))
    per = max(1, samples // rounds)
    for _ in range(rounds):
        a += time_claims(grown, per, warm=1)
        b += time_claims(control, per, warm=1)
    return a, b


def growth(
    kind: str,
    root: Path,
    url: str | None,
    control_url: str | None,
    sizes: list[int],
    samples: int,
    queued: int,
    via_api: int,
) -> dict:
    from state.work import ledger

    home = make_home(root / "grown", url)
    control = make_home(root / "control", control_url)
    for h in (home, control):
        for n in range(queued):
            ledger.accept(h, source="chat", input=_input(n), requester="bench")
    grown_ms, control_ms = interleaved(home, control, samples)
    points = [{"nominal": 0, "finished": 0, "latencies_ms": grown_ms, "control_ms": control_ms}]
    made: list[dict] = []
    have = 0
    for size in sizes:
        fill = add_finished(kind, home, size - have, via_api if not made else 0)
        fill["to"] = size
        made.append(fill)
        have = size
        finished = len(ledger.all_ids(home)) - len(ledger.open_ids(home))
        grown_ms, control_ms = interleaved(home, control, samples)
        points.append(
            {
                "nominal": size,
                "finished": finished,
                "latencies_ms": grown_ms,
                "control_ms": control_ms,
            }
        )
    return {"backend": kind, "points": points, "fills": made, "queued": queued}


# -- 3. the CLI: `captain work claim` + `captain work report`, 6 workers on two homes ------------

CLI_HOMES = 2
# the import-time child: imports the modules a real CLI call had loaded (in its order),
# timed from its first line (the interpreter's own start is ``python -c pass``)
_IMPORTS = (
    "import importlib, json, sys, time\n"
    "names = json.load(open(sys.argv[1]))\n"
    "t0 = time.perf_counter()\n"
    "for name in names:\n"
    "    if name not in sys.modules:\n"
    "        try:\n"
    "            importlib.import_module(name)\n"
    "        except Exception:\n"
    "            pass\n"
    "print((time.perf_counter() - t0) * 1000)\n"
)
# the module-list child: one real CLI call, then the modules it loaded, in import order
_MODULES = (
    "import atexit, json, sys\n"
    "out = sys.argv.pop(1)\n"
    "atexit.register(lambda: json.dump(list(sys.modules), open(out, 'w')))\n"
    "from captain_tui.cli.main import main\n"
    "sys.exit(main(sys.argv[1:]))\n"
)


def _captain() -> list[str]:
    """The ``captain`` a user runs: the console script beside this Python."""
    found = shutil.which("captain", path=str(Path(sys.executable).parent))
    return [found] if found else [sys.executable, "-m", "captain_tui"]


def _cli_env(root: Path) -> dict[str, str]:
    env = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith("CAPTAIN_") and k != "PYTHONDONTWRITEBYTECODE"
    }
    env["CAPTAIN_HOME"] = str(root)  # each home names its ledger in its config.toml
    # bytecode cached as on a user's machine (a warm-up call writes it)
    return env


def _timed(cmd: list[str], env: dict[str, str]) -> tuple[float, subprocess.CompletedProcess]:
    """``cmd`` run to its exit: the wall time from before the fork to after the wait, ms."""
    t0 = time.perf_counter()
    proc = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=120)
    return (time.perf_counter() - t0) * 1000, proc


def _answer(proc: subprocess.CompletedProcess, what: str) -> dict:
    import json

    try:
        answer = json.loads(proc.stdout)
    except ValueError:
        raise RuntimeError(
            f"{what}: exit {proc.returncode}, {proc.stderr.strip()[-300:]}"
        ) from None
    return answer


def _cli_claim(captain: list[str], root: Path, holder: str) -> tuple[float, dict]:
    ms, proc = _timed([*captain, "work", "claim", "--json", "--holder", holder], _cli_env(root))
    return ms, _answer(proc, "captain work claim")


def _cli_report(captain: list[str], root: Path, claimed: dict, holder: str) -> float:
    work_id, generation = claimed["item"]["work_id"], claimed["generation"]
    ms, proc = _timed(
        [*captain, "work", "report", work_id, "--outcome", "succeeded"]
        + ["--generation", str(generation)]
        + ["--holder", holder, "--json"],
        _cli_env(root),
    )
    answer = _answer(proc, "captain work report")
    if not answer.get("ok"):
        raise RuntimeError(f"captain work report {work_id}: {answer.get('error')}")
    return ms


def _cli_worker(captain, root: Path, index: int, go, out: list) -> None:
    """One worker: ``captain work claim`` -> ``captain work report succeeded`` until
    nothing is queued; each call timed from before its process starts to after it exits."""
    try:
        out.append(_cli_drain(captain, root, f"bench-cli-{index}", go))
    except Exception as exc:  # noqa: BLE001 - said by the caller, which fails the part
        out.append({"error": f"{type(exc).__name__}: {exc}"})


def _cli_drain(captain, root: Path, holder: str, go) -> dict:
    go.wait()
    claims, reports, cycles, claimed = [], [], [], []
    while True:
        ms, answer = _cli_claim(captain, root, holder)
        if not answer.get("ok"):
            if (answer.get("error") or {}).get("code") == "not_queued":
                break
            raise RuntimeError(f"captain work claim: {answer.get('error')}")
        claims.append(ms)
        reports.append(_cli_report(captain, root, answer, holder))
        cycles.append(claims[-1] + reports[-1])
        claimed.append((answer["item"]["work_id"], answer["generation"]))
    return {"claims": claims, "reports": reports, "cycles": cycles, "claimed": claimed}


class _Counted:
    """The PostgreSQL backend's statements counted (``PostgresBackend.run``, its one way to
    the database) and the time spent waiting on the database timed: in ``run`` (a
    statement whose answer is read, with whatever went down the pipeline before it) and
    in ``_end`` (the transaction's last answers: its COMMIT's). The rest of a
    transaction's time is Python: the models, the fold."""

    def __init__(self) -> None:
        self.statements = 0
        self.seconds = 0.0

    def __enter__(self) -> _Counted:
        from state.work.pg_backend import PostgresBackend

        self.real = real = PostgresBackend.run
        self.real_end = real_end = PostgresBackend._end
        counter = self

        def run(backend, sql, params=(), **how):  # the bench's wrapper
            t0 = time.perf_counter()
            try:
                return real(backend, sql, params, **how)
            finally:
                counter.seconds += time.perf_counter() - t0
                counter.statements += 1

        def end(backend, conn, pipeline, exc):  # the bench's wrapper
            t0 = time.perf_counter()
            try:
                return real_end(backend, conn, pipeline, exc)
            finally:
                counter.seconds += time.perf_counter() - t0

        PostgresBackend.run = run  # type: ignore[method-assign, assignment]  # restored on exit
        PostgresBackend._end = end  # type: ignore[method-assign]  # restored on exit
        return self

    def __exit__(self, *exc) -> None:
        from state.work.pg_backend import PostgresBackend

        PostgresBackend.run = self.real  # type: ignore[method-assign]
        PostgresBackend._end = self.real_end  # type: ignore[method-assign]

    def take(self) -> tuple[int, float]:
        out = (self.statements, self.seconds * 1000)
        self.statements, self.seconds = 0, 0.0
        return out


def _transactions(root: Path, runs: int) -> dict:
    """``ledger.claim`` and ``ledger.report`` in this process, on a warm connection: each
    one's time, its statements and the time spent waiting on the database."""
    from state.home import Home
    from state.work import ledger

    home = Home(root)
    for n in range(runs + 1):
        ledger.accept(home, source="chat", input=_input(n), requester="bench")
    ledger.open_ids(home)  # connect, check the schema
    out: dict[str, list] = {"claim": [], "report": []}
    with _Counted() as counted:
        for n in range(runs + 1):
            counted.take()
            t0 = time.perf_counter()
            item = ledger.claim(home, holder="bench-tx")
            claim_ms = (time.perf_counter() - t0) * 1000
            claim_n, claim_db = counted.take()
            t0 = time.perf_counter()
            ledger.report(home, item.work_id, item.generation, "succeeded", actor="bench-tx")
            report_ms = (time.perf_counter() - t0) * 1000
            report_n, report_db = counted.take()
            if n:  # the first warms the caches
                out["claim"].append((claim_ms, claim_n, claim_db))
                out["report"].append((report_ms, report_n, report_db))
    return out


def _round_trips(url: str, root: Path) -> dict[str, int]:
    """The round trips of one claim and one report, counted on the wire: through a relay
    between the backend and the server (tests/support/roundtrips.py), on a home of its
    own (untimed: the relay is slower than the wire)."""
    from support.ledger_backends import close_backends
    from support.roundtrips import Relay

    from state.work import ledger

    relay = Relay(url)
    try:
        home = make_home(root, relay.url)
        ledger.accept(home, source="chat", input=_input(0), requester="bench")
        ledger.open_ids(home)  # connected: the connection's own round trips not counted
        relay.take()
        item = ledger.claim(home, holder="bench-trips")
        trips = {"claim": relay.take()}
        ledger.report(home, item.work_id, item.generation, "succeeded", actor="bench-trips")
        trips["report"] = relay.take()
        return trips
    finally:
        close_backends(relay.url)
        relay.close()


def _connects(url: str, runs: int) -> list[float]:
    """A CLI call's connection: libpq's connect and the schema check the backend does
    first (``PostgresBackend._conn``), ms each."""
    from state.work import pg_schema, postgres
    from state.work.location import locate

    location = locate("/", url, None)
    out = []
    for _ in range(runs):
        t0 = time.perf_counter()
        conn = postgres.connect(location)
        pg_schema.current_version(conn)
        out.append((time.perf_counter() - t0) * 1000)
        conn.close()
    return out


def _module_list(root: Path, path: Path, argv: list[str]) -> int:
    """The modules one real CLI call (``argv``) loads, in import order, into ``path``."""
    import json

    proc = subprocess.run(
        [sys.executable, "-c", _MODULES, str(path), *argv],
        env=_cli_env(root),
        capture_output=True,
        text=True,
        timeout=120,
    )
    if proc.returncode != 0:
        raise RuntimeError(f"captain {' '.join(argv)}: {proc.stdout[-300:]} {proc.stderr[-300:]}")
    return len(json.loads(path.read_text()))


def _import_ms(root: Path, listing: Path) -> float:
    """The modules of ``listing`` imported in a fresh process, timed from its first line
    (Python's own start is ``python -c pass``'s)."""
    child = subprocess.run(
        [sys.executable, "-c", _IMPORTS, str(listing)],
        env=_cli_env(root),
        capture_output=True,
        text=True,
        timeout=120,
    )
    return float(child.stdout.strip())


def cli(pg: Postgres, tmp: Path, items: int, workers: int, runs: int) -> dict:
    """The CLI through and through: ``workers`` processes-at-a-time on ``CLI_HOMES`` homes
    sharing one database (two hosts' workers), then the per-call breakdown, one call at a
    time: Python's start, the imports, the connection, the transaction, and the rest."""
    import threading

    from state.work import ledger

    captain = _captain()
    url = pg.fresh_url()
    roots = [tmp / f"cli-{n}" for n in range(CLI_HOMES)]
    homes = [make_home(root, url) for root in roots]
    for warm in ("claim", "report"):  # bytecode written, the database's caches warm
        if warm == "claim":
            _cli_claim(captain, roots[0], "bench-cli-warm")  # nothing queued yet
        else:
            _timed(
                [*captain, "work", "report", "wrk_0", "--outcome", "failed"]
                + ["--generation", "1", "--json"],
                _cli_env(roots[0]),
            )
    ids = {
        ledger.accept(homes[0], source="chat", input=_input(n), requester="bench").work_id
        for n in range(items)
    }
    go = threading.Event()
    results: list[dict] = []
    threads = [
        threading.Thread(
            target=_cli_worker, args=(captain, roots[i % CLI_HOMES], i, go, results), daemon=True
        )
        for i in range(workers)
    ]
    for t in threads:
        t.start()
    began = time.monotonic()
    go.set()
    for t in threads:
        t.join(timeout=900)
    seconds = time.monotonic() - began
    if len(results) != workers:
        raise RuntimeError(f"the CLI workers: {workers - len(results)} did not finish")
    for r in results:
        if "error" in r:
            raise RuntimeError(f"a CLI worker: {r['error']}")
    claimed = [c for r in results for c in r["claimed"]]
    if sorted(w for w, _ in claimed) != sorted(ids) or any(g != 1 for _, g in claimed):
        raise RuntimeError("the CLI workers' claims do not match the queue")
    states = {ledger.get(homes[1], w).state for w in ids}  # read from the other home
    if states != {"succeeded"}:
        raise RuntimeError(f"the CLI workers' items ended {states}")
    load = " ".join(f"{x:.2f}" for x in os.getloadavg())

    # one call at a time, each round every measurement once (the same minutes of load):
    # Python's start, the whole claim and report calls, their imports, a connection
    lists = {w: tmp / f"modules-{w}.json" for w in ("claim", "report")}
    for n in range(runs + 3):
        ledger.accept(homes[0], source="chat", input=_input(n), requester="bench")
    modules = {"claim": _module_list(roots[0], lists["claim"], ["work", "claim", "--json"])}
    listed = ledger.claim(homes[0], holder="bench-cli-list")  # a live attempt to report on
    modules["report"] = _module_list(
        roots[0],
        lists["report"],
        ["work", "report", listed.work_id, "--outcome", "succeeded", "--generation", "1"],
    )
    env0 = _cli_env(roots[0])
    one: dict[str, list[float]] = {
        k: [] for k in ("pass", "claim", "report", "claim_imports", "report_imports", "connect")
    }
    for _ in range(runs):
        one["pass"].append(_timed([sys.executable, "-c", "pass"], env0)[0])
        ms, answer = _cli_claim(captain, roots[0], "bench-cli-one")
        if not answer.get("ok"):
            raise RuntimeError(f"captain work claim: {answer.get('error')}")
        one["claim"].append(ms)
        one["report"].append(_cli_report(captain, roots[0], answer, "bench-cli-one"))
        one["claim_imports"].append(_import_ms(roots[0], lists["claim"]))
        one["report_imports"].append(_import_ms(roots[0], lists["report"]))
        one["connect"] += _connects(url, 1)
    return {
        "items": items,
        "workers": workers,
        "homes": CLI_HOMES,
        "seconds": seconds,
        "load": load,
        "claims_ms": [x for r in results for x in r["claims"]],
        "reports_ms": [x for r in results for x in r["reports"]],
        "cycles_ms": [x for r in results for x in r["cycles"]],
        "python_pass_ms": one["pass"],
        "one_claim_ms": one["claim"],
        "one_report_ms": one["report"],
        "claim_imports_ms": one["claim_imports"],
        "claim_modules": modules["claim"],
        "report_imports_ms": one["report_imports"],
        "report_modules": modules["report"],
        "connect_ms": one["connect"],
        "transactions": _transactions(roots[1], runs),
        "round_trips": _round_trips(url, tmp / "cli-trips"),
    }


# -- the report ---------------------------------------------------------------------------------


def _ms(x: float) -> str:
    return f"{x:.2f}" if x < 10 else f"{x:.1f}"


def _lat(values: list[float]) -> str:
    return f"p50 {_ms(statistics.median(values))} / p95 {_ms(pct(values, 95))} ms"


def _k(n: int) -> str:
    return f"{n // 1000}k" if n >= 1000 and n % 1000 == 0 else str(n)


def _cli_rows(c: dict) -> list[dict]:
    med = statistics.median
    base = med(c["python_pass_ms"])
    connect = med(c["connect_ms"])
    rows = [
        {
            "what": f"`captain work claim` + `captain work report` through the CLI, "
            f"PostgreSQL, {c['workers']} workers on {c['homes']} homes sharing one database "
            f"({len(c['cycles_ms'])} cycles)",
            "measured": f"cycle {_lat(c['cycles_ms'])} "
            f"({len(c['cycles_ms']) / c['seconds']:.1f} cycles/s in all); claim call "
            f"{_lat(c['claims_ms'])}, report call {_lat(c['reports_ms'])}; load average "
            f"{c['load']} after",
            "budget": "— (was ~3 s a cycle on a loaded 2-core machine)",
            "verdict": "info",
            "cycle_p50_ms": med(c["cycles_ms"]),
            "cycle_p95_ms": pct(c["cycles_ms"], 95),
        }
    ]
    for what, calls, imports, modules in (
        ("claim", c["one_claim_ms"], c["claim_imports_ms"], c["claim_modules"]),
        ("report", c["one_report_ms"], c["report_imports_ms"], c["report_modules"]),
    ):
        tx = c["transactions"][what]
        tx_ms = med(t[0] for t in tx)
        statements = med(t[1] for t in tx)
        in_db = med(t[2] for t in tx)
        call = med(calls)
        rest = call - base - med(imports) - connect - tx_ms
        rows.append(
            {
                "what": f"one `captain work {what}` call alone, PostgreSQL, process start "
                f"to exit ({len(calls)} runs), and what it is made of",
                "measured": f"p50 {call:.0f} / p95 {pct(calls, 95):.0f} ms (x{call / base:.1f} "
                f"`python -c pass`, {base:.0f} ms, same run): Python's start {base:.0f}, "
                f"imports {med(imports):.0f} ({modules} modules), connect {connect:.1f}, "
                f"the {what} transaction {tx_ms:.1f} ({_trips(c['round_trips'][what])}, "
                f"{_statements(statements)}; {in_db:.1f} ms of it waiting on "
                "the database), the rest "
                + (
                    f"{rest:.0f} (parser, home, config, output, exit)"
                    if rest >= 0
                    else "within the runs' spread (medians of separate runs: imports "
                    f"{-rest:.0f} ms over)"
                ),
                "budget": "—",
                "verdict": "info",
                "p50_ms": call,
                "python_ms": base,
                "imports_ms": med(imports),
                "connect_ms": connect,
                "transaction_ms": tx_ms,
                "statements": statements,
                "round_trips": c["round_trips"][what],
                "in_database_ms": in_db,
                "rest_ms": rest,
            }
        )
    return rows


def _trips(n: int) -> str:
    return "1 round trip" if n == 1 else f"{n} round trips"


def _statements(n: float) -> str:
    """A transaction's statements: one is its own transaction (pg_schema's captain_claim
    and captain_report); more are sent between a BEGIN and a COMMIT."""
    return "1 statement, its own transaction" if n == 1 else f"{n:.0f} statements + BEGIN/COMMIT"


def rows_for(tp: list[dict], gr: list[dict], cl: dict | None = None) -> list[dict]:
    rows = _cli_rows(cl) if cl else []
    for r in tp:
        row = latency_row(
            f"ledger claims, {r['backend']}, {r['workers']} worker"
            f"{'s' if r['workers'] > 1 else ''}, {r['items']} items",
            r["latencies_ms"],
            "— (throughput: info)",
        )
        row["what"] = (
            f"ledger claims, {r['backend']}, {r['workers']} worker process"
            f"{'es' if r['workers'] > 1 else ''} ({r['items']} claims)"
        )
        row["measured"] = f"{r['claims_per_s']:.0f} claims/s; claim {_lat(r['latencies_ms'])}"
        row["claims_per_s"] = r["claims_per_s"]
        rows.append(row)
    for g in gr:
        for p in g["points"]:
            rows.append(
                {
                    "what": f"one claim, {g['backend']}, {_k(p['nominal'])} "
                    f"finished + {g['queued']} queued "
                    f"({len(p['latencies_ms'])} claims)",
                    "measured": f"{_lat(p['latencies_ms'])} (empty ledger, same "
                    f"minutes: {_lat(p['control_ms'])})",
                    "budget": "—",
                    "verdict": "info",
                    "p50_ms": statistics.median(p["latencies_ms"]),
                    "p95_ms": pct(p["latencies_ms"], 95),
                    "control_p50_ms": statistics.median(p["control_ms"]),
                    "control_p95_ms": pct(p["control_ms"], 95),
                }
            )
        last = g["points"][-1]
        r50 = statistics.median(last["latencies_ms"]) / statistics.median(last["control_ms"])
        r95 = pct(last["latencies_ms"], 95) / pct(last["control_ms"], 95)
        rows.append(
            {
                "what": f"claim cost growth, {g['backend']}: "
                f"{_k(last['nominal'])} finished / empty",
                "measured": f"p50 ratio {r50:.2f} (p95 ratio {r95:.2f}); judged by p50",
                "budget": GROWTH_BUDGET,
                "verdict": "met" if r50 <= GROWTH_LIMIT else "MISSED",
                "ratio_p50": r50,
                "ratio_p95": r95,
            }
        )
        for f in g["fills"]:
            api = (
                f"{f['api_items']} via the API in {f['api_s']:.1f} s "
                f"({f['api_s'] / f['api_items'] * 1000:.1f} ms/item), "
                if f["api_items"]
                else ""
            )
            rows.append(
                {
                    "what": f"making finished items, {g['backend']}, up to {_k(f['to'])}",
                    "measured": f"{api}{f['shortcut_items']} by the shortcut in "
                    f"{f['shortcut_s']:.1f} s",
                    "budget": "—",
                    "verdict": "info",
                }
            )
    return rows


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--items", type=int, default=400, help="queued items per drain")
    parser.add_argument("--workers", default="1,4,16")
    parser.add_argument("--sizes", default="10000,100000", help="finished items")
    parser.add_argument("--samples", type=int, default=200, help="timed claims per size")
    parser.add_argument("--queued", type=int, default=5, help="items queued while timing")
    parser.add_argument(
        "--via-api",
        type=int,
        default=300,
        help="finished items made through the API (the rest: the shortcut)",
    )
    parser.add_argument(
        "--quick",
        action="store_true",
        help="--items 100 --sizes 1000,10000 --samples 50 --cli-items 30 --cli-runs 5",
    )
    parser.add_argument(
        "--smoke",
        action="store_true",
        help=f"{SMOKE}: --items 6 --workers 1 --sizes 40 --samples 2 --queued 2 --via-api 3 "
        "--cli-items 2 --cli-workers 2 --cli-runs 1",
    )
    parser.add_argument(
        "--cli-items", type=int, default=60, help="items the CLI workers drain (0: no CLI part)"
    )
    parser.add_argument("--cli-workers", type=int, default=6, help="CLI workers (two homes)")
    parser.add_argument("--cli-runs", type=int, default=15, help="calls timed one at a time")
    parser.add_argument(
        "--cli-only", action="store_true", help="only the CLI part (no throughput, no growth)"
    )
    parser.add_argument("--json", type=Path)
    args = parser.parse_args()
    if args.quick:
        args.items, args.sizes, args.samples, args.via_api = 100, "1000,10000", 50, 100
        args.cli_items, args.cli_runs = 30, 5
    if args.smoke:
        args.items, args.workers, args.sizes, args.samples, args.queued, args.via_api = (
            6,
            "1",
            "40",
            2,
            2,
            3,
        )
        args.cli_items, args.cli_workers, args.cli_runs = 2, 2, 1
    workers = [int(w) for w in args.workers.split(",")]
    sizes = sorted(int(s) for s in args.sizes.split(","))

    tmp = Path(tempfile.mkdtemp(prefix="captain-bench-ledger-"))
    os.environ["CAPTAIN_HOME"] = str(tmp / "default-home")  # never the user's home
    os.environ.pop("CAPTAIN_LEDGER_URL", None)  # each home names its own ledger
    load_start = " ".join(f"{x:.2f}" for x in os.getloadavg())
    started = time.monotonic()
    pg = Postgres()
    try:
        version = pg.version()
        tp, gr = [], []
        cl = None
        if args.cli_items:
            print("-- the CLI: claim + report", file=sys.stderr, flush=True)
            cl = cli(pg, tmp, args.cli_items, args.cli_workers, args.cli_runs)
        n = 0
        for w in [] if args.cli_only else workers:  # the backends in turn at each count
            for kind in BACKENDS:
                n += 1
                url = pg.fresh_url() if kind == "postgresql" else None
                print(f"-- throughput: {kind}, {w} workers", file=sys.stderr, flush=True)
                tp.append(throughput(kind, tmp / f"tp-{n}", url, args.items, w))
        for kind in () if args.cli_only else BACKENDS:
            pg_kind = kind == "postgresql"
            url, control = (pg.fresh_url(), pg.fresh_url()) if pg_kind else (None, None)
            print(f"-- growth: {kind}", file=sys.stderr, flush=True)
            gr.append(
                growth(
                    kind,
                    tmp / f"growth-{kind}",
                    url,
                    control,
                    sizes,
                    args.samples,
                    args.queued,
                    args.via_api,
                )
            )
    finally:
        pg.stop()
        shutil.rmtree(tmp, ignore_errors=True)
    load_end = " ".join(f"{x:.2f}" for x in os.getloadavg())
    rows = rows_for(tp, gr, cl)
    server = (
        "CAPTAIN_BENCH_PG_URL"
        if pg.cluster is None
        else "a throwaway local cluster (fsync off, synchronous_commit off)"
    )
    machine = (
        f"{os.uname().machine}, {os.cpu_count()} cores, load average (1, 5, 15 min) "
        f"{load_start} at the start, {load_end} at the end; PostgreSQL {version} on "
        f"{server}; file home on {tmp.parent} (fsync on); [ledger] slots = {SLOTS}; "
        f"{time.monotonic() - started:.0f} s"
    )
    print_report(f"machine: {machine}", rows)
    write_json(
        args.json,
        {
            "machine": machine,
            "rows": rows,
            "throughput": tp,
            "growth": gr,
            "cli": cl,
            "args": vars(args) | {"json": str(args.json)},
        },
    )
    return 1 if any(r["verdict"] == "MISSED" for r in rows) else 0


if __name__ == "__main__":
    run_script(main)

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

The PostgreSQL server is ``CAPTAIN_BENCH_PG_URL`` (a role that may CREATE DATABASE), else
a throwaway cluster started here from the installed server binaries (tests/support/
postgres.py's ``Cluster``; as root via ``runuser -u postgres``), fsync off, and stopped at
the end. Every home is a temporary directory (``CAPTAIN_HOME`` points into it too).

    python bench/ledger_claims.py [--items 400] [--workers 1,4,16]
                                  [--sizes 10000,100000] [--samples 200] [--quick] [--smoke]
                                  [--json PATH]
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
            def run(self, sql, params=(), *, fetch=None):
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


# -- the report ---------------------------------------------------------------------------------


def _ms(x: float) -> str:
    return f"{x:.2f}" if x < 10 else f"{x:.1f}"


def _lat(values: list[float]) -> str:
    return f"p50 {_ms(statistics.median(values))} / p95 {_ms(pct(values, 95))} ms"


def _k(n: int) -> str:
    return f"{n // 1000}k" if n >= 1000 and n % 1000 == 0 else str(n)


def rows_for(tp: list[dict], gr: list[dict]) -> list[dict]:
    rows = []
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
        "--quick", action="store_true", help="--items 100 --sizes 1000,10000 --samples 50"
    )
    parser.add_argument(
        "--smoke",
        action="store_true",
        help=f"{SMOKE}: --items 6 --workers 1 --sizes 40 --samples 2 --queued 2 --via-api 3",
    )
    parser.add_argument("--json", type=Path)
    args = parser.parse_args()
    if args.quick:
        args.items, args.sizes, args.samples, args.via_api = 100, "1000,10000", 50, 100
    if args.smoke:
        args.items, args.workers, args.sizes, args.samples, args.queued, args.via_api = (
            6,
            "1",
            "40",
            2,
            2,
            3,
        )
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
        n = 0
        for w in workers:  # the two backends one after the other at each worker count
            for kind in BACKENDS:
                n += 1
                url = pg.fresh_url() if kind == "postgresql" else None
                print(f"-- throughput: {kind}, {w} workers", file=sys.stderr, flush=True)
                tp.append(throughput(kind, tmp / f"tp-{n}", url, args.items, w))
        for kind in BACKENDS:
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
    rows = rows_for(tp, gr)
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
            "args": vars(args) | {"json": str(args.json)},
        },
    )
    return 1 if any(r["verdict"] == "MISSED" for r in rows) else 0


if __name__ == "__main__":
    run_script(main)

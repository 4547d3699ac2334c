"""Wake-ups from a PostgreSQL ledger (LISTEN/NOTIFY, issue 16): how soon a write committed
through one home is known to another home's readers.

Each is timed from the call that writes (its own time included: a claim is a few ms).

1. **Notification.** A ``Listener`` (``state.work.backend.listener_for``) waits while another
   home claims an item: until the listener hears its ID.
2. **The Work panel's feed.** The cockpit's feed (``Feed`` in a ``FeedPump`` thread, fed by
   a ``LedgerListener`` thread: what the cockpit runs, without Textual) with its rescan and
   its 5 s Work re-read set out of reach: from another home's claim to the feed
   publishing a view with the item in its new state. Budget: well under the 5 s re-read
   that would otherwise be the wake-up (1 s at p95).
3. **Dispatch across homes.** ``[ledger] slots = 1``; a crew here holds the slot and another
   waits; a ``Runner`` of this home loops ``sleep`` in a thread (its 5 s ledger round set out
   of reach); another home reports the running item: from the report to the
   waiting crew's item running. Budget: 1 s at p95 (without the wake-up: up to 5 s).

The server is ``CAPTAIN_BENCH_PG_URL`` or a throwaway cluster (``bench/ledger_claims.py``'s
``Postgres``). Homes are temporary directories (``CAPTAIN_HOME`` points into one too).

    python bench/ledger_wakeups.py [--rounds 20] [--quick] [--smoke] [--json PATH]
"""

from __future__ import annotations

import argparse
import os
import shutil
import sys
import tempfile
import threading
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(REPO / "tests"))

from bench.ledger_claims import Postgres  # noqa: E402
from bench.report import (  # noqa: E402
    SMOKE,
    latency_row,
    print_report,
    run_script,
    until,
    write_json,
)

BUDGET_MS = 1000.0
FAR = 3600.0  # seconds: a clock that must not be what is measured


def homes(root: Path, url: str, slots: int = 64):
    from state.home import Home

    made = []
    for name in ("here", "there"):
        Home(root / name)
        (root / name / "config.toml").write_text(f'[ledger]\nslots = {slots}\nurl = "{url}"\n')
        made.append(Home(root / name))
    return made


def submit(home, n: int):
    from state.work import ledger

    return ledger.accept(
        home, source="chat", input={"text": f"bench {n}"}, requester="captain:bench"
    )


def notification(root: Path, url: str, rounds: int) -> list[float]:
    from state.work import backend, ledger

    here, there = homes(root, url)
    listener = backend.listener_for(here)
    assert listener is not None  # a home on PostgreSQL has one
    times = []
    try:
        until(lambda: listener.wait(0.5) or True, what="the listener's connection")
        for n in range(rounds):
            item = submit(there, n)
            listener.wait(0)  # the accept's own notification: not timed
            start = time.perf_counter()
            ledger.claim(there, item.work_id, holder="bench")
            heard: list[str] = []
            while item.work_id not in heard:
                heard += listener.wait(5)
                if time.perf_counter() - start > 15:
                    raise TimeoutError("the claim was never heard")
            times.append((time.perf_counter() - start) * 1000)
    finally:
        listener.close()
    return times


def feed(root: Path, url: str, rounds: int) -> list[float]:
    from captain_tui.cockpit.feed.home_feed import Feed
    from captain_tui.cockpit.feed.listener import LedgerListener
    from captain_tui.cockpit.feed.pump import FeedPump
    from state.work import ledger

    here, there = homes(root, url)
    views = []
    seen = threading.Condition()

    def publish(update) -> None:
        with seen:
            views.append((time.perf_counter(), update.view))
            seen.notify_all()

    pump = FeedPump(Feed(here), publish, rescan_every=FAR, work_every=FAR)
    listener = LedgerListener(here, pump)
    threads = [
        threading.Thread(target=pump.run, daemon=True),
        threading.Thread(target=listener.run, daemon=True),
    ]
    for t in threads:
        t.start()
    times = []
    try:
        marker = submit(there, -1)  # seen once the listener is up (its connect's re-read)
        until(
            lambda: any(v.work_item(marker.work_id) for _, v in views),
            timeout=30,
            what="the listener's first re-read",
        )
        for n in range(rounds):
            item = submit(there, n)
            until(lambda: any(v.work_item(item.work_id) for _, v in views), what="the item")
            start = time.perf_counter()
            ledger.claim(there, item.work_id, holder="bench")

            def shown():
                for at, view in views:
                    row = view.work_item(item.work_id)
                    if at >= start and row is not None and row.state == "running":
                        return at
                return None

            at = until(shown, what="the claim on the feed's view")
            times.append((at - start) * 1000)
    finally:
        listener.stop()
        pump.stop()
        for t in threads:
            t.join(10)
    return times


def dispatch(root: Path, url: str, rounds: int) -> list[float]:
    from captain_tui.runtime import runner as runner_module
    from state.crew import protocol
    from state.work import ledger

    runner_module.LEDGER_EVERY = FAR  # only the wake-up may hand the slot on
    runner_module.HEARTBEAT_EVERY = FAR
    here, there = homes(root, url, slots=1)

    def recruit(n: int):
        r = protocol.recruit(here, f"Crew{n}", "Bench the wake-up")
        return ledger.get(here, "wrk_" + r.assignment_id.removeprefix("asg_"))

    running = recruit(0)
    stop = threading.Event()
    runner = runner_module.Runner(here)

    def loop() -> None:
        while not stop.is_set():
            runner.sleep(0.25)

    thread = threading.Thread(target=loop, daemon=True)
    thread.start()
    times = []
    try:
        until(
            lambda: getattr(runner.listener, "connects", 0),  # pg_backend.Listener's count
            timeout=30,
            what="the runner's listener",
        )
        for n in range(1, rounds + 1):
            waiting = recruit(n)
            assert waiting.state == "queued", waiting.state
            current = ledger.get(here, running.work_id)
            start = time.perf_counter()
            ledger.report(there, current.work_id, current.generation, "succeeded", actor="bench")
            until(
                lambda: ledger.get(here, waiting.work_id).state == "running",
                what="the freed slot handed on",
            )
            times.append((time.perf_counter() - start) * 1000)
            running = waiting
    finally:
        stop.set()
        thread.join(10)
        runner.close()
    return times


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=20)
    parser.add_argument("--quick", action="store_true", help="--rounds 5")
    parser.add_argument("--smoke", action="store_true", help=f"{SMOKE}: --rounds 1")
    parser.add_argument("--json", type=Path)
    args = parser.parse_args()
    rounds = 1 if args.smoke else 5 if args.quick else args.rounds
    tmp = Path(tempfile.mkdtemp(prefix="captain-bench-wakeups-"))
    os.environ["CAPTAIN_HOME"] = str(tmp / "default-home")  # never the user's home
    os.environ.pop("CAPTAIN_LEDGER_URL", None)
    load = f"{os.getloadavg()[0]:.2f}"
    pg = Postgres()
    try:
        rows = [
            latency_row(
                "another home's claim -> a listener hears it",
                notification(tmp / "notify", pg.fresh_url(), rounds),
                "info (the floor of the two below)",
            ),
            latency_row(
                "another home's claim -> the Work panel's feed shows it (re-reads out of reach)",
                feed(tmp / "feed", pg.fresh_url(), rounds),
                f"p95 <= {BUDGET_MS:.0f} ms (was up to 5 s)",
                BUDGET_MS,
            ),
            latency_row(
                "another home's report -> the crew queued here runs (runner's 5 s "
                "round out of reach)",
                dispatch(tmp / "dispatch", pg.fresh_url(), rounds),
                f"p95 <= {BUDGET_MS:.0f} ms (was up to 5 s)",
                BUDGET_MS,
            ),
        ]
    finally:
        pg.stop()
        shutil.rmtree(tmp, ignore_errors=True)
    print_report(f"ledger wake-ups, PostgreSQL, {os.cpu_count()} cores, load {load}", rows)
    write_json(args.json, {"rows": rows})
    return 0 if all(r["verdict"] != "MISSED" for r in rows) else 1


if __name__ == "__main__":
    run_script(main)

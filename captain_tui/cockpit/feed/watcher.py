"""The watcher: watchfiles on the home, in a process of its own, feeding the pump.

watchfiles is a hint, never a log: a dropped event costs at most one rescan period, never
state. A watcher error asks the pump for a rescan and starts a new watcher.
"""

from __future__ import annotations

import asyncio
import json
import os
import sys
import threading
from pathlib import Path

from captain_tui.cockpit.feed.pump import RESCAN_SECONDS, FeedPump

# watchfiles passes a batch on once no change came for STEP_MS (the files of one protocol
# call land within a few ms of each other), at most DEBOUNCE_MS after the first; its default
# (1600 ms) would blow the 100 ms event-to-row budget. Its thread also wakes every STEP_MS
# while idle, in the watcher's own process: latency against idle CPU.
DEBOUNCE_MS = 20
STEP_MS = 5
RETRY_SECONDS = 1.0  # a watcher that failed is restarted after this long
# an idle watcher says it is alive this often (its first line, at once, says it is up); a
# quiet line wakes the watcher process and the thread reading it, and it is what ends a
# watcher whose cockpit was killed (its write fails), so it lingers at most this long
WAKE_MS = 10_000


def _interesting(change, path: str) -> bool:
    """Skip what no panel shows before it even reaches the pump."""
    name = os.path.basename(path)
    return not name.startswith(".") and f"{os.sep}locks{os.sep}" not in path


async def watch(root: Path, pump: FeedPump, *, stop: asyncio.Event | None = None) -> None:
    """Feed the pump from watchfiles until ``stop`` (or cancellation). A watcher error asks
    for a rescan (the watcher may have missed anything) and starts a new watcher, backing
    off while it keeps failing (each failure costs a rescan)."""
    stop = stop or asyncio.Event()
    retry = RETRY_SECONDS
    while not stop.is_set():
        try:
            up = False
            async for batch in awatch(
                root,
                watch_filter=_interesting,
                debounce=DEBOUNCE_MS,
                step=STEP_MS,
                stop_event=stop,
                yield_on_timeout=True,
                rust_timeout=WAKE_MS,
            ):
                if not up:
                    # the first yield (an empty one if nothing happened) means inotify is
                    # set up: rescan once for what changed while it was being set up
                    up = True
                    pump.request_rescan()
                    pump.watching = True
                if batch:
                    retry = RETRY_SECONDS
                    pump.request(path for _, path in batch)
            pump.watching = False
            return  # only a stop ends the watcher without an error
        except (asyncio.CancelledError, KeyboardInterrupt):
            pump.watching = False
            raise
        except Exception:  # noqa: BLE001 - any watcher failure: rescan and watch again
            pump.watching = False  # until it is up again, nothing says the home is quiet
            pump.request_rescan()
            try:
                await asyncio.wait_for(stop.wait(), retry)
            except asyncio.TimeoutError:
                pass
            retry = min(retry * 2, RESCAN_SECONDS)


class Watcher:
    """``watch`` on an event loop of its own; ``run`` blocks (call it in a thread worker).

    watchfiles sets up inotify on the whole home before it yields anything, synchronously
    and holding the GIL: 2-3.5 s for 100 crew and 250k files on a 2-core machine, during
    which no thread of this process runs — a thread of its own does not help, so ``awatch``
    runs watchfiles in a child process. The app starts the watcher after the first rows are
    on screen.
    """

    def __init__(self, root: Path, pump: FeedPump) -> None:
        self.root = root
        self.pump = pump
        self._lock = threading.Lock()
        self._loop: asyncio.AbstractEventLoop | None = None
        self._stop: asyncio.Event | None = None
        self._stopped = False

    def run(self) -> None:
        loop = asyncio.new_event_loop()
        with self._lock:
            if self._stopped:
                loop.close()
                return
            self._loop, self._stop = loop, asyncio.Event()
        try:
            loop.run_until_complete(watch(self.root, self.pump, stop=self._stop))
        finally:
            loop.close()

    def stop(self) -> None:
        with self._lock:
            self._stopped = True
            if self._loop is not None and self._stop is not None and not self._loop.is_closed():
                self._loop.call_soon_threadsafe(self._stop.set)


# The watcher process: ``runtime.homewatch.watch`` on the home (no watch in ``work/``: see
# there), one JSON line per batch ([] when a quiet ``rust_timeout`` passed). When the
# cockpit is gone, its next write fails and it exits.
_BATCH_LIMIT = 64 * 1024 * 1024  # one line is one batch: thousands of paths after a burst
_WATCHER = """
import json, sys
from captain_tui.runtime.homewatch import watch
root, debounce, step, timeout = sys.argv[1], *map(int, sys.argv[2:5])
try:
    for batch in watch(root, debounce=debounce, step=step, rust_timeout=timeout):
        print(json.dumps(sorted([change, path] for change, path in batch)), flush=True)
except (KeyboardInterrupt, OSError):
    pass
"""


async def awatch(
    root: Path,
    *,
    watch_filter,
    debounce: int,
    step: int,
    stop_event: asyncio.Event,
    yield_on_timeout: bool,
    rust_timeout: int,
):
    """``watchfiles.awatch``'s batches, from a child process (see ``Watcher``: in this
    process the set-up would stop every thread for seconds on a big home). A child that
    dies ends the stream with an error, which ``watch`` answers with a rescan and a new
    watcher. A module attribute, so tests can replace it."""
    proc = await asyncio.create_subprocess_exec(
        sys.executable,
        "-c",
        _WATCHER,
        str(root),
        str(debounce),
        str(step),
        str(rust_timeout),
        stdin=asyncio.subprocess.DEVNULL,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.DEVNULL,
        start_new_session=True,
        limit=_BATCH_LIMIT,
    )
    assert proc.stdout is not None  # stdout=PIPE
    stopped = asyncio.ensure_future(stop_event.wait())
    try:
        while True:
            line = asyncio.ensure_future(proc.stdout.readline())
            await asyncio.wait({line, stopped}, return_when=asyncio.FIRST_COMPLETED)
            if stopped.done():
                line.cancel()
                return
            raw = line.result()
            if not raw:
                raise RuntimeError(f"the watcher process exited ({await proc.wait()})")
            changes = json.loads(raw)
            batch = {(change, path) for change, path in changes if watch_filter(change, path)}
            if batch or (not changes and yield_on_timeout):
                yield batch
    finally:
        stopped.cancel()
        if proc.returncode is None:
            proc.kill()
            await proc.wait()

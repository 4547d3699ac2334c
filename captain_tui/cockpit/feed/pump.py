"""The feed's pump: one thread owns the ``Feed``, and every request to it goes through here.

Watcher batches, a shared ledger's notifications, rescans and the periodic clocks are
queued and coalesced, so many events cost one read of each touched crew or item. The pump
knows nothing of Textual: the app hands it a ``publish`` callback that posts a message.
"""

from __future__ import annotations

import queue
import time
from collections.abc import Callable, Iterable

from captain_tui.cockpit.feed.home_feed import Feed, Update

RESCAN_SECONDS = 30.0
# the Work panel's own re-read while the ledger is a shared database (PostgreSQL) and no
# listener is connected to it: then nothing else says what changed, and a write is seen at
# most this late. While a listener is connected its notifications feed the panel (a
# committed write is always notified to a connected listener) and an idle cockpit asks the
# database nothing but the periodic rescan.
WORK_SECONDS = 5.0
RETRY_SECONDS = 1.0  # a read that failed is retried with a rescan after this long

_RESCAN = object()
_WORK = object()  # re-read the Work panel's part
_STOP = object()


class FeedPump:
    """Serialises everything done to a ``Feed``: watcher batches, rescans, the clock.

    ``run`` blocks (call it in a thread worker). Requests that pile up while a batch is
    being read are coalesced into one: many events, one read of each touched crew. A read
    that fails (the home unreadable for a moment, a disk error) is reported and retried
    with a rescan; the pump itself never dies of it.
    """

    def __init__(
        self,
        feed: Feed,
        publish: Callable[[Update], object],
        *,
        rescan_every: float = RESCAN_SECONDS,
        work_every: float = WORK_SECONDS,
        report: Callable[[Exception], object] | None = None,
    ) -> None:
        self.feed = feed
        self.publish = publish
        self.report = report or (lambda exc: None)
        self.rescan_every = rescan_every
        self.work_every = work_every  # only while the feed's ledger is shared
        self._queue: queue.Queue = queue.Queue()
        self._held: list = []  # taken off the queue during a rescan, done after it
        self._stopped = False
        feed.pending = self._pending  # events are applied between two crews of a rescan
        self.listening = False  # a listener is connected to the shared ledger (set_listening)
        # the watcher is up (its watches in place), and how many batches it has handed over:
        # a change under the home shows as a new count (``heard``)
        self.watching = False
        self._batches = 0
        self.on_heard: Callable[[], object] | None = None  # told of each batch (any thread)

    def heard(self) -> int | None:
        """How many watcher batches came so far; None while no watcher is up (then nothing
        can say that the home did not change)."""
        return self._batches if self.watching else None

    def request(self, paths: Iterable[str]) -> None:
        self._batches += 1
        self._queue.put(list(paths))
        if self.on_heard is not None:
            self.on_heard()  # the doorbell's runner wakes (it sleeps until something can change)

    def request_rescan(self) -> None:
        self._queue.put(_RESCAN)

    def request_work(self, work_ids: Iterable[str]) -> None:
        """Re-read these work items (a shared ledger's notifications)."""
        self._queue.put(tuple(work_ids))

    def request_work_rescan(self) -> None:
        """Re-read the Work panel's part (a listener that may have missed anything)."""
        self._queue.put(_WORK)

    def set_listening(self, connected: bool) -> None:
        """Whether a listener is connected to the shared ledger now (the listener's thread
        says so after every wait). Losing it starts the Work panel's own clock at once."""
        if connected == self.listening:
            return
        self.listening = connected
        if not connected:
            self._queue.put(_WORK)  # re-read now, and on the clock until it is back

    def stop(self) -> None:
        self._stopped = True
        self._queue.put(_STOP)

    def run(self) -> None:
        next_rescan = 0.0  # the start-up scan
        next_work = float("inf")  # the shared ledger's clock, set once a scan says it is
        while not self._stopped:
            items = self._next_batch(next_rescan, next_work)
            if any(item is _STOP for item in items):
                return
            rescan = any(item is _RESCAN for item in items) or not self.feed.scanned
            update: Update | None
            try:
                if rescan:
                    update = self.feed.rescan(progress=self.publish)
                    next_rescan = time.monotonic() + self.rescan_every
                elif any(item is _WORK for item in items):
                    work = self.feed.rescan_work()  # covers the work IDs queued with it
                    rest = self.feed.apply(
                        p for item in items if isinstance(item, list) for p in item
                    )
                    update = (
                        rest
                        if work is None
                        else Update(self.feed.view, work.alerts + (rest.alerts if rest else []))
                    )
                else:
                    update = self.feed.apply(
                        (p for item in items if isinstance(item, list) for p in item),
                        (w for item in items if isinstance(item, tuple) for w in item),
                    )
                if rescan or any(item is _WORK for item in items):
                    polled = self.feed.shared and not self.listening
                    next_work = time.monotonic() + self.work_every if polled else float("inf")
            except Exception as exc:  # noqa: BLE001 - report, and let a rescan repair it
                self.report(exc)
                next_rescan = time.monotonic() + RETRY_SECONDS
                continue
            if update is not None:
                self.publish(update)

    def _pending(self) -> tuple[list[str], list[str]]:
        """What the watcher and a listener queued while a rescan runs: its changed paths
        and work IDs, for the feed to apply between two crews (``Feed.rescan``). Anything
        else (a stop, a rescan, a work re-read) waits until the rescan is over."""
        paths: list[str] = []
        work_ids: list[str] = []
        while True:
            try:
                item = self._queue.get_nowait()
            except queue.Empty:
                return paths, work_ids
            if isinstance(item, list):
                paths.extend(item)
            elif isinstance(item, tuple):
                work_ids.extend(item)
            else:
                self._held.append(item)

    def _next_batch(self, next_rescan: float, next_work: float = float("inf")) -> list:
        """Everything queued, waiting until the next rescan (or work re-read) is due."""
        due = min(next_rescan, next_work)
        wait = due - time.monotonic()
        if self._held:  # what a rescan took off the queue and left for after it
            items, self._held = self._held, []
        elif wait <= 0:
            items = [_RESCAN if next_rescan <= next_work else _WORK]
        else:
            try:
                items = [self._queue.get(timeout=wait)]
            except queue.Empty:
                # the periodic rescan: repairs whatever the watcher (or a listener) missed
                items = [_RESCAN if next_rescan <= next_work else _WORK]
        while True:
            try:
                items.append(self._queue.get_nowait())
            except queue.Empty:
                return items

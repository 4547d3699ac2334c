"""The feed's pump: one thread owns the ``Feed``, and every request to it goes through here.

Watcher batches, rescans and the periodic clock are queued and coalesced, so many events
cost one read of each touched crew. The pump knows nothing of Textual: the app hands it a
``publish`` callback that posts a message.
"""

from __future__ import annotations

import queue
import time
from collections.abc import Callable, Iterable

from captain_tui.cockpit.feed.home import Feed, Update

RESCAN_SECONDS = 30.0
RETRY_SECONDS = 1.0  # a read that failed is retried with a rescan after this long

_RESCAN = object()
_STOP = object()


class FeedPump:
    """Serialises everything done to a ``Feed``: watcher batches, rescans, the clock.

    ``run`` blocks (call it in a thread worker). Requests that pile up while a batch is
    being read are coalesced into one: many events, one read of each touched crew. A read
    that fails (the home unreadable for a moment, a disk error) is reported and retried
    with a rescan; the pump itself never dies of it.
    """

    def __init__(self, feed: Feed, publish: Callable[[Update], None], *,
                 rescan_every: float = RESCAN_SECONDS,
                 report: Callable[[Exception], None] | None = None) -> None:
        self.feed = feed
        self.publish = publish
        self.report = report or (lambda exc: None)
        self.rescan_every = rescan_every
        self._queue: queue.Queue = queue.Queue()
        self._stopped = False

    def request(self, paths: Iterable[str]) -> None:
        self._queue.put(list(paths))

    def request_rescan(self) -> None:
        self._queue.put(_RESCAN)

    def stop(self) -> None:
        self._stopped = True
        self._queue.put(_STOP)

    def run(self) -> None:
        next_rescan = 0.0  # the start-up scan
        while not self._stopped:
            items = self._next_batch(next_rescan)
            if any(item is _STOP for item in items):
                return
            rescan = any(item is _RESCAN for item in items) or not self.feed.scanned
            try:
                if rescan:
                    update = self.feed.rescan(progress=self.publish)
                    next_rescan = time.monotonic() + self.rescan_every
                else:
                    update = self.feed.apply(p for item in items if isinstance(item, list)
                                             for p in item)
            except Exception as exc:  # noqa: BLE001 - report, and let a rescan repair it
                self.report(exc)
                next_rescan = time.monotonic() + RETRY_SECONDS
                continue
            if update is not None:
                self.publish(update)

    def _next_batch(self, next_rescan: float) -> list:
        """Everything queued, waiting until the next rescan is due (then: a rescan)."""
        wait = next_rescan - time.monotonic()
        if wait <= 0:
            items = [_RESCAN]
        else:
            try:
                items = [self._queue.get(timeout=wait)]
            except queue.Empty:
                items = [_RESCAN]  # the periodic rescan: repairs whatever the watcher missed
        while True:
            try:
                items.append(self._queue.get_nowait())
            except queue.Empty:
                return items

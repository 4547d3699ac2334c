"""Retention on a clock: expired raw webhook bodies (and the bounded delivery files) are
purged by whichever long-running process is alive.

The runners of the whole home (``captain watch``, ``captain wait --all``, the cockpit's
doorbell worker — never its UI thread) call ``Purger.tick`` on every round; ``captain
serve`` runs ``run_purger`` in a thread of its own. Each purges at once, then at most every
``PURGE_EVERY`` seconds: a purge lists only the bodies still held
(``state.work.deliveries.purge``), so it stays cheap.
``captain deliveries purge`` does the same by hand.
"""

from __future__ import annotations

import threading
import time

from state.errors import CaptainError
from state.home import Home
from state.work import deliveries

PURGE_EVERY = 300.0  # seconds between purges; bodies are kept for days, so this is plenty


class Purger:
    def __init__(self, home: Home, every: float = PURGE_EVERY) -> None:
        self.home = home
        self.every = every
        self._next = 0.0  # the first tick purges

    @property
    def due(self) -> float:
        """The time.monotonic() of the next purge."""
        return self._next

    def tick(self, clock: float | None = None) -> deliveries.Purged | None:
        """Purge when due; what was removed, or None (not due, or the home said no)."""
        clock = time.monotonic() if clock is None else clock
        if clock < self._next:
            return None
        self._next = clock + self.every
        try:
            return deliveries.purge(self.home)
        except (CaptainError, OSError):
            return None  # a read-only or broken home: the next round tries again


def run_purger(home: Home, stop: threading.Event, every: float = PURGE_EVERY) -> None:
    """Purge now, then every ``every`` seconds until ``stop`` is set (a thread's body)."""
    purger = Purger(home, every)
    while not stop.is_set():
        purger.tick()
        stop.wait(every)

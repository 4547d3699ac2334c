"""The one clock and the one ID source: every record's time and ID come from here.

``now()`` is the time of day for records; ``state.ids.new_id`` takes its milliseconds and
randomness from the same clock. A test or the screenshot script that needs the same times
and IDs on every run installs a ``Fixed`` clock with ``using(...)``, instead of patching a
``now`` or ``new_id`` in each module that imported one.
"""

from __future__ import annotations

import contextlib
import itertools
import os
import threading
import time
from collections.abc import Callable, Iterator
from datetime import datetime, timedelta, timezone


class Clock:
    """The real one: the system's UTC time and the OS's randomness."""

    def __init__(self) -> None:
        self._last = (0, 0)  # the last ID's (milliseconds, randomness)
        self._guard = threading.Lock()

    def stamp(self) -> tuple[int, int]:
        """An ID's milliseconds and randomness, in order within this process: two IDs made
        in one millisecond sort in the order they were made (the randomness of the second
        is the first's plus a random step), as ULIDs' monotonic mode does."""
        ms, rnd = self.millis(), self.random80()
        with self._guard:
            last_ms, last_rnd = self._last
            if ms == last_ms and rnd <= last_rnd and last_rnd < 2**80 - 2**17:
                rnd = last_rnd + 1 + rnd % 2**16
            self._last = (ms, rnd)
        return ms, rnd

    def now(self) -> datetime:
        return datetime.now(timezone.utc)

    def millis(self) -> int:
        return time.time_ns() // 1_000_000

    def random80(self) -> int:
        return int.from_bytes(os.urandom(10), "big")

    def new_id(self, prefix: str) -> str | None:
        """An ID of one's own choosing, or None for ``state.ids``' time-ordered one."""
        return None


class Fixed(Clock):
    """A clock that stands still until told otherwise; its IDs are still time-ordered and
    unique, and the same on every run. ``new_id`` may name IDs outright."""

    def __init__(self, at: datetime, new_id: Callable[[str], str] | None = None) -> None:
        super().__init__()
        self.at = at
        self._ids = new_id
        self._count = itertools.count(1)

    def now(self) -> datetime:
        return self.at

    def millis(self) -> int:
        return int(self.at.timestamp() * 1000)

    def random80(self) -> int:
        return next(self._count) * 0x9E3779B97F4A7C15 % 2**80  # spread, but repeatable

    def stamp(self) -> tuple[int, int]:
        return self.millis(), self.random80()  # the same IDs on every run, as recorded

    def new_id(self, prefix: str) -> str | None:
        return self._ids(prefix) if self._ids is not None else None

    def set(self, at: datetime) -> None:
        self.at = at

    def advance(self, **delta: float) -> None:
        self.at += timedelta(**delta)


_current: Clock = Clock()


def current() -> Clock:
    return _current


def now() -> datetime:
    """The time for a record, always UTC."""
    return _current.now()


@contextlib.contextmanager
def using(clock: Clock) -> Iterator[Clock]:
    """Install ``clock`` for every record written inside the block, then the previous one."""
    global _current
    previous, _current = _current, clock
    try:
        yield clock
    finally:
        _current = previous

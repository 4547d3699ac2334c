"""When the cockpit's garbage collections run: full ones between events, not inside them.

A full collection walks every object in the process. Python starts one when enough objects
have piled up, and the cockpit allocates most while it renders an event, so it started in
the middle of putting a row on screen: 100-300 ms with Textual's ~100k objects, 30-80 ms
once those are frozen, on an event budget of 100 ms. So, while the cockpit runs:

- what start-up built (Textual, the widgets, the modules, the first read of the home) is
  frozen: moved where no collection looks (``gc.freeze``);
- allocation no longer starts full collections; ``tick`` (the app calls it every second)
  starts one once Python would have (as many young collections since the last), when
  start-up is over (frozen) and no update came and no key was pressed for ``QUIET``
  seconds, or after ``LATEST`` seconds of waiting for a quiet moment. Young collections
  stay Python's: they take a millisecond or two.

``stop`` puts Python's own rule back and unfreezes, so another app in the same process (the
tests) starts from the usual state.
"""

from __future__ import annotations

import gc
import time

QUIET = 0.5  # seconds without a feed update before a due full collection runs
LATEST = 30.0  # a due one runs after this long anyway (events that never pause)
NEVER = 1_000_000  # young collections between full ones: allocation never starts one


class Collector:
    def __init__(self) -> None:
        self._threshold: tuple[int, int, int] | None = None
        self._frozen = False
        self._due_since: float | None = None

    def start(self) -> None:
        if self._threshold is None:
            self._threshold = gc.get_threshold()
            gen0, gen1, _ = self._threshold
            gc.set_threshold(gen0, gen1, NEVER)

    @property
    def frozen(self) -> bool:
        return self._frozen

    def freeze(self) -> None:
        if self._threshold is not None and not self._frozen:  # started, not stopped
            self._frozen = True
            gc.freeze()

    def tick(self, quiet_for: float) -> bool:
        """Run a full collection if one is due and the moment is right; whether it ran."""
        if self._threshold is None or gc.get_count()[2] < self._threshold[2]:
            return False  # Python would not have collected yet either
        now = time.monotonic()
        if self._due_since is None:
            self._due_since = now
        # start-up (the home's first scan) is not a quiet moment, however long between its
        # updates: a full collection there walked the objects the scan was building and
        # held it up by 200-300 ms on the big home
        if (quiet_for < QUIET or not self._frozen) and now - self._due_since < LATEST:
            return False
        self._due_since = None
        gc.collect()
        return True

    def stop(self) -> None:
        if self._threshold is not None:
            gc.set_threshold(*self._threshold)
            self._threshold = None
        if self._frozen:
            self._frozen = False
            gc.unfreeze()

"""The loop behind ``captain wait`` and ``captain watch``: sleep on inotify, ring held
doorbells, look for approval prompts on hookless panes and for start-up dialogs.

watchfiles is a hint, never a log: every wake-up rescans what it serves, so an event the
watcher dropped (inotify overflow, a watcher error) costs latency, never state.

On a PostgreSQL ledger another host's report or cancel changes nothing under the home, so
the runner also listens to the database (``state.work.backend.listener_for``: LISTEN/NOTIFY;
the files have no listener). A notification brings the ledger round forward to the next
tick (at most ``WAKE_MS`` away while sleeping), so a slot freed on another host is handed
on at once, not on the round's 5 s clock; that clock stays, and covers a lost notification.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable
from typing import TYPE_CHECKING

from state.home import Home

if TYPE_CHECKING:  # each is imported when first needed
    from captain_tui.runtime.death_watch import Probe, Snapshots
    from captain_tui.runtime.ledger_probe import Dispatcher
    from captain_tui.runtime.upkeep import Purger
    from state.work.backend import LedgerWakeups

RING_EVERY = 0.5  # seconds between doorbell rounds while waiting
# deaths come by tmux's pane-died hook; the probe (runtime/death_watch.py) covers vanished
# windows and servers every death_watch.PROBE_EVERY seconds
APPROVAL_EVERY = 30.0  # hookless panes are checked for a modal this often
LEDGER_EVERY = 5.0  # dispatch into freed slots, and the webhook intake's settling
# heartbeats and lease verdicts: a quarter of the lease (60 s by default), so a lease is
# renewed a few times before it could lapse, but no more often than this (each heartbeat
# writes a lease file every watcher of the home then reads): 20 crew in live panes were 20
# writes every 5 s
HEARTBEAT_EVERY = 15.0
WAKE_MS = 250  # the longest one sleep lasts without an event
LEDGER_SOONEST = 0.25  # a notification runs the round at once; rounds stay this far apart


class Runner:
    """Owns a watcher on the home; ``sleep`` returns early when anything in the home changes."""

    def __init__(self, home: Home, crew: str | None = None, *, ring: bool = True) -> None:
        self.home = home
        self.crew = crew
        self.ring = ring
        self._gen = None
        self._next_ring = 0.0
        self._next_approval = 0.0
        self._next_ledger = 0.0
        self._next_examine = 0.0
        self._next_deaths = 0.0
        self._next_dialogs = 0.0
        self._last_ledger = float("-inf")
        # the shared ledger's wake-ups (None: files, or not asked yet)
        self._listener: LedgerWakeups | None = None
        self._next_listen = 0.0  # when to ask for a listener again
        self.woken = 0  # ledger rounds a notification brought forward (tests, benchmarks)
        self._deaths: Probe | None = None  # made on the first round
        self._snapshots: Snapshots | None = None  # the crews' snapshots, shared by the probes
        self._quiet: dict = {}  # doorbell.ring_all's memory: crews with nothing to ring
        # what a watcher of the home has heard so far (the cockpit's: its batches, counted;
        # None: it cannot tell); while it hears nothing and every crew is remembered quiet,
        # a doorbell round has nothing to look at (``_ring_due``)
        self.heard: Callable[[], int | None] | None = None
        self._heard_at_ring: int | None = None
        self._looked: dict = {}  # doorbell.check_approval's memory: panes seen without a modal
        self._all_quiet = False
        self._purger: Purger | None = None  # expired webhook bodies; made on the first round
        self._dispatcher: Dispatcher | None = None  # made on the first ledger round
        self.changes = 0

    def _watcher(self):
        if self._gen is None:
            from captain_tui.runtime import homewatch

            # no watch in work/ (one per item ever recorded): homewatch says why
            self._gen = homewatch.watch(self.home.root, debounce=20, step=10, rust_timeout=WAKE_MS)
        return self._gen

    def tick(self) -> None:
        """Doorbells and pane checks, each on its own clock."""
        if not self.ring:
            return
        from captain_tui.runtime import doorbell

        clock = time.monotonic()
        if clock >= self._next_ring:
            self._next_ring = clock + RING_EVERY
            if self.crew is None:
                if self._ring_due(clock):
                    rung = doorbell.ring_all(self.home, self._quiet)
                    self._all_quiet = len(self._quiet) == len(rung)
            else:
                _quietly(doorbell.ring, self.home, self.crew)
        if self._heard(clock) and clock < self._next_ledger:
            soonest = self._last_ledger + LEDGER_SOONEST
            if soonest < self._next_ledger:
                self._next_ledger = soonest
                self.woken += 1
        if clock >= self._next_ledger:
            self._next_ledger = clock + LEDGER_EVERY
            self._last_ledger = clock
            from captain_tui.runtime import ledger_probe as ledger_runtime

            examine = clock >= self._next_examine
            if examine:
                self._next_examine = clock + examine_every(self.home)
            if self._dispatcher is None:
                self._dispatcher = ledger_runtime.Dispatcher()
            ledger_runtime.round(self.home, examine=examine, dispatcher=self._dispatcher)
        if clock >= self._next_deaths:
            from captain_tui.runtime import death_watch

            if self._deaths is None:
                self._deaths = death_watch.Probe(self._crews())
            _quietly(self._deaths.round, self.home, [self.crew.lower()] if self.crew else None)
            # a pane or server seen gone is looked at again as soon as it may count
            self._next_deaths = time.monotonic() + (
                death_watch.CONFIRM_AFTER if self._deaths.pending else self._deaths.every
            )
        if self._deaths is not None:
            _quietly(self._deaths.quick, self.home)  # a crew's process ending: at once
            if self._deaths.fired:  # ... and the round after it (a window or server gone)
                self._deaths.fired = False
                self._next_deaths = 0.0
        if self.crew is None:  # a runner of the whole home: watch, wait --all, the cockpit
            if self._purger is None:
                from captain_tui.runtime.upkeep import Purger

                self._purger = Purger(self.home)
            self._purger.tick(clock)  # at once, then every upkeep.PURGE_EVERY seconds
        if clock >= self._next_dialogs:  # start-up dialogs: on the death probe's clock
            from captain_tui.runtime import dialogs

            self._next_dialogs = clock + dialogs.PROBE_EVERY
            for key in [self.crew.lower()] if self.crew else self.home.crew_keys():
                _quietly(dialogs.probe, self.home, key, self._crews())
        if clock >= self._next_approval:
            self._next_approval = clock + APPROVAL_EVERY
            for key in [self.crew.lower()] if self.crew else self.home.crew_keys():
                _quietly(doorbell.check_approval, self.home, key, self._crews(), self._looked)

    def due(self) -> float:
        """Seconds until a ``tick`` can next find something to do without being told: the
        soonest of its clocks. A doorbell round is due on its own clock only while a crew
        is not remembered quiet (a held ring is retried every RING_EVERY) or no watcher
        can say the home did not change; else when the first quiet memory runs out, or
        when the watcher hears a change (the caller wakes on that: ``_ring_due``). A
        crew's process ending comes by ``fds``. The caller waits for the sooner of this,
        a change under the home and ``fds``."""
        clock = time.monotonic()
        if self.crew is not None or not self._all_quiet or self.heard is None:
            ring = self._next_ring
        elif self.heard() is None or self.heard() != self._heard_at_ring:
            ring = self._next_ring
        else:
            recheck = min((seen[1] for seen in self._quiet.values()), default=float("inf"))
            ring = max(self._next_ring, recheck)
        clocks = [ring, self._next_ledger, self._next_deaths, self._next_dialogs]
        clocks.append(self._next_approval)
        if self._listener is not None:
            clocks.append(clock + RING_EVERY)  # its notifications are read by the tick
        else:
            clocks.append(self._next_listen)
        if self._purger is not None:
            clocks.append(self._purger.due)
        if self._deaths is not None and self._deaths.pending_quick:
            clocks.append(clock + RING_EVERY)  # an ended process tmux has no status for yet
        return max(0.0, min(clocks) - clock)

    def fds(self) -> list[int]:
        """File descriptors that become readable when a tick has something to do at once:
        a pidfd per live crew pane's process (``death_watch.Probe.quick``)."""
        return self._deaths.fds() if self._deaths is not None else []

    def _ring_due(self, clock: float) -> bool:
        """Whether a doorbell round of the whole home can find anything to do: always,
        unless a watcher says nothing changed under the home since the last round, every
        crew was remembered quiet then (a held ring is retried every round) and none of
        those memories has run out (``doorbell.QUIET_RECHECK``)."""
        heard = self.heard() if self.heard is not None else None
        if heard is None or heard != self._heard_at_ring or not self._all_quiet:
            self._heard_at_ring = heard
            return True
        if clock >= min((seen[1] for seen in self._quiet.values()), default=0.0):
            return True
        return False

    def _crews(self) -> Snapshots:
        """The crews' snapshots, read again only when a crew's files change."""
        if self._snapshots is None:
            from captain_tui.runtime.death_watch import Snapshots

            self._snapshots = Snapshots()
        return self._snapshots

    @property
    def listener(self) -> LedgerWakeups | None:
        """The shared ledger's listener once one was made (None on the files)."""
        return self._listener

    def _heard(self, clock: float) -> bool:
        """Whether the shared ledger said it changed since the last tick (never waits)."""
        if self._listener is None:
            if clock < self._next_listen:
                return False
            self._next_listen = clock + LEDGER_EVERY  # the files: ask again now and then
            from state.errors import CaptainError
            from state.work.backend import listener_for

            try:
                self._listener = listener_for(self.home)
            except CaptainError:
                return False  # a bad URL: the round reports nothing; status says why
            if self._listener is None:
                return False
        return bool(self._listener.wait(0))

    def sleep(self, seconds: float) -> None:
        self.tick()
        if seconds <= 0:
            return
        try:
            batch = next(self._watcher())
        except (StopIteration, RuntimeError, OSError):
            self._gen = None  # a watcher error: fall back to a plain nap; the rescan covers it
            time.sleep(min(seconds, WAKE_MS / 1000))
            return
        self.changes += len(batch)

    def close(self) -> None:
        if self._deaths is not None:
            self._deaths.close()
        if self._gen is not None:
            self._gen.close()
            self._gen = None
        if self._listener is not None:
            self._listener.close()
            self._listener = None


class Wake:
    """What a runner's thread sleeps on between ticks: ``wait`` returns when ``set`` is
    called (from any thread: a watcher's batch, closing down), when one of ``fds`` becomes
    readable (a pidfd: a crew's process ended) or after ``seconds``: never on a clock
    shorter than the runner's own (``Runner.due``)."""

    SOONEST = 0.05  # two waits never end closer together (a readable fd left unread)

    def __init__(self) -> None:
        import threading

        self._read, self._write = os.pipe()
        os.set_blocking(self._read, False)
        os.set_blocking(self._write, False)
        self._lock = threading.Lock()
        self._closed = False

    def set(self) -> None:
        with self._lock:
            if self._closed:
                return
            try:
                os.write(self._write, b"!")
            except BlockingIOError:
                pass  # full: a wake is pending already

    def wait(self, seconds: float, fds: list[int] | None = None) -> bool:
        """Sleep until woken, an fd is readable or ``seconds`` passed; True when woken or
        an fd is readable. Consumes the wake."""
        import select

        poller = select.poll()
        poller.register(self._read, select.POLLIN)
        for fd in fds or ():
            poller.register(fd, select.POLLIN)
        ready = poller.poll(int(max(seconds, self.SOONEST) * 1000))
        try:
            while os.read(self._read, 512):
                pass
        except BlockingIOError:
            pass
        return bool(ready)

    def close(self) -> None:
        with self._lock:
            if not self._closed:
                self._closed = True
                os.close(self._read)
                os.close(self._write)


def examine_every(home: Home) -> float:
    """Seconds between heartbeat rounds: a quarter of the lease, within [LEDGER_EVERY,
    HEARTBEAT_EVERY]."""
    from state.work import ledger

    try:
        lease = ledger.lease_seconds(home)
    except Exception:  # noqa: BLE001 - a broken config: the store reports it; be safe
        return LEDGER_EVERY
    return max(min(HEARTBEAT_EVERY, lease / 4), LEDGER_EVERY)


def _quietly(fn, *args) -> None:
    from state.errors import CaptainError

    try:
        fn(*args)
    except CaptainError:
        pass  # a doorbell problem is the doorbell's to report (status shows the gate)

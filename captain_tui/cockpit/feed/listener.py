"""The shared ledger's wake-up: what watchfiles is to the home, LISTEN/NOTIFY is to a work
ledger in PostgreSQL, where another host's claim or report changes nothing under the home.

``LedgerListener.run`` (a thread worker: it waits on the database, never on the UI thread)
feeds the pump the work IDs of committed writes, which the Work panel re-reads one by one,
and a Work rescan whenever the listener may have missed something (it connected, or
reconnected after losing its connection). While it is connected it tells the pump so, and
the Work panel is fed by its notifications alone (PostgreSQL notifies every committed write
to a connected listener): an idle cockpit asks the database nothing between rescans. Not
connected, the pump re-reads the Work panel on a short clock (``pump.WORK_SECONDS``), so a
write is seen at most that late. A file ledger has no listener
(``state.work.backend.listener_for``): ``run`` returns at once.
"""

from __future__ import annotations

import threading

from captain_tui.cockpit.feed.pump import FeedPump
from state.errors import CaptainError
from state.home import Home
from state.work.backend import listener_for
from state.work.pg_backend import EVERYTHING  # a constant: importing it loads no driver

WAIT_SECONDS = 0.5  # the longest one wait lasts, so a stop is heard this soon
RETRY_SECONDS = 5.0  # a ledger URL that could not be used is tried again after this long


class LedgerListener:
    def __init__(self, home: Home, pump: FeedPump) -> None:
        self.home = home
        self.pump = pump
        self._stop = threading.Event()

    def run(self) -> None:
        listener = None
        try:
            while not self._stop.is_set():
                if listener is None:
                    try:
                        listener = listener_for(self.home)
                    except CaptainError:  # a bad URL: the Work panel says so; try later
                        self._stop.wait(RETRY_SECONDS)
                        continue
                    if listener is None:
                        return  # the files: watchfiles on the home covers them
                heard = listener.wait(WAIT_SECONDS)
                self.pump.set_listening(listener.connected)  # before the re-read it asks
                if EVERYTHING in heard:
                    self.pump.request_work_rescan()
                elif heard:
                    self.pump.request_work(heard)
        finally:
            if not self._stop.is_set():  # it failed: the Work panel's own clock takes over
                self.pump.set_listening(False)
            if listener is not None:
                listener.close()

    def stop(self) -> None:
        self._stop.set()

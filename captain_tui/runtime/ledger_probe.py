"""The ledger's hands in tmux: probe a locator, stop an attempt, start what waited.

``state.work.ledger`` decides; this module only looks at panes and opens or closes them. Every
runner that is alive (the cockpit's doorbell worker, ``captain watch``, ``captain wait``)
runs ``round`` every few seconds: heartbeats for panes it sees alive, verdicts on expired
leases, and queued crews launched into freed slots.
"""

from __future__ import annotations

import os
import socket
import time

from state.clock import now
from state.crew import crewlog, guards
from state.errors import CaptainError
from state.home import Home
from state.inputs import crew_key
from state.records import Launched, Liveness, PaneLocator, Recruited
from state.vocab import counted
from state.work import ledger, settle
from state.work.ledger_records import Attempt, WorkItem


def holder() -> str:
    return f"runner:{socket.gethostname()}:{os.getpid()}"


def probe(locator: PaneLocator) -> Liveness:
    """alive | gone | unknown: only a confirmed answer is ever 'gone'.

    A dead pane (crew windows keep one readable after their process exits) is 'gone': tmux
    confirms the process ended, so its lease must not be renewed."""
    from captain_tui.runtime.tmux import ALIVE, GONE, Tmux

    try:
        info = Tmux(locator.socket).pane(locator)
    except CaptainError:
        return "unknown"
    return GONE if info.state == ALIVE and info.dead else info.state


class Panes:
    """``probe`` for one round over many locators: one ``list-panes -a`` per tmux server,
    asked the first time one of its panes is, instead of two tmux calls per pane (20 crews
    in live panes were 40 tmux processes every round). Same answers as ``probe``."""

    def __init__(self) -> None:
        self._servers: dict[str, tuple[Liveness, dict]] = {}

    def __call__(self, locator: PaneLocator) -> Liveness:
        from captain_tui.runtime.tmux import ALIVE, GONE, Tmux

        server = self._servers.get(locator.socket)
        if server is None:
            try:
                server = Tmux(locator.socket).panes()
            except CaptainError:
                return "unknown"
            self._servers[locator.socket] = server
        state, panes = server
        if state != ALIVE:
            return state
        pane = panes.get(locator.pane_id)
        return GONE if pane is None or pane.dead else ALIVE


def stop(attempt: Attempt) -> bool | None:
    """Close the attempt's pane: True when its end is confirmed, None with nothing to stop."""
    from captain_tui.runtime.launch import close_pane

    return close_pane(attempt.runtime_locator)


def _launch_spec(home: Home, key: str, incarnation: str):
    for event in reversed(crewlog.events(home, key)):
        if isinstance(event, Recruited) and event.incarnation_id == incarnation:
            return event.launch
    return None


def dispatch(home: Home) -> list[str]:
    """Hand freed slots to queued assignments, oldest first; returns the work IDs claimed.

    Webhook and chat items are claimed by their workers (``captain work claim``); an
    assignment is started here: its crew's pane is launched if it waited for a slot.
    """
    return _dispatch(home)[0]


def _dispatch(home: Home) -> tuple[list[str], list[str]]:
    """``dispatch``, and the crews whose assignments it found queued."""
    from state.crew import protocol

    claimed = []
    waiting: list[str] = []
    for item in ledger.queued(home):
        if item.source != "assignment" or not item.crew:
            continue
        key = crew_key(item.crew)
        waiting.append(key)
        with home.store.lock(guards.lock_name(key)):
            snapshot = crewlog.open_locked(home, key)
            if snapshot is None or snapshot.assignment.assignment_id != item.assignment_id:
                continue
            if snapshot.dismissed_at is not None:
                ledger.cancel(home, item.work_id, actor="captain", reason="crew dismissed")
                continue

            # recorded with --no-launch there is no pane and nothing to launch: its
            # process is the person's, and its attempt is held externally
            spec = (
                None
                if snapshot.pane is not None
                else _launch_spec(home, key, snapshot.incarnation_id)
            )
            holder = settle.holder_for(snapshot.pane is not None or spec is not None)

            def start(_: WorkItem, snapshot=snapshot, key=key, spec=spec) -> PaneLocator | None:
                if snapshot.pane is not None or spec is None:
                    return snapshot.pane
                from captain_tui.runtime.launch import launcher

                launch = launcher(
                    home,
                    name=snapshot.name,
                    key=key,
                    agent=snapshot.agent,
                    program=spec.program,
                    cwd=spec.cwd,
                    socket=spec.socket,
                    session=spec.session,
                )
                pane, undo = launch(
                    protocol.crew_env(
                        home,
                        snapshot.name,
                        snapshot.incarnation_id,
                        snapshot.assignment.assignment_id,
                    )
                )
                try:
                    crewlog.append(
                        home,
                        key,
                        snapshot,
                        Launched(seq=snapshot.seq + 1, at=now(), actor="captain", pane=pane),
                    )
                except BaseException:
                    undo()
                    raise
                return pane

            with ledger.capacity_transaction(home):
                if not ledger.has_free_slot(home):
                    break
                ledger.claim_held(home, item.work_id, holder=holder, start=start)
                claimed.append(item.work_id)
    return claimed, waiting


class Dispatcher:
    """``dispatch`` for a runner's rounds, skipped while nothing it reads can have changed:
    the ledger's change stamp (``ledger.change_stamp``: the open items and the slots) and,
    for each assignment left queued last time, its crew's files (events and snapshot, by
    time) are as they were when it last claimed nothing. An idle home with twenty running
    items read all twenty every round (5 s) to find nothing to start. Every ``RECHECK``
    seconds it reads anyway (a writer killed between storing an item and touching its
    marker changes no stamp); a ledger that cannot give a stamp (PostgreSQL, whose writes
    its notifications tell) is read every round, as before."""

    RECHECK = 60.0

    def __init__(self) -> None:
        self._seen: tuple | None = None  # the stamps when it last claimed nothing
        self._waiting: tuple[str, ...] = ()  # crews whose assignments were left queued
        self._next_full = 0.0
        self.skipped = 0  # rounds that read nothing (tests, benchmarks)

    def __call__(self, home: Home) -> list[str]:
        clock = time.monotonic()
        stamp = ledger.change_stamp(home)
        crews = _crew_stamp(home, self._waiting) if stamp is not None else None
        seen = None if stamp is None or crews is None else (stamp, crews)
        if seen is not None and seen == self._seen and clock < self._next_full:
            self.skipped += 1
            return []
        if clock >= self._next_full:
            self._next_full = clock + self.RECHECK
        claimed, waiting = _dispatch(home)
        self._waiting = tuple(waiting)
        # what it read is what the stamps stand for, unless it wrote; the waiting crews'
        # are taken after the read (a change since is under a second old: no stamp)
        crews = _crew_stamp(home, self._waiting) if stamp is not None and not claimed else None
        self._seen = None if crews is None else (stamp, crews)
        return claimed


def _crew_stamp(home: Home, keys: tuple[str, ...]) -> tuple | None:
    """The times of these crews' histories and snapshots; None when one changed within the
    last second (a second change may share its time)."""
    out: list[tuple[str, int | None, int | None, int | None]] = []
    racy = time.time_ns() - 1_000_000_000
    for key in keys:
        try:
            events = os.stat(home.root / "crew" / key / "events")
            cached = os.stat(home.root / "crew" / key / "state.json")
        except FileNotFoundError:
            out.append((key, None, None, None))
            continue
        if max(events.st_mtime_ns, cached.st_mtime_ns) >= racy:
            return None
        out.append((key, events.st_mtime_ns, cached.st_ino, cached.st_mtime_ns))
    return tuple(out)


def round(  # noqa: A001 - one round
    home: Home, *, examine: bool = True, dispatcher: Dispatcher | None = None
) -> list[str]:
    """Heartbeats and lease verdicts (``examine``), then dispatch (through ``dispatcher``,
    a runner's, which skips it while the ledger is unchanged). Never raises a refusal."""
    changes: list[str] = []
    try:
        from state.work import deliveries

        changes += [
            f"{counted(n, 'webhook intake')} finished"
            for n in [deliveries.settle_pending(home)]
            if n
        ]
        if examine:
            changes += ledger.examine(home, Panes(), holder=holder())
    except CaptainError:
        pass
    try:
        changes += [f"{w}: started" for w in (dispatcher or dispatch)(home)]
    except CaptainError:
        pass
    return changes

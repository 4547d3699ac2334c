"""Crew deaths, as tmux sees them: a ``pane-died`` hook on every crew window, and a slow
probe for what no hook reports.

**The hook.** Crew windows keep a dead pane (``remain-on-exit on``), so when the crew's
process ends — it exits, with any status, or a signal kills it — tmux runs the window's
``pane-died`` hook: ``run-shell -b`` of ``captain hook tmux pane-died KEY INCARNATION
PANE``, set when the window opens (``watch``). The hook asks tmux again whether that pane
is dead (so nothing but a death tmux confirms is recorded), captures its last lines and
hands them to ``state.crew.death_notice.record``: one ``error`` notification per incarnation,
the work item failed. It always exits 0 and prints nothing (its output goes nowhere:
tmux would otherwise show it over the pane). A dismissal kills the window
(``kill-window``), which does not fire ``pane-died`` (tmux 3.3: checked by the tests), and
``record`` refuses a dismissed crew anyway.

**The probe.** One ``list-panes -a`` per tmux server every ``PROBE_EVERY`` seconds, run by
whichever runner is alive (the cockpit, ``captain watch``, ``captain wait``), for crews
that are live, launched, not done and not yet reported: a dead pane whose hook did not run
(a window opened before the hook was set, a hook that failed, a SIGCHLD tmux lost: then
the server is nudged first) is recorded like the hook would; a pane or a server that is
gone — the session or window killed outside captain, the server killed or crashed;
``session-closed`` is a server-wide hook, which captain does not set on a server that may
be the person's own — is recorded once it has been seen gone for ``CONFIRM_AFTER``
seconds: a dismissal closes the pane before it writes that the crew is dismissed, and the
second look finds the dismissal done.

**The runner's watch.** tmux can miss a death (a tmux built with libutempter loses the
SIGCHLD of a pane whose terminal closed first: no status, no hook until the server's next
SIGCHLD). So each runner also holds a pidfd per live pane process and looks at it on every
tick (``Probe.quick``): a process that ended is looked up in tmux at once, the server
nudged into reaping it when needed (``nudge``), and the death recorded.

Nothing here decides what a death means: ``state.crew.death_notice`` does.
"""

from __future__ import annotations

import os
import re
import shlex
import time
from collections.abc import Mapping
from pathlib import Path

from captain_tui.agents.kinds import captain_argv, captain_command
from captain_tui.runtime.tmux import ALIVE, GONE, UNKNOWN, PaneState, Tmux
from state.crew import crewlog
from state.crew import death_notice as crew_deaths
from state.crew.death_notice import EXITED, KILLED, LAST_LINES, SERVER_GONE, WINDOW_GONE, Death
from state.errors import CaptainError
from state.home import Home
from state.inputs import crew_key
from state.records import CrewSnapshot, Notification, PaneLocator

HOOK = "pane-died"
PROBE_EVERY = 3.0  # seconds between probes (a process's end comes by the hook, the pidfd)
# ... while every live crew's process is watched by a pidfd: a window or server killed
# hangs its processes up, their pidfds fire and the probe runs at once (``Probe.fired``);
# this clock is left for a process that outlives its hang-up
PROBE_COVERED = 15.0
CONFIRM_AFTER = 1.0  # a vanished pane or server counts once seen gone this long
# tmux marks a pane dead when its terminal closes and takes the exit status when it reaps
# the process (then pane-died fires). A dead pane still without a status after a nudge is
# recorded as "ended" once it has stayed so this long (a tmux that will not say)
STATUS_GRACE = 5.0
_INCARNATION = re.compile(r"inc_[0-9A-Za-z]{1,60}")
_PANE = re.compile(r"%[0-9]{1,10}")


# -- the hook -----------------------------------------------------------------------------


def _code_root() -> str:
    """Where this captain's packages are, so the hook runs the very code that set it."""
    import captain_tui

    return str(Path(captain_tui.__file__).resolve().parent.parent)


def _tmux_quoted(text: str) -> str:
    """``text`` as one double-quoted word of tmux's command language: backslash, double
    quote and ``$`` (tmux expands environment variables in double quotes) escaped."""
    for char in ("\\", '"', "$"):
        text = text.replace(char, "\\" + char)
    return f'"{text}"'


def hook_command(home_root: str, key: str, incarnation_id: str) -> str:
    """The tmux command a crew window's ``pane-died`` hook runs.

    Three languages nest here, and what a person typed (the home's path, where the Python
    lives) is made inert in each: ``shlex.quote`` for the shell, ``#`` doubled for tmux's
    format expansion (``run-shell`` expands ``#{...}`` first), then one double-quoted tmux
    word. The crew key and incarnation are checked to be plain words first. The pane's ID
    is the only format left: ``#{pane_id}``, which tmux fills in as ``%N``."""
    crew_key(key)
    if not _INCARNATION.fullmatch(incarnation_id):
        raise CaptainError("invalid_argument", f"{incarnation_id!r} is not an incarnation ID.")
    argv = [*captain_argv(captain_command()), "hook", "tmux", HOOK, key, incarnation_id]
    shell = " ".join(
        [
            "CAPTAIN_HOME=" + shlex.quote(home_root),
            "PYTHONPATH=" + shlex.quote(_code_root()),
            shlex.join(argv),
        ]
    )
    shell = shell.replace("#", "##") + " '#{pane_id}' </dev/null >/dev/null 2>&1 || :"
    return "run-shell -b " + _tmux_quoted(shell)


def watch(tmux: Tmux, locator: PaneLocator, home: Home, key: str, incarnation_id: str) -> bool:
    """Set the crew window's ``pane-died`` hook. Best effort: False when tmux refused (the
    probe then sees the death, later)."""
    try:
        tmux.set_window_hook(
            locator.window_id or locator.pane_id,
            HOOK,
            hook_command(str(home.root), key, incarnation_id),
        )
    except CaptainError:
        return False
    return True


def run_hook(argv: list[str], env: Mapping[str, str]) -> int:
    """``captain hook tmux pane-died KEY INCARNATION PANE``: always 0, never a word."""
    try:
        _on_pane_died(argv, env)
    except Exception:  # noqa: BLE001 - a hook fails open; the probe looks again
        pass
    return 0


def _on_pane_died(argv: list[str], env: Mapping[str, str]) -> Notification | None:
    if len(argv) != 4 or argv[0] != HOOK:
        return None
    _, key, incarnation_id, pane_id = argv
    root = env.get("CAPTAIN_HOME") or ""
    if not (
        _PANE.fullmatch(pane_id)
        and _INCARNATION.fullmatch(incarnation_id)
        and os.path.isfile(os.path.join(root, "home.json"))
    ):
        return None  # never create a home, nor act on words tmux did not write
    home = Home(Path(root))
    snapshot, _ = crewlog.load(home, crew_key(key))
    pane = crew_deaths.mortal_pane(snapshot, incarnation_id)
    if snapshot is None or pane is None or pane.pane_id != pane_id:
        return None
    tmux = Tmux(pane.socket)
    state = tmux.pane_state(pane_id)
    deadline = time.monotonic() + 1.0
    while (
        state is not None
        and state.dead
        and state.status is None
        and state.signal is None
        and time.monotonic() < deadline
    ):
        time.sleep(0.05)  # tmux fires pane-died once it has the status; in case it has not
        state = tmux.pane_state(pane_id)
    if state is None or not state.dead or not _same_process(state, pane):
        return None  # only a death tmux confirms
    return _record_dead(home, snapshot, pane, tmux, state)


def _same_process(state: PaneState, locator: PaneLocator) -> bool:
    """A pane ID is reused by a new server on the same socket: the pid tells them apart."""
    return state.pid is None or locator.pane_pid is None or state.pid == locator.pane_pid


def _record_dead(
    home: Home, snapshot: CrewSnapshot, pane: PaneLocator, tmux: Tmux, state: PaneState
) -> Notification | None:
    try:
        lines = tuple(tmux.last_lines(pane.pane_id, LAST_LINES))
    except CaptainError:
        lines = ()
    how = KILLED if state.signal is not None else EXITED
    return crew_deaths.record(
        home,
        snapshot.name,
        snapshot.incarnation_id,
        Death(how, state.status, state.signal, lines, pane.pane_id),
    )


# -- the probe ----------------------------------------------------------------------------


def nudge(tmux: Tmux) -> None:
    """Make the tmux server reap its children now. A tmux built with libutempter can lose
    the SIGCHLD of a pane whose terminal closed first (utempter's helper has the signal
    then; tmux/tmux#311): the pane shows dead without a status and ``pane-died`` waits for
    the server's next SIGCHLD. A ``run-shell true`` is one: tmux reaps every exited child,
    takes the status and fires the hook."""
    try:
        tmux.run("run-shell", "true", check=False)
    except CaptainError:
        pass


class Probe:
    """A runner's watch on its crews' panes, between and across rounds.

    ``round`` (every PROBE_EVERY s) asks each tmux server about every live crew; ``quick``
    (every tick of the runner, free while nothing happens) notices a crew's process ending
    the moment it does, through a pidfd per live pane (Linux), and makes sure tmux has
    reaped it (``nudge``), so a death the hook misses is still reported within a second."""

    def __init__(self, snapshots: Snapshots | None = None) -> None:
        # (crew key, incarnation) -> (gone | dead, first seen so)
        self._seen: dict[tuple[str, str], tuple[str, float]] = {}
        self._snapshots = snapshots or Snapshots()
        self._pidfds: dict[tuple[str, str], tuple[int, int]] = {}  # ident -> (pid, fd)
        self._ended: dict[tuple[str, str], tuple[CrewSnapshot, PaneLocator, float]] = {}
        self._covered = False  # the last round found every live crew's process watched
        self.fired = False  # a watched process ended since the runner last looked

    @property
    def every(self) -> float:
        """Seconds until the next round: PROBE_COVERED while every live crew's process is
        held by a pidfd (its end wakes the runner), else PROBE_EVERY."""
        return PROBE_COVERED if self._covered else PROBE_EVERY

    @property
    def pending(self) -> bool:
        """A pane or server was seen gone and awaits its second look (due in CONFIRM_AFTER)."""
        return any(kind == "gone" for kind, _ in self._seen.values())

    @property
    def pending_quick(self) -> bool:
        """A process seen ending whose pane tmux has not yet given a status for: ``quick``
        looks again at each call until it has."""
        return bool(self._ended)

    def fds(self) -> list[int]:
        """The pidfds held (each readable once its process ended: ``quick`` is due)."""
        return [fd for _, fd in self._pidfds.values()]

    def round(self, home: Home, keys: list[str] | None = None) -> list[Notification]:
        """One look at every live crew's pane (``keys``: only these crews); returns the
        notifications this round wrote. A disk or tmux problem is the next round's: a
        runner (``captain wait``) never stops for it."""
        try:
            return self._round(home, keys)
        except OSError:
            return []

    def _round(self, home: Home, keys: list[str] | None) -> list[Notification]:
        clock = time.monotonic()
        by_socket: dict[str, list[tuple[CrewSnapshot, PaneLocator]]] = {}
        for key in home.crew_keys() if keys is None else keys:
            try:
                snapshot = self._snapshots.get(home, key)
            except CaptainError:
                continue
            pane = crew_deaths.mortal_pane(snapshot)
            if (
                snapshot is not None
                and pane is not None
                and not crew_deaths.reported(home, key, snapshot.incarnation_id)
            ):
                by_socket.setdefault(pane.socket, []).append((snapshot, pane))
        out: list[Notification] = []
        seen: dict[tuple[str, str], tuple[str, float]] = {}
        alive: dict[tuple[str, str], int] = {}

        def waited(ident: tuple[str, str], kind: str, grace: float) -> bool:
            """Seen so for ``grace`` seconds (across rounds); remembered till then."""
            was = self._seen.get(ident)
            first = was[1] if was is not None and was[0] == kind else clock
            seen[ident] = (kind, first)
            return clock - first >= grace

        for socket, crews in by_socket.items():
            try:
                tmux = Tmux(socket)
                server, panes = tmux.panes()
            except CaptainError:
                continue  # no tmux at all: nothing is confirmed
            if server == UNKNOWN:
                continue
            nudged = False
            for snapshot, pane in crews:
                ident = (snapshot.name.lower(), snapshot.incarnation_id)
                state = panes.get(pane.pane_id) if server == ALIVE else None
                if state is not None and not _same_process(state, pane):
                    state = None  # the ID now names another pane: ours is gone
                try:
                    if state is not None and not state.dead:
                        if state.pid is not None:
                            alive[ident] = state.pid
                        continue
                    if state is not None:
                        if state.status is None and state.signal is None and not nudged:
                            nudge(tmux)
                            nudged = True
                            state = tmux.pane_state(pane.pane_id) or state
                        known = state.status is not None or state.signal is not None
                        if not known and not waited(ident, "dead", STATUS_GRACE):
                            continue
                        n = _record_dead(home, snapshot, pane, tmux, state)
                    else:
                        if not waited(ident, "gone", CONFIRM_AFTER):
                            continue
                        how = SERVER_GONE if server == GONE else WINDOW_GONE
                        n = crew_deaths.record(
                            home,
                            snapshot.name,
                            snapshot.incarnation_id,
                            Death(how, pane_id=pane.pane_id),
                        )
                except CaptainError:
                    continue
                if n is not None:
                    out.append(n)
        self._seen = seen
        watched = sum(len(crews) for crews in by_socket.values())
        if keys is None:
            self._watch(alive)
            self._covered = len(alive) == watched and all(i in self._pidfds for i in alive)
        else:
            self._watch({**{i: v[0] for i, v in self._pidfds.items() if i[0] not in keys}, **alive})
        return out

    # -- between rounds: each live pane's process, by pidfd -------------------------------

    def _watch(self, alive: dict[tuple[str, str], int]) -> None:
        """Hold a pidfd for exactly the live panes' processes (``alive``: ident -> pid)."""
        for ident in list(self._pidfds):
            pid, fd = self._pidfds[ident]
            if alive.get(ident) != pid:
                os.close(fd)
                del self._pidfds[ident]
        opener = getattr(os, "pidfd_open", None)
        for ident, pid in alive.items():
            if ident in self._pidfds or opener is None:
                continue
            try:
                self._pidfds[ident] = (pid, opener(pid))
            except OSError:
                pass  # gone already (the next round sees it), or no pidfds here

    def quick(self, home: Home) -> list[Notification]:
        """A watched process that ended is looked at now, and again each call for a few
        seconds until tmux has its status (nudged when it does not); returns what it
        recorded. Costs one ``poll`` while nothing ends."""
        try:
            return self._quick(home)
        except OSError:
            return []

    def _quick(self, home: Home) -> list[Notification]:
        import select

        if self._pidfds:
            poller = select.poll()
            for _, fd in self._pidfds.values():
                poller.register(fd, select.POLLIN)
            ready = {fd for fd, _ in poller.poll(0)}
            for ident, (_, fd) in list(self._pidfds.items()):
                if fd in ready:
                    self.fired = True  # a window or server killed: the round looks at once
                    self._covered = False
                    os.close(fd)
                    del self._pidfds[ident]
                    snapshot = self._snapshots.seen(ident[0])
                    pane = snapshot.pane if snapshot is not None else None
                    if (
                        snapshot is not None
                        and pane is not None
                        and snapshot.incarnation_id == ident[1]
                    ):
                        self._ended[ident] = (snapshot, pane, time.monotonic())
        out = []
        for ident, (snapshot, pane, since) in list(self._ended.items()):
            try:
                tmux = Tmux(pane.socket)
                state = tmux.pane_state(pane.pane_id)
                if (
                    state is not None
                    and state.dead
                    and state.status is None
                    and state.signal is None
                ):
                    nudge(tmux)
                    state = tmux.pane_state(pane.pane_id)
            except CaptainError:
                state = None
            if (
                state is not None
                and state.dead
                and (state.status is not None or state.signal is not None)
            ):
                del self._ended[ident]
                n = _record_dead(home, snapshot, pane, tmux, state)
                if n is not None:
                    out.append(n)
            elif state is None or time.monotonic() - since > STATUS_GRACE:
                del self._ended[ident]  # gone, or not dead after all: the rounds decide
        return out

    def close(self) -> None:
        for _, fd in self._pidfds.values():
            os.close(fd)
        self._pidfds.clear()


class Snapshots:
    """Crew snapshots as the runner's clocks read them: a crew's history is parsed again
    only when its files changed (``events`` and ``state.json``, by mtime, inode and size).
    The probes run every few seconds on every crew (deaths, start-up dialogs, approval
    prompts): re-reading twenty idle crews' histories each time was most of an idle
    runner's work. A file changed within the last second is always read again (a second
    change in the same tick may share its mtime)."""

    def __init__(self) -> None:
        self._cache: dict[str, tuple[tuple, CrewSnapshot | None]] = {}

    def get(self, home: Home, key: str) -> CrewSnapshot | None:
        root = f"{home.root}/crew/{key}"
        try:
            events, cached = os.stat(f"{root}/events"), os.stat(f"{root}/state.json")
        except OSError:
            sig = None
        else:
            sig = (events.st_mtime_ns, cached.st_ino, cached.st_mtime_ns, cached.st_size)
            if max(events.st_mtime_ns, cached.st_mtime_ns) >= time.time_ns() - 1_000_000_000:
                sig = None  # changed this very second: a second change may share its mtime
        seen = self._cache.get(key)
        if sig is not None and seen is not None and seen[0] == sig:
            return seen[1]
        snapshot, _ = crewlog.load(home, key)
        self._cache[key] = (sig if sig is not None else (), snapshot)
        return snapshot

    def seen(self, key: str) -> CrewSnapshot | None:
        """The snapshot last read for ``key`` (None: never read, or no crew)."""
        was = self._cache.get(key)
        return was[1] if was is not None else None

"""The cockpit's data feed: the home, read into panel rows, kept current cheaply.

``Feed`` reads the home only through ``state`` (crewlog, mailbox, the store's readers) and
keeps a small per-crew cache. A full ``rescan`` runs on start, after a watcher error and
periodically; between rescans, ``apply`` takes the paths the watcher saw and re-reads only
what each one touched (docs/store.md says which directory holds what; ``route`` is that map
turned around). The watcher is a hint, never a log: a dropped event costs at most one rescan
period, never state.

The work ledger on PostgreSQL changes with nothing under the home changing: there the pump
is also fed the work IDs a ``feed.listener`` hears (LISTEN/NOTIFY), and re-reads the Work
panel's part on a short clock of its own (``rescan_work``), which covers a lost notification.

Records are create-once, so the cache never re-parses a file it has seen; mail that was read
(or bounced) and notifications that were acknowledged are known by name only and never
parsed at all, which keeps a home with 50k messages cheap to watch.

``FeedPump`` owns a ``Feed`` on one thread and serialises everything done to it; ``watch``
feeds the pump from ``watchfiles`` in a process of its own (``awatch``). Neither knows about
Textual: the app hands the pump a ``publish`` callback that posts a message.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path

from captain_tui.cockpit.feed.alerts import Alert, alert_for
from captain_tui.cockpit.feed.path_routes import Route, route
from captain_tui.cockpit.feed.work_feed import WorkFeed
from state.crew import crewlog, death_notice, guards, spend, standing
from state.crew.spend import Spend
from state.errors import CaptainError
from state.home import Home
from state.records import CrewSnapshot, Message, Notification, RingStamp
from widgets.view import (
    ALERT_STATUSES,
    ApprovalRow,
    CrewRow,
    CrewView,
    DoorbellRow,
    HomeView,
    NotificationRow,
    QuestionRow,
)

PROGRESS_FIRST = 0.1  # during a long first scan, show the rows read so far this soon,
PROGRESS_LATER = 1.0  # then after this long, twice as long each time after (each showing
# re-renders every panel on the screen's thread, which slows the scan itself down: on a big
# home, showing every 0.5 s doubled the time to the whole home on screen)


SETTLED_NS = 2_000_000_000  # a directory whose mtime is older than this is "settled"


def _settled(*directories: Path) -> tuple | None:
    """The directories' identity and mtime, when a listing taken now may be trusted until
    they change: each mtime at least ``SETTLED_NS`` old, so an entry made in the same
    clock tick as the last change (file times are coarse) cannot hide behind an unchanged
    mtime. None: list them (one changed just now, or unreadable). Records are
    create-once, so a directory whose entries are the same holds the same records."""
    out: list[tuple[int, int, int] | None] = []
    now = time.time_ns()
    for directory in directories:
        try:
            st = os.lstat(directory)
        except FileNotFoundError:
            out.append(None)  # none yet: its first record makes it, and changes this
            continue
        except OSError:
            return None
        if now - st.st_mtime_ns < SETTLED_NS:
            return None
        out.append((st.st_dev, st.st_ino, st.st_mtime_ns))
    return tuple(out)


@dataclass
class Update:
    view: HomeView
    alerts: list[Alert] = field(default_factory=list)
    scanned: bool = True  # False while the first scan is still under way

    def __post_init__(self) -> None:
        self.view.work_order  # noqa: B018 - sorted here, on the feed's thread, not the UI's


# -- the per-crew cache ----------------------------------------------------------------------


@dataclass(frozen=True)
class _Mail:
    incarnation_id: str
    queued_at: datetime


@dataclass
class _CrewCache:
    snapshot: CrewSnapshot | None = None
    mail: dict[str, _Mail | None] = field(default_factory=dict)  # None: read, not parsed
    read: set[str] = field(default_factory=set)  # receipts and bounces, by message ID
    notes: dict[str, Notification | None] = field(default_factory=dict)  # None: acked
    acked: set[str] = field(default_factory=set)
    stamp: RingStamp | None = None
    approvals: tuple[ApprovalRow, ...] = ()  # open requests (state.crew.approvals)
    spend: dict[str, Spend] = field(default_factory=dict)  # by assignment (state.crew.spend)
    # each record directory as it was when last listed (see ``_settled``): a rescan that
    # finds it the same lists it not again
    listed: dict[str, tuple] = field(default_factory=dict)


class Feed:
    """The home as panel rows. Not thread-safe: one thread (the pump's) owns it."""

    def __init__(self, home: Home) -> None:
        self.home = home
        self.view = HomeView()
        self.scanned = False  # the first full scan has finished: from now on, new is news
        self._cache: dict[str, _CrewCache] = {}
        self._work = WorkFeed(home)
        self.shared = False  # the ledger is a database other hosts write (not the home)
        self._change_said = ""  # the ledger_changed last said (LedgerHandle.change)
        # what arrived while a rescan runs (the pump's queue: changed paths, work IDs),
        # asked between two crews; see ``rescan``
        self.pending: Callable[[], tuple[list[str], list[str]]] | None = None

    # -- whole home ----------------------------------------------------------------------

    def rescan(self, progress: Callable[[Update], object] | None = None) -> Update:
        """Read every crew again (only files not seen before are parsed).

        On a big home this takes a second or more; an event must not wait for it. So, once
        the first scan is done, what arrived meanwhile (``pending``) is applied between two
        crews and its update handed to ``progress`` at once, on the view shown so far; the
        crews this rescan already read (or has not listed) take the event's fresh rows."""
        alerts: list[Alert] = []
        crews: dict[str, CrewView] = {}
        shown, pause = time.monotonic(), PROGRESS_FIRST
        keys = self.home.crew_keys()
        listed, done, extra = set(keys), set(), set()
        for key in keys:
            view = self._refresh_crew(key, alerts)
            if view is not None:
                crews[key] = view
            done.add(key)
            if progress is not None and not self.scanned and time.monotonic() - shown >= pause:
                progress(Update(HomeView(dict(crews)), scanned=False))
                shown = time.monotonic()
                # the first rows soon, then let the scan get on
                pause = PROGRESS_LATER if pause < PROGRESS_LATER else pause * 2
            if progress is not None and self.scanned and self.pending is not None:
                for touched in self._apply_pending(progress):
                    if touched in done or touched not in listed:  # else: read below
                        extra.add(touched)
                        fresh = self.view.crews.get(touched)
                        if fresh is None:
                            crews.pop(touched, None)
                        else:
                            crews[touched] = fresh
        for gone in set(self._cache) - listed - extra:
            del self._cache[gone]
        if progress is not None and not self.scanned:
            # the crew panels first: a ledger slow to answer (a database that does not
            # reply) must not keep them from the screen
            progress(Update(HomeView(dict(crews)), scanned=False))
        work = self._work.rescan(alerts, announce=self.scanned)  # never raises: see WorkFeed
        self.view = HomeView(crews, work, self._ledger(alerts), self._work.shown_problem)
        self.scanned = True
        return Update(self.view, alerts)

    def _apply_pending(self, publish: Callable[[Update], object]) -> set[str]:
        """Apply what arrived during a rescan and publish it; the crews whose rows it
        changed."""
        assert self.pending is not None  # only called when the pump gave one
        paths, work_ids = self.pending()
        if not paths and not work_ids:
            return set()
        before = self.view.crews
        update = self.apply(paths, work_ids)
        if update is None:
            return set()
        publish(update)
        after = self.view.crews
        return {k for k in before.keys() | after.keys() if before.get(k) is not after.get(k)}

    def rescan_work(self) -> Update | None:
        """Re-read the Work panel's part only (the shared ledger's clock); None when nothing
        shown changed."""
        alerts: list[Alert] = []
        work = self._work.rescan(alerts, announce=self.scanned)
        ledger_name = self._ledger(alerts)
        problem = self._work.shown_problem
        if (
            work == self.view.work
            and ledger_name == self.view.ledger
            and problem == self.view.work_problem
            and not alerts
        ):
            return None
        self.view = HomeView(self.view.crews, work, ledger_name, problem)
        return Update(self.view, alerts)

    def _ledger(self, alerts: list[Alert]) -> str:
        """Which ledger the Work panel shows, as people should see it (never a password):
        the home's ledger handle's, which the cockpit resolves once. A ledger setting
        changed under the running cockpit (``[ledger] url`` edited) is said once per change
        (``ledger_changed``), never followed: the cockpit, its runner and its actions keep
        the ledger they started with until it is restarted."""
        from state.work.backend import handle_of

        change = None
        try:
            handle = handle_of(self.home)
            location, change = handle.location, handle.change
            name = location.shown if location.postgres else "files"
        except CaptainError:
            location, name = None, "unusable [ledger] url"
        self.shared = location is not None and location.postgres
        said = change.message if change is not None else ""
        if self.scanned and change is not None and said and said != self._change_said:
            alerts.append(Alert("ledger", "The ledger setting changed", f"[{change.code}] {said}"))
        self._change_said = said
        return name

    def apply(self, paths: Iterable[str], work_ids: Iterable[str] = ()) -> Update | None:
        """Re-read what these changed paths touched, and these work items (a shared ledger's
        notifications); None when nothing shown changed."""
        by_key: dict[str, list[Route]] = {}
        alerts: list[Alert] = []
        work_ids = list(work_ids)
        for path in paths:
            r = route(self.home.root, path)
            if r is None:
                continue
            if r.kind == "work":
                assert r.name is not None  # a work route names its item
                work_ids.append(r.name)
            elif r.kind == "quarantine":
                alert = self._quarantine_alert(r.name)
                if alert is not None:
                    alerts.append(alert)
            elif r.key:
                by_key.setdefault(r.key, []).append(r)
        crews = dict(self.view.crews)
        for key, routes in by_key.items():
            view = self._refresh(key, routes, alerts)
            if view is None:
                crews.pop(key, None)
            else:
                crews[key] = view
        work = self._work.apply(work_ids, alerts, announce=self.scanned) if work_ids else None
        problem = self._work.shown_problem
        if (
            crews == self.view.crews
            and work is None
            and not alerts
            and problem == self.view.work_problem
        ):
            return None
        self.view = HomeView(
            crews, self.view.work if work is None else work, self.view.ledger, problem
        )
        return Update(self.view, alerts)

    # -- one crew ------------------------------------------------------------------------

    def _refresh(self, key: str, routes: list[Route], alerts: list[Alert]) -> CrewView | None:
        if key not in self._cache:
            return self._refresh_crew(key, alerts)  # a new crew: read all of it once
        cache = self._cache[key]
        kinds = {r.kind for r in routes}
        if "crew" in kinds:
            cache.snapshot = self._snapshot(key)
        if "read" in kinds:
            self._sync_read(key, cache)
        if "acks" in kinds:
            self._sync_acks(key, cache)
        if "bell" in kinds:
            cache.stamp = self.home.store.read(self.home.ring_stamp_path(key), RingStamp)
        if "spend" in kinds:
            cache.spend = spend.crew_spend(self.home, key)
        if kinds & {"approval", "note"}:
            # a request's own events can be lost in a directory made that instant (the
            # crew's first: inotify watches a new directory only once it is seen), so its
            # awaiting_approval notice, written after it, reads the requests again too
            cache.approvals = self._approvals(key)
        for r in routes:
            if r.kind == "mail":
                self._one_mail(key, cache, r.name) if r.name else self._sync_mail(key, cache)
            elif r.kind == "note":
                self._one_note(key, cache, r.name, alerts) if r.name else self._sync_notes(
                    key, cache, alerts
                )
        return _crew_view(key, cache)

    def _refresh_crew(self, key: str, alerts: list[Alert]) -> CrewView | None:
        cache = self._cache.setdefault(key, _CrewCache())
        cache.snapshot = self._snapshot(key)
        if cache.snapshot is None:
            del self._cache[key]
            return None
        self._sync_read(key, cache)
        self._sync_mail(key, cache)
        self._sync_acks(key, cache)
        self._sync_notes(key, cache, alerts)
        cache.stamp = self.home.store.read(self.home.ring_stamp_path(key), RingStamp)
        cache.approvals = self._approvals(key)
        cache.spend = spend.crew_spend(self.home, key)
        return _crew_view(key, cache)

    def _approvals(self, key: str) -> tuple[ApprovalRow, ...]:
        """The crew's open approval requests (only those are parsed; a request past its
        time drops out at the next read of the crew, the periodic rescan at the latest)."""
        from state.crew import approvals

        try:
            found = approvals.open_requests(self.home, key)
        except CaptainError:
            return ()
        return tuple(
            ApprovalRow(
                key,
                o.request.crew,
                o.request.request_id,
                o.request.agent,
                o.request.tool,
                o.request.excerpt,
                o.request.fingerprint,
                o.request.session_allowed,
                o.request.created_at,
                o.request.expires_at,
                o.decided.decision if o.decided else None,
            )
            for o in found
        )

    def _snapshot(self, key: str) -> CrewSnapshot | None:
        try:
            snapshot, _ = crewlog.load(self.home, key)
        except CaptainError:
            return None  # e.g. a symlinked crew directory: refused by the store, not shown
        return snapshot

    # mail: unread needs each message's incarnation; read mail is known by name only

    @staticmethod
    def _unchanged(cache: _CrewCache, part: str, *directories: Path) -> bool:
        """Whether ``directories`` are as this crew's ``part`` last listed them (nothing
        to read again); else their stamp is noted for the listing about to be taken. A
        periodic rescan of a big home then lists only what changed: on 100 crew with 50k
        messages and 50k notifications every listing took ~1 s of the rescan's 1.2 s."""
        stamp = _settled(*directories)
        if stamp is not None and cache.listed.get(part) == stamp:
            return True
        if stamp is None:
            cache.listed.pop(part, None)
        else:
            cache.listed[part] = stamp
        return False

    def _sync_read(self, key: str, cache: _CrewCache) -> None:
        store = self.home.store
        receipts, bounces = self.home.receipts_dir(key), self.home.bounces_dir(key)
        if self._unchanged(cache, "read", receipts, bounces):
            return
        cache.read = set(store.names(receipts)) | set(store.names(bounces))
        for message_id in cache.read & cache.mail.keys():
            cache.mail[message_id] = None

    def _sync_mail(self, key: str, cache: _CrewCache) -> None:
        directory = self.home.mail_dir(key)
        if self._unchanged(cache, "mail", directory):
            return
        names = set(self.home.store.names(directory))
        for gone in cache.mail.keys() - names:
            del cache.mail[gone]
        for name in names - cache.mail.keys():
            self._add_mail(directory, cache, name)

    def _one_mail(self, key: str, cache: _CrewCache, message_id: str) -> None:
        """An event about one message: it may be new, or gone (quarantined)."""
        directory = self.home.mail_dir(key)
        if not os.path.lexists(directory / f"{message_id}.json"):
            cache.mail.pop(message_id, None)
        elif message_id not in cache.mail:  # create-once: what we parsed is what is there
            self._add_mail(directory, cache, message_id)

    def _add_mail(self, directory: Path, cache: _CrewCache, message_id: str) -> None:
        if message_id in cache.read:
            cache.mail[message_id] = None  # read mail counts by name; no need to parse it
            return
        m = self.home.store.read(directory / f"{message_id}.json", Message)
        if m is not None:  # a bad file is quarantined (and reported), never raised
            cache.mail[message_id] = _Mail(m.incarnation_id, m.queued_at)

    # notifications: an acknowledged one is never parsed

    def _sync_acks(self, key: str, cache: _CrewCache) -> None:
        directory = self.home.acks_dir(key)
        if self._unchanged(cache, "acks", directory):
            return
        cache.acked = set(self.home.store.names(directory))
        for delivery_id in cache.acked & cache.notes.keys():
            cache.notes[delivery_id] = None

    def _sync_notes(self, key: str, cache: _CrewCache, alerts: list[Alert]) -> None:
        directory = self.home.notifications_dir(key)
        if self._unchanged(cache, "notes", directory):
            return
        names = set(self.home.store.names(directory))
        for gone in cache.notes.keys() - names:
            del cache.notes[gone]
        for name in sorted(names - cache.notes.keys()):
            self._add_note(directory, cache, name, alerts)

    def _one_note(self, key: str, cache: _CrewCache, delivery_id: str, alerts: list[Alert]) -> None:
        directory = self.home.notifications_dir(key)
        if not os.path.lexists(directory / f"{delivery_id}.json"):
            cache.notes.pop(delivery_id, None)
        elif delivery_id not in cache.notes:
            self._add_note(directory, cache, delivery_id, alerts)

    def _add_note(
        self, directory: Path, cache: _CrewCache, delivery_id: str, alerts: list[Alert]
    ) -> None:
        if delivery_id in cache.acked:
            cache.notes[delivery_id] = None  # acknowledged: never shown, never parsed
            return
        n = self.home.store.read(directory / f"{delivery_id}.json", Notification)
        if n is None:
            return
        cache.notes[delivery_id] = n
        if self.scanned and n.status in ALERT_STATUSES:
            alerts.append(alert_for(n))

    def _quarantine_alert(self, name: str | None) -> Alert | None:
        if not self.scanned or not name:
            return None
        note = self.home.store.read_json(self.home.store.dir("quarantine") / name)
        if note is None:
            return None
        return Alert(
            "quarantine",
            "A file in the home was quarantined",
            f"{note.get('path', name)}: {note.get('reason', 'unreadable')} "
            "(see quarantine/ in the home)",
        )


def _crew_view(key: str, cache: _CrewCache) -> CrewView | None:
    """The rows one crew contributes to each panel (the rules are state's: see below)."""
    s = cache.snapshot
    if s is None:
        return None
    if s.dismissed_at is not None:  # only what still needs acknowledging: its bounces
        return _retired_view(key, cache)
    # mailbox.unread: this incarnation's mail, neither read nor bounced
    unread = [
        m
        for mid, m in cache.mail.items()
        if m is not None and mid not in cache.read and m.incarnation_id == s.incarnation_id
    ]
    # guards.pending_question: the snapshot's question, unless its answer mail exists
    q = s.question
    pending = q if q is not None and guards.answer_id(q.question_id) not in cache.mail else None
    notes = _unacknowledged(cache)
    live_stamp = (
        cache.stamp
        if cache.stamp is not None and cache.stamp.incarnation_id == s.incarnation_id
        else None
    )
    gate = live_stamp.gate if live_stamp is not None and unread else None
    dialog = live_stamp.dialog if live_stamp is not None else None
    state = standing.crew_state(
        dialog=dialog,
        dismissed=False,
        done=s.done_at is not None,
        died=death_notice.delivery_id(s.incarnation_id) in cache.notes,  # acknowledged or not
        question_pending=pending is not None,
        unacknowledged=notes,
        assignment_id=s.assignment.assignment_id,
    )
    moments = [
        s.recruited_at,
        s.assigned_at,
        s.done_at,
        q.asked_at if q else None,
        live_stamp.rung_at if live_stamp else None,
    ]
    moments += [m.queued_at for m in unread] + [n.created_at for n in notes[-1:]]
    crew = CrewRow(
        key=key,
        name=s.name,
        agent=s.agent,
        state=state,
        assignment_id=s.assignment.assignment_id,
        incarnation_id=s.incarnation_id,
        task=s.assignment.task,
        unread=len(unread),
        last_activity=max(t for t in moments if t is not None),
        gate=gate,
        pane=s.pane,
        unacknowledged=len(notes),
        owns=tuple(s.assignment.owns),
        allow=tuple(s.assignment.allow),
        workspace=s.workspace,
        dialog=dialog if state == "blocked" else None,
        spend=cache.spend.get(s.assignment.assignment_id),
        budget_usd=s.budget_usd,
        spend_all=spend.total(list(cache.spend.values())) if cache.spend else None,
    )
    question = (
        QuestionRow(
            key,
            s.name,
            pending.question_id,
            s.assignment.assignment_id,
            pending.text,
            pending.asked_at,
        )
        if pending is not None
        else None
    )
    doorbell = (
        DoorbellRow(key, s.name, gate, live_stamp.held_since) if gate and live_stamp else None
    )
    return CrewView(crew, question, doorbell, _note_rows(key, notes), cache.approvals)


def _unacknowledged(cache: _CrewCache) -> list[Notification]:
    return sorted(
        (n for n in cache.notes.values() if n is not None),
        key=lambda n: (n.created_at, n.delivery_id),
    )


def _note_rows(key: str, notes: list[Notification]) -> tuple[NotificationRow, ...]:
    return tuple(
        NotificationRow(
            key, n.crew, n.delivery_id, n.status, n.assignment_id, n.summary, n.created_at
        )
        for n in notes
    )


def _retired_view(key: str, cache: _CrewCache) -> CrewView | None:
    """A dismissed crew: no row of its own, but its unacknowledged notifications (the mail
    its dismissal bounced) are listed, since they block recruiting the name again."""
    notes = _unacknowledged(cache)
    return CrewView(None, notifications=_note_rows(key, notes)) if notes else None

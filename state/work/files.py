"""The work ledger in the home's files: the embedded default backend (``state.work.backend``).

On disk (docs/ledger.md, "On disk"), through the store's writing rules:

- ``work/<id>/input.json`` (create-once) is written before the item's first event, so an
  item never exists without its input; an input with no events is not an item.
- ``work/<id>/events/NNNNNNNN.json`` are create-once and gapless: the truth. ``append``'s
  compare-and-set is the create-once name.
- ``work/<id>/item.json`` is a cache, republished after each event and rebuilt by folding
  when it is behind (a writer killed between the two): ``item(repair=True)``.
- ``work/<id>/lease.json`` is the current attempt's lease (a mutable snapshot).
- ``ledger/open/<id>`` marks every item that is not terminal (written before the first
  event, removed after the terminal one). Its time is touched after each of the item's
  events (``os.utime``: a wake-up for watchers of the home, never relied on), so a watcher
  sees every change of the ledger in ``ledger/`` and never needs to watch ``work/``'s
  per-item directories (inotify allows a bounded number of watches).
- ``ledger/finished/<id>`` marks the newest ``FINISHED_KEPT`` finished items (written after
  the terminal event and before the open marker goes, then the oldest beyond that many
  removed), so the newest finished are a listing of at most ``FINISHED_KEPT`` names,
  whatever the history. ``ledger/finished.built`` says the index holds them; until it
  exists (a home from before the index, or before its first finished item) readers walk
  the ``work/`` listing, and the first writer to close an item builds the index from it.
- a transaction is ``flock``: ``locks/ledger.lock`` first, then ``locks/work-<id>.lock``
  (one order everywhere: home, crew, ledger, item). Every write is durable when it
  returns; nothing is rolled back, the next writer repairs instead — except an item made by
  a step that then failed before anything else recorded it (``discard_unrecorded``).
"""

from __future__ import annotations

import contextlib
import os
import shutil
import threading
import time
from collections.abc import Callable, Collection, Iterator
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

from state.clock import now
from state.errors import CaptainError
from state.home import Home
from state.ids import WORK
from state.store import encode
from state.work import corrupt, seen
from state.work.ledger_records import HOLDS_SLOT, TERMINAL, Attempt, Lease, WorkEvent, WorkItem
from state.work.transitions import check_work_id, fold

EVENT_NAME = "{:08d}"
LEDGER_LOCK = "ledger"
RACY_NS = 1_000_000_000  # an mtime this recent may hide a second change in the same tick
# the finished index's size: the most ``recent_finished_ids`` answers from it (the cockpit's
# Work panel asks for 100); more is answered by walking the ``work/`` listing
FINISHED_KEPT = 128

# The locks each thread holds through ``transaction``, as (home root, lock name): a
# transaction opened inside another joins it instead of waiting on its own flock.
_held = threading.local()


def _held_here() -> set[tuple[str, str]]:
    if not hasattr(_held, "locks"):
        _held.locks = set()
    locks: set[tuple[str, str]] = _held.locks
    return locks


class FileBackend:
    """One home's ledger files. Cheap to make: it holds the home, nothing else."""

    name = "files"

    def __init__(self, home: Home) -> None:
        self.home = home
        self.store = home.store

    # -- paths -------------------------------------------------------------------------------

    def _item_dir(self, work_id: str, create: bool = True) -> Path:
        return self.store.dir("work", work_id, create=create)

    def _events_dir(self, work_id: str) -> Path:
        return self.store.dir("work", work_id, "events")

    def _open_dir(self, create: bool = True) -> Path:
        return self.store.dir("ledger", "open", create=create)

    def _finished_dir(self, create: bool = True) -> Path:
        return self.store.dir("ledger", "finished", create=create)

    def _finished_built(self) -> Path:
        return self.store.dir("ledger", create=False) / "finished.built"

    # -- transactions ------------------------------------------------------------------------

    @contextlib.contextmanager
    def transaction(
        self, work_id: str | None = None, *, ledger: bool = False
    ) -> Iterator[FileBackend]:
        held = _held_here()
        root = str(self.store.root)
        names = ([LEDGER_LOCK] if ledger else []) + ([f"work-{work_id}"] if work_id else [])
        with contextlib.ExitStack() as stack:
            for name in names:
                key = (root, name)
                if key in held:
                    continue  # joined: the outer transaction holds it
                if name == LEDGER_LOCK and any(r == root and n != LEDGER_LOCK for r, n in held):
                    raise CaptainError(
                        "store_error",
                        "the ledger lock is taken before any item's, never inside one.",
                    )
                stack.enter_context(self.store.lock(name))
                held.add(key)
                stack.callback(held.discard, key)
            yield self

    def now(self) -> datetime:
        return now()

    # -- reading -----------------------------------------------------------------------------

    def exists(self, work_id: str) -> bool:
        return os.path.lexists(seen.first_event(self.home.root, work_id))

    def exists_durably(self, work_id: str) -> bool:
        return self.exists(work_id)  # each file is durable as its write returns

    def _seqs(self, work_id: str) -> list[int]:
        return self.store.seqs(self._events_dir(work_id))

    def _event(self, work_id: str, seq: int) -> WorkEvent | None:
        return self.store.read(
            self._events_dir(work_id) / f"{EVENT_NAME.format(seq)}.json", WorkEvent
        )

    def item(self, work_id: str, *, repair: bool = False) -> WorkItem | None:
        """The cache trusted up to its ``seq``, the events after it folded on; with
        ``repair`` (the caller holds the item's lock) a behind cache is republished and a
        terminal item still open closed (``mark_closed``)."""
        if not self.exists(work_id):
            return None
        store = self.store
        seqs = self._seqs(work_id)
        item = store.read(self._item_dir(work_id) / "item.json", WorkItem)
        if item is not None and (not seqs or item.seq > seqs[-1] or item.work_id != work_id):
            item = None
        start = item.seq if item is not None else 0
        for seq in seqs:
            if seq <= start:
                continue
            event = self._event(work_id, seq)
            if event is None:
                break  # a quarantined event: the history stops there, loudly (store reported it)
            item = fold(item, event, work_id)
        if item is None:
            # its first event is there but neither it nor the cache reads (the store
            # reported the file, and moved it aside if this command may write)
            raise corrupt.error(
                "work item", work_id, "neither its first event nor its item.json can be read"
            )
        if repair and item.seq > start:
            self.store_item(item)
        if repair and item.state in TERMINAL and os.path.lexists(self._open_dir() / work_id):
            self.mark_closed(work_id)  # a writer was killed before it closed the item
        return item

    def events(self, work_id: str) -> list[WorkEvent]:
        out = []
        for seq in self._seqs(work_id):
            event = self._event(work_id, seq)
            if event is None:
                break
            out.append(event)
        return out

    def lease(self, work_id: str) -> Lease | None:
        return self.store.read(self._item_dir(work_id) / "lease.json", Lease)

    def input(self, work_id: str) -> dict[str, Any] | None:
        return self.store.read_json(self._item_dir(work_id) / "input.json")

    def open_ids(self) -> list[str]:
        # reading never creates: a home with no work yet stays as it is (readers, the cockpit)
        return self.store.names(self._open_dir(create=False), suffix="")

    def change_stamp(self) -> tuple[Any, ...] | None:
        """What differs whenever an open item changes (``ledger.change_stamp``): the open
        markers' names and times (an item is opened and closed by its marker, and each
        stored item touches it) and the folder's own. None: cannot tell now (a marker or
        the folder changed within the last second: a second change may share its time)."""
        directory = self._open_dir(create=False)
        try:
            top = os.stat(directory)
            with os.scandir(directory) as entries:
                marks = sorted((e.name, e.stat(follow_symlinks=False).st_mtime_ns) for e in entries)
        except FileNotFoundError:
            return ()  # no work yet: a first item makes the folder
        racy = time.time_ns() - RACY_NS
        if top.st_mtime_ns >= racy or any(at >= racy for _, at in marks):
            return None
        return (top.st_ino, top.st_mtime_ns, tuple(marks))

    def all_ids(self) -> list[str]:
        try:
            entries = os.scandir(self.store.dir("work", create=False))
        except FileNotFoundError:
            return []
        return sorted(
            e.name
            for e in entries
            if e.name.startswith(WORK + "_") and e.is_dir(follow_symlinks=False)
        )

    def recent_finished_ids(self, limit: int) -> list[str]:
        # the finished index (at most FINISHED_KEPT names), once it is built; before that,
        # or for a larger ``limit``, the ``work/`` listing
        if limit <= 0:
            return []
        if limit <= FINISHED_KEPT and self._finished_index():
            names = self.store.names(self._finished_dir(create=False), suffix="")
            return names[::-1][:limit]
        return self._walk_finished(limit)

    def _finished_index(self) -> bool:
        """Whether ``ledger/finished/`` holds the newest finished items (a writer builds it
        when it first closes an item: ``_build_finished``)."""
        return os.path.lexists(self._finished_built())

    def _build_finished(self) -> None:
        """Once per home (one from before the index, or a new one): the newest finished
        items from the ``work/`` listing into the index, then its flag."""
        directory = self._finished_dir()
        for work_id in self._walk_finished(FINISHED_KEPT):
            self.store.create_once(directory / work_id, b"", same=lambda old, new: True)
        self.store.create_once(self._finished_built(), b"", same=lambda old, new: True)

    def _walk_finished(self, limit: int) -> list[str]:
        """The newest ``limit`` finished items from the ``work/`` listing (it grows with
        history: the index's fallback). An item is finished when it exists and has no open
        marker; the markers are listed after the items were seen to exist (a marker is
        written before an item's first event), so an item accepted meanwhile is never
        taken for a finished one."""
        newest_first = iter(reversed(self.all_ids()))
        existing: list[str] = []
        want = limit
        while True:
            for work_id in newest_first:
                if self.exists(work_id):
                    existing.append(work_id)
                    if len(existing) >= want:
                        break
            open_now = set(self.open_ids())
            finished = [w for w in existing if w not in open_now]
            if len(finished) >= limit or len(existing) < want:
                return finished[:limit]
            want = len(existing) + limit - len(finished)

    def _trim_finished(self) -> None:
        """Keep the newest ``FINISHED_KEPT`` finished markers (a name beyond them is older
        than that many finished items: never among the newest again)."""
        directory = self._finished_dir(create=False)
        for work_id in self.store.names(directory, suffix="")[:-FINISHED_KEPT]:
            with contextlib.suppress(FileNotFoundError):
                os.unlink(directory / work_id)

    def _readable(self, work_id: str) -> WorkItem | None:
        """An item for a listing: None when it is unknown or cannot be read."""
        try:
            return self.item(check_work_id(work_id))
        except CaptainError:
            return None

    def open_items(
        self,
        states: Collection[str],
        *,
        source: str | None = None,
        crew: bool | None = None,
        limit: int | None = None,
    ) -> list[WorkItem]:
        out: list[WorkItem] = []
        for work_id in self.open_ids():
            item = self._readable(work_id)
            if (
                item is None
                or item.state not in states
                or (source is not None and item.source != source)
                or (crew is not None and (item.crew is not None) != crew)
            ):
                continue
            out.append(item)
            if limit is not None and len(out) == limit:
                break
        return out

    def claim_view(self, *, source: str | None) -> tuple[datetime, int, WorkItem | None]:
        waiting = self.open_items(("queued",), source=source, crew=False, limit=1)
        return self.now(), len(self.open_items(HOLDS_SLOT)), waiting[0] if waiting else None

    def page(
        self, *, state: str | None, source: str | None, limit: int, after: str | None
    ) -> tuple[list[WorkItem], str | None]:
        out: list[WorkItem] = []
        for work_id in self.all_ids():
            if after is not None and work_id <= after:
                continue
            item = self._readable(work_id)
            if (
                item is None
                or (state and item.state != state)
                or (source and item.source != source)
            ):
                continue
            if len(out) == limit:
                return out, out[-1].work_id
            out.append(item)
        return out, None

    # -- writing (inside a transaction) -------------------------------------------------------

    def put_input(self, work_id: str, data: bytes) -> None:
        self.store.create_once(
            self._item_dir(work_id) / "input.json", data, same=lambda old, new: True
        )

    def mark_open(self, work_id: str) -> None:
        self.store.create_once(self._open_dir() / work_id, b"", same=lambda old, new: True)

    def append(self, work_id: str, event: WorkEvent) -> None:
        path = self._events_dir(work_id) / f"{EVENT_NAME.format(event.seq)}.json"
        self.store.create_once(path, encode(event))

    def store_item(self, item: WorkItem) -> None:
        self.store.publish(self._item_dir(item.work_id) / "item.json", encode(item))
        self.touch(item.work_id)

    def mark_closed(self, work_id: str) -> None:
        # the finished marker first: an item is never neither open nor in the index (a kill
        # between the two leaves it open, and the next writer's repair closes it again)
        if not self._finished_index():
            self._build_finished()
        self.store.create_once(self._finished_dir() / work_id, b"", same=lambda old, new: True)
        self._trim_finished()
        with contextlib.suppress(FileNotFoundError):
            os.unlink(self._open_dir() / work_id)

    def touch(self, work_id: str) -> None:
        """Say that the item changed where a watcher of ``ledger/`` sees it: its open
        marker's time (a hint for the cockpit's watcher, which watches no per-item
        directory; nothing relies on it, so it is not made durable)."""
        with contextlib.suppress(FileNotFoundError):
            os.utime(self._open_dir(create=False) / work_id)

    def discard_unrecorded(self, work_id: str) -> None:
        """Remove an item a failed step made (``ledger.discard_unrecorded``): its first
        event first, so it stops being an item at once, then its files and open mark."""
        item_dir = self._item_dir(work_id, create=False)
        with contextlib.suppress(FileNotFoundError):
            for name in sorted(os.listdir(item_dir / "events")):
                os.unlink(item_dir / "events" / name)
        with contextlib.suppress(FileNotFoundError):
            shutil.rmtree(item_dir)
        with contextlib.suppress(FileNotFoundError):
            os.unlink(self._open_dir(create=False) / work_id)

    # a claim or a report on files is the general path (its writes are several files)
    def claim_at_once(
        self,
        *,
        work_id: str | None,
        source: str | None,
        at: datetime | None,
        lease: timedelta,
        slots: int,
        event: WorkEvent,
        attempt: Attempt,
        before_commit: Callable[..., None] | None,
    ) -> None:
        return None

    def report_at_once(
        self,
        *,
        work_id: str,
        generation: int,
        outcome: str,
        repeatable: bool,
        at: datetime | None,
        max_attempts: int,
        event: WorkEvent,
        before_commit: Callable[..., None] | None,
    ) -> None:
        return None

    def put_lease(self, lease: Lease) -> None:
        self.store.publish(self._item_dir(lease.work_id) / "lease.json", encode(lease))

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
  event, removed after the terminal one).
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
from collections.abc import Collection, Iterator
from datetime import datetime
from pathlib import Path

from state.clock import now
from state.errors import CaptainError
from state.home import Home
from state.ids import WORK
from state.store import encode
from state.work import corrupt, seen
from state.work.models import TERMINAL, Lease, WorkEvent, WorkItem
from state.work.rules import check_work_id, fold

EVENT_NAME = "{:08d}"
LEDGER_LOCK = "ledger"

# The locks each thread holds through ``transaction``, as (home root, lock name): a
# transaction opened inside another joins it instead of waiting on its own flock.
_held = threading.local()


def _held_here() -> set[tuple[str, str]]:
    if not hasattr(_held, "locks"):
        _held.locks = set()
    return _held.locks


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
        terminal item's open marker removed."""
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
        if repair and item.state in TERMINAL:
            self.mark_closed(work_id)
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

    def input(self, work_id: str) -> dict | None:
        return self.store.read_json(self._item_dir(work_id) / "input.json")

    def open_ids(self) -> list[str]:
        # reading never creates: a home with no work yet stays as it is (readers, the cockpit)
        return self.store.names(self._open_dir(create=False), suffix="")

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
        # newest first; an ID with an open marker is not finished, one whose first event
        # is not stored (an accept killed before it) is not an item: no item.json is read
        if limit <= 0:
            return []
        open_now = set(self.open_ids())
        out: list[str] = []
        for work_id in reversed(self.all_ids()):
            if work_id in open_now or not self.exists(work_id):
                continue
            out.append(work_id)
            if len(out) == limit:
                break
        return out

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

    def mark_closed(self, work_id: str) -> None:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(self._open_dir() / work_id)

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

    def put_lease(self, lease: Lease) -> None:
        self.store.publish(self._item_dir(lease.work_id) / "lease.json", encode(lease))

"""Watching the home with inotify, one rule for every watcher of it (``captain wait`` and
``watch``'s runner, the cockpit's watcher process).

inotify takes one watch per directory, and ``work/`` holds two per work item ever recorded:
at 100k items that is past the kernel's limit (``fs.inotify.max_user_watches``), and
setting them up takes seconds. So ``work/`` is not watched (``UNWATCHED``): the file ledger
says each of its writes in ``ledger/`` as well (``state.work.files``: an item's open marker
is touched after each of its events, its finished marker written when it ends). ``watch``
watches the home's top level on its own and every other top-level directory recursively; a
top-level directory that appears (a home makes them as it first needs them) or goes is
taken up without a gap: a new recursive watch of the new set is set up first, the files
already in a new directory are said as added, and the old watch says what it still holds
before it is closed.

On Linux the home is watched through inotify directly (``_Inotify``: ctypes over libc, one
descriptor, one ``poll`` that blocks until the kernel has something to say): nothing wakes
while nothing changes. watchfiles' loop wakes every ``step`` ms to look at its queue (200
times a second at the cockpit's 5 ms: about 1 % of a core for a watcher that only waits);
it is kept for where inotify is not to be had (another OS), with the same batches. With
inotify, a directory's watch is taken before it is listed, so a directory made and written
at once is said whole (what it held when it was watched is said as added), a directory
moved away takes its watches with it, and an overflowing kernel queue is an error (the
readers rescan and start again).

watchfiles is a hint, never a log: every reader of these batches rescans on a clock too.
"""

from __future__ import annotations

import errno
import os
import select
import struct
import time
from collections.abc import Iterator
from pathlib import Path

from state.store import WORKTREES

# work/: see above; worktrees/: the crews' git worktrees (docs/worktrees.md) hold no records,
# and a crew's build there would flood the watchers and use up inotify's watches
UNWATCHED = frozenset({"work", WORKTREES})
ADDED, MODIFIED, DELETED = 1, 2, 3  # watchfiles.Change's numbers


def _tops(root: Path) -> frozenset[str]:
    return frozenset(
        e.name
        for e in os.scandir(root)
        if e.is_dir(follow_symlinks=False) and e.name not in UNWATCHED
    )


def watch(
    root: Path, *, debounce: int, step: int, rust_timeout: int
) -> Iterator[set[tuple[int, str]]]:
    """Batches of ``(change, path)`` for the home (an empty one when ``rust_timeout`` ms
    passed quietly; the first yield, at once, means every watch is in place). A batch is
    passed on once no change came for ``step`` ms, at most ``debounce`` ms after its
    first. Raises ``KeyboardInterrupt`` on a signal, as ``watchfiles.watch`` does, and
    ``OSError`` when the home cannot be watched (or the kernel dropped events)."""
    notify = _Inotify.open()
    if notify is None:
        return _rust_watch(Path(root), debounce=debounce, step=step, rust_timeout=rust_timeout)
    return _inotify_watch(notify, Path(root), debounce=debounce, step=step, timeout=rust_timeout)


# -- inotify, directly (Linux) ----------------------------------------------------------------

IN_MODIFY, IN_ATTRIB, IN_CLOSE_WRITE = 0x2, 0x4, 0x8
IN_MOVED_FROM, IN_MOVED_TO, IN_CREATE, IN_DELETE = 0x40, 0x80, 0x100, 0x200
IN_Q_OVERFLOW, IN_IGNORED, IN_ISDIR = 0x4000, 0x8000, 0x40000000
IN_ONLYDIR, IN_DONT_FOLLOW, IN_EXCL_UNLINK = 0x01000000, 0x02000000, 0x04000000
IN_NONBLOCK, IN_CLOEXEC = os.O_NONBLOCK, os.O_CLOEXEC
MASK = (
    IN_MODIFY
    | IN_ATTRIB
    | IN_CLOSE_WRITE
    | IN_MOVED_FROM
    | IN_MOVED_TO
    | IN_CREATE
    | IN_DELETE
    | IN_ONLYDIR
    | IN_DONT_FOLLOW
    | IN_EXCL_UNLINK
)
_EVENT = struct.Struct("iIII")  # struct inotify_event: wd, mask, cookie, len (then the name)


def _change(mask: int) -> int | None:
    if mask & (IN_CREATE | IN_MOVED_TO):
        return ADDED
    if mask & (IN_DELETE | IN_MOVED_FROM):
        return DELETED
    if mask & (IN_MODIFY | IN_CLOSE_WRITE | IN_ATTRIB):
        return MODIFIED
    return None


class _Inotify:
    """One inotify descriptor and the directories it watches (``wd`` -> path)."""

    def __init__(self, libc, fd: int) -> None:
        self._libc = libc
        self.fd = fd
        self.dirs: dict[int, str] = {}

    @classmethod
    def open(cls) -> _Inotify | None:
        """A new descriptor; None where inotify is not to be had (not Linux)."""
        import ctypes

        try:
            libc = ctypes.CDLL(None, use_errno=True)
            init = libc.inotify_init1
        except (OSError, AttributeError):
            return None
        fd = init(IN_NONBLOCK | IN_CLOEXEC)
        if fd < 0:
            err = ctypes.get_errno()
            raise OSError(err, f"inotify: {os.strerror(err)}")
        return cls(libc, fd)

    def _add(self, path: str) -> bool:
        """Watch one directory; False when it is gone (or no longer a directory)."""
        import ctypes

        wd = self._libc.inotify_add_watch(self.fd, os.fsencode(path), MASK)
        if wd < 0:
            err = ctypes.get_errno()
            if err in (errno.ENOENT, errno.ENOTDIR, errno.ELOOP):
                return False
            raise OSError(err, f"cannot watch {path}: {os.strerror(err)}")  # ENOSPC: the limit
        self.dirs[wd] = path
        return True

    def add_tree(
        self, path: str, *, top: str | None = None, say: bool = True
    ) -> set[tuple[int, str]]:
        """Watch ``path`` and every directory below it (at the home's top level, ``top``,
        none of ``UNWATCHED``), each before it is listed; what they hold, as added (with
        ``say``: a directory moved in). The first set-up of the home says nothing (the
        cockpit's first scan reads it all): a big home's 250k entries, each kept as a
        path there to be thrown away, cost the watcher process ~0.3 s and ~55 MB."""
        found: set[tuple[int, str]] = set()
        stack = [path]
        while stack:
            where = stack.pop()
            if not self._add(where):
                continue
            try:
                with os.scandir(where) as entries:
                    for entry in entries:
                        if say:
                            found.add((ADDED, entry.path))
                        try:
                            is_dir = entry.is_dir(follow_symlinks=False)
                        except OSError:
                            continue
                        if is_dir and not (where == top and entry.name in UNWATCHED):
                            stack.append(entry.path)
            except OSError:
                continue  # gone meanwhile: its parent says so
        return found

    def forget(self, path: str) -> None:
        """Stop watching ``path`` and what is below it (it was moved away)."""
        inside = path + os.sep
        for wd, where in list(self.dirs.items()):
            if where == path or where.startswith(inside):
                self._libc.inotify_rm_watch(self.fd, wd)
                del self.dirs[wd]

    def read(self, root: str) -> set[tuple[int, str]]:
        """Everything the kernel holds now, as ``(change, path)``."""
        batch: set[tuple[int, str]] = set()
        while True:
            try:
                data = os.read(self.fd, 256 * 1024)
            except BlockingIOError:
                return batch
            at = 0
            while at < len(data):
                wd, mask, _cookie, size = _EVENT.unpack_from(data, at)
                raw = data[at + _EVENT.size : at + _EVENT.size + size].split(b"\0", 1)[0]
                at += _EVENT.size + size
                if mask & IN_Q_OVERFLOW:
                    raise OSError(errno.EOVERFLOW, "inotify's queue overflowed: events were lost")
                if mask & IN_IGNORED:
                    self.dirs.pop(wd, None)  # its directory went
                    continue
                where = self.dirs.get(wd)
                change = _change(mask)
                if where is None or change is None or not raw:
                    continue
                path = os.path.join(where, os.fsdecode(raw))
                batch.add((change, path))
                if mask & IN_ISDIR:
                    if mask & (IN_CREATE | IN_MOVED_TO):
                        if not (where == root and os.path.basename(path) in UNWATCHED):
                            batch |= self.add_tree(path)
                    elif mask & IN_MOVED_FROM:
                        self.forget(path)

    def close(self) -> None:
        os.close(self.fd)


def _inotify_watch(
    notify: _Inotify, root: Path, *, debounce: int, step: int, timeout: int
) -> Iterator[set[tuple[int, str]]]:
    top = str(root)
    try:
        notify.add_tree(top, top=top, say=False)  # the first yield says: all in place
        poller = select.poll()
        poller.register(notify.fd, select.POLLIN)
        yield set()  # every watch is in place
        while True:
            if not poller.poll(timeout):
                yield set()  # quiet for ``timeout`` ms
                continue
            first = time.monotonic()
            batch = notify.read(top)
            while (time.monotonic() - first) * 1000 < debounce and poller.poll(step):
                batch |= notify.read(top)
            if batch:
                yield batch
    finally:
        notify.close()


# -- watchfiles (where there is no inotify) ---------------------------------------------------


def _rust_watch(
    root: Path, *, debounce: int, step: int, rust_timeout: int
) -> Iterator[set[tuple[int, str]]]:
    from watchfiles._rust_notify import RustNotify

    def below_of(names: frozenset[str]):
        paths = sorted(str(Path(root, n)) for n in names)
        return RustNotify(paths, False, False, 300, True, False) if paths else None

    top = RustNotify([str(root)], False, False, 300, False, False)  # first: nothing unseen
    watched = _tops(root)
    below = below_of(watched)
    quiet = 1  # the first yield comes at once: every watch is in place
    try:
        while True:
            raw = (below or top).watch(debounce, step, quiet, None)
            quiet = rust_timeout
            if raw == "signal":
                raise KeyboardInterrupt
            if raw == "stop":
                return
            batch = set() if raw == "timeout" else {(int(c), p) for c, p in raw}
            if below is not None:  # the top level, without waiting (one step)
                more = top.watch(debounce, step, 1, None)
                if isinstance(more, set):
                    batch |= {(int(c), p) for c, p in more}
            if any(os.path.dirname(p) == str(root) for _, p in batch):
                now = _tops(root)
                if now != watched:
                    old, below = below, below_of(now)  # set up before anything is said
                    for name in sorted(now - watched):
                        for where, _, files in os.walk(Path(root, name)):
                            batch |= {(ADDED, os.path.join(where, f)) for f in files}
                    if old is not None:
                        try:
                            rest = old.watch(debounce, step, 1, None)
                        except Exception:  # noqa: BLE001 - its directory went: nothing held
                            rest = None
                        if isinstance(rest, set):
                            batch |= {(int(c), p) for c, p in rest}
                        old.close()
                    watched = now
            yield batch
    finally:
        for notify in (below, top):
            if notify is not None:
                notify.close()

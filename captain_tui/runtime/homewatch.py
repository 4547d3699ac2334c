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

watchfiles is a hint, never a log: every reader of these batches rescans on a clock too.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

from state.store import WORKTREES

# work/: see above; worktrees/: the crews' git worktrees (docs/worktrees.md) hold no records,
# and a crew's build there would flood the watchers and use up inotify's watches
UNWATCHED = frozenset({"work", WORKTREES})
ADDED = 1  # watchfiles.Change.added


def _tops(root: Path) -> frozenset[str]:
    return frozenset(
        e.name
        for e in os.scandir(root)
        if e.is_dir(follow_symlinks=False) and e.name not in UNWATCHED
    )


def watch(
    root: Path, *, debounce: int, step: int, rust_timeout: int
) -> Iterator[set[tuple[int, str]]]:
    """watchfiles' batches of ``(change, path)`` for the home (an empty one when
    ``rust_timeout`` ms passed quietly; the first yield means every watch is in place).
    Raises ``KeyboardInterrupt`` on a signal, as ``watchfiles.watch`` does."""
    from watchfiles._rust_notify import RustNotify

    def below_of(names: frozenset[str]):
        paths = sorted(str(Path(root, n)) for n in names)
        return RustNotify(paths, False, False, 300, True, False) if paths else None

    top = RustNotify([str(root)], False, False, 300, False, False)  # first: nothing unseen
    watched = _tops(root)
    below = below_of(watched)
    try:
        while True:
            raw = (below or top).watch(debounce, step, rust_timeout, None)
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

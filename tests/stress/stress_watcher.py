"""The watcher: an index of the home (path -> sha256) kept up to date from watchfiles.

``python stress_watcher.py CTL HOME...``: one watcher over every home (with several, two
hosts sharing a PostgreSQL ledger, a path is named with its home's directory first:
``stress_layout.prefix_of``). Like the cockpit, it treats watchfiles as a hint:

- a full rescan once inotify is set up (the first yield), and after any watcher error
  (then a new watcher);
- for every path in a batch it looks at the file *now* (a batch is a set, so the order of
  added/deleted for one path is lost): a file is rehashed, a missing path is dropped with
  everything under it, a directory is rescanned (files created in a new directory before
  inotify watched it produce no events of their own).

There is no periodic rescan: at the end the index must equal a full rescan because the
events kept it so. (An inotify queue overflow cannot trigger a rescan here: notify reports
it as an event without a path, which watchfiles drops. The home's rate of events is far
below the 16384-event queue; were one lost, the final comparison would say so.) Protocol
over CTL: it writes ``ready`` once set up; when ``req`` holds a number N it has not
answered, it writes ``index-N.json`` ({"index": {...}, "stats": {...}}); it stops when
``stop`` exists.
"""

from __future__ import annotations

import json
import os
import sys
import time
import traceback

import watchfiles
from stress_layout import Unreadable, digest, is_temp, prefix_of, read_bytes


class Flag:
    """watchfiles' stop_event: set when the file exists."""

    def __init__(self, path: str) -> None:
        self.path = path

    def is_set(self) -> bool:
        return os.path.exists(self.path)


def main(ctl: str, *homes: str) -> None:
    roots = [os.path.realpath(h) for h in homes]
    # index keys: relative to the home, or to the homes' directory with the home's name first
    base = roots[0] if len(roots) == 1 else os.path.dirname(roots[0])
    assert all(
        prefix_of(roots, r) == ("" if len(roots) == 1 else os.path.relpath(r, base) + os.sep)
        for r in roots
    )
    stop = Flag(os.path.join(ctl, "stop"))
    index: dict[str, str] = {}
    stats = {
        "batches": 0,
        "paths": 0,
        "rescans": 0,
        "dir_rescans": 0,
        "errors": 0,
        "error_messages": [],
    }
    answered = 0

    def put(path: str) -> None:
        try:
            data = read_bytes(path)
        except Unreadable:
            data = b"<unreadable>"
        if data is None:
            index.pop(os.path.relpath(path, base), None)
        else:
            index[os.path.relpath(path, base)] = digest(data)

    def scan(top: str) -> None:
        rel_top = os.path.relpath(top, base)
        prefix = "" if rel_top == "." else rel_top + os.sep
        for rel in [r for r in index if r.startswith(prefix)]:
            if not os.path.lexists(os.path.join(base, rel)):
                del index[rel]
        for dirpath, _dirnames, filenames in os.walk(top):
            for name in filenames:
                if not is_temp(name):
                    put(os.path.join(dirpath, name))

    def handle(path: str) -> None:
        if is_temp(os.path.basename(path)):
            return
        if os.path.isdir(path) and not os.path.islink(path):
            stats["dir_rescans"] += 1
            scan(path)
        elif os.path.lexists(path):
            put(path)
        else:
            rel = os.path.relpath(path, base)
            index.pop(rel, None)
            for other in [r for r in index if r.startswith(rel + os.sep)]:
                del index[other]

    def serve() -> None:
        nonlocal answered
        try:
            with open(os.path.join(ctl, "req")) as f:
                wanted = int(f.read().strip() or 0)
        except (FileNotFoundError, ValueError):
            return
        if wanted <= answered:
            return
        tmp = os.path.join(ctl, f".index-{wanted}")
        with open(tmp, "w") as f:
            json.dump({"index": index, "stats": stats}, f)
        os.replace(tmp, os.path.join(ctl, f"index-{wanted}.json"))
        answered = wanted

    ready = False
    while not stop.is_set():
        try:
            first = True
            for batch in watchfiles.watch(
                *roots,
                watch_filter=None,
                debounce=200,
                step=20,
                rust_timeout=100,
                yield_on_timeout=True,
                raise_interrupt=False,
                stop_event=stop,
            ):
                if first:  # inotify is set up: whatever happened before, a rescan finds
                    first = False
                    stats["rescans"] += 1
                    for root in roots:
                        scan(root)
                    if not ready:
                        ready = True
                        with open(os.path.join(ctl, "ready"), "w") as f:
                            f.write(str(os.getpid()))
                stats["batches"] += bool(batch)
                for _change, path in sorted(batch, key=lambda cp: cp[1]):
                    stats["paths"] += 1
                    handle(path)
                serve()
        except Exception:  # noqa: BLE001 - a watcher error: new watcher, full rescan
            stats["errors"] += 1
            stats["error_messages"].append(traceback.format_exc()[-1000:])
            time.sleep(0.05)
    serve()


if __name__ == "__main__":
    main(*sys.argv[1:])

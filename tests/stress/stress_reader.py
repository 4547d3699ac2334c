"""The reader: parses every file in the home, pass after pass, while workers write and die.

``python stress_reader.py OUT STOP HOME...``. Each pass walks each home and parses every
non-temp file with its record's model (``stress_layout.parse``); with several homes (two
hosts sharing a PostgreSQL ledger) a path is named with its home's directory first. A file
that does not parse — torn, half-written, empty, garbage — is a violation, as is a file
in ``quarantine/`` or one the layout does not know; each is written to OUT as one JSON line
(once per path and content). The reader itself must never crash: an unexpected error is
recorded and the pass goes on. When the file STOP exists it finishes the pass and writes a
``summary`` line.
"""

from __future__ import annotations

import json
import os
import sys
import time
import traceback

import stress_layout
from stress_layout import Unreadable, classify, is_temp, parse, prefix_of, read_bytes


def main(out_path: str, stop: str, *roots: str) -> None:
    out = os.open(out_path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)

    def emit(**entry) -> None:
        os.write(out, json.dumps(entry).encode() + b"\n")
        os.fsync(out)

    stress_layout.warm_up()
    seen: set[tuple[str, str]] = set()
    passes = parses = errors = 0
    started = time.monotonic()
    emit(kind="ready")
    while True:
        last = os.path.exists(stop)  # the pass that starts after STOP is the final one
        try:
            for root, dirpath, filenames in _walk(roots):
                rel_dir = os.path.relpath(dirpath, root)
                for name in filenames:
                    if is_temp(name):
                        continue
                    local = name if rel_dir == "." else os.path.join(rel_dir, name)
                    rel = prefix_of(roots, root) + local
                    kind = classify(tuple(local.split(os.sep)))
                    if kind in (None, "quarantined"):
                        if (rel, "") not in seen:
                            seen.add((rel, ""))
                            emit(kind="unexpected" if kind is None else "quarantined", path=rel)
                        continue
                    data = None
                    try:
                        data = read_bytes(os.path.join(dirpath, name))
                        if data is None:
                            continue  # gone since the listing (an open marker closed)
                        parse(kind, data)
                        parses += 1
                    except Unreadable as bad:
                        key = (rel, stress_layout.digest(data) if data is not None else "")
                        if key not in seen:
                            seen.add(key)
                            emit(
                                kind="torn",
                                path=rel,
                                reason=str(bad),
                                head=(data or b"")[:120].decode("utf-8", "replace"),
                                size=len(data or b""),
                            )
        except Exception:  # noqa: BLE001 - the reader reports, it never crashes
            errors += 1
            emit(kind="reader_error", error=traceback.format_exc()[-2000:])
        passes += 1
        if last:
            break
    emit(
        kind="summary",
        passes=passes,
        parses=parses,
        errors=errors,
        seconds=round(time.monotonic() - started, 1),
    )


def _walk(roots):
    for root in roots:
        for dirpath, _dirnames, filenames in os.walk(root):
            yield root, dirpath, filenames


if __name__ == "__main__":
    main(*sys.argv[1:])

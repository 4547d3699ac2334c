"""What each file in a home is, and how to parse it: shared by the reader, the watcher
and the audit, so the three agree on what "every file parses" means.

Parsing here is exactly what ``Store.read`` does (bytes, UTF-8, the record's pydantic
model, unknown fields refused) minus the quarantine: a reader that moved a torn file aside
would change the home it is auditing.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import stat
import tomllib
from pathlib import Path

from state.records import (
    Ack,
    Bounce,
    CrewSnapshot,
    EventFile,
    HomeMeta,
    Message,
    Notification,
    Receipt,
    Returned,
    RingStamp,
)
from state.store import MAX_RECORD_BYTES, TEMP_PREFIX
from state.work.ledger_records import Lease, WorkEvent, WorkItem

SEQ_FILE = re.compile(r"\d{8}\.json")
WORK_ID = re.compile(r"wrk_[0-9A-Z]+")

# record kind -> model (kinds with no model are handled in ``parse``)
MODELS = {
    "home": HomeMeta,
    "crew_snapshot": CrewSnapshot,
    "crew_event": EventFile,
    "mail": Message,
    "receipts": Receipt,
    "bounces": Bounce,
    "notifications": Notification,
    "returned": Returned,
    "acks": Ack,
    "doorbell": RingStamp,
    "work_item": WorkItem,
    "work_event": WorkEvent,
    "lease": Lease,
}
PER_CREW = ("mail", "receipts", "bounces", "notifications", "returned", "acks")


def is_temp(name: str) -> bool:
    """Temp files (``.tmp-*``) are skipped by design; any other name must be a record."""
    return name.startswith(TEMP_PREFIX)


def classify(parts: tuple[str, ...]) -> str | None:
    """The kind of the file at ``parts`` (relative to the home), or None: not ours."""
    n, top, name = len(parts), parts[0], parts[-1]
    if n == 1:
        return {"home.json": "home", "config.toml": "config"}.get(name)
    if top == "quarantine":
        return "quarantined"
    if top == "locks":
        return "lock" if n == 2 and name.endswith(".lock") else None
    if top == "crew":
        if n == 3 and name == "state.json":
            return "crew_snapshot"
        if n == 4 and parts[2] == "events" and SEQ_FILE.fullmatch(name):
            return "crew_event"
        return None
    if top in PER_CREW:
        return top if n == 3 and name.endswith(".json") else None
    if top == "doorbell":
        return "doorbell" if n == 2 and name.endswith(".json") else None
    if top == "work" and n >= 3 and WORK_ID.fullmatch(parts[1]):
        if n == 3:
            return {
                "item.json": "work_item",
                "input.json": "work_input",
                "lease.json": "lease",
            }.get(name)
        if n == 4 and parts[2] == "events" and SEQ_FILE.fullmatch(name):
            return "work_event"
        return None
    if top == "ledger" and n == 3 and parts[1] == "open" and WORK_ID.fullmatch(name):
        return "open_marker"
    if top == "ledger" and n == 3 and parts[1] == "finished" and WORK_ID.fullmatch(name):
        return "finished_marker"  # one of the newest finished items (the files' index)
    if top == "ledger" and n == 2 and name == "finished.built":
        return "finished_built"  # the finished index holds them
    if top == "work-seen" and n == 2 and WORK_ID.fullmatch(name):
        return "work_seen"  # a shared ledger's item, noted in the home (state.work.seen.note_path)
    return None


class Unreadable(Exception):
    """The file is not a whole, valid record of its kind."""


def read_bytes(path: Path | str) -> bytes | None:
    """A regular file's bytes, never through a symlink; None when it vanished."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
    except FileNotFoundError:
        return None
    except OSError as exc:
        raise Unreadable(f"cannot open: {exc}") from None
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            raise Unreadable("not a regular file")
        if st.st_size > MAX_RECORD_BYTES:
            raise Unreadable(f"{st.st_size} bytes, larger than any record")
        chunks = []
        while chunk := os.read(fd, 1 << 16):
            chunks.append(chunk)
        return b"".join(chunks)
    finally:
        os.close(fd)


def parse(kind: str, data: bytes):
    """The parsed record (or a marker value); raises ``Unreadable`` when it is not whole."""
    if kind in ("lock", "quarantined"):
        return None
    if kind in ("open_marker", "finished_marker", "finished_built", "work_seen"):
        if data:
            raise Unreadable(f"an empty marker ({kind}) holds {len(data)} bytes")
        return None
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        raise Unreadable("not UTF-8") from None
    try:
        if kind == "config":
            return tomllib.loads(text)
        if kind == "work_input":
            value = json.loads(text)
            if not isinstance(value, dict) or set(value) != {"input"}:
                raise Unreadable('an input file is not {"input": ...}')
            return value
        return MODELS[kind].model_validate_json(text)
    except Unreadable:
        raise
    except Exception as exc:  # noqa: BLE001 - ValidationError, TOMLDecodeError, ValueError
        first = str(exc).strip().splitlines()
        raise Unreadable(f"{type(exc).__name__}: {' | '.join(first[:3])[:300]}") from None


def digest(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def prefix_of(roots: list, root) -> str:
    """How paths under ``root`` are named when several homes are watched or read at once:
    each home's paths start with its directory's name (one home: none)."""
    return "" if len(roots) == 1 else os.path.basename(os.path.realpath(root)) + os.sep


def rescan_homes(roots: list) -> dict[str, str]:
    """``rescan`` of every home in ``roots``, each one's paths named by ``prefix_of``."""
    out = {}
    for root in roots:
        prefix = prefix_of(roots, root)
        out.update({prefix + rel: h for rel, h in rescan(root).items()})
    return out


def rescan(root: Path | str) -> dict[str, str]:
    """Every non-temp file under ``root``: relative path -> sha256 of its bytes."""
    root = str(root)
    out = {}
    for dirpath, _dirnames, filenames in os.walk(root):
        for name in filenames:
            if is_temp(name):
                continue
            path = os.path.join(dirpath, name)
            try:
                data = read_bytes(path)
            except Unreadable:
                data = b"<unreadable>"
            if data is not None:
                out[os.path.relpath(path, root)] = digest(data)
    return out


def warm_up() -> None:
    """Build every model's validator now (pydantic defers it): forked workers inherit it."""
    for model in MODELS.values():
        try:
            model.model_validate_json("{}")
        except Exception:  # noqa: BLE001 - only the side effect matters
            pass

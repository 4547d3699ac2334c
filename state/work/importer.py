"""A file home's ledger moved into its PostgreSQL database: the one explicit, lossless switch.

A home that worked on its files and is then pointed at a database (``[ledger] url``,
``CAPTAIN_LEDGER_URL``) would otherwise lose sight of its work: the assignment a crew is
running lives in ``work/``, the database has never heard of it, and the crew's ``done``
would land nowhere. So:

- ``held`` says, cheaply (a few directory entries), whether the home's files hold ledger
  data; ``state.work.backend.backend_for`` refuses a PostgreSQL ledger for such a home
  (``ledger_not_imported``, naming the command to run), so no process silently follows a
  URL to an empty ledger;
- ``import_files`` (``captain ledger migrate``) copies everything the files hold — work
  items with their events, inputs and leases, webhook deliveries with their bodies, body
  claims and refusals, API tokens and the workspace ID — in ONE transaction, verified by
  counts before it commits, and idempotent (what the database already holds identically is
  left as it is; anything held differently is ``ledger_import_conflict`` and nothing is
  written). Only after the commit are the files set aside, under
  ``ledger-imported/<UTC time>/`` in the home, kept for reference, never deleted.

A kill before the commit leaves the database as it was and the files in place; a kill
during the set-aside leaves some files in place, which the next ``captain ledger migrate``
finds already imported and sets aside too.
"""

from __future__ import annotations

import os
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from state.errors import CaptainError
from state.home import Home
from state.vocab import counted

if TYPE_CHECKING:
    from state.work.pg_backend import PostgresBackend

# Where the file ledger keeps its records (docs/store.md): what is set aside after import.
LEDGER_PATHS = ("work", "ledger", "deliveries", "delivery-bodies", "tokens", "workspace.json")
SET_ASIDE = "ledger-imported"


@dataclass(frozen=True)
class Imported:
    """What an import found in the files, and how much of it was new to the database."""

    items: int = 0
    events: int = 0
    deliveries: int = 0
    bodies: int = 0
    rejections: int = 0
    tokens: int = 0
    workspace: str | None = None  # the workspace ID the database holds afterwards
    new_items: int = 0
    new_deliveries: int = 0
    new_tokens: int = 0
    set_aside: str | None = None  # where the files went (None: nothing to set aside)

    def as_json(self) -> dict[str, Any]:
        return asdict(self)

    def sentence(self) -> str:
        parts = [
            f"{counted(self.items, 'work item')} with {counted(self.events, 'event')}",
            f"{counted(self.deliveries, 'webhook delivery', 'webhook deliveries')} with "
            f"{counted(self.bodies, 'body', 'bodies')}",
            counted(self.rejections, "refused delivery", "refused deliveries"),
            counted(self.tokens, "API token"),
        ]
        new = (
            f"{counted(self.new_items, 'item')}, "
            f"{counted(self.new_deliveries, 'delivery', 'deliveries')} and "
            f"{counted(self.new_tokens, 'token')} were new to the database"
        )
        where = f"; the files are kept in {self.set_aside}" if self.set_aside else ""
        return f"imported the home's file ledger: {', '.join(parts)} ({new}){where}."


def held(home: Home) -> bool:
    """Whether the home's files hold any ledger data (a few directory entries at most)."""
    root = home.root
    if os.path.lexists(root / "workspace.json"):
        return True
    for name, prefix in (
        ("work", "wrk_"),
        ("deliveries", "whd_"),
        ("tokens", "tok_"),
        ("delivery-bodies", "whd_"),
    ):
        try:
            with os.scandir(root / name) as entries:
                if any(e.name.startswith(prefix) for e in entries):
                    return True
        except (FileNotFoundError, NotADirectoryError):
            continue
    try:
        with os.scandir(root / "deliveries" / "rejected") as entries:
            return any(e.name.startswith("whr_") for e in entries)
    except (FileNotFoundError, NotADirectoryError):
        return False


def not_imported(home: Home, shown: str) -> CaptainError:
    """The refusal for a home whose files hold a ledger its database does not."""
    return CaptainError(
        "ledger_not_imported",
        f"this home ({home.root}) is pointed at the PostgreSQL ledger at {shown}, but its "
        "own files still hold a ledger (work items, deliveries or tokens) that would be "
        "lost from sight: run `captain ledger migrate` to import them into the database "
        "(one transaction, checked by counts; the files are then set aside), or remove "
        "[ledger] url / CAPTAIN_LEDGER_URL to keep using the files.",
        url=shown,
    )


def _conflict(what: str) -> CaptainError:
    return CaptainError(
        "ledger_import_conflict",
        f"{what}; nothing was imported and nothing changed. The database already holds a "
        "different record under that ID (another home's?): point this home at an empty or "
        "its own database, or keep it on its files.",
    )


def _bad_file(what: str) -> CaptainError:
    return CaptainError(
        "ledger_import_conflict",
        f"{what}; nothing was imported and nothing changed. Look at that file (move it "
        "aside if it is not captain's), then run captain ledger migrate again.",
    )


def import_files(home: Home, backend: PostgresBackend) -> Imported:
    """Copy the home's file ledger into ``backend`` (a ``PostgresBackend``, migrated) in
    one transaction, check it by counts, then set the files aside. Idempotent."""
    from state.store import Store
    from state.work.delivery_files import FileDeliveries
    from state.work.delivery_store import BodySeen
    from state.work.files import FileBackend
    from state.work.pg_deliveries import PostgresDeliveries
    from state.work.pg_tokens import PostgresTokens
    from state.work.token_store import FileTokens

    files, file_deliveries, file_tokens = FileBackend(home), FileDeliveries(home), FileTokens(home)
    if file_deliveries.pending():
        raise _bad_file(
            "a webhook intake in the files was never finished (deliveries/"
            "pending/): run `captain watch` once on the file ledger first"
        )
    deliveries, tokens = PostgresDeliveries(backend), PostgresTokens(backend)
    counts = dict(
        items=0,
        events=0,
        deliveries=0,
        bodies=0,
        rejections=0,
        tokens=0,
        new_items=0,
        new_deliveries=0,
        new_tokens=0,
    )
    item_ids: list[str] = []
    delivery_ids: list[str] = []
    token_ids: list[str] = []
    with backend.transaction(ledger=True) as tx:
        for work_id in files.all_ids():
            events = files.events(work_id)
            if not events:
                continue  # an input whose item never came to be (an accept killed early)
            item = files.item(work_id)
            if item is None or item.seq != len(events):
                raise _bad_file(f"the work item {work_id} in the files cannot be read whole")
            counts["items"] += 1
            counts["events"] += len(events)
            item_ids.append(work_id)
            if tx.exists(work_id):
                if tx.events(work_id) != events:
                    raise _conflict(f"the work item {work_id} has another history in the database")
                continue
            data = _input_bytes(home, work_id, item.input_sha256)
            if data is not None:
                tx.put_input(work_id, data)
            tx.mark_open(work_id)
            for event in events:
                tx.append(work_id, event)
            tx.store_item(item)
            if item.state in _terminal():
                tx.mark_closed(work_id)
            lease = files.lease(work_id)
            if lease is not None:
                tx.put_lease(lease)
            counts["new_items"] += 1
        known_rejections = {r.rejection_id for r in deliveries.rejections()}
        for record in file_deliveries.records():
            counts["deliveries"] += 1
            delivery_ids.append(record.delivery_id)
            stored = deliveries.record(record.delivery_id)
            if stored is None:
                if deliveries.claim(record) != record.delivery_id:
                    raise _conflict(
                        f"the delivery {record.delivery_id}'s identity names "
                        "another delivery in the database"
                    )
                deliveries.put_record(record)
                counts["new_deliveries"] += 1
            elif stored != record:
                raise _conflict(f"the delivery {record.delivery_id} differs in the database")
            body = file_deliveries.body(record)
            if body is not None:
                counts["bodies"] += 1
                if not deliveries.body_held(record):
                    deliveries.put_body(record, body)
        for claim in Store(home.root, writable=False).records(
            home.root / "deliveries" / "by-body", BodySeen
        ):
            deliveries.claim_body(claim)
        for rejection in file_deliveries.rejections():
            counts["rejections"] += 1
            if rejection.rejection_id not in known_rejections:
                deliveries.put_rejection(rejection)
        for token in file_tokens.records():
            counts["tokens"] += 1
            token_ids.append(token.token_id)
            kept = tokens.get(token.token_id)
            if kept is None:
                tokens.add(token)
                counts["new_tokens"] += 1
            elif kept.sha256 != token.sha256 or kept.role != token.role:
                raise _conflict(f"the API token {token.token_id} differs in the database")
            elif token.revoked_at is not None and kept.revoked_at is None:
                tokens.replace(token)  # a revocation is never lost
        mine = file_tokens.workspace()
        workspace = tokens.mint_workspace(mine) if mine is not None else tokens.workspace()
        _verify(backend, counts, item_ids, delivery_ids, token_ids)
    aside = _set_aside(home) if held(home) else None
    return Imported(
        **counts,
        workspace=workspace.workspace_id if workspace else None,
        set_aside=str(aside) if aside else None,
    )


def _terminal() -> frozenset[str]:
    from state.work.ledger_records import TERMINAL

    return TERMINAL


def _input_bytes(home: Home, work_id: str, fingerprint: str) -> bytes | None:
    """The input exactly as the files stored it, read as the store reads (a regular file,
    never through a link, bounded) and checked against the item's fingerprint: what goes
    into the database is what the item was accepted with, or nothing is imported."""
    import hashlib
    import stat

    from state.vocab import MAX_INPUT_BYTES

    path = Path(home.root, "work", work_id, "input.json")
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC)
    except FileNotFoundError:
        return None
    except OSError as exc:
        raise _bad_file(f"the input of {work_id} in the files cannot be read ({exc.strerror})")
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode) or st.st_size > 2 * MAX_INPUT_BYTES:
            raise _bad_file(
                f"the input of {work_id} in the files is not a regular file of at most its bound"
            )
        data = os.read(fd, 2 * MAX_INPUT_BYTES + 1)
    finally:
        os.close(fd)
    if hashlib.sha256(data).hexdigest() != fingerprint:
        raise _bad_file(
            f"the input of {work_id} in the files does not match its fingerprint (input_sha256)"
        )
    return data


def _verify(
    backend: PostgresBackend,
    counts: dict[str, int],
    item_ids: list[str],
    delivery_ids: list[str],
    token_ids: list[str],
) -> None:
    """Inside the transaction: everything the files hold is in the database, by counts
    (of the IDs the import read from the files)."""

    def one(sql: str, ids: list[str]) -> tuple[Any, ...]:
        row = backend.run(sql, (ids,), fetch="one")
        assert row is not None  # an aggregate has its one row
        return row

    row = one(
        "SELECT count(*), coalesce(sum(seq), 0) FROM work_items WHERE work_id = ANY(%s)",
        item_ids,
    )
    deliveries = one("SELECT count(*) FROM deliveries WHERE delivery_id = ANY(%s)", delivery_ids)[0]
    tokens = one("SELECT count(*) FROM api_tokens WHERE token_id = ANY(%s)", token_ids)[0]
    found = (row[0], row[1], deliveries, tokens)
    wanted = (counts["items"], counts["events"], counts["deliveries"], counts["tokens"])
    if found != wanted:
        raise CaptainError(
            "ledger_import_conflict",
            f"the import did not check out (items, events, deliveries, tokens in the "
            f"database {found}, in the files {wanted}); it was rolled back, nothing changed.",
        )


def _set_aside(home: Home) -> Path:
    """Move the imported files under ``ledger-imported/<UTC time>/`` (renames within the
    home: nothing is copied or deleted)."""
    from state.clock import now
    from state.store import DIR_MODE

    stamp = now().strftime("%Y%m%dT%H%M%S.%fZ")
    target = home.root / SET_ASIDE / stamp
    os.makedirs(target, mode=DIR_MODE, exist_ok=True)
    for name in LEDGER_PATHS:
        source = home.root / name
        if os.path.lexists(source):
            os.rename(source, target / name)
    fd = os.open(home.root, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)
    return target

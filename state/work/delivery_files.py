"""Webhook deliveries in the home's files: the file home's ``DeliveryStore``.

On disk (docs/ledger.md, "On disk"), through the store's writing rules:

- ``deliveries/by-identity/<key>.json`` (create-once; ``key`` is ``identity_key``): which
  delivery ID an identity is. Claimed first, so two concurrent intakes agree on one record.
- ``deliveries/<id>.json`` (create-once): the record, kept forever.
- ``delivery-bodies/<id>-<sha256[:32]>.body``: the raw body, written before its record (a
  record that says the body is held always has it), deleted by the purge. Named by its hash
  too: a body left by a killed intake never stands in for another.
- ``deliveries/pending/<id>``: an intake under way (recorded, or being recorded), its work
  item not yet certain; ``settle_pending`` finishes one a kill left.
- ``deliveries/by-body/<key>.json``: a body-once endpoint's claims (``BodySeen``).
- ``deliveries/rejected/<id>.json``: refusals, pruned by age (the file's mtime) and count.

Nothing is rolled back: each write is durable when it returns, and the next intake of the
same delivery completes what a killed one left.
"""

from __future__ import annotations

import base64
import contextlib
import hashlib
import os
import re
import time
from collections.abc import Iterator
from datetime import datetime
from pathlib import Path

from state.clock import now
from state.errors import CaptainError
from state.home import Home
from state.records import Record
from state.store import encode
from state.work import corrupt
from state.work.delivery_store import BodySeen, Rejection
from state.work.ledger_records import Delivery

PREFIX = "whd"
KEY_NAME = re.compile(r"[a-z2-7]{32}")  # what identity_key makes (20 bytes in base32)
ORPHAN_SECONDS = 3600.0  # a body with no record (its intake was killed) is kept this long
_BODY_NAME = re.compile(rf"({PREFIX}_[0-9A-Za-z]{{1,60}})-[0-9a-f]{{32}}\.body")


def identity_key(endpoint_id: str, source_delivery_id: str) -> str:
    """The file name that stands for (endpoint, source delivery id)."""
    digest = hashlib.sha256(f"{endpoint_id}\0{source_delivery_id}".encode()).digest()
    return base64.b32encode(digest[:20]).decode().rstrip("=").lower()


class Identity(Record):
    """``deliveries/by-identity/<key>.json``: which delivery an identity is."""

    delivery_id: str
    endpoint_id: str
    source_delivery_id: str


class FileDeliveries:
    """One home's delivery files. Cheap to make: it holds the home, nothing else."""

    name = "files"

    def __init__(self, home: Home) -> None:
        self.home = home
        self.store = home.store

    # -- paths --------------------------------------------------------------------------------

    def _dir(self) -> Path:
        return self.store.dir("deliveries")

    def _identity_path(self, endpoint_id: str, source_delivery_id: str) -> Path:
        return (
            self.store.dir("deliveries", "by-identity")
            / f"{identity_key(endpoint_id, source_delivery_id)}.json"
        )

    def _body_path(self, delivery_id: str, sha256: str) -> Path:
        return self.store.dir("delivery-bodies") / f"{delivery_id}-{sha256[:32]}.body"

    def _pending_dir(self) -> Path:
        return self.store.dir("deliveries", "pending")

    def _body_seen_path(self, endpoint_id: str, sha: str) -> Path:
        return self.store.dir("deliveries", "by-body") / f"{identity_key(endpoint_id, sha)}.json"

    def _rejected_dir(self, create: bool | None = None) -> Path:
        return self.store.dir("deliveries", "rejected", create=create)

    # -- the interface ------------------------------------------------------------------------

    @contextlib.contextmanager
    def transaction(self) -> Iterator[None]:
        yield  # every write is durable as it returns; the next intake repairs

    def now(self) -> datetime:
        return now()

    def knows(self, endpoint_id: str, source_delivery_id: str) -> bool:
        return os.path.lexists(self._identity_path(endpoint_id, source_delivery_id))

    def identity(self, endpoint_id: str, source_delivery_id: str) -> str | None:
        ident = self.store.read(self._identity_path(endpoint_id, source_delivery_id), Identity)
        return None if ident is None else ident.delivery_id

    def claim(self, record: Delivery) -> str:
        path = self._identity_path(record.endpoint_id, record.source_delivery_id)
        mine = Identity(
            delivery_id=record.delivery_id,
            endpoint_id=record.endpoint_id,
            source_delivery_id=record.source_delivery_id,
        )
        self.store.create_once(path, encode(mine), same=lambda old, new: True)
        ident = self.store.read(path, Identity)
        if ident is None or (ident.endpoint_id, ident.source_delivery_id) != (
            record.endpoint_id,
            record.source_delivery_id,
        ):
            raise CaptainError("store_error", "a delivery identity record could not be read back.")
        return ident.delivery_id

    def record(self, delivery_id: str) -> Delivery | None:
        """The record (None when there is none). A file there that does not read is
        ``ledger_corrupt``, as a bad row is on PostgreSQL (``state.work.corrupt``); the store
        quarantined and reported it (rule 6), so the next read finds none."""
        path = self._dir() / f"{delivery_id}.json"
        there = os.path.lexists(path)
        record = self.store.read(path, Delivery)
        if record is None and there:
            raise corrupt.error("delivery", delivery_id, "its file does not validate")
        return record

    def put_body(self, record: Delivery, body: bytes) -> None:
        self._once(self._body_path(record.delivery_id, record.body_sha256), body)

    def put_record(self, record: Delivery) -> bool:
        return self.store.create_once(self._dir() / f"{record.delivery_id}.json", encode(record))

    def records(
        self,
        *,
        endpoint_id: str | None = None,
        after: Delivery | None = None,
        limit: int | None = None,
    ) -> list[Delivery]:
        records = self.store.records(self._dir(), Delivery)
        if endpoint_id is not None:
            records = [r for r in records if r.endpoint_id == endpoint_id]
        records.sort(key=lambda r: (r.received_at, r.delivery_id))
        if after is not None:
            key = (after.received_at, after.delivery_id)
            records = [r for r in records if (r.received_at, r.delivery_id) > key]
        return records if limit is None else records[:limit]

    def endpoints(self) -> set[str]:
        return {r.endpoint_id for r in self.store.records(self._dir(), Delivery)}

    def mark_pending(self, delivery_id: str) -> None:
        self._once(self._pending_dir() / delivery_id, b"")

    def settled(self, delivery_id: str) -> None:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(self._pending_dir() / delivery_id)

    def pending(self) -> list[str]:
        return self.store.names(self._pending_dir(), suffix="")

    def _once(self, path: Path, data: bytes) -> None:
        """Create-once where any copy is as good as ours. With ``same`` always true, a
        conflict can only mean the file was gone when read back: a concurrent intake of the
        same delivery removed it (a pending marker goes once its work item exists) — done,
        not a conflict, whatever another intake has made of it since."""
        try:
            self.store.create_once(path, data, same=lambda old, new: True)
        except CaptainError as err:
            if err.code != "message_conflict":
                raise

    # -- bodies -------------------------------------------------------------------------------

    def body_held(self, record: Delivery) -> bool:
        return os.path.lexists(self._body_path(record.delivery_id, record.body_sha256))

    def body(self, record: Delivery) -> bytes | None:
        return self.store.read_bytes(self._body_path(record.delivery_id, record.body_sha256))

    def purge_bodies(self, at: datetime) -> int:
        """It lists only the bodies still held (not every delivery ever received). A body
        whose record does not exist is an intake killed between the two writes: deleted
        once ``ORPHAN_SECONDS`` old (the sender's redelivery writes it again)."""
        bodies = 0
        folder = self.store.dir("delivery-bodies", create=False)
        try:
            names = sorted(e.name for e in os.scandir(folder) if e.is_file(follow_symlinks=False))
        except (FileNotFoundError, NotADirectoryError):
            names = []
        for name in names:
            match = _BODY_NAME.fullmatch(name)
            if match is None:
                continue  # not a body captain wrote (the store sweeps its own temp files)
            path = folder / name
            try:
                record = self.store.read(self._dir() / f"{match.group(1)}.json", Delivery)
            except CaptainError:
                continue  # an unreadable record is the store's to report; its body waits
            try:
                if record is not None and path == self._body_path(
                    record.delivery_id, record.body_sha256
                ):
                    if at < record.raw_body_expires_at:
                        continue
                elif os.lstat(path).st_mtime > at.timestamp() - ORPHAN_SECONDS:
                    continue  # no record holds it: an intake killed between its two writes
                os.unlink(path)
                bodies += 1
            except FileNotFoundError:
                continue  # another purger got there first
        return bodies

    # -- body claims --------------------------------------------------------------------------

    def claim_body(self, mine: BodySeen) -> BodySeen | None:
        path = self._body_seen_path(mine.endpoint_id, mine.body_sha256)
        self.store.create_once(path, encode(mine), same=lambda old, new: True)
        return self.store.read(path, BodySeen)

    def renew_body_claim(self, mine: BodySeen) -> BodySeen | None:
        path = self._body_seen_path(mine.endpoint_id, mine.body_sha256)
        self.store.publish(path, encode(mine))
        return self.store.read(path, BodySeen)

    def drop_body_claims(self, at: datetime) -> int:
        claims = 0
        seen_dir = self.store.dir("deliveries", "by-body", create=False)
        for name in self.store.names(seen_dir, shape=KEY_NAME):
            try:
                seen = self.store.read(seen_dir / f"{name}.json", BodySeen)
            except CaptainError:
                continue
            if seen is not None and at >= seen.until:
                claims += self._unclaim(seen_dir / f"{name}.json", at)
        return claims

    def _unclaim(self, path: Path, at: datetime) -> int:
        """Delete an expired body claim — unless an intake renewed it meanwhile: the claim
        is taken aside atomically and looked at again, and a renewed one is put back (a
        newer one made since wins), so the purge never drops a live replay guard."""
        aside = path.with_name(f".purge-{os.getpid()}-{path.name}")
        try:
            os.rename(path, aside)
        except FileNotFoundError:
            return 0  # another purger got there first
        try:
            taken = self.store.read(aside, BodySeen)
        except CaptainError:
            taken = None
        renewed = taken is not None and at < taken.until
        if renewed:
            with contextlib.suppress(FileExistsError):
                os.link(aside, path)
        with contextlib.suppress(FileNotFoundError):  # a claim that did not parse is quarantined
            os.unlink(aside)
        return 0 if renewed else 1

    # -- rejections ---------------------------------------------------------------------------

    def put_rejection(self, record: Rejection) -> None:
        self.store.create_once(self._rejected_dir() / f"{record.rejection_id}.json", encode(record))

    def prune_rejections(self, keep: int, days: float, at: datetime | None = None) -> int:
        """By the files' mtimes: ``at`` None is the wall clock (``time.time()``), which the
        mtimes are written by."""
        folder = self._rejected_dir(create=False)  # put_rejection made it, if ever
        clock = time.time() if at is None else at.timestamp()
        names = self.store.names(folder)  # time-ordered IDs: the oldest first
        oldest_kept = clock - days * 86400
        removed = 0
        for i, name in enumerate(names):
            path = folder / f"{name}.json"
            try:
                if i >= len(names) - keep and os.lstat(path).st_mtime >= oldest_kept:
                    return removed
                os.unlink(path)
                removed += 1
            except FileNotFoundError:
                continue  # another pruner got there first
        return removed

    def rejections(self) -> list[Rejection]:
        return self.store.records(self._rejected_dir(), Rejection)

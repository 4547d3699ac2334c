"""Inbound webhook deliveries: recorded before anything is dispatched, deduped by identity.

Identity is (endpoint, source delivery id) — never a signature. It is claimed once
(``deliveries/by-identity/``), naming the delivery's time-ordered ID: the same identity
with the same body is a duplicate, with another body a conflict. The raw body lives in its
own file until its retention ends; the record keeps the body's hash and size forever, so
"received, can no longer replay" stays distinct from "never seen". For a sender whose
signature covers only the body (``body_once``), the body is claimed too
(``deliveries/by-body/``) for the retention window. A refused delivery is kept in
``deliveries/rejected/``, the newest ``MAX_REJECTIONS`` of them.

Endpoints are configured in the home's ``config.toml``::

    [endpoints.github]
    events = ["push", "pull_request"]   # which events create work (absent: every event)
    retention_days = 7                  # how long the raw body is kept
    max_attempts = 1                    # retries for a repeatable failure
    routine = false                     # true: receipts whose work offers no cancel/replay

Bodies past their retention are deleted by ``purge`` (the runners and ``captain serve``
call it on a clock, ``captain deliveries purge`` by hand); the record stays.
"""

from __future__ import annotations

import base64
import contextlib
import hashlib
import os
import re
import time
from dataclasses import dataclass
from datetime import datetime, timedelta
from pathlib import Path

from state.clock import now
from state.errors import CaptainError
from state.home import Home, number_in
from state.ids import WORK, derive, new_id
from state.models import Record
from state.store import encode
from state.work import ledger
from state.work.crash import crash_point
from state.work.models import Delivery

PREFIX = "whd"
DEFAULT_RETENTION_DAYS = 7.0
MAX_BODY_BYTES = 1024 * 1024 - 1  # the store's record cap: a body must stay readable
ENDPOINT_RE = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]{0,63}")
SOURCE_ID_MAX = 200
MAX_REJECTIONS = 1000  # refused deliveries kept on record (the newest)
REJECTION_DAYS = 7.0  # and none kept longer than this


def _endpoints(home: Home) -> dict:
    table = home.config().get("endpoints")
    return table if isinstance(table, dict) else {}


def endpoint(home: Home, endpoint_id: str) -> dict:
    if not isinstance(endpoint_id, str) or not ENDPOINT_RE.fullmatch(endpoint_id):
        raise CaptainError("unknown_endpoint", f"{endpoint_id!r} is not an endpoint name.")
    config = _endpoints(home).get(endpoint_id)
    if not isinstance(config, dict):
        known = ", ".join(sorted(_endpoints(home))) or "none configured"
        raise CaptainError("unknown_endpoint",
                           f"there is no endpoint {endpoint_id} (known: {known}); add "
                           f"[endpoints.{endpoint_id}] to config.toml in the home.")
    return config


def routine(config: dict) -> bool:
    """``routine = true`` (a TOML boolean; anything else is not routine)."""
    return config.get("routine") is True


KEY_NAME = re.compile(r"[a-z2-7]{32}")  # what identity_key makes (20 bytes in base32)


def identity_key(endpoint_id: str, source_delivery_id: str) -> str:
    """The file name that stands for (endpoint, source delivery id)."""
    digest = hashlib.sha256(f"{endpoint_id}\0{source_delivery_id}".encode()).digest()
    return base64.b32encode(digest[:20]).decode().rstrip("=").lower()


def work_id_for(delivery_id: str) -> str:
    """The work item a delivery creates: derivable, so a crash between the record and the
    item is repaired by the next look."""
    return derive(WORK, delivery_id)


def _dir(home: Home) -> Path:
    return home.store.dir("deliveries")


def _identity_path(home: Home, endpoint_id: str, source_delivery_id: str) -> Path:
    return home.store.dir("deliveries", "by-identity") / \
        f"{identity_key(endpoint_id, source_delivery_id)}.json"


def _body_path(home: Home, delivery_id: str, sha256: str) -> Path:
    # named by its hash too: a body left by a killed intake never stands in for another
    return home.store.dir("delivery-bodies") / f"{delivery_id}-{sha256[:32]}.body"


def _filter(config: dict, event: str | None) -> str | None:
    events = config.get("events")
    if events is None:
        return None
    if not isinstance(events, list) or event not in events:
        shown = ", ".join(str(e) for e in events) if isinstance(events, list) else "none"
        return f"event {event or '(none)'} is not one this endpoint acts on ({shown})"
    return None


class Identity(Record):
    """``deliveries/by-identity/<key>.json``: which delivery an identity is."""

    delivery_id: str
    endpoint_id: str
    source_delivery_id: str


@dataclass(frozen=True)
class Intake:
    delivery: Delivery
    duplicate: bool


def ingest(home: Home, endpoint_id: str, source_delivery_id: str, body: bytes, *,
           event: str | None = None, at: datetime | None = None,
           body_once: bool = False) -> Intake:
    """Record one delivery durably, then (unless filtered) create its work item.

    ``body_once``: the sender's signature covers only the body (GitHub's), so the delivery
    id and event beside it could be anyone's. A body already delivered under another
    delivery id within the endpoint's retention is then taken for a replay: it is recorded
    as a rejection and refused (``delivery_conflict``)."""
    config = endpoint(home, endpoint_id)
    if not source_delivery_id or len(source_delivery_id) > SOURCE_ID_MAX \
            or not source_delivery_id.isprintable():
        raise CaptainError("invalid_argument", "the source delivery id must be 1 to "
                                               f"{SOURCE_ID_MAX} printable characters.")
    if event is not None and (not event.isprintable() or len(event) > 100):
        raise CaptainError("invalid_argument", "the event name must be printable, at most "
                                               "100 characters.")
    if len(body) > MAX_BODY_BYTES:
        raise CaptainError("message_too_large", f"the body is {len(body)} bytes; at most "
                                                f"{MAX_BODY_BYTES} are accepted.")
    at = at or now()
    sha = hashlib.sha256(body).hexdigest()
    # The identity is claimed first (create-once, naming a fresh time-ordered ID), so two
    # concurrent intakes of one delivery agree on a single record; a kill after the claim
    # leaves an identity with no record, which the next intake of it completes.
    claim = Identity(delivery_id=new_id(PREFIX), endpoint_id=endpoint_id,
                     source_delivery_id=source_delivery_id)
    ident_path = _identity_path(home, endpoint_id, source_delivery_id)
    if body_once and not os.path.lexists(ident_path):  # a known identity is a redelivery
        _claim_body(home, config, endpoint_id, source_delivery_id, sha, body, event, at)
    home.store.create_once(ident_path, encode(claim), same=lambda old, new: True)
    ident = home.store.read(ident_path, Identity)
    if ident is None or (ident.endpoint_id, ident.source_delivery_id) != \
            (endpoint_id, source_delivery_id):
        raise CaptainError("store_error", "a delivery identity record could not be read back.")
    crash_point("delivery:after-identity")
    delivery_id = ident.delivery_id
    _once(home, _pending_dir(home) / delivery_id, b"")
    path = _dir(home) / f"{delivery_id}.json"
    existing = home.store.read(path, Delivery)
    if existing is not None:
        return _same(home, existing, sha)
    reason = _filter(config, event)
    days = number_in(config, "retention_days", DEFAULT_RETENTION_DAYS, 0)
    expires = at + timedelta(days=days)
    record = Delivery(delivery_id=delivery_id, endpoint_id=endpoint_id,
                      source_delivery_id=source_delivery_id, event=event, received_at=at,
                      body_sha256=sha, body_bytes=len(body), raw_body_expires_at=expires,
                      filter_reason=reason, routine=routine(config),
                      work_id=None if reason else work_id_for(delivery_id))
    # the body before the record: a record that says the body is held always has it
    _once(home, _body_path(home, delivery_id, sha), body)
    crash_point("delivery:after-body")
    try:
        created = home.store.create_once(path, encode(record))
    except CaptainError as err:
        if err.code != "message_conflict":
            raise
        return _same(home, home.store.read(path, Delivery), sha)
    if not created:
        return Intake(record, duplicate=True)
    crash_point("delivery:after-record")
    _dispatch(home, record, config)
    _settled(home, delivery_id)
    return Intake(record, duplicate=False)


def _once(home: Home, path: Path, data: bytes) -> None:
    """Create-once where any copy is as good as ours. With ``same`` always true, a conflict
    can only mean the file was gone when read back: a concurrent intake of the same
    delivery removed it (a pending marker goes once its work item exists) — done, not a
    conflict, whatever another intake has made of it since."""
    try:
        home.store.create_once(path, data, same=lambda old, new: True)
    except CaptainError as err:
        if err.code != "message_conflict":
            raise


class BodySeen(Record):
    """``deliveries/by-body/<key>.json``: which delivery id a body-once endpoint first got
    this body under, and until when another id for it is taken for a replay."""

    endpoint_id: str
    body_sha256: str
    source_delivery_id: str
    until: datetime


def _body_seen_path(home: Home, endpoint_id: str, sha: str) -> Path:
    return home.store.dir("deliveries", "by-body") / f"{identity_key(endpoint_id, sha)}.json"


def _claim_body(home: Home, config: dict, endpoint_id: str, source_delivery_id: str,
                sha: str, body: bytes, event: str | None, at: datetime) -> None:
    """Claim the body for this delivery id (create-once, so two concurrent replays cannot
    both win), or refuse it as a replay of the delivery that holds it."""
    days = number_in(config, "retention_days", DEFAULT_RETENTION_DAYS, 0)
    path = _body_seen_path(home, endpoint_id, sha)
    mine = BodySeen(endpoint_id=endpoint_id, body_sha256=sha,
                    source_delivery_id=source_delivery_id, until=at + timedelta(days=days))
    home.store.create_once(path, encode(mine), same=lambda old, new: True)
    seen = home.store.read(path, BodySeen)
    if seen is not None and seen.source_delivery_id != source_delivery_id and at >= seen.until:
        home.store.publish(path, encode(mine))  # its window is over: the body is new again
        seen = home.store.read(path, BodySeen)
    if seen is None or seen.source_delivery_id == source_delivery_id:
        return
    reject(home, endpoint_id, source_delivery_id, body,
           f"replayed body: already delivered as {seen.source_delivery_id[:SOURCE_ID_MAX]}",
           event=event)
    raise CaptainError(
        "delivery_conflict",
        "this body was already delivered under another delivery id in the endpoint's "
        f"{days:g}-day window, and this endpoint's signature covers only the body, so it is "
        "taken for a replay. It was recorded as rejected and nothing was dispatched.")


def _same(home: Home, existing: Delivery | None, sha: str) -> Intake:
    if existing is None:
        raise CaptainError("store_error", "a delivery record could not be read back.")
    if existing.body_sha256 != sha:
        raise CaptainError(
            "delivery_conflict",
            f"delivery {existing.source_delivery_id} on endpoint {existing.endpoint_id} was "
            f"already received ({existing.delivery_id}) with a different body; nothing new "
            "was recorded.", delivery_id=existing.delivery_id)
    _dispatch(home, existing, _endpoints(home).get(existing.endpoint_id) or {})
    _settled(home, existing.delivery_id)
    return Intake(existing, duplicate=True)


def _pending_dir(home: Home) -> Path:
    # deliveries/pending/<id>: recorded (or being recorded), its work item not yet sure
    return home.store.dir("deliveries", "pending")


def _settled(home: Home, delivery_id: str) -> None:
    with contextlib.suppress(FileNotFoundError):
        os.unlink(_pending_dir(home) / delivery_id)


def settle_pending(home: Home) -> int:
    """Finish intakes killed between the record and its work item (runners call this):
    the item is created from the record; returns how many were finished."""
    done = 0
    for delivery_id in home.store.names(_pending_dir(home), suffix=""):
        record = home.store.read(_dir(home) / f"{delivery_id}.json", Delivery)
        if record is None:
            continue  # killed before the record: the sender's redelivery completes it
        _dispatch(home, record, _endpoints(home).get(record.endpoint_id) or {})
        _settled(home, delivery_id)
        done += 1
    return done


def _dispatch(home: Home, record: Delivery, config: dict) -> None:
    """Create the delivery's work item if it should have one (idempotent)."""
    if record.work_id is None or ledger.exists(home, record.work_id):
        return
    ledger.accept(home, source="webhook", work_id=record.work_id,
                  input={"delivery_id": record.delivery_id, "endpoint_id": record.endpoint_id,
                         "event": record.event, "body_sha256": record.body_sha256},
                  requester=f"webhook:{record.endpoint_id}", delivery_id=record.delivery_id,
                  max_attempts=int(number_in(config, "max_attempts", 1, 1)), at=record.received_at)


class Rejection(Record):
    """A delivery refused at the door (bad signature, no delivery id): on record, never
    dispatched, and it claims no identity (a forger cannot block the real delivery)."""

    rejection_id: str
    endpoint_id: str
    source_delivery_id: str | None
    event: str | None
    received_at: datetime
    reason: str
    body_sha256: str
    body_bytes: int


def reject(home: Home, endpoint_id: str, source_delivery_id: str | None, body: bytes,
           reason: str, *, event: str | None = None) -> Rejection:
    """Keep a refused delivery on record; the folder keeps the newest ``MAX_REJECTIONS``,
    none older than ``REJECTION_DAYS`` (anyone can send one, so it must not grow without
    end)."""
    record = Rejection(rejection_id=new_id("whr"), endpoint_id=endpoint_id,
                       source_delivery_id=(source_delivery_id or None) and
                       source_delivery_id[:SOURCE_ID_MAX],
                       event=event and event[:100], received_at=now(), reason=reason[:500],
                       body_sha256=hashlib.sha256(body).hexdigest(), body_bytes=len(body))
    folder = home.store.dir("deliveries", "rejected")
    home.store.create_once(folder / f"{record.rejection_id}.json", encode(record))
    _prune_rejections(home, folder, time.time())
    return record


def _prune_rejections(home: Home, folder: Path, clock: float) -> int:
    """Drop all but the newest ``MAX_REJECTIONS``, and any older than ``REJECTION_DAYS``
    at ``clock`` (seconds since the epoch); returns how many went."""
    names = home.store.names(folder)  # time-ordered IDs: the oldest first
    oldest_kept = clock - REJECTION_DAYS * 86400
    removed = 0
    for i, name in enumerate(names):
        path = folder / f"{name}.json"
        try:
            if i >= len(names) - MAX_REJECTIONS and os.lstat(path).st_mtime >= oldest_kept:
                return removed
            os.unlink(path)
            removed += 1
        except FileNotFoundError:
            continue  # another pruner got there first
    return removed


def rejections(home: Home) -> list[Rejection]:
    return home.store.records(home.store.dir("deliveries", "rejected"), Rejection)


def get(home: Home, delivery_id: str) -> Delivery:
    if not (isinstance(delivery_id, str) and delivery_id.startswith(PREFIX + "_")
            and delivery_id[4:].isalnum() and len(delivery_id) <= 64):
        raise CaptainError("unknown_delivery", f"{delivery_id!r} is not a delivery ID (whd_...).")
    record = home.store.read(_dir(home) / f"{delivery_id}.json", Delivery)
    if record is None:
        raise CaptainError("unknown_delivery", f"there is no delivery {delivery_id}.")
    return record


def body_held(home: Home, record: Delivery) -> bool:
    """Whether the raw body's file is still there (``purge`` deletes it once expired)."""
    return os.path.lexists(_body_path(home, record.delivery_id, record.body_sha256))


def available(expires_at: datetime, held: bool, at: datetime | None = None) -> bool:
    """The rule behind ``raw_body_available``: held, and not past its retention (a body
    whose file outlived its expiry, not yet purged, is not available either)."""
    return held and (at or now()) < expires_at


def raw_body_available(home: Home, record: Delivery, at: datetime | None = None) -> bool:
    return available(record.raw_body_expires_at, body_held(home, record), at)


def raw_body(home: Home, record: Delivery) -> bytes | None:
    """The raw body while it is retained (for a replay's worker); never printed or served."""
    if not raw_body_available(home, record):
        return None
    return home.store.read_bytes(_body_path(home, record.delivery_id, record.body_sha256))


ORPHAN_SECONDS = 3600.0  # a body with no record (its intake was killed) is kept this long
_BODY_NAME = re.compile(rf"({PREFIX}_[0-9A-Za-z]{{1,60}})-[0-9a-f]{{32}}\.body")


@dataclass(frozen=True)
class Purged:
    """What one ``purge`` deleted."""

    bodies: int  # raw bodies past their retention (their records stay)
    body_claims: int  # deliveries/by-body/ entries past their window
    rejections: int  # refused deliveries past the bound (age or count)

    def as_json(self) -> dict:
        return {"bodies_removed": self.bodies, "body_claims_removed": self.body_claims,
                "rejections_removed": self.rejections}


def purge(home: Home, at: datetime | None = None) -> Purged:
    """Delete raw bodies past their retention, body claims past their window and refused
    deliveries past their bound. Every delivery record stays, with ``body_sha256`` and
    ``body_bytes``; its ``raw_body_available`` is false from then on.

    It costs a listing of what is still held (not of every delivery ever received), so the
    runners can call it on a clock. A body whose record does not exist is an intake killed
    between the two writes: it is deleted once ``ORPHAN_SECONDS`` old (the sender's
    redelivery writes it again)."""
    at = at or now()
    bodies = claims = 0
    folder = home.store.dir("delivery-bodies", create=False)
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
            record = home.store.read(_dir(home) / f"{match.group(1)}.json", Delivery)
        except CaptainError:
            continue  # an unreadable record is the store's to report; its body waits
        try:
            if record is not None and \
                    path == _body_path(home, record.delivery_id, record.body_sha256):
                if at < record.raw_body_expires_at:
                    continue
            elif os.lstat(path).st_mtime > at.timestamp() - ORPHAN_SECONDS:
                continue  # no record holds it: an intake killed between its two writes
            os.unlink(path)
            bodies += 1
        except FileNotFoundError:
            continue  # another purger got there first
    seen_dir = home.store.dir("deliveries", "by-body", create=False)
    for name in home.store.names(seen_dir, shape=KEY_NAME):
        try:
            seen = home.store.read(seen_dir / f"{name}.json", BodySeen)
        except CaptainError:
            continue
        if seen is not None and at >= seen.until:
            claims += _unclaim(home, seen_dir / f"{name}.json", at)
    rejected = home.store.dir("deliveries", "rejected", create=False)
    return Purged(bodies, claims, _prune_rejections(home, rejected, at.timestamp()))


def _unclaim(home: Home, path: Path, at: datetime) -> int:
    """Delete an expired body claim — unless an intake renewed it meanwhile: the claim is
    taken aside atomically and looked at again, and a renewed one is put back (a newer one
    made since wins), so the purge never drops a live replay guard."""
    aside = path.with_name(f".purge-{os.getpid()}-{path.name}")
    try:
        os.rename(path, aside)
    except FileNotFoundError:
        return 0  # another purger got there first
    try:
        taken = home.store.read(aside, BodySeen)
    except CaptainError:
        taken = None
    renewed = taken is not None and at < taken.until
    if renewed:
        with contextlib.suppress(FileExistsError):
            os.link(aside, path)
    with contextlib.suppress(FileNotFoundError):  # a claim that did not parse is quarantined
        os.unlink(aside)
    return 0 if renewed else 1


def public(home: Home, record: Delivery) -> dict:
    row = record.model_dump(mode="json", exclude={"schema_"})
    row["raw_body_available"] = raw_body_available(home, record)
    return row


def check_endpoint_filter(home: Home, endpoint_id: str,
                          records: list[Delivery] | None = None) -> None:
    """A filter naming an endpoint names a known one: configured in config.toml, or with
    deliveries on record (an endpoint removed from the config keeps its history listable).
    Anything else is a typo, refused (``invalid_filter``) rather than answered with an empty
    page, which would say "never seen"."""
    configured = sorted(k for k, v in _endpoints(home).items() if isinstance(v, dict))
    if endpoint_id in configured:
        return
    if records is None:
        records = home.store.records(_dir(home), Delivery)  # only for an unconfigured name
    seen = {r.endpoint_id for r in records}
    if endpoint_id in seen:
        return
    known = sorted(set(configured) | seen)
    shown = ", ".join(known[:20]) + (f" and {len(known) - 20} more" if len(known) > 20
                                      else "") if known else "none"
    raise CaptainError("invalid_filter",
                       f"endpoint {endpoint_id[:80]!r} is not configured in config.toml and has "
                       f"no deliveries on record (known: {shown}).")


def check_source_filter(source_delivery_id: str) -> None:
    """A source delivery id the ledger could never have recorded is a typo, not a "no"."""
    if not source_delivery_id or len(source_delivery_id) > SOURCE_ID_MAX \
            or not source_delivery_id.isprintable():
        raise CaptainError("invalid_filter", "a source delivery id is 1 to "
                                             f"{SOURCE_ID_MAX} printable characters.")


def page(home: Home, *, endpoint_id: str | None = None, source_delivery_id: str | None = None,
         limit: int = 50, after: str | None = None) -> tuple[list[Delivery], str | None]:
    """Newest last, keyset-paginated by (received_at, delivery_id). The identity question
    (endpoint + source delivery id) answers a page of zero or one. Every filter is checked
    first: an unknown endpoint or a malformed value is ``invalid_filter``, never an empty
    page."""
    if source_delivery_id is not None and endpoint_id is None:
        raise CaptainError("invalid_filter", "a source delivery id is only unique within an "
                                             "endpoint: name the endpoint with it (--endpoint, "
                                             "?endpoint_id=).")
    if not 1 <= limit <= ledger.PAGE_MAX:
        raise CaptainError("invalid_filter", f"limit must be between 1 and {ledger.PAGE_MAX}.")
    if endpoint_id is not None and source_delivery_id is not None:
        check_source_filter(source_delivery_id)
        check_endpoint_filter(home, endpoint_id)
        ident = home.store.read(_identity_path(home, endpoint_id, source_delivery_id),
                                Identity)
        with contextlib.suppress(CaptainError):
            if ident is not None:
                return [get(home, ident.delivery_id)], None
        return [], None
    records = home.store.records(_dir(home), Delivery)
    if endpoint_id is not None:
        check_endpoint_filter(home, endpoint_id, records)
        records = [r for r in records if r.endpoint_id == endpoint_id]
    records.sort(key=lambda r: (r.received_at, r.delivery_id))
    if after is not None:
        ids = [r.delivery_id for r in records]
        if after not in ids:
            raise CaptainError("invalid_filter", f"after={after!r} is not a cursor from a "
                                                 "previous page.")
        records = records[ids.index(after) + 1:]
    if len(records) > limit:
        return records[:limit], records[limit - 1].delivery_id
    return records, None

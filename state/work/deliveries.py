"""Inbound webhook deliveries: recorded before anything is dispatched, deduped by identity.

Identity is (endpoint, source delivery id) — never a signature. It is claimed once
(``deliveries/by-identity/``), naming the delivery's time-ordered ID: the same identity
with the same body is a duplicate, with another body a conflict. The raw body lives in its
own file until its retention ends; the record keeps the body's hash and size forever, so
"received, can no longer replay" stays distinct from "never seen".

Endpoints are configured in the home's ``config.toml``::

    [endpoints.github]
    events = ["push", "pull_request"]   # which events create work (absent: every event)
    retention_days = 7                  # how long the raw body is kept
    max_attempts = 1                    # retries for a repeatable failure
"""

from __future__ import annotations

import base64
import contextlib
import hashlib
import os
import re
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
           event: str | None = None, at: datetime | None = None) -> Intake:
    """Record one delivery durably, then (unless filtered) create its work item."""
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
    home.store.create_once(ident_path, encode(claim), same=lambda old, new: True)
    ident = home.store.read(ident_path, Identity)
    if ident is None or (ident.endpoint_id, ident.source_delivery_id) != \
            (endpoint_id, source_delivery_id):
        raise CaptainError("store_error", "a delivery identity record could not be read back.")
    crash_point("delivery:after-identity")
    delivery_id = ident.delivery_id
    pending = _pending_dir(home) / delivery_id
    home.store.create_once(pending, b"", same=lambda old, new: True)
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
                      filter_reason=reason,
                      work_id=None if reason else work_id_for(delivery_id))
    # the body before the record: a record that says the body is held always has it
    home.store.create_once(_body_path(home, delivery_id, sha), body, same=lambda old, new: True)
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
    if record.work_id is None or home.work_exists(record.work_id):
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
    record = Rejection(rejection_id=new_id("whr"), endpoint_id=endpoint_id,
                       source_delivery_id=(source_delivery_id or None) and
                       source_delivery_id[:SOURCE_ID_MAX],
                       event=event and event[:100], received_at=now(), reason=reason,
                       body_sha256=hashlib.sha256(body).hexdigest(), body_bytes=len(body))
    home.store.create_once(home.store.dir("deliveries", "rejected") /
                           f"{record.rejection_id}.json", encode(record))
    return record


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


def raw_body_available(home: Home, record: Delivery, at: datetime | None = None) -> bool:
    if (at or now()) >= record.raw_body_expires_at:
        return False
    return os.path.lexists(_body_path(home, record.delivery_id, record.body_sha256))


def raw_body(home: Home, record: Delivery) -> bytes | None:
    """The raw body while it is retained (for a replay's worker); never printed or served."""
    if not raw_body_available(home, record):
        return None
    return home.store.read_bytes(_body_path(home, record.delivery_id, record.body_sha256))


def purge(home: Home, at: datetime | None = None) -> int:
    """Delete bodies past their retention; the records stay."""
    removed = 0
    at = at or now()
    for name in home.store.names(_dir(home)):
        record = home.store.read(_dir(home) / f"{name}.json", Delivery)
        if record is not None and at >= record.raw_body_expires_at:
            with contextlib.suppress(FileNotFoundError):
                os.unlink(_body_path(home, record.delivery_id, record.body_sha256))
                removed += 1
    return removed


def public(home: Home, record: Delivery) -> dict:
    row = record.model_dump(mode="json", exclude={"schema_"})
    row["raw_body_available"] = raw_body_available(home, record)
    return row


def page(home: Home, *, endpoint_id: str | None = None, source_delivery_id: str | None = None,
         limit: int = 50, after: str | None = None) -> tuple[list[Delivery], str | None]:
    """Newest last, keyset-paginated by (received_at, delivery_id). The identity question
    (endpoint + source delivery id) answers a page of zero or one."""
    if source_delivery_id is not None and endpoint_id is None:
        raise CaptainError("invalid_filter", "a source delivery id is only unique within an "
                                             "endpoint: name the endpoint with it (--endpoint, "
                                             "?endpoint_id=).")
    if not 1 <= limit <= ledger.PAGE_MAX:
        raise CaptainError("invalid_filter", f"limit must be between 1 and {ledger.PAGE_MAX}.")
    if endpoint_id is not None and source_delivery_id is not None:
        ident = home.store.read(_identity_path(home, endpoint_id, source_delivery_id),
                                Identity) if ENDPOINT_RE.fullmatch(endpoint_id) else None
        with contextlib.suppress(CaptainError):
            if ident is not None:
                return [get(home, ident.delivery_id)], None
        return [], None
    records = [r for r in home.store.records(_dir(home), Delivery)
               if endpoint_id is None or r.endpoint_id == endpoint_id]
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

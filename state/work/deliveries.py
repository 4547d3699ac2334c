"""Inbound webhook deliveries: recorded before anything is dispatched, deduped by identity.

Every rule of an intake is here, once; the records are reached only through a
``DeliveryStore`` (``state.work.delivery_store``), chosen by ``store_for`` where the home's
work ledger is: the home's files (``state.work.delivery_files``) or the PostgreSQL ledger's
database (``state.work.pg_deliveries``), where two homes (two hosts, two ``captain serve``)
share one set of deliveries, so a delivery made to each is one record and one work item.

Identity is (endpoint, source delivery id) — never a signature. It is claimed once, naming
the delivery's time-ordered ID: the same identity with the same body is a duplicate, with
another body a conflict. The raw body is kept apart until its retention ends; the record
keeps the body's hash and size forever, so "received, can no longer replay" stays distinct
from "never seen". For a sender whose signature covers only the body (``body_once``), the
body is claimed too, for the retention window. A refused delivery is kept on record, the
newest ``MAX_REJECTIONS`` of them, none older than ``REJECTION_DAYS``.

An intake is one store transaction: on PostgreSQL the identity, the record, the body and
the work item (``ledger.accept`` joins the transaction) commit together or, killed midway,
not at all; on files each write is durable as it returns and a ``pending`` marker lets
``settle_pending`` (the runners) finish an intake killed before its work item.

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

import contextlib
import hashlib
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from state import config as settings
from state.clock import now
from state.config import DEFAULT_RETENTION_DAYS as DEFAULT_RETENTION_DAYS
from state.config import ENDPOINT_RE
from state.errors import CaptainError
from state.home import Home
from state.ids import WORK, derive, new_id
from state.work import ledger
from state.work.backend import handle_of
from state.work.crash import crash_point
from state.work.delivery_files import KEY_NAME as KEY_NAME
from state.work.delivery_files import ORPHAN_SECONDS as ORPHAN_SECONDS
from state.work.delivery_files import Identity as Identity
from state.work.delivery_files import identity_key as identity_key
from state.work.delivery_store import BodySeen as BodySeen
from state.work.delivery_store import DeliveryStore, Rejection
from state.work.ledger_records import Delivery

PREFIX = "whd"
MAX_BODY_BYTES = 1024 * 1024 - 1  # the store's record cap: a body must stay readable
SOURCE_ID_MAX = 200
MAX_REJECTIONS = 1000  # refused deliveries kept on record (the newest)
REJECTION_DAYS = 7.0  # and none kept longer than this


def store_for(home: Home) -> DeliveryStore:
    """The home's delivery store: a part of its ledger handle (``handle_of``), so a
    delivery and the work item it creates are in one place, and every home on one database
    shares its deliveries."""
    return handle_of(home).deliveries


def _endpoints(home: Home) -> dict[str, Any]:
    table = home.config().get("endpoints")
    return table if isinstance(table, dict) else {}


def endpoint(home: Home, endpoint_id: str) -> dict[str, Any]:
    if not isinstance(endpoint_id, str) or not ENDPOINT_RE.fullmatch(endpoint_id):
        raise CaptainError("unknown_endpoint", f"{endpoint_id!r} is not an endpoint name.")
    config = _endpoints(home).get(endpoint_id)
    if not isinstance(config, dict):
        known = ", ".join(sorted(_endpoints(home))) or "none configured"
        raise CaptainError(
            "unknown_endpoint",
            f"there is no endpoint {endpoint_id} (known: {known}); add "
            f"[endpoints.{endpoint_id}] to config.toml in the home.",
        )
    return config


def routine(config: dict[str, Any]) -> bool:
    """``routine = true`` (a TOML boolean; anything else is not routine)."""
    return settings.value(config, "routine") is True


def work_id_for(delivery_id: str) -> str:
    """The work item a delivery creates: derivable, so a crash between the record and the
    item is repaired by the next look."""
    return derive(WORK, delivery_id)


def _retention_days(config: dict[str, Any]) -> float:
    return float(settings.value(config, "retention_days"))


def _filter(config: dict[str, Any], event: str | None) -> str | None:
    events = config.get("events")
    if events is None:
        return None
    if not isinstance(events, list) or event not in events:
        shown = ", ".join(str(e) for e in events) if isinstance(events, list) else "none"
        return f"event {event or '(none)'} is not one this endpoint acts on ({shown})"
    return None


@dataclass(frozen=True)
class Intake:
    delivery: Delivery
    duplicate: bool


class _Replayed(Exception):
    """A body-once body already delivered under another id: the intake's transaction is
    left (rolled back on PostgreSQL) before the refusal is recorded, so the rejection stays."""

    def __init__(self, holder: str, days: float) -> None:
        super().__init__(holder)
        self.holder = holder
        self.days = days


def ingest(
    home: Home,
    endpoint_id: str,
    source_delivery_id: str,
    body: bytes,
    *,
    event: str | None = None,
    at: datetime | None = None,
    body_once: bool = False,
) -> Intake:
    """Record one delivery durably, then (unless filtered) create its work item.

    ``body_once``: the sender's signature covers only the body (GitHub's), so the delivery
    id and event beside it could be anyone's. A body already delivered under another
    delivery id within the endpoint's retention is then taken for a replay: it is recorded
    as a rejection and refused (``delivery_conflict``)."""
    config = endpoint(home, endpoint_id)
    if (
        not source_delivery_id
        or len(source_delivery_id) > SOURCE_ID_MAX
        or not source_delivery_id.isprintable()
    ):
        raise CaptainError(
            "invalid_argument",
            f"the source delivery id must be 1 to {SOURCE_ID_MAX} printable characters.",
        )
    if event is not None and (not event.isprintable() or len(event) > 100):
        raise CaptainError(
            "invalid_argument", "the event name must be printable, at most 100 characters."
        )
    if len(body) > MAX_BODY_BYTES:
        raise CaptainError(
            "message_too_large",
            f"the body is {len(body)} bytes; at most {MAX_BODY_BYTES} are accepted.",
        )
    store = store_for(home)
    try:
        with store.transaction():
            return _intake(
                home, store, config, endpoint_id, source_delivery_id, body, event, at, body_once
            )
    except _Replayed as replayed:
        reject(
            home,
            endpoint_id,
            source_delivery_id,
            body,
            f"replayed body: already delivered as {replayed.holder[:SOURCE_ID_MAX]}",
            event=event,
        )
        raise CaptainError(
            "delivery_conflict",
            "this body was already delivered under another delivery id in the endpoint's "
            f"{replayed.days:g}-day window, and this endpoint's signature covers only the "
            "body, so it is taken for a replay. It was recorded as rejected and nothing was "
            "dispatched.",
        ) from None


def _intake(
    home: Home,
    store: DeliveryStore,
    config: dict[str, Any],
    endpoint_id: str,
    source_delivery_id: str,
    body: bytes,
    event: str | None,
    at: datetime | None,
    body_once: bool,
) -> Intake:
    """``ingest`` inside the store's transaction."""
    at = at or store.now()
    sha = hashlib.sha256(body).hexdigest()
    if body_once and not store.knows(endpoint_id, source_delivery_id):
        _claim_body(store, config, endpoint_id, source_delivery_id, sha, at)  # a redelivery
    reason = _filter(config, event)

    def record_as(delivery_id: str) -> Delivery:
        return Delivery(
            delivery_id=delivery_id,
            endpoint_id=endpoint_id,
            source_delivery_id=source_delivery_id,
            event=event,
            received_at=at,
            body_sha256=sha,
            body_bytes=len(body),
            raw_body_expires_at=at + timedelta(days=_retention_days(config)),
            filter_reason=reason,
            routine=routine(config),
            work_id=None if reason else work_id_for(delivery_id),
        )

    # The identity is claimed first (create-once, naming a fresh time-ordered ID), so two
    # concurrent intakes of one delivery agree on a single record. On files a kill after the
    # claim leaves an identity with no record, which the next intake of it completes; on
    # PostgreSQL the claim is the record's row, and a kill anywhere leaves none of it.
    record = record_as(new_id(PREFIX))
    delivery_id = store.claim(record)
    crash_point("delivery:after-identity")
    store.mark_pending(delivery_id)
    existing = store.record(delivery_id)
    if existing is not None and existing != record:  # (PostgreSQL's claim stored ours)
        return _same(home, store, existing, sha)
    if delivery_id != record.delivery_id:  # files: an intake killed after its claim
        record = record_as(delivery_id)
    # the body before the record: a record that says the body is held always has it
    store.put_body(record, body)
    crash_point("delivery:after-body")
    try:
        created = store.put_record(record)
    except CaptainError as err:
        if err.code != "message_conflict":
            raise
        return _same(home, store, store.record(delivery_id), sha)
    if not created:
        return Intake(record, duplicate=True)
    crash_point("delivery:after-record")
    _dispatch(home, record, config)
    store.settled(delivery_id)
    return Intake(record, duplicate=False)


def _claim_body(
    store: DeliveryStore,
    config: dict[str, Any],
    endpoint_id: str,
    source_delivery_id: str,
    sha: str,
    at: datetime,
) -> None:
    """Claim the body for this delivery id (create-once, so two concurrent replays cannot
    both win), or refuse it as a replay of the delivery that holds it (``_Replayed``)."""
    days = _retention_days(config)
    mine = BodySeen(
        endpoint_id=endpoint_id,
        body_sha256=sha,
        source_delivery_id=source_delivery_id,
        until=at + timedelta(days=days),
    )
    seen = store.claim_body(mine)
    if seen is not None and seen.source_delivery_id != source_delivery_id and at >= seen.until:
        seen = store.renew_body_claim(mine)  # its window is over: the body is new again
    if seen is None or seen.source_delivery_id == source_delivery_id:
        return
    raise _Replayed(seen.source_delivery_id, days)


def _same(home: Home, store: DeliveryStore, existing: Delivery | None, sha: str) -> Intake:
    if existing is None:
        raise CaptainError("store_error", "a delivery record could not be read back.")
    if existing.body_sha256 != sha:
        raise CaptainError(
            "delivery_conflict",
            f"delivery {existing.source_delivery_id} on endpoint {existing.endpoint_id} was "
            f"already received ({existing.delivery_id}) with a different body; nothing new "
            "was recorded.",
            delivery_id=existing.delivery_id,
        )
    _dispatch(home, existing, _endpoints(home).get(existing.endpoint_id) or {})
    store.settled(existing.delivery_id)
    return Intake(existing, duplicate=True)


def settle_pending(home: Home) -> int:
    """Finish intakes killed between the record and its work item (runners call this):
    the item is created from the record; returns how many were finished. On PostgreSQL an
    intake is one transaction, so there are never any: 0."""
    store = store_for(home)
    done = 0
    for delivery_id in store.pending():
        record = store.record(delivery_id)
        if record is None:
            continue  # killed before the record: the sender's redelivery completes it
        _dispatch(home, record, _endpoints(home).get(record.endpoint_id) or {})
        store.settled(delivery_id)
        done += 1
    return done


def _dispatch(home: Home, record: Delivery, config: dict[str, Any]) -> None:
    """Create the delivery's work item if it should have one (idempotent)."""
    if record.work_id is None or ledger.exists(home, record.work_id):
        return
    ledger.accept(
        home,
        source="webhook",
        work_id=record.work_id,
        input={
            "delivery_id": record.delivery_id,
            "endpoint_id": record.endpoint_id,
            "event": record.event,
            "body_sha256": record.body_sha256,
        },
        requester=f"webhook:{record.endpoint_id}",
        delivery_id=record.delivery_id,
        max_attempts=settings.value(config, "max_attempts"),
        at=record.received_at,
    )


def reject(
    home: Home,
    endpoint_id: str,
    source_delivery_id: str | None,
    body: bytes,
    reason: str,
    *,
    event: str | None = None,
) -> Rejection:
    """Keep a refused delivery on record; the store keeps the newest ``MAX_REJECTIONS``,
    none older than ``REJECTION_DAYS`` (anyone can send one, so it must not grow without
    end)."""
    store = store_for(home)
    with store.transaction():
        record = Rejection(
            rejection_id=new_id("whr"),
            endpoint_id=endpoint_id,
            source_delivery_id=(source_delivery_id or None) and source_delivery_id[:SOURCE_ID_MAX],
            event=event and event[:100],
            received_at=store.now(),
            reason=reason[:500],
            body_sha256=hashlib.sha256(body).hexdigest(),
            body_bytes=len(body),
        )
        store.put_rejection(record)
        store.prune_rejections(MAX_REJECTIONS, REJECTION_DAYS)
    return record


def rejections(home: Home) -> list[Rejection]:
    return store_for(home).rejections()


def _is_delivery_id(delivery_id: object) -> bool:
    return (
        isinstance(delivery_id, str)
        and delivery_id.startswith(PREFIX + "_")
        and delivery_id[4:].isalnum()
        and len(delivery_id) <= 64
    )


def get(home: Home, delivery_id: str) -> Delivery:
    if not _is_delivery_id(delivery_id):
        raise CaptainError("unknown_delivery", f"{delivery_id!r} is not a delivery ID (whd_...).")
    record = store_for(home).record(delivery_id)
    if record is None:
        raise CaptainError("unknown_delivery", f"there is no delivery {delivery_id}.")
    return record


def body_held(home: Home, record: Delivery) -> bool:
    """Whether the raw body is still kept (``purge`` deletes it once expired)."""
    return store_for(home).body_held(record)


def available(expires_at: datetime, held: bool, at: datetime | None = None) -> bool:
    """The rule behind ``raw_body_available``: held, and not past its retention (a body
    whose file outlived its expiry, not yet purged, is not available either)."""
    return held and (at or now()) < expires_at


def raw_body_available(home: Home, record: Delivery, at: datetime | None = None) -> bool:
    """``available`` by the store's clock (the database's on PostgreSQL) unless ``at``."""
    store = store_for(home)
    return available(record.raw_body_expires_at, store.body_held(record), at or store.now())


def raw_body(home: Home, record: Delivery) -> bytes | None:
    """The raw body while it is retained (for a replay's worker); never printed or served."""
    if not raw_body_available(home, record):
        return None
    return store_for(home).body(record)


@dataclass(frozen=True)
class Purged:
    """What one ``purge`` deleted."""

    bodies: int  # raw bodies past their retention (their records stay)
    body_claims: int  # body-once claims past their window
    rejections: int  # refused deliveries past the bound (age or count)

    def as_json(self) -> dict[str, Any]:
        return {
            "bodies_removed": self.bodies,
            "body_claims_removed": self.body_claims,
            "rejections_removed": self.rejections,
        }


def purge(home: Home, at: datetime | None = None) -> Purged:
    """Delete raw bodies past their retention, body claims past their window and refused
    deliveries past their bound. Every delivery record stays, with ``body_sha256`` and
    ``body_bytes``; its ``raw_body_available`` is false from then on.

    It costs a listing of what is still held (not of every delivery ever received), so the
    runners can call it on a clock. On files a body whose record does not exist is an
    intake killed between the two writes: it is deleted once ``ORPHAN_SECONDS`` old (the
    sender's redelivery writes it again); on PostgreSQL there are none."""
    store = store_for(home)
    at = at or store.now()
    return Purged(
        store.purge_bodies(at),
        store.drop_body_claims(at),
        store.prune_rejections(MAX_REJECTIONS, REJECTION_DAYS, at),
    )


def public(home: Home, record: Delivery) -> dict[str, Any]:
    row = record.model_dump(mode="json", exclude={"schema_"})
    row["raw_body_available"] = raw_body_available(home, record)
    return row


def check_endpoint_filter(
    home: Home, endpoint_id: str, records: list[Delivery] | None = None
) -> None:
    """A filter naming an endpoint names a known one: configured in config.toml, or with
    deliveries on record (an endpoint removed from the config keeps its history listable).
    Anything else is a typo, refused (``invalid_filter``) rather than answered with an empty
    page, which would say "never seen"."""
    configured = sorted(k for k, v in _endpoints(home).items() if isinstance(v, dict))
    if endpoint_id in configured:
        return
    # only for an unconfigured name
    seen = {r.endpoint_id for r in records} if records is not None else store_for(home).endpoints()
    if endpoint_id in seen:
        return
    known = sorted(set(configured) | seen)
    shown = (
        ", ".join(known[:20]) + (f" and {len(known) - 20} more" if len(known) > 20 else "")
        if known
        else "none"
    )
    raise CaptainError(
        "invalid_filter",
        f"endpoint {endpoint_id[:80]!r} is not configured in config.toml and has "
        f"no deliveries on record (known: {shown}).",
    )


def check_source_filter(source_delivery_id: str) -> None:
    """A source delivery id the ledger could never have recorded is a typo, not a "no"."""
    if (
        not source_delivery_id
        or len(source_delivery_id) > SOURCE_ID_MAX
        or not source_delivery_id.isprintable()
    ):
        raise CaptainError(
            "invalid_filter", f"a source delivery id is 1 to {SOURCE_ID_MAX} printable characters."
        )


def page(
    home: Home,
    *,
    endpoint_id: str | None = None,
    source_delivery_id: str | None = None,
    limit: int = 50,
    after: str | None = None,
) -> tuple[list[Delivery], str | None]:
    """Newest last, keyset-paginated by (received_at, delivery_id). The identity question
    (endpoint + source delivery id) answers a page of zero or one. Every filter is checked
    first: an unknown endpoint or a malformed value is ``invalid_filter``, never an empty
    page; so is an ``after`` that is not a delivery of this listing (a cursor)."""
    if source_delivery_id is not None and endpoint_id is None:
        raise CaptainError(
            "invalid_filter",
            "a source delivery id is only unique within an "
            "endpoint: name the endpoint with it (--endpoint, "
            "?endpoint_id=).",
        )
    if not 1 <= limit <= ledger.PAGE_MAX:
        raise CaptainError("invalid_filter", f"limit must be between 1 and {ledger.PAGE_MAX}.")
    store = store_for(home)
    if endpoint_id is not None and source_delivery_id is not None:
        check_source_filter(source_delivery_id)
        check_endpoint_filter(home, endpoint_id)
        delivery_id = store.identity(endpoint_id, source_delivery_id)
        with contextlib.suppress(CaptainError):
            if delivery_id is not None:
                return [get(home, delivery_id)], None
        return [], None
    if endpoint_id is not None:
        check_endpoint_filter(home, endpoint_id)
    cursor = None
    if after is not None:
        cursor = store.record(after) if _is_delivery_id(after) else None
        if cursor is None or (endpoint_id is not None and cursor.endpoint_id != endpoint_id):
            raise CaptainError(
                "invalid_filter", f"after={after!r} is not a cursor from a previous page."
            )
    records = store.records(endpoint_id=endpoint_id, after=cursor, limit=limit + 1)
    if len(records) > limit:
        return records[:limit], records[limit - 1].delivery_id
    return records, None

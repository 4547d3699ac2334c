"""Webhook deliveries' storage interface: what a delivery store keeps and fences, nothing more.

``state.work.deliveries`` holds every rule of an intake (docs/ledger.md, "Webhook
deliveries": identity and its duplicates and conflicts, the filter, the body-once replay
refusal and its window, retention and ``raw_body_available``, the bounds on refusals, the
purge, the filters and cursors of a list) and reaches its records only through a
``DeliveryStore``. ``deliveries.store_for`` is the one place a home's store is chosen, by
the same decision as the work ledger's (``state.work.backend.backend_for``): the home's
files (``state.work.delivery_files``), or the PostgreSQL ledger's database
(``state.work.pg_deliveries``), so two homes on one database share one set of deliveries.

What a store guarantees:

- **One identity, one record.** ``claim`` is create-once on (endpoint, source delivery id):
  of two intakes of one delivery, however concurrent, both come away with the same delivery
  ID (files: the ``by-identity`` file; PostgreSQL: the unique constraint, ``INSERT … ON
  CONFLICT DO NOTHING`` then read back). A record is never changed once stored.
- **Transactions.** ``transaction()`` covers an intake: on PostgreSQL it is the ledger's
  transaction on this thread (``PostgresBackend.transaction``), so the record, its body and
  its work item (``ledger.accept`` joins it) commit together or not at all; the files have
  none, each write is durable as it returns and the next intake (or ``settle_pending``)
  finishes what a killed one left.
- **The clock.** ``now()`` stamps what the caller gives no time: the files' is
  ``state.clock.now()``, the database's is its own, like the ledger's leases.
- **Bodies are bytes on their own**, deleted by ``purge_bodies`` only; the record says
  nothing of whether its body is held (``body_held`` does), so a purged body never
  rewrites a record.
"""

from __future__ import annotations

from contextlib import AbstractContextManager
from datetime import datetime
from typing import Protocol

from state.records import Record
from state.work.ledger_records import Delivery


class BodySeen(Record):
    """A body-once endpoint's claim on a body: which delivery id first brought it, and until
    when another id bringing it is taken for a replay (files: ``deliveries/by-body/``)."""

    endpoint_id: str
    body_sha256: str
    source_delivery_id: str
    until: datetime


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


class DeliveryStore(Protocol):
    name: str  # "files", "postgresql": the ledger's name (state.work.backend)

    def transaction(self) -> AbstractContextManager[None]:
        """One intake's writes: atomic on PostgreSQL (joins a transaction this thread has
        open on the ledger), nothing on files."""
        ...

    def now(self) -> datetime:
        """The store's clock (see the module's docstring)."""
        ...

    # -- identity and records ---------------------------------------------------------------

    def knows(self, endpoint_id: str, source_delivery_id: str) -> bool:
        """Whether the identity was ever claimed (a claimed one is a redelivery)."""
        ...

    def identity(self, endpoint_id: str, source_delivery_id: str) -> str | None:
        """The delivery ID the identity names, None when never claimed."""
        ...

    def claim(self, record: Delivery) -> str:
        """Claim ``record``'s identity for its delivery ID, create-once, and return the ID
        the identity names: ``record``'s, or an earlier intake's. Files: the identity file
        alone (``put_record`` writes the record later); PostgreSQL: the record's row, whose
        unique constraint is the identity (``put_record`` then has nothing left to do)."""
        ...

    def record(self, delivery_id: str) -> Delivery | None:
        """The record (None when there is none); ``delivery_id`` is already checked."""
        ...

    def put_body(self, record: Delivery, body: bytes) -> None:
        """Keep the raw body for ``record`` (once; another copy of it is as good)."""
        ...

    def put_record(self, record: Delivery) -> bool:
        """Store ``record`` once: True when this call stored it, False when the same was
        there; another record under its ID is ``message_conflict``."""
        ...

    def records(
        self,
        *,
        endpoint_id: str | None = None,
        after: Delivery | None = None,
        limit: int | None = None,
    ) -> list[Delivery]:
        """Records in (received_at, delivery_id) order: of one endpoint, after ``after``'s
        key, at most ``limit``."""
        ...

    def endpoints(self) -> set[str]:
        """The endpoints with deliveries on record."""
        ...

    # -- intakes the files could not finish ---------------------------------------------------

    def mark_pending(self, delivery_id: str) -> None:
        """An intake under way: its work item is not certain yet (files only)."""
        ...

    def settled(self, delivery_id: str) -> None:
        """The intake's work item is certain."""
        ...

    def pending(self) -> list[str]:
        """Delivery IDs whose intake was killed before it settled (never on PostgreSQL)."""
        ...

    # -- bodies --------------------------------------------------------------------------------

    def body_held(self, record: Delivery) -> bool:
        """Whether ``record``'s raw body is still kept (not purged)."""
        ...

    def body(self, record: Delivery) -> bytes | None:
        """``record``'s raw body, None once purged."""
        ...

    def purge_bodies(self, at: datetime) -> int:
        """Delete the bodies whose record's ``raw_body_expires_at`` is not after ``at``
        (and, on files, any body no record holds, once an hour old); how many went."""
        ...

    # -- body claims (body-once endpoints) -------------------------------------------------------

    def claim_body(self, mine: BodySeen) -> BodySeen | None:
        """Claim the body for ``mine`` (create-once); the claim that holds it now."""
        ...

    def renew_body_claim(self, mine: BodySeen) -> BodySeen | None:
        """Replace the held claim with ``mine`` (its window is over); the claim now held."""
        ...

    def drop_body_claims(self, at: datetime) -> int:
        """Delete the claims whose window is over at ``at`` (never one renewed meanwhile);
        how many went."""
        ...

    # -- rejections ----------------------------------------------------------------------------

    def put_rejection(self, record: Rejection) -> None: ...

    def prune_rejections(self, keep: int, days: float, at: datetime | None = None) -> int:
        """Drop all but the newest ``keep`` refusals, and any older than ``days`` at ``at``
        (None: the store's own clock); how many went."""
        ...

    def rejections(self) -> list[Rejection]:
        """The refusals on record, oldest first."""
        ...

"""What a home's delivery store holds, read past captain (so a test can check what captain
says against what is stored): the home's files, or — when the home's ledger is on
PostgreSQL — the rows, over a connection of our own, as another host would read them.

- ``records(home)``: the delivery IDs on record;
- ``bodies(home)``: delivery ID -> the raw body still held;
- ``body_claims(home)``: how many body-once claims are held;
- ``age_rejection(home, rejection_id, days)``: make a refusal ``days`` older (files: its
  mtime, which the prune judges; PostgreSQL: its ``received_at``).
"""

from __future__ import annotations

import contextlib
import os
import time
from collections.abc import Iterator
from pathlib import Path

from state.home import Home
from state.work.location import ledger_location


@contextlib.contextmanager
def _database(home: Home) -> Iterator[object | None]:
    location = ledger_location(home)
    if not location.postgres:
        yield None
        return
    import psycopg

    with psycopg.connect(location.url, autocommit=True) as conn:
        yield conn


def records(home: Home) -> list[str]:
    with _database(home) as db:
        if db is None:
            folder = Path(home.root) / "deliveries"
            return sorted(p.stem for p in folder.glob("whd_*.json")) if folder.exists() else []
        return [
            r[0]
            for r in db.execute(
                'SELECT delivery_id FROM deliveries ORDER BY delivery_id COLLATE "C"'
            )
        ]


def bodies(home: Home) -> dict[str, bytes]:
    with _database(home) as db:
        if db is None:
            folder = Path(home.root) / "delivery-bodies"
            if not folder.exists():
                return {}
            held = {}
            for path in sorted(folder.iterdir()):
                with contextlib.suppress(FileNotFoundError):  # purged while we list: gone
                    held[path.name.split("-")[0]] = path.read_bytes()
            return held
        return {
            r[0]: bytes(r[1])
            for r in db.execute(
                "SELECT delivery_id, body FROM delivery_bodies ORDER BY delivery_id"
            )
        }


def body_claims(home: Home) -> int:
    with _database(home) as db:
        if db is None:
            folder = Path(home.root) / "deliveries" / "by-body"
            return len(list(folder.iterdir())) if folder.exists() else 0
        return db.execute("SELECT count(*) FROM delivery_body_claims").fetchone()[0]


def age_rejection(home: Home, rejection_id: str, days: float) -> None:
    with _database(home) as db:
        if db is None:
            path = Path(home.root) / "deliveries" / "rejected" / f"{rejection_id}.json"
            stale = time.time() - days * 86400
            os.utime(path, (stale, stale))
            return
        db.execute(
            "UPDATE delivery_rejections SET received_at = received_at - "
            "make_interval(secs => %s) WHERE rejection_id = %s",
            (days * 86400, rejection_id),
        )

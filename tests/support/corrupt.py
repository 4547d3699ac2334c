"""Damaging a ledger past captain, as a bad restore, a hand edit or another program would:
SQL UPDATEs on a PostgreSQL ledger's rows (on a connection of our own, with the
append-only triggers switched off for it), or bytes written over a file ledger's files.

``ROW_DAMAGE``: what a work item's row (``work_items.item``) is set to, by name; each is a
row that does not validate. ``damage_item`` does it to one item on either ledger (on files
the item's ``item.json`` and its first event, so nothing of it folds).
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator

from state.home import Home
from state.work.location import ledger_location

# name -> SQL expression for work_items.item (``item`` is the row's own document)
ROW_DAMAGE = {
    "wrong shape": """'{"bad": true}'::jsonb""",
    "wrong type": """jsonb_set(item, '{generation}', '"two"')""",
    "another item's": """jsonb_set(item, '{work_id}', '"wrk_0000000000000000000000000"')""",
    "an attempt of the wrong shape": """jsonb_set(item, '{attempts}', '[{"bad": 1}]')""",
    "not an object": """'[1, 2, 3]'::jsonb""",
    "huge": """jsonb_build_object('pad', repeat('x', 1100000))""",
}
# name -> bytes written over the file ledger's item.json and first event
FILE_DAMAGE = {
    "wrong shape": b'{"bad": true}\n',
    "not JSON": b"{{{ not json\n",
    "not UTF-8": b'{"work_id": "\xff\xfe"}\n',
    "huge": b'{"pad": "' + b"x" * 1_100_000 + b'"}\n',
}


@contextlib.contextmanager
def database(home: Home) -> Iterator[object | None]:
    """A connection of our own to the home's ledger database (None on files), on which
    the append-only and create-once triggers do not fire."""
    location = ledger_location(home)
    if not location.postgres:
        yield None
        return
    import psycopg

    with psycopg.connect(location.url, autocommit=True) as conn:
        conn.execute("SET session_replication_role = replica")
        yield conn


def damage_item(home: Home, work_id: str, how: str) -> None:
    with database(home) as db:
        if db is not None:
            db.execute(
                f"UPDATE work_items SET item = {ROW_DAMAGE[how]} WHERE work_id = %s", (work_id,)
            )
            return
    folder = home.root / "work" / work_id
    (folder / "item.json").write_bytes(FILE_DAMAGE[how])
    (folder / "events" / "00000001.json").write_bytes(FILE_DAMAGE[how])


def damage_event(home: Home, work_id: str, seq: int) -> None:
    """An event of the wrong shape."""
    with database(home) as db:
        if db is not None:
            db.execute(
                """UPDATE work_events SET event = '{"bad": true}' """
                "WHERE work_id = %s AND seq = %s",
                (work_id, seq),
            )
            return
    (home.root / "work" / work_id / "events" / f"{seq:08d}.json").write_bytes(b'{"bad": 1}\n')


def damage_delivery(home: Home, delivery_id: str) -> None:
    """A delivery record of the wrong shape."""
    with database(home) as db:
        if db is not None:
            db.execute(
                """UPDATE deliveries SET record = '{"bad": true}' """
                "WHERE delivery_id = %s",
                (delivery_id,),
            )
            return
    (home.root / "deliveries" / f"{delivery_id}.json").write_bytes(b'{"bad": true}\n')

"""API tokens and the workspace ID in the PostgreSQL ledger's database: the shared
``TokenStore`` (``state.work.token_store``; ``state.work.tokens`` holds every rule).

Chosen by ``tokens.store_for`` when the home's work ledger is on PostgreSQL
(``backend_for``), so every home pointed at one database is one workspace with one set of
tokens: a token created through one home is accepted by all of them, and a revoke through
any is refused by all at their next request (``verify`` reads the row each time). The
tables are schema v1's (``state.work.pg_schema``): ``api_tokens`` (the SHA-256 only) and
``ledger_meta`` (one row: the workspace ID). Every statement goes through
``PostgresBackend.run`` on this thread's connection.

- **verify** is one primary-key lookup (``token_id``), on every API request.
- **create** is one INSERT; the primary key makes it create-once, and ``sha256`` is unique.
- **revoke** reads the row ``FOR UPDATE`` and writes it in one transaction
  (``PostgresBackend.transaction``), so two revokes at once keep the first one's time.
- **The workspace ID** is minted with ``INSERT … ON CONFLICT DO NOTHING`` and read back: of
  two homes' first uses at once, the second waits on the first's row and reads it, so both
  say the same ID. A read-only home only reads.

Times are captain's clock (``state.clock``), as on the files: they are for people; whether
a token is live is ``revoked_at IS NULL``, never a comparison of clocks.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from datetime import datetime, timezone
from typing import TYPE_CHECKING

from state.errors import CaptainError
from state.work.token_store import Token, Workspace

if TYPE_CHECKING:
    from state.work.pg_backend import PostgresBackend, Row

_TOKEN = "token_id, role, label, sha256, created_at, revoked_at"


def _utc(value: datetime | None) -> datetime | None:
    return None if value is None else value.astimezone(timezone.utc)


def _token(row: Row) -> Token:
    token_id, role, label, sha256, created_at, revoked_at = row
    return Token(
        token_id=token_id,
        role=role,
        label=label,
        sha256=sha256,
        created_at=_utc(created_at),
        revoked_at=_utc(revoked_at),
    )


class PostgresTokens:
    """The tokens and workspace of one PostgreSQL ledger, through its backend."""

    name = "postgresql"

    def __init__(self, backend: PostgresBackend) -> None:
        self.backend = backend
        self.run = backend.run

    def workspace(self) -> Workspace | None:
        row = self.run("SELECT workspace_id, created_at FROM ledger_meta", fetch="one")
        return None if row is None else Workspace(workspace_id=row[0], created_at=_utc(row[1]))

    def mint_workspace(self, record: Workspace) -> Workspace:
        self.run(
            "INSERT INTO ledger_meta (workspace_id, created_at) VALUES (%s, %s) "
            "ON CONFLICT DO NOTHING",
            (record.workspace_id, record.created_at),
        )
        stored = self.workspace()
        if stored is None:
            raise CaptainError("store_error", "the ledger's workspace ID could not be read back.")
        return stored

    def add(self, record: Token) -> None:
        self.run(
            f"INSERT INTO api_tokens ({_TOKEN}) VALUES (%s, %s, %s, %s, %s, %s)",
            (
                record.token_id,
                record.role,
                record.label,
                record.sha256,
                record.created_at,
                record.revoked_at,
            ),
        )

    def get(self, token_id: str) -> Token | None:
        row = self.run(
            f"SELECT {_TOKEN} FROM api_tokens WHERE token_id = %s", (token_id,), fetch="one"
        )
        return None if row is None else _token(row)

    def records(self) -> list[Token]:
        rows = self.run(
            f'SELECT {_TOKEN} FROM api_tokens ORDER BY token_id COLLATE "C"', fetch="all"
        )
        return [_token(row) for row in rows]

    @contextlib.contextmanager
    def locked(self, token_id: str) -> Iterator[None]:
        with self.backend.transaction():
            self.run("SELECT 1 FROM api_tokens WHERE token_id = %s FOR UPDATE", (token_id,))
            yield

    def replace(self, record: Token) -> None:
        self.run(
            "UPDATE api_tokens SET role = %s, label = %s, sha256 = %s, revoked_at = %s "
            "WHERE token_id = %s",
            (record.role, record.label, record.sha256, record.revoked_at, record.token_id),
        )

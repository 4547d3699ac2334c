"""API tokens' storage interface: what a token store keeps, and the home's files' one.

``state.work.tokens`` holds every rule (roles, the token's form, the constant-time compare,
revoke's idempotence, the workspace minted once and never by a read-only home) and reaches
the records only through a ``TokenStore``, which it chooses (``tokens.store_for``) where
the home's work ledger is: ``FileTokens`` here (the home's files), or
``state.work.pg_tokens.PostgresTokens`` (the ledger's database). The records' models live
here too, so neither store imports the rules.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from contextlib import AbstractContextManager
from datetime import datetime
from pathlib import Path
from typing import Protocol

from state.errors import CaptainError
from state.home import Home
from state.records import Record
from state.store import encode


class Token(Record):
    token_id: str
    role: str
    label: str | None = None
    sha256: str
    created_at: datetime
    revoked_at: datetime | None = None


class Workspace(Record):
    workspace_id: str
    created_at: datetime


class TokenStore(Protocol):
    """Where a home's tokens and workspace ID are kept: stores and fences, no rules."""

    name: str  # "files", "postgresql": the ledger's (state.work.backend)

    def workspace(self) -> Workspace | None:
        """The workspace on record, None when none was minted yet."""
        ...

    def mint_workspace(self, record: Workspace) -> Workspace:
        """Store ``record`` unless one is there (create-once), and return the stored one:
        of two first uses at once, both come away with the same ID."""
        ...

    def add(self, record: Token) -> None:
        """Store a new token, create-once under its ID."""
        ...

    def get(self, token_id: str) -> Token | None:
        """The token with this (checked) ID, None when there is none."""
        ...

    def records(self) -> list[Token]:
        """Every token, in ID order."""
        ...

    def locked(self, token_id: str) -> AbstractContextManager[None]:
        """Hold the token still while it is read and replaced (a revoke)."""
        ...

    def replace(self, record: Token) -> None:
        """Replace a token's record, inside ``locked`` (its revocation)."""
        ...


class FileTokens:
    """The home's files: ``tokens/<id>.json``, ``workspace.json`` (the store's rules)."""

    name = "files"

    def __init__(self, home: Home) -> None:
        self.home = home
        self.store = home.store

    def _path(self, token_id: str) -> Path:
        return self.store.dir("tokens") / f"{token_id}.json"

    def workspace(self) -> Workspace | None:
        return self.store.read(self.home.root / "workspace.json", Workspace)

    def mint_workspace(self, record: Workspace) -> Workspace:
        path = self.home.root / "workspace.json"
        self.store.create_once(path, encode(record), same=lambda old, new: True)
        stored = self.store.read(path, Workspace)
        if stored is None:
            raise CaptainError("store_error", "workspace.json could not be read back.")
        return stored

    def add(self, record: Token) -> None:
        self.store.create_once(self._path(record.token_id), encode(record))

    def get(self, token_id: str) -> Token | None:
        return self.store.read(self._path(token_id), Token)

    def records(self) -> list[Token]:
        return self.store.records(self.store.dir("tokens"), Token)

    @contextlib.contextmanager
    def locked(self, token_id: str) -> Iterator[None]:
        with self.store.lock("tokens"):
            yield

    def replace(self, record: Token) -> None:
        self.store.publish(self._path(record.token_id), encode(record))

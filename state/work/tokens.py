"""API tokens and the workspace a home is.

A token is shown once, at creation, and stored only as its SHA-256: ``tokens/<id>.json``
keeps the id, role, label, hash and (once revoked) when. A token reads
``cpt_<id>_<secret>``; the id finds the record, the secret is compared in constant time.
"""

from __future__ import annotations

import hashlib
import hmac
import secrets
from datetime import datetime

from state.clock import now
from state.errors import CaptainError
from state.home import Home
from state.ids import new_id
from state.models import Record
from state.store import encode
from state.work.ledger import check_name

ROLES = ("member", "manager")  # each may do what the roles before it may
PREFIX = "cpt"
WORKSPACE = "ws"


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


def workspace_id(home: Home) -> str | None:
    """This home's workspace ID, minted once (create-once) on first use; None in a
    read-only look at a home that has none yet (a read mints nothing)."""
    path = home.root / "workspace.json"
    record = home.store.read(path, Workspace)
    if record is None and home.read_only:
        return None
    if record is None:
        home.store.create_once(path, encode(Workspace(workspace_id=new_id(WORKSPACE),
                                                      created_at=now())),
                               same=lambda old, new: True)
        record = home.store.read(path, Workspace)
    if record is None:
        raise CaptainError("store_error", "workspace.json could not be read back.")
    return record.workspace_id


def _digest(secret: str) -> str:
    return hashlib.sha256(secret.encode()).hexdigest()


def _path(home: Home, token_id: str):
    return home.store.dir("tokens") / f"{token_id}.json"


def _check_id(token_id: str) -> None:
    if not (isinstance(token_id, str) and token_id.startswith("tok_") and token_id[4:].isalnum()
            and token_id.isascii() and len(token_id) <= 40):
        raise CaptainError("unknown_token", f"{token_id!r} is not a token ID (tok_...).")


def create(home: Home, role: str, label: str | None = None) -> tuple[Token, str]:
    """A new token: the record (hash only) and the one-time secret string."""
    if role not in ROLES:
        raise CaptainError("invalid_argument", f"role must be one of {', '.join(ROLES)}.")
    if label is not None:
        check_name(label, "label")  # a label is shown as part of an actor
    token_id = new_id("tok")
    secret = secrets.token_urlsafe(32)
    record = Token(token_id=token_id, role=role, label=label, sha256=_digest(secret),
                   created_at=now())
    home.store.create_once(_path(home, token_id), encode(record))
    return record, f"{PREFIX}_{token_id}_{secret}"


def records(home: Home) -> list[Token]:
    return home.store.records(home.store.dir("tokens"), Token)


def revoke(home: Home, token_id: str) -> Token:
    _check_id(token_id)
    with home.store.lock("tokens"):
        record = home.store.read(_path(home, token_id), Token)
        if record is None:
            raise CaptainError("unknown_token", f"there is no token {token_id}.")
        if record.revoked_at is None:
            record = record.model_copy(update=dict(revoked_at=now()))
            home.store.publish(_path(home, token_id), encode(record))
        return record


def verify(home: Home, presented: str) -> Token | None:
    """The live token this string is, or None (unknown, malformed, wrong, revoked)."""
    if not isinstance(presented, str) or not presented.startswith(PREFIX + "_"):
        return None
    try:
        _, tok, rest = presented.split("_", 2)
        token_id, secret = f"tok_{rest.split('_', 1)[0]}", rest.split("_", 1)[1]
    except (ValueError, IndexError):
        return None
    if tok != "tok":
        return None
    try:
        _check_id(token_id)
    except CaptainError:
        return None
    record = home.store.read(_path(home, token_id), Token)
    if record is None or record.revoked_at is not None:
        return None
    if not hmac.compare_digest(record.sha256, _digest(secret)):
        return None
    return record


def allows(record: Token, role: str) -> bool:
    return ROLES.index(record.role) >= ROLES.index(role)

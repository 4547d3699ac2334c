"""API tokens and the workspace a home is: the rules, written once, above two stores.

A token is shown once, at creation, and stored only as its SHA-256, with its id, role,
label and (once revoked) when. A token reads ``cpt_<id>_<secret>``; the id finds the record
(one read: a file, or one primary-key lookup), the secret is compared in constant time. A
revoke is idempotent (the first one's time stays). The workspace ID is minted once, on
first use; a read-only look at a home that has none mints nothing (None).

Where they are stored follows the work ledger: the token store is a part of the home's
ledger handle (``state.work.backend.handle_of``, the one place that decides), a ``TokenStore``
(``state.work.token_store``): the home's files (``FileTokens``: ``tokens/<id>.json`` and
``workspace.json``), or, when the ledger is PostgreSQL, its database
(``state.work.pg_tokens``: ``api_tokens`` and ``ledger_meta``). Every home pointed at one
database is then one workspace: a token created through one is accepted by every other,
and revoked through any is refused by all, at their next request.
"""

from __future__ import annotations

import hashlib
import hmac
import secrets
from typing import Literal, get_args

from state.clock import now
from state.errors import CaptainError
from state.home import Home
from state.ids import new_id
from state.work.ledger import check_name
from state.work.token_store import Token as Token
from state.work.token_store import TokenStore
from state.work.token_store import Workspace as Workspace

Role = Literal["member", "manager"]  # each may do what the roles before it may
ROLES: tuple[Role, ...] = get_args(Role)
PREFIX = "cpt"
WORKSPACE = "ws"


def store_for(home: Home) -> TokenStore:
    """The home's token store: a part of its ledger handle (``handle_of``)."""
    from state.work.backend import handle_of

    return handle_of(home).tokens


def workspace_id(home: Home) -> str | None:
    """This home's workspace ID, minted once (create-once) on first use; None in a
    read-only look at a home that has none yet (a read mints nothing)."""
    store = store_for(home)
    record = store.workspace()
    if record is None and home.read_only:
        return None
    if record is None:
        record = store.mint_workspace(Workspace(workspace_id=new_id(WORKSPACE), created_at=now()))
    return record.workspace_id


def _digest(secret: str) -> str:
    return hashlib.sha256(secret.encode()).hexdigest()


def _check_id(token_id: str) -> None:
    if not (
        isinstance(token_id, str)
        and token_id.startswith("tok_")
        and token_id[4:].isalnum()
        and token_id.isascii()
        and len(token_id) <= 40
    ):
        raise CaptainError("unknown_token", f"{token_id!r} is not a token ID (tok_...).")


def create(home: Home, role: str, label: str | None = None) -> tuple[Token, str]:
    """A new token: the record (hash only) and the one-time secret string."""
    if role not in ROLES:
        raise CaptainError("invalid_argument", f"role must be one of {', '.join(ROLES)}.")
    if label is not None:
        check_name(label, "label")  # a label is shown as part of an actor
    token_id = new_id("tok")
    secret = secrets.token_urlsafe(32)
    record = Token(
        token_id=token_id, role=role, label=label, sha256=_digest(secret), created_at=now()
    )
    store_for(home).add(record)
    return record, f"{PREFIX}_{token_id}_{secret}"


def records(home: Home) -> list[Token]:
    return store_for(home).records()


def revoke(home: Home, token_id: str) -> Token:
    _check_id(token_id)
    store = store_for(home)
    with store.locked(token_id):
        record = store.get(token_id)
        if record is None:
            raise CaptainError("unknown_token", f"there is no token {token_id}.")
        if record.revoked_at is None:
            record = record.model_copy(update=dict(revoked_at=now()))
            store.replace(record)
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
    record = store_for(home).get(token_id)
    if record is None or record.revoked_at is not None:
        return None
    if not hmac.compare_digest(record.sha256, _digest(secret)):
        return None
    return record


def allows(record: Token, role: str) -> bool:
    return ROLES.index(record.role) >= ROLES.index(role)

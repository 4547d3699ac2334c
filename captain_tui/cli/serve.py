"""``captain serve`` and ``captain tokens ...``: the ledger's HTTP door and its keys."""

from __future__ import annotations

import sys
from typing import TYPE_CHECKING

from captain_tui.cli.args import captain_only, home_of

if TYPE_CHECKING:
    pass


def cmd_serve(args, out) -> int:
    from captain_tui.api import server

    captain_only("serve")
    home = home_of(args)
    home.config()  # invalid_config: refused before a port is bound

    def announce(host: str, port: int, workspace: str, remote: bool) -> None:
        if remote:
            print(
                f"captain: warning: serving on {host}, which is not loopback: anyone who "
                "can reach it may try tokens. Prefer a reverse proxy with TLS.",
                file=sys.stderr,
                flush=True,
            )
        shown = f"[{host}]" if ":" in host else host
        out.ok(
            {"url": f"http://{shown}:{port}", "workspace_id": workspace},
            f"Serving workspace {workspace} on http://{shown}:{port} "
            "(the API is under /api, webhooks under /hooks; ctrl+c stops).",
        )

    return server.serve(
        home,
        args.host,
        args.port,
        allow_remote=args.allow_remote,
        announce=announce,
        max_connections=args.max_connections,
        head_timeout=args.head_timeout,
        body_timeout=args.body_timeout,
    )


def cmd_tokens_create(args, out) -> int:
    from state.work import tokens

    captain_only("tokens create")
    home = home_of(args)
    record, secret = tokens.create(home, args.role, args.label)
    shared = _shared_ledger(home)
    where = (
        f" in the PostgreSQL ledger at {shared}, where every home on it accepts it"
        if shared
        else ""
    )
    out.ok(
        {"token": secret, "token_id": record.token_id, "role": record.role},
        f"{secret}\n\nThis is the only time the token is shown; it is stored hashed"
        f"{where}. Token {record.token_id}, role {record.role}. Send it as "
        "'Authorization: Bearer <token>'.",
    )
    return 0


def cmd_tokens_list(args, out) -> int:
    from state.work import tokens

    captain_only("tokens list")
    home = home_of(args)
    rows = [r.model_dump(mode="json", exclude={"schema_", "sha256"}) for r in tokens.records(home)]
    shared = _shared_ledger(home)
    where = f"in the PostgreSQL ledger at {shared}, shared by every home on it" if shared else ""
    if not rows:
        out.ok(
            {"tokens": []},
            "No tokens yet: captain tokens create --role manager|member"
            + (f"\n(Tokens are kept {where}.)" if shared else ""),
        )
        return 0
    lines = [
        f"{r['token_id']}  {r['role']:<7}  created {r['created_at'][:19]}  "
        + (f"REVOKED {r['revoked_at'][:19]}" if r["revoked_at"] else "live")
        + (f"  {r['label']}" if r["label"] else "")
        for r in rows
    ]
    if shared:
        lines.append(f"(Kept {where}.)")
    out.ok({"tokens": rows}, "\n".join(lines))
    return 0


def cmd_tokens_revoke(args, out) -> int:
    from state.work import tokens

    captain_only("tokens revoke")
    home = home_of(args)
    record = tokens.revoke(home, args.token_id)
    assert record.revoked_at is not None  # revoke's record is revoked
    shared = _shared_ledger(home)
    who = (
        f"every home on the PostgreSQL ledger at {shared} refuses it" if shared else "it is refused"
    )
    out.ok(
        {"token_id": record.token_id, "revoked_at": record.revoked_at.isoformat()},
        f"Revoked {record.token_id}; {who} from now on.",
    )
    return 0


def _shared_ledger(home) -> str | None:
    """The PostgreSQL ledger that keeps the home's tokens (its URL, the password redacted),
    shared by every home on it; None when they are in the home's files."""
    from state.work.backend import handle_of

    location = handle_of(home).location
    return location.shown if location.postgres else None


def _port(text: str) -> int:
    import argparse

    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a port number") from None
    if not 0 <= value <= 65535:
        raise argparse.ArgumentTypeError(f"{text!r} is not a port number (0-65535)")
    return value


def _count(text: str) -> int:
    import argparse

    if not (text.isascii() and text.isdigit()) or not 1 <= int(text) <= 100_000:
        raise argparse.ArgumentTypeError(f"{text!r} is not a number from 1 to 100000")
    return int(text)


def _seconds(text: str) -> float:
    import argparse
    import math

    try:
        value = float(text)
    except ValueError:
        value = math.nan
    if not 0.1 <= value <= 3600:  # also refuses nan and inf
        raise argparse.ArgumentTypeError(f"{text!r} is not a number of seconds from 0.1 to 3600")
    return value


def add_commands(sub, common, parser_class, **wanted) -> None:
    # wanted (main's only, inner): few parsers here, all built
    from captain_tui.api import limits

    p = sub.add_parser(
        "serve",
        parents=[common],
        help="Serve the work ledger over HTTP, and the webhook door.",
        description="Serve the work ledger over HTTP (FastAPI; OpenAPI at "
        "/openapi.json) and the webhook door at /hooks/ENDPOINT. "
        "Loopback only unless --allow-remote. While it runs, raw "
        "webhook bodies past their retention_days are purged (at "
        "start, then every 5 minutes).",
    )
    p.set_defaults(func=cmd_serve)
    p.add_argument("--host", default="127.0.0.1", help="default 127.0.0.1")
    p.add_argument("--port", type=_port, default=8765, help="default 8765; 0 picks a free one")
    p.add_argument(
        "--allow-remote", action="store_true", help="allow a non-loopback --host (prints a warning)"
    )
    p.add_argument(
        "--max-connections",
        type=_count,
        default=limits.MAX_CONNECTIONS,
        metavar="N",
        help=f"open connections at most (default "
        f"{limits.MAX_CONNECTIONS}); past it, the client that "
        "has owed bytes longest is disconnected",
    )
    p.add_argument(
        "--head-timeout",
        type=_seconds,
        default=limits.HEAD_TIMEOUT,
        metavar="SECONDS",
        help=f"time a client has to send a request's headers (default {limits.HEAD_TIMEOUT:g})",
    )
    p.add_argument(
        "--body-timeout",
        type=_seconds,
        default=limits.BODY_TIMEOUT,
        metavar="SECONDS",
        help=f"time a client has to send a request's body (default {limits.BODY_TIMEOUT:g})",
    )

    t = sub.add_parser(
        "tokens",
        help="API tokens: create (shown once), list, revoke.",
        description="API tokens: create (shown once, stored hashed), list, "
        "revoke. Members read; managers may also cancel, replay "
        "and resolve.",
    )
    inner = t.add_subparsers(
        dest="tokens_command", metavar="COMMAND", required=True, parser_class=parser_class
    )
    p = inner.add_parser("create", parents=[common], help="Create a token; it is printed once.")
    p.set_defaults(func=cmd_tokens_create)
    p.add_argument("--role", required=True, choices=("manager", "member"))
    p.add_argument("--label", metavar="TEXT", help="who or what it is for")
    p = inner.add_parser("list", parents=[common], help="List tokens (never their secrets).")
    p.set_defaults(func=cmd_tokens_list)
    p = inner.add_parser("revoke", parents=[common], help="Revoke a token by its ID.")
    p.set_defaults(func=cmd_tokens_revoke)
    p.add_argument("token_id", metavar="TOKEN_ID")

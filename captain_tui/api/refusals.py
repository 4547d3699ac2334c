"""How ``captain serve`` refuses: the one error body, and the status each refusal code gets.

Every refusal is ``{"error": {"code", "message"}}`` with a code from ``state.errors.CODES``,
whether it comes from a route, from the guard on request bodies (``intake``) or from the
connection guard (``doorman``), which writes its 408 before any app runs.

A refusal that says the ledger or the home cannot be reached (``UNAVAILABLE``) is a 503
with its stable code and one fixed sentence, whoever asks, token or not: its own message
names infrastructure (a database's user, host, port and name, a path in the home), so that
goes to the server's log as one line, never to the client.
"""

from __future__ import annotations

import json
import logging

from fastapi.responses import JSONResponse

from state.errors import CODES, CaptainError

STATUS = {
    "unknown_work": 404,
    "unknown_delivery": 404,
    "unknown_workspace": 404,
    "unknown_endpoint": 404,
    "not_found": 404,
    "invalid_filter": 400,
    "invalid_argument": 400,
    "evidence_required": 400,
    "invalid_text": 400,
    "unauthorized": 401,
    "bad_signature": 401,
    "forbidden": 403,
    "method_not_allowed": 405,
    "request_timeout": 408,
    "stale_generation": 409,
    "not_finished": 409,
    "payload_expired": 409,
    "not_reconciling": 409,
    "delivery_conflict": 409,
    "not_running": 409,
    "not_queued": 409,
    "no_capacity": 409,
    "message_conflict": 409,
    "routine_receipt": 409,
    "message_too_large": 413,
    # one stored record does not validate: the server's data, not the request, is at fault,
    # and asking again will not help (docs/api.md, "Errors")
    "ledger_corrupt": 500,
    "invalid_config": 503,  # config.toml holds a value out of range: docs/api.md
}
# the ledger or the home is unreachable or unusable: the client learns the code, no more
UNAVAILABLE = frozenset(
    {
        "store_error",
        "ledger_unreachable",
        "ledger_error",
        "ledger_not_migrated",
        "ledger_schema_newer",
        "postgres_not_installed",
        "invalid_ledger_url",
        "ledger_not_imported",
    }
)
STATUS.update(dict.fromkeys(UNAVAILABLE, 503))
UNAVAILABLE_MESSAGE = "the ledger is unavailable right now; nothing was done. Try again later."
log = logging.getLogger("uvicorn.error")  # serve's log (stderr), as uvicorn configures it


def payload(code: str, message: str) -> dict:
    if code not in CODES:  # only stable codes ever leave
        raise ValueError(f"{code!r} is not a stable refusal code")
    return {"error": {"code": code, "message": message}}


def body(code: str, message: str) -> bytes:
    return json.dumps(payload(code, message)).encode()


def error(status: int, code: str, message: str) -> JSONResponse:
    return JSONResponse(payload(code, message), status_code=status)


def refuse(err: CaptainError, status: int | None = None) -> JSONResponse:
    if err.code in UNAVAILABLE:
        log.warning(
            "captain serve: answered 503 %s: %s", err.code, " ".join(err.message.split())
        )  # one line, whatever the message held
        return error(503, err.code, UNAVAILABLE_MESSAGE)
    response = error(status or STATUS.get(err.code, 500), err.code, err.message)
    if err.code == "unauthorized":
        response.headers["WWW-Authenticate"] = "Bearer"
    return response

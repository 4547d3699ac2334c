"""``captain serve``: the work ledger over HTTP, and the webhook door.

Every route calls what the CLI calls (``runtime.ops`` for cancel, replay and resolve;
``state.work.ledger`` / ``state.work.deliveries`` to read and record): no rule lives here,
only the mapping of refusal codes to status codes, authentication, and which fields may
leave (``schemas``). docs/api.md shows a curl session per route.
"""


import hashlib
import hmac
import time
from typing import Annotated

from fastapi import Depends, FastAPI, Query, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from fastapi.security import HTTPAuthorizationCredentials, HTTPBearer
from starlette.exceptions import HTTPException as StarletteHTTPException

from captain_tui.api import schemas as out
from captain_tui.runtime import ops
from state.errors import CaptainError
from state.home import Home
from state.work import deliveries, ledger, tokens

STATUS = {
    "unknown_work": 404, "unknown_delivery": 404, "unknown_workspace": 404,
    "unknown_endpoint": 404,
    "invalid_filter": 400, "invalid_argument": 400, "evidence_required": 400,
    "invalid_text": 400,
    "message_too_large": 413,
    "unauthorized": 401, "bad_signature": 401, "forbidden": 403,
    "stale_generation": 409, "not_finished": 409, "payload_expired": 409,
    "not_reconciling": 409, "delivery_conflict": 409, "not_running": 409,
    "not_queued": 409, "no_capacity": 409,
    "store_error": 503,
}
SIGNATURE_TOLERANCE = 300  # seconds a captain-style signature's timestamp may be off
ERRORS = {code: {"model": out.ErrorOut} for code in (400, 401, 403, 404, 409, 503)}

bearer = HTTPBearer(auto_error=False, description="A token from `captain tokens create`.")


def _error(status: int, code: str, message: str) -> JSONResponse:
    return JSONResponse({"error": {"code": code, "message": message}}, status_code=status)


def _refuse(err: CaptainError) -> JSONResponse:
    headers = {"WWW-Authenticate": "Bearer"} if err.code == "unauthorized" else None
    response = _error(STATUS.get(err.code, 500), err.code, err.message)
    if headers:
        response.headers.update(headers)
    return response


def build_app(home: Home) -> FastAPI:
    workspace = tokens.workspace_id(home)
    app = FastAPI(title="captain", version="1",
                  description="The work ledger of one captain home (one workspace).")

    def document() -> dict:
        # validation answers 400 with the error body (on_invalid), never FastAPI's 422
        if app.openapi_schema is None:
            schema = FastAPI.openapi(app)
            for operations in schema["paths"].values():
                for operation in operations.values():
                    operation["responses"].pop("422", None)
            for name in ("HTTPValidationError", "ValidationError"):
                schema.get("components", {}).get("schemas", {}).pop(name, None)
        return app.openapi_schema

    app.openapi = document

    @app.exception_handler(CaptainError)
    async def on_refusal(_: Request, err: CaptainError):
        return _refuse(err)

    @app.exception_handler(RequestValidationError)
    async def on_invalid(_: Request, exc: RequestValidationError):
        first = exc.errors()[0] if exc.errors() else {}
        where = ".".join(str(p) for p in first.get("loc", ()) if p != "body") or "request"
        code = "invalid_filter" if first.get("loc", ("",))[0] == "query" else "invalid_argument"
        return _error(400, code, f"{where}: {first.get('msg', 'is not valid')}")

    @app.exception_handler(StarletteHTTPException)
    async def on_http(_: Request, exc: StarletteHTTPException):
        code = {404: "not_found", 405: "method_not_allowed"}.get(exc.status_code, "http_error")
        response = _error(exc.status_code, code, str(exc.detail))
        response.headers.update(exc.headers or {})  # a 405 keeps its Allow header
        return response

    def caller(credentials: Annotated[HTTPAuthorizationCredentials | None,
                                      Depends(bearer)]) -> tokens.Token:
        record = tokens.verify(home, credentials.credentials) if credentials else None
        if record is None:
            raise CaptainError("unauthorized", "a valid, unrevoked token is required "
                                               "(Authorization: Bearer ...).")
        return record

    def member(workspaceId: str, who: Annotated[tokens.Token, Depends(caller)]) -> tokens.Token:
        # another workspace's anything answers 404, never 403: no confirmation it exists
        if workspaceId != workspace:
            raise CaptainError("unknown_workspace", "there is no such workspace.")
        return who

    def manager(who: Annotated[tokens.Token, Depends(member)]) -> tokens.Token:
        if not tokens.allows(who, "manager"):
            raise CaptainError("forbidden", "this route needs a manager token.")
        return who

    Member = Annotated[tokens.Token, Depends(member)]
    Manager = Annotated[tokens.Token, Depends(manager)]
    base = "/api/workspaces/{workspaceId}"

    @app.get("/api/workspaces", response_model=out.Workspaces, responses=ERRORS)
    def list_workspaces(who: Annotated[tokens.Token, Depends(caller)]):
        return {"workspaces": [{"workspace_id": workspace, "role": who.role}]}

    @app.get(base + "/work", response_model=out.WorkPage, responses=ERRORS)
    def list_work(who: Member, request: Request, state: str | None = None,
                  source: str | None = None,
                  limit: Annotated[int, Query(ge=1, le=ledger.PAGE_MAX)] = 50,
                  after: str | None = None):
        _known_query(request, "state", "source", "limit", "after")
        items, cursor = ledger.page(home, state=state, source=source, limit=limit, after=after)
        return {"items": [ledger.public(home, i) for i in items], "next_cursor": cursor}

    @app.get(base + "/work/{workId}", response_model=out.WorkItemDetail, responses=ERRORS)
    def show_work(who: Member, workId: str):
        return ledger.public(home, ledger.get(home, _work_id(workId)), detail=True)

    @app.post(base + "/work/{workId}/cancel", response_model=out.CancelOut, responses=ERRORS)
    def cancel_work(who: Manager, workId: str, body: out.CancelBody | None = None):
        c = ops.cancel(home, _work_id(workId), actor=_actor(who),
                       reason=body.reason if body else None)
        item = ledger.public(home, c.item)
        return {"item": item, "state": item["state"], "outcome": c.outcome,
                "dismissed": c.dismissal.as_json() if c.dismissal else None}

    @app.post(base + "/work/{workId}/replay", response_model=out.WorkItem, status_code=201,
              responses=ERRORS)
    def replay_work(who: Manager, workId: str, body: out.ReplayBody):
        item = ops.replay(home, _work_id(workId), actor=_actor(who), reason=body.reason,
                          target_revision=body.target_revision)
        return ledger.public(home, item)

    @app.post(base + "/work/{workId}/resolve", response_model=out.WorkItem, responses=ERRORS)
    def resolve_work(who: Manager, workId: str, body: out.ResolveBody):
        item = ops.resolve(home, _work_id(workId), generation=body.generation, to=body.to,
                           reason=body.reason, actor=_actor(who),
                           runtime_stopped=body.runtime_stopped)
        return ledger.public(home, item)

    @app.get(base + "/deliveries", response_model=out.DeliveryPage, responses=ERRORS)
    def list_deliveries(who: Member, request: Request, endpoint_id: str | None = None,
                        source_delivery_id: str | None = None,
                        limit: Annotated[int, Query(ge=1, le=ledger.PAGE_MAX)] = 50,
                        after: str | None = None):
        _known_query(request, "endpoint_id", "source_delivery_id", "limit", "after")
        records, cursor = deliveries.page(home, endpoint_id=endpoint_id,
                                          source_delivery_id=source_delivery_id, limit=limit,
                                          after=after)
        return {"deliveries": [deliveries.public(home, r) for r in records],
                "next_cursor": cursor}

    @app.get(base + "/deliveries/{deliveryId}", response_model=out.Delivery, responses=ERRORS)
    def show_delivery(who: Member, deliveryId: str):
        return deliveries.public(home, deliveries.get(home, deliveryId))

    @app.post("/hooks/{endpoint_id}", response_model=out.Receipt, status_code=202,
              responses={**ERRORS, 200: {"model": out.Receipt}, 413: {"model": out.ErrorOut}})
    async def webhook(endpoint_id: str, request: Request):
        body = await request.body()
        return await _door(home, endpoint_id, request, body)

    return app


def _known_query(request: Request, *names: str) -> None:
    """A misspelt filter (``?stat=running``) or a repeated one (``?state=a&state=b``, which
    would silently mean only the last) is a 400, never a page that answers something else."""
    params = request.query_params
    unknown = sorted(set(params) - set(names))
    if unknown:
        raise CaptainError("invalid_filter", f"{unknown[0]!r} is not a parameter here "
                                             f"(known: {', '.join(names)}).")
    repeated = sorted(name for name in set(params) if len(params.getlist(name)) > 1)
    if repeated:
        raise CaptainError("invalid_filter", f"{repeated[0]} is given more than once; each "
                                             "parameter takes one value.")


def _work_id(text: str) -> str:
    try:
        return ledger.check_work_id(text)
    except CaptainError:
        raise CaptainError("unknown_work", "there is no such work item.") from None


def _actor(who: tokens.Token) -> str:
    return f"token:{who.token_id}" + (f" ({who.label})" if who.label else "")


# -- the webhook door -------------------------------------------------------------------------


def _signed(config: dict, headers, body: bytes) -> tuple[bool, str | None, str | None, str]:
    """(valid, source delivery id, event, why not) for the endpoint's signature scheme."""
    secret = config.get("secret")
    scheme = config.get("signature", "github")
    if scheme == "github":
        given = headers.get("x-hub-signature-256", "")
        expected = "sha256=" + hmac.new(secret.encode(), body, hashlib.sha256).hexdigest()
        ok = hmac.compare_digest(given.encode(), expected.encode())
        return ok, headers.get("x-github-delivery"), headers.get("x-github-event"), \
            "X-Hub-Signature-256 does not match the body"
    # captain: X-Captain-Signature: t=<unix seconds>,v1=<hex HMAC-SHA256 of "t." + body>
    parts = dict(p.split("=", 1) for p in headers.get("x-captain-signature", "").split(",")
                 if "=" in p)
    stamp = parts.get("t", "")
    ok = stamp.isdigit() and abs(time.time() - int(stamp)) <= SIGNATURE_TOLERANCE
    if ok:
        expected = hmac.new(secret.encode(), stamp.encode() + b"." + body,
                            hashlib.sha256).hexdigest()
        ok = hmac.compare_digest(parts.get("v1", "").encode(), expected.encode())
    return ok, headers.get("x-captain-delivery"), headers.get("x-captain-event"), \
        "X-Captain-Signature is missing, stale or does not match the body"


async def _door(home: Home, endpoint_id: str, request: Request, body: bytes):
    import asyncio

    try:
        config = deliveries.endpoint(home, endpoint_id)
    except CaptainError:
        return _error(404, "unknown_endpoint", "there is no such endpoint.")
    if not isinstance(config.get("secret"), str) or not config["secret"]:
        # an endpoint without a secret takes no deliveries over the network
        return _error(404, "unknown_endpoint", "there is no such endpoint.")
    if len(body) > deliveries.MAX_BODY_BYTES:
        return _error(413, "message_too_large", "the body is larger than an endpoint accepts.")
    ok, source_id, event, why = _signed(config, request.headers, body)

    def record():
        if not ok:
            deliveries.reject(home, endpoint_id, source_id, body, f"bad signature: {why}",
                              event=event)
            return _error(401, "bad_signature", f"{why}; the delivery was recorded as "
                                                "rejected and nothing was dispatched.")
        if not source_id:
            deliveries.reject(home, endpoint_id, None, body, "no delivery id header",
                              event=event)
            return _error(400, "invalid_argument", "the delivery id header is missing.")
        try:
            intake = deliveries.ingest(home, endpoint_id, source_id, body, event=event)
        except CaptainError as err:
            return _refuse(err)
        receipt = {"delivery_id": intake.delivery.delivery_id, "duplicate": intake.duplicate}
        # the answer comes only now: the record (and its work item) is durable
        return JSONResponse(receipt, status_code=200 if intake.duplicate else 202)

    return await asyncio.to_thread(record)


# -- running it -------------------------------------------------------------------------------

LOOPBACK = ("127.0.0.1", "::1", "localhost")


def serve(home: Home, host: str, port: int, *, allow_remote: bool, announce) -> int:
    import socket

    import uvicorn

    if host not in LOOPBACK and not allow_remote:
        raise CaptainError("invalid_argument",
                           f"{host} is not a loopback address; binding there exposes the "
                           "ledger to the network. Pass --allow-remote if you mean it.")
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        sock.bind((host, port))
    except OSError as exc:
        sock.close()
        raise CaptainError("invalid_argument", f"cannot listen on {host}:{port}: "
                                               f"{exc.strerror or exc}.") from None
    sock.listen(128)
    actual = sock.getsockname()[1]
    app = build_app(home)
    announce(host, actual, tokens.workspace_id(home), host not in LOOPBACK)
    config = uvicorn.Config(app, log_level="warning", access_log=False, lifespan="off")
    uvicorn.Server(config).run(sockets=[sock])
    return 0

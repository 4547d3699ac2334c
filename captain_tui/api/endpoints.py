"""``captain serve``'s routes: the work ledger over HTTP, and the webhook door.

Every route calls what the CLI calls (``captain_tui.usecases`` for cancel, replay and resolve;
``state.work.ledger`` / ``state.work.deliveries`` to read and record): no rule lives here,
only authentication, the order of refusals, and which fields may leave (``schemas``).
``refusals`` maps codes to statuses, ``signatures`` judges the door's signatures, ``intake``
and ``doorman`` bound what a client may send and hold, ``server`` runs it all on uvicorn.
docs/api.md shows a curl session per route.
"""

import asyncio
from collections.abc import Sequence
from typing import Annotated, Any

from fastapi import Depends, FastAPI, Query, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from fastapi.security import HTTPAuthorizationCredentials, HTTPBearer
from pydantic import BaseModel, ValidationError
from starlette.concurrency import run_in_threadpool
from starlette.datastructures import Headers
from starlette.exceptions import HTTPException as StarletteHTTPException
from starlette.requests import ClientDisconnect

from captain_tui import usecases as ops
from captain_tui.api import limits, signatures
from captain_tui.api import schemas as out
from captain_tui.api.refusals import error, refuse
from state.crew.guards import CAPTAIN
from state.errors import CaptainError
from state.home import Home
from state.work import deliveries, ledger, tokens

ERRORS: dict[int | str, dict[str, Any]] = {
    code: {"model": out.ErrorOut} for code in (400, 401, 403, 404, 409, 503)
}
BODY_ERRORS: dict[int | str, dict[str, Any]] = {
    **ERRORS,
    408: {"model": out.ErrorOut},
    413: {"model": out.ErrorOut},
}
BODIES = (out.CancelBody, out.ReplayBody, out.ResolveBody)

bearer = HTTPBearer(auto_error=False, description="A token from `captain tokens create`.")


def body_limit(path: str) -> int:
    """The most a route reads of a body (intake enforces it while the body streams)."""
    return deliveries.MAX_BODY_BYTES if path.startswith("/hooks/") else limits.API_BODY_BYTES


def body_before_auth(path: str) -> bool:
    """Whether a route reads its body before the sender is authenticated: the webhook
    door's signature covers the body (intake bounds how many such bodies are read at once);
    every /api route reads a body only after its token."""
    return path.startswith("/hooks/")


def _first_error(errors: Sequence[Any], default: str = "request") -> str:
    """One validation error as a sentence: where (a field path), then what."""
    first = errors[0] if errors else {}
    where = ".".join(str(p) for p in first.get("loc", ()) if p != "body") or default
    return f"{where}: {first.get('msg', 'is not valid')}"


def _request_body(model: type[BaseModel], *, optional: bool = False) -> dict:
    """The OpenAPI entry of a body the route parses itself (``_body``)."""
    ref = {"$ref": f"#/components/schemas/{model.__name__}"}
    schema = {"anyOf": [ref, {"type": "null"}], "title": "Body"} if optional else ref
    return {
        "requestBody": {
            "required": not optional,
            "content": {"application/json": {"schema": schema}},
        }
    }


UNAUTHORIZED = ("unauthorized", "a valid, unrevoked token is required (Authorization: Bearer ...).")


def _bearer(value: str | None) -> str | None:
    """The credential of an ``Authorization: Bearer <credential>`` header (HTTPBearer's
    reading of it), or None."""
    scheme, _, credential = (value or "").partition(" ")
    return credential if scheme.lower() == "bearer" and credential else None


class TokenFirst:
    """Under ``/api`` the token is checked before anything else: before routing, so a
    client without a valid one learns nothing of which routes exist (no 404 against 401,
    no 405, no trailing-slash redirect), and before a byte of any body. The record it
    finds is handed to the routes in ``scope["state"]`` (``caller``), checked once."""

    def __init__(self, app, home: Home) -> None:
        self.app = app
        self.home = home

    async def __call__(self, scope, receive, send) -> None:
        path = scope.get("path", "")
        if scope["type"] == "http" and (path == "/api" or path.startswith("/api/")):
            credential = _bearer(Headers(scope=scope).get("authorization"))
            try:
                record = (
                    await run_in_threadpool(tokens.verify, self.home, credential)
                    if credential
                    else None
                )
            except CaptainError as err:  # the ledger is unreachable: 503, the code only
                return await refuse(err)(scope, receive, send)
            if record is None:
                return await refuse(CaptainError(*UNAUTHORIZED))(scope, receive, send)
            scope.setdefault("state", {})[TOKEN_KEY] = record
        await self.app(scope, receive, send)


TOKEN_KEY = "captain_token"


def build_app(home: Home) -> TokenFirst:
    """The API: FastAPI's routes behind ``TokenFirst``."""
    return TokenFirst(_routes(home), home)


def _routes(home: Home) -> FastAPI:
    workspace = tokens.workspace_id(home)
    # no trailing-slash redirects: /work/ is not /work (a 404, after the token)
    app = FastAPI(
        title="captain",
        version="1",
        redirect_slashes=False,
        description="The work ledger of one captain home (one workspace).",
    )

    def document() -> dict[str, Any]:
        # validation answers 400 with the error body (on_invalid), never FastAPI's 422; the
        # bodies the routes parse themselves (_body) are declared here
        schema = app.openapi_schema
        if schema is None:
            schema = FastAPI.openapi(app)  # made once: FastAPI keeps it as app.openapi_schema
            for operations in schema["paths"].values():
                for operation in operations.values():
                    operation["responses"].pop("422", None)
            models = schema.setdefault("components", {}).setdefault("schemas", {})
            for name in ("HTTPValidationError", "ValidationError"):
                models.pop(name, None)
            for model in BODIES:
                models[model.__name__] = model.model_json_schema(
                    ref_template="#/components/schemas/{model}"
                )
        return schema

    app.openapi = document  # type: ignore[method-assign]  # FastAPI's way to amend its schema

    @app.exception_handler(CaptainError)
    async def on_refusal(_: Request, err: CaptainError):
        return refuse(err)

    @app.exception_handler(RequestValidationError)
    async def on_invalid(_: Request, exc: RequestValidationError):
        first = exc.errors()[0] if exc.errors() else {}
        code = "invalid_filter" if first.get("loc", ("",))[0] == "query" else "invalid_argument"
        return error(400, code, _first_error(exc.errors()))

    @app.exception_handler(StarletteHTTPException)
    async def on_http(_: Request, exc: StarletteHTTPException):
        code = {404: "not_found", 405: "method_not_allowed"}.get(
            exc.status_code, "invalid_argument"
        )
        response = error(exc.status_code, code, str(exc.detail))
        response.headers.update(exc.headers or {})  # a 405 keeps its Allow header
        return response

    @app.exception_handler(ClientDisconnect)
    async def on_gone(_: Request, exc: ClientDisconnect):
        return error(400, "invalid_argument", "the client left before its body arrived.")

    @app.exception_handler(Exception)
    async def on_failure(_: Request, exc: Exception):
        # never a traceback or a plain-text page: the server log has the details
        return error(
            500,
            "internal_error",
            "the server failed to answer this request; nothing about it is in this reply.",
        )

    def caller(
        request: Request,
        credentials: Annotated[HTTPAuthorizationCredentials | None, Depends(bearer)],
    ) -> tokens.Token:
        # TokenFirst checked it already (``bearer`` stays for the OpenAPI document)
        record = request.scope.get("state", {}).get(TOKEN_KEY)
        if record is None:
            raise CaptainError(*UNAUTHORIZED)
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

    def _body(model: type[BaseModel], *, optional: bool = False):
        """The JSON body, read only once the token, the workspace and the role passed: a
        request without a valid token is 401 whatever its body (FastAPI would parse a
        declared body first)."""

        async def parse(who: Manager, request: Request):
            raw = await request.body()  # bounded in size and time by intake
            if optional and raw.strip() in (b"", b"null"):
                return None
            try:
                return model.model_validate_json(raw)
            except ValidationError as exc:
                raise CaptainError("invalid_argument", _first_error(exc.errors())) from None

        return Depends(parse)

    base = "/api/workspaces/{workspaceId}"

    @app.get("/api/workspaces", response_model=out.Workspaces, responses=ERRORS)
    def list_workspaces(who: Annotated[tokens.Token, Depends(caller)]):
        return {"workspaces": [{"workspace_id": workspace, "role": who.role}]}

    @app.get(base + "/work", response_model=out.WorkPage, responses=ERRORS)
    def list_work(
        who: Member,
        request: Request,
        state: str | None = None,
        source: str | None = None,
        limit: Annotated[int, Query(ge=1, le=ledger.PAGE_MAX)] = 50,
        after: str | None = None,
    ):
        _known_query(request, "state", "source", "limit", "after")
        items, cursor = ledger.page(home, state=state, source=source, limit=limit, after=after)
        return {"items": [ledger.public(home, i) for i in items], "next_cursor": cursor}

    @app.get(base + "/work/{workId}", response_model=out.WorkItemDetail, responses=ERRORS)
    def show_work(who: Member, workId: str):
        return ledger.public(home, ledger.get(home, _work_id(workId)), detail=True)

    @app.post(
        base + "/work/{workId}/cancel",
        response_model=out.CancelOut,
        responses=BODY_ERRORS,
        openapi_extra=_request_body(out.CancelBody, optional=True),
    )
    def cancel_work(
        who: Manager,
        workId: str,
        body: Annotated[out.CancelBody | None, _body(out.CancelBody, optional=True)],
    ):
        # the server is the captain's (``captain serve`` refuses a crew process); the
        # token's holder is the actor on the record
        c = ops.cancel(
            home,
            _work_id(workId),
            actor=_actor(who),
            reason=body.reason if body else None,
            ctx=CAPTAIN,
        )
        item = ledger.public(home, c.item)
        return {
            "item": item,
            "state": item["state"],
            "outcome": c.outcome,
            "dismissed": c.dismissal.as_json() if c.dismissal else None,
        }

    @app.post(
        base + "/work/{workId}/replay",
        response_model=out.WorkItem,
        status_code=201,
        responses=BODY_ERRORS,
        openapi_extra=_request_body(out.ReplayBody),
    )
    def replay_work(
        who: Manager, workId: str, body: Annotated[out.ReplayBody, _body(out.ReplayBody)]
    ):
        item = ops.replay(
            home,
            _work_id(workId),
            actor=_actor(who),
            reason=body.reason,
            target_revision=body.target_revision,
            ctx=CAPTAIN,
        )
        return ledger.public(home, item)

    @app.post(
        base + "/work/{workId}/resolve",
        response_model=out.WorkItem,
        responses=BODY_ERRORS,
        openapi_extra=_request_body(out.ResolveBody),
    )
    def resolve_work(
        who: Manager, workId: str, body: Annotated[out.ResolveBody, _body(out.ResolveBody)]
    ):
        item = ops.resolve(
            home,
            _work_id(workId),
            generation=body.generation,
            to=body.to,
            reason=body.reason,
            actor=_actor(who),
            runtime_stopped=body.runtime_stopped,
            ctx=CAPTAIN,
        )
        return ledger.public(home, item)

    @app.get(base + "/deliveries", response_model=out.DeliveryPage, responses=ERRORS)
    def list_deliveries(
        who: Member,
        request: Request,
        endpoint_id: str | None = None,
        source_delivery_id: str | None = None,
        limit: Annotated[int, Query(ge=1, le=ledger.PAGE_MAX)] = 50,
        after: str | None = None,
    ):
        _known_query(request, "endpoint_id", "source_delivery_id", "limit", "after")
        records, cursor = deliveries.page(
            home,
            endpoint_id=endpoint_id,
            source_delivery_id=source_delivery_id,
            limit=limit,
            after=after,
        )
        return {"deliveries": [deliveries.public(home, r) for r in records], "next_cursor": cursor}

    @app.get(base + "/deliveries/{deliveryId}", response_model=out.Delivery, responses=ERRORS)
    def show_delivery(who: Member, deliveryId: str):
        return deliveries.public(home, deliveries.get(home, deliveryId))

    @app.post(
        "/hooks/{endpoint_id}",
        response_model=out.Receipt,
        status_code=202,
        responses={**BODY_ERRORS, 200: {"model": out.Receipt}},
    )
    async def webhook(endpoint_id: str, request: Request):
        config = await asyncio.to_thread(_endpoint, home, endpoint_id)  # 404 before any body
        # no signature header at all: refused on the head (401, recorded), the body unread
        body = (
            b"" if signatures.unsigned(config, request.headers) else await request.body()
        )  # bounded in size, time and number by intake
        return await asyncio.to_thread(_door, home, endpoint_id, config, request.headers, body)

    return app


def _known_query(request: Request, *names: str) -> None:
    """A misspelt filter (``?stat=running``) or a repeated one (``?state=a&state=b``, which
    would silently mean only the last) is a 400, never a page that answers something else."""
    params = request.query_params
    unknown = sorted(set(params) - set(names))
    if unknown:
        raise CaptainError(
            "invalid_filter", f"{unknown[0]!r} is not a parameter here (known: {', '.join(names)})."
        )
    repeated = sorted(name for name in set(params) if len(params.getlist(name)) > 1)
    if repeated:
        raise CaptainError(
            "invalid_filter",
            f"{repeated[0]} is given more than once; each parameter takes one value.",
        )


def _work_id(text: str) -> str:
    try:
        return ledger.check_work_id(text)
    except CaptainError:
        raise CaptainError("unknown_work", "there is no such work item.") from None


def _actor(who: tokens.Token) -> str:
    # a requester is at most 200 characters (ledger.check_name): a long label is cut, so a
    # manager's replay is never refused for the length of its token's label
    label = who.label if not who.label or len(who.label) <= 120 else who.label[:119] + "…"
    return f"token:{who.token_id}" + (f" ({label})" if label else "")


# -- the webhook door -------------------------------------------------------------------------


def _endpoint(home: Home, endpoint_id: str) -> dict:
    try:
        config = deliveries.endpoint(home, endpoint_id)
    except CaptainError as err:
        if err.code != "unknown_endpoint":
            raise  # invalid_config: a 503 that says so, never taken for an unknown endpoint
        config = {}
    if not isinstance(config.get("secret"), str) or not config["secret"]:
        # an endpoint without a secret takes no deliveries over the network; the door says
        # nothing about the setup
        raise CaptainError("unknown_endpoint", "there is no such endpoint.")
    return config


def _door(home: Home, endpoint_id: str, config: dict, headers, body: bytes) -> JSONResponse:
    """Judge the signature, then record: a rejection (nothing dispatched, no identity
    claimed) or the delivery. The answer comes only once the record is durable."""
    verdict = signatures.check(config, headers, body)
    if not verdict.ok:
        deliveries.reject(
            home,
            endpoint_id,
            verdict.source_id,
            body,
            f"bad signature: {verdict.why}",
            event=verdict.event,
        )
        raise CaptainError(
            "bad_signature",
            f"{verdict.why}; the delivery was recorded as rejected and nothing was dispatched.",
        )
    if not verdict.source_id:
        deliveries.reject(
            home, endpoint_id, None, body, "no delivery id header", event=verdict.event
        )
        raise CaptainError("invalid_argument", "the delivery id header is missing.")
    try:
        intake = deliveries.ingest(
            home,
            endpoint_id,
            verdict.source_id,
            body,
            event=verdict.event,
            body_once=not verdict.binds_delivery,
        )
    except CaptainError as err:
        if err.code == "invalid_argument":  # signed, but its id or event cannot be kept
            deliveries.reject(
                home, endpoint_id, verdict.source_id, body, err.message, event=verdict.event
            )
        raise
    receipt = {"delivery_id": intake.delivery.delivery_id, "duplicate": intake.duplicate}
    return JSONResponse(receipt, status_code=200 if intake.duplicate else 202)

"""Every request's head and body, bounded before the app reads a byte (pure ASGI).

The app never buffers more than a route's limit nor waits longer than ``body_timeout`` for
a body: the ``receive`` it is given refuses a declared ``Content-Length`` over the limit
before reading anything, counts a streamed (chunked) body as it arrives, and stops at the
deadline. The refusal is a ``CaptainError`` raised inside the app, so the app's own handler
answers it, in the order the routes ask for the body — a token is checked before any of
it is read (routes). An answer that leaves part of a body unread closes the connection
(after draining at most ``limits.LINGER_BYTES`` of it, so the answer is not lost to a
reset). A head over ``limits.HEAD_BYTES`` is refused (431) before the app runs.

A body read before its sender is authenticated (``before_auth``: the webhook door, whose
signature covers the body) is held whole before anyone knows it is wanted, so past
``limits.SMALL_BODY`` (declared, or read so far) at most ``limits.UNAUTHENTICATED_BODIES``
are read at once (``Readers``). Past that a new one waits in line for a place (its socket
unread: ``doorman``; the newest is served first); the next in line takes the place of the
one that has sent nothing for ``limits.STALL_SECONDS`` the longest, whose connection is
closed. A real sender sends its body at once and is through in milliseconds; a slow one
holds a place only while no one else needs it; a small body (most deliveries) never waits
for one.
"""

from __future__ import annotations

import asyncio
from collections import deque
from collections.abc import Callable

from captain_tui.api import limits, refusals
from captain_tui.api.doorman import Doorman
from state.errors import CaptainError


class Intake:
    def __init__(
        self,
        app,
        *,
        doorman: Doorman,
        limit_for: Callable[[str], int],
        body_timeout: float,
        before_auth: Callable[[str], bool] = lambda _: False,
        readers: int = limits.UNAUTHENTICATED_BODIES,
        stall: float = limits.STALL_SECONDS,
    ) -> None:
        self.app = app
        self.doorman = doorman
        self.limit_for = limit_for
        self.body_timeout = body_timeout
        self.before_auth = before_auth
        self.readers = Readers(readers, stall)

    async def __call__(self, scope, receive, send) -> None:
        if scope["type"] != "http":
            return await self.app(scope, receive, send)
        headers = scope["headers"]
        declared = next((v for k, v in headers if k == b"content-length"), None)
        has_body = declared not in (None, b"0") or any(
            k == b"transfer-encoding" for k, _ in headers
        )
        client = scope.get("client")
        self.doorman.started(client, has_body=has_body)
        body = Body(
            receive,
            send,
            limit=self.limit_for(scope["path"]),
            declared=declared,
            complete=not has_body,
            deadline=self.body_timeout,
            done=lambda: self.doorman.body_done(client),
            reading=lambda: self.doorman.reading(client),
            drop=lambda: self.doorman.drop(client),
            readers=self.readers if self.before_auth(scope["path"]) else None,
        )
        try:
            head = (
                len(scope["raw_path"])
                + len(scope["query_string"])
                + sum(len(k) + len(v) + 4 for k, v in headers)
            )
            if head > limits.HEAD_BYTES:
                response = refusals.error(
                    431,
                    "message_too_large",
                    f"the request head is {head:,} bytes; at most "
                    f"{limits.HEAD_BYTES:,} are accepted.",
                )
                return await response(scope, body.receive, body.send)
            await self.app(scope, body.receive, body.send)
        finally:
            self.readers.leave(body)
            self.doorman.finished(client)


class Readers:
    """The places for bodies read before their sender is authenticated. Who waits for one
    waits in line, and only the next in line is woken: a thousand waiting senders cost
    nothing while they wait. The line is served newest first: in a flood of slow senders
    the ones that came first are the ones to give up on (their body deadline ends their
    wait), and a real sender arriving amid them is placed at the next chance."""

    def __init__(self, most: int, stall: float) -> None:
        self.most = most
        self.stall = stall
        self.holding: list[Body] = []
        self.line: deque[tuple[asyncio.Future, Body]] = deque()
        self.timer: asyncio.TimerHandle | None = None

    async def enter(self, body: Body) -> None:
        loop = asyncio.get_running_loop()
        placed = loop.create_future()
        self.line.append((placed, body))
        self.admit()
        try:
            await asyncio.wait_for(placed, timeout=max(body.deadline - loop.time(), 0))
        except TimeoutError:
            raise body.late() from None
        finally:
            if not placed.done() or placed.cancelled():
                self.line = deque(w for w in self.line if w[0] is not placed)

    def admit(self) -> None:
        """Place whoever is next in line while there is room, or a place to take from a
        body stalled for ``stall`` seconds; else look again when the likeliest one would
        have stalled that long."""
        loop = asyncio.get_running_loop()
        while self.line:
            if self.line[-1][0].done():  # gone: its deadline passed, or it was cancelled
                self.line.pop()
                continue
            if len(self.holding) >= self.most:
                stalled = min(self.holding, key=lambda b: b.moved)
                due = stalled.moved + self.stall
                if loop.time() < due:
                    if self.timer is None or self.timer.when() > due:
                        if self.timer is not None:
                            self.timer.cancel()
                        self.timer = loop.call_at(due, self._again)
                    return
                self.holding.remove(stalled)
                stalled.drop()  # closes its connection: its reader sees a disconnect
            placed, body = self.line.pop()
            body.moved = loop.time()
            self.holding.append(body)
            placed.set_result(None)

    def _again(self) -> None:
        self.timer = None
        self.admit()

    def leave(self, body: Body) -> None:
        if body in self.holding:
            self.holding.remove(body)
            self.admit()


class Body:
    """The request body as the app may read it: within ``limit`` bytes and the deadline."""

    def __init__(
        self,
        receive,
        send,
        *,
        limit: int,
        declared: bytes | None,
        complete: bool,
        deadline: float,
        done: Callable[[], None],
        reading: Callable[[], None] = lambda: None,
        drop: Callable[[], None] = lambda: None,
        readers: Readers | None = None,
    ) -> None:
        self._receive, self.inner_send = receive, send
        self.reading, self.drop = reading, drop
        self.readers = readers  # a place among the unauthenticated bodies is needed first
        self.placed = False  # it has been given a place (it may have lost it since)
        self.moved = 0.0  # when a byte of it last arrived (while it holds a place)
        self.limit = limit
        self.declared = declared
        self.complete = complete  # every byte of the body has been received
        self.deadline = asyncio.get_running_loop().time() + deadline
        self.timeout = deadline
        self.size = 0
        self.early = False  # answered before the body was complete
        self.done = done
        if complete:
            done()

    async def inner_receive(self):
        self.reading()  # the socket is read again only when the app asks
        return await self._receive()

    def large(self) -> bool:
        """Over ``limits.SMALL_BODY``, as declared or as read so far."""
        declared = int(self.declared) if self.declared is not None else 0
        return max(declared, self.size) > limits.SMALL_BODY

    def late(self) -> CaptainError:
        return CaptainError(
            "request_timeout", f"the body did not arrive within {self.timeout:g} s."
        )

    async def receive(self):
        if self.complete:
            return await self.inner_receive()  # only a disconnect can come now
        # h11 let only digits through; a number too long to be a size is too large anyway
        if self.declared is not None and (
            len(self.declared) > 15 or int(self.declared) > self.limit
        ):
            raise self.too_large()
        loop = asyncio.get_running_loop()
        if self.readers is not None and not self.placed and self.large():
            await self.readers.enter(self)
            self.placed = True
        left = self.deadline - loop.time()
        try:
            message = await asyncio.wait_for(self.inner_receive(), timeout=max(left, 0))
        except TimeoutError:
            raise self.late() from None
        self.moved = loop.time()
        if message["type"] == "http.request":
            self.size += len(message.get("body", b""))
            if self.size > self.limit:
                raise self.too_large()
            if not message.get("more_body", False):
                self.complete = True
                self.done()
                if self.readers is not None:
                    self.readers.leave(self)
        return message

    async def send(self, message) -> None:
        if message["type"] == "http.response.start" and not self.complete:
            # answered before the whole body came: close, so the rest is never read
            self.early = True
            message = {
                **message,
                "headers": [*message.get("headers", ()), (b"connection", b"close")],
            }
        elif (
            self.early
            and message["type"] == "http.response.body"
            and not message.get("more_body", False)
        ):
            await self.inner_send({**message, "more_body": True})
            await self.linger()
            message = {"type": "http.response.body", "body": b"", "more_body": False}
        await self.inner_send(message)

    async def linger(self) -> None:
        """Read and drop, briefly, what the client is still sending. Closing a socket with
        unread input resets the connection, and a reset can destroy the answer before the
        client has read it; a little draining lets the answer arrive first."""
        loop = asyncio.get_running_loop()
        end, dropped = loop.time() + limits.LINGER_SECONDS, 0
        while dropped < limits.LINGER_BYTES and (left := end - loop.time()) > 0:
            try:
                message = await asyncio.wait_for(self.inner_receive(), timeout=left)
            except TimeoutError:
                return
            if message["type"] != "http.request" or not message.get("more_body", False):
                return
            dropped += len(message.get("body", b""))

    def too_large(self) -> CaptainError:
        return CaptainError(
            "message_too_large",
            f"the body is over {self.limit:,} bytes, "
            "the most this route accepts; the rest was "
            "not read.",
        )

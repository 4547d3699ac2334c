"""Every request's head and body, bounded before the app reads a byte (pure ASGI).

The app never buffers more than a route's limit nor waits longer than ``body_timeout`` for
a body: the ``receive`` it is given refuses a declared ``Content-Length`` over the limit
before reading anything, counts a streamed (chunked) body as it arrives, and stops at the
deadline. The refusal is a ``CaptainError`` raised inside the app, so the app's own handler
answers it, in the order the routes ask for the body — a token is checked before any of
it is read (routes). An answer that leaves part of a body unread closes the connection
(after draining at most ``limits.LINGER_BYTES`` of it, so the answer is not lost to a
reset). A head over ``limits.HEAD_BYTES`` is refused (431) before the app runs.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable

from captain_tui.api import limits, refusals
from captain_tui.api.doorman import Doorman
from state.errors import CaptainError


class Intake:
    def __init__(self, app, *, doorman: Doorman, limit_for: Callable[[str], int],
                 body_timeout: float) -> None:
        self.app = app
        self.doorman = doorman
        self.limit_for = limit_for
        self.body_timeout = body_timeout

    async def __call__(self, scope, receive, send) -> None:
        if scope["type"] != "http":
            return await self.app(scope, receive, send)
        headers = scope["headers"]
        declared = next((v for k, v in headers if k == b"content-length"), None)
        has_body = (declared not in (None, b"0")
                    or any(k == b"transfer-encoding" for k, _ in headers))
        client = scope.get("client")
        self.doorman.started(client, has_body=has_body)
        body = Body(receive, send, limit=self.limit_for(scope["path"]), declared=declared,
                    complete=not has_body, deadline=self.body_timeout,
                    done=lambda: self.doorman.body_done(client))
        try:
            head = len(scope["raw_path"]) + len(scope["query_string"]) + \
                sum(len(k) + len(v) + 4 for k, v in headers)
            if head > limits.HEAD_BYTES:
                response = refusals.error(431, "message_too_large",
                                          f"the request head is {head:,} bytes; at most "
                                          f"{limits.HEAD_BYTES:,} are accepted.")
                return await response(scope, body.receive, body.send)
            await self.app(scope, body.receive, body.send)
        finally:
            self.doorman.finished(client)


class Body:
    """The request body as the app may read it: within ``limit`` bytes and the deadline."""

    def __init__(self, receive, send, *, limit: int, declared: bytes | None, complete: bool,
                 deadline: float, done: Callable[[], None]) -> None:
        self.inner_receive, self.inner_send = receive, send
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

    async def receive(self):
        if self.complete:
            return await self.inner_receive()  # only a disconnect can come now
        # h11 let only digits through; a number too long to be a size is too large anyway
        if self.declared is not None and (len(self.declared) > 15
                                          or int(self.declared) > self.limit):
            raise self.too_large()
        left = self.deadline - asyncio.get_running_loop().time()
        try:
            message = await asyncio.wait_for(self.inner_receive(), timeout=max(left, 0))
        except TimeoutError:
            raise CaptainError("request_timeout", f"the body did not arrive within "
                                                  f"{self.timeout:g} s.") from None
        if message["type"] == "http.request":
            self.size += len(message.get("body", b""))
            if self.size > self.limit:
                raise self.too_large()
            if not message.get("more_body", False):
                self.complete = True
                self.done()
        return message

    async def send(self, message) -> None:
        if message["type"] == "http.response.start" and not self.complete:
            # answered before the whole body came: close, so the rest is never read
            self.early = True
            message = {**message, "headers": [*message.get("headers", ()),
                                              (b"connection", b"close")]}
        elif self.early and message["type"] == "http.response.body" \
                and not message.get("more_body", False):
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
        return CaptainError("message_too_large", f"the body is over {self.limit:,} bytes, "
                                                 "the most this route accepts; the rest was "
                                                 "not read.")

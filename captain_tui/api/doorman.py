"""Connections to ``captain serve``: each must finish a request head in time, and there are
never more than a set number of them.

h11 (and uvicorn over it) has no deadline for a request head, and uvicorn's keep-alive
timer stops at the first byte of one: a client that sends half a request line and then
nothing holds its socket forever, and enough of them hold every file descriptor. So each
connection is wrapped (``Doorman.protocol``, the protocol factory uvicorn is given):

- from when it opens, or from when its last answer went out, the client has
  ``head_timeout`` seconds to finish the next request head; then the connection is closed,
  with a 408 if part of a request had arrived;
- at ``max_connections`` a new connection makes room by closing the one that has owed us
  bytes (a head, or a body ``intake`` is waiting for) the longest — never one whose answer
  is being worked on. When every connection is being answered, the new one is closed.

``intake`` tells the doorman where each request is (``started``, ``body_done``,
``finished``), naming the connection by ``scope["client"]``: the peer address uvicorn
takes from the socket (proxy headers are off, so a client cannot name another).

What a connection may make the server hold is bounded too: the socket is read at most
``limits.READ_BYTES`` at a time (into one buffer the doorman shares), and once a request
with a body has started, its socket is not read again until the app asks for the body
(``reading``): a body no one has asked for yet — one behind a token check, an endpoint
look-up, or a free place among the unauthenticated bodies (``intake``) — stays in the
client's kernel buffers, not in ours.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable

from captain_tui.api import limits, refusals

_TIMEOUT = refusals.body(
    "request_timeout", "the request did not arrive in time; the connection is closed."
)
TIMEOUT_RESPONSE = (
    b"HTTP/1.1 408 Request Timeout\r\ncontent-type: application/json\r\n"
    b"content-length: %d\r\nconnection: close\r\n\r\n" % len(_TIMEOUT)
) + _TIMEOUT


class Doorman:
    def __init__(
        self, inner: Callable[..., asyncio.Protocol], *, max_connections: int, head_timeout: float
    ) -> None:
        self.inner = inner
        self.max_connections = max_connections
        self.head_timeout = head_timeout
        self.open: dict[tuple, Guarded] = {}
        self.buffer = bytearray(limits.READ_BYTES)  # every socket is read into this one

    def protocol(self, **kwargs) -> Guarded:
        """uvicorn's ``http=``: its own h11 protocol, wrapped."""
        return Guarded(self, self.inner(**kwargs))

    # -- what intake reports, per request --------------------------------------------------

    def started(self, client, *, has_body: bool) -> None:
        if (conn := self._find(client)) is not None:
            conn.busy += 1
            conn.stop_clock()
            conn.owed_since = asyncio.get_running_loop().time() if has_body else None
            if has_body:
                conn.hold()

    def reading(self, client) -> None:
        """The app asks for the body: read the socket again."""
        if (conn := self._find(client)) is not None:
            conn.release()

    def drop(self, client) -> None:
        """Close this request's connection (a stalled body making room for another)."""
        if (conn := self._find(client)) is not None:
            conn.cut()

    def body_done(self, client) -> None:
        if (conn := self._find(client)) is not None:
            conn.owed_since = None

    def finished(self, client) -> None:
        if (conn := self._find(client)) is not None:
            conn.busy -= 1
            if conn.busy == 0:
                conn.await_head()

    def _find(self, client) -> Guarded | None:
        return self.open.get(tuple(client)) if client else None

    # -- admission ----------------------------------------------------------------------

    def admit(self, conn: Guarded) -> bool:
        if len(self.open) >= self.max_connections:
            owing = [(c.owed_since, c) for c in self.open.values() if c.owed_since is not None]
            if not owing:
                return False
            min(owing, key=lambda o: o[0])[1].cut()
        self.open[conn.key] = conn
        return True

    def leave(self, conn: Guarded) -> None:
        if self.open.get(conn.key) is conn:
            del self.open[conn.key]


class Guarded(asyncio.BufferedProtocol):
    """One connection: uvicorn's protocol inside, our clock around it. The transport reads
    into the doorman's buffer (``get_buffer``), at most ``limits.READ_BYTES`` at a time."""

    def __init__(self, doorman: Doorman, inner: asyncio.Protocol) -> None:
        self.doorman = doorman
        self.inner = inner
        self.transport: asyncio.Transport | None = None
        self.key: tuple = ()
        self.busy = 0  # requests of this connection the app is answering
        self.owed_since: float | None = None  # since when the client owes us bytes
        self.heard = False  # a byte of the owed head arrived
        self.clock: asyncio.TimerHandle | None = None

    def connection_made(self, transport) -> None:
        self.transport = transport
        peer = transport.get_extra_info("peername")
        # the same (host, port) uvicorn puts in scope["client"]
        self.key = (str(peer[0]), int(peer[1])) if isinstance(peer, tuple) else (id(self),)
        self.inner.connection_made(transport)
        if self.doorman.admit(self):
            self.await_head()
        else:
            transport.close()

    def get_buffer(self, sizehint: int):
        return self.doorman.buffer

    def buffer_updated(self, nbytes: int) -> None:
        self.data_received(bytes(memoryview(self.doorman.buffer)[:nbytes]))

    def data_received(self, data: bytes) -> None:
        if self.busy == 0:
            self.heard = True
        self.inner.data_received(data)

    def hold(self) -> None:
        if self.transport is not None and not self.transport.is_closing():
            self.transport.pause_reading()

    def release(self) -> None:
        if self.transport is not None and not self.transport.is_closing():
            self.transport.resume_reading()

    def eof_received(self):
        return self.inner.eof_received()

    def connection_lost(self, exc) -> None:
        self.stop_clock()
        self.doorman.leave(self)
        self.inner.connection_lost(exc)

    def pause_writing(self) -> None:
        self.inner.pause_writing()

    def resume_writing(self) -> None:
        self.inner.resume_writing()

    # -- the clock ----------------------------------------------------------------------

    def await_head(self) -> None:
        loop = asyncio.get_running_loop()
        self.stop_clock()
        self.owed_since, self.heard = loop.time(), False
        self.clock = loop.call_later(self.doorman.head_timeout, self.cut)

    def stop_clock(self) -> None:
        if self.clock is not None:
            self.clock.cancel()
            self.clock = None

    def cut(self) -> None:
        """Close a connection that owes us bytes; say why if it had started a request."""
        self.stop_clock()
        self.doorman.leave(self)  # its room is free now, not when the close completes
        if self.transport is None or self.transport.is_closing():
            return
        if self.busy == 0 and self.heard:
            self.transport.write(TIMEOUT_RESPONSE)
        self.transport.close()

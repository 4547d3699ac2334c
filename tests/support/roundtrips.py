"""Round trips to PostgreSQL, counted on the wire: a TCP relay between the ledger's
connections and the real server that counts each time a client speaks again after the
server answered (the client waited for that answer: one round trip). Statements sent
together down a pipeline, without waiting in between, are one. Nothing is replaced: every
byte goes through to the real server and back.

Use: ``Relay(url)`` starts it; ``relay.url`` is ``url`` through it; ``relay.take()`` the
round trips since the last take; ``relay.close()`` ends it (and its connections).
"""

from __future__ import annotations

import contextlib
import socket
import threading
from urllib.parse import urlsplit


class Relay:
    def __init__(self, url: str) -> None:
        parts = urlsplit(url)
        self.target = (parts.hostname or "127.0.0.1", parts.port or 5432)
        self.listener = socket.create_server(("127.0.0.1", 0))
        port = self.listener.getsockname()[1]
        netloc = parts.netloc.rsplit("@", 1)
        where = f"127.0.0.1:{port}"
        self.url = parts._replace(
            netloc=f"{netloc[0]}@{where}" if len(netloc) == 2 else where
        ).geturl()
        self.trips = 0
        self._guard = threading.Lock()
        self._sockets: list[socket.socket] = []
        self._closed = False
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self) -> None:
        while not self._closed:
            try:
                client, _ = self.listener.accept()
            except OSError:
                return
            server = socket.create_connection(self.target)
            for s in (client, server):
                s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            with self._guard:
                self._sockets += [client, server]
            turn = {"last": "server"}  # the server speaks first only after the client
            threading.Thread(
                target=self._pump, args=(client, server, turn, "client"), daemon=True
            ).start()
            threading.Thread(
                target=self._pump, args=(server, client, turn, "server"), daemon=True
            ).start()

    def _pump(self, src: socket.socket, dst: socket.socket, turn: dict, side: str) -> None:
        while True:
            try:
                data = src.recv(65536)
            except OSError:
                data = b""
            if not data:
                with contextlib.suppress(OSError):
                    dst.shutdown(socket.SHUT_WR)
                return
            with self._guard:
                if side == "client" and turn["last"] != "client":
                    self.trips += 1
                turn["last"] = side
            try:
                dst.sendall(data)
            except OSError:
                return

    def take(self) -> int:
        """Round trips since the last ``take``."""
        with self._guard:
            out, self.trips = self.trips, 0
        return out

    def close(self) -> None:
        self._closed = True
        with contextlib.suppress(OSError):
            self.listener.close()
        with self._guard:
            sockets, self._sockets = self._sockets, []
        for s in sockets:
            with contextlib.suppress(OSError):
                s.close()

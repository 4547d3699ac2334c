"""A real ``captain serve`` for the API tests: a subprocess on a loopback port, and a tiny
HTTP client (``http.client``: the exact bytes and headers we send, no redirects, no retries).

``Server`` starts ``python -m captain_tui serve --port 0 --json --home H``, waits (with a
deadline, never a bare sleep) for the one JSON line it prints once listening, and stops it
by its own pid. ``sign_github`` / ``sign_captain`` make the webhook door's two signatures.
``connect`` / ``read_answer`` / ``closed_by_peer`` speak raw HTTP on a socket (slow heads,
oversized or streamed bodies); ``process_memory`` / ``open_descriptors`` read the server
process from /proc.
"""

from __future__ import annotations

import hashlib
import hmac
import http.client
import json
import os
import queue
import socket
import subprocess
import sys
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from urllib.parse import urlencode, urlsplit

from support.ledger_backends import process_env

REPO = Path(__file__).resolve().parents[2]
START_DEADLINE = 60.0  # seconds for the server to print its URL (a cold, loaded 2-core box)


def cli_env(home: Path) -> dict[str, str]:
    """The captain-side environment the ``cli`` fixture uses (no crew context)."""
    env = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith("CAPTAIN_") or k == "CAPTAIN_TMUX_SOCKET"
    }
    env["CAPTAIN_HOME"] = str(home)
    env["PYTHONPATH"] = str(REPO)
    env.update(process_env())  # CAPTAIN_LEDGER_URL on a test's PostgreSQL ledger
    return env


def captain(home: Path, *args: str, stdin: str | None = None, timeout: float = 60) -> dict:
    """Run the real CLI with ``--json``; returns its payload, asserting it succeeded."""
    proc = subprocess.run(
        [sys.executable, "-m", "captain_tui", *args, "--json"],
        env=cli_env(home),
        capture_output=True,
        text=True,
        input=stdin,
        timeout=timeout,
        cwd=home.parent,
    )
    assert proc.returncode == 0, (args, proc.returncode, proc.stdout, proc.stderr)
    payload = json.loads(proc.stdout)
    assert payload.get("ok") is True, payload
    return payload


@dataclass
class Reply:
    status: int
    headers: dict[str, str]
    raw: bytes

    @property
    def json(self):
        return json.loads(self.raw)

    @property
    def error(self) -> dict:
        """The error object, asserting the body is exactly {"error": {"code", "message"}}."""
        body = self.json
        assert set(body) == {"error"}, body
        assert set(body["error"]) == {"code", "message"}, body
        assert isinstance(body["error"]["message"], str) and body["error"]["message"].strip()
        return body["error"]


def ok(reply: Reply, status: int = 200):
    """The status; returns the JSON body."""
    assert reply.status == status, (reply.status, reply.raw)
    return reply.json


def refused(reply: Reply, status: int, code: str) -> str:
    """The status, and exactly {"error": {"code", "message"}} with this code; the message."""
    assert reply.status == status, (reply.status, reply.raw)
    assert reply.headers.get("content-type", "").startswith("application/json")
    error = reply.error
    assert error["code"] == code, error
    return error["message"]


@dataclass
class Server:
    home: Path
    log: Path
    proc: subprocess.Popen | None = None
    url: str = ""
    workspace_id: str = ""
    extra: tuple[str, ...] = ()  # more ``captain serve`` arguments (--host, --allow-remote)
    seen: list[Reply] = field(default_factory=list)  # every reply, for the leak walk
    pump: threading.Thread | None = None

    def start(self) -> Server:
        with self.log.open("wb") as log:  # the child keeps its own copy of the handle
            self.proc = subprocess.Popen(
                [
                    sys.executable,
                    "-m",
                    "captain_tui",
                    "serve",
                    "--port",
                    "0",
                    "--json",
                    "--home",
                    str(self.home),
                    *self.extra,
                ],
                env=cli_env(self.home),
                cwd=self.home.parent,
                stdin=subprocess.DEVNULL,
                stdout=subprocess.PIPE,
                stderr=log,
                text=True,
            )
        lines: queue.Queue[str | None] = queue.Queue()

        def pump(stream=self.proc.stdout):
            for line in stream:
                lines.put(line)
            lines.put(None)

        self.pump = threading.Thread(target=pump, daemon=True)
        self.pump.start()
        deadline = time.monotonic() + START_DEADLINE
        while True:
            left = deadline - time.monotonic()
            try:
                line = lines.get(timeout=max(left, 0.01))
            except queue.Empty:
                self.stop()
                raise AssertionError(
                    f"captain serve printed nothing in {START_DEADLINE} s: {self.log.read_text()}"
                ) from None
            if line is None:
                code = self.proc.wait(timeout=10)
                raise AssertionError(f"captain serve exited {code}: {self.log.read_text()}")
            if line.strip():
                break
        announced = json.loads(line)
        assert announced["ok"] is True, announced
        self.url, self.workspace_id = announced["url"], announced["workspace_id"]
        host = self.extra[self.extra.index("--host") + 1] if "--host" in self.extra else "127.0.0.1"
        assert urlsplit(self.url).hostname == host, self.url
        return self

    def stop(self) -> None:
        """Stop our own server (by its pid), then close its pipe once the pump drained it."""
        if self.proc is None:
            return
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(timeout=15)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(timeout=15)
        self.pump.join(timeout=15)
        if not self.pump.is_alive():
            self.proc.stdout.close()

    # -- HTTP -----------------------------------------------------------------------------

    def request(
        self,
        method: str,
        path: str,
        *,
        token: str | None = None,
        json_body=None,
        body: bytes | None = None,
        query: dict | str | None = None,
        headers: dict[str, str] | None = None,
    ) -> Reply:
        parts = urlsplit(self.url)
        sent = dict(headers or {})
        if token is not None:
            sent["Authorization"] = f"Bearer {token}"
        if json_body is not None:
            body = json.dumps(json_body).encode()
            sent.setdefault("Content-Type", "application/json")
        if query:  # a dict, or a query string sent as it is (repeated parameters)
            path += "?" + (query if isinstance(query, str) else urlencode(query))
        conn = http.client.HTTPConnection(parts.hostname, parts.port, timeout=30)
        try:
            conn.request(method, path, body=body, headers=sent)
            response = conn.getresponse()
            reply = Reply(
                response.status, {k.lower(): v for k, v in response.getheaders()}, response.read()
            )
        finally:
            conn.close()
        self.seen.append(reply)
        return reply

    @property
    def address(self) -> tuple[str, int]:
        parts = urlsplit(self.url)
        return parts.hostname, parts.port

    def connect(self, first: bytes = b"") -> socket.socket:
        """A raw connection to the server, having sent ``first``."""
        sock = socket.create_connection(self.address, timeout=30)
        if first:
            sock.sendall(first)
        return sock

    def get(self, path: str, token: str | None, **kw) -> Reply:
        return self.request("GET", path, token=token, **kw)

    def post(self, path: str, token: str | None, json_body=None, **kw) -> Reply:
        return self.request("POST", path, token=token, json_body=json_body, **kw)

    def ws(self, rest: str = "", workspace: str | None = None) -> str:
        return f"/api/workspaces/{workspace or self.workspace_id}{rest}"

    def hook(self, endpoint: str, body: bytes, headers: dict[str, str]) -> Reply:
        return self.request(
            "POST",
            f"/hooks/{endpoint}",
            body=body,
            headers={"Content-Type": "application/json", **headers},
        )


# -- raw sockets, and the server process as the kernel sees it ---------------------------------


@dataclass
class Answer:
    """A response read off a raw socket: status, lower-cased headers, body."""

    status: int
    headers: dict[str, str]
    body: bytes

    @property
    def error(self) -> dict:
        return Reply(self.status, self.headers, self.body).error


def read_answer(sock: socket.socket, deadline: float) -> Answer | None:
    """One HTTP response from ``sock``, or None if the peer closed (or reset) before one
    arrived. Raises TimeoutError when ``deadline`` (monotonic) passes first."""
    data = b""
    while True:
        head, sep, rest = data.partition(b"\r\n\r\n")
        if sep:
            lines = head.decode("latin-1").split("\r\n")
            headers = {
                k.strip().lower(): v.strip()
                for k, _, v in (line.partition(":") for line in lines[1:])
            }
            length = int(headers.get("content-length", "-1"))
            if 0 <= length <= len(rest):
                return Answer(int(lines[0].split()[1]), headers, rest[:length])
        left = deadline - time.monotonic()
        if left <= 0:
            raise TimeoutError(f"no whole answer in time; got {data[:200]!r}")
        sock.settimeout(left)
        try:
            chunk = sock.recv(65536)
        except TimeoutError:
            continue
        except ConnectionError:
            chunk = b""
        if not chunk:
            if sep and "content-length" not in headers:
                return Answer(int(lines[0].split()[1]), headers, rest)
            return None
        data += chunk


def closed_by_peer(sock: socket.socket) -> bool:
    """Whether the server has closed this connection (EOF or reset), without waiting.
    Bytes it sent first (a 408) are read and dropped."""
    sock.setblocking(False)
    try:
        while True:
            chunk = sock.recv(65536)
            if not chunk:
                return True
    except BlockingIOError:
        return False
    except ConnectionError:
        return True
    finally:
        sock.setblocking(True)


def process_memory(pid: int) -> dict[str, float]:
    """VmRSS and VmHWM (peak) of a process, in MiB, from /proc/PID/status."""
    out = {}
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        key, _, value = line.partition(":")
        if key in ("VmRSS", "VmHWM"):
            out[key] = int(value.split()[0]) / 1024
    return out


def open_descriptors(pid: int) -> int:
    return len(os.listdir(f"/proc/{pid}/fd"))


def sign_github(secret: str, body: bytes, delivery: str, event: str = "push") -> dict:
    digest = hmac.new(secret.encode(), body, hashlib.sha256).hexdigest()
    return {
        "X-Hub-Signature-256": f"sha256={digest}",
        "X-GitHub-Delivery": delivery,
        "X-GitHub-Event": event,
    }


def sign_captain(
    secret: str, body: bytes, delivery: str, event: str = "push", *, at: int | None = None
) -> dict:
    """v2: HMAC-SHA256 of "<t>\n<delivery id>\n<event>\n" + body (docs/api.md)."""
    stamp = str(int(time.time()) if at is None else at)
    signed = f"{stamp}\n{delivery}\n{event}\n".encode() + body
    digest = hmac.new(secret.encode(), signed, hashlib.sha256).hexdigest()
    return {
        "X-Captain-Signature": f"t={stamp},v2={digest}",
        "X-Captain-Delivery": delivery,
        "X-Captain-Event": event,
    }

"""``captain serve`` under many slow, unauthenticated senders of large bodies.

The webhook door must read a body before it can judge its signature, so a body there is
held before its sender is authenticated. 150 clients each start a 1 MiB delivery with a
wrong signature, send all of it but the last byte as fast as the server takes it, and
stall. (A delivery with no signature header at all is refused on its head, its body never
read.) The server must hold little for them (its peak resident memory, read from
/proc/PID/status, grows by little more than a few bodies), and a real client — a member's
GET and a correctly signed delivery — must be answered within a second all the while, and
a signed delivery of 200 KB (big enough to need one of the few places for unauthenticated
bodies) within a second of one slow sender having stalled long enough to lose its place.

A real ``captain serve`` (tests/support/api.py) on a loopback port; raw sockets.
"""

from __future__ import annotations

import socket
import threading
import time

import pytest
from support.api import Server, process_memory, read_answer, sign_github

from captain_tui.api import limits
from state.home import Home
from state.work import deliveries, tokens

GH = "gh-slow-bodies-secret"
CONFIG = f"""\
[ledger]
slots = 1000

[endpoints.gh]
secret = "{GH}"
events = ["push"]
"""
MB = 1024 * 1024
CLIENTS = 150
BODY = MB  # what each slow client declares (the door's limit is 1 MiB - 1: send 1 less)
SEND_FOR = 4.0  # seconds the slow clients push their bodies, at most
GROWTH_MB = 40  # what the server's peak may grow by (a few bodies, not 150)


def slow_delivery(server: Server, n: int) -> socket.socket:
    body_len = BODY - 1
    headers = {
        **sign_github("not-the-secret", b"", f"slow-{n}"),
        "Content-Length": str(body_len),
        "Content-Type": "application/json",
    }
    head = [b"POST /hooks/gh HTTP/1.1", b"Host: 127.0.0.1"]
    head += [f"{k}: {v}".encode() for k, v in headers.items()]
    sock = server.connect(b"\r\n".join(head) + b"\r\n\r\n")
    sock.setblocking(False)
    return sock


def push(socks: list[socket.socket], until: float, progress: dict) -> None:
    """Send each socket all of its body but the last byte, round-robin, without blocking,
    until done or ``until``; a socket the server closed is done."""
    piece = b"x" * (64 * 1024)
    left = {sock: BODY - 2 for sock in socks}
    while left and time.monotonic() < until:
        moved = False
        for sock in list(left):
            try:
                sent = sock.send(piece[: left[sock]])
            except BlockingIOError:
                continue
            except OSError:
                del left[sock]
                progress["closed"] += 1
                continue
            moved = True
            progress["sent"] += sent
            left[sock] -= sent
            if left[sock] == 0:
                del left[sock]
                progress["stalled"] += 1
        if not moved:
            time.sleep(0.005)


@pytest.fixture(scope="module")
def served(tmp_path_factory):
    root = tmp_path_factory.mktemp("slow-bodies")
    home = Home(root / "home")
    (home.root / "config.toml").write_text(CONFIG)
    _, member = tokens.create(home, "member")
    server = Server(home.root, root / "serve.log").start()
    yield server, member, home
    server.stop()


def test_a_delivery_with_no_signature_at_all_is_refused_before_its_body(served):
    """The signature header's absence is known from the head: 401 at once, recorded as a
    rejection, without waiting for (or reading) a byte of the body."""
    server, _, home = served
    for headers in (
        {"X-GitHub-Delivery": "unsigned-1", "X-GitHub-Event": "push"},
        {"X-Hub-Signature-256": "", "X-GitHub-Delivery": "unsigned-2"},
    ):
        head = [b"POST /hooks/gh HTTP/1.1", b"Host: 127.0.0.1", b"Content-Length: %d" % (BODY - 1)]
        head += [f"{k}: {v}".encode() for k, v in headers.items()]
        with server.connect(b"\r\n".join(head) + b"\r\n\r\n") as sock:  # and no body
            answer = read_answer(sock, time.monotonic() + 5)  # the body timeout is 30 s
        assert answer is not None and answer.status == 401, answer
        assert answer.error["code"] == "bad_signature"
        assert "X-Hub-Signature-256 is missing" in answer.error["message"]
        assert answer.headers.get("connection") == "close"  # the body is never read
    kept = [
        r
        for r in deliveries.rejections(home)
        if r.source_delivery_id in ("unsigned-1", "unsigned-2")
    ]
    assert len(kept) == 2 and all(r.body_bytes == 0 for r in kept), kept


def test_slow_unauthenticated_bodies_are_held_small_and_a_real_client_is_answered(served):
    server, member, _ = served
    socks: list[socket.socket] = []
    try:
        pid = server.proc.pid
        assert server.get("/api/workspaces", member).status == 200  # warm
        before = process_memory(pid)
        socks = [slow_delivery(server, n) for n in range(CLIENTS)]
        progress = {"sent": 0, "closed": 0, "stalled": 0}
        pusher = threading.Thread(target=push, args=(socks, time.monotonic() + SEND_FOR, progress))
        pusher.start()
        waits, big_waits, n = [], [], 0
        while pusher.is_alive() or n < 3:  # real clients, all the while the load lasts
            n += 1
            started = time.monotonic()
            assert server.get("/api/workspaces", member).status == 200
            middle = time.monotonic()
            body = b'{"ref": "real-%d"}' % n
            reply = server.hook("gh", body, sign_github(GH, body, f"real-{n}"))
            assert reply.status == 202, reply.raw
            waits += [middle - started, time.monotonic() - middle]
            # a real delivery big enough to need a place among the unauthenticated bodies
            started = time.monotonic()
            body = b'{"ref": "big-%d", "pad": "%s"}' % (n, b"p" * 200_000)
            reply = server.hook("gh", body, sign_github(GH, body, f"big-{n}"))
            assert reply.status == 202, reply.raw
            big_waits.append(time.monotonic() - started)
            time.sleep(0.1)
        pusher.join()
        after = process_memory(pid)
        grown = after["VmHWM"] - before["VmHWM"]
        assert grown < GROWTH_MB, (
            f"the server's peak grew by {grown:.0f} MiB for {CLIENTS} slow senders",
            before,
            after,
            progress,
        )
        assert max(waits) < 1.0, (f"a real client waited {max(waits):.2f} s", waits, progress)
        # it waits at most for one slow sender to have stalled long enough to lose its place
        assert max(big_waits) < limits.STALL_SECONDS + 1.0, (big_waits, progress)
    finally:
        for sock in socks:
            sock.close()

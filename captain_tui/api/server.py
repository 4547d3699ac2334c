"""Running ``captain serve``: the listening socket, the limits, uvicorn.

uvicorn's own options carry what they can: keep-alive, the most it buffers of an incomplete
head (``h11_max_incomplete_event_size``), a concurrency backstop, a bounded graceful
shutdown. What they cannot — a deadline for a request head, a cap on open connections that
closes a slow client rather than refusing a real one, bounded bodies — is ``doorman`` and
``intake``. A thread purges expired raw webhook bodies (``runtime.upkeep``) while it serves.
"""

from __future__ import annotations

import resource
import socket
import threading

from captain_tui.api import limits
from captain_tui.api.doorman import Doorman
from captain_tui.api.endpoints import body_before_auth, body_limit, build_app
from captain_tui.api.intake import Intake
from captain_tui.runtime.upkeep import run_purger
from state.errors import CaptainError
from state.home import Home
from state.work import tokens

LOOPBACK = ("127.0.0.1", "::1", "localhost")


def serve(
    home: Home,
    host: str,
    port: int,
    *,
    allow_remote: bool,
    announce,
    max_connections: int = limits.MAX_CONNECTIONS,
    head_timeout: float = limits.HEAD_TIMEOUT,
    body_timeout: float = limits.BODY_TIMEOUT,
) -> int:
    import uvicorn
    from uvicorn.protocols.http.h11_impl import H11Protocol

    if host not in LOOPBACK and not allow_remote:
        raise CaptainError(
            "invalid_argument",
            f"{host} is not a loopback address; binding there exposes the "
            "ledger to the network. Pass --allow-remote if you mean it.",
        )
    _room_for(max_connections)
    sock = _listen(host, port)
    doorman = Doorman(H11Protocol, max_connections=max_connections, head_timeout=head_timeout)
    app = Intake(
        build_app(home),
        doorman=doorman,
        limit_for=body_limit,
        body_timeout=body_timeout,
        before_auth=body_before_auth,
    )
    announce(host, sock.getsockname()[1], tokens.workspace_id(home), host not in LOOPBACK)
    config = uvicorn.Config(
        app,
        http=doorman.protocol,  # type: ignore[arg-type]  # uvicorn calls it as it would a class
        ws="none",
        lifespan="off",
        log_level="warning",
        access_log=False,
        proxy_headers=False,  # scope["client"] is the socket's peer: doorman relies on it
        timeout_keep_alive=limits.KEEP_ALIVE,
        h11_max_incomplete_event_size=limits.HEAD_BYTES,
        # never reached while doorman caps connections first; a backstop, not the limit
        limit_concurrency=max_connections + 16,
        timeout_graceful_shutdown=5,
    )
    # expired raw webhook bodies go at start and every few minutes, off the event loop
    stop = threading.Event()
    purger = threading.Thread(target=run_purger, args=(home, stop), name="purge", daemon=True)
    purger.start()
    try:
        uvicorn.Server(config).run(sockets=[sock])
    finally:
        stop.set()
    return 0


def _room_for(max_connections: int) -> None:
    """Raise the soft descriptor limit to what the cap needs, or refuse to start."""
    need = max_connections + limits.FD_SPARE
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft != resource.RLIM_INFINITY and soft < need:
        if hard != resource.RLIM_INFINITY and hard < need:
            raise CaptainError(
                "invalid_argument",
                f"--max-connections {max_connections} needs {need} file "
                f"descriptors, and this process may open {hard} (ulimit -n); "
                "ask for fewer connections.",
            )
        resource.setrlimit(resource.RLIMIT_NOFILE, (need, hard))


def _listen(host: str, port: int) -> socket.socket:
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        sock.bind((host, port))
    except OSError as exc:
        sock.close()
        raise CaptainError(
            "invalid_argument", f"cannot listen on {host}:{port}: {exc.strerror or exc}."
        ) from None
    sock.listen(128)
    return sock

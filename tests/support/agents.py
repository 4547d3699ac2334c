"""What the live harnesses for the real agent CLIs share (``support.claude``,
``support.pi``, ``support.codex``), and the steps their tests take with a crew.

Nothing here talks to anything but loopback:

- ``NetJail`` makes a network namespace that has only its own loopback (``unshare -n``,
  which needs root or CAP_SYS_ADMIN). The tmux server, and so every pane, every agent and
  every program it starts (hooks, tool calls), runs inside it (``nsenter --net``). A packet
  to any other address fails at once with "network unreachable"; DNS fails too, since the
  machine's resolver is not on that loopback.
- ``StandInServer`` is the plumbing of a model-API stand-in (each agent's own module says
  which API it plays): a threaded HTTP server listening inside the jail, which records
  every request and lets a test wait for one. ``offline_env`` is the environment every
  agent runs in: a throwaway HOME, and HTTP(S)_PROXY pointed at the stand-in, so that any
  attempt at another host shows up in its ``blocked`` instead of leaving the machine.
- The tmux helpers and ``Pane`` run a private server (``tmux -L NAME``, never the default
  one) and read/type into a pane with plain ``tmux`` calls.
- ``agent_binary`` / ``agent_unavailable`` find an agent's binary and say why it cannot
  run here; ``run_captain`` runs the real captain CLI against a home; ``start_agent_crew``
  recruits a crew through ``captain crew NAME --agent AGENT`` into a jailed tmux server and
  hands back an ``AgentCrew``.
- ``LiveCrew`` is what the live tests do with such a crew: tell it, ring its doorbell until
  an outcome, wait for a notice, let it settle.
"""

from __future__ import annotations

import ctypes
import json
import os
import shutil
import socket
import subprocess
import sys
import threading
import time
import uuid
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any, Callable

from captain_tui.runtime import doorbell
from captain_tui.runtime.pane_reader import Screen, read_screen
from state.clock import now
from state.crew import crewlog, mailbox, notify
from state.home import Home
from state.records import Receipt

REPO = Path(__file__).resolve().parents[2]
TMUX_TIMEOUT = 10.0
CLONE_NEWNET = 0x40000000
LOOPBACK = "127.0.0.1,localhost,::1"
STEP = 20.0  # how long one step of a live test may take
HOLD_TIMEOUT = doorbell.COOLDOWN.total_seconds() + 3.0  # an earlier ring's cooldown first


# --------------------------------------------------------------------------------------
# Finding an agent
# --------------------------------------------------------------------------------------


def agent_binary(env_var: str, default: Path) -> Path:
    """``$env_var`` if set, else ``default`` (the copy ``.ci/install-agents`` installs)."""
    override = os.environ.get(env_var)
    return Path(override) if override else default


def agent_unavailable(what: str, binary: Path, env_var: str, *needs: tuple[str, str]) -> str | None:
    """None when the agent ``what`` at ``binary`` can be run here offline; else why a test
    must skip. ``needs`` are ``(program, reason)``: each program must be on PATH."""
    if not (binary.is_file() and os.access(binary, os.X_OK)):
        return (
            f"{what} is not installed at {binary} (run .ci/install-agents, which "
            f"needs npm; or set {env_var})"
        )
    for program, reason in needs:
        if shutil.which(program) is None:
            return reason
    return NetJail.unavailable_reason()


# --------------------------------------------------------------------------------------
# A network namespace with nothing but loopback
# --------------------------------------------------------------------------------------

# Runs inside the new namespace: bring `lo` up (127.0.0.1 and ::1 come with it), say so,
# then live exactly as long as the harness holds our stdin open.
_HOLDER = r"""
import fcntl, os, socket, struct, sys
SIOCGIFFLAGS, SIOCSIFFLAGS, IFF_UP = 0x8913, 0x8914, 0x1
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
req = struct.pack("16sH22x", b"lo", 0)
flags = struct.unpack("16sH22x", fcntl.ioctl(s, SIOCGIFFLAGS, req))[1]
fcntl.ioctl(s, SIOCSIFFLAGS, struct.pack("16sH22x", b"lo", flags | IFF_UP))
names = sorted(name for _, name in socket.if_nameindex())
sys.stdout.write(" ".join(names) + "\n")
sys.stdout.flush()
sys.stdin.read()
"""


class NetJail:
    """A network namespace that holds only a loopback interface.

    ``wrap(cmd)`` runs a command inside it; ``listen(port)`` opens a TCP listening socket
    inside it (for servers of this process that jailed programs must reach). It lasts until
    ``close()`` (or until this process exits: the holder dies when its stdin closes).
    """

    _probe: str | None | bool = False  # False: not probed yet

    def __init__(self) -> None:
        self._holder = subprocess.Popen(
            ["unshare", "--net", "--", sys.executable, "-c", _HOLDER],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        line = self._holder.stdout.readline().strip()
        if line != "lo":
            err = self._holder.stderr.read() if self._holder.poll() is not None else ""
            self.close()
            raise OSError(
                f"could not make a loopback-only network namespace "
                f"(interfaces: {line!r}; {err.strip()[-300:]})"
            )
        self.pid = self._holder.pid
        self.ns_path = f"/proc/{self.pid}/ns/net"

    @classmethod
    def unavailable_reason(cls) -> str | None:
        """None if this machine can make one (tried once per process), else why not."""
        if cls._probe is False:
            if not shutil.which("unshare") or not shutil.which("nsenter"):
                cls._probe = "unshare/nsenter (util-linux) are not installed"
            else:
                try:
                    NetJail().close()
                    cls._probe = None
                except OSError as exc:
                    cls._probe = (
                        f"cannot isolate the agent from the network: {exc} "
                        f"(needs root or CAP_SYS_ADMIN for `unshare --net`)"
                    )
        return cls._probe  # type: ignore[return-value]

    def wrap(self, cmd: list[str]) -> list[str]:
        return ["nsenter", f"--net={self.ns_path}", "--", *cmd]

    def listen(self, host: str = "127.0.0.1", port: int = 0, backlog: int = 64) -> socket.socket:
        """A listening TCP socket that lives in the jail's namespace."""
        result: dict[str, Any] = {}

        def inside() -> None:
            # setns() moves only this (short-lived) thread; the socket keeps the namespace.
            try:
                libc = ctypes.CDLL(None, use_errno=True)
                fd = os.open(self.ns_path, os.O_RDONLY)
                try:
                    if libc.setns(fd, CLONE_NEWNET) != 0:
                        err = ctypes.get_errno()
                        raise OSError(err, f"setns: {os.strerror(err)}")
                finally:
                    os.close(fd)
                sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
                sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
                sock.bind((host, port))
                sock.listen(backlog)
                result["sock"] = sock
            except BaseException as exc:  # noqa: BLE001 - handed back to the caller
                result["error"] = exc

        thread = threading.Thread(target=inside, name="netjail-listen")
        thread.start()
        thread.join()
        if "error" in result:
            raise result["error"]
        return result["sock"]

    def same_namespace(self, pid: int) -> bool:
        """Whether process ``pid`` is inside this jail."""
        try:
            return os.readlink(f"/proc/{pid}/ns/net") == os.readlink(self.ns_path)
        except OSError:
            return False

    def close(self) -> None:
        holder = getattr(self, "_holder", None)
        if holder is None:
            return
        try:
            if holder.stdin:
                holder.stdin.close()
            holder.wait(timeout=5)
        except (OSError, subprocess.TimeoutExpired):
            holder.kill()
            holder.wait(timeout=5)
        for stream in (holder.stdout, holder.stderr):
            if stream:
                stream.close()
        self._holder = None

    def __enter__(self) -> "NetJail":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


# --------------------------------------------------------------------------------------
# tmux on a private socket
# --------------------------------------------------------------------------------------


def tmux(
    socket_name: str, *args: str, check: bool = True, timeout: float = TMUX_TIMEOUT
) -> subprocess.CompletedProcess[str]:
    """``tmux -L socket_name -f /dev/null ARGS`` (never the default server)."""
    return subprocess.run(
        ["tmux", "-L", socket_name, "-f", "/dev/null", *args],
        capture_output=True,
        text=True,
        timeout=timeout,
        check=check,
    )


def unique_socket(prefix: str = "captain-test") -> str:
    return f"{prefix}-{os.getpid()}-{uuid.uuid4().hex[:8]}"


def start_tmux_server(
    socket_name: str,
    jail: NetJail | None,
    *,
    session: str = "main",
    width: int = 100,
    height: int = 30,
    env: dict[str, str] | None = None,
) -> None:
    """Start a tmux server on ``socket_name`` (inside ``jail`` when given) with one idle
    window, so later windows and panes (e.g. captain's recruits) live in the jail too."""
    base = {
        "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
        "LANG": "C.UTF-8",
        "TERM": "xterm-256color",
        "HOME": os.environ.get("HOME", "/root"),
    }
    base.update(env or {})
    cmd = [
        "tmux",
        "-L",
        socket_name,
        "-f",
        "/dev/null",
        "new-session",
        "-d",
        "-s",
        session,
        "-x",
        str(width),
        "-y",
        str(height),
        "sleep 86400",
    ]
    subprocess.run(
        jail.wrap(cmd) if jail else cmd,
        env=base,
        check=True,
        capture_output=True,
        text=True,
        timeout=TMUX_TIMEOUT,
    )
    # Claude Code nags (on screen) when tmux does not forward focus events.
    tmux(socket_name, "set-option", "-g", "focus-events", "on", check=False)


def tmux_socket_path(socket_name: str) -> Path:
    """Where ``tmux -L socket_name`` lives: $TMUX_TMPDIR (or /tmp)/tmux-UID/NAME."""
    return Path(os.environ.get("TMUX_TMPDIR") or "/tmp") / f"tmux-{os.getuid()}" / socket_name


def kill_tmux_server(socket_name: str) -> None:
    """Kill the private server and remove its socket file (tmux leaves it behind)."""
    try:
        tmux(socket_name, "kill-server", check=False)
    except subprocess.TimeoutExpired:
        return
    path = tmux_socket_path(socket_name)
    deadline = time.monotonic() + 2.0
    while path.exists() and time.monotonic() < deadline:
        if tmux(socket_name, "list-sessions", check=False).returncode != 0:
            try:
                path.unlink()
            except FileNotFoundError:
                pass
            break
        time.sleep(0.05)


class Pane:
    """A pane (an agent, or any command) on a private tmux socket: read and type into it."""

    def __init__(self, socket_name: str, pane_id: str, pane_pid: int) -> None:
        self.socket = socket_name
        self.pane_id = pane_id
        self.pane_pid = pane_pid

    # -- reading ---------------------------------------------------------------------
    def capture(self, ansi: bool = False) -> str:
        args = ["capture-pane", "-p", "-t", self.pane_id]
        if ansi:
            args.insert(2, "-e")
        return tmux(self.socket, *args).stdout

    def alive(self) -> bool:
        out = tmux(
            self.socket, "display-message", "-p", "-t", self.pane_id, "#{pane_dead}", check=False
        )
        return out.returncode == 0 and out.stdout.strip() == "0"

    def wait_for(
        self,
        predicate: Callable[[str], bool] | str,
        timeout: float = 30.0,
        interval: float = 0.1,
        ansi: bool = False,
    ) -> str:
        """Poll the screen until ``predicate(capture)`` (or the substring) holds; the
        capture that satisfied it. Raises TimeoutError with the last screen otherwise."""
        check = (lambda s: predicate in s) if isinstance(predicate, str) else predicate
        deadline = time.monotonic() + timeout
        screen = ""
        while True:
            try:
                screen = self.capture(ansi=ansi)
            except subprocess.CalledProcessError as exc:
                raise RuntimeError(f"pane {self.pane_id} is gone: {exc.stderr}") from exc
            if check(screen):
                return screen
            if time.monotonic() >= deadline:
                raise TimeoutError(
                    f"screen condition not met within {timeout}s; last screen:\n{screen}"
                )
            time.sleep(interval)

    # -- typing ----------------------------------------------------------------------
    def send_literal(self, text: str) -> None:
        tmux(self.socket, "send-keys", "-t", self.pane_id, "-l", "--", text)

    def send_enter(self) -> None:
        tmux(self.socket, "send-keys", "-t", self.pane_id, "Enter")

    def send_keys(self, *keys: str) -> None:
        tmux(self.socket, "send-keys", "-t", self.pane_id, *keys)

    def kill(self) -> None:
        """Kill the whole private tmux server (and so this pane)."""
        kill_tmux_server(self.socket)


# --------------------------------------------------------------------------------------
# A model-API stand-in: serving in the jail, recording, waiting
# --------------------------------------------------------------------------------------


class StandInServer:
    """The plumbing of a stand-in for a model API: a threaded loopback HTTP server (its
    listening socket inside ``jail`` when given) that records every request it receives.

    A subclass sets ``request_cls`` (its record, built with ``seq``, ``at`` and what the
    handler passes to ``record``; it has ``kind``, ``method``, ``path``, ``text``), and
    calls ``serve(handler)`` from its ``__init__``; the handler class gets ``stand_in``.
    Kinds: ``main`` is the agent loop, ``blocked`` an attempt at another host (the proxy
    trap: refused, never forwarded); the rest are each API's own.
    """

    request_cls: type
    name = "stand-in"

    def __init__(self, log: Callable[[str], None] | None = None) -> None:
        self.log = log
        self.requests: list[Any] = []
        self._cond = threading.Condition()
        self._seq = 0

    def serve(self, handler: type[BaseHTTPRequestHandler], jail: NetJail | None) -> None:
        class Handler(handler):  # type: ignore[valid-type, misc]
            stand_in = self

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler, bind_and_activate=False)
        self.server.daemon_threads = True
        self.server.socket.close()
        if jail is not None:
            self.server.socket = jail.listen()
        else:
            sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            sock.bind(("127.0.0.1", 0))
            sock.listen(64)
            self.server.socket = sock
        self.server.server_address = self.server.socket.getsockname()
        self.port = self.server.server_address[1]
        self.base_url = f"http://127.0.0.1:{self.port}"
        self._thread = threading.Thread(
            target=self.server.serve_forever,
            kwargs={"poll_interval": 0.1},
            name=self.name,
            daemon=True,
        )
        self._thread.start()

    def describe(self, req: Any) -> str:
        """One request, for the log and for timeout messages."""
        return f"{req.kind} {req.method} {req.path}"

    # -- records ---------------------------------------------------------------------
    def record(self, **kw: Any) -> Any:
        with self._cond:
            self._seq += 1
            req = self.request_cls(seq=self._seq, at=time.monotonic(), **kw)
            self.requests.append(req)
            self._cond.notify_all()
        if self.log:
            self.log(f"stand-in: {self.describe(req)}")
        return req

    def snapshot(self, kind: str | None = None) -> list[Any]:
        with self._cond:
            return [r for r in self.requests if kind is None or r.kind == kind]

    @property
    def main_requests(self) -> list[Any]:
        return self.snapshot("main")

    @property
    def blocked(self) -> list[Any]:
        """Attempts to reach anything but this stand-in (refused, never forwarded)."""
        return self.snapshot("blocked")

    def mark(self) -> int:
        """A position to wait from: ``wait_main(after=stand_in.mark())``."""
        with self._cond:
            return self._seq

    def wait_for(
        self, predicate: Callable[[Any], bool], timeout: float = 30.0, after: int = 0
    ) -> Any:
        """The first request with ``seq > after`` matching ``predicate``."""
        deadline = time.monotonic() + timeout
        with self._cond:
            while True:
                for req in self.requests:
                    if req.seq > after and predicate(req):
                        return req
                left = deadline - time.monotonic()
                if left <= 0:
                    seen = [f"{r.seq}:{self.describe(r)}" for r in self.requests]
                    raise TimeoutError(f"no matching request within {timeout}s; seen: {seen}")
                self._cond.wait(left)

    def wait_main(
        self, after: int = 0, timeout: float = 30.0, containing: str | None = None
    ) -> Any:
        """The next main-conversation request after ``after`` (optionally whose body
        contains ``containing``)."""
        return self.wait_for(
            lambda r: r.kind == "main" and (containing is None or containing in r.text),
            timeout=timeout,
            after=after,
        )

    def quiet_for(self) -> float:
        """Seconds since the last request (large when there was none)."""
        with self._cond:
            return time.monotonic() - self.requests[-1].at if self.requests else 1e9

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()

    def __enter__(self):
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


# --------------------------------------------------------------------------------------
# The environment, and the captain CLI
# --------------------------------------------------------------------------------------


def offline_env(home: Path, base_url: str, *, tmpdir: Path | None = None) -> dict[str, str]:
    """The part of an agent's environment (complete, not a diff on ours) that every agent
    shares: ``home`` as HOME, a plain UTF-8 terminal, and every HTTP(S) proxy pointed at the
    stand-in at ``base_url`` (which refuses and records anything proxied through it);
    ``tmpdir`` as TMPDIR when given."""
    env = {
        "HOME": str(home),
        "PATH": os.environ.get("PATH", "/usr/local/bin:/usr/bin:/bin"),
        "LANG": "C.UTF-8",
        "LC_ALL": "C.UTF-8",
        "TERM": "xterm-256color",
        "SHELL": "/bin/bash",
        "USER": os.environ.get("USER", "root"),
        "HTTPS_PROXY": base_url,
        "HTTP_PROXY": base_url,
        "https_proxy": base_url,
        "http_proxy": base_url,
        "NO_PROXY": LOOPBACK,
        "no_proxy": LOOPBACK,
    }
    if tmpdir is not None:
        env["TMPDIR"] = str(tmpdir)
    return env


def run_captain(
    home: Path, cwd: Path, *args: str, env: dict[str, str] | None = None, timeout: float = 60
) -> subprocess.CompletedProcess[str]:
    """The real CLI (``python -m captain_tui ARGS``) with ``CAPTAIN_HOME=home`` (never the
    default home), as tests/conftest.py's ``cli`` runs it."""
    full = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith("CAPTAIN_") or k == "CAPTAIN_TMUX_SOCKET"
    }
    full.update(CAPTAIN_HOME=str(home), PYTHONPATH=str(REPO))
    full.update(env or {})
    return subprocess.run(
        [sys.executable, "-m", "captain_tui", *args],
        cwd=cwd,
        env=full,
        capture_output=True,
        text=True,
        timeout=timeout,
    )


# --------------------------------------------------------------------------------------
# A crew recruited by the real captain CLI into a jailed tmux server
# --------------------------------------------------------------------------------------


@dataclass
class AgentCrew:
    """A real agent recruited by the real captain CLI into a jailed, private tmux server.

    ``home`` (a ``Home``) and ``home_root`` are the captain home; ``name`` / ``key`` the
    crew; ``pane`` reads and types into its pane (``pane.pane_id``, ``pane.pane_pid``);
    ``socket`` is the ``tmux -L`` name and ``socket_path`` its file (what ``captain
    --socket`` takes); ``data`` is ``captain crew --json``'s answer (assignment and message
    IDs, pane locator); ``stand_in`` the model API (push replies, read what the agent sent);
    ``env`` the agent's environment; ``cli(*args)`` runs the real captain CLI against the
    home; ``close()`` kills the tmux server (and so the agent), the stand-in and the jail.
    Safe to call twice. A context manager.
    """

    agent: str
    home: Home
    home_root: Path
    project: Path
    name: str
    data: dict
    pane: Pane
    socket: str
    socket_path: Path
    stand_in: Any
    jail: NetJail
    env: dict[str, str]
    recruited_at: float  # time.monotonic() when `captain crew` returned
    _closers: list[Callable[[], None]] = field(default_factory=list, repr=False)

    @property
    def key(self) -> str:
        return self.name.lower()

    @property
    def assignment(self) -> str:
        return self.data["assignment_id"]

    def cli(
        self, *args: str, env: dict[str, str] | None = None, timeout: float = 60
    ) -> subprocess.CompletedProcess[str]:
        """Run the captain CLI against the crew's home (as the captain, not as crew)."""
        return run_captain(self.home_root, self.project, *args, env=env, timeout=timeout)

    def teardown(self) -> None:
        """What an agent's own crew undoes first, before the tmux server goes."""

    def close(self) -> None:
        _undo(self._closers)

    def __enter__(self):
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def _undo(closers: list[Callable[[], None]]) -> None:
    while closers:
        try:
            closers.pop()()
        except Exception:  # noqa: BLE001 - tear down the rest whatever one does
            pass


def start_agent_crew(
    agent: str,
    root: Path,
    *,
    binary: Path,
    name: str,
    task: str,
    stand_in: Callable[[NetJail], Any],
    env: Callable[[str], dict[str, str]],
    home_root: Path,
    project: Path,
    width: int,
    height: int,
    crew_cls: type[AgentCrew] = AgentCrew,
    approval_timeout: float = 0,
) -> AgentCrew:
    """Recruit ``name`` with ``captain crew NAME --task TASK --agent AGENT`` through the
    real CLI, the agent (``binary``, put on the CLI's PATH as ``AGENT``) running in a tmux
    server inside a fresh loopback-only jail and talking to ``stand_in(jail)``, in the
    environment ``env(stand_in.base_url)``. ``root`` is a scratch directory of the
    caller's. Returns once the CLI answered (the pane exists; the agent is starting).
    Raises RuntimeError if the recruit failed; whatever was started is undone then."""
    root, home_root, project = Path(root), Path(home_root), Path(project)
    project.mkdir(parents=True, exist_ok=True)
    # ``approval_timeout``: how long the agent's permission hook holds a prompt for the
    # captain (state/crew/approvals.py); 0, the default here, shows the native prompt at
    # once, which the doorbell and prompt tests drive
    home_root.mkdir(parents=True, exist_ok=True)
    config = home_root / "config.toml"
    text = config.read_text() if config.exists() else ""
    if "[crew]" not in text:
        config.write_text(f"{text}\n[crew]\napproval_timeout = {approval_timeout}\n")
    closers: list[Callable[[], None]] = []
    try:
        jail = NetJail()
        closers.append(jail.close)
        model = stand_in(jail)
        closers.append(model.close)
        agent_env = env(model.base_url)
        # The server lives in the jail and carries the agent's offline environment;
        # captain's window inherits it (plus CAPTAIN_* and PATH, which captain passes).
        socket_name = unique_socket(f"captain-{agent}")
        start_tmux_server(socket_name, jail, width=width, height=height, env=agent_env)
        closers.append(lambda: kill_tmux_server(socket_name))
        # the agent on the PATH the CLI sees (captain resolves it there, and hands the
        # pane that PATH too)
        bindir = root / "bin"
        bindir.mkdir(exist_ok=True)
        link = bindir / agent
        if not link.exists():
            link.symlink_to(Path(binary).resolve())
        socket_path = tmux_socket_path(socket_name)
        r = run_captain(
            home_root,
            project,
            "crew",
            name,
            "--task",
            task,
            "--agent",
            agent,
            "--socket",
            str(socket_path),
            "--cwd",
            str(project),
            "--json",
            env={"PATH": f"{bindir}{os.pathsep}{os.environ.get('PATH', '')}"},
        )
        recruited = time.monotonic()
        if r.returncode != 0:
            raise RuntimeError(
                f"captain crew --agent {agent} failed ({r.returncode}): "
                f"{r.stdout[-1000:]} {r.stderr[-1000:]}"
            )
        data = json.loads(r.stdout)
        pane = Pane(socket_name, data["pane"]["pane_id"], data["pane"]["pane_pid"])
        crew = crew_cls(
            agent,
            Home(home_root),
            home_root,
            project,
            name,
            data,
            pane,
            socket_name,
            socket_path,
            model,
            jail,
            agent_env,
            recruited,
            closers,
        )
        closers.append(crew.teardown)
        if not jail.same_namespace(pane.pane_pid):
            raise RuntimeError("captain's pane is not inside the network jail")
        return crew
    except BaseException:
        _undo(closers)
        raise


# --------------------------------------------------------------------------------------
# What the live tests do with a crew
# --------------------------------------------------------------------------------------


class LiveCrew:
    """A live test's view of its crew (an ``AgentCrew``): the home's records of it, and the
    steps a test takes with it, the doorbell driven in-process (``doorbell.ring``) and
    retried every 0.1 s, as a running ``captain wait`` retries it.

    A subclass says when its agent is at rest (``at_rest``).
    """

    def __init__(self, crew: AgentCrew) -> None:
        self.crew = crew
        self.home, self.pane, self.stand_in = crew.home, crew.pane, crew.stand_in
        self.name, self.key = crew.name, crew.key
        self.grace = doorbell.LAUNCH_GRACE[crew.agent]

    @property
    def assignment(self) -> str:
        return self.crew.assignment

    # -- what the home holds ---------------------------------------------------------
    def snapshot(self):
        return crewlog.load(self.home, self.key)[0]

    def unread(self) -> list:
        return mailbox.unread(self.home, self.key, self.snapshot())

    def receipt(self, message_id: str) -> Receipt | None:
        return self.home.store.read(
            self.home.receipts_dir(self.key) / f"{message_id}.json", Receipt
        )

    def notices(self, status: str) -> list:
        return [n for n in mailbox.notifications(self.home, self.key) if n.status == status]

    def screen(self) -> Screen:
        return read_screen(self.pane.capture(ansi=True), self.crew.agent)

    def screen_clear(self) -> bool:
        """The screen shows an empty composer: no approval, no draft, nothing working."""
        s = self.screen()
        return not s.approval and s.composer_readable and s.draft == "" and not s.working

    def mains_after(self, mark: int) -> list:
        return [r for r in self.stand_in.main_requests if r.seq > mark]

    # -- steps -----------------------------------------------------------------------
    def tell(self, text: str) -> dict:
        """``captain tell`` through the real CLI (it tries one ring by itself)."""
        r = self.crew.cli("tell", self.name, text, "--assignment", self.assignment, "--json")
        assert r.returncode == 0, (r.stdout, r.stderr)
        return json.loads(r.stdout)

    def ring_until(
        self,
        want: Callable[[doorbell.Outcome], bool],
        timeout: float,
        what: str | Callable[[], str],
    ) -> doorbell.Outcome:
        """Ring until an outcome satisfies ``want``; ``what`` it should do, for the
        failure (or a function that says it then)."""
        seen: list[doorbell.Outcome] = []
        deadline = time.monotonic() + timeout
        while True:
            outcome = doorbell.ring(self.home, self.name)
            seen.append(outcome)
            if want(outcome):
                return outcome
            if time.monotonic() >= deadline:
                what = what() if callable(what) else what
                raise AssertionError(
                    f"the doorbell did not {what} within {timeout} s; last "
                    f"outcomes: {seen[-3:]}; screen:\n{self.pane.capture()}"
                )
            time.sleep(0.1)

    def held_by(self, gate: str, timeout: float = HOLD_TIMEOUT) -> doorbell.Outcome:
        """Ring until the doorbell holds with ``gate``."""
        return self.ring_until(
            lambda o: o.action == "held" and o.gate == gate, timeout, f"hold with gate {gate}"
        )

    def tell_held(
        self, text: str, gate: str, *, rings: int = 4, or_gates: tuple[str, ...] = ()
    ) -> dict:
        """Tell ``text`` while ``gate`` stands: ``captain tell``'s own ring holds, a ring
        soon holds with ``gate``, and ``rings`` more hold too, each with ``gate`` (or one
        of ``or_gates``). The tell's answer."""
        told = self.tell(text)
        assert told["doorbell"]["action"] == "held", told  # its own ring typed nothing
        self.held_by(gate)
        for _ in range(rings):
            outcome = doorbell.ring(self.home, self.name)
            assert outcome.action == "held", outcome
            assert outcome.gate in (gate, *or_gates), outcome
        return told

    def rings_within(self, limit: float, what: str) -> doorbell.Outcome:
        """The gate just cleared: a ring lands within ``limit`` seconds."""
        cleared = time.monotonic()
        rang = self.ring_until(lambda o: o.action == "rang", limit, what)
        assert rang.detail == "landed", rang
        assert time.monotonic() - cleared <= limit
        return rang

    def ring_until_request(
        self,
        match: Callable[[Any], bool],
        deadline: float,
        *,
        after: int = 0,
        what: str = "the mail",
    ):
        """Ring until a main request after ``after`` matches ``match`` (by ``deadline``,
        a ``time.monotonic()``); that request and the doorbell's outcomes meanwhile."""
        outcomes: list[doorbell.Outcome] = []
        while True:
            outcomes.append(doorbell.ring(self.home, self.name))
            req = next((r for r in self.mains_after(after) if match(r)), None)
            if req is not None:
                return req, outcomes
            if time.monotonic() >= deadline:
                raise AssertionError(
                    f"{what} never reached the stand-in; doorbell: "
                    f"{outcomes[-3:]}; unread: {self.unread()}; main "
                    f"requests: {len(self.stand_in.main_requests)}; "
                    f"screen:\n{self.pane.capture()}"
                )
            time.sleep(0.1)

    def at_rest(self, outcome: doorbell.Outcome) -> bool:
        """Whether the crew is at rest, ``outcome`` being the ring just tried."""
        raise NotImplementedError

    def settle(self, timeout: float | None = None) -> None:
        """Ring (as a wait would) until the launch grace is over and the crew is at rest:
        whatever happened before is over, so the test's own mail and keys meet a crew at
        rest, and the next hold names the gate under test."""
        recruited = self.snapshot().recruited_at

        def settled(outcome: doorbell.Outcome) -> bool:
            graced = (now() - recruited).total_seconds() > self.grace + 0.1
            return graced and self.at_rest(outcome)

        self.ring_until(
            settled,
            self.grace + STEP if timeout is None else timeout,
            lambda: f"let {self.name} settle (unread: {self.unread()})",
        )

    def main_quiet(self) -> bool:
        """No main request for a second."""
        mains = self.stand_in.main_requests
        return not mains or time.monotonic() - mains[-1].at > 1.0

    def next_notice(self, status: str, timeout: float = STEP):
        """Poll ``wait --timeout 0`` until a notification of ``status`` comes, acking it
        and the others on the way."""
        deadline = time.monotonic() + timeout
        ack, seen = None, []
        while True:
            n = notify.wait(self.home, self.name, timeout=0, ack=ack)
            ack = None
            if n is not None:
                if n.status == status:
                    notify.wait(self.home, self.name, timeout=0, ack=n.delivery_id)
                    return n
                seen.append(n)
                ack = n.delivery_id
                continue
            if time.monotonic() >= deadline:
                raise AssertionError(f"no {status} notification within {timeout} s; saw {seen}")
            time.sleep(0.1)

    def wait_notices(self, status: str, count: int, timeout: float = STEP) -> list:
        """Until ``count`` notices of ``status`` are in the home; all of them."""
        deadline = time.monotonic() + timeout
        while True:
            got = self.notices(status)
            if len(got) >= count:
                return got
            if time.monotonic() >= deadline:
                have = [(n.status, n.summary) for n in mailbox.notifications(self.home, self.key)]
                raise AssertionError(
                    f"{count} {status} notice(s) expected within {timeout} s; have {have}"
                )
            time.sleep(0.1)

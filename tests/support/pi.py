"""A harness for running the REAL pi coding agent as a captain crew in real tmux, offline.

pi (``@mariozechner/pi-coding-agent``, pinned by ``.ci/install-agents``) speaks the Anthropic
Messages API to its model (``api: "anthropic-messages"``), so this reuses the Claude
harness's pieces (``support.claude``): ``NetJail`` (a network namespace with nothing but
loopback; the tmux server, pi, captain's hooks and every tool call run inside it),
``StandIn`` (the Messages API, listening inside the jail) and the private-socket tmux
helpers. What is pi's own:

- ``pi_env``: a throwaway HOME whose ``.pi/agent/models.json`` has one provider, the
  stand-in, and ``settings.json`` makes it the default (no login, no onboarding screen),
  plus ``PI_OFFLINE=1`` and ``PI_SKIP_VERSION_CHECK=1``; extensions given are copied into
  ``.pi/agent/extensions/`` (pi discovers them there at start-up).
- ``start_pi_crew``: recruits a pi crew through the real ``captain crew NAME --agent pi``
  CLI into such a jailed tmux server and hands back a ``PiCrew`` (see its docstring): for
  the live tests and for ``bench/``.

``PERMISSION_GATE`` is pi's example extension ``permission-gate.ts``, copied unchanged
(tests/fixtures/README.md): it raises a ``ctx.ui.select`` dialog ("Allow?") before a
``bash`` call matching ``rm -rf``, ``sudo`` or ``chmod/chown 777``.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Iterable

from state.home import Home
from support.claude import (
    ClaudePane,
    NetJail,
    StandIn,
    kill_tmux_server,
    start_tmux_server,
    tmux_socket_path,
    unique_socket,
)

REPO = Path(__file__).resolve().parents[2]
DEFAULT_PI = REPO / ".agents" / "pi" / "node_modules" / ".bin" / "pi"
PERMISSION_GATE = REPO / "tests" / "fixtures" / "pi-extensions" / "permission-gate.ts"
MODEL = "standin-model"
WIDTH, HEIGHT = 120, 40  # as the captures in tests/fixtures/screens/pi


def pi_binary() -> Path:
    """``$CAPTAIN_TEST_PI`` if set, else the copy ``.ci/install-agents`` installs."""
    override = os.environ.get("CAPTAIN_TEST_PI")
    return Path(override) if override else DEFAULT_PI


def pi_available() -> str | None:
    """None when the real pi can be run here offline; else why a test must skip."""
    binary = pi_binary()
    if not (binary.is_file() and os.access(binary, os.X_OK)):
        return (f"pi is not installed at {binary} (run .ci/install-agents, which needs npm; "
                "or set CAPTAIN_TEST_PI)")
    if shutil.which("node") is None:
        return "node is not on PATH (pi runs on it)"
    if shutil.which("tmux") is None:
        return "tmux is not installed"
    return NetJail.unavailable_reason()


def pi_env(root: Path, base_url: str, *, extensions: Iterable[Path] = ()) -> dict[str, str]:
    """A complete environment (not a diff on ours) for running pi offline against
    ``base_url``, with a throwaway HOME under ``root``."""
    home = root / "pi-home"
    agent = home / ".pi" / "agent"
    (agent / "extensions").mkdir(parents=True, exist_ok=True)
    (agent / "models.json").write_text(json.dumps({"providers": {"standin": {
        "baseUrl": base_url,  # pi adds /v1/messages itself
        "api": "anthropic-messages",
        "apiKey": "sk-dummy-standin",
        "models": [{"id": MODEL, "name": "Stand-in Model", "reasoning": False,
                    "contextWindow": 200000, "maxTokens": 8192}],
    }}}, indent=2))
    (agent / "settings.json").write_text(json.dumps({
        "defaultProvider": "standin", "defaultModel": MODEL,
        "enableInstallTelemetry": False}, indent=2))
    for ext in extensions:
        shutil.copyfile(ext, agent / "extensions" / Path(ext).name)
    loopback = "127.0.0.1,localhost,::1"
    return {
        "HOME": str(home),
        "PATH": os.environ.get("PATH", "/usr/local/bin:/usr/bin:/bin"),
        "LANG": "C.UTF-8", "LC_ALL": "C.UTF-8",
        "TERM": "xterm-256color",
        "SHELL": "/bin/bash",
        "USER": os.environ.get("USER", "root"),
        "TMPDIR": str(root),
        "PI_OFFLINE": "1",
        "PI_SKIP_VERSION_CHECK": "1",
        # anything proxied lands in the stand-in's trap (StandIn.blocked), never outside
        "HTTPS_PROXY": base_url, "HTTP_PROXY": base_url,
        "https_proxy": base_url, "http_proxy": base_url,
        "NO_PROXY": loopback, "no_proxy": loopback,
    }


def captain(home: Path, cwd: Path, *args: str, env: dict[str, str] | None = None,
            timeout: float = 60) -> subprocess.CompletedProcess[str]:
    """The real CLI (``python -m captain_tui``) against ``home``, as tests/conftest.py's
    ``cli`` runs it."""
    full = {k: v for k, v in os.environ.items()
            if not k.startswith("CAPTAIN_") or k == "CAPTAIN_TMUX_SOCKET"}
    full.update(CAPTAIN_HOME=str(home), PYTHONPATH=str(REPO))
    full.update(env or {})
    return subprocess.run([sys.executable, "-m", "captain_tui", *args], cwd=cwd, env=full,
                          capture_output=True, text=True, timeout=timeout)


@dataclass
class PiCrew:
    """A pi crew recruited by the real captain CLI into a jailed, private tmux server.

    ``home`` (a ``Home``) and ``home_root`` are the captain home; ``name`` / ``key`` the
    crew; ``pane`` reads and types into its pane (``pane.socket`` is the ``tmux -L`` name,
    ``pane.pane_id``, ``pane.pane_pid``); ``socket_path`` is the server's socket file (what
    ``captain --socket`` takes); ``data`` is ``captain crew --json``'s answer (assignment
    and message IDs, pane locator); ``stand_in`` the model API (push replies, read what pi
    sent); ``cli(*args)`` runs the real captain CLI against the home; ``close()`` kills the
    tmux server (and so pi), the stand-in and the jail. A context manager.
    """

    home: Home
    home_root: Path
    project: Path
    name: str
    data: dict
    pane: ClaudePane
    socket_path: Path
    stand_in: StandIn
    jail: NetJail
    recruited_at: float  # time.monotonic() when `captain crew` returned
    _closers: list[Callable[[], None]] = field(default_factory=list, repr=False)

    @property
    def key(self) -> str:
        return self.name.lower()

    def cli(self, *args: str, env: dict[str, str] | None = None,
            timeout: float = 60) -> subprocess.CompletedProcess[str]:
        return captain(self.home_root, self.project, *args, env=env, timeout=timeout)

    def close(self) -> None:
        while self._closers:
            try:
                self._closers.pop()()
            except Exception:  # noqa: BLE001 - tear down the rest whatever one does
                pass

    def __enter__(self) -> "PiCrew":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def start_pi_crew(root: Path, *, name: str = "Jack", task: str = "tidy the docs",
                  extensions: Iterable[Path] = (), default_text: str = "ok",
                  home_root: Path | None = None, project: Path | None = None,
                  width: int = WIDTH, height: int = HEIGHT,
                  log: Callable[[str], None] | None = None) -> PiCrew:
    """Recruit ``name`` with ``--agent pi`` through the real CLI, pi running in a tmux server
    inside a fresh loopback-only jail and talking to a fresh ``StandIn`` (which answers
    ``default_text`` unless replies are pushed). ``root`` is a scratch directory of the
    caller's; the captain home defaults to ``root/home`` and the crew's cwd to
    ``root/project``. Raises RuntimeError when pi cannot run here (``pi_available()``)."""
    reason = pi_available()
    if reason:
        raise RuntimeError(reason)
    root = Path(root)
    home_root = Path(home_root) if home_root else root / "home"
    project = Path(project) if project else root / "project"
    project.mkdir(parents=True, exist_ok=True)
    closers: list[Callable[[], None]] = []

    def undo() -> None:
        while closers:
            try:
                closers.pop()()
            except Exception:  # noqa: BLE001
                pass

    try:
        jail = NetJail()
        closers.append(jail.close)
        stand_in = StandIn(jail=jail, default_text=default_text, log=log)
        closers.append(stand_in.close)
        env = pi_env(root, stand_in.base_url, extensions=extensions)
        socket = unique_socket("captain-pi")
        start_tmux_server(socket, jail, width=width, height=height, env=env)
        closers.append(lambda: kill_tmux_server(socket))
        bindir = root / "bin"
        bindir.mkdir(exist_ok=True)
        link = bindir / "pi"
        if not link.exists():
            link.symlink_to(pi_binary().resolve())
        socket_path = tmux_socket_path(socket)
        r = captain(home_root, project, "crew", name, "--task", task, "--agent", "pi",
                    "--socket", str(socket_path), "--cwd", str(project), "--json",
                    env={"PATH": f"{bindir}{os.pathsep}{os.environ.get('PATH', '')}"})
        recruited = time.monotonic()
        if r.returncode != 0:
            raise RuntimeError(f"captain crew --agent pi failed ({r.returncode}): "
                               f"{r.stdout[-1000:]} {r.stderr[-1000:]}")
        data = json.loads(r.stdout)
        pane = ClaudePane(socket, data["pane"]["pane_id"], data["pane"]["pane_pid"])
        if not jail.same_namespace(pane.pane_pid):
            raise RuntimeError("captain's pane is not inside the network jail")
        return PiCrew(Home(home_root), home_root, project, name, data, pane, socket_path,
                      stand_in, jail, recruited, closers)
    except BaseException:
        undo()
        raise


def pi_pid(crew: PiCrew) -> int:
    """The pi process: captain's window runs ``pi`` as the pane's own process (node names
    itself ``pi``); checked, so a test never signals anything else."""
    pid = crew.pane.pane_pid
    argv0 = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")[0]
    if Path(argv0.decode(errors="replace")).name not in ("pi", "node"):
        raise RuntimeError(f"pane pid {pid} is {argv0!r}, not pi")
    return pid

"""A harness for running the REAL pi coding agent as a captain crew in real tmux, offline.

pi (``@mariozechner/pi-coding-agent``, pinned by ``.ci/install-agents``) speaks the Anthropic
Messages API to its model (``api: "anthropic-messages"``), so this reuses the Claude
harness's ``StandIn`` (``support.claude``: the Messages API, listening inside the jail),
and what every agent's harness shares (``support.agents``: ``NetJail``, a network
namespace with nothing but loopback in which the tmux server, pi, captain's hooks and
every tool call run; the private-socket tmux helpers; recruiting through the real CLI).
What is pi's own:

- ``pi_env``: a throwaway HOME whose ``.pi/agent/models.json`` has one provider, the
  stand-in, and ``settings.json`` makes it the default (no login, no onboarding screen),
  plus ``PI_OFFLINE=1`` and ``PI_SKIP_VERSION_CHECK=1``; extensions given are copied into
  ``.pi/agent/extensions/`` (pi discovers them there at start-up).
- ``start_pi_crew``: recruits a pi crew through the real ``captain crew NAME --agent pi``
  CLI into such a jailed tmux server and hands back an ``AgentCrew`` (``PiCrew``; see its
  docstring): for the live tests and for ``bench/``.

``PERMISSION_GATE`` is pi's example extension ``permission-gate.ts``, copied unchanged
(tests/fixtures/README.md): it raises a ``ctx.ui.select`` dialog ("Allow?") before a
``bash`` call matching ``rm -rf``, ``sudo`` or ``chmod/chown 777``.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Callable, Iterable

from support.agents import (
    REPO,
    AgentCrew,
    agent_binary,
    agent_unavailable,
    offline_env,
    start_agent_crew,
)
from support.claude import StandIn

DEFAULT_PI = REPO / ".agents" / "pi" / "node_modules" / ".bin" / "pi"
PERMISSION_GATE = REPO / "tests" / "fixtures" / "pi-extensions" / "permission-gate.ts"
MODEL = "standin-model"
WIDTH, HEIGHT = 120, 40  # as the captures in tests/fixtures/screens/pi

PiCrew = AgentCrew  # a pi crew is no different from any other once recruited


def pi_binary() -> Path:
    """``$CAPTAIN_TEST_PI`` if set, else the copy ``.ci/install-agents`` installs."""
    return agent_binary("CAPTAIN_TEST_PI", DEFAULT_PI)


def pi_available() -> str | None:
    """None when the real pi can be run here offline; else why a test must skip."""
    return agent_unavailable(
        "pi",
        pi_binary(),
        "CAPTAIN_TEST_PI",
        ("node", "node is not on PATH (pi runs on it)"),
        ("tmux", "tmux is not installed"),
    )


def pi_env(root: Path, base_url: str, *, extensions: Iterable[Path] = ()) -> dict[str, str]:
    """A complete environment (not a diff on ours) for running pi offline against
    ``base_url``, with a throwaway HOME under ``root``."""
    home = root / "pi-home"
    agent = home / ".pi" / "agent"
    (agent / "extensions").mkdir(parents=True, exist_ok=True)
    (agent / "models.json").write_text(
        json.dumps(
            {
                "providers": {
                    "standin": {
                        "baseUrl": base_url,  # pi adds /v1/messages itself
                        "api": "anthropic-messages",
                        "apiKey": "sk-dummy-standin",
                        "models": [
                            {
                                "id": MODEL,
                                "name": "Stand-in Model",
                                "reasoning": False,
                                "contextWindow": 200000,
                                "maxTokens": 8192,
                            }
                        ],
                    }
                }
            },
            indent=2,
        )
    )
    (agent / "settings.json").write_text(
        json.dumps(
            {"defaultProvider": "standin", "defaultModel": MODEL, "enableInstallTelemetry": False},
            indent=2,
        )
    )
    for ext in extensions:
        shutil.copyfile(ext, agent / "extensions" / Path(ext).name)
    env = offline_env(home, base_url, tmpdir=root)
    env.update(PI_OFFLINE="1", PI_SKIP_VERSION_CHECK="1")
    return env


def start_pi_crew(
    root: Path,
    *,
    name: str = "Jack",
    task: str = "tidy the docs",
    extensions: Iterable[Path] = (),
    default_text: str = "ok",
    home_root: Path | None = None,
    project: Path | None = None,
    width: int = WIDTH,
    height: int = HEIGHT,
    log: Callable[[str], None] | None = None,
    approval_timeout: float = 0,
    approval_tools: Iterable[str] = (),
) -> AgentCrew:
    """Recruit ``name`` with ``--agent pi`` through the real CLI
    (``support.agents.start_agent_crew``), pi running in a tmux server inside a fresh
    loopback-only jail and talking to a fresh ``StandIn`` (which answers ``default_text``
    unless replies are pushed). ``root`` is a scratch directory of the caller's; the
    captain home defaults to ``root/home`` and the crew's cwd to ``root/project``. Raises
    RuntimeError when pi cannot run here (``pi_available()``). ``approval_tools``: the
    home's ``[crew] pi_approval_tools`` (the tools captain's extension holds for the
    captain, each up to ``approval_timeout`` seconds); none by default, as captain's."""
    reason = pi_available()
    if reason:
        raise RuntimeError(reason)
    root = Path(root)
    home_root = Path(home_root) if home_root else root / "home"
    home_root.mkdir(parents=True, exist_ok=True)
    config = home_root / "config.toml"
    text = config.read_text() if config.exists() else ""
    if "[crew]" not in text:
        config.write_text(
            f"{text}\n[crew]\napproval_timeout = {approval_timeout}\n"
            f"pi_approval_tools = {json.dumps(list(approval_tools))}\n"
        )
    return start_agent_crew(
        "pi",
        root,
        binary=pi_binary(),
        name=name,
        task=task,
        stand_in=lambda jail: StandIn(jail=jail, default_text=default_text, log=log),
        env=lambda base_url: pi_env(root, base_url, extensions=extensions),
        home_root=home_root,
        project=Path(project) if project else root / "project",
        width=width,
        height=height,
    )


def pi_pid(crew: AgentCrew) -> int:
    """The pi process: captain's window runs ``pi`` as the pane's own process (node names
    itself ``pi``); checked, so a test never signals anything else."""
    pid = crew.pane.pane_pid
    argv0 = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")[0]
    if Path(argv0.decode(errors="replace")).name not in ("pi", "node"):
        raise RuntimeError(f"pane pid {pid} is {argv0!r}, not pi")
    return pid

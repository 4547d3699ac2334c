"""A harness for running the REAL Claude Code CLI in real tmux, offline.

What every agent's harness shares is in ``support.agents`` (imported from here too, as the
older tests do): ``NetJail``, a network namespace with nothing but loopback, in which the
tmux server, Claude Code and every program it starts (hooks, Bash tool calls) run; the
stand-in plumbing; the private-socket tmux helpers. What is Claude Code's own:

- ``StandIn`` plays the Anthropic Messages API inside the jail, so Claude Code reaches it
  at ``http://127.0.0.1:PORT`` and nothing else. It is also the HTTP(S) proxy "trap":
  ``claude_env`` points HTTPS_PROXY/HTTP_PROXY at it, so any attempt at another host shows
  up in ``StandIn.blocked`` instead of leaving the machine.
- ``claude_env`` makes a throwaway HOME whose ``.claude.json`` has onboarding done, the fake
  API key approved and the project directory trusted, and the environment that switches
  off telemetry, updates, error reporting and other non-essential traffic.
- ``ClaudePane.start`` runs the binary in a tmux pane on a private socket (``tmux -L
  NAME``, never the default server); ``start_claude_crew`` recruits it through the real
  ``captain crew NAME --agent claude`` instead.

Import it from tests as ``from support.claude import ...`` (pytest puts tests/ on
sys.path); it holds no tests itself. ``ClaudeRig`` bundles the pieces for one test.
Checked with Claude Code 2.1.332 (``.ci/install-agents`` pins it).
"""

from __future__ import annotations

import json
import queue
import shlex
import threading
import time
import uuid
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler
from pathlib import Path
from typing import Any, Callable, Iterable

from support.agents import (  # noqa: F401 - NetJail, tmux helpers: also imported from here
    REPO,
    AgentCrew,
    NetJail,
    Pane,
    StandInServer,
    agent_binary,
    agent_unavailable,
    kill_tmux_server,
    offline_env,
    start_agent_crew,
    start_tmux_server,
    tmux,
    tmux_socket_path,
    unique_socket,
)

AGENTS_DIR = REPO / ".agents"
DEFAULT_CLAUDE = AGENTS_DIR / "node_modules" / ".bin" / "claude"
# Made up. Claude Code remembers an approved key by its last 20 characters.
FAKE_API_KEY = "sk-ant-api03-captain-test-0000000000000000000000KEY"


# --------------------------------------------------------------------------------------
# Finding the pieces
# --------------------------------------------------------------------------------------


def claude_binary() -> Path:
    """``$CAPTAIN_TEST_CLAUDE`` if set, else the copy ``.ci/install-agents`` installs."""
    return agent_binary("CAPTAIN_TEST_CLAUDE", DEFAULT_CLAUDE)


def claude_available() -> str | None:
    """None when the real Claude Code can be run here offline; else why a test must skip."""
    return agent_unavailable(
        "Claude Code", claude_binary(), "CAPTAIN_TEST_CLAUDE", ("tmux", "tmux is not installed")
    )


# --------------------------------------------------------------------------------------
# The stand-in for the Messages API
# --------------------------------------------------------------------------------------


@dataclass
class Text:
    """A reply of plain text (``end_turn``)."""

    text: str = "ok"
    delay: float = 0.0  # seconds to wait before the first content delta
    hold: threading.Event | None = None  # if given, wait for it before finishing


@dataclass
class ToolUse:
    """A reply that calls a tool, e.g. ``ToolUse("Bash", {"command": "echo hi"})``."""

    name: str
    input: dict[str, Any]
    text: str = ""  # optional text block before the tool call
    tool_id: str = field(default_factory=lambda: "toolu_" + uuid.uuid4().hex[:24])


Reply = Text | ToolUse


@dataclass
class Request:
    """One request the stand-in received."""

    seq: int
    method: str
    path: str
    headers: dict[str, str]
    body: Any  # parsed JSON (or raw text, or None)
    kind: str  # "main" | "aux" | "count_tokens" | "other" | "blocked"
    at: float
    reply: Reply | None = None  # what it answered (messages only)
    usage: dict[str, int] | None = None  # the usage it reported (usage_for), messages only
    model: str | None = None  # the model the request named (messages only)

    @property
    def text(self) -> str:
        """The whole body as text (for "does MAGIC appear anywhere" checks)."""
        return self.body if isinstance(self.body, str) else json.dumps(self.body)

    def texts(self, roles: Iterable[str] = ("user", "system")) -> list[str]:
        """Every text the ``messages`` of these roles carry (strings and text blocks).

        Claude Code 2.1.33x sends hook ``additionalContext`` as a ``system``-role message
        ("UserPromptSubmit hook additional context: ..."); SessionStart context leads the
        ``system`` message that follows the first user turn.
        """
        wanted = set(roles)
        out: list[str] = []
        if not isinstance(self.body, dict):
            return out
        for msg in self.body.get("messages") or []:
            if msg.get("role") not in wanted:
                continue
            content = msg.get("content")
            if isinstance(content, str):
                out.append(content)
            elif isinstance(content, list):
                for block in content:
                    if isinstance(block, dict) and block.get("type") == "text":
                        out.append(block.get("text", ""))
        return out

    def user_texts(self) -> list[str]:
        """Every text the ``user`` turns carry, in order."""
        return self.texts(("user",))

    def last_user_text(self) -> str:
        """The texts of the last ``user`` message, joined."""
        if not isinstance(self.body, dict):
            return ""
        msgs = [m for m in self.body.get("messages") or [] if m.get("role") == "user"]
        if not msgs:
            return ""
        content = msgs[-1].get("content")
        if isinstance(content, str):
            return content
        parts = []
        for block in content or []:
            if isinstance(block, dict):
                if block.get("type") == "text":
                    parts.append(block.get("text", ""))
                elif block.get("type") == "tool_result":
                    parts.append(json.dumps(block.get("content")))
        return "\n".join(parts)


def is_main_request(body: Any) -> bool:
    """The main conversation (the agent loop) sends its tools; side requests (titles,
    summaries, quota probes) send none."""
    return isinstance(body, dict) and bool(body.get("tools"))


class StandIn(StandInServer):
    """A threaded loopback HTTP server that plays the Anthropic Messages API.

    ``POST /v1/messages`` answers from ``script`` (a queue of replies) for main requests,
    and ``Text(aux_text)`` for auxiliary ones; ``count_tokens`` and anything else get a
    minimal answer. Every request is recorded in ``requests``; CONNECT or absolute-URL
    requests (the proxy trap) are recorded with kind ``blocked`` and refused.
    """

    request_cls = Request

    def __init__(
        self,
        jail: NetJail | None = None,
        default_text: str = "ok",
        aux_text: str = "ok",
        log: Callable[[str], None] | None = None,
    ) -> None:
        super().__init__(log)
        self.default_text = default_text
        self.aux_text = aux_text
        self._script: "queue.Queue[Reply]" = queue.Queue()
        self.serve(_Handler, jail)

    # -- script ----------------------------------------------------------------------
    def push(self, *replies: Reply) -> None:
        """Queue replies for the next main requests, in order."""
        for reply in replies:
            self._script.put(reply)

    def next_reply(self, main: bool) -> Reply:
        if not main:
            return Text(self.aux_text)
        try:
            return self._script.get_nowait()
        except queue.Empty:
            return Text(self.default_text)


def _sse(event: str, data: dict[str, Any]) -> bytes:
    return f"event: {event}\ndata: {json.dumps(data)}\n\n".encode()


def usage_for(n: int) -> dict[str, int]:
    """The usage the stand-in reports for its ``n``-th answer: distinct per answer (so a
    test can tell a turn counted twice), as Anthropic reports it (input apart from cache
    reads and writes). Streamed, ``output_tokens`` is 1 at ``message_start`` and this
    figure at ``message_delta``."""
    return {
        "input_tokens": 1000 + 13 * n,
        "output_tokens": 20 + 3 * n,
        "cache_creation_input_tokens": 200 + 5 * n,
        "cache_read_input_tokens": 3000 + 11 * n,
    }


def message_json(reply: Reply, model: str, usage: dict[str, int]) -> dict[str, Any]:
    """The non-streaming answer for ``reply``."""
    content: list[dict[str, Any]] = []
    if isinstance(reply, ToolUse):
        if reply.text:
            content.append({"type": "text", "text": reply.text})
        content.append(
            {"type": "tool_use", "id": reply.tool_id, "name": reply.name, "input": reply.input}
        )
        stop = "tool_use"
    else:
        content.append({"type": "text", "text": reply.text})
        stop = "end_turn"
    return {
        "id": "msg_" + uuid.uuid4().hex[:24],
        "type": "message",
        "role": "assistant",
        "model": model,
        "content": content,
        "stop_reason": stop,
        "stop_sequence": None,
        "usage": usage,
    }


def message_events(
    reply: Reply, model: str, usage: dict[str, int]
) -> Iterable[bytes | float | threading.Event]:
    """The server-sent events for ``reply``; floats are pauses, Events are holds."""
    start = {
        "type": "message_start",
        "message": {
            "id": "msg_" + uuid.uuid4().hex[:24],
            "type": "message",
            "role": "assistant",
            "model": model,
            "content": [],
            "stop_reason": None,
            "stop_sequence": None,
            "usage": {**usage, "output_tokens": 1},
        },
    }
    yield _sse("message_start", start)
    yield _sse("ping", {"type": "ping"})
    index = 0
    if isinstance(reply, Text):
        if reply.delay:
            yield reply.delay
        yield _sse(
            "content_block_start",
            {
                "type": "content_block_start",
                "index": 0,
                "content_block": {"type": "text", "text": ""},
            },
        )
        yield _sse(
            "content_block_delta",
            {
                "type": "content_block_delta",
                "index": 0,
                "delta": {"type": "text_delta", "text": reply.text},
            },
        )
        if reply.hold is not None:
            yield reply.hold
        yield _sse("content_block_stop", {"type": "content_block_stop", "index": 0})
        stop = "end_turn"
    else:
        if reply.text:
            yield _sse(
                "content_block_start",
                {
                    "type": "content_block_start",
                    "index": 0,
                    "content_block": {"type": "text", "text": ""},
                },
            )
            yield _sse(
                "content_block_delta",
                {
                    "type": "content_block_delta",
                    "index": 0,
                    "delta": {"type": "text_delta", "text": reply.text},
                },
            )
            yield _sse("content_block_stop", {"type": "content_block_stop", "index": 0})
            index = 1
        yield _sse(
            "content_block_start",
            {
                "type": "content_block_start",
                "index": index,
                "content_block": {
                    "type": "tool_use",
                    "id": reply.tool_id,
                    "name": reply.name,
                    "input": {},
                },
            },
        )
        yield _sse(
            "content_block_delta",
            {
                "type": "content_block_delta",
                "index": index,
                "delta": {"type": "input_json_delta", "partial_json": json.dumps(reply.input)},
            },
        )
        yield _sse("content_block_stop", {"type": "content_block_stop", "index": index})
        stop = "tool_use"
    yield _sse(
        "message_delta",
        {
            "type": "message_delta",
            "delta": {"stop_reason": stop, "stop_sequence": None},
            "usage": {"output_tokens": usage["output_tokens"]},
        },
    )
    yield _sse("message_stop", {"type": "message_stop"})


class _Handler(BaseHTTPRequestHandler):
    stand_in: StandIn
    protocol_version = "HTTP/1.1"
    server_version = "captain-stand-in/1"

    def log_message(self, format: str, *args: Any) -> None:  # quiet
        pass

    # -- plumbing --------------------------------------------------------------------
    def _body(self) -> Any:
        length = int(self.headers.get("Content-Length") or 0)
        raw = self.rfile.read(length) if length else b""
        if not raw:
            return None
        try:
            return json.loads(raw)
        except ValueError:
            return raw.decode("utf-8", "replace")

    def _json(self, status: int, payload: Any) -> None:
        data = json.dumps(payload).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.send_header("request-id", "req_" + uuid.uuid4().hex[:20])
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(data)

    def _chunk(self, data: bytes) -> None:
        self.wfile.write(b"%x\r\n%s\r\n" % (len(data), data))
        self.wfile.flush()

    def _is_proxy_request(self) -> bool:
        return self.command == "CONNECT" or self.path.startswith(("http://", "https://"))

    def _record(self, kind: str, body: Any = None, reply: Reply | None = None) -> Request:
        return self.stand_in.record(
            method=self.command,
            path=self.path,
            headers={k.lower(): v for k, v in self.headers.items()},
            body=body,
            kind=kind,
            reply=reply,
        )

    def _blocked(self) -> None:
        body = self._body() if self.command != "CONNECT" else None
        self._record("blocked", body)
        self.close_connection = True
        data = b"captain stand-in: only loopback is reachable in tests\n"
        self.send_response(403)
        self.send_header("Content-Type", "text/plain")
        self.send_header("Content-Length", str(len(data)))
        self.send_header("Connection", "close")
        self.end_headers()
        self.wfile.write(data)

    # -- verbs -----------------------------------------------------------------------
    def do_CONNECT(self) -> None:
        self._blocked()

    def do_POST(self) -> None:
        if self._is_proxy_request():
            return self._blocked()
        body = self._body()
        path = self.path.split("?", 1)[0].rstrip("/")
        if path == "/v1/messages/count_tokens":
            self._record("count_tokens", body)
            return self._json(200, {"input_tokens": 12})
        if path != "/v1/messages":
            self._record("other", body)
            return self._json(
                404,
                {
                    "type": "error",
                    "error": {"type": "not_found_error", "message": f"stand-in has no {path}"},
                },
            )
        main = is_main_request(body)
        reply = self.stand_in.next_reply(main)
        req = self._record("main" if main else "aux", body, reply)
        req.usage = usage = usage_for(req.seq)
        model = (body or {}).get("model", "claude-stand-in") if isinstance(body, dict) else "x"
        req.model = model
        if isinstance(body, dict) and body.get("stream"):
            self._stream(reply, model, usage)
        else:
            self._json(200, message_json(reply, model, usage))

    def _stream(self, reply: Reply, model: str, usage: dict[str, int]) -> None:
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.send_header("Cache-Control", "no-cache")
        self.send_header("Transfer-Encoding", "chunked")
        self.send_header("request-id", "req_" + uuid.uuid4().hex[:20])
        self.end_headers()
        try:
            for item in message_events(reply, model, usage):
                if isinstance(item, float):
                    time.sleep(item)
                elif isinstance(item, threading.Event):
                    item.wait(timeout=600)
                else:
                    self._chunk(item)
            self.wfile.write(b"0\r\n\r\n")
            self.wfile.flush()
        except (BrokenPipeError, ConnectionResetError):
            self.close_connection = True

    def _other(self) -> None:
        if self._is_proxy_request():
            return self._blocked()
        body = self._body() if self.command not in ("GET", "HEAD") else None
        self._record("other", body)
        self._json(200, {})

    do_GET = _other
    do_HEAD = _other
    do_PUT = _other
    do_PATCH = _other
    do_DELETE = _other
    do_OPTIONS = _other


# --------------------------------------------------------------------------------------
# The throwaway HOME and environment
# --------------------------------------------------------------------------------------

QUIET_ENV = {
    # Names checked against the 2.1.33x binary's strings.
    "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1",
    "DISABLE_TELEMETRY": "1",
    "DISABLE_AUTOUPDATER": "1",
    "DISABLE_UPDATES": "1",
    "DISABLE_ERROR_REPORTING": "1",
    "DISABLE_BUG_COMMAND": "1",
    "DISABLE_FEEDBACK_COMMAND": "1",
    "DISABLE_GROWTHBOOK": "1",
    "DISABLE_INSTALLATION_CHECKS": "1",
    "CLAUDE_CODE_DISABLE_FEEDBACK_SURVEY": "1",
    "CLAUDE_CODE_DISABLE_TERMINAL_TITLE": "1",
    "CLAUDE_CODE_IDE_SKIP_AUTO_INSTALL": "1",
    # Without these two, 2.1.332 still fetches its model catalog (downloads.claude.ai) and
    # the official plugin marketplace (downloads.claude.ai, then github.com) at start-up.
    "CLAUDE_CODE_MODEL_CATALOG": "off",
    "CLAUDE_CODE_DISABLE_OFFICIAL_MARKETPLACE_AUTOINSTALL": "1",
}


def claude_env(
    tmp_path: Path,
    project_dir: Path,
    base_url: str,
    *,
    api_key: str = FAKE_API_KEY,
    extra: dict[str, str] | None = None,
    config: dict[str, Any] | None = None,
    settings: dict[str, Any] | None = None,
    also_trust: Iterable[Path] = (),
) -> dict[str, str]:
    """A complete environment (not a diff on ours) for running Claude Code offline.

    Makes ``tmp_path/claude-home`` with ``.claude.json`` (onboarding done, ``api_key``
    approved, ``project_dir`` and ``also_trust`` trusted) and ``.claude/settings.json``
    (permission mode ``manual``, so tool calls ask, as in the fixtures; 2.1.332 otherwise
    defaults to ``auto`` and shows an "Auto mode is now ..." notice). ``config`` is merged
    into ``.claude.json``, ``settings`` into ``settings.json``.

    Of ``.claude.json`` only three things are required to reach the composer (checked
    with 2.1.332): ``hasCompletedOnboarding`` (else the theme picker),
    ``customApiKeyResponses.approved`` holding the key's last 20 characters (else "Detected
    a custom API key ... Do you want to use this API key?", defaulting to No) and
    ``projects[<dir>].hasTrustDialogAccepted`` (else the "Accessing workspace" trust
    dialog, defaulting to "No, exit").
    """
    home = tmp_path / "claude-home"
    (home / ".claude").mkdir(parents=True, exist_ok=True)
    project = str(Path(project_dir).resolve())
    doc: dict[str, Any] = {
        "hasCompletedOnboarding": True,
        "lastOnboardingVersion": "2.1.332",
        "theme": "dark",
        "numStartups": 1,
        "autoUpdates": False,
        # Else, with defaultMode set in user settings, a "Make auto mode your default
        # permission mode?" dialog pops up some seconds after start-up (not every time).
        "hasSeenAutoDefaultNudge": True,
        "customApiKeyResponses": {"approved": [api_key[-20:]], "rejected": []},
        "projects": {
            str(Path(d).resolve()): {
                "hasTrustDialogAccepted": True,
                "hasCompletedProjectOnboarding": True,
                "allowedTools": [],
            }
            for d in [project, *also_trust]
        },
    }
    for key, value in (config or {}).items():
        doc[key] = value
    (home / ".claude.json").write_text(json.dumps(doc, indent=2))
    user_settings = {"permissions": {"defaultMode": "manual"}}
    for key, value in (settings or {}).items():
        user_settings[key] = value
    (home / ".claude" / "settings.json").write_text(json.dumps(user_settings, indent=2))
    env = offline_env(home, base_url, tmpdir=tmp_path)
    env.update(ANTHROPIC_API_KEY=api_key, ANTHROPIC_BASE_URL=base_url, **QUIET_ENV)
    env.update(extra or {})
    return env


# --------------------------------------------------------------------------------------
# Claude Code in a pane: by hand, or recruited by the real captain CLI
# --------------------------------------------------------------------------------------


class ClaudePane(Pane):
    """Claude Code (or any command) running in a tmux pane on a private socket."""

    @classmethod
    def start(
        cls,
        socket_name: str,
        cwd: Path,
        env: dict[str, str],
        *,
        jail: NetJail | None = None,
        extra_args: list[str] | None = None,
        settings: Path | None = None,
        width: int = 100,
        height: int = 30,
        binary: Path | None = None,
        command: list[str] | None = None,
        session: str = "claude",
        allow_network: bool = False,
    ) -> "ClaudePane":
        """Run ``claude [--settings FILE] EXTRA_ARGS`` (or ``command``) in a new window.

        With a ``jail`` the tmux server is started inside it (if it is not running yet).
        Claude Code itself is refused without a jail unless ``allow_network`` (the caller
        then vouches that nothing can leave the machine); a ``command`` (e.g. a scripted
        fake agent) may run without one. The pane runs a launcher script that sets exactly
        ``env`` (nothing inherited from this process).
        """
        if jail is None and command is None and not allow_network:
            raise RuntimeError(
                "refusing to run Claude Code outside a NetJail "
                "(pass allow_network=True to vouch for the network)"
            )
        argv = command or [str(binary or claude_binary())]
        if command is None:
            if settings is not None:
                argv += ["--settings", str(settings)]
            argv += list(extra_args or [])
        launcher = Path(env.get("TMPDIR") or cwd) / f"launch-{uuid.uuid4().hex[:8]}.sh"
        lines = ["#!/bin/sh", "# written by tests/support/claude.py"]
        lines += [
            f"export {k}={shlex.quote(v)}"
            for k, v in sorted(env.items())
            if k.replace("_", "").isalnum()
        ]
        lines += [f"cd {shlex.quote(str(cwd))}", "exec " + shlex.join(argv), ""]
        launcher.write_text("\n".join(lines))
        launcher.chmod(0o700)

        if tmux(socket_name, "has-session", "-t", session, check=False).returncode != 0:
            start_tmux_server(socket_name, jail, session=session, width=width, height=height)
            tmux(
                socket_name,
                "respawn-pane",
                "-k",
                "-t",
                f"{session}:0.0",
                "-c",
                str(cwd),
                str(launcher),
            )
            out = tmux(
                socket_name,
                "display-message",
                "-p",
                "-t",
                f"{session}:0.0",
                "#{pane_id} #{pane_pid}",
            )
        else:
            out = tmux(
                socket_name,
                "new-window",
                "-d",
                "-t",
                session,
                "-c",
                str(cwd),
                "-P",
                "-F",
                "#{pane_id} #{pane_pid}",
                str(launcher),
            )
        pane_id, pid = out.stdout.split()
        tmux(
            socket_name,
            "resize-window",
            "-t",
            pane_id,
            "-x",
            str(width),
            "-y",
            str(height),
            check=False,
        )
        pane = cls(socket_name, pane_id, int(pid))
        if jail is not None and not jail.same_namespace(pane.pane_pid):
            pane.kill()
            raise RuntimeError("the pane escaped the network jail")
        return pane


def start_claude_crew(
    root: Path,
    *,
    name: str = "Jack",
    task: str = "tidy the docs",
    home_root: Path | None = None,
    project: Path | None = None,
    width: int = 100,
    height: int = 30,
    log: Callable[[str], None] | None = None,
    approval_timeout: float = 0,
) -> AgentCrew:
    """Recruit ``name`` with ``--agent claude`` through the real CLI
    (``support.agents.start_agent_crew``): Claude Code in a fresh jail, in ``claude_env``
    (``root/claude-home``), talking to a fresh ``StandIn``. The captain home defaults to
    ``root/home``, the crew's cwd to ``root/project``. Raises RuntimeError when Claude Code
    cannot run here (``claude_available()``)."""
    reason = claude_available()
    if reason:
        raise RuntimeError(reason)
    root = Path(root)
    project = Path(project) if project else root / "project"
    return start_agent_crew(
        "claude",
        root,
        binary=claude_binary(),
        name=name,
        task=task,
        stand_in=lambda jail: StandIn(jail=jail, log=log),
        env=lambda base_url: claude_env(root, project, base_url),
        home_root=Path(home_root) if home_root else root / "home",
        project=project,
        width=width,
        height=height,
        approval_timeout=approval_timeout,
    )


# --------------------------------------------------------------------------------------
# Reading Claude Code's screen
# --------------------------------------------------------------------------------------

RULE = "─"


def composer_line(screen: str) -> str | None:
    """The ``❯`` line that sits between two horizontal rules, or None."""
    lines = screen.splitlines()
    for i in range(1, len(lines) - 1):
        if (
            lines[i].lstrip().startswith("❯")
            and lines[i - 1].strip().startswith(RULE * 10)
            and lines[i + 1].strip().startswith(RULE * 10)
        ):
            return lines[i]
    return None


def is_idle_composer(screen: str) -> bool:
    """An empty composer between rules, no permission prompt, nothing running."""
    line = composer_line(screen)
    return (
        line is not None
        and line.replace("❯", "").strip() == ""
        and "Do you want to proceed?" not in screen
        and "esc to interrupt" not in screen
    )


def hook_settings(path: Path, hooks: dict[str, str]) -> Path:
    """Write a ``--settings`` file registering ``{event: shell command}`` hooks."""
    doc = {
        "hooks": {
            event: [{"hooks": [{"type": "command", "command": cmd}]}]
            for event, cmd in hooks.items()
        }
    }
    path.write_text(json.dumps(doc, indent=2))
    return path


def approve_permission_prompt(
    pane: ClaudePane, stand_in: StandIn, after: int, timeout: float = 15.0, key: str = "Enter"
) -> Request:
    """Answer an on-screen permission prompt with ``key`` (Enter = "1. Yes") and return
    the main request that carries the tool result.

    Claude Code 2.1.332 ignores keys that arrive within roughly 0.3 s of the prompt being
    drawn, so the key is re-sent (bounded) until the follow-up request shows up.
    """
    deadline = time.monotonic() + timeout
    while True:
        pane.send_keys(key)
        try:
            return stand_in.wait_main(
                after=after, timeout=min(1.0, max(0.05, deadline - time.monotonic()))
            )
        except TimeoutError:
            if time.monotonic() >= deadline:
                raise TimeoutError(
                    f"permission prompt not answered within {timeout}s; screen:\n{pane.capture()}"
                ) from None
            if "Do you want to proceed?" not in pane.capture():
                # The prompt is gone; the request may just be slow.
                return stand_in.wait_main(
                    after=after, timeout=max(0.05, deadline - time.monotonic())
                )


class ClaudeRig:
    """Everything one real-Claude test needs: a NetJail, a StandIn inside it, a throwaway
    HOME and env, a project directory and a private tmux socket. Use as a context manager
    (or call ``close()``); it kills its tmux server, the stand-in and the jail.

        with ClaudeRig(tmp_path) as rig:
            pane = rig.start(settings=hook_settings(...))
            pane.wait_for(is_idle_composer, 45)
            rig.stand_in.push(Text("hello"))
    """

    def __init__(
        self,
        tmp_path: Path,
        *,
        project: Path | None = None,
        env_extra: dict[str, str] | None = None,
        config: dict[str, Any] | None = None,
        settings: dict[str, Any] | None = None,
        log: Callable[[str], None] | None = None,
    ) -> None:
        self.tmp_path = Path(tmp_path)
        self.project = Path(project) if project else self.tmp_path / "project"
        self.project.mkdir(parents=True, exist_ok=True)
        self.socket = unique_socket("captain-claude")
        self.jail: NetJail | None = None
        self.stand_in: StandIn | None = None
        self.panes: list[ClaudePane] = []
        try:
            self.jail = NetJail()
            self.stand_in = StandIn(jail=self.jail, log=log)
            self.env = claude_env(
                self.tmp_path,
                self.project,
                self.stand_in.base_url,
                extra=env_extra,
                config=config,
                settings=settings,
            )
        except BaseException:
            self.close()
            raise

    def start(
        self,
        *,
        settings: Path | None = None,
        extra_args: list[str] | None = None,
        width: int = 100,
        height: int = 30,
        env_extra: dict[str, str] | None = None,
    ) -> ClaudePane:
        env = dict(self.env)
        env.update(env_extra or {})
        pane = ClaudePane.start(
            self.socket,
            self.project,
            env,
            jail=self.jail,
            settings=settings,
            extra_args=extra_args,
            width=width,
            height=height,
        )
        self.panes.append(pane)
        return pane

    def close(self) -> None:
        kill_tmux_server(self.socket)
        if self.stand_in is not None:
            self.stand_in.close()
            self.stand_in = None
        if self.jail is not None:
            self.jail.close()
            self.jail = None

    def __enter__(self) -> "ClaudeRig":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

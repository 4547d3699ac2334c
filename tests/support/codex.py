"""A harness for running the REAL Codex CLI as a captain crew in real tmux, offline.

Nothing here talks to anything but loopback:

- the tmux server (so every pane, Codex, its hooks and its tool calls) runs inside a
  ``support.agents.NetJail``: a network namespace with nothing but its own loopback;
- ``ResponsesStandIn`` plays the OpenAI Responses API there (a port of the shared lab's
  ``fake_openai_lab.py``): it streams a text reply, or an ``exec_command`` call asking for
  escalation (``sandbox_permissions: require_escalated``) so that Codex under
  ``approval_policy = "on-request"`` shows its approval prompt. It also traps proxied
  traffic: ``codex_env`` points HTTP(S)_PROXY at it, and anything aimed elsewhere is
  recorded in ``blocked`` and refused;
- ``codex_env`` makes a throwaway HOME and CODEX_HOME with the lab's config (the stand-in
  as provider, no login, the project trusted, the model-migration notice answered, the
  screen-reader question settled, no update check). captain adds its own hooks with ``-c``
  and never writes that config.

``start_codex_crew`` recruits a crew through the real ``captain crew NAME --agent codex``
CLI into such a jailed, private tmux server and returns a ``CodexCrew`` (tests and
``bench/`` use it); ``CodexCrew.close()`` kills exactly the processes it started. Checked
with Codex 0.169.0 (``.ci/install-agents`` installs it); ``CAPTAIN_TEST_CODEX`` points at
another binary.
"""

from __future__ import annotations

import json
import os
import queue
import signal
import threading
import time
import uuid
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler
from pathlib import Path
from typing import Any, Callable

from support.agents import (
    REPO,
    AgentCrew,
    NetJail,
    StandInServer,
    agent_binary,
    agent_unavailable,
    kill_tmux_server,
    offline_env,
    start_agent_crew,
    tmux,
)

DEFAULT_CODEX = REPO / ".agents" / "codex" / "node_modules" / ".bin" / "codex"
API_KEY = "captain-test-dummy-key"
MODEL = "gpt-5.5"  # in Codex's bundled catalog: no "model metadata not found" warning
TITLE_PROMPT = "Generate a concise, single-line task title"
SHELL_TOOLS = ("exec_command", "shell_command", "shell")


# --------------------------------------------------------------------------------------
# Finding the pieces
# --------------------------------------------------------------------------------------


def codex_binary() -> Path:
    """``$CAPTAIN_TEST_CODEX`` if set, else the copy ``.ci/install-agents`` installs."""
    return agent_binary("CAPTAIN_TEST_CODEX", DEFAULT_CODEX)


def codex_available() -> str | None:
    """None when the real Codex can be run here offline; else why a test must skip."""
    # Without bubblewrap Codex warns on screen ("could not find bubblewrap on PATH"), and
    # its sandboxed commands cannot run.
    return agent_unavailable(
        "Codex",
        codex_binary(),
        "CAPTAIN_TEST_CODEX",
        ("tmux", "tmux is not installed"),
        ("bwrap", "bubblewrap (bwrap) is not installed; Codex's sandbox needs it"),
    )


# --------------------------------------------------------------------------------------
# The stand-in for the Responses API
# --------------------------------------------------------------------------------------


@dataclass
class Say:
    """A streamed assistant message."""

    text: str = "Done. (stand-in reply)"
    delay: float = 0.0  # seconds before the reply starts
    hold: threading.Event | None = None  # if given, wait for it before the reply


@dataclass
class Shell:
    """A call of the shell tool the request offers, asking to run outside the sandbox."""

    cmd: str = "make release"
    justification: str = "Rebuilding the release needs to run outside the sandbox"


Reply = Say | Shell


@dataclass
class Request:
    """One request the stand-in received."""

    seq: int
    method: str
    path: str
    body: Any
    kind: str  # "main" (the agent loop) | "title" | "other" | "blocked"
    at: float
    last_user: str = ""
    has_output: bool = False  # it carries a tool's output (the turn goes on)
    reply: Reply | None = None
    usage: dict[str, int] | None = None  # the usage it reported (usage_for)

    @property
    def text(self) -> str:
        return (
            self.body if isinstance(self.body, str) else json.dumps(self.body, ensure_ascii=False)
        )


def _item_text(item: dict) -> str:
    content = item.get("content")
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return " ".join(p.get("text", "") for p in content if isinstance(p, dict))
    return ""


def _classify(body: Any) -> tuple[str, str, bool, str | None]:
    """(kind, last user text, has tool output, the shell tool offered) of a request."""
    if not isinstance(body, dict):
        return "other", "", False, None
    tools = [t.get("name") or t.get("type") for t in body.get("tools") or [] if isinstance(t, dict)]
    items = body.get("input") or []
    if isinstance(items, str):
        items = [{"type": "message", "role": "user", "content": items}]
    last = items[-1] if items else {}
    has_output = isinstance(last, dict) and last.get("type") in (
        "function_call_output",
        "custom_tool_call_output",
    )
    last_user = ""
    for item in reversed(items):
        if (
            isinstance(item, dict)
            and item.get("type", "message") == "message"
            and item.get("role") == "user"
        ):
            text = _item_text(item)
            if (
                "<environment_context>" in text
                or "<user_instructions>" in text
                or "# AGENTS.md" in text
            ):
                continue  # context Codex sends as user messages, not the person's prompt
            last_user = text
            break
    tool = next((t for t in SHELL_TOOLS if t in tools), None)
    if last_user.lstrip().startswith(TITLE_PROMPT):
        kind = "title"
    elif tool:
        kind = "main"
    else:
        kind = "other"
    return kind, last_user, has_output, tool


def _sse(data: dict) -> bytes:
    return f"event: {data['type']}\ndata: {json.dumps(data)}\n\n".encode()


class ResponsesStandIn(StandInServer):
    """A threaded loopback HTTP server that plays the OpenAI Responses API.

    ``POST .../responses``: a main request carrying a tool's output gets a closing text;
    any other main request the next queued reply (``push``), else a ``Shell`` call when
    its last user text contains ``SHELL``, else ``Say(default_text)``. Title and other side
    requests get a short text. Every request is recorded in ``requests``.
    """

    request_cls = Request
    name = "responses-stand-in"

    def __init__(
        self,
        jail: NetJail,
        default_text: str = "Done. (stand-in reply)",
        log: Callable[[str], None] | None = None,
    ) -> None:
        super().__init__(log)
        self.default_text = default_text
        self._script: "queue.Queue[Reply]" = queue.Queue()
        self.serve(_Handler, jail)

    def describe(self, req: Request) -> str:
        return f"{super().describe(req)} {req.last_user[:60]!r}"

    def push(self, *replies: Reply) -> None:
        for reply in replies:
            self._script.put(reply)

    def reply_for(self, req: Request) -> Reply:
        if req.kind != "main":
            return Say("Stand-in title" if req.kind == "title" else "ok")
        if req.has_output:
            return Say("Done. The command finished (stand-in reply).")
        try:
            return self._script.get_nowait()
        except queue.Empty:
            return Shell() if "SHELL" in req.last_user else Say(self.default_text)


class _Handler(BaseHTTPRequestHandler):
    stand_in: ResponsesStandIn
    protocol_version = "HTTP/1.1"

    def log_message(self, format: str, *args: Any) -> None:  # quiet
        pass

    def _json(self, obj: Any, code: int = 200) -> None:
        body = json.dumps(obj).encode()
        self.send_response(code)
        self.send_header("content-type", "application/json")
        self.send_header("content-length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def _trap(self) -> bool:
        """A proxied request (CONNECT, or an absolute URL to another host): refuse it."""
        if (
            self.command == "CONNECT"
            or self.path.startswith(("http://", "https://"))
            and not self.path.startswith(self.stand_in.base_url)
        ):
            self.stand_in.record(method=self.command, path=self.path, body=None, kind="blocked")
            self.send_response(403)
            self.send_header("content-length", "0")
            self.send_header("connection", "close")
            self.end_headers()
            self.close_connection = True
            return True
        return False

    def do_CONNECT(self) -> None:
        self._trap()

    def do_GET(self) -> None:
        if self._trap():
            return
        self.stand_in.record(method="GET", path=self.path, body=None, kind="other")
        if self.path.split("?")[0].endswith("/models"):
            # Codex's own shape is {"models": [...]}; empty: it uses its built-in metadata
            return self._json({"models": [], "object": "list", "data": []})
        return self._json({})

    def do_POST(self) -> None:
        if self._trap():
            return
        raw = self.rfile.read(int(self.headers.get("content-length") or 0))
        try:
            body: Any = json.loads(raw)
        except ValueError:
            body = raw.decode("utf-8", "replace")
        kind, last_user, has_output, tool = _classify(body)
        if not self.path.split("?")[0].endswith("/responses"):
            kind = "other"
        req = self.stand_in.record(
            method="POST",
            path=self.path,
            body=body,
            kind=kind,
            last_user=last_user,
            has_output=has_output,
        )
        reply = self.stand_in.reply_for(req)
        req.reply = reply
        if isinstance(reply, Shell) and not tool:
            reply = Say("(no shell tool was offered)")
        if isinstance(reply, Say):
            if reply.delay:
                time.sleep(reply.delay)
            if reply.hold is not None:
                reply.hold.wait(60)
        req.usage = usage_for(req.seq)
        self._stream(body if isinstance(body, dict) else {}, reply, tool, req.usage)

    def _stream(self, req: dict, reply: Reply, tool: str | None, usage: dict[str, int]) -> None:
        rid = "resp_" + uuid.uuid4().hex[:16]
        self.send_response(200)
        self.send_header("content-type", "text/event-stream")
        self.send_header("cache-control", "no-cache")
        self.send_header("connection", "close")
        self.end_headers()
        w = self.wfile
        base = {
            "id": rid,
            "object": "response",
            "created_at": int(time.time()),
            "status": "in_progress",
            "model": req.get("model", MODEL),
            "output": [],
        }
        w.write(_sse({"type": "response.created", "response": base}))
        if isinstance(reply, Shell):
            if tool == "exec_command":
                args: dict[str, Any] = {"cmd": reply.cmd}
            elif tool == "shell_command":
                args = {"command": reply.cmd}
            else:
                args = {"command": ["bash", "-lc", reply.cmd]}
            args.update(sandbox_permissions="require_escalated", justification=reply.justification)
            item: dict[str, Any] = {
                "type": "function_call",
                "id": "fc_" + uuid.uuid4().hex[:12],
                "call_id": "call_" + uuid.uuid4().hex[:12],
                "name": tool,
                "arguments": json.dumps(args),
                "status": "completed",
            }
            w.write(_sse({"type": "response.output_item.added", "output_index": 0, "item": item}))
        else:
            mid = "msg_" + uuid.uuid4().hex[:12]
            w.write(
                _sse(
                    {
                        "type": "response.output_item.added",
                        "output_index": 0,
                        "item": {
                            "type": "message",
                            "id": mid,
                            "role": "assistant",
                            "status": "in_progress",
                            "content": [],
                        },
                    }
                )
            )
            w.write(
                _sse(
                    {
                        "type": "response.content_part.added",
                        "item_id": mid,
                        "output_index": 0,
                        "content_index": 0,
                        "part": {"type": "output_text", "text": "", "annotations": []},
                    }
                )
            )
            w.write(
                _sse(
                    {
                        "type": "response.output_text.delta",
                        "item_id": mid,
                        "output_index": 0,
                        "content_index": 0,
                        "delta": reply.text,
                    }
                )
            )
            w.write(
                _sse(
                    {
                        "type": "response.output_text.done",
                        "item_id": mid,
                        "output_index": 0,
                        "content_index": 0,
                        "text": reply.text,
                    }
                )
            )
            item = {
                "type": "message",
                "id": mid,
                "role": "assistant",
                "status": "completed",
                "content": [{"type": "output_text", "text": reply.text, "annotations": []}],
            }
        w.write(_sse({"type": "response.output_item.done", "output_index": 0, "item": item}))
        done = dict(
            base,
            status="completed",
            output=[item],
            usage={
                "input_tokens": usage["input_tokens"],
                "output_tokens": usage["output_tokens"],
                "total_tokens": usage["input_tokens"] + usage["output_tokens"],
                "input_tokens_details": {"cached_tokens": usage["cached_tokens"]},
                "output_tokens_details": {"reasoning_tokens": 0},
            },
        )
        w.write(_sse({"type": "response.completed", "response": done}))
        w.flush()
        self.close_connection = True


# --------------------------------------------------------------------------------------
# A throwaway HOME and CODEX_HOME
# --------------------------------------------------------------------------------------


def _toml_str(text: str) -> str:
    return json.dumps(text)  # a JSON string is a TOML basic string


def codex_env(
    tmp_path: Path, project: Path, base_url: str, extra: dict[str, str] | None = None
) -> dict[str, str]:
    """The environment (and config files) for an offline Codex 0.169 in ``tmp_path``."""
    home = Path(tmp_path) / "codex-home"
    codex_home = home / ".codex"
    codex_home.mkdir(parents=True, exist_ok=True)
    project = Path(project).resolve()
    config = f"""\
# written by tests/support/codex.py: a throwaway CODEX_HOME, the stand-in on loopback
model = {_toml_str(MODEL)}
model_provider = "standin"
approval_policy = "on-request"
sandbox_mode = "workspace-write"
check_for_update_on_startup = false

[model_providers.standin]
name = "Stand-in (loopback)"
base_url = {_toml_str(base_url + "/v1")}
wire_api = "responses"
env_key = "STANDIN_API_KEY"
requires_openai_auth = false
supports_websockets = false
request_max_retries = 0
stream_max_retries = 0

# else a "trust this folder" screen
[projects.{_toml_str(str(project))}]
trust_level = "trusted"

[tui]
screen_reader_detection_done = true

# else it fetches plugin and app catalogues from github.com and chatgpt.com at start-up
[features]
plugins = false
remote_plugin = false
apps = false

# else "Meet GPT-6 Sol / Try new model?"
[notice.model_migrations]
{_toml_str(MODEL)} = "gpt-6-sol"
"""
    (codex_home / "config.toml").write_text(config)
    env = offline_env(home, base_url)
    env.update(CODEX_HOME=str(codex_home), STANDIN_API_KEY=API_KEY)
    env.update(extra or {})
    return env


# --------------------------------------------------------------------------------------
# Processes
# --------------------------------------------------------------------------------------


def descendants(pid: int) -> list[int]:
    """Every live process below ``pid`` (children first by depth, deepest last)."""
    children: dict[int, list[int]] = {}
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
        except OSError:
            continue
        ppid = int(stat.rsplit(")", 1)[1].split()[1])
        children.setdefault(ppid, []).append(int(entry.name))
    out: list[int] = []
    todo = [pid]
    while todo:
        kids = children.get(todo.pop(0), [])
        out += kids
        todo += kids
    return out


def _alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return False
    return state != "Z"


def process_name(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/comm").read_text().strip()
    except OSError:
        return ""


def kill_pids(pids: list[int], grace: float = 3.0) -> None:
    """SIGTERM these processes, then SIGKILL whichever is left after ``grace`` seconds."""
    for sig in (signal.SIGTERM, signal.SIGKILL):
        for pid in pids:
            try:
                os.kill(pid, sig)
            except (ProcessLookupError, PermissionError):
                pass
        deadline = time.monotonic() + grace
        while any(_alive(p) for p in pids) and time.monotonic() < deadline:
            time.sleep(0.05)
        if not any(_alive(p) for p in pids):
            return


# --------------------------------------------------------------------------------------
# A Codex crew recruited by the real captain CLI
# --------------------------------------------------------------------------------------


@dataclass
class CodexCrew(AgentCrew):
    """One real Codex crew in a jailed, private tmux server (an ``AgentCrew``);
    ``close()`` also kills, by PID, every process it saw under the pane."""

    started_pids: set[int] = field(default_factory=set)  # every pid seen under the pane

    def codex_pids(self) -> list[int]:
        """The Codex processes under the pane (the node launcher and the native binary)."""
        pids = [
            p
            for p in [self.pane.pane_pid, *descendants(self.pane.pane_pid)]
            if process_name(p) in ("codex", "node")
        ]
        self.started_pids.update(pids)
        return pids

    def teardown(self) -> None:
        """Kill Codex and everything under the pane (by PID) and the tmux server. Only
        processes inside this crew's jail are signalled: every one of them is ours, and a
        recycled PID outside it is not."""
        if self.pane.pane_pid:
            self.started_pids.update([self.pane.pane_pid, *descendants(self.pane.pane_pid)])
        kill_tmux_server(self.socket)
        kill_pids([p for p in self.started_pids if _alive(p) and self.jail.same_namespace(p)])


def usage_for(n: int) -> dict[str, int]:
    """The usage the stand-in reports for its ``n``-th answer, distinct per answer (so a
    test can tell a turn counted twice), as the Responses API reports it: ``input_tokens``
    includes the ``cached_tokens``."""
    return {
        "input_tokens": 2000 + 17 * n,
        "cached_tokens": 1500 + 7 * n,
        "output_tokens": 30 + 5 * n,
    }


def start_codex_crew(
    tmp_path: Path,
    *,
    name: str = "Jack",
    task: str = "TASK-5120: tidy the docs under docs/",
    home: Path | None = None,
    project: Path | None = None,
    width: int = 120,
    height: int = 40,
    env_extra: dict[str, str] | None = None,
    log: Callable[[str], None] | None = None,
    stand_in_text: str = "Done. (stand-in reply)",
    approval_timeout: float = 0,
) -> CodexCrew:
    """Recruit ``name`` with ``captain crew NAME --task TASK --agent codex``
    (``support.agents.start_agent_crew``) into a new jailed tmux server, Codex talking to a
    new stand-in. Returns once the CLI answered (the pane exists; Codex is starting). The
    captain home defaults to ``tmp_path/captain-home``, the crew's cwd to
    ``tmp_path/project``. Raises RuntimeError if Codex cannot run here (see
    ``codex_available``) or the recruit failed; whatever was started is cleaned up then."""
    reason = codex_available()
    if reason:
        raise RuntimeError(reason)
    tmp_path = Path(tmp_path)
    project = Path(project) if project else tmp_path / "project"
    crew = start_agent_crew(
        "codex",
        tmp_path,
        binary=codex_binary(),
        name=name,
        task=task,
        stand_in=lambda jail: ResponsesStandIn(jail, default_text=stand_in_text, log=log),
        env=lambda base_url: codex_env(tmp_path, project, base_url, extra=env_extra),
        home_root=Path(home) if home else tmp_path / "captain-home",
        project=project,
        width=width,
        height=height,
        crew_cls=CodexCrew,
        approval_timeout=approval_timeout,
    )
    try:
        tmux(
            crew.socket,
            "resize-window",
            "-t",
            crew.pane.pane_id,
            "-x",
            str(width),
            "-y",
            str(height),
            check=False,
        )
    except BaseException:
        crew.close()
        raise
    return crew


def surviving_codex(since_pids: set[int] | None = None) -> list[int]:
    """Codex processes of this user still running (optionally only among ``since_pids``)."""
    out = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit() and process_name(int(entry.name)) == "codex":
            pid = int(entry.name)
            if (since_pids is None or pid in since_pids) and _alive(pid):
                out.append(pid)
    return out

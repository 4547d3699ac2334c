"""The REAL Claude Code CLI in real tmux, offline, against a loopback stand-in API.

Each test runs the binary that ``.ci/install-agents`` put in ``.agents/`` (or
``$CAPTAIN_TEST_CLAUDE``) inside a network namespace that has only loopback (see
``support.claude.NetJail``), in a tmux server on a private socket. They skip, with the
reason shown, when the binary, tmux or the namespace is not to be had.

These pin down what captain relies on: what the idle composer and the permission prompt
look like, that typed text reaches the model, and that a hook's ``additionalContext``
(UserPromptSubmit and SessionStart) ends up inside the request the model receives.
"""

from __future__ import annotations

import json
import shlex
import sys
import time
from pathlib import Path

import pytest
from support.claude import (
    ClaudePane,
    ClaudeRig,
    Text,
    ToolUse,
    approve_permission_prompt,
    claude_available,
    composer_line,
    hook_settings,
    is_idle_composer,
)

START_TIMEOUT = 45.0
STEP_TIMEOUT = 30.0


@pytest.fixture
def rig(tmp_path: Path):
    reason = claude_available()
    if reason:
        pytest.skip(reason)
    with ClaudeRig(tmp_path) as rig:
        yield rig
        # Nothing may have tried to leave the machine through the proxy trap either.
        assert rig.stand_in.blocked == [], [f"{r.method} {r.path}" for r in rig.stand_in.blocked]


def write_hook(path: Path, event: str, context: str) -> Path:
    """A tiny hook command: saves its stdin JSON next to itself, prints the hook output."""
    output = json.dumps(
        {"hookSpecificOutput": {"hookEventName": event, "additionalContext": context}}
    )
    path.write_text(
        "#!/bin/sh\n"
        f"cat > {shlex.quote(str(path))}.stdin.json\n"
        f"printf '%s\\n' {shlex.quote(output)}\n"
    )
    path.chmod(0o755)
    return path


def read_json_when_written(path: Path, timeout: float = STEP_TIMEOUT) -> dict:
    """Poll (bounded) until ``path`` holds a whole JSON document."""
    deadline = time.monotonic() + timeout
    while True:
        try:
            return json.loads(path.read_text())
        except (OSError, ValueError):
            if time.monotonic() >= deadline:
                raise TimeoutError(f"{path} not written within {timeout}s") from None
            time.sleep(0.05)


def submit(pane, text: str) -> None:
    pane.send_literal(text)
    pane.wait_for(lambda s: text in (composer_line(s) or ""), STEP_TIMEOUT)
    pane.send_enter()


def test_starts_in_tmux_and_reaches_the_idle_composer(rig):
    pane = rig.start()
    screen = pane.wait_for(is_idle_composer, START_TIMEOUT)
    lines = screen.splitlines()
    i = next(n for n, line in enumerate(lines) if line.startswith("❯"))
    assert lines[i - 1].startswith("─" * 50) and lines[i + 1].startswith("─" * 50), screen
    assert lines[i].replace("❯", "").strip() == "", screen
    assert "Claude Code v" in screen
    assert "manual mode on" in screen  # the footer under the lower rule
    for dialog in (
        "Do you want to use this API key?",
        "Accessing workspace",
        "Choose the text style",
        "Do you want to proceed?",
    ):
        assert dialog not in screen
    assert rig.stand_in.main_requests == []  # starting up asks the model nothing


def test_prompt_reaches_the_stand_in_and_the_reply_is_shown(rig):
    pane = rig.start()
    pane.wait_for(is_idle_composer, START_TIMEOUT)
    rig.stand_in.push(Text("PONG-7781 from the stand-in"))
    mark = rig.stand_in.mark()
    submit(pane, "ping PROMPT-5521")
    req = rig.stand_in.wait_main(after=mark, timeout=STEP_TIMEOUT)
    assert "ping PROMPT-5521" in req.user_texts()
    assert req.body["stream"] is True
    assert req.headers["x-api-key"] == rig.env["ANTHROPIC_API_KEY"]
    screen = pane.wait_for(
        lambda s: "PONG-7781 from the stand-in" in s and is_idle_composer(s), STEP_TIMEOUT
    )
    assert "❯ ping PROMPT-5521" in screen.replace("\xa0", " ")


def test_bash_tool_use_shows_the_permission_prompt(rig):
    pane = rig.start(width=120, height=40)
    pane.wait_for(is_idle_composer, START_TIMEOUT)
    marker = rig.project / "approved-by-test"
    rig.stand_in.push(
        ToolUse("Bash", {"command": f"touch {marker.name}", "description": "Create a marker file"}),
        Text("marker made"),
    )
    mark = rig.stand_in.mark()
    submit(pane, "make the marker")
    first = rig.stand_in.wait_main(after=mark, timeout=STEP_TIMEOUT)
    screen = pane.wait_for("Do you want to proceed?", STEP_TIMEOUT)
    assert f"touch {marker.name}" in screen
    assert "1. Yes" in screen and "No" in screen
    assert "Esc to cancel" in screen
    assert composer_line(screen) is None  # the composer gives way to the prompt
    assert not marker.exists()  # nothing ran while the prompt stands

    # Approving lands the tool result in the next request and the turn finishes.
    result = approve_permission_prompt(pane, rig.stand_in, after=first.seq, timeout=STEP_TIMEOUT)
    tool_results = [
        b
        for m in result.body["messages"]
        if m["role"] == "user" and isinstance(m["content"], list)
        for b in m["content"]
        if b.get("type") == "tool_result"
    ]
    assert tool_results and tool_results[-1]["tool_use_id"] == first.reply.tool_id
    pane.wait_for(lambda s: "marker made" in s and is_idle_composer(s), STEP_TIMEOUT)
    assert marker.exists()


def test_user_prompt_submit_hook_context_reaches_the_request(rig, tmp_path):
    hook = write_hook(tmp_path / "prompt-hook.sh", "UserPromptSubmit", "MAGIC-123")
    settings = hook_settings(tmp_path / "settings.json", {"UserPromptSubmit": str(hook)})
    pane = rig.start(settings=settings)
    pane.wait_for(is_idle_composer, START_TIMEOUT)
    mark = rig.stand_in.mark()
    submit(pane, "hello with a hook")
    req = rig.stand_in.wait_main(after=mark, timeout=STEP_TIMEOUT)
    assert "MAGIC-123" in req.text
    # Delivered as a message the model reads (a system-role turn in 2.1.332).
    assert any("MAGIC-123" in t for t in req.texts()), req.body["messages"]
    seen = read_json_when_written(Path(f"{hook}.stdin.json"))
    assert seen["hook_event_name"] == "UserPromptSubmit"
    assert seen["prompt"] == "hello with a hook"
    assert Path(seen["cwd"]).resolve() == rig.project.resolve()

    # A second prompt runs the hook again; its context arrives again.
    pane.wait_for(is_idle_composer, STEP_TIMEOUT)
    mark = rig.stand_in.mark()
    submit(pane, "second prompt")
    again = rig.stand_in.wait_main(after=mark, timeout=STEP_TIMEOUT)
    assert json.loads(Path(f"{hook}.stdin.json").read_text())["prompt"] == "second prompt"
    assert again.text.count("MAGIC-123") > req.text.count("MAGIC-123")


def test_session_start_hook_context_reaches_the_first_request(rig, tmp_path):
    hook = write_hook(tmp_path / "start-hook.sh", "SessionStart", "MAGIC-456")
    settings = hook_settings(tmp_path / "settings.json", {"SessionStart": str(hook)})
    pane = rig.start(settings=settings)
    pane.wait_for(is_idle_composer, START_TIMEOUT)
    # SessionStart runs at start-up, before any prompt.
    seen = read_json_when_written(Path(f"{hook}.stdin.json"))
    assert seen["hook_event_name"] == "SessionStart"
    assert seen["source"] == "startup"
    mark = rig.stand_in.mark()
    submit(pane, "first prompt after start")
    req = rig.stand_in.wait_main(after=mark, timeout=STEP_TIMEOUT)
    assert any("MAGIC-456" in t for t in req.texts()), req.body["messages"]
    assert "first prompt after start" in req.user_texts()


def test_harness_refuses_to_run_claude_outside_the_jail(tmp_path):
    with pytest.raises(RuntimeError, match="NetJail"):
        ClaudePane.start("never-started", tmp_path, {"PATH": "/usr/bin"})


if __name__ == "__main__":  # pragma: no cover
    sys.exit(pytest.main([__file__, "-v"]))

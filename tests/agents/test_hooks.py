"""Hook contract: ``captain hook claude EVENT`` / ``captain hook codex notify JSON``.

Stdin JSON in, Claude Code's hook JSON out; receipts only after delivery; every failure
fails open (exit 0, nothing on stdout that could block). Exercised through the real CLI
subprocess and in-process through ``run_hook`` with real files.
"""

from __future__ import annotations

import io
import json
import os
import shlex
import stat
import subprocess
import sys
import textwrap
import tomllib
from pathlib import Path

import pytest

from captain_tui.agents import claude as claude_settings
from captain_tui.agents import codex
from captain_tui.agents.hooks import run_hook
from state.crew import crewlog, mailbox, notify, protocol
from state.crew.guards import Context
from state.home import Home

REPO = Path(__file__).resolve().parents[2]
INJECT_EVENTS = ("SessionStart", "UserPromptSubmit")


# -- helpers --------------------------------------------------------------------------------


def hook_input(event: str, **fields) -> str:
    base = {
        "session_id": "s-1",
        "transcript_path": "/tmp/t.jsonl",
        "cwd": "/tmp",
        "hook_event_name": event,
    }
    if event == "UserPromptSubmit":
        base["prompt"] = "carry on"
    if event == "SessionStart":
        base["source"] = "startup"
    if event == "Stop":
        base["stop_hook_active"] = False
    base.update(fields)
    return json.dumps(base)


class Hook:
    """``run_hook`` in-process with real streams; remembers stdout and stderr."""

    def __init__(self, env: dict[str, str]) -> None:
        self.env = env

    def __call__(
        self,
        event: str,
        stdin: str | None = None,
        *,
        agent: str = "claude",
        payload: str | None = None,
        stdout=None,
        **fields,
    ):
        out = stdout if stdout is not None else io.StringIO()
        text = hook_input(event, **fields) if stdin is None else stdin
        code = run_hook(agent, event, payload, io.StringIO(text), out, self.env)
        assert code == 0
        return out.getvalue() if isinstance(out, io.StringIO) else None


@pytest.fixture(autouse=True)
def native_prompt_at_once(home: Home):
    """These tests are about the notice a permission prompt raises: the hook does not hold
    the prompt for a decision here (``[crew] approval_timeout = 0``; holding is
    tests/agents/test_approvals.py's)."""
    (home.root / "config.toml").write_text("[crew]\napproval_timeout = 0\n")


@pytest.fixture
def hook(jack) -> Hook:
    return Hook(dict(jack.env))


def receipt_path(home: Home, message_id: str, key: str = "jack") -> Path:
    return home.receipts_dir(key) / f"{message_id}.json"


def expected_via() -> str:
    """``protocol.inbox`` writes the receipts; it says ``hook`` once it accepts ``via``."""
    code = protocol.inbox.__code__
    return (
        "hook"
        if "via" in code.co_varnames[: code.co_argcount + code.co_kwonlyargcount]
        else "inbox"
    )


def crew_ctx(recruit) -> Context:
    return Context.from_env(recruit.env)


def read_all(home: Home, recruit) -> None:
    protocol.inbox(home, recruit.crew, deliver=lambda batch: None, ctx=crew_ctx(recruit))


def injected(out: str, event: str) -> str:
    """Exactly Claude Code's additionalContext shape; returns the context text."""
    payload = json.loads(out)
    assert set(payload) == {"hookSpecificOutput"}
    inner = payload["hookSpecificOutput"]
    assert set(inner) == {"hookEventName", "additionalContext"}
    assert inner["hookEventName"] == event
    assert isinstance(inner["additionalContext"], str)
    return inner["additionalContext"]


def blocked(out: str) -> str:
    """Exactly Claude Code's Stop blocking decision; returns the reason."""
    payload = json.loads(out)
    assert set(payload) == {"decision", "reason"}
    assert payload["decision"] == "block"
    assert payload["reason"].strip()
    return payload["reason"]


def no_notification(home: Home) -> None:
    assert notify.wait(home, "Jack", timeout=0) is None


# -- SessionStart / UserPromptSubmit --------------------------------------------------------


def test_cli_user_prompt_submit_injects_mail_then_writes_the_receipt(cli, home: Home, jack):
    result = cli(
        "hook", "claude", "UserPromptSubmit", env=jack.env, stdin=hook_input("UserPromptSubmit")
    )
    assert result.code == 0, result.err
    assert "Traceback" not in result.out + result.err
    context = injected(result.out, "UserPromptSubmit")
    assert jack.message_id in context
    assert "assignment" in context  # the kind
    assert "Write the docs" in context
    # the ID is spelled out: CAPTAIN_ASSIGNMENT names the first task only
    assert f"captain done Jack --assignment {jack.assignment_id} --report" in context
    assert f"captain ask Jack --assignment {jack.assignment_id}" in context
    assert json.loads(receipt_path(home, jack.message_id).read_text())["via"] == expected_via()

    again = cli(
        "hook", "claude", "UserPromptSubmit", env=jack.env, stdin=hook_input("UserPromptSubmit")
    )
    assert again.code == 0
    assert again.out == ""  # nothing left to inject


@pytest.mark.parametrize("event", INJECT_EVENTS)
def test_inject_lists_every_unread_message_oldest_first_with_id_and_kind(
    hook, home: Home, jack, event
):
    told = protocol.tell(
        home, "Jack", "also update the changelog", assignment_id=jack.assignment_id
    )
    context = injected(hook(event), event)
    first, second = context.index(jack.message_id), context.index(told.message_id)
    assert first < second
    assert "also update the changelog" in context
    assert " tell " in context.replace("·", " ")
    for mid in (jack.message_id, told.message_id):
        assert receipt_path(home, mid).exists()
    assert hook(event) == ""


def test_answer_mail_names_the_question_it_answers(hook, home: Home, jack):
    read_all(home, jack)
    asked = protocol.ask(home, "Jack", "which docs?", ctx=crew_ctx(jack))
    answer = protocol.answer(
        home, "Jack", asked.question_id, "the API docs", assignment_id=jack.assignment_id
    )
    context = injected(hook("UserPromptSubmit"), "UserPromptSubmit")
    assert answer.message_id in context
    assert asked.question_id in context
    assert "the API docs" in context


class FailingWrite(io.StringIO):
    def write(self, text):
        raise BrokenPipeError("stdout closed")


class FailingFlush(io.StringIO):
    def flush(self):
        raise OSError("flush failed")


@pytest.mark.parametrize("stream", [FailingWrite, FailingFlush])
@pytest.mark.parametrize("event", INJECT_EVENTS + ("Stop",))
def test_no_receipt_when_delivery_fails(hook, home: Home, jack, capsys, stream, event):
    out = stream()
    hook(event, stdout=out)
    assert not receipt_path(home, jack.message_id).exists()
    snapshot = crewlog.load(home, "jack")[0]
    assert [m.message_id for m in mailbox.unread(home, "jack", snapshot)] == [jack.message_id]
    err = capsys.readouterr().err
    assert "failed open" in err and "Traceback" not in err
    # the next prompt delivers it, and only then is it read
    context = injected(
        hook(event) if event != "Stop" else hook("UserPromptSubmit"),
        event if event != "Stop" else "UserPromptSubmit",
    )
    assert jack.message_id in context
    assert receipt_path(home, jack.message_id).exists()


class WatchingOut(io.StringIO):
    """Records, at each flush, whether the receipt already existed."""

    def __init__(self, receipt: Path) -> None:
        super().__init__()
        self.receipt = receipt
        self.seen: list[bool] = []

    def flush(self):
        super().flush()
        self.seen.append(self.receipt.exists())


@pytest.mark.parametrize("event", INJECT_EVENTS + ("Stop",))
def test_receipt_is_written_after_the_flush(hook, home: Home, jack, event):
    out = WatchingOut(receipt_path(home, jack.message_id))
    hook(event, stdout=out)
    assert out.seen and out.seen[0] is False  # not yet read when the agent got it
    assert receipt_path(home, jack.message_id).exists()
    assert jack.message_id in out.getvalue()


def test_injected_output_is_ascii_json_whatever_the_text(hook, home: Home, jack):
    read_all(home, jack)
    text = 'quotes " and \\ backslash, tab\t, ünïcödé, emoji 🚀\nsecond line'
    protocol.tell(home, "Jack", text, assignment_id=jack.assignment_id)
    out = hook("UserPromptSubmit")
    assert out.isascii()
    assert text in injected(out, "UserPromptSubmit")


def test_mail_of_a_handed_off_assignment_reaches_a_pane_with_the_old_assignment_env(
    hook, home: Home, jack
):
    read_all(home, jack)
    protocol.done(home, "Jack", "wrote them", ctx=crew_ctx(jack))
    notification = notify.wait(home, "Jack", timeout=0)
    notify.acknowledge(home, "Jack", notification.delivery_id)
    spec = protocol.assign(home, "Jack", "Now the tutorial", handoff=jack.assignment_id)
    context = injected(hook("UserPromptSubmit"), "UserPromptSubmit")  # env still names the old one
    assert spec.message_id in context and "Now the tutorial" in context
    assert spec.assignment_id in context


# -- Stop -----------------------------------------------------------------------------------


def test_cli_stop_blocks_with_unread_mail_and_delivers_it(cli, home: Home, jack):
    result = cli("hook", "claude", "Stop", env=jack.env, stdin=hook_input("Stop"))
    assert result.code == 0, result.err
    reason = blocked(result.out)
    assert "Write the docs" in reason and jack.message_id in reason
    assert receipt_path(home, jack.message_id).exists()


def test_stop_blocks_while_the_assignment_is_unfinished(hook, home: Home, jack):
    read_all(home, jack)
    reason = blocked(hook("Stop"))
    assert jack.assignment_id in reason
    assert f"captain done Jack --assignment {jack.assignment_id} --report" in reason
    assert f"captain ask Jack --assignment {jack.assignment_id}" in reason


def test_stop_never_blocks_when_stop_hook_active(hook, home: Home, jack):
    assert hook("Stop", stop_hook_active=True) == ""
    # the mail was not delivered, so it is still unread
    assert not receipt_path(home, jack.message_id).exists()
    read_all(home, jack)
    assert hook("Stop", stop_hook_active=True) == ""


def test_stop_does_not_block_while_a_question_is_pending(hook, home: Home, jack):
    read_all(home, jack)
    asked = protocol.ask(home, "Jack", "which docs?", ctx=crew_ctx(jack))
    assert hook("Stop") == ""
    # the answer is unread mail: it blocks again, carrying the answer
    protocol.answer(
        home, "Jack", asked.question_id, "the API docs", assignment_id=jack.assignment_id
    )
    reason = blocked(hook("Stop"))
    assert "the API docs" in reason
    # read now, and the question is answered but the work is unfinished
    assert "captain done" in blocked(hook("Stop"))


def test_stop_does_not_block_after_done(hook, home: Home, jack):
    read_all(home, jack)
    protocol.done(home, "Jack", "wrote them; checked links", ctx=crew_ctx(jack))
    assert hook("Stop") == ""


def test_stop_does_not_block_a_dismissed_crew(hook, home: Home, jack, capsys):
    protocol.dismiss(home, "Jack")
    assert hook("Stop") == ""
    assert "dismissed" in capsys.readouterr().err


# -- Notification / PermissionRequest -------------------------------------------------------


def test_cli_permission_prompt_notification_is_awaiting_approval(cli, home: Home, jack):
    result = cli(
        "hook",
        "claude",
        "Notification",
        env=jack.env,
        stdin=hook_input(
            "Notification",
            message="Claude needs your permission to use Bash",
            notification_type="permission_prompt",
        ),
    )
    assert result.code == 0 and result.out == "", (result.out, result.err)
    n = notify.wait(home, "Jack", timeout=0)
    assert n is not None and n.status == "awaiting_approval"
    assert "Claude needs your permission to use Bash" in n.summary
    assert n.assignment_id == jack.assignment_id


def test_idle_prompt_notification_is_idle_once_per_message(hook, home: Home, jack):
    fields = dict(message="Claude is waiting for your input", notification_type="idle_prompt")
    assert hook("Notification", **fields) == ""
    n = notify.wait(home, "Jack", timeout=0)
    assert n is not None and n.status == "idle"
    notify.acknowledge(home, "Jack", n.delivery_id)
    hook("Notification", **fields)
    no_notification(home)  # the same mail: idle at most once
    protocol.tell(home, "Jack", "one more thing", assignment_id=jack.assignment_id)
    hook("Notification", **fields)
    n2 = notify.wait(home, "Jack", timeout=0)
    assert n2 is not None and n2.status == "idle"


@pytest.mark.parametrize("kind", ["auth_success", "elicitation_dialog", "something_new"])
def test_other_notification_kinds_do_nothing(hook, home: Home, kind):
    assert hook("Notification", message="whatever", notification_type=kind) == ""
    no_notification(home)


def test_notification_without_type_falls_back_on_the_message(hook, home: Home):
    hook("Notification", message="Claude needs your permission to use Bash")
    assert notify.wait(home, "Jack", timeout=0).status == "awaiting_approval"


def test_permission_request_is_awaiting_approval_and_never_answers(hook, home: Home):
    out = hook(
        "PermissionRequest",
        tool_name="Bash",
        tool_input={"command": "rm -rf build", "description": "clean"},
        permission_suggestions=[],
    )
    assert out == ""  # no decision: the human (or captain) answers the prompt
    n = notify.wait(home, "Jack", timeout=0)
    assert n.status == "awaiting_approval"
    assert "Bash" in n.summary and "rm -rf build" in n.summary


def test_one_prompt_raises_one_approval_notice_until_acknowledged(hook, home: Home):
    hook("PermissionRequest", tool_name="Bash", tool_input={"command": "make"})
    hook(
        "Notification",
        message="Claude needs your permission to use Bash",
        notification_type="permission_prompt",
    )
    n = notify.wait(home, "Jack", timeout=0)
    assert n.status == "awaiting_approval"
    notify.acknowledge(home, "Jack", n.delivery_id)
    no_notification(home)  # the second hook of the same prompt raised nothing
    hook("PermissionRequest", tool_name="Edit", tool_input={"file_path": "/p/x.py"})
    n2 = notify.wait(home, "Jack", timeout=0)
    assert n2.status == "awaiting_approval" and "/p/x.py" in n2.summary


class QueueWhileReading(io.StringIO):
    """Stdin whose read queues new mail: the hook started before that mail existed."""

    def __init__(self, text: str, home: Home, assignment_id: str) -> None:
        super().__init__(text)
        self.home, self.assignment_id = home, assignment_id

    def read(self, *args):
        protocol.tell(self.home, "Jack", "newer mail", assignment_id=self.assignment_id)
        return super().read(*args)


@pytest.mark.parametrize(
    "event,fields",
    [
        (
            "Notification",
            {"message": "Claude is waiting for your input", "notification_type": "idle_prompt"},
        ),
        (
            "Notification",
            {
                "message": "Claude needs your permission to use Bash",
                "notification_type": "permission_prompt",
            },
        ),
        ("PermissionRequest", {"tool_name": "Bash", "tool_input": {"command": "ls"}}),
    ],
)
def test_a_signal_older_than_the_mail_it_answers_is_ignored(home: Home, jack, event, fields):
    stdin = QueueWhileReading(hook_input(event, **fields), home, jack.assignment_id)
    assert run_hook("claude", event, None, stdin, io.StringIO(), jack.env) == 0
    no_notification(home)


def test_a_stale_incarnation_raises_no_signal_and_reads_no_mail(home: Home, jack, capsys):
    env = dict(jack.env, CAPTAIN_INCARNATION="inc_00000000000000000000000000")
    stale = Hook(env)
    stale("Notification", message="x", notification_type="idle_prompt")
    no_notification(home)
    assert stale("UserPromptSubmit") == ""
    assert stale("Stop") == ""
    assert not receipt_path(home, jack.message_id).exists()
    assert "stale_incarnation" in capsys.readouterr().err


# -- Codex notify ---------------------------------------------------------------------------

CODEX_TURN = {
    "type": "agent-turn-complete",
    "thread-id": "b5f6c1c2-1111-2222-3333-444455556666",
    "turn-id": "12345",
    "cwd": "/tmp",
    "input-messages": ["Rename foo to bar."],
    "last-assistant-message": "Rename complete and cargo build succeeds.",
}


def test_cli_codex_turn_complete_is_an_idle_notification(cli, home: Home, jack):
    result = cli("hook", "codex", "notify", json.dumps(CODEX_TURN), env=jack.env)
    assert result.code == 0 and result.out == "", (result.out, result.err)
    n = notify.wait(home, "Jack", timeout=0)
    assert n.status == "idle"
    assert "Rename complete and cargo build succeeds." in n.summary


def test_codex_turn_without_message_and_other_types(hook, home: Home):
    hook("notify", agent="codex", payload=json.dumps({"type": "agent-turn-start"}))
    no_notification(home)
    hook(
        "notify", agent="codex", payload=json.dumps({**CODEX_TURN, "last-assistant-message": None})
    )
    n = notify.wait(home, "Jack", timeout=0)
    assert n.status == "idle" and n.summary.startswith("Jack: ")


@pytest.mark.parametrize("payload", [None, "", "not json", "[1, 2]", '"agent-turn-complete"'])
def test_codex_bad_payload_fails_open(hook, home: Home, capsys, payload):
    assert hook("notify", agent="codex", payload=payload) == ""
    no_notification(home)
    err = capsys.readouterr().err
    assert "Traceback" not in err


# -- Codex hooks (PermissionRequest, Stop) and the title turn --------------------------------

# What Codex 0.169.0 sent the lab's notify program for its internal title-generation turn.
CODEX_TITLE_TURN = {
    "type": "agent-turn-complete",
    "thread-id": "0a1b2c3d-9999-8888-7777-666655554444",
    "turn-id": "t-2",
    "cwd": "/tmp",
    "client": "codex-tui",
    "input-messages": [
        "Generate a concise, single-line task title of at most 36 characters "
        "for this request: SLOW: summarize the repository"
    ],
    "last-assistant-message": "Summarize repository",
}


def test_codex_title_generation_turn_raises_no_idle(hook, home: Home):
    assert hook("notify", agent="codex", payload=json.dumps(CODEX_TITLE_TURN)) == ""
    no_notification(home)
    hook("notify", agent="codex", payload=json.dumps(CODEX_TURN))  # the crew's own turn
    assert notify.wait(home, "Jack", timeout=0).status == "idle"


def test_codex_stop_is_one_idle_with_the_last_message_and_never_blocks(hook, home: Home):
    out = hook(
        "Stop", agent="codex", turn_id="t-1", last_assistant_message="  Done. (stand-in reply)\n"
    )
    assert out == ""  # nothing on stdout: Codex stops
    n = notify.wait(home, "Jack", timeout=0)
    assert n.status == "idle" and n.summary == "Jack: Done. (stand-in reply)"
    assert hook("Stop", agent="codex", last_assistant_message=None) == ""
    assert notify.wait(home, "Jack", timeout=0, ack=n.delivery_id) is None  # once per mail


def test_codex_permission_request_is_one_awaiting_approval(hook, home: Home):
    fields = dict(
        agent="codex",
        turn_id="t-1",
        tool_name="Bash",
        tool_input={"command": "make release", "description": "needs escalation"},
    )
    assert hook("PermissionRequest", **fields) == ""  # never answers the prompt
    assert hook("PermissionRequest", **fields) == ""  # the same prompt again: no second
    got = [n for n in mailbox.notifications(home, "jack") if n.status == "awaiting_approval"]
    assert [n.summary for n in got] == ["Jack: permission prompt: Bash: make release"]


@pytest.mark.parametrize("stdin", ["", "garbage {", "[]", json.dumps({"hook_event_name": "Stop"})])
def test_codex_hooks_fail_open(hook, home: Home, stdin):
    assert hook("PermissionRequest", stdin, agent="codex") == ""
    if "Stop" not in stdin:
        assert hook("Stop", stdin, agent="codex") == ""
    no_notification(home)


HOSTILE = [
    'we"ird\\path',
    "t\tab",
    "new\nline",
    "it's $(rm -rf ~) `x`",
    "ünï 🚀",
    "del\x7f",
    '"]}]\nnotify=["evil"]',
]


@pytest.mark.parametrize("captain", [["captain"], ["/opt/my tools/captain"], HOSTILE])
def test_codex_hook_args_parse_as_toml_and_trust_exactly_captains_hooks(captain):
    args = codex.hook_args(captain)
    assert args[::2] == ["-c"] * (len(args) // 2)
    values = [tomllib.loads(v) for v in args[1::2]]  # each -c value is one TOML key = value
    merged: dict = {}
    for v in values:
        assert set(v) == {"hooks"}
        merged.update(v["hooks"])
    assert set(merged) == {"PermissionRequest", "Stop", "PreToolUse", "state"}
    for event, label in codex.EVENTS.items():
        (group,) = merged[event]
        assert set(group) == {"hooks"}  # no matcher: every occurrence
        (handler,) = group["hooks"]
        assert handler == {
            "type": "command",
            "command": handler["command"],
            "timeout": codex.HOOK_TIMEOUT,
        }
        assert shlex.split(handler["command"]) == [*captain, "hook", "codex", event]
        key = f"/<session-flags>/config.toml:{label}:0:0"
        assert merged["state"][key] == {
            "trusted_hash": codex.trusted_hash(label, handler["command"])
        }
    assert len(merged["state"]) == len(codex.EVENTS)


def test_codex_trusted_hash_is_the_one_codex_computes():
    # Codex 0.169.0 ran this hook without a review screen when given this hash (checked
    # live), and asks for review with any other.
    assert codex.trusted_hash(
        "permission_request", "/tmp/cx/hook.sh hook codex PermissionRequest"
    ) == ("sha256:efd4064d9039923279eb1f215e208cd264918198de10f7f39b3fd3049880201f")
    assert codex.trusted_hash("stop", "/tmp/cx/hook.sh hook codex Stop") == (
        "sha256:cc713c36a7546ff37a41903e343c8119a867371872283a3b4d700b96eb513924"
    )


def test_codex_command_starts_without_daemon_with_hooks_and_no_notify(monkeypatch):
    monkeypatch.setattr(codex, "require", lambda program, agent: "/usr/bin/codex")
    argv = shlex.split(codex.command())
    assert argv[:4] == ["/usr/bin/codex", "--no-daemon", "--enable", "hooks"]
    assert not any(a.startswith("notify=") for a in argv)  # Stop is the turn end
    # PermissionRequest gets the time it may hold a prompt for the captain's decision
    assert argv[4:] == codex.hook_args(
        [sys.executable, "-P", "-m", "captain_tui"], codex.hook_timeout(None)
    )


def test_codex_hook_commands_run_through_a_shell(home: Home, jack, project: Path):
    args = codex.hook_args(CAPTAIN)
    hooks = {}
    for v in args[1::2]:
        hooks.update(tomllib.loads(v)["hooks"])
    env = {k: v for k, v in os.environ.items() if not k.startswith("CAPTAIN_")}
    env.update(jack.env, PYTHONPATH=str(REPO))

    def run(event: str, **fields) -> str:
        command = hooks[event][0]["hooks"][0]["command"]
        proc = subprocess.run(
            ["/bin/sh", "-c", command],
            cwd=project,
            env=env,
            input=hook_input(event, **fields),
            capture_output=True,
            text=True,
            timeout=60,
        )
        assert proc.returncode == 0 and "Traceback" not in proc.stderr, proc.stderr
        return proc.stdout

    assert run("PermissionRequest", tool_name="Bash", tool_input={"command": "ls"}) == ""
    n = notify.wait(home, "Jack", timeout=0)
    assert n.status == "awaiting_approval"
    assert run("Stop", last_assistant_message="all done") == ""
    assert notify.wait(home, "Jack", timeout=0, ack=n.delivery_id).status == "idle"


# -- fail open ------------------------------------------------------------------------------


def _fails_open(result) -> None:
    assert result.code == 0, (result.code, result.err)
    assert result.out == ""
    assert "Traceback" not in result.out and "Traceback" not in result.err
    lines = [line for line in result.err.splitlines() if line.strip()]
    assert len(lines) <= 1, result.err


@pytest.mark.parametrize(
    "event",
    ["SessionStart", "UserPromptSubmit", "Stop", "Notification", "PermissionRequest", "PreToolUse"],
)
def test_cli_without_crew_env_fails_open(cli, home: Home, jack, event):
    result = cli(
        "hook",
        "claude",
        event,
        stdin=hook_input(
            event, message="m", notification_type="permission_prompt", tool_name="Bash"
        ),
    )
    _fails_open(result)
    assert "crew environment" in result.err
    assert not receipt_path(home, jack.message_id).exists()
    no_notification(home)


@pytest.mark.parametrize(
    "stdin",
    [
        "",
        "garbage {",
        "[]",
        "null",
        "\x00\x01binary",
        json.dumps({"hook_event_name": "SubagentStop"}),
    ],
)
@pytest.mark.parametrize("event", ["UserPromptSubmit", "Stop", "Notification"])
def test_cli_garbage_stdin_fails_open(cli, home: Home, jack, stdin, event):
    _fails_open(cli("hook", "claude", event, env=jack.env, stdin=stdin))
    assert not receipt_path(home, jack.message_id).exists()
    no_notification(home)


@pytest.mark.parametrize(
    "args",
    [
        (),
        ("claude",),
        ("claude", "Bogus"),
        ("gemini", "Stop"),
        ("claude", "stop"),
        ("codex", "Bogus"),
    ],
)
def test_cli_unknown_hook_fails_open(cli, jack, args):
    _fails_open(cli("hook", *args, env=jack.env, stdin=hook_input("Stop")))


def test_cli_missing_home_fails_open_and_creates_nothing(cli, jack, tmp_path: Path):
    gone = tmp_path / "no-such-home"
    for event in ("UserPromptSubmit", "Stop"):
        result = cli(
            "hook",
            "claude",
            event,
            env={**jack.env, "CAPTAIN_HOME": str(gone)},
            stdin=hook_input(event),
        )
        _fails_open(result)
        assert "no captain home" in result.err
    assert not gone.exists()


def test_cli_unknown_crew_fails_open(cli, home: Home, jack):
    env = {**jack.env, "CAPTAIN_CREW": "Nobody"}
    for event in ("UserPromptSubmit", "Stop"):
        result = cli("hook", "claude", event, env=env, stdin=hook_input(event))
        _fails_open(result)
        assert "unknown_crew" in result.err


def test_cli_dismissed_crew_fails_open(cli, home: Home, jack):
    protocol.dismiss(home, "Jack")
    for event in INJECT_EVENTS + ("Stop",):
        _fails_open(cli("hook", "claude", event, env=jack.env, stdin=hook_input(event)))
    result = cli(
        "hook",
        "claude",
        "Notification",
        env=jack.env,
        stdin=hook_input("Notification", message="m", notification_type="idle_prompt"),
    )
    _fails_open(result)
    # the dismissal bounced the task; no crew signal follows it
    n = notify.wait(home, "Jack", timeout=0)
    assert n.status == "bounced"
    notify.acknowledge(home, "Jack", n.delivery_id)
    no_notification(home)


def test_captain_environment_is_not_a_crew(cli, home: Home, jack):
    env = {
        "CAPTAIN_ROLE": "captain",
        "CAPTAIN_CREW": "Jack",
        "CAPTAIN_INCARNATION": jack.env["CAPTAIN_INCARNATION"],
    }
    _fails_open(
        cli("hook", "claude", "UserPromptSubmit", env=env, stdin=hook_input("UserPromptSubmit"))
    )
    assert not receipt_path(home, jack.message_id).exists()


@pytest.mark.parametrize("how", ["symlinked", "unreadable"])
def test_unreadable_home_fails_open(cli, home: Home, jack, tmp_path: Path, how):
    mail = home.mail_dir("jack")
    if how == "unreadable":
        if os.geteuid() == 0:
            pytest.skip("root reads any directory")
        mail.chmod(0)
    else:  # a mail directory swapped for a link: the store refuses to follow it
        aside = tmp_path / "aside"
        mail.rename(aside)
        mail.symlink_to(aside)
    try:
        for event in ("UserPromptSubmit", "Stop"):
            result = cli("hook", "claude", event, env=jack.env, stdin=hook_input(event))
            _fails_open(result)
            assert result.err.strip()
    finally:
        if how == "unreadable":
            mail.chmod(0o700)
        else:
            mail.unlink()
            aside.rename(mail)
    assert not receipt_path(home, jack.message_id).exists()


def test_hook_path_imports_no_ui_or_tmux(jack, project: Path):
    code = textwrap.dedent("""
        import io, json, sys
        sys.stdin = io.StringIO(json.dumps({"hook_event_name": "UserPromptSubmit",
                                            "prompt": "p"}))
        out = io.StringIO()
        sys.stdout, real = out, sys.stdout
        from captain_tui.cli.main import main
        code = main(["hook", "claude", "UserPromptSubmit"])
        sys.stdout = real
        heavy = [m for m in ("textual", "libtmux", "watchfiles") if m in sys.modules]
        print(json.dumps({"code": code, "heavy": heavy, "out": out.getvalue()}))
    """)
    env = {k: v for k, v in os.environ.items() if not k.startswith("CAPTAIN_")}
    env.update(jack.env, PYTHONPATH=str(REPO))
    proc = subprocess.run(
        [sys.executable, "-c", code],
        cwd=project,
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert proc.returncode == 0, proc.stderr
    report = json.loads(proc.stdout.strip().splitlines()[-1])
    assert report["code"] == 0 and report["heavy"] == []
    assert jack.message_id in injected(report["out"], "UserPromptSubmit")


# -- settings for Claude Code and Codex -----------------------------------------------------


CAPTAIN = [sys.executable, "-m", "captain_tui"]


def test_hook_settings_schema_names_all_six_events(tmp_path: Path):
    captain = ["/opt/my tools/captain's bin/captain"]
    settings = claude_settings.hook_settings(captain)
    assert json.loads(json.dumps(settings)) == settings
    assert set(settings) == {"hooks"}
    assert set(settings["hooks"]) == {
        "SessionStart",
        "UserPromptSubmit",
        "Stop",
        "Notification",
        "PermissionRequest",
        "PreToolUse",  # the budget's gate (docs/budgets.md)
    }
    for event, groups in settings["hooks"].items():
        assert len(groups) == 1
        assert set(groups[0]) == {"hooks"}  # no matcher: every occurrence
        (entry,) = groups[0]["hooks"]
        assert set(entry) == {"type", "command"} and entry["type"] == "command"
        assert shlex.split(entry["command"]) == [*captain, "hook", "claude", event]


def test_write_settings_is_private_and_round_trips(tmp_path: Path):
    path = claude_settings.write_settings(tmp_path / "cfg" / "settings.json", CAPTAIN)
    assert path == tmp_path / "cfg" / "settings.json"
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert json.loads(path.read_text()) == claude_settings.hook_settings(CAPTAIN)
    assert [p.name for p in path.parent.iterdir()] == ["settings.json"]  # no temp left
    claude_settings.write_settings(path, ["captain"])  # replaced, not appended
    assert json.loads(path.read_text()) == claude_settings.hook_settings(["captain"])


def test_settings_commands_run_through_a_shell(home: Home, jack, project: Path):
    settings = claude_settings.hook_settings(CAPTAIN)["hooks"]
    env = {k: v for k, v in os.environ.items() if not k.startswith("CAPTAIN_")}
    env.update(jack.env, PYTHONPATH=str(REPO))

    def run(event: str, **fields):
        command = settings[event][0]["hooks"][0]["command"]
        proc = subprocess.run(
            ["/bin/sh", "-c", command],
            cwd=project,
            env=env,
            input=hook_input(event, **fields),
            capture_output=True,
            text=True,
            timeout=60,
        )
        assert proc.returncode == 0, proc.stderr
        assert "Traceback" not in proc.stderr
        return proc.stdout

    assert jack.message_id in injected(run("SessionStart"), "SessionStart")
    protocol.tell(home, "Jack", "and the FAQ", assignment_id=jack.assignment_id)
    assert "and the FAQ" in injected(run("UserPromptSubmit"), "UserPromptSubmit")
    assert "captain done" in blocked(run("Stop"))
    assert run("PermissionRequest", tool_name="Bash", tool_input={"command": "ls"}) == ""
    assert notify.wait(home, "Jack", timeout=0).status == "awaiting_approval"
    assert run("Notification", message="m", notification_type="auth_success") == ""


@pytest.mark.parametrize(
    "captain",
    [
        ["captain"],
        ["/opt/my tools/captain"],
        ['we"ird\\path', "t\tab", "del\x7f", "ünï 🚀"],
    ],
)
def test_codex_notify_args_parse_as_toml_and_json(captain):
    flag, value = codex.notify_args(captain)
    assert flag == "-c"
    key, _, raw = value.partition("=")
    assert key == "notify"
    expected = [*captain, "hook", "codex", "notify"]
    assert tomllib.loads(value)["notify"] == expected
    assert json.loads(raw) == expected  # older codex parsed -c values as JSON


def test_codex_notify_argv_runs_like_codex_runs_it(home: Home, jack, project: Path):
    """Codex appends one JSON argument to the notify argv and spawns it."""
    _, value = codex.notify_args(CAPTAIN)
    argv = tomllib.loads(value)["notify"]
    env = {k: v for k, v in os.environ.items() if not k.startswith("CAPTAIN_")}
    env.update(jack.env, PYTHONPATH=str(REPO))
    proc = subprocess.run(
        [*argv, json.dumps(CODEX_TURN)],
        cwd=project,
        env=env,
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert proc.returncode == 0 and proc.stdout == "", proc.stderr
    n = notify.wait(home, "Jack", timeout=0)
    assert n.status == "idle" and "Rename complete" in n.summary


@pytest.mark.parametrize("bad", [[], [""], ["ok", ""]])
def test_settings_refuse_an_empty_captain_command(bad):
    with pytest.raises(ValueError):
        claude_settings.hook_settings(bad)
    with pytest.raises(ValueError):
        codex.notify_args(bad)

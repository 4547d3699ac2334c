"""Approvals (#26 points 1-3): an agent's PermissionRequest hook records a request and holds
the prompt for the captain's decision; ``captain approvals`` lists it, ``captain approve``
decides it once; no decision in time, an error or a hook the agent ended leaves the
agent's own prompt (the hook prints nothing: never an allow); every request and its end
is an event on the assignment's work item, the command only as a fingerprint and a
bounded, escaped excerpt. The hooks run in-process (``run_hook``, real files) on a thread,
as the agent would run them while the captain decides; one runs as a real process to be
ended by a signal.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from support.cli import invoke
from support.crew import hire, refused
from support.held import Held

from captain_tui import usecases
from state.clock import now
from state.crew import approvals, notify, protocol
from state.crew.guards import Context
from state.errors import CaptainError
from state.home import Home
from state.work import ledger

REPO = Path(__file__).resolve().parents[2]
DEADLINE = 10.0


def set_timeout(home: Home, seconds: float) -> None:
    (home.root / "config.toml").write_text(f"[crew]\napproval_timeout = {seconds}\n")


def open_one(home: Home, name: str = "Jack") -> approvals.Open:
    end = time.monotonic() + DEADLINE
    while time.monotonic() < end:
        found = approvals.open_requests(home, name)
        if found:
            assert len(found) == 1
            return found[0]
        time.sleep(0.01)
    raise AssertionError("no approval request appeared")


def events(home: Home, assignment_id: str) -> list:
    return [
        e
        for e in ledger.events(home, ledger.work_id_for_assignment(assignment_id))
        if e.type.startswith("approval_")
    ]


@pytest.fixture
def held(home: Home):
    set_timeout(home, 20)


def test_allowed_from_the_cli_is_the_hooks_answer_and_on_the_record(
    home: Home, project: Path, held
):
    jack = hire(home, project)
    secret = "deploy --token " + "s3cr3t" * 100  # longer than any excerpt
    hook = Held(jack.env, tool_name="Bash", tool_input={"command": secret})
    request = open_one(home).request

    code, listed, _ = invoke("approvals", "--home", str(home.root), "--json")
    assert code == 0 and [r["request_id"] for r in listed["approvals"]] == [request.request_id]
    row = listed["approvals"][0]
    assert row["crew"] == "Jack" and row["tool"] == "Bash" and row["allow_session"] is True
    assert len(row["excerpt"]) <= approvals.EXCERPT_MAX and secret not in json.dumps(listed)

    code, env, _ = invoke("wait", "Jack", "--home", str(home.root), "--timeout", "0", "--json")
    assert code == 0 and env["status"] == "awaiting_approval"  # it names the request
    assert env["request_id"] == request.request_id
    assert protocol.crew_state(home, "jack") == "approval"

    code, done, err = invoke(
        "approve", "Jack", request.request_id, "--allow", "--home", str(home.root), "--json"
    )
    assert code == 0, err
    assert done["decision"] == "allow"
    assert hook.answer() == {
        "hookSpecificOutput": {
            "hookEventName": "PermissionRequest",
            "decision": {"behavior": "allow"},
        }
    }
    assert approvals.open_requests(home) == []
    # the decision answers the awaiting_approval, as an answer does an asked: no --ack owed
    assert notify.wait(home, "Jack", timeout=0) is None
    assert protocol.crew_state(home, "jack") == "assigned"

    code, shown, _ = invoke(
        "work",
        "show",
        ledger.work_id_for_assignment(jack.assignment_id),
        "--home",
        str(home.root),
        "--json",
    )
    assert code == 0
    noted = [e for e in shown["item"]["events"] if e["type"].startswith("approval_")]
    assert [(e["type"], e.get("decision"), e["actor"]) for e in noted] == [
        ("approval_requested", None, "Jack"),
        ("approval_decided", "allow", "captain"),
    ]
    assert all(e["request_id"] == request.request_id for e in noted)
    assert noted[0]["fingerprint"] == approvals.fingerprint(secret)
    assert secret not in json.dumps(shown)
    assert ledger.get(home, ledger.work_id_for_assignment(jack.assignment_id)).state == "running"


def test_denied_with_a_reason_the_agent_is_told(home: Home, project: Path, held):
    jack = hire(home, project)
    hook = Held(jack.env, agent="codex", tool_name="Bash", tool_input={"command": "rm -rf /"})
    rid = open_one(home).request.request_id
    refused("invalid_argument", usecases.approve, home, "Jack", rid, "deny", "")  # no reason
    refused("invalid_argument", usecases.approve, home, "Jack", rid, "allow_session")  # codex
    usecases.approve(home, "Jack", rid, "deny", "not outside the project")
    decision = hook.answer()["hookSpecificOutput"]["decision"]
    assert decision == {
        "behavior": "deny",
        "message": "The captain denied this: not outside the project",
    }
    (last,) = [e for e in events(home, jack.assignment_id) if e.type == "approval_decided"]
    assert last.decision == "deny" and last.reason == "not outside the project"


def test_allow_for_the_session_is_claudes_permission_update(home: Home, project: Path, held):
    jack = hire(home, project)
    suggestion = {"type": "addRules", "rules": [{"toolName": "Bash", "ruleContent": "make:*"}],
                  "behavior": "allow", "destination": "localSettings"}  # fmt: skip
    hook = Held(
        jack.env,
        tool_name="Bash",
        tool_input={"command": "make test"},
        permission_suggestions=[suggestion],
    )
    usecases.approve(home, "Jack", open_one(home).request.request_id, "allow_session")
    decision = hook.answer()["hookSpecificOutput"]["decision"]
    assert decision == {
        "behavior": "allow",
        "updatedPermissions": [dict(suggestion, destination="session")],
    }


def test_a_pi_gated_call_is_the_same_request_answered_in_the_extensions_words(
    home: Home, project: Path, held
):
    """pi: captain's extension runs ``captain hook pi tool_call`` for a gated tool; the
    request, its rules and its record are the same as Claude Code's; the answer is what the
    extension reads (docs/approvals.md): allow, allow for this pi session, deny with the
    reason, or nothing (pi's own confirm dialog asks the person in the pane)."""
    jack = hire(home, project)
    content = "hello\x1b[2J\u202e" + "B" * 5_000
    hook = Held(jack.env, agent="pi", tool_name="write",
                tool_input={"path": "docs/notes.md", "content": content})  # fmt: skip
    request = open_one(home).request
    assert request.agent == "pi" and request.tool == "write" and request.session_allowed
    # a file's request shows its path, then what would be written, escaped and bounded
    assert request.excerpt.startswith('docs/notes.md {"content": "hello')
    assert "\x1b" not in request.excerpt and "\u202e" not in request.excerpt
    assert len(request.excerpt) <= approvals.EXCERPT_MAX
    assert request.fingerprint == approvals.fingerprint(
        "docs/notes.md " + json.dumps({"content": content}, ensure_ascii=False)
    )
    usecases.approve(home, "Jack", request.request_id, "allow")
    assert hook.answer() == {"decision": "allow"}

    hook = Held(jack.env, agent="pi", tool_name="bash", tool_input={"command": "make test"})
    usecases.approve(home, "Jack", open_one(home).request.request_id, "allow_session")
    assert hook.answer() == {"decision": "allow_session"}

    hook = Held(jack.env, agent="pi", tool_name="bash", tool_input={"command": "rm -rf /"})
    usecases.approve(home, "Jack", open_one(home).request.request_id, "deny", "not here")
    assert hook.answer() == {"decision": "deny", "reason": "The captain denied this: not here"}
    assert [(e.type, e.decision) for e in events(home, jack.assignment_id)] == [
        ("approval_requested", None),
        ("approval_decided", "allow"),
        ("approval_requested", None),
        ("approval_decided", "allow_session"),
        ("approval_requested", None),
        ("approval_decided", "deny"),
    ]

    # one rule for every agent: Claude Code's Write shows what it would write too (it
    # showed only the path)
    hook = Held(jack.env, tool_name="Write", tool_input={"file_path": "/p/x.py", "content": "X=1"})
    request = open_one(home).request
    assert request.excerpt == '/p/x.py {"content": "X=1"}', request.excerpt
    usecases.approve(home, "Jack", request.request_id, "deny", "no")
    hook.answer()

    set_timeout(home, 0.3)
    hook = Held(jack.env, agent="pi", tool_name="bash", tool_input={"command": "make"})
    assert hook.answer() is None  # nothing printed: the extension asks in the pane
    assert [(e.type, e.decision) for e in events(home, jack.assignment_id)][-1] == (
        "approval_decided",
        "expired",
    )


def test_a_request_is_decided_once_by_its_own_crew_and_never_by_a_crew(
    home: Home, project: Path, held
):
    jack = hire(home, project)
    kim = hire(home, project / "k", "Kim", "Other work")
    Held(kim.env, tool_name="Bash", tool_input={"command": "make"})
    kims = open_one(home, "Kim").request.request_id
    hook = Held(jack.env, tool_name="Bash", tool_input={"command": "ls"})
    jacks = open_one(home, "Jack").request.request_id

    for ctx in (Context.from_env(jack.env), Context.from_env(kim.env)):  # a crew: never
        refused("crew_forbidden", usecases.approve, home, "Jack", jacks, "allow", ctx=ctx)
        refused("crew_forbidden", usecases.pending, home, ctx=ctx)
    refused("unknown_approval", usecases.approve, home, "Jack", kims, "allow")  # not Jack's
    refused("unknown_approval", usecases.approve, home, "Jack", "apr_../../x", "allow")
    usecases.approve(home, "Jack", jacks, "deny", "no")
    refused("approval_decided", usecases.approve, home, "Jack", jacks, "allow")
    assert hook.answer()["hookSpecificOutput"]["decision"]["behavior"] == "deny"
    assert [o.request.request_id for o in approvals.open_requests(home)] == [kims]
    usecases.approve(home, "Kim", kims, "allow")


def test_no_decision_in_time_leaves_the_native_prompt_and_a_late_one_changes_nothing(
    home: Home, project: Path
):
    set_timeout(home, 0.4)
    jack = hire(home, project)
    hook = Held(jack.env, tool_name="Bash", tool_input={"command": "make"})
    rid = open_one(home).request.request_id
    assert hook.answer() is None  # nothing printed: the agent's own prompt appears
    assert hook.took >= 0.4
    err = refused("approval_closed", usecases.approve, home, "Jack", rid, "allow")
    assert "late" in err.message
    assert [(e.type, e.decision) for e in events(home, jack.assignment_id)] == [
        ("approval_requested", None),
        ("approval_decided", "expired"),
        ("approval_decided", "late"),
    ]


def test_a_hook_the_agent_ends_is_answered_in_the_pane_and_prints_nothing(
    home: Home, project: Path, held
):
    jack = hire(home, project)
    data = {"hook_event_name": "PermissionRequest", "tool_name": "Bash", "tool_input": {}}
    proc = subprocess.Popen(
        [sys.executable, "-m", "captain_tui", "hook", "claude", "PermissionRequest"],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env={**os.environ, **jack.env, "PYTHONPATH": str(REPO)},
        cwd=REPO,
    )
    proc.stdin.write(json.dumps(data).encode())
    proc.stdin.close()
    rid = open_one(home).request.request_id
    proc.send_signal(signal.SIGTERM)
    assert proc.wait(timeout=DEADLINE) == 0
    assert proc.stdout.read() == b""
    assert [(e.type, e.decision) for e in events(home, jack.assignment_id)][-1] == (
        "approval_decided",
        "answered_in_pane",
    )
    refused("approval_closed", usecases.approve, home, "Jack", rid, "allow")


def test_what_a_request_shows_is_escaped_and_bounded(home: Home, project: Path, held):
    jack = hire(home, project)
    hostile = "\x1b]0;owned\x07\x1b[2J\u202eevil\u2066 " + "A" * 50_000
    hook = Held(jack.env, tool_name="Bash\x1b[31m" * 20, tool_input={"command": hostile})
    request = open_one(home).request
    shown = request.excerpt + request.tool
    assert "\x1b" not in shown and "\u202e" not in shown and "\x07" not in shown
    assert len(request.excerpt) <= approvals.EXCERPT_MAX and len(request.tool) <= 64
    usecases.approve(home, "Jack", request.request_id, "allow")
    hook.answer()
    for e in events(home, jack.assignment_id):
        assert "\x1b" not in (e.excerpt or "") and len(e.excerpt) <= approvals.EXCERPT_MAX


def test_on_both_ledgers_the_record_is_in_work_show_and_the_apis_events(
    ledgers, tmp_path: Path, project: Path
):
    from support.api import Server, captain, ok

    home = ledgers.home(tmp_path / "h")
    with (home.root / "config.toml").open("a") as config:
        config.write("\n[crew]\napproval_timeout = 20\n")
    home = Home(home.root)
    jack = hire(home, project)
    secret = "curl https://example.invalid/?token=" + "k" * 500
    hook = Held(jack.env, tool_name="Bash", tool_input={"command": secret})
    rid = open_one(home).request.request_id
    usecases.approve(home, "Jack", rid, "deny", "no network")
    assert hook.answer()["hookSpecificOutput"]["decision"]["behavior"] == "deny"
    refused("approval_decided", usecases.approve, home, "Jack", rid, "allow")

    work_id = ledger.work_id_for_assignment(jack.assignment_id)
    token = captain(home.root, "tokens", "create", "--role", "member")["token"]
    server = Server(home.root, tmp_path / "serve.log").start()
    try:
        item = ok(server.get(server.ws(f"/work/{work_id}"), token))
    finally:
        server.stop()
    served = [e for e in item["events"] if e["type"].startswith("approval_")]
    assert [(e["type"], e["decision"], e["request_id"]) for e in served] == [
        ("approval_requested", None, rid),
        ("approval_decided", "deny", rid),
    ]
    assert served[1]["reason"] == "no network" and served[0]["tool"] == "Bash"
    assert served[0]["fingerprint"] == approvals.fingerprint(secret)
    assert secret not in json.dumps(item) and "k" * 300 not in json.dumps(item)
    assert ledger.get(home, work_id).state == "running"


def test_listing_only_reads(tmp_path: Path):
    missing = tmp_path / "no-home"
    code, listed, _ = invoke("approvals", "--home", str(missing), "--json")
    assert code == 0 and listed == {"ok": True, "approvals": []}
    assert not missing.exists()  # a read-only command creates nothing, not even the home


def test_a_decision_racing_the_deadline_is_either_the_answer_or_refused_never_lost(
    home: Home, project: Path
):
    """Decided at the very moment the hold runs out, 12 times: a decision the captain was
    told went through is the hook's answer, and one the hook did not take was refused
    (approval_closed) — never an "allowed" the agent did not get."""
    # a hold long enough that the request is always seen open under load (a hook's cold
    # start is not part of it), each decision timed against the request's own deadline
    set_timeout(home, 0.6)
    jack = hire(home, project)
    taken = refused_late = 0
    for i in range(12):
        hook = Held(jack.env, tool_name="Bash", tool_input={"command": f"make {i}"})
        request = open_one(home).request
        left = (request.expires_at - now()).total_seconds()
        time.sleep(max(0.0, left - 0.03 + 0.01 * (i % 7)))  # from just before to just after
        try:
            usecases.approve(home, "Jack", request.request_id, "allow")
        except CaptainError as err:
            assert err.code == "approval_closed"
            assert hook.answer() is None
            refused_late += 1
        else:
            assert hook.answer()["hookSpecificOutput"]["decision"]["behavior"] == "allow"
            taken += 1
    assert taken + refused_late == 12

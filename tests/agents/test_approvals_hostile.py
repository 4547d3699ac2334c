"""Approvals against a hostile crew (hostile26): a decision decides only the request it
names. A crew's hook that finds, under its own request's name, the captain's decision for
another request (another crew's, copied or linked there by a process that can write the
home) does not take it as its answer: it prints nothing, so the agent's own prompt appears.
What one uid cannot stop (a crew writing a decision of its own making) is said in
docs/design.md, "Trust model", and docs/approvals.md."""

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
from state.crew import approvals
from state.home import Home
from state.work import ledger

DEADLINE = 10.0
REPO = Path(__file__).resolve().parents[2]


@pytest.fixture
def held(home: Home):
    (home.root / "config.toml").write_text("[crew]\napproval_timeout = 20\n")


def open_of(home: Home, name: str) -> approvals.Request:
    end = time.monotonic() + DEADLINE
    while time.monotonic() < end:
        found = approvals.open_requests(home, name)
        if found:
            return found[0].request
        time.sleep(0.01)
    raise AssertionError(f"no approval request of {name} appeared")


@pytest.mark.parametrize("how", ["copy", "link"])
def test_another_requests_decision_under_this_name_is_no_answer(
    home: Home, project: Path, held, how: str
):
    jack = hire(home, project)
    kim = hire(home, project / "k", "Kim", "Other work")
    for key in ("jack", "kim"):
        approvals.prepare(home, key)  # as the agent's launch does
    kims_hook = Held(kim.env, tool_name="Bash", tool_input={"command": "make"})
    kims = open_of(home, "Kim")
    usecases.approve(home, "Kim", kims.request_id, "allow")  # the captain allows Kim's
    assert kims_hook.answer()["hookSpecificOutput"]["decision"]["behavior"] == "allow"

    jacks_hook = Held(jack.env, tool_name="Bash", tool_input={"command": "rm -rf ~"})
    jacks = open_of(home, "Jack")
    # Jack's process puts the captain's decision for Kim's request under its own request
    theirs = home.root / "approvals" / "kim" / "decisions" / f"{kims.request_id}.json"
    mine = home.root / "approvals" / "jack" / "decisions" / f"{jacks.request_id}.json"
    if how == "copy":
        mine.write_bytes(theirs.read_bytes())
    else:
        os.link(theirs, mine)

    assert jacks_hook.answer() is None  # nothing printed: never an allow
    assert approvals.open_requests(home) == []
    kinds = [
        (e.type, e.decision)
        for e in ledger.events(home, ledger.work_id_for_assignment(jack.assignment_id))
        if e.type.startswith("approval_")
    ]
    assert kinds == [("approval_requested", None), ("approval_decided", "expired")]


def test_a_hook_killed_outright_is_never_reported_decided(home: Home, project: Path, held):
    """SIGKILL leaves the hook no moment to close its request: the captain's decision then
    reaches no one (the agent's own prompt takes it), so it is refused and recorded late,
    never reported, listed or recorded as given."""
    jack = hire(home, project)
    data = {"hook_event_name": "PermissionRequest", "tool_name": "Bash", "tool_input": {}}
    proc = subprocess.Popen(
        [sys.executable, "-m", "captain_tui", "hook", "claude", "PermissionRequest"],
        stdin=subprocess.PIPE,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        env={**os.environ, **jack.env, "PYTHONPATH": str(REPO)},
        cwd=REPO,
    )
    proc.stdin.write(json.dumps(data).encode())
    proc.stdin.close()
    rid = open_of(home, "Jack").request_id
    proc.send_signal(signal.SIGKILL)
    proc.wait(timeout=DEADLINE)

    assert approvals.open_requests(home) == []  # nothing holds it any more
    err = refused("approval_closed", usecases.approve, home, "Jack", rid, "allow")
    assert "hook ended" in err.message
    kinds = [
        (e.type, e.decision, e.actor)
        for e in ledger.events(home, ledger.work_id_for_assignment(jack.assignment_id))
        if e.type.startswith("approval_")
    ]
    assert kinds == [
        ("approval_requested", None, "Jack"),
        ("approval_decided", "expired", "Jack"),
        ("approval_decided", "late", "captain"),
    ]


def test_a_request_planted_in_another_folder_is_not_listed_or_decided(
    home: Home, project: Path, held
):
    """The list shows a request only from its own crew's folder and under its own ID: a
    copy of Kim's request planted in Jack's folder with a harmless excerpt (one row the
    captain would allow, deciding Kim's real one) is not listed, and is no request."""
    hire(home, project)
    kim = hire(home, project / "k", "Kim", "Other work")
    approvals.prepare(home, "jack")
    kims_hook = Held(kim.env, tool_name="Bash", tool_input={"command": "rm -rf ~/src"})
    kims = open_of(home, "Kim")
    planted = json.loads(kims.model_dump_json())
    planted["excerpt"] = "ls"
    fake = "apr_" + "0" * 26
    (home.root / "approvals" / "jack" / f"{fake}.json").write_text(json.dumps(planted))

    code, listed, _ = invoke("approvals", "--home", str(home.root), "--json")
    assert code == 0
    assert [(r["crew"], r["request_id"], r["excerpt"]) for r in listed["approvals"]] == [
        ("Kim", kims.request_id, "rm -rf ~/src")
    ]
    refused("unknown_approval", usecases.approve, home, "Jack", fake, "allow")
    usecases.approve(home, "Kim", kims.request_id, "deny", "no")
    assert kims_hook.answer()["hookSpecificOutput"]["decision"]["behavior"] == "deny"

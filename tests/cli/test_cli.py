"""The protocol through the CLI: ``main(argv)`` in this process, as a fresh process would
run it (``support.cli.InProcess``); ``IN_A_PROCESS`` tests run ``python -m captain_tui``.

Every call goes through ``run``, which also asserts that no traceback ever reaches a
person. Exit codes, stdout JSON and stderr lines are the contract under test.
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
import time
from datetime import datetime
from pathlib import Path

import pytest
from support.cli import IN_A_PROCESS, refused_human, runner
from support.cli import ok as ok_json
from support.cli import refused as refused_json

ENVELOPE_KEYS = {"status", "delivery_id", "crew", "assignment_id", "summary", "queued_at"}


# -- helpers --------------------------------------------------------------------------------


@pytest.fixture
def run(request, cli):
    """The CLI in this process (a real one for ``IN_A_PROCESS``), asserting on every call
    that no traceback was printed."""
    return runner(request, cli)


def usage_error(result, *, as_json: bool = False) -> None:
    assert result.code == 2, (result.code, result.out, result.err)
    if as_json:  # one usage refusal on stdout (tests/cli/test_usage_json.py)
        assert json.loads(result.out)["error"]["code"] == "usage", result.out
        assert result.err == "", result.err
        return
    assert "usage:" in result.err, result.err
    assert "error:" in result.err, result.err
    assert "Traceback" not in result.err
    assert result.out == ""


def recruit(run, name="Jack", *, task="T", owns=("src",), allow=("edit",), extra=()) -> dict:
    args = ["crew", name, "--task", task]
    for path in owns:
        args += ["--owns", path]
    for action in allow:
        args += ["--allow", action]
    payload = ok_json(run(*args, *extra, "--json"))
    return payload


def parse_time(stamp: str) -> datetime:
    return datetime.fromisoformat(stamp.replace("Z", "+00:00"))


def status_row(run, name: str, *flags: str) -> dict | None:
    rows = ok_json(run("status", "--json", *flags))["crew"]
    found = [r for r in rows if r["name"].lower() == name.lower()]
    return found[0] if found else None


# -- the happy path -------------------------------------------------------------------------


@IN_A_PROCESS
def test_full_protocol_round_trip(run, project: Path):
    # recruit: separate IDs and the environment a crew process needs
    r = recruit(run, task="Rewrite the docs", owns=("src",), allow=("edit",))
    assert r["crew"] == "Jack"
    ids = [r["incarnation_id"], r["assignment_id"], r["message_id"]]
    assert all(isinstance(i, str) and i for i in ids) and len(set(ids)) == 3
    env = r["env"]
    assert env["CAPTAIN_ROLE"] == "crew"
    assert env["CAPTAIN_CREW"] == "Jack"
    assert env["CAPTAIN_INCARNATION"] == r["incarnation_id"]
    assert env["CAPTAIN_ASSIGNMENT"] == r["assignment_id"]
    assert Path(env["CAPTAIN_HOME"]) == run.cli.home
    a1 = r["assignment_id"]

    # check, crew side: granted inside the owned path, denied outside
    granted = run("check", "Jack", "edit", "src/x.py", env=env)
    assert granted.code == 0, granted.err
    denied = run("check", "Jack", "edit", "other/x.py", env=env)
    message = refused_human(denied, "grant_denied")
    assert "other/x.py" in message
    assert run("check", "Jack", "build", env=env).code == 1  # action not granted
    assert run("check", "Jack", "edit", "src/../other/x.py", env=env).code == 1  # no escape
    assert run("check", "Jack", "edit", "srcx/y.py", env=env).code == 1  # component-wise

    # ask, crew side
    asked = ok_json(run("ask", "Jack", "Which behaviour is intended?", "--json", env=env))
    qid = asked["question_id"]
    assert qid

    # wait, captain side: the asked envelope
    n1 = ok_json(run("wait", "Jack", "--json", "--timeout", "5"))
    assert ENVELOPE_KEYS <= set(n1), n1
    assert n1["status"] == "asked"
    assert n1["crew"] == "Jack"
    assert n1["assignment_id"] == a1
    assert n1["summary"] == "Which behaviour is intended?"
    assert n1["question_id"] == qid
    assert n1["delivery_id"]
    assert n1["queued_at"] is not None  # the task mail was the newest when it asked

    # returned once: waiting again without --ack names the unacknowledged delivery
    again = run("wait", "Jack", "--json", "--timeout", "5")
    err = refused_json(again, "unacknowledged")
    assert n1["delivery_id"] in err["message"]

    # answer, captain side: only the pending question, exactly once
    err = refused_json(
        run("answer", "Jack", "q_NOPE", "guess", "--assignment", a1, "--json"), "unknown_question"
    )
    assert qid in err["message"]
    answered = ok_json(
        run("answer", "Jack", qid, "Keep existing behaviour", "--assignment", a1, "--json")
    )
    assert answered["question_id"] == qid
    refused_json(
        run("answer", "Jack", qid, "again", "--assignment", a1, "--json"), "question_answered"
    )

    # inbox, crew side: task first, then the answer; then nothing
    box = ok_json(run("inbox", "Jack", "--json", env=env))
    texts = [m["text"] for m in box["messages"]]
    assert texts == ["Rewrite the docs", "Keep existing behaviour"]
    assert box["messages"][0]["message_id"] == r["message_id"]
    assert parse_time(box["messages"][0]["queued_at"]) == parse_time(n1["queued_at"])
    human = run("inbox", "Jack", env=env)
    assert human.code == 0
    assert "Rewrite the docs" not in human.out and "Keep existing" not in human.out
    assert "No unread mail" in human.out

    # done, crew side
    finished = ok_json(
        run("done", "Jack", "--report", "Changed x.py; checks pass", "--json", env=env)
    )
    assert finished["assignment_id"] == a1

    # ack the asked, which returns the done
    n2 = ok_json(run("wait", "Jack", "--ack", n1["delivery_id"], "--json", "--timeout", "5"))
    assert n2["status"] == "done"
    assert n2["summary"] == "Changed x.py; checks pass"
    assert n2["assignment_id"] == a1
    assert n2["delivery_id"] and n2["delivery_id"] != n1["delivery_id"]
    assert "question_id" not in n2

    # ack the done: one idle
    n3 = ok_json(run("wait", "Jack", "--ack", n2["delivery_id"], "--json", "--timeout", "0"))
    assert n3["status"] == "idle"
    assert n3["assignment_id"] == a1

    # the next assignment inherits the grant
    nxt = ok_json(run("assign", "Jack", "--task", "T2", "--handoff", a1, "--json"))
    a2 = nxt["assignment_id"]
    assert a2 and a2 != a1
    assert nxt["message_id"] and nxt["message_id"] not in (r["message_id"], answered["message_id"])
    row = status_row(run, "Jack")
    assert row["assignment_id"] == a2
    assert row["owns"] == [str(project / "src")]
    assert row["allow"] == ["edit"]

    # the old assignment is stale for the crew, and the refusal names the live one
    stale = run("ask", "Jack", "one more?", "--json", env=env)
    err = refused_json(stale, "stale_assignment")
    assert a2 in err["message"]
    env2 = {**env, "CAPTAIN_ASSIGNMENT": a2}
    assert run("check", "Jack", "edit", "src/y.py", env=env2).code == 0


def test_wait_returns_when_a_notification_arrives(run, cli):
    r = recruit(run)
    proc = subprocess.Popen(
        [sys.executable, "-m", "captain_tui", "wait", "Jack", "--json", "--timeout", "30"],
        cwd=cli.cwd,
        env=cli.env(),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        started = time.monotonic()
        ok_json(run("ask", "Jack", "now? " + "x" * 2000, "--json", env=r["env"]))
        out, err = proc.communicate(timeout=20)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert proc.returncode == 0, err
    assert time.monotonic() - started < 20
    assert "Traceback" not in err
    n = json.loads(out)
    assert n["status"] == "asked"
    assert n["summary"].startswith("now? xxx")
    assert len(n["summary"]) <= 1600  # summaries are capped


# -- refusals and usage errors --------------------------------------------------------------


@IN_A_PROCESS
def test_refusal_format_json_and_human(run):
    as_json = run("tell", "Nobody", "hello", "--assignment", "asg_x", "--json")
    refused_json(as_json, "unknown_crew")
    assert as_json.err.strip() == "" or "captain: [" not in as_json.err

    human = run("tell", "Nobody", "hello", "--assignment", "asg_x")
    assert refused_human(human, "unknown_crew")
    assert human.err.startswith("captain: [unknown_crew] ")
    assert human.out == ""

    bad_name = run("crew", "../x", "--task", "T", "--json")
    refused_json(bad_name, "invalid_name")
    refused_human(run("crew", "has space", "--task", "T"), "invalid_name")


@pytest.mark.parametrize(
    "argv",
    [
        ["bogus"],
        ["crew", "Jack"],
        ["assign", "Jack", "--task", "T"],
        ["wait"],
        ["wait", "--json", "--timeout", "0"],
        ["wait", "Jack", "--all"],
        ["wait", "Jack", "--timeout", "-1"],
        ["wait", "Jack", "--timeout", "nan"],
        ["wait", "Jack", "--timeout", "inf"],
        ["wait", "Jack", "--timeout", "abc", "--json"],
        ["status", "--bogus"],
    ],
    ids=lambda argv: " ".join(argv),
)
def test_usage_errors_exit_2(run, argv):
    usage_error(run(*argv), as_json="--json" in argv)


def test_timeout_zero_with_nothing_pending(run):
    r = recruit(run)
    started = time.monotonic()
    result = run("wait", "Jack", "--timeout", "0", "--json")
    payload = ok_json(result)
    assert payload["status"] == "timeout"
    assert payload["delivery_id"] is None
    assert payload["crew"] == "Jack"
    assert payload["assignment_id"] == r["assignment_id"]
    assert ENVELOPE_KEYS <= set(payload)
    assert time.monotonic() - started < 10

    # a short positive timeout really waits, then reports the timeout (human mode)
    started = time.monotonic()
    human = run("wait", "Jack", "--timeout", "0.4")
    assert human.code == 0
    assert time.monotonic() - started >= 0.4
    assert "timeout" in human.out


def test_wait_on_unknown_crew_and_unknown_delivery(run):
    recruit(run)
    nobody, nope, escape = run.many(
        (("wait", "Nobody", "--timeout", "0", "--json"), None),
        (("wait", "Jack", "--ack", "dlv_NOPE", "--timeout", "0", "--json"), None),
        (("wait", "Jack", "--ack", "../../home", "--timeout", "0", "--json"), None),
    )
    refused_json(nobody, "unknown_crew")
    refused_json(nope, "unknown_delivery")
    refused_json(escape, "unknown_delivery")


# -- crew-side context ----------------------------------------------------------------------


def test_crew_context_missing_and_stale(run):
    r = recruit(run)
    env, a1 = r["env"], r["assignment_id"]

    no_assignment = {k: v for k, v in env.items() if k != "CAPTAIN_ASSIGNMENT"}
    no_incarnation = {k: v for k, v in env.items() if k != "CAPTAIN_INCARNATION"}
    stale_inc = {**env, "CAPTAIN_INCARNATION": "inc_00000000000000000000000000"}
    stale_asg = {**env, "CAPTAIN_ASSIGNMENT": "asg_00000000000000000000000000"}
    missing, explicit, no_inc, old_inc, old_asg, old_asg_human = run.many(
        (("check", "Jack", "edit", "src/x.py", "--json"), no_assignment),
        # an explicit --assignment stands in for the missing variable
        (("check", "Jack", "edit", "src/x.py", "--assignment", a1), no_assignment),
        (("ask", "Jack", "q?", "--json"), no_incarnation),
        (("done", "Jack", "--report", "R", "--json"), stale_inc),
        (("ask", "Jack", "q?", "--json"), stale_asg),
        (("check", "Jack", "edit", "src/x.py"), stale_asg),
    )
    assert a1 in refused_json(missing, "missing_context")["message"]
    assert explicit.code == 0, explicit.err
    refused_json(no_inc, "missing_context")
    assert a1 in refused_json(old_inc, "stale_incarnation")["message"]
    assert a1 in refused_json(old_asg, "stale_assignment")["message"]
    assert a1 in refused_human(old_asg_human, "stale_assignment")

    # nothing above wrote anything: no question is pending, the crew is not done
    row = status_row(run, "Jack")
    assert row["question_id"] is None and row["state"] == "assigned"


CAPTAIN_SIDE = [
    ("crew", ["crew", "Other", "--task", "T"]),
    ("assign", ["assign", "Jack", "--task", "T2", "--handoff", "{a}"]),
    ("tell", ["tell", "Jack", "hello", "--assignment", "{a}"]),
    ("answer", ["answer", "Jack", "q_x", "an answer", "--assignment", "{a}"]),
    ("dismiss", ["dismiss", "Jack"]),
    ("wait", ["wait", "Jack", "--timeout", "0"]),
    ("wait --all", ["wait", "--all", "--timeout", "0"]),
]


def test_crew_may_not_run_captain_commands(run):
    r = recruit(run)
    env, a1 = r["env"], r["assignment_id"]
    results = run.many(
        *[((*[arg.replace("{a}", a1) for arg in argv], "--json"), env) for _, argv in CAPTAIN_SIDE]
    )
    for (label, _), result in zip(CAPTAIN_SIDE, results):
        assert result.code == 1, (label, result.out, result.err)
        refused_json(result, "crew_forbidden")
    # nothing was written by the refused commands
    row = status_row(run, "Jack")
    assert row["state"] == "assigned"
    assert row["unread"] == 1  # only the task; the crew's 'tell' did not land
    assert status_row(run, "Other") is None
    # status is read-only: a crew may look
    assert run("status", "--json", env=env).code == 0


def test_crew_may_not_act_for_another_crew(run):
    jack = recruit(run, "Jack", owns=("src/a",))
    anne = recruit(run, "Anne", owns=("src/b",))
    env = jack["env"]
    results = run.many(
        *[
            ((*argv, "--json"), env)
            for argv in (
                ["check", "Anne", "edit", "src/b/x.py", "--assignment", anne["assignment_id"]],
                ["ask", "Anne", "q?", "--assignment", anne["assignment_id"]],
                ["done", "Anne", "--report", "R", "--assignment", anne["assignment_id"]],
                ["inbox", "Anne"],
            )
        ]
    )
    for result in results:
        refused_json(result, "crew_forbidden")
    row = status_row(run, "Anne")
    assert row["unread"] == 1 and row["state"] == "assigned" and row["question_id"] is None


def test_ownership_overlap_and_unknown_action(run):
    recruit(run, "Jack", owns=("src",))
    err = refused_json(
        run("crew", "Anne", "--task", "T", "--owns", "src/deep/er", "--json"), "ownership_overlap"
    )
    assert "Jack" in err["message"]
    refused_json(
        run("crew", "Anne", "--task", "T", "--allow", "launch-missiles", "--json"), "unknown_action"
    )
    refused_json(run("crew", "JACK", "--task", "T", "--json"), "crew_exists")


# -- finishing ------------------------------------------------------------------------------


def test_done_with_unread_mail_human(run):
    r = recruit(run, task="Do the thing\nwith two lines")
    env = r["env"]
    first = run("done", "Jack", "--report", "R", env=env)
    refused_human(first, "unread_mail", quiet=False)  # the mail is on stdout
    both = first.out + first.err
    assert "Do the thing" in both and "with two lines" in both
    second = run("done", "Jack", "--report", "R", env=env)
    assert second.code == 0, second.err
    assert status_row(run, "Jack")["state"] == "done"


def test_done_with_unread_mail_json_and_pending_question(run):
    r = recruit(run, task="the task text")
    env, a1 = r["env"], r["assignment_id"]
    ok_json(run("tell", "Jack", "a follow-up", "--assignment", a1, "--json"))
    err = refused_json(run("done", "Jack", "--report", "R", "--json", env=env), "unread_mail")
    assert [m["text"] for m in err["messages"]] == ["the task text", "a follow-up"]

    asked = ok_json(run("ask", "Jack", "really?", "--json", env=env))
    refused_json(run("done", "Jack", "--report", "R", "--json", env=env), "question_pending")
    refused_json(run("ask", "Jack", "and?", "--json", env=env), "question_pending")
    refused_json(run("done", "Jack", "--json", env=env), "report_required")
    ok_json(run("answer", "Jack", asked["question_id"], "yes", "--assignment", a1, "--json"))
    # the answer is unread: done serves it, then succeeds
    err = refused_json(run("done", "Jack", "--report", "R", "--json", env=env), "unread_mail")
    assert [m["text"] for m in err["messages"]] == ["yes"]
    ok_json(run("done", "Jack", "--report", "R", "--json", env=env))


def test_assign_requires_done_ack_and_exact_handoff(run, project: Path):
    r = recruit(run, owns=("src",), allow=("edit", "test"))
    env, a1 = r["env"], r["assignment_id"]
    refused_json(
        run("assign", "Jack", "--task", "T2", "--handoff", a1, "--json"), "assignment_active"
    )
    run("inbox", "Jack", env=env)
    ok_json(run("done", "Jack", "--report", "R", "--json", env=env))
    refused_json(
        run("assign", "Jack", "--task", "T2", "--handoff", "asg_other", "--json"),
        "handoff_mismatch",
    )
    err = refused_json(
        run("assign", "Jack", "--task", "T2", "--handoff", a1, "--json"), "unacknowledged"
    )
    n = ok_json(run("wait", "Jack", "--json", "--timeout", "5"))
    assert n["status"] == "done" and n["delivery_id"] in err["message"]
    ok_json(run("wait", "Jack", "--ack", n["delivery_id"], "--json", "--timeout", "0"))
    # --owns restated, --allow inherited
    nxt = ok_json(
        run("assign", "Jack", "--task", "T2", "--handoff", a1, "--owns", "docs", "--json")
    )
    row = status_row(run, "Jack")
    assert row["assignment_id"] == nxt["assignment_id"]
    assert row["owns"] == [str(project / "docs")]
    assert row["allow"] == ["edit", "test"]


# -- dismiss and bounced mail ---------------------------------------------------------------


def test_dismiss_bounces_unread_mail_and_recruit_again(run):
    r = recruit(run, task="the task")
    env, a1 = r["env"], r["assignment_id"]
    told = ok_json(run("tell", "Jack", "a follow-up", "--assignment", a1, "--json"))

    gone = ok_json(run("dismiss", "Jack", "--json"))
    assert gone["bounced"] == [r["message_id"], told["message_id"]]

    b1 = ok_json(run("wait", "Jack", "--json", "--timeout", "5"))
    assert b1["status"] == "bounced" and b1["crew"] == "Jack" and b1["delivery_id"]
    refused_json(run("wait", "Jack", "--json", "--timeout", "0"), "unacknowledged")
    b2 = ok_json(run("wait", "Jack", "--ack", b1["delivery_id"], "--json", "--timeout", "5"))
    assert b2["status"] == "bounced" and b2["delivery_id"] != b1["delivery_id"]
    assert {b1.get("message_id"), b2.get("message_id")} == set(gone["bounced"])

    refused_json(
        run("tell", "Jack", "still there?", "--assignment", a1, "--json"), "crew_dismissed"
    )
    refused_json(run("crew", "Jack", "--task", "again", "--json"), "crew_dismissed")
    # not every notification of a1 is acknowledged yet
    refused_json(
        run("crew", "Jack", "--task", "again", "--handoff", a1, "--json"), "unacknowledged"
    )
    ok_json(run("wait", "Jack", "--ack", b2["delivery_id"], "--json", "--timeout", "0"))
    again = ok_json(run("crew", "Jack", "--task", "again", "--handoff", a1, "--json"))
    assert again["incarnation_id"] != r["incarnation_id"]
    assert again["assignment_id"] != a1

    # the old crew process is now a stale incarnation, and is told the live assignment
    err = refused_json(
        run("check", "Jack", "edit", "src/x.py", "--json", env=env), "stale_incarnation"
    )
    assert again["assignment_id"] in err["message"]
    # the new incarnation sees only its own task, not the bounced mail
    box = ok_json(run("inbox", "Jack", "--json", env=again["env"]))
    assert [m["text"] for m in box["messages"]] == ["again"]


# -- status ---------------------------------------------------------------------------------


def test_status_with_no_crew_says_how_to_recruit(run):
    result = run("status")
    assert result.code == 0
    assert "captain crew" in result.out
    assert ok_json(run("status", "--json"))["crew"] == []


def test_status_is_an_aligned_table(run):
    jack = recruit(run, "Jack", owns=("src/a",))
    recruit(run, "Annabelle_Long-Name", owns=("src/b",))
    ok_json(run("ask", "Jack", "q?", "--json", env=jack["env"]))
    result = run("status")
    assert result.code == 0
    lines = [line for line in result.out.splitlines() if line.strip()]
    assert lines[-1] == f"Home: {run.cli.home}", result.out  # where this home is, last
    assert lines[-2] == "Ledger: files in the home (the default)", result.out  # which ledger
    lines = lines[:-2]
    assert len(lines) == 3, result.out
    header = lines[0]
    assert header.split()[:3] == ["NAME", "AGENT", "STATE"]
    assert "ASSIGNMENT" in header
    starts = [m.start() for m in re.finditer(r"\S+", header)]
    for line in lines[1:]:
        for col in starts:
            assert len(line) > col and line[col] != " ", (col, line)
            assert col == 0 or line[col - 1] == " ", (col, line)
    assert any(line.startswith("Jack ") and "asked" in line for line in lines[1:])
    assert any(line.startswith("Annabelle_Long-Name ") for line in lines[1:])


# -- home selection, quarantine, text -------------------------------------------------------


def test_home_flag_after_command_overrides_env(run, tmp_path: Path):
    other = tmp_path / "other-home"
    r = ok_json(run("crew", "Jack", "--task", "T", "--home", str(other), "--json"))
    assert Path(r["env"]["CAPTAIN_HOME"]) == other
    assert (other / "crew").is_dir()
    assert [c["name"] for c in ok_json(run("status", "--json", "--home", str(other)))["crew"]] == [
        "Jack"
    ]
    assert ok_json(run("status", "--json"))["crew"] == []  # $CAPTAIN_HOME untouched


def test_quarantined_file_warns_and_the_command_succeeds(run):
    r = recruit(run, task="the task")
    bad = run.cli.home / "mail" / "jack" / "bad.json"
    assert bad.parent.is_dir()
    bad.write_bytes(b"{not json\xff")
    result = run("inbox", "Jack", "--json", env=r["env"])
    box = ok_json(result)
    assert [m["text"] for m in box["messages"]] == ["the task"]
    warnings = [line for line in result.err.splitlines() if "quarantined" in line]
    assert warnings, result.err
    assert "bad.json" in warnings[0]
    assert not bad.exists()
    assert any(p.name.endswith("bad.json") for p in (run.cli.home / "quarantine").iterdir())
    # reported once: the next command has nothing to warn about
    assert "quarantined" not in run("status").err


def test_text_round_trips_exactly(run):
    r = recruit(run, task="the task")
    env, a1 = r["env"], r["assignment_id"]
    told = ok_json(run("tell", "Jack", "a follow-up", "--assignment", a1, "--json"))
    human = run("inbox", "Jack", env=env)  # for people: oldest first
    assert human.code == 0
    assert (
        human.out.index(r["message_id"])
        < human.out.index("the task")
        < human.out.index(told["message_id"])
        < human.out.index("a follow-up")
    )
    text = "line one\n\tindented line\n\nunicode: héllo ✓ 🚀  \n  trailing spaces  "
    ok_json(run("tell", "Jack", text, "--assignment", a1, "--json"))
    box = ok_json(run("inbox", "Jack", "--json", env=env))
    assert box["messages"][-1]["text"] == text


def test_control_characters_are_invalid_text(run):
    r = recruit(run)
    for text in ["red \x1b[31malert", "bell\x07", "cr\rlf", "del\x7f"]:
        err = refused_json(
            run("tell", "Jack", text, "--assignment", r["assignment_id"], "--json"), "invalid_text"
        )
        assert "\x1b" not in err["message"] and "\x07" not in err["message"]
    refused_json(run("ask", "Jack", "bell\x07", "--json", env=r["env"]), "invalid_text")
    human = run("tell", "Jack", "red \x1b[31malert", "--assignment", r["assignment_id"])
    refused_human(human, "invalid_text")
    assert "\x1b" not in human.err  # the refusal never echoes the raw escape to a terminal
    refused_json(
        run("tell", "Jack", "x" * 70_000, "--assignment", r["assignment_id"], "--json"),
        "message_too_large",
    )
    assert status_row(run, "Jack")["unread"] == 1  # nothing was queued


def test_refusal_never_echoes_raw_control_characters(run):
    """A hostile ID in the arguments must not reach the terminal raw: no escape sequences,
    and the refusal stays one line (`captain: [code] message`)."""
    recruit(run)
    hostile = "asg\x1b[2J\x1b]0;owned\x07\nsecond line"
    result = run("tell", "Jack", "hi", "--assignment", hostile)
    refused_human(result, "stale_assignment")
    assert "\x1b" not in result.err and "\x07" not in result.err, repr(result.err)
    assert len(result.err.strip().splitlines()) == 1, repr(result.err)
    result = run("wait", "Jack", "--ack", "dlv\x1b[2J", "--timeout", "0")
    refused_human(result, "unknown_delivery")
    assert "\x1b" not in result.err, repr(result.err)


def test_duplicate_tell_is_refused_by_message_id(run):
    r = recruit(run)
    a1 = r["assignment_id"]
    first = ok_json(run("tell", "Jack", "same words", "--assignment", a1, "--json"))
    err = refused_json(
        run("tell", "Jack", "same words", "--assignment", a1, "--json"), "duplicate_message"
    )
    assert first["message_id"] in err["message"]


# -- roles mean what they say ------------------------------------------------------------------


def test_status_run_by_a_crew_shows_that_crew_only(run):
    """Another crew's incarnation ID is all a crew would need to read its mail: a crew's
    status shows the crew itself, never the others."""
    jack = recruit(run, "Jack", owns=("src/a",))
    gibbs = recruit(run, "Gibbs", owns=("src/b",))
    rows = ok_json(run("status", "--json", env=jack["env"]))["crew"]
    assert [r["name"] for r in rows] == ["Jack"]
    human = run("status", env=jack["env"]).out
    assert "Gibbs" not in human and gibbs["incarnation_id"] not in human
    captain = ok_json(run("status", "--json"))["crew"]  # the captain sees everyone
    assert sorted(r["name"] for r in captain) == ["Gibbs", "Jack"]


@pytest.mark.parametrize("role", ["Crew", "crew ", "admin", "root", "CAPTAIN", "\u200bcrew"])
def test_an_unknown_role_is_refused_never_taken_for_the_captain(run, role):
    jack = recruit(run, "Jack", owns=("src/a",))
    env = {**jack["env"], "CAPTAIN_ROLE": role}
    for argv in (
        ("status", "--json"),
        ("dismiss", "Jack", "--json"),
        ("tell", "Jack", "hello", "--assignment", jack["assignment_id"], "--json"),
        ("check", "Jack", "edit", "src/a/x.py", "--json"),
    ):
        refused_json(run(*argv, env=env), "invalid_role")
    assert ok_json(run("status", "--json"))["crew"][0]["state"] == "assigned"  # untouched


def test_the_captain_role_may_be_unset_empty_or_named(run):
    recruit(run, "Jack", owns=("src/a",))
    for role in (None, "", "captain"):
        env = {} if role is None else {"CAPTAIN_ROLE": role}
        assert ok_json(run("status", "--json", env=env))["crew"][0]["name"] == "Jack"


@IN_A_PROCESS
def test_a_crew_process_cannot_open_the_cockpit(run, cli):
    jack = recruit(run, "Jack", owns=("src/a",))
    result = run(env=jack["env"])
    assert result.code == 1
    assert "[crew_forbidden]" in result.err and "cockpit" in result.err


def test_an_empty_cwd_means_here_and_a_missing_one_is_named(run, cli):
    got = ok_json(run("crew", "Jack", "--task", "T", "--cwd", "", "--no-launch", "--json"))
    assert got["env"]["CAPTAIN_HOME"]
    missing = refused_json(
        run("crew", "Gibbs", "--task", "T", "--cwd", "/no/such/dir", "--no-launch", "--json"),
        "invalid_path",
    )
    assert "--cwd /no/such/dir" in missing["message"]


# -- odd arguments get a stable code, never internal_error --------------------------------------


@pytest.mark.parametrize(
    "argv", [("status", "--home", ""), ("--home", "", "status"), ("status", "--home", "  ")]
)
def test_an_empty_home_is_refused_not_taken_for_the_default(run, argv):
    refused_human(run(*argv), "invalid_home")


def test_an_unclosed_quote_in_command_is_refused_and_nothing_is_recorded(run, cli):
    r = run("crew", "Jack", "--task", "T", "--command", "sh -c 'unclosed", "--json")
    assert "quot" in refused_json(r, "invalid_argument")["message"]
    assert not (cli.home / "crew" / "jack").exists()


@pytest.mark.parametrize("flag", ["--session", "--socket", "--cwd", "--command"])
def test_undecodable_bytes_in_a_crew_option_are_refused(run, cli, flag):
    r = run("crew", "Jack", "--task", "T", flag, "x\udcff\udcfe", "--json")  # bytes ff fe
    assert refused_json(r, "invalid_argument")["message"].startswith(flag)
    assert not (cli.home / "crew" / "jack").exists()


def test_undecodable_bytes_in_a_label_or_holder_are_refused(run):
    refused_json(
        run("tokens", "create", "--role", "member", "--label", "\udcff", "--json"),
        "invalid_argument",
    )
    refused_json(run("work", "claim", "--holder", "w\udcff", "--json"), "invalid_argument")

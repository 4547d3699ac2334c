"""The store never writes what it would refuse to read, through the real CLI.

Each test is one way a writer used to acknowledge a record larger than the reader's cap
(``store.MAX_RECORD_BYTES``), which the next read quarantined: an oversized report detail,
a dismissal of a crew with more than a thousand unread messages, a recruit owning thousands
of paths. Every call is ``main(argv)`` in this process, in a fresh process's world
(``support.cli.InProcess``; a real process for ``IN_A_PROCESS``); bulk mail is written
directly, as the records ``tell`` writes. Nothing is ever quarantined afterwards, and a
refusal writes nothing.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
from support.cli import IN_A_PROCESS, ok, runner

from state.clock import now
from state.errors import CODES
from state.home import Home
from state.ids import MESSAGE, new_id
from state.records import Message
from state.store import encode

# The limits as documented (docs/store.md, docs/ledger.md); the first test holds the code
# to them.
MAX_TEXT_BYTES, MAX_PATH_BYTES, MAX_OWNS, MAX_COMMAND_BYTES = 64 * 1024, 4096, 32, 8192
MAX_ATTEMPTS, LINE_MAX = 20, 200


def test_the_documented_limits_are_the_rules():
    from state import inputs
    from state.work import ledger

    assert (
        inputs.MAX_TEXT_BYTES,
        inputs.MAX_PATH_BYTES,
        inputs.MAX_OWNS,
        inputs.MAX_COMMAND_BYTES,
    ) == (MAX_TEXT_BYTES, MAX_PATH_BYTES, MAX_OWNS, MAX_COMMAND_BYTES)
    assert (ledger.MAX_ATTEMPTS, ledger.LINE_MAX) == (MAX_ATTEMPTS, LINE_MAX)


@pytest.fixture
def run(request, cli):
    """The CLI (in this process; a real one for ``IN_A_PROCESS``); no traceback and no
    quarantine warning ever reach a person."""
    return runner(request, cli, no_warnings=True)


def refused(result, code: str, *limit: str) -> str:
    """Exit 1 with a stable code whose sentence names the limit."""
    assert result.code == 1, (result.code, result.out[:500], result.err[:500])
    error = json.loads(result.out)["error"]
    assert error["code"] == code and code in CODES, error
    assert error["code"] != "internal_error"
    for figure in limit:
        assert figure in error["message"], error
    return error["message"]


def files(root: Path) -> dict[str, bytes]:
    """Every file in the home except lock files (their flock targets are created freely)."""
    out = {}
    for dirpath, _dirs, names in os.walk(root):
        for name in names:
            path = Path(dirpath, name)
            if "locks" not in path.relative_to(root).parts:
                out[str(path.relative_to(root))] = path.read_bytes()
    return out


# -- a report's detail ----------------------------------------------------------------------


def test_an_oversized_detail_is_refused_and_terminal_history_stands(run):
    item = ok(run("work", "submit", "--text", "build it", "--json"))["item"]
    wid = item["work_id"]
    ok(run("work", "claim", wid, "--holder", "w1", "--json"))
    before = files(run.home)

    for size in (1_100_000, MAX_TEXT_BYTES + 1):
        message = refused(
            run(
                "work",
                "report",
                wid,
                "--generation",
                "1",
                "--outcome",
                "succeeded",
                "--detail-stdin",
                "--json",
                stdin="a" * size,
            ),
            "message_too_large",
        )
        assert "detail" in message
        assert files(run.home) == before  # nothing half-written
    assert ok(run("work", "show", wid, "--json"))["item"]["state"] == "running"

    # at the limit, in the characters JSON escapes most ('\x00' -> '\u0000'): accepted,
    # and read back by a fresh process as what was acknowledged
    done = ok(
        run(
            "work",
            "report",
            wid,
            "--generation",
            "1",
            "--outcome",
            "succeeded",
            "--detail-stdin",
            "--json",
            stdin="\x00" * MAX_TEXT_BYTES,
        )
    )
    assert done["item"]["state"] == "succeeded"
    (run.home / "work" / wid / "item.json").unlink()  # readers fold the events again
    shown = ok(run("work", "show", wid, "--json"))["item"]
    assert shown["state"] == "succeeded"
    assert [e["type"] for e in shown["events"]] == ["accepted", "claimed", "succeeded"]
    # terminal history is never rewritten: a second report at the same generation is refused
    refused(
        run("work", "report", wid, "--generation", "1", "--outcome", "failed", "--json"),
        "not_running",
    )
    assert not (run.home / "quarantine").exists()


@IN_A_PROCESS
def test_max_attempts_is_bounded(run):
    over = run("work", "submit", "--text", "x", "--max-attempts", str(MAX_ATTEMPTS + 1), "--json")
    assert over.code == 2, over  # a usage error: with --json, one `usage` refusal
    assert f"must be 1 to {MAX_ATTEMPTS} attempts" in json.loads(over.out)["error"]["message"]
    assert not (run.home / "work").exists()
    ok(run("work", "submit", "--text", "x", "--max-attempts", str(MAX_ATTEMPTS), "--json"))


# -- a dismissal with more mail than one record could list ----------------------------------

UNREAD = 1_200  # each bounce listed in the old event took ~950 bytes: 1.1 MB in all


def test_dismissing_a_crew_with_a_thousand_unread_messages_keeps_it_dismissed(run):
    r = ok(run("crew", "Jack", "--task", "the task", "--no-launch", "--json"))
    home = Home(run.home)
    text = "\U0001f600" * 300  # a summary of 200 four-byte characters per bounce
    for _ in range(UNREAD - 1):  # what `tell` writes, without a process per message
        m = Message(
            message_id=new_id(MESSAGE),
            crew="Jack",
            incarnation_id=r["incarnation_id"],
            assignment_id=r["assignment_id"],
            kind="tell",
            text=text,
            queued_at=now(),
        )
        home.store.create_once(home.mail_dir("jack") / f"{m.message_id}.json", encode(m))

    gone = ok(run("dismiss", "Jack", "--json"))
    assert len(gone["bounced"]) == UNREAD and gone["bounced"][0] == r["message_id"]

    # a fresh process, reading every event again: still dismissed, nothing quarantined
    (run.home / "crew" / "jack" / "state.json").unlink()
    rows = ok(run("status", "--all", "--json"))["crew"]
    assert [(row["name"], row["state"]) for row in rows] == [("Jack", "dismissed")]
    assert ok(run("status", "--json"))["crew"] == []
    refused(
        run("tell", "Jack", "still there?", "--assignment", r["assignment_id"], "--json"),
        "crew_dismissed",
    )
    # every unread message bounced, once, each with its notification
    bounces = sorted(p.stem for p in (run.home / "bounces" / "jack").iterdir())
    assert bounces == sorted(gone["bounced"])
    notes = [json.loads(p.read_bytes()) for p in (run.home / "notifications" / "jack").iterdir()]
    assert sorted(n["message_id"] for n in notes if n["status"] == "bounced") == bounces
    first = ok(run("wait", "Jack", "--timeout", "0", "--json"))
    assert first["status"] == "bounced" and first["message_id"] == r["message_id"]
    assert not (run.home / "quarantine").exists()
    assert (
        max(p.stat().st_size for p in (run.home / "crew" / "jack" / "events").iterdir())
        < 64 * 1024 + 4096
    )  # the dismissal is one small event, however much mail bounced


# -- owning paths ---------------------------------------------------------------------------


def test_a_recruit_owning_thousands_of_paths_is_refused_and_writes_nothing(run):
    owns = [a for i in range(3_000) for a in ("--owns", f"src/{'x' * 380}{i}")]
    refused(
        run("crew", "Jack", "--task", "t", "--no-launch", *owns, "--json"),
        "invalid_argument",
        str(MAX_OWNS),
    )
    assert not (run.home / "crew").exists() and not (run.home / "mail").exists()
    assert ok(run("status", "--all", "--json"))["crew"] == []


def test_a_recruit_at_the_limits_exists_and_reads_back(run):
    long = "/" + '"' * (MAX_PATH_BYTES - 1)  # escaped to two bytes each in JSON
    refused(
        run("crew", "Jack", "--task", "t", "--no-launch", "--owns", long + '"', "--json"),
        "invalid_path",
        str(MAX_PATH_BYTES),
    )
    owns = [a for i in range(MAX_OWNS) for a in ("--owns", long[:-3] + f"{i:03d}")]
    refused(
        run("crew", "Jack", "--task", "t", "--no-launch", *owns, "--owns", "/x", "--json"),
        "invalid_argument",
        str(MAX_OWNS),
    )
    assert not (run.home / "crew").exists()
    r = ok(run("crew", "Jack", "--task", "\\" * MAX_TEXT_BYTES, "--no-launch", *owns, "--json"))
    (run.home / "crew" / "jack" / "state.json").unlink()
    rows = ok(run("status", "--json"))["crew"]
    assert [(row["name"], row["state"], len(row["owns"])) for row in rows] == [
        ("Jack", "assigned", MAX_OWNS)
    ]
    assert rows[0]["assignment_id"] == r["assignment_id"]
    assert not (run.home / "quarantine").exists()


def test_recruit_fields_stored_for_a_later_launch_are_bounded(run):
    refused(
        run(
            "crew",
            "Jack",
            "--task",
            "t",
            "--no-launch",
            "--command",
            "x" * (MAX_COMMAND_BYTES + 1),
            "--json",
        ),
        "message_too_large",
        str(MAX_COMMAND_BYTES),
    )
    refused(
        run(
            "crew",
            "Jack",
            "--task",
            "t",
            "--no-launch",
            "--session",
            "s" * (LINE_MAX + 1),
            "--json",
        ),
        "invalid_text",
        str(LINE_MAX),
    )
    refused(
        run("crew", "Jack", "--task", "t", "--no-launch", "--cwd", "/" + "d" * 5000, "--json"),
        "invalid_path",
        str(MAX_PATH_BYTES),
    )
    assert not (run.home / "crew").exists()

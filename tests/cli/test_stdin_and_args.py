"""Bytes that are not text, on stdin or in an argument, get a stable code: never
``internal_error``, never a traceback, and nothing is written.

stdin readers in the CLI: ``work report --detail-stdin`` (text: UTF-8, at most a record)
and ``deliveries ingest`` (a raw body: bytes are fine). Hooks read stdin too and fail open
(tests/agents). Arguments: every option and positional that takes text, with bytes 0xff
0xfe (undecodable: they reach Python as lone surrogates).
"""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from state.errors import CODES
from state.store import MAX_RECORD_BYTES

CONFIG = '[endpoints.gh]\nsecret = "s"\n'
BAD = "x\udcff\udcfe"  # the bytes ff fe in argv


def run(cli, *args: str, stdin: bytes | None = None, shell_stdin: str | None = None):
    """The real CLI with raw bytes on stdin, or stdin as a shell redirection makes it."""
    argv = [sys.executable, "-m", "captain_tui", *args, "--json"]
    if shell_stdin is not None:
        argv = ["sh", "-c", f'exec "$@" {shell_stdin}', "sh", *argv]
    proc = subprocess.run(
        argv, cwd=cli.cwd, env=cli.env(), input=stdin, capture_output=True, timeout=60
    )
    out, err = proc.stdout.decode(), proc.stderr.decode(errors="replace")
    assert "Traceback" not in out + err, err
    return proc.returncode, json.loads(out), err


def refused(result, code: str) -> str:
    rc, payload, err = result
    assert rc == 1 and payload["ok"] is False, (rc, payload, err)
    assert payload["error"]["code"] == code, payload
    return payload["error"]["message"]


def stable(result) -> None:
    rc, payload, err = result
    assert rc in (0, 1), (rc, payload, err)
    assert payload["ok"] is True or payload["error"]["code"] in CODES - {"internal_error"}, payload


@pytest.fixture
def running(cli):
    """A chat work item claimed at generation 1: ready for a report."""
    (cli.home.parent).mkdir(exist_ok=True)
    rc, submitted, _ = run(cli, "work", "submit", "--text", "t")
    work_id = submitted["item"]["work_id"]
    assert run(cli, "work", "claim", work_id, "--holder", "w")[0] == 0
    return work_id


def events(cli, work_id: str) -> list[str]:
    rc, shown, _ = run(cli, "work", "show", work_id)
    return [e["type"] for e in shown["item"]["events"]]


@pytest.mark.parametrize(
    "data",
    [
        b"\xff\xfe",
        b"ok so far \xc3",
        b"\xed\xa0\x80 surrogate",
        b"\xc0\xaf overlong",
        "fine".encode("utf-16"),
    ],
)
def test_a_detail_on_stdin_that_is_not_utf8_is_refused_and_nothing_is_written(cli, running, data):
    before = events(cli, running)
    message = refused(
        run(
            cli,
            "work",
            "report",
            running,
            "--generation",
            "1",
            "--outcome",
            "failed",
            "--holder",
            "w",
            "--detail-stdin",
            stdin=data,
        ),
        "invalid_text",
    )
    assert "UTF-8" in message
    assert events(cli, running) == before


def test_a_detail_larger_than_a_record_is_refused_before_anything_is_written(cli, running):
    before = events(cli, running)
    refused(
        run(
            cli,
            "work",
            "report",
            running,
            "--generation",
            "1",
            "--outcome",
            "failed",
            "--holder",
            "w",
            "--detail-stdin",
            stdin=b"x" * (MAX_RECORD_BYTES + 1),
        ),
        "message_too_large",
    )
    assert events(cli, running) == before


def test_a_utf8_detail_is_still_taken(cli, running):
    rc, payload, _ = run(
        cli,
        "work",
        "report",
        running,
        "--generation",
        "1",
        "--outcome",
        "succeeded",
        "--holder",
        "w",
        "--detail-stdin",
        stdin="détail ✓\n".encode(),
    )
    assert rc == 0 and payload["item"]["state"] == "succeeded"


@pytest.mark.parametrize("redirect", ["<&-", "0>/dev/null"])  # closed; open for writing only
def test_a_closed_or_unreadable_stdin_gets_a_stable_code(cli, running, redirect):
    (cli.home / "config.toml").write_text(CONFIG)
    stable(
        run(
            cli,
            "work",
            "report",
            running,
            "--generation",
            "1",
            "--outcome",
            "failed",
            "--holder",
            "w",
            "--detail-stdin",
            shell_stdin=redirect,
        )
    )
    stable(
        run(
            cli,
            "deliveries",
            "ingest",
            "--endpoint",
            "gh",
            "--delivery-id",
            "d",
            shell_stdin=redirect,
        )
    )


# Every option or positional that takes text, given bytes that are not UTF-8. The crew's own
# commands run with a crew's environment in tests/cli/test_cli.py; here the captain's.
ARGV = [
    ("crew", BAD, "--task", "t", "--no-launch"),
    ("crew", "Ann", "--task", BAD, "--no-launch"),
    ("crew", "Ann", "--task", "t", "--owns", BAD, "--no-launch"),
    ("crew", "Ann", "--task", "t", "--allow", BAD, "--no-launch"),
    ("crew", "Ann", "--task", "t", "--handoff", BAD, "--no-launch"),
    ("crew", "Ann", "--task", "t", "--session", BAD, "--no-launch"),
    ("crew", "Ann", "--task", "t", "--socket", BAD, "--no-launch"),
    ("tell", "Jack", BAD, "--assignment", "asg_x"),
    ("tell", "Jack", "m", "--assignment", BAD),
    ("answer", "Jack", BAD, "m", "--assignment", "asg_x"),
    ("wait", BAD, "--timeout", "0"),
    ("wait", "--all", "--timeout", "0", "--ack", BAD),
    ("dismiss", BAD),
    ("status", "--home", BAD),
    ("work", "list", "--state", BAD),
    ("work", "list", "--source", BAD),
    ("work", "list", "--after", BAD),
    ("work", "show", BAD),
    ("work", "cancel", BAD),
    ("work", "cancel", "wrk_x", "--reason", BAD),
    ("work", "replay", BAD, "--reason", "r"),
    ("work", "resolve", BAD, "--generation", "1", "--to", "failed", "--reason", "r"),
    ("work", "submit", "--text", BAD),
    ("work", "submit", "--text", "t", "--target-revision", BAD),
    ("work", "claim", BAD),
    ("work", "claim", "--holder", BAD),
    ("work", "heartbeat", BAD, "--generation", "1"),
    ("work", "report", BAD, "--generation", "1", "--outcome", "failed"),
    ("deliveries", "ingest", "--endpoint", BAD, "--delivery-id", "d"),
    ("deliveries", "ingest", "--endpoint", "gh", "--delivery-id", BAD),
    ("deliveries", "ingest", "--endpoint", "gh", "--delivery-id", "d", "--event", BAD),
    ("deliveries", "list", "--endpoint", BAD),
    ("deliveries", "list", "--endpoint", "gh", "--source-delivery-id", BAD),
    ("deliveries", "list", "--after", BAD),
    ("deliveries", "show", BAD),
    ("tokens", "create", "--role", "member", "--label", BAD),
    ("tokens", "revoke", BAD),
    ("serve", "--host", BAD),
]


def test_undecodable_bytes_in_any_argument_get_a_stable_code(cli):
    (cli.home.parent / "project").mkdir(exist_ok=True)
    run(cli, "crew", "Jack", "--task", "t", "--no-launch")
    (cli.home / "config.toml").write_text(CONFIG)
    for argv in ARGV:
        rc, payload, err = run(cli, *argv, stdin=b"{}")
        assert rc == 1 and payload["ok"] is False, (argv, payload)
        assert payload["error"]["code"] in CODES - {"internal_error"}, (argv, payload)

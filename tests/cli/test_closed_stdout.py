"""A reader that goes away (``captain … | head -c 300``) ends the command quietly: exit 141
(what a shell shows for a program SIGPIPE ended), nothing on stderr, and nothing the
command wrote to the home is half-done (mail a crew never got stays unread; a notification
whose print was lost is named by the next ``wait``).

Real pipes, real processes: the reader either closes its end before captain starts (any
write fails) or reads 300 bytes of an output larger than a pipe holds, then closes.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from datetime import datetime, timezone

from state.crew import notify, protocol
from state.home import Home

CLOSED_STDOUT = 141
BIG = 60 * 1024  # two messages this size: more than a pipe holds (64 KiB)


def closed_early(cli, *args: str, keep: int = 0, env: dict | None = None):
    """Run captain with stdout on a pipe whose reader keeps ``keep`` bytes and closes
    (``keep=0``: closed before captain starts). Returns (exit, bytes read, stderr)."""
    r, w = os.pipe()
    if not keep:
        os.close(r)
    proc = subprocess.Popen(
        [sys.executable, "-m", "captain_tui", *args],
        cwd=cli.cwd,
        env=cli.env(env),
        stdin=subprocess.DEVNULL,
        stdout=w,
        stderr=subprocess.PIPE,
    )
    os.close(w)
    got = b""
    if keep:
        with os.fdopen(r, "rb", buffering=0) as reader:
            while len(got) < keep:
                chunk = reader.read(keep - len(got))
                if not chunk:
                    break
                got += chunk
    _, err = proc.communicate(timeout=60)
    return proc.returncode, got, err.decode(errors="replace")


def _quiet(code: int, err: str, what: str) -> None:
    assert "Traceback" not in err and "Exception ignored" not in err, f"{what}: {err}"
    assert "store_error" not in err and "Broken pipe" not in err, f"{what}: {err}"
    assert err == "", f"{what}: {err!r}"
    assert code == CLOSED_STDOUT, f"{what}: exit {code}, stderr {err!r}"


def _home(cli):
    home = Home(cli.home)
    r = protocol.recruit(home, "Ada", "A" * BIG, cwd=str(cli.cwd), agent="shell")
    protocol.tell(home, "Ada", "B" * BIG, assignment_id=r.assignment_id)
    notify.signal(home, "Ada", "working", "on it", at=datetime.now(timezone.utc))
    return home, r


def test_a_reader_that_closes_first_ends_each_command_quietly(cli):
    home, r = _home(cli)
    for args in (
        ("status", "--json"),
        ("status",),
        ("work", "list", "--json"),
        ("inbox", "Ada", "--json"),
    ):
        code, _, err = closed_early(cli, *args)
        _quiet(code, err, " ".join(args))
    code, _, err = closed_early(cli, "wait", "Ada", "--timeout", "0", "--json")
    _quiet(code, err, "wait")
    # the notification was handed out and its print lost: the next wait names it
    again = cli("wait", "Ada", "--timeout", "0", "--json")
    assert again.code == 1 and json.loads(again.out)["error"]["code"] == "unacknowledged"
    # a refusal printed into a closed pipe is quiet too
    code, _, err = closed_early(cli, "tell", "Nobody", "hi", "--assignment", "asn_x", "--json")
    _quiet(code, err, "a refusal")


def test_head_c_300_on_a_big_output_and_the_crews_mail_stays_unread(cli):
    home, r = _home(cli)
    for args, env in (
        (("inbox", "Ada", "--json"), None),
        (("inbox", "Ada"), None),
        (("inbox", "Ada", "--json"), r.env),
    ):  # the last: the crew's own read
        code, got, err = closed_early(cli, *args, keep=300, env=env)
        assert len(got) == 300
        _quiet(code, err, " ".join(args))
    # the crew's read never reached it, so no receipt was written: both still unread
    status = json.loads(cli("status", "--json").out)
    assert [row["unread"] for row in status["crew"]] == [2]

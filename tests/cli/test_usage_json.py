"""A command line argparse refuses is answered in the form asked for: with ``--json``, one
``usage`` refusal on stdout (the argparse sentence and the command's usage), exit 2; an
unknown command or choice names the nearest known one."""

from __future__ import annotations

import json

import pytest

from captain_tui.cli.main import main
from state.errors import CODES


def run(capsys, argv: list[str]) -> tuple[int, str, str]:
    try:
        code = main(argv)
    except SystemExit as exc:  # what main must never let out for a usage error
        code = f"SystemExit({exc.code}) escaped main"
    out, err = capsys.readouterr()
    return code, out, err


@pytest.mark.parametrize(
    ("argv", "sentence", "usage"),
    [
        (
            ["crew", "Jack", "--json"],
            "the following arguments are required: --task",
            "usage: captain crew ",
        ),
        (["status", "--json", "--bogus"], "unrecognized arguments: --bogus", "usage: captain "),
        (
            ["stauts", "--json"],
            "unknown command 'stauts'; did you mean 'status'?",
            "usage: captain ",
        ),
        (
            ["work", "lsit", "--json"],
            "unknown command 'lsit'; did you mean 'list'?",
            "usage: captain work ",
        ),
        (
            ["crew", "Jack", "--task", "T", "--agent", "cluade", "--json"],
            "unknown choice 'cluade'; did you mean 'claude'?",
            "usage: captain crew ",
        ),
        (
            ["wait", "Jack", "--timeout", "abc", "--json"],
            "'abc' is not a number of seconds",
            "usage: captain wait ",
        ),
    ],
    ids=lambda v: " ".join(v) if isinstance(v, list) else None,
)
def test_a_usage_error_with_json_is_one_usage_refusal_on_stdout(capsys, argv, sentence, usage):
    code, out, err = run(capsys, argv)
    assert code == 2, (code, out, err)
    assert err == "", err
    payload = json.loads(out)  # exactly one JSON object
    assert set(payload) == {"ok", "error"} and payload["ok"] is False, payload
    error = payload["error"]
    assert error["code"] == "usage" and "usage" in CODES
    assert sentence in error["message"], error
    assert error["usage"].startswith(usage) and "\n" not in error["usage"], error


def test_without_json_a_usage_error_stays_text_and_names_the_nearest_command(capsys):
    code, out, err = run(capsys, ["stauts"])
    assert code == 2 and out == ""
    assert err.startswith("usage: captain ")
    assert (
        "captain: error: argument COMMAND: unknown command 'stauts'; did you mean 'status'?" in err
    ), err
    code, out, err = run(capsys, ["tell", "Jack", "-", "--", "--json"])  # after --: a value
    assert code == 2 and out == "" and "captain tell: error: " in err, err


def test_a_word_like_no_command_gets_no_guess(capsys):
    code, out, err = run(capsys, ["xyzzy", "--json"])
    assert code == 2 and err == ""
    message = json.loads(out)["error"]["message"]
    assert "did you mean" not in message and "unknown command 'xyzzy'" in message

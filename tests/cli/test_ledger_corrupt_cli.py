"""A corrupted ledger row through the real CLI (``main(argv)`` in-process), on both ledgers.

A work item or a delivery is damaged past captain (tests/support/corrupt.py: an SQL UPDATE
on the PostgreSQL ledger, bytes over the file ledger's files). ``work list`` and
``deliveries list`` answer the rest and say on stderr, once, which ID they skipped;
``work claim`` claims the next item; ``work show``/``cancel`` and ``deliveries show`` of the
damaged ID are the usual refusal (exit 1, ``ledger_corrupt`` naming the ID, in JSON and in
the ``captain: [code]`` line). Never a traceback, never ``internal_error``.
"""

from __future__ import annotations

import contextlib
import io
import json
import re
from pathlib import Path

import pytest
from support.corrupt import damage_delivery, damage_item
from support.ledger_backends import ON_BOTH

from captain_tui.cli.main import main
from state.home import Home
from state.work import deliveries, ledger

pytestmark = ON_BOTH


class Result:
    def __init__(self, code: int, out: str, err: str) -> None:
        self.code, self.out, self.err = code, out, err


def captain(home: Home, *argv: str) -> Result:
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try:
            code = main([argv[0], argv[1], "--home", str(home.root), *argv[2:]])
        except SystemExit as exc:
            code = exc.code
    result = Result(code, out.getvalue(), err.getvalue())
    for text in (result.out, result.err):
        assert "Traceback" not in text and "internal_error" not in text, text
        assert "validation error" not in text, text  # pydantic's own words never leave
    return result


def refused_corrupt(result: Result, ident: str) -> None:
    assert result.code == 1, (result.code, result.out, result.err)
    error = json.loads(result.out)["error"]
    assert error["code"] == "ledger_corrupt" and error["id"] == ident, error
    assert ident in error["message"]


def warned_about(result: Result, ident: str) -> list[str]:
    lines = [line for line in result.err.splitlines() if ident in line]
    assert all(line.startswith("captain: warning: ") for line in lines), lines
    return lines


@pytest.fixture
def home(tmp_path: Path, cli_ledger) -> Home:  # noqa: F811
    root = tmp_path / "home"
    Home(root)
    (root / "config.toml").write_text("[endpoints.gh]\n")
    return Home(root)


def test_work_commands_skip_or_refuse_a_corrupt_item(home: Home, cli_ledger) -> None:  # noqa: F811
    first, bad, last = (
        ledger.accept(home, source="chat", input={"text": t}, requester="alice")
        for t in ("first", "bad", "last")
    )
    damage_item(home, bad.work_id, "wrong shape")

    listed = captain(home, "work", "list", "--json")
    assert listed.code == 0, listed.err
    assert [i["work_id"] for i in json.loads(listed.out)["items"]] == [first.work_id, last.work_id]
    said = warned_about(listed, bad.work_id)
    assert said and (len(said) == 1 or not cli_ledger), said  # files: item.json + event

    human = captain(home, "work", "list")
    assert human.code == 0 and first.work_id in human.out and bad.work_id not in human.out

    shown = captain(home, "work", "show", bad.work_id, "--json")
    refused_corrupt(shown, bad.work_id)
    person = captain(home, "work", "show", bad.work_id)
    assert person.code == 1 and person.out == ""
    assert re.search(rf"^captain: \[ledger_corrupt\] .*{bad.work_id}", person.err, re.M), person.err
    if cli_ledger:  # files: the claim below quarantines the bad files, so it is gone then
        refused_corrupt(captain(home, "work", "cancel", bad.work_id, "--json"), bad.work_id)

    for expected in (first, last):
        claimed = captain(home, "work", "claim", "--holder", "w", "--json")
        assert claimed.code == 0, claimed.err
        assert json.loads(claimed.out)["item"]["work_id"] == expected.work_id
    status = captain(home, "status", "--json")
    assert status.code == 0, status.err


def test_deliveries_commands_skip_or_refuse_a_corrupt_record(home: Home) -> None:
    made = [deliveries.ingest(home, "gh", f"d-{n}", b"{}").delivery.delivery_id for n in range(3)]
    damage_delivery(home, made[1])

    listed = captain(home, "deliveries", "list", "--json")
    assert listed.code == 0, listed.err
    assert [d["delivery_id"] for d in json.loads(listed.out)["deliveries"]] == [made[0], made[2]]
    assert len(warned_about(listed, made[1])) == 1
    paged = captain(home, "deliveries", "list", "--limit", "1", "--after", made[0], "--json")
    assert [d["delivery_id"] for d in json.loads(paged.out)["deliveries"]] == [made[2]]
    refused_corrupt(captain(home, "deliveries", "show", made[1], "--json"), made[1])

"""A file home moved to PostgreSQL without losing its work, through the real CLI against a
real server: until ``captain ledger migrate`` imports the files, every ledger command
refuses (``ledger_not_imported``) instead of showing an empty ledger; the import carries
items with their histories, inputs and leases, deliveries with bodies, refusals, tokens and
the workspace ID, in one transaction checked by counts; a crew's ``done`` then lands in the
database; a second run changes nothing; a conflict imports nothing."""

from __future__ import annotations

import json

import psycopg
import pytest
from support.cli import Run, ok, refused

from state.home import Home
from state.work import tokens

BODY = '{"action": "opened"}'


@pytest.fixture
def run(cli):
    return Run(cli)


def _file_home_with_work(run) -> dict:
    """A file home that has done a bit of everything the ledger holds."""
    run.home.mkdir()
    (run.home / "config.toml").write_text("[endpoints.gh]\n")
    recruit = ok(
        run(
            "crew",
            "Jack",
            "--task",
            "Fix it",
            "--owns",
            "src/a",
            "--allow",
            "edit",
            "--no-launch",
            "--json",
        )
    )
    chat = ok(run("work", "submit", "--text", "a chat task", "--json"))["item"]
    ok(run("work", "claim", "--holder", "w1", "--json"))
    delivery = ok(
        run(
            "deliveries",
            "ingest",
            "--endpoint",
            "gh",
            "--delivery-id",
            "d-1",
            "--event",
            "push",
            "--json",
            stdin=BODY,
        )
    )["delivery"]
    token = ok(run("tokens", "create", "--role", "manager", "--label", "ci", "--json"))
    workspace = tokens.workspace_id(Home(run.home))  # minted as `captain serve` would
    assert ok(run("status", "--json"))["workspace_id"] == workspace
    return {
        "recruit": recruit,
        "chat": chat,
        "delivery": delivery,
        "token": token,
        "workspace": workspace,
        "shown": {wid: _shown(run, wid) for wid in _ids(run)},
    }


def _ids(run, env=None) -> list[str]:
    return sorted(i["work_id"] for i in ok(run("work", "list", "--json", env=env))["items"])


def _shown(run, work_id: str, env=None) -> dict:
    item = ok(run("work", "show", work_id, "--json", env=env))["item"]
    return {
        k: item[k]
        for k in ("work_id", "state", "generation", "source", "crew", "input_sha256", "events")
    }


def _point_at(run, url: str) -> None:
    config = run.home / "config.toml"
    config.write_text(config.read_text() + f'\n[ledger]\nurl = "{url}"\n')


def test_a_file_home_moves_to_postgresql_without_losing_work(run, pg_url):  # noqa: F811
    before = _file_home_with_work(run)
    _point_at(run, pg_url)
    # pointed at the database, the home says what to do instead of an empty ledger
    refused(run("work", "list", "--json"), "ledger_not_imported")
    refused(run("deliveries", "list", "--json"), "ledger_not_imported")
    stalled = run("status", "--json")
    assert stalled.code == 1 and json.loads(stalled.out)["error"]["code"] == "ledger_not_imported"
    assert "captain ledger migrate" in json.loads(stalled.out)["error"]["message"]

    migrated = ok(run("ledger", "migrate", "--json"))
    imported = migrated["imported"]
    assert imported["items"] == imported["new_items"] == len(before["shown"]) == 3
    assert imported["deliveries"] == imported["new_deliveries"] == 1
    assert imported["bodies"] == 1 and imported["tokens"] == imported["new_tokens"] == 1
    assert imported["events"] == sum(len(s["events"]) for s in before["shown"].values())
    assert imported["workspace"] == before["workspace"]
    aside = run.home / "ledger-imported"
    assert imported["set_aside"].startswith(str(aside)) and not (run.home / "work").exists()

    # the same ledger, now read from the database
    assert {wid: _shown(run, wid) for wid in _ids(run)} == before["shown"]
    listed = ok(run("deliveries", "list", "--json"))["deliveries"]
    assert [d["delivery_id"] for d in listed] == [before["delivery"]["delivery_id"]]
    assert listed[0]["raw_body_available"] is True
    tokens = ok(run("tokens", "list", "--json"))
    assert [t["token_id"] for t in tokens["tokens"]] == [before["token"]["token_id"]]
    status = ok(run("status", "--json"))
    assert status["ledger"]["kind"] == "postgresql"
    assert status["workspace_id"] == imported["workspace"]

    # the crew's assignment goes on: its done lands in the database
    recruit = before["recruit"]
    assert run("inbox", "Jack", "--json", env=recruit["env"]).code == 0
    ok(run("done", "Jack", "--report", "Fixed", "--json", env=recruit["env"]))
    assert _shown(run, recruit["work_id"])["state"] == "succeeded"

    again = ok(run("ledger", "migrate", "--json"))
    assert "imported" not in again and again["changed"] is False


def test_a_conflict_imports_nothing_at_all(run, pg_url):  # noqa: F811
    """One transaction: a token the database holds differently (the last thing imported)
    refuses the import, and not one of the items before it is in the database."""
    before = _file_home_with_work(run)
    # the schema first: a --url the home is not pointed at imports nothing
    assert "imported" not in ok(run("ledger", "migrate", "--json", "--url", pg_url))
    _point_at(run, pg_url)
    token_id = before["token"]["token_id"]
    with psycopg.connect(pg_url) as conn:
        conn.execute(
            "INSERT INTO api_tokens (token_id, role, label, sha256, created_at) "
            "VALUES (%s, 'member', NULL, %s, now())",
            (token_id, "0" * 64),
        )
        conn.commit()
    err = refused(run("ledger", "migrate", "--json"), "ledger_import_conflict")
    assert token_id in err["message"]
    with psycopg.connect(pg_url) as conn:
        assert conn.execute("SELECT count(*) FROM work_items").fetchone()[0] == 0
        assert conn.execute("SELECT count(*) FROM deliveries").fetchone()[0] == 0
    assert (run.home / "work").is_dir() and not (run.home / "ledger-imported").exists()
    refused(run("work", "list", "--json"), "ledger_not_imported")


@pytest.mark.parametrize("damage", ["fifo", "symlink", "tampered"])
def test_an_input_file_that_is_not_what_was_accepted_imports_nothing(run, pg_url, damage):  # noqa: F811
    """The input is read as the store reads (no link followed, a regular file, bounded) and
    checked against the item's fingerprint: a FIFO would hang the import's transaction, a
    link would import a file from outside the home, an edited file another input."""
    import os

    before = _file_home_with_work(run)
    chat = run.home / "work" / before["chat"]["work_id"] / "input.json"
    chat.unlink()
    if damage == "fifo":
        os.mkfifo(chat)
    elif damage == "symlink":
        outside = run.home.parent / "elsewhere.json"
        outside.write_text('{"input": {"text": "not what was accepted"}}\n')
        os.symlink(outside, chat)
    else:
        chat.write_text('{"input": {"text": "not what was accepted"}}\n')
    _point_at(run, pg_url)
    err = refused(run("ledger", "migrate", "--json", timeout=30), "ledger_import_conflict")
    assert before["chat"]["work_id"] in err["message"]
    with psycopg.connect(pg_url) as conn:
        assert conn.execute("SELECT count(*) FROM work_items").fetchone()[0] == 0
    assert (run.home / "work").is_dir()

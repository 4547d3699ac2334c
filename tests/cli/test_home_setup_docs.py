"""A new home the way README and docs/ledger.md set one up, through the real CLI: a
directory holding only its ``config.toml`` is a new home, and docs/ledger.md's steps for a
PostgreSQL ledger work as written (the URL swapped for the test server's)."""

from __future__ import annotations

import json
import re
import shlex

import pytest
from conftest import REPO
from support.cli import Run, ok, refused

DOC = REPO / "docs" / "ledger.md"
DOC_URL = "postgresql://captain@127.0.0.1:5432/captain"


@pytest.fixture
def run(cli):
    return Run(cli)


def _blocks(language: str) -> list[str]:
    return re.findall(rf"```{language}\n(.*?)```", DOC.read_text(), re.S)


def test_a_directory_holding_only_its_config_is_a_new_home(run):
    home = run.home
    home.mkdir()
    (home / "config.toml").write_text("[crew]\nwait_timeout = 30\n")
    assert ok(run("status", "--json"))["crew"] == []  # read-only: makes nothing
    assert not (home / "home.json").exists()
    ok(run("crew", "Jack", "--task", "Fix it", "--no-launch", "--json"))
    assert (home / "home.json").is_file()
    assert (home / "config.toml").read_text() == "[crew]\nwait_timeout = 30\n"
    assert [r["name"] for r in ok(run("status", "--json"))["crew"]] == ["Jack"]


def test_a_directory_holding_anything_else_is_still_refused(run):
    run.home.mkdir()
    (run.home / "config.toml").write_text("")
    (run.home / "notes.txt").write_text("mine")
    refused(run("crew", "Jack", "--task", "Fix it", "--no-launch", "--json"), "invalid_home")
    assert not (run.home / "home.json").exists()


def test_docs_ledger_steps_work_verbatim_on_a_new_home(run, pg_url):  # noqa: F811
    """docs/ledger.md, "Install the driver, point the home at the database and create the
    schema": its shell lines run as written (the driver is installed here), then its
    ``config.toml`` goes into a new directory, and that directory is a working home."""
    shell = next(b for b in _blocks("sh") if "captain ledger migrate" in b)
    toml = next(b for b in _blocks("toml") if "[ledger]" in b)
    assert DOC_URL in shell and DOC_URL in toml
    env = {"CAPTAIN_LEDGER_URL": ""}  # the home's config is what names the database
    for line in shell.splitlines():
        command = line.split("#", 1)[0].strip()
        if command.startswith("export "):
            name, _, value = command[len("export ") :].partition("=")
            env[name] = shlex.split(value)[0]
        elif command.startswith("captain "):
            argv = shlex.split(command.replace(DOC_URL, pg_url))[1:]
            result = run(*argv)
            assert result.code == 0, (command, result.out, result.err)
    run.home.mkdir()
    (run.home / "config.toml").write_text(toml.replace(DOC_URL, pg_url))
    status = ok(run("status", "--json", env=env))
    assert status["ledger"]["kind"] == "postgresql" and "error" not in status["ledger"]
    recruited = ok(run("crew", "Jack", "--task", "Fix it", "--no-launch", "--json", env=env))
    listed = ok(run("work", "list", "--json", env=env))
    assert recruited["work_id"] in [item["work_id"] for item in listed["items"]], json.dumps(
        listed
    )[:2000]

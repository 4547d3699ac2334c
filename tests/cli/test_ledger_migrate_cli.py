"""``captain ledger migrate`` and ``captain status``'s ledger line, through the real CLI
against a real PostgreSQL server (tests/support/postgres.py). A URL's password must never
reach stdout or stderr, and every refusal is a stable code with no traceback."""

from __future__ import annotations

import json
import socket
import subprocess
import sys
import time

import pytest
from conftest import REPO
from support.cli import IN_A_PROCESS, ok, refused, runner

from state.home import Home
from state.work import pg_schema

SECRET = "Hunter2-Never-Print-77"


@pytest.fixture
def run(request, cli):
    return runner(request, cli)


def _with_password(url: str) -> str:
    """The same URL with a password in it (the test cluster trusts, and ignores it)."""
    return url.replace("postgresql://postgres@", f"postgresql://postgres:{SECRET}@", 1)


def _closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _no_secret(*results) -> None:
    for result in results:
        assert SECRET not in result.out and SECRET not in result.err, result


@IN_A_PROCESS
def test_migrate_an_empty_database_then_again(run, pg_url):
    url = _with_password(pg_url)
    first = run("ledger", "migrate", "--url", url)
    assert first.code == 0, first.err
    assert f"schema at version {pg_schema.LATEST}" in first.out and "Migrated" in first.out
    second = run("ledger", "migrate", "--url", url, "--json")
    payload = ok(second)
    assert payload == {
        "ok": True,
        "url": payload["url"],
        "from_version": pg_schema.LATEST,
        "version": pg_schema.LATEST,
        "applied": [],
        "latest": pg_schema.LATEST,
        "changed": False,
    }
    assert payload["url"].startswith("postgresql://postgres:***@127.0.0.1:")
    human = run("ledger", "migrate", "--url", url)
    assert "nothing to do" in human.out and f"schema at version {pg_schema.LATEST}" in human.out
    _no_secret(first, second, human)


def test_migrate_reads_the_homes_url_env_first(run, pg_url):
    home = Home(run.home)
    (home.root / "config.toml").write_text(f'[ledger]\nurl = "{_with_password(pg_url)}"\n')
    from_config = run("ledger", "migrate", "--json")
    assert ok(from_config)["applied"] == [version for version, _, _ in pg_schema.STEPS]
    # the environment wins: a port nothing listens on is where it goes
    bad = f"postgresql://postgres:{SECRET}@127.0.0.1:{_closed_port()}/x"
    from_env = run("ledger", "migrate", "--json", env={"CAPTAIN_LEDGER_URL": bad})
    refused(from_env, "ledger_unreachable")
    _no_secret(from_config, from_env)


def test_two_migrations_at_once_both_succeed_and_make_one_schema(cli, pg_url):
    import psycopg

    holder = psycopg.connect(pg_url, autocommit=True)
    try:
        # hold the migrations' lock so both processes are surely waiting on it at once
        holder.execute("SELECT pg_advisory_lock(%s)", (pg_schema.LOCK_KEY,))
        procs = [
            subprocess.Popen(
                [
                    sys.executable,
                    "-m",
                    "captain_tui",
                    "ledger",
                    "migrate",
                    "--url",
                    pg_url,
                    "--json",
                ],
                cwd=cli.cwd,
                env=cli.env(),
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                text=True,
            )
            for _ in range(2)
        ]
        deadline = time.monotonic() + 20
        waiting = 0
        while waiting < 2 and time.monotonic() < deadline:
            waiting = holder.execute(
                "SELECT count(*) FROM pg_locks WHERE locktype = 'advisory' AND NOT granted "
                "AND database = (SELECT oid FROM pg_database "
                "WHERE datname = current_database())"
            ).fetchone()[0]
            time.sleep(0.05)
        assert waiting == 2, "both migrations should be waiting on the advisory lock"
        holder.execute("SELECT pg_advisory_unlock(%s)", (pg_schema.LOCK_KEY,))
        outs = [p.communicate(timeout=30) for p in procs]
    finally:
        holder.close()
    assert [p.returncode for p in procs] == [0, 0], outs
    results = [json.loads(out) for out, _ in outs]
    every = [version for version, _, _ in pg_schema.STEPS]
    assert sorted(r["applied"] for r in results) == [[], every]
    assert {r["version"] for r in results} == {pg_schema.LATEST}
    with psycopg.connect(pg_url) as conn:
        assert conn.execute("SELECT count(*) FROM schema_version").fetchone() == (len(every),)


@pytest.mark.parametrize(
    "url, code",
    [
        (f"mysql://bob:{SECRET}@db/captain", "invalid_ledger_url"),
        (f"postgresql://bob:{SECRET}@db:70000/captain", "invalid_ledger_url"),
        # a host label past 63 characters: the name lookup's codec refuses it (was an
        # internal_error with a Python exception's name)
        (f"postgresql://bob:{SECRET}@{'a' * 70}.example:5999/captain", "invalid_ledger_url"),
        (f"postgresql://bob:{SECRET}@127.0.0.1:{{port}}/captain", "ledger_unreachable"),
    ],
)
def test_a_bad_or_unreachable_url_is_a_stable_refusal(run, url: str, code: str):
    if code == "ledger_unreachable":
        pytest.importorskip("psycopg", reason="psycopg is not installed (pip install -e '.[test]')")
    url = url.replace("{port}", str(_closed_port()))
    as_json = run("ledger", "migrate", "--url", url, "--json")
    error = refused(as_json, code)
    human = run("ledger", "migrate", "--url", url)
    assert human.code == 1 and human.out == ""
    assert human.err.startswith(f"captain: [{code}] "), human.err
    if code == "ledger_unreachable":
        port = url.rsplit(":", 1)[1].split("/")[0]
        assert f"127.0.0.1:{port}" in error["message"] and "bob:***@" in error["message"]
    _no_secret(as_json, human)


def test_migrate_on_a_file_home_says_there_is_nothing_to_migrate(run):
    error = refused(run("ledger", "migrate", "--json"), "invalid_argument")
    assert "file home" in error["message"] and "--url" in error["message"]
    assert not run.home.exists()  # read-only: no home was made


def test_no_driver_is_a_refusal_naming_the_extra(cli):
    # psycopg made unimportable in this one process, as it is where it was never installed
    code = (
        "import sys; sys.modules['psycopg'] = None; "
        "from captain_tui.cli.main import main; "
        f"sys.exit(main(['ledger', 'migrate', '--url', "
        f"'postgresql://bob:{SECRET}@127.0.0.1:1/x', '--json']))"
    )
    proc = subprocess.run(
        [sys.executable, "-c", code],
        cwd=cli.cwd,
        env=cli.env(),
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert proc.returncode == 1 and "Traceback" not in proc.stderr, proc.stderr
    error = json.loads(proc.stdout)["error"]
    assert error["code"] == "postgres_not_installed"
    # captain is installed from its checkout (no index has it): the hint names the
    # checkout's extra and the driver, for the Python captain runs on
    assert f"-m pip install -e '{REPO}[postgres]'" in error["message"]
    assert "'psycopg[binary]>=3.2,<4'" in error["message"]
    assert "captain-tui[postgres]" not in error["message"]
    assert SECRET not in proc.stdout + proc.stderr


def test_status_says_which_ledger_is_in_use(run, pg_url):
    assert ok(run("status", "--json"))["ledger"]["kind"] == "file"
    assert "Ledger: files in the home" in run("status").out
    env = {"CAPTAIN_LEDGER_URL": _with_password(pg_url)}
    assert run("ledger", "migrate", env=env).code == 0
    payload_result = run("status", "--json", env=env)
    ledger = ok(payload_result)["ledger"]
    assert ledger["kind"] == "postgresql" and ledger["origin"] == "CAPTAIN_LEDGER_URL"
    assert ledger["url"].startswith("postgresql://postgres:***@127.0.0.1:")
    human = run("status", env=env)
    assert f"Ledger: PostgreSQL at {ledger['url']}" in human.out
    bad = run("status", "--json", env={"CAPTAIN_LEDGER_URL": f"http://x:{SECRET}@y/"})
    answer = json.loads(bad.out)  # status still answers, and says the ledger is unusable
    assert bad.code == 1 and answer["ok"] is False and "crew" in answer
    assert answer["error"]["code"] == answer["ledger"]["error"]["code"] == "invalid_ledger_url"
    _no_secret(payload_result, human, bad)


@pytest.mark.parametrize("trouble", ["unmigrated", "unreachable"])
def test_status_fails_on_a_ledger_it_cannot_use_and_still_shows_the_crew(
    run, pg_server, pg_url, trouble
):  # noqa: F811
    """A ledger that cannot be used is said, not hidden: the crew table as always, the
    ledger's refusal with its code, exit 1 (a script never reads a broken ledger as an
    empty one)."""
    working = pg_server.url(pg_server.create_database())
    assert run("ledger", "migrate", "--url", working).code == 0
    ok(
        run(
            "crew",
            "Jack",
            "--task",
            "Fix it",
            "--no-launch",
            "--json",
            env={"CAPTAIN_LEDGER_URL": working},
        )
    )
    url = (
        pg_url if trouble == "unmigrated" else f"postgresql://postgres@127.0.0.1:{_closed_port()}/x"
    )
    env = {"CAPTAIN_LEDGER_URL": _with_password(url)}
    code = {"unmigrated": "ledger_not_migrated", "unreachable": "ledger_unreachable"}[trouble]
    result = run("status", "--json", env=env)
    answer = json.loads(result.out)
    assert result.code == 1 and answer["ok"] is False, result
    assert answer["error"]["code"] == code and answer["ledger"]["error"]["code"] == code
    assert [row["name"] for row in answer["crew"]] == ["Jack"]
    human = run("status", env=env)
    assert human.code == 1 and "Jack" in human.out
    assert f"Ledger: NOT USABLE: [{code}]" in human.out and f"[{code}]" in human.err
    _no_secret(result, human)
    if trouble == "unmigrated":
        assert run("ledger", "migrate", env=env).code == 0
        assert ok(run("status", "--json", env=env))["ledger"]["kind"] == "postgresql"

"""``config.toml`` is a person's file: never moved, the last good one kept, edits picked up.

The issue: an editor rewriting ``config.toml`` in place while ``captain serve`` read it got
the file moved to quarantine within four saves, and every webhook endpoint vanished. The
rule (``Home.config``, docs/store.md "Settings"): a config that does not parse is reported
once per change and the last good settings are kept (the defaults, in a process that never
saw good ones); a change is believed once the file has been still for
``CONFIG_SETTLE_SECONDS``, so a half-written save is never taken for the config; the file is
never moved or changed.

Here a real ``captain serve`` takes signed deliveries while another thread saves the config
in place, the way an editor without atomic save does (truncate, then write in pieces), and
the real CLI reads broken configs in fresh processes.
"""

from __future__ import annotations

import itertools
import json
import os
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest
from conftest import Cli
from support.api import Server, sign_github

from state.home import CONFIG_SETTLE_SECONDS, DEFAULT_WAIT_TIMEOUT, Home
from state.store import MAX_RECORD_BYTES

SECRET = "s3cret"
GOOD = f'[endpoints.gh]\nsecret = "{SECRET}"\nsignature = "github"\n\n[crew]\nwait_timeout = 5\n'
MORE = GOOD + f'\n[endpoints.gh2]\nsecret = "{SECRET}"\n'
BROKEN = GOOD.replace("[crew]", "[crew")  # what a save half done, or a typo, looks like
DEADLINE = 30.0


def still(path: Path) -> None:
    """Age the file past the settle time: it has been still (a real mtime, set by utime)."""
    past = time.time() - 10 * CONFIG_SETTLE_SECONDS
    os.utime(path, (past, past))


def save_in_place(path: Path, text: str, *, pause: float = 0.0) -> None:
    """An editor without atomic save: the same inode, truncated, then written in pieces."""
    data = text.encode()
    fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o600)
    try:
        os.ftruncate(fd, 0)
        cut = data.index(b"secret") + 3  # the first piece ends inside a key: not TOML
        for piece in (data[:cut], data[cut:]):
            os.write(fd, piece)
            if pause:
                time.sleep(pause)  # the editor's pace; readers run in between
    finally:
        os.close(fd)


def nothing_moved(root: Path) -> None:
    assert os.path.lexists(root / "config.toml"), "config.toml was moved"
    quarantine = root / "quarantine"
    moved = [n for n in os.listdir(quarantine)] if quarantine.exists() else []
    assert not [n for n in moved if "config.toml" in n], moved


# -- one process: the rule itself -------------------------------------------------------------


def test_a_broken_save_keeps_the_last_good_config_and_is_said_once(tmp_path):
    home = Home(tmp_path / "home")
    path = home.root / "config.toml"
    path.write_text(GOOD)
    still(path)
    assert home.wait_timeout() == 5

    save_in_place(path, BROKEN)
    assert home.wait_timeout() == 5, "a change younger than the settle time was believed"
    still(path)
    assert home.wait_timeout() == 5 and home.wait_timeout() == 5
    warned = home.store.reports.warnings()
    assert [p for p, _ in warned] == ["config.toml"], "said once per change, not per read"
    assert "last good settings are kept" in warned[0][1]
    assert path.read_text() == BROKEN
    nothing_moved(home.root)

    path.write_text(BROKEN.replace("= 5", "= 6"))  # another broken version: said again
    still(path)
    assert home.wait_timeout() == 5 and len(home.store.reports.warnings()) == 1

    save_in_place(path, GOOD.replace("= 5", "= 7"))  # fixed: picked up once it is still
    assert home.wait_timeout() == 5
    still(path)
    assert home.wait_timeout() == 7
    assert home.store.reports.warnings() == [] and home.store.reports.reported() == []


def test_an_empty_file_mid_save_is_not_taken_for_a_config(tmp_path):
    """Truncated and not yet written: it parses (as nothing), and is not believed yet."""
    home = Home(tmp_path / "home")
    path = home.root / "config.toml"
    path.write_text(GOOD)
    still(path)
    assert home.config()["endpoints"]["gh"]["secret"] == SECRET
    os.truncate(path, 0)
    assert home.config()["endpoints"]["gh"]["secret"] == SECRET
    path.unlink()  # an editor that renames the old file away first: gone for a moment
    assert home.config()["endpoints"]["gh"]["secret"] == SECRET


@pytest.mark.parametrize("kind", ["symlink", "directory", "oversized", "not utf-8", "deep"])
def test_a_config_that_is_not_a_config_is_reported_and_left_where_it_is(tmp_path, kind):
    root = tmp_path / "home"
    Home(root)
    path = root / "config.toml"
    target = tmp_path / "elsewhere.toml"
    target.write_text(GOOD)
    if kind == "symlink":
        path.symlink_to(target)
    elif kind == "directory":
        path.mkdir()
    elif kind == "oversized":
        path.write_bytes(b"# " + b"x" * MAX_RECORD_BYTES + b"\n")
    elif kind == "not utf-8":
        path.write_bytes(GOOD.encode() + b"\xff\xfe\n")
    else:
        path.write_text("a = " + "[" * 5000 + "]" * 5000 + "\n")  # nesting past recursion
    home = Home(root)
    assert home.wait_timeout() == DEFAULT_WAIT_TIMEOUT
    assert [p for p, _ in home.store.reports.warnings()] == ["config.toml"]
    assert os.path.lexists(path) and not (root / "quarantine").exists()
    assert target.read_text() == GOOD


# -- fresh processes: the real CLI ------------------------------------------------------------


def test_the_cli_on_a_broken_config_refuses_the_ledger_says_so_and_moves_nothing(tmp_path):
    """Defaults where a default is harmless (status reads, the wait timeout); never for the
    ledger: the broken file's [ledger] url may name a database, and an item written to the
    file home meanwhile would be missing from it."""
    project = tmp_path / "project"
    project.mkdir()
    cli = Cli(tmp_path / "home", project)
    Home(cli.home)
    broken = BROKEN + '\n[ledger]\nurl = "postgresql://captain@127.0.0.1:9/ledger"\n'
    (cli.home / "config.toml").write_text(broken)
    status = cli("status", "--json")  # says what it can, and that the ledger is unknown
    ledger = json.loads(status.out)["ledger"]
    assert status.code == 1 and ledger["kind"] == "invalid", status.out
    assert ledger["error"]["code"] == "invalid_config", ledger
    for argv in (("work", "submit", "--text", "t"), ("work", "list"), ("work", "claim")):
        refused = cli(*argv, "--json")
        assert refused.code == 1, refused
        error = json.loads(refused.out)["error"]
        assert error["code"] == "invalid_config", refused.out
        assert "cannot tell which ledger" in error["message"], error
        assert "Traceback" not in refused.err
    assert not (cli.home / "work").exists() and not (cli.home / "ledger").exists()
    ingest = cli(
        "deliveries", "ingest", "--endpoint", "gh", "--delivery-id", "d1", "--json", stdin="{}"
    )
    assert ingest.code == 1 and json.loads(ingest.out)["error"]["code"] in (
        "unknown_endpoint",
        "invalid_config",
    )
    assert (cli.home / "config.toml").read_text() == broken
    nothing_moved(cli.home)
    with_env = cli("work", "submit", "--text", "t", "--json", env={"CAPTAIN_LEDGER_URL": ""})
    assert json.loads(with_env.out)["error"]["code"] == "invalid_config", with_env


# -- a real captain serve, its config saved in place under it ---------------------------------


NUMBERS = itertools.count(1)  # every delivery a new source id: never a duplicate


def deliver(server: Server, endpoint: str) -> int:
    n = next(NUMBERS)
    body = json.dumps({"n": n}).encode()
    return server.hook(endpoint, body, sign_github(SECRET, body, f"{endpoint}-{n}")).status


def test_serve_keeps_its_endpoints_while_an_editor_saves_the_config_in_place(tmp_path):
    home = Home(tmp_path / "home")
    path = home.root / "config.toml"
    path.write_text(GOOD)
    still(path)
    server = Server(home.root, tmp_path / "serve.log").start()
    saves, missing, statuses = [], [], []
    try:
        assert deliver(server, "gh") == 202

        def editor() -> None:
            """At least 40 saves, and on until 20 deliveries overlapped them (a slow box)."""
            deadline = time.monotonic() + DEADLINE
            while (len(saves) < 40 or len(statuses) < 20) and time.monotonic() < deadline:
                missing.extend([len(saves)] if not os.path.lexists(path) else [])
                save_in_place(
                    path, GOOD if len(saves) % 2 else GOOD.replace("= 5", "= 9"), pause=0.01
                )
                saves.append(1)
                time.sleep(0.01)

        writer = threading.Thread(target=editor)
        writer.start()
        while writer.is_alive():  # deliveries all through the saves
            statuses.append(deliver(server, "gh"))
        writer.join()
        assert len(statuses) >= 20, "too few deliveries overlapped the saves"
        assert set(statuses) == {202}, f"{statuses.count(404)} of {len(statuses)} were 404"
        print(
            f"config saved in place {len(saves)} times under serve: {len(statuses)} "
            "deliveries, all 202"
        )
        assert missing == [], f"config.toml was gone before saves {missing}"
        nothing_moved(home.root)

        # an edit that adds an endpoint is picked up once the file is still
        save_in_place(path, MORE)
        deadline = time.monotonic() + DEADLINE
        while deliver(server, "gh2") != 202:
            assert time.monotonic() < deadline, "serve never read the edited config"

        # a broken save: said once on serve's stderr, and the last good config kept
        path.write_text(BROKEN)
        deadline = time.monotonic() + DEADLINE
        while "config.toml" not in server.log.read_text():
            assert deliver(server, "gh2") == 202
            assert time.monotonic() < deadline, "serve never said the config is broken"
        for endpoint in ("gh", "gh2", "gh", "gh2"):
            assert deliver(server, endpoint) == 202
        log = server.log.read_text()
        assert log.count("config.toml") == 1 and "last good settings are kept" in log, log
        assert path.read_text() == BROKEN
        nothing_moved(home.root)
    finally:
        server.stop()
    assert "Traceback" not in server.log.read_text()


def test_serve_started_on_a_broken_config_refuses_to_start_and_says_why(tmp_path):
    """No good config ever seen: serve cannot tell which ledger it would serve (the
    broken file may name a database), so it refuses before it listens: invalid_config,
    one JSON line, no traceback, the file left as it is."""
    home = Home(tmp_path / "home")
    path = home.root / "config.toml"
    path.write_text(BROKEN)
    with pytest.raises(AssertionError) as refused:
        Server(home.root, tmp_path / "serve.log").start()
    said = str(refused.value)
    assert "invalid_config" in said and "cannot tell which ledger" in said, said
    assert "Traceback" not in (tmp_path / "serve.log").read_text()
    assert path.read_text() == BROKEN
    nothing_moved(home.root)


def test_the_settle_time_is_short_enough_for_a_person(tmp_path):
    assert 0 < CONFIG_SETTLE_SECONDS <= 2
    # and a fresh process believes what it finds at once (nothing to keep meanwhile)
    home = Home(tmp_path / "home")
    (home.root / "config.toml").write_text(GOOD.replace("= 5", "= 3"))
    out = subprocess.run(
        [
            sys.executable,
            "-c",
            "from state.home import Home; import sys; print(Home(sys.argv[1]).wait_timeout())",
            str(home.root),
        ],
        capture_output=True,
        text=True,
        cwd=Path(__file__).parents[2],
        timeout=60,
    )
    assert out.stdout.strip() == "3.0", out

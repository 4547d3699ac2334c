"""Read-only commands read: on a read-only home they work, and no home is ever changed.

``status``, ``work list``/``show``, ``deliveries list``/``show`` and ``tokens list`` open the
home read-only (``captain_tui.cli.args.READ_ONLY``): nothing is created (not a directory,
not the home, not ``workspace.json``), no temp file is swept and no bad file is moved;
a bad file is reported and skipped. Checked three ways, through the real CLI:

- on a home path that does not exist: nothing appears, not even its parent;
- on a real home, with a stale temp file and a garbage record in it: every entry's inode,
  mode, size and mtime are the same afterwards;
- on a read-only filesystem: a read-only bind mount in a private mount namespace when the
  tests run as root (root ignores permission bits), ``chmod -R a-w`` otherwise.
"""

from __future__ import annotations

import json
import os
import shutil
import stat
import subprocess
import sys
import time
from pathlib import Path

import pytest
from conftest import REPO, Cli

from state.errors import CODES

CONFIG = '[endpoints.gh]\nsecret = "s"\n'
TEMP = ".tmp-1-aaaaaaaaaaaa"  # a killed writer's debris (state.store.TEMP_PREFIX)


def reads(work_id: str, delivery_id: str) -> list[tuple[str, ...]]:
    return [
        ("status",),
        ("status", "--all"),
        ("work", "list"),
        ("work", "show", work_id),
        ("deliveries", "list"),
        ("deliveries", "show", delivery_id),
        ("tokens", "list"),
    ]


def answer(result) -> dict:
    """Exit 0 and an ok payload; never a traceback, never a store_error or internal_error."""
    assert "Traceback" not in result.out + result.err, result.err
    assert result.code == 0, (result.code, result.out, result.err)
    payload = json.loads(result.out)
    assert payload["ok"] is True, payload
    payload.pop("home", None)  # status names its home, and each set-up has its own path
    return payload


def tree(root: Path) -> dict[str, tuple]:
    """Every entry under ``root`` (and ``root`` itself) as the disk has it."""
    out = {}
    for dirpath, dirnames, filenames in os.walk(root):
        for name in ["", *dirnames, *filenames]:
            path = Path(dirpath, name)
            st = os.lstat(path)
            out[str(path.relative_to(root))] = (
                st.st_ino,
                stat.S_IMODE(st.st_mode),
                stat.S_IFMT(st.st_mode),
                st.st_size,
                st.st_mtime_ns,
            )
    return out


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    """A real home with crews, mail, work, a delivery and a token, made by the real CLI;
    then a stale temp file and a garbage record, as a killed writer and a bad disk leave."""
    base = tmp_path_factory.mktemp("ro")
    project = base / "project"
    project.mkdir()
    cli = Cli(base / "home", project)
    assert cli("tokens", "create", "--role", "member", "--json").code == 0
    (cli.home / "config.toml").write_text(CONFIG)
    jack = answer(cli("crew", "Jack", "--task", "one", "--no-launch", "--json"))
    answer(cli("crew", "Gibbs", "--task", "two", "--no-launch", "--json"))
    answer(cli("dismiss", "Gibbs", "--json"))
    answer(cli("work", "submit", "--text", "chat", "--json"))
    delivery = answer(
        cli(
            "deliveries", "ingest", "--endpoint", "gh", "--delivery-id", "d-1", "--json", stdin="{}"
        )
    )["delivery"]["delivery_id"]
    (cli.home / "workspace.json").unlink(missing_ok=True)  # a home no serve has run on yet
    stale = cli.home / "mail" / "jack" / TEMP
    stale.write_bytes(b"half a record")
    past = time.time() - 3600
    os.utime(stale, (past, past))
    (cli.home / "tokens" / "tok_01M8QKC3762GQX170E6ZTSANPV.json").write_bytes(b"\xffgarbage")
    commands = reads(jack["work_id"], delivery)
    answers = {args: answer(cli(*args, "--json")) for args in commands}
    shutil.rmtree(cli.home / "quarantine", ignore_errors=True)  # none on a read: see below
    return cli, commands, answers


def copy_of(built, tmp_path: Path) -> Cli:
    """A copy of the home, as one no ``serve`` has run on yet (no workspace.json)."""
    template, _, _ = built
    cli = Cli(tmp_path / "home", template.cwd)
    shutil.copytree(template.home, cli.home, symlinks=True)
    (cli.home / "workspace.json").unlink(missing_ok=True)
    return cli


def test_a_home_that_does_not_exist_reads_as_empty_and_is_not_created(built, tmp_path):
    _, commands, _ = built
    absent = tmp_path / "nowhere" / "home"
    for args in commands:
        result = Cli(absent, tmp_path)(*args, "--json")
        if args[0] in ("status", "tokens") or args[1] == "list":
            payload = answer(result)
            assert not any(payload.get(k) for k in ("crew", "items", "deliveries", "tokens"))
        else:  # show: there is no such item in a home that is not there
            assert result.code == 1 and "Traceback" not in result.err
            assert json.loads(result.out)["error"]["code"] in ("unknown_work", "unknown_delivery")
        assert not (tmp_path / "nowhere").exists(), f"{args} created the home"


def test_read_commands_change_nothing_in_a_home(built, tmp_path):
    """Not a directory, not workspace.json; the stale temp not swept; the garbage token
    reported and left in place (a command that writes moves it)."""
    _, commands, answers = built
    cli = copy_of(built, tmp_path)
    before = tree(cli.home)
    for args in commands:
        result = cli(*args, "--json")
        assert answer(result) == answers[args], args
        if args == ("tokens", "list"):
            assert "tokens/tok_01M8QKC3762GQX170E6ZTSANPV.json" in result.err
            assert "left in place" in result.err
    assert tree(cli.home) == before


def read_only_runner(home: Path):
    """How to run the CLI with ``home`` on a read-only filesystem, and why not if we can't.

    As root, permission bits do not bind, so the home is bind-mounted read-only in a mount
    namespace of the command's own (nothing outside it sees the mount)."""
    if os.geteuid() != 0:
        return None, None
    unshare = shutil.which("unshare")
    if unshare is None:
        return None, "unshare(1) is not installed"
    probe = subprocess.run(
        [
            unshare,
            "-m",
            "--",
            "sh",
            "-c",
            'mount --bind -o ro "$0" "$0" && ! touch "$0/probe" 2>/dev/null',
            str(home),
        ],
        capture_output=True,
        text=True,
        timeout=60,
    )
    if probe.returncode != 0 or (home / "probe").exists():
        return None, f"no read-only bind mount here (as root): {probe.stderr.strip()}"
    return [
        unshare,
        "-m",
        "--",
        "sh",
        "-c",
        'mount --bind -o ro "$0" "$0" && exec "$@"',
        str(home),
    ], None


def test_read_commands_work_on_a_read_only_filesystem(built, tmp_path):
    _, commands, answers = built
    cli = copy_of(built, tmp_path)
    prefix, why_not = read_only_runner(cli.home)
    if prefix is None and why_not is not None:
        print(f"SKIPPED: {why_not}")
        pytest.skip(why_not)
    before = tree(cli.home)
    if prefix is None:  # not root: permissions bind
        subprocess.run(["chmod", "-R", "a-w", str(cli.home)], check=True)
    try:
        for args in commands:
            proc = subprocess.run(
                [*(prefix or []), sys.executable, "-m", "captain_tui", *args, "--json"],
                cwd=cli.cwd,
                env=cli.env(),
                capture_output=True,
                text=True,
                timeout=60,
            )
            result = type(
                "Result", (), {"code": proc.returncode, "out": proc.stdout, "err": proc.stderr}
            )
            assert answer(result) == answers[args], (args, proc.stderr)
            assert "store_error" not in proc.stdout and "internal_error" not in proc.stdout
    finally:
        if prefix is None:
            subprocess.run(["chmod", "-R", "u+w", str(cli.home)], check=True)
    assert tree(cli.home) == before


def test_a_command_that_writes_on_a_read_only_filesystem_refuses_with_a_stable_code(
    built, tmp_path
):
    """Not a read command: it may not work, but it says so with a stable code."""
    cli = copy_of(built, tmp_path)
    prefix, why_not = read_only_runner(cli.home)
    if prefix is None and why_not is not None:
        pytest.skip(why_not)
    if prefix is None:
        subprocess.run(["chmod", "-R", "a-w", str(cli.home)], check=True)
    try:
        proc = subprocess.run(
            [
                *(prefix or []),
                sys.executable,
                "-m",
                "captain_tui",
                "work",
                "submit",
                "--text",
                "t",
                "--json",
            ],
            cwd=cli.cwd,
            env={**cli.env(), "PYTHONPATH": str(REPO)},
            capture_output=True,
            text=True,
            timeout=60,
        )
    finally:
        if prefix is None:
            subprocess.run(["chmod", "-R", "u+w", str(cli.home)], check=True)
    assert proc.returncode == 1 and "Traceback" not in proc.stderr, proc.stderr
    assert json.loads(proc.stdout)["error"]["code"] in CODES - {"internal_error"}

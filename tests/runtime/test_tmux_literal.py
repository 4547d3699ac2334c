"""Whatever captain gives tmux, tmux takes literally: a real tmux on a private socket.

The issue: ``captain crew Jack --cwd 'dir;'`` failed with ``tmux_unavailable`` ("unknown
command: -n"): tmux reads an argument that ends in ``;`` as the end of a command, so the
rest of the line became a second, broken command; ``--session 's;'`` the same. And the
start directory, the window and the session name are formats to tmux: a directory
``a#{host}`` was expanded to a path that does not exist, and tmux quietly started the crew
in another directory. The rule (``captain_tui/runtime/tmux.py``): every argument goes
through ``literal`` (a final ``;`` escaped as ``\\;``, which tmux turns back), the expanded
ones through ``format_literal`` (``#`` doubled), a session is found by its exact name and
addressed by its ID, and a session name tmux would rewrite (``:``, ``.``) is refused.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from support.cli import invoke
from support.tmux import needs_tmux, poll

from state.home import Home

pytestmark = needs_tmux

ODD = ["semi;", "a;b", "back\\;", "x#{host}y", "h#S", "sp ace", "qu'o\"te", "two;;", "$(true)`x`"]


def test_literal_is_what_tmux_turns_back():
    from captain_tui.runtime.tmux import literal

    assert [literal(a) for a in ("a;", "a\\;", ";", "a;b", "a")] == [
        "a\\;",
        "a\\\\;",
        "\\;",
        "a;b",
        "a",
    ]


def test_odd_directories_sessions_and_commands_reach_tmux_as_written(tmp_path, tmux):
    home = tmp_path / "home;"  # CAPTAIN_HOME=...; is an argument too (-e)
    Home(home)
    (home / "config.toml").write_text("[ledger]\nslots = 20\n")  # every crew launched now
    seen = tmp_path / "seen"
    seen.mkdir()
    crews = {}
    for n, odd in enumerate(ODD):
        cwd = tmp_path / f"dir-{odd}"
        cwd.mkdir()
        name = f"Crew{n}"
        session = f"s-{odd}" if n % 2 else "captain"  # new sessions, and windows in one
        command = (
            f'pwd > {seen}/{name}; printf %s "$CAPTAIN_HOME" > {seen}/{name}.home; '
            "exec sleep 300;"
        )  # a command line that ends in ';' too
        code, payload, err = invoke(
            "crew",
            name,
            "--task",
            "t",
            "--cwd",
            str(cwd),
            "--session",
            session,
            "--command",
            command,
            "--socket",
            tmux.socket,
            "--home",
            str(home),
            "--json",
        )
        assert code == 0 and payload["ok"], (odd, payload, err)
        crews[name] = (cwd, session, payload["pane"])
    sessions = set(tmux.tmux("list-sessions", "-F", "#{session_name}").stdout.splitlines())
    windows = tmux.tmux(
        "list-windows", "-a", "-F", "#{session_name}\t#{window_name}\t#{window_id}"
    ).stdout.splitlines()
    for name, (cwd, session, pane) in crews.items():
        assert session in sessions, (session, sessions)
        assert f"{session}\t{name}\t{pane['window_id']}" in windows, (name, windows)
        started = poll(
            lambda: (seen / name).exists() and (seen / name).read_text(), what=f"{name}'s pwd"
        )
        assert started.rstrip("\n") == str(cwd), (name, started)
        assert (seen / f"{name}.home").read_text() == str(home)
    code, status, _ = invoke("status", "--home", str(home), "--json")
    assert sorted(c["name"] for c in status["crew"]) == sorted(crews)


@pytest.mark.parametrize("session", ["a:b", "a.b", "line\nbreak", ""])
def test_a_session_name_tmux_would_rewrite_is_refused_before_anything_is_written(
    tmp_path, tmux, session
):
    home = tmp_path / "home"
    code, payload, err = invoke(
        "crew",
        "Jack",
        "--task",
        "t",
        "--cwd",
        str(tmp_path),
        "--session",
        session,
        "--command",
        "sleep 300",
        "--socket",
        tmux.socket,
        "--home",
        str(home),
        "--json",
    )
    assert code == 1 and payload["error"]["code"] in ("invalid_argument", "invalid_text"), payload
    assert not (home / "crew").exists() or os.listdir(home / "crew") == []
    assert (
        not Path(tmux.socket).exists() or tmux.tmux("list-windows", "-a", check=False).stdout == ""
    )

"""Which tmux server a crew goes to: --socket > $CAPTAIN_TMUX_SOCKET > $TMUX > 'captain'."""

import shutil
import subprocess
from pathlib import Path

import pytest
from conftest import _user_world

from captain_tui.runtime.tmux import DEFAULT_SOCKET, resolve_socket, socket_path_for
from state.home import Home


def test_the_flag_wins():
    env = {"CAPTAIN_TMUX_SOCKET": "envsock", "TMUX": "/tmp/tmux-0/mine,123,0"}
    assert resolve_socket("flagsock", env) == socket_path_for("flagsock")
    assert resolve_socket("/run/x/sock", env) == "/run/x/sock"


def test_then_the_environment_variable():
    env = {"CAPTAIN_TMUX_SOCKET": "envsock", "TMUX": "/tmp/tmux-0/mine,123,0"}
    assert resolve_socket(None, env) == socket_path_for("envsock")


def test_then_the_tmux_we_are_running_in():
    assert resolve_socket(None, {"TMUX": "/tmp/tmux-0/mine,123,0"}) == "/tmp/tmux-0/mine"


def test_else_a_socket_named_captain(monkeypatch):
    monkeypatch.delenv("TMUX_TMPDIR", raising=False)
    assert resolve_socket(None, {}) == socket_path_for("captain")
    assert socket_path_for("captain").endswith("/captain")


def test_the_run_guard_sees_a_server_on_the_default_socket_and_a_default_home(
    tmp_path, monkeypatch
):
    """The session guard (conftest.users_world_untouched) can fail: it notices a tmux
    server started on the default socket and a home written at the default place."""
    tmux = shutil.which("tmux")
    if tmux is None:
        pytest.skip("tmux is not installed (.ci/run installs it)")
    monkeypatch.setenv("TMUX_TMPDIR", str(tmp_path / "tmux"))  # where "the default" is now
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / "state"))
    socket = socket_path_for(DEFAULT_SOCKET)
    Path(socket).parent.mkdir(parents=True)  # tmux -S makes the socket, not its folder
    before = _user_world()
    subprocess.run([tmux, "-S", socket, "new-session", "-d", "sleep 60"], check=True)
    try:
        Home(tmp_path / "state" / "captain")
        after = _user_world()
    finally:
        subprocess.run([tmux, "-S", socket, "kill-server"], capture_output=True)
    changed = sorted(what.split(" /")[0] for what in before if before[what] != after[what])
    assert changed == ["default home", "default tmux socket"]

"""Which tmux server a crew goes to: --socket > $CAPTAIN_TMUX_SOCKET > $TMUX > 'captain'."""

from captain_tui.runtime.tmux import resolve_socket, socket_path_for


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

"""`enter` (jump) from a cockpit running inside tmux switches the person's tmux client.

A real client is needed for switch-client: an outer private tmux server runs
`tmux attach` to the crew's server in one of its panes, so the crew's server has exactly
one attached client — the person's terminal, as far as tmux can tell.
"""

from __future__ import annotations

from pathlib import Path

from support.tmux import TMUX, PrivateTmux, needs_tmux, poll

from captain_tui import usecases as ops
from captain_tui.runtime.launch import launcher
from state.crew import crewlog, protocol
from state.home import Home


def _client_window(server: PrivateTmux) -> str:
    out = server.tmux("list-clients", "-F", "#{window_id}", check=False).stdout.split()
    return out[0] if len(out) == 1 else ""


@needs_tmux
def test_jump_inside_tmux_switches_the_client_to_the_crews_window(home: Home, project: Path):
    crews, outer = PrivateTmux(), PrivateTmux()
    try:
        crews.tmux("new-session", "-d", "-s", "desk", "-x", "100", "-y", "30", "sleep 600")
        start = launcher(
            home,
            name="Jack",
            key="jack",
            agent="program",
            program="sleep 600",
            cwd=str(project),
            socket=crews.socket,
            session="desk",
        )
        protocol.recruit(home, "Jack", "Wait", cwd=str(project), agent="program", launch=start)
        pane = crewlog.load(home, "jack")[0].pane
        desk = crews.tmux("display-message", "-p", "-t", "desk:0", "#{window_id}").stdout.strip()
        assert desk and desk != pane.window_id

        # the person's terminal: a client of the crews' server, looking at the desk window
        outer.tmux(
            "new-session",
            "-d",
            "-s",
            "term",
            "-x",
            "100",
            "-y",
            "30",
            f"env -u TMUX {TMUX} -S {crews.socket} attach -t desk:0",
        )
        poll(lambda: _client_window(crews) == desk, what="the client to attach to the desk")

        inside = {"TMUX": f"{crews.socket},1,0"}  # what tmux sets for the cockpit's pane
        assert ops.jump(pane, env=inside) is None  # switched: nothing to show
        poll(
            lambda: _client_window(crews) == pane.window_id,
            what="the client to show the crew's window",
        )
    finally:
        outer.kill()
        crews.kill()


@needs_tmux
def test_jump_from_another_tmux_server_gives_the_attach_command(home: Home, project: Path):
    crews = PrivateTmux()
    try:
        crews.tmux("new-session", "-d", "-s", "desk", "sleep 600")
        start = launcher(
            home,
            name="Jack",
            key="jack",
            agent="program",
            program="sleep 600",
            cwd=str(project),
            socket=crews.socket,
            session="desk",
        )
        protocol.recruit(home, "Jack", "Wait", cwd=str(project), agent="program", launch=start)
        pane = crewlog.load(home, "jack")[0].pane
        attach = ops.jump(pane, env={"TMUX": "/tmp/some-other-tmux,1,0"})
        assert attach.command == f"tmux -S {pane.socket} attach -t {pane.pane_id}"
        assert attach.reason == "another_tmux" and attach.command in attach.sentence
    finally:
        crews.kill()


@needs_tmux
def test_jump_on_the_panes_server_with_no_terminal_attached_says_how_to_attach(
    home: Home, project: Path
):
    """The cockpit runs in a detached session of the crews' server (started by a script,
    or its terminal closed): there is no client to switch, so the person is told how to
    attach one, not ``tmux_unavailable``."""
    crews = PrivateTmux()
    try:
        crews.tmux("new-session", "-d", "-s", "desk", "sleep 600")
        start = launcher(
            home,
            name="Jack",
            key="jack",
            agent="program",
            program="sleep 600",
            cwd=str(project),
            socket=crews.socket,
            session="desk",
        )
        protocol.recruit(home, "Jack", "Wait", cwd=str(project), agent="program", launch=start)
        pane = crewlog.load(home, "jack")[0].pane
        assert crews.tmux("list-clients").stdout == ""  # nobody is attached
        attach = ops.jump(pane, env={"TMUX": f"{crews.socket},1,0"})
        assert attach is not None and attach.reason == "no_client"
        assert attach.command == f"tmux -S {pane.socket} attach -t {pane.pane_id}"
        assert attach.sentence.startswith("No terminal is attached to the tmux server")
        assert attach.sentence.endswith(attach.command)
    finally:
        crews.kill()

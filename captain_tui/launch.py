"""Starting and stopping a crew's tmux window from the cockpit.

This mirrors ``captain_tui.cli._launcher`` and the pane half of ``cli.cmd_dismiss`` (the CLI
is edited elsewhere; the two should become one helper).
"""

from __future__ import annotations

from state.errors import CaptainError
from state.models import PaneLocator


def launcher(home, *, name: str, key: str, agent: str, program: str | None, cwd: str,
             socket: str | None = None, session: str = "captain"):
    """The launch ``protocol.recruit`` runs under its locks once every rule has passed.

    The tmux server is resolved now, so ``tmux_unavailable`` comes before anything is
    written.
    """
    from captain_tui import agents
    from captain_tui.tmux import Tmux, resolve_socket

    tmux = Tmux(resolve_socket(socket))

    def launch(env: dict[str, str]):
        command = agents.command_for(agent, home, key, program)
        locator = tmux.open_window(session, name, cwd, agents.pane_env(env), command)
        return locator, lambda: tmux.kill_pane(locator)

    return launch


def close_pane(pane: PaneLocator | None) -> bool | None:
    """Kill a crew's window and confirm it is gone: True closed, False not confirmed,
    None when it had no pane."""
    if pane is None:
        return None
    from captain_tui.tmux import Tmux

    try:
        return Tmux(pane.socket).kill_pane(pane)
    except CaptainError:
        return False


def attach_command(pane: PaneLocator) -> str:
    """What a person outside tmux types to reach the pane."""
    import shlex

    return f"tmux -S {shlex.quote(pane.socket)} attach -t {shlex.quote(pane.pane_id)}"

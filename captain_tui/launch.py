"""Starting and stopping a crew's tmux window, for the cockpit and the CLI alike."""

from __future__ import annotations

from state.errors import CaptainError
from state.models import PaneLocator


def launcher(home, *, name: str, key: str, agent: str, program: str | None, cwd: str,
             socket: str | None = None, session: str = "captain"):
    """``agents.launcher`` on the server ``socket`` resolves to (flag > env > tmux > captain);
    resolved now, so ``tmux_unavailable`` comes before anything is written."""
    from captain_tui import agents
    from captain_tui.tmux import resolve_socket

    return agents.launcher(home, name, key, agent=agent, program=program,
                           socket=resolve_socket(socket), session=session, cwd=cwd)


def later(*, program: str | None, cwd: str, socket: str | None = None,
          session: str = "captain"):
    """How to launch the crew later, should every ledger slot be held now."""
    from captain_tui.tmux import resolve_socket
    from state.models import LaunchSpec

    return LaunchSpec(program=program, cwd=cwd, socket=resolve_socket(socket), session=session)


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

"""Starting and stopping a crew's tmux window, for the cockpit and the CLI alike."""

from __future__ import annotations

from state.errors import CaptainError
from state.records import PaneLocator


def launcher(
    home,
    *,
    name: str,
    key: str,
    agent: str,
    program: str | None,
    cwd: str,
    socket: str | None = None,
    session: str = "captain",
):
    """The launch ``protocol.recruit`` runs under its locks, once every rule has passed:
    open the crew's window and hand back its locator and an undo (close it).

    The server is the one ``socket`` resolves to (flag > env > tmux > captain), resolved
    now, so ``tmux_unavailable`` comes before anything is written."""
    from captain_tui.agents.start import command_for, pane_env
    from captain_tui.runtime.tmux import Tmux, resolve_socket

    tmux = Tmux(resolve_socket(socket))

    def launch(env: dict[str, str]):
        from captain_tui.runtime import death_watch

        command = command_for(agent, home, key, program)
        locator = tmux.open_window(session, name, cwd, pane_env(env), command)
        # its death is reported by tmux itself (the probe covers a hook that failed)
        death_watch.watch(tmux, locator, home, key, env["CAPTAIN_INCARNATION"])
        return locator, lambda: tmux.kill_pane(locator)

    return launch


def later(*, program: str | None, cwd: str, socket: str | None = None, session: str = "captain"):
    """How to launch the crew later, should every ledger slot be held now."""
    from captain_tui.runtime.tmux import resolve_socket
    from state.records import LaunchSpec

    return LaunchSpec(program=program, cwd=cwd, socket=resolve_socket(socket), session=session)


def close_pane(pane: PaneLocator | None) -> bool | None:
    """Kill a crew's window and confirm it is gone: True closed, False not confirmed,
    None when it had no pane."""
    if pane is None:
        return None
    from captain_tui.runtime.tmux import Tmux

    try:
        return Tmux(pane.socket).kill_pane(pane)
    except CaptainError:
        return False


def attach_command(pane: PaneLocator) -> str:
    """What a person outside tmux types to reach the pane."""
    import shlex

    return f"tmux -S {shlex.quote(pane.socket)} attach -t {shlex.quote(pane.pane_id)}"

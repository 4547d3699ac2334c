"""A runner's approval check does not capture an idle hookless pane again and again: a pane
seen without a modal is captured again only once something was drawn on it (its window's
activity moved), and a modal drawn after that is seen at once. Real tmux on a private
socket, the simulated crew in the pane; captures are counted on their way to tmux."""

from __future__ import annotations

import time

import pytest
from support.tmux import SimLog, needs_tmux, poll, sim_command

from captain_tui.runtime import doorbell
from captain_tui.runtime.tmux import Tmux
from state.home import Home

pytestmark = needs_tmux


@pytest.fixture
def sim(tmp_path, cli, tmux):
    """'Sim' recruited through the real CLI into the private tmux, at its prompt."""
    log = SimLog(tmp_path / "sim.log")
    r = cli(
        "crew",
        "Sim",
        "--task",
        "Tidy the docs",
        "--command",
        sim_command(log.path),
        "--socket",
        tmux.socket,
        "--json",
    )
    assert r.code == 0, r.err
    pane = r.json["pane"]["pane_id"]
    poll(lambda: "›" in tmux.capture(pane), what="the simulated crew's prompt")
    return Home(cli.home), pane


def test_an_idle_hookless_pane_is_captured_again_only_once_something_is_drawn(
    sim, tmux, monkeypatch
):
    home, pane = sim
    captures: list[str] = []
    real = Tmux.capture

    def counted(self, *args, **kwargs):
        captures.append(pane)
        return real(self, *args, **kwargs)

    monkeypatch.setattr(Tmux, "capture", counted)

    def idle_for() -> float:
        shown = tmux.tmux("display-message", "-p", "-t", pane, "#{window_activity}")
        return time.time() - int(shown.stdout.strip())

    # nothing drawn for QUIET_CERTAIN seconds: a look now can be remembered
    poll(lambda: idle_for() >= doorbell.QUIET_CERTAIN + 1, timeout=15, what="a quiet pane")
    looked: dict = {}
    assert doorbell.check_approval(home, "Sim", None, looked) is False
    assert len(captures) == 1
    for _ in range(3):
        assert doorbell.check_approval(home, "Sim", None, looked) is False
    assert len(captures) == 1  # nothing drawn since: not captured again (was 4 captures)
    tmux.type(pane, "/approve")
    tmux.key(pane, "Enter")
    poll(lambda: "Press enter to confirm" in tmux.capture(pane), what="the approval modal")
    assert doorbell.check_approval(home, "Sim", None, looked) is True  # drawn: looked at

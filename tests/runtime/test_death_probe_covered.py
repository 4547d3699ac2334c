"""The death probe's ``list-panes`` runs seldom while every live crew's process is watched
by a pidfd, and a window killed outside captain is still reported at once: the kill hangs
up the crew's process, its pidfd fires and the runner's next tick runs the probe. Real
tmux on a private socket, the real CLI and a real runner; polled with a deadline."""

from __future__ import annotations

import time

from support.tmux import needs_tmux, poll, recruit_into

from captain_tui.runtime import death_watch
from captain_tui.runtime.runner import Runner
from captain_tui.runtime.tmux import Tmux
from state.crew import mailbox
from state.home import Home
from state.work import ledger

pytestmark = needs_tmux

SOON = 5.0  # well inside the covered clock (15 s): only the pidfd explains the report


def test_covered_panes_are_listed_seldom_and_a_killed_window_is_reported_at_once(
    cli, home: Home, tmux, monkeypatch
):
    # each agent execs sleep from its shell: alone on its terminal, hung up by the kill
    ann = recruit_into(cli, tmux, "Ann", "Ann's task", command="sleep 300")
    recruit_into(cli, tmux, "Bob", "Bob's task", command="sleep 300")
    listed: list[float] = []
    real = Tmux.panes

    def counted(self):
        listed.append(time.monotonic())
        return real(self)

    monkeypatch.setattr(Tmux, "panes", counted)
    monkeypatch.setattr(death_watch, "CONFIRM_AFTER", 0.2)
    runner = Runner(home)
    try:
        runner.tick()  # the first probe: both alive, both now held by a pidfd
        assert listed, "the first tick listed no panes"
        # the next probe is the covered clock away, not PROBE_EVERY (3 s: was every round)
        assert runner._next_deaths - time.monotonic() > death_watch.PROBE_EVERY
        assert runner.fds() and len(runner.fds()) == 2

        # Ann's window killed outside captain: no pane-died hook fires for a kill-window
        tmux.tmux("kill-window", "-t", ann["pane"]["window_id"])
        start = time.monotonic()

        def reported():
            runner.tick()
            return [n for n in mailbox.notifications(home, "ann") if n.status == "error"]

        (n,) = poll(reported, timeout=SOON, what="the killed window reported")
        assert time.monotonic() - start < SOON
        assert "window was closed outside captain" in n.summary
        assert ledger.get(home, ann["work_id"]).state == "failed"
        assert [m for m in mailbox.notifications(home, "bob") if m.status == "error"] == []
    finally:
        runner.close()

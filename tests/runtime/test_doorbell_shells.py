"""The doorbell never makes a shell run anything: real shells in real tmux, hostile mail.

A shell crew (``--agent shell``) or any program (``--command``) is not an agent composer
captain can read, so its ring is a fixed notice (``doorbell.notice``): a comment of letters,
digits, spaces and the crew name, never a byte of the mail (typed where the kernel edits
the line, printed on the terminal of a line editor: test_doorbell_line_editors.py).
Each shell below is rung with mail full of what a shell would obey — separators, pipes,
substitutions, redirections, history expansion, quotes, a newline — and afterwards nothing
the mail asked for exists.
The shells come from Debian's packages (.ci/install-agents installs zsh and fish). The same
shells as ``--command`` crews (bash with and without a line editor or comments, dash, zsh,
fish), each in each keymap and as root and as a user, with the same mail, are in
test_doorbell_line_editors.py.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from support.tmux import hostile, needs_tmux, poll

from captain_tui.runtime import doorbell
from state.clock import now
from state.crew import crewlog
from state.home import Home

pytestmark = needs_tmux


def _ring_and_prove_nothing_ran(cli, tmux, name: str, data: dict, trap: Path) -> None:
    home = Home(cli.home)
    pane = data["pane"]["pane_id"]
    before = sorted(p.name for p in cli.cwd.iterdir())  # the crew's working directory
    recruited = crewlog.load(home, name.lower())[0].recruited_at
    poll(
        lambda: (now() - recruited).total_seconds() > doorbell.DEFAULT_GRACE,
        what="launch grace to pass",
    )
    # a follow-up as hostile as the task, so the ring has two messages' worth to leak
    told = cli(
        "tell", name, "and " + hostile(trap), "--assignment", data["assignment_id"], "--json"
    )
    assert told.code == 0, told.err
    outcomes = []

    def rung():  # as a running wait does; `tell` itself may have rung already
        outcomes.append(doorbell.ring(home, name))
        return outcomes[-1].action == "nothing" and "already rung" in outcomes[-1].detail

    try:
        poll(rung, timeout=20, interval=0.2, what=f"{name}'s newest mail to be rung")
    except AssertionError as err:
        raise AssertionError(f"{err}; last outcomes: {outcomes[-3:]}") from None
    assert doorbell.read_stamp(home, name.lower()).landed
    screen = tmux.capture(pane)
    assert doorbell.notice(name) in screen
    assert "fix it" not in screen and "touch" not in screen  # no byte of the mail
    # Everything typed so far has been read by the shell once it has run this, too:
    marker = trap / "marker"
    tmux.type(pane, f"touch {marker}")
    tmux.key(pane, "Enter")
    poll(marker.exists, timeout=10, what=f"{name}'s shell to run the marker command")
    assert sorted(p.name for p in trap.iterdir()) == ["marker"]
    # nor a stray file named after a word of the ring (a redirection would make one here)
    assert sorted(p.name for p in cli.cwd.iterdir()) == before


@pytest.mark.parametrize("shell", ["bash", "dash", "zsh", "fish"])
def test_a_shell_crew_runs_nothing_from_its_mail(shell, cli, tmux, tmp_path):
    """``--agent shell`` runs the person's $SHELL, whatever it is."""
    path = shutil.which(shell)
    if path is None:
        pytest.skip(f"{shell} is not installed (.ci/install-agents installs it)")
    trap = tmp_path / "trap"
    trap.mkdir()
    env = {"SHELL": path, "ENV": "", "ZDOTDIR": str(tmp_path), "HOME": str(tmp_path)}
    r = cli(
        "crew",
        "Jill",
        "--task",
        hostile(trap),
        "--agent",
        "shell",
        "--socket",
        tmux.socket,
        "--json",
        env=env,
    )
    assert r.code == 0, r.err
    _ring_and_prove_nothing_ran(cli, tmux, "Jill", r.json, trap)


def test_the_notice_holds_nothing_a_shell_would_expand():
    for name in ("Jack", "a-b_c9", "Z" * 32):
        text = doorbell.notice(name)
        assert text.startswith("# ") and name in text
        assert set(text[2:]) <= set(
            "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789 _-"
        )
    assert "$" not in doorbell.notice("$(reboot)") and "(" not in doorbell.notice("$(reboot)")


def test_only_an_agent_composer_is_rung_with_mail_text(tmp_path):
    """Claude Code gets the wake line (its hooks deliver the mail), Codex the mail and the
    inbox line on its composer, and a shell or any program the notice, whatever the mail."""
    from state.crew import mailbox, protocol
    from state.records import RingStamp

    home = Home(tmp_path / "home")
    seen = {}
    for agent in ("claude", "codex", "shell", "program"):
        name = f"A{agent}"
        protocol.recruit(home, name, "fix it; rm -rf /", cwd=str(tmp_path), agent=agent)
        snapshot, _ = crewlog.load(home, name.lower())
        unread = mailbox.unread(home, name.lower(), snapshot)
        first = RingStamp(crew=name, incarnation_id=snapshot.incarnation_id)
        later = first.model_copy(update={"body_landed": True})
        seen[agent] = (
            doorbell.ring_text(snapshot, first, unread),
            doorbell.ring_text(snapshot, later, unread),
        )
    assert seen["claude"] == (doorbell.WAKE_LINE, doorbell.WAKE_LINE)
    assert seen["codex"][0].startswith("Mail from the captain: fix it; rm -rf /")
    # a new task says which ID to pass: CAPTAIN_ASSIGNMENT names the first task only
    codex = crewlog.load(home, "acodex")[0].assignment.assignment_id
    assert f"pass --assignment {codex} to captain done" in seen["codex"][0]
    assert seen["codex"][1] == doorbell.inbox_line("Acodex")
    assert seen["shell"] == (doorbell.notice("Ashell"),) * 2
    assert seen["program"] == (doorbell.notice("Aprogram"),) * 2

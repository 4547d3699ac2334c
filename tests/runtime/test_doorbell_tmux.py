"""The doorbell against real tmux on a private socket, with the simulated crew in the pane.

Every assertion is on what arrived in the pane (the crew's own log of lines it read, and
the captured screen), never on the arguments we sent.
"""

from __future__ import annotations

import json
import subprocess
import sys
import threading
import time
from datetime import timedelta

import pytest
from support.tmux import SimLog, needs_tmux, poll, sim_command

from captain_tui.runtime import doorbell
from state.clock import now
from state.crew import crewlog, mailbox, notify, protocol
from state.home import Home

pytestmark = needs_tmux


@pytest.fixture
def crew(tmp_path, cli, tmux):
    """Recruit 'Sim' through the real CLI into the private tmux, and wait for its prompt."""
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
    data = r.json
    pane = data["pane"]["pane_id"]
    poll(lambda: "›" in tmux.capture(pane), what="the simulated crew's prompt")
    home = Home(cli.home)
    recruited = crewlog.load(home, "sim")[0].recruited_at
    poll(
        lambda: (now() - recruited).total_seconds() > doorbell.DEFAULT_GRACE,
        what="launch grace to pass",
    )  # each gate test then sees only its own gate
    return {
        "home": home,
        "pane": pane,
        "log": log,
        "data": data,
        "assignment": data["assignment_id"],
    }


def ring_until(home: Home, name: str, action: str, timeout: float) -> doorbell.Outcome:
    """Keep attempting, as a running wait does, until the doorbell does ``action``."""
    seen = []

    def attempt():
        o = doorbell.ring(home, name)
        seen.append(o)
        return o if o.action == action else None

    try:
        return poll(attempt, timeout=timeout, interval=0.1, what=f"the doorbell to {action}")
    except AssertionError as err:
        raise AssertionError(f"{err}; last outcomes: {seen[-3:]}") from None


def test_recruit_opens_a_window_with_the_crew_environment(crew, tmux):
    out = tmux.tmux("display-message", "-p", "-t", crew["pane"], "#{window_name}").stdout
    assert out.strip() == "Sim"
    snapshot, _ = crewlog.load(crew["home"], "sim")
    assert snapshot.pane.pane_id == crew["pane"] and snapshot.pane.socket == tmux.socket
    # the pane's own process carries the CAPTAIN_* variables that recruiting printed
    raw = open(f"/proc/{snapshot.pane.pane_pid}/environ", "rb").read().split(b"\0")
    env = dict(item.decode().split("=", 1) for item in raw if b"=" in item)
    for key, value in crew["data"]["env"].items():
        assert env[key] == value


def test_a_program_crew_is_rung_with_the_notice_and_reads_its_mail_itself(crew, tmux):
    """The simulated crew is a program captain cannot read as an agent composer: its rings
    are the fixed notice, never the mail (test_doorbell_shells.py shows why)."""
    home = crew["home"]
    first = ring_until(home, "Sim", "rang", timeout=5)
    assert first.detail == "landed"
    got = poll(lambda: crew["log"].lines(), what="the first ring to arrive")
    assert got[0] == doorbell.notice("Sim") and "captain inbox Sim" in got[0]
    assert "Tidy the docs" not in tmux.capture(crew["pane"])
    # the ring asked for the inbox: the crew ran it, and that wrote the read receipt
    poll(
        lambda: not mailbox.unread(home, "sim", crewlog.load(home, "sim")[0]),
        what="the receipt written by the crew's own captain inbox",
    )
    protocol.tell(home, "Sim", "also the changelog", assignment_id=crew["assignment"])
    later = ring_until(home, "Sim", "rang", timeout=doorbell.COOLDOWN.total_seconds() + 3)
    assert later.detail == "landed"
    got = poll(lambda: crew["log"].lines()[1:], what="the second ring")
    assert got[0] == doorbell.notice("Sim")


def test_a_rung_head_is_not_rung_again(crew):
    home = crew["home"]
    ring_until(home, "Sim", "rang", timeout=5)
    assert doorbell.ring(home, "Sim").action == "nothing"


def test_launch_grace_holds_the_first_ring(tmp_path, cli, tmux):
    log = SimLog(tmp_path / "sim.log")
    r = cli(
        "crew",
        "Sim",
        "--task",
        "T",
        "--command",
        sim_command(log.path),
        "--socket",
        tmux.socket,
        "--json",
    )
    home = Home(cli.home)
    snapshot, _ = crewlog.load(home, "sim")
    outcome = doorbell.ring(home, "Sim", at=snapshot.recruited_at + timedelta(seconds=0.2))
    assert (outcome.action, outcome.gate) == ("held", "launch_grace")
    assert log.lines() == []
    assert r.json["pane"] is not None
    ring_until(home, "Sim", "rang", timeout=2 + doorbell.DEFAULT_GRACE + 1)


def test_cooldown_holds_a_second_ring_then_it_lands(crew):
    home = crew["home"]
    first = ring_until(home, "Sim", "rang", timeout=5)
    assert first.action == "rang"
    rung_at = doorbell.read_stamp(home, "sim").rung_at
    poll(
        lambda: not mailbox.unread(home, "sim", crewlog.load(home, "sim")[0]),
        what="the crew to read its task",
    )  # else its inbox run could read the tell too
    protocol.tell(home, "Sim", "one more", assignment_id=crew["assignment"])
    held = doorbell.ring(home, "Sim")
    assert (held.action, held.gate) == ("held", "cooldown")
    ring_until(home, "Sim", "rang", timeout=doorbell.COOLDOWN.total_seconds() + 2)
    assert (now() - rung_at) <= doorbell.COOLDOWN + timedelta(seconds=2 + 1)


def test_human_draft_holds_and_is_never_appended_to_or_submitted(crew, tmux):
    home, pane = crew["home"], crew["pane"]
    tmux.type(pane, "half-written thought")
    poll(lambda: "half-written thought" in tmux.capture(pane), what="the draft on screen")
    held = poll(
        lambda: (lambda o: o if o.gate == "human_draft" else None)(doorbell.ring(home, "Sim")),
        timeout=5,
        what="the human_draft gate",
    )
    assert held.action == "held"
    assert doorbell.read_stamp(home, "sim").gate == "human_draft"
    status = json.loads(
        subprocess.run(
            [sys.executable, "-m", "captain_tui", "status", "--json", "--home", str(home.root)],
            capture_output=True,
            text=True,
        ).stdout
    )
    assert status["crew"][0]["doorbell"]["gate"] == "human_draft"
    # the draft is untouched on screen and nothing was submitted
    assert crew["log"].lines() == []
    assert "half-written thought" in tmux.capture(pane)
    assert doorbell.notice("Sim") not in tmux.capture(pane)
    # the person clears the draft: the held mail lands within 2 s
    tmux.key(pane, "C-u")
    cleared = time.monotonic()
    ring_until(home, "Sim", "rang", timeout=2)
    assert time.monotonic() - cleared <= 2.5
    got = poll(lambda: crew["log"].lines(), what="the ring")
    assert got[0] == doorbell.notice("Sim")


def test_approval_prompt_holds_until_it_is_answered(crew, tmux):
    home, pane = crew["home"], crew["pane"]
    # the crew's own approval modal (the line is typed as its user would)
    tmux.type(pane, "/approve")
    tmux.key(pane, "Enter")
    poll(lambda: "Press enter to confirm" in tmux.capture(pane), what="the approval modal")
    held = poll(
        lambda: (lambda o: o if o.gate else None)(doorbell.ring(home, "Sim")),
        timeout=5,
        what="a gate",
    )
    assert held.gate in ("approval_prompt", "unreadable_composer")
    assert crew["log"].lines("approval") == []
    tmux.type(pane, "1")
    tmux.key(pane, "Enter")
    answered = time.monotonic()
    ring_until(home, "Sim", "rang", timeout=2 + 1)
    assert time.monotonic() - answered <= 3
    assert crew["log"].lines("approval") == ["1"]


def test_a_working_pane_is_not_quiescent(crew, tmux):
    home, pane = crew["home"], crew["pane"]
    tmux.type(pane, "/busy 3")
    tmux.key(pane, "Enter")
    poll(lambda: "working" in tmux.capture(pane), what="the spinner")
    held = doorbell.ring(home, "Sim")
    assert (held.action, held.gate) == ("held", "not_quiescent")
    poll(lambda: "working" not in tmux.capture(pane), timeout=6, what="the spinner to stop")
    stopped = time.monotonic()
    ring_until(home, "Sim", "rang", timeout=2)
    assert time.monotonic() - stopped <= 2.5


def test_an_unreadable_composer_holds(crew, tmux):
    home, pane = crew["home"], crew["pane"]
    tmux.type(pane, "/noprompt 3")
    tmux.key(pane, "Enter")
    poll(lambda: "(composer hidden)" in tmux.capture(pane), what="the hidden composer")
    held = poll(
        lambda: (lambda o: o if o.gate == "unreadable_composer" else None)(
            doorbell.ring(home, "Sim")
        ),
        timeout=3,
        what="unreadable_composer",
    )
    assert held.action == "held"
    ring_until(home, "Sim", "rang", timeout=6)


def test_two_ringers_at_once_ring_once(crew):
    home = crew["home"]
    recruited = crewlog.load(home, "sim")[0].recruited_at
    poll(
        lambda: (now() - recruited).total_seconds() > doorbell.DEFAULT_GRACE + 0.5,
        what="launch grace to pass",
    )
    # two separate processes racing, the way a cockpit and a wait would
    script = (
        "import sys; from state.home import Home; from captain_tui.runtime import doorbell;"
        "print(doorbell.ring(Home(sys.argv[1]), 'Sim').action)"
    )
    procs = [
        subprocess.Popen(
            [sys.executable, "-c", script, str(home.root)], stdout=subprocess.PIPE, text=True
        )
        for _ in range(2)
    ]
    actions = sorted(p.communicate(timeout=30)[0].strip() for p in procs)
    assert actions == ["nothing", "rang"], actions
    poll(lambda: crew["log"].lines(), what="the ring")
    ring_until(home, "Sim", "nothing", timeout=8)
    rings = [line for line in crew["log"].lines() if line == doorbell.notice("Sim")]
    assert len(rings) == 1


def test_a_pane_killed_mid_wait_bounces_the_mail(crew, tmux, cli):
    home, pane = crew["home"], crew["pane"]
    tmux.type(pane, "draft that holds the ring")
    poll(
        lambda: doorbell.ring(home, "Sim").gate == "human_draft",
        timeout=5,
        what="the ring to be held",
    )
    waiter = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "captain_tui",
            "wait",
            "Sim",
            "--json",
            "--timeout",
            "30",
            "--home",
            str(home.root),
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=cli.env(),
    )
    tmux.tmux("kill-pane", "-t", pane)
    out, err = waiter.communicate(timeout=40)
    envelope = json.loads(out)
    assert envelope["status"] == "bounced", (out, err)
    assert envelope["message_id"] == crew["data"]["message_id"]
    assert "gone" in envelope["summary"] or "exited" in envelope["summary"]
    # nothing lost: the message is still there, marked bounced, not deleted
    assert (home.root / "mail" / "sim" / f"{crew['data']['message_id']}.json").exists()
    assert (home.root / "bounces" / "sim" / f"{crew['data']['message_id']}.json").exists()


def test_a_killed_tmux_server_is_reported_and_nothing_is_lost(crew, tmux):
    home = crew["home"]
    tmux.kill()
    # while the server is still going down tmux may not answer at all: that holds (fail
    # closed), and the bounce comes once the server is confirmed gone
    outcome = ring_until(home, "Sim", "bounced", timeout=5)
    assert "server" in outcome.detail
    n = notify.wait(home, "Sim", timeout=0)
    assert n.status == "bounced" and "tmux server is gone" in n.summary
    assert (home.root / "mail" / "sim" / f"{crew['data']['message_id']}.json").exists()


def test_dismiss_kills_the_pane_and_confirms_it(crew, tmux, cli):
    r = cli("dismiss", "Sim", "--json")
    assert r.code == 0, r.err
    assert r.json["pane_stopped"] is True
    gone = tmux.tmux("display-message", "-p", "-t", crew["pane"], "#{pane_id}", check=False)
    assert gone.returncode != 0 or crew["pane"] not in gone.stdout


def test_tell_rings_once_right_after_writing_the_mail(crew, tmux, cli):
    home = crew["home"]
    ring_until(home, "Sim", "rang", timeout=5)
    poll(
        lambda: not mailbox.unread(home, "sim", crewlog.load(home, "sim")[0]),
        what="the task to be read",
    )
    stamp = doorbell.read_stamp(home, "sim")
    # wait out the cooldown, then a tell rings by itself (no waiter running)
    poll(lambda: now() - stamp.rung_at > doorbell.COOLDOWN, timeout=8, what="cooldown")
    r = cli("tell", "Sim", "ship it", "--assignment", crew["assignment"], "--json")
    assert r.code == 0, r.err
    assert r.json["doorbell"]["action"] == "rang", r.json
    poll(lambda: crew["log"].lines().count(doorbell.notice("Sim")) == 2, what="the ring")


def test_a_plain_shell_crew_is_rung_with_a_comment_never_a_command(tmp_path, cli, tmux):
    """Typed into a shell, text runs: the ring must be inert there, whatever the mail says."""
    marker = tmp_path / "executed"
    task = f"touch {marker} $(touch {marker}) `touch {marker}`"
    r = cli(
        "crew",
        "Sh",
        "--task",
        task,
        "--agent",
        "shell",
        "--socket",
        tmux.socket,
        "--json",
        env={"SHELL": "/bin/sh"},
    )
    assert r.code == 0, r.err
    pane = r.json["pane"]["pane_id"]
    home = Home(cli.home)
    poll(lambda: tmux.capture(pane).strip(), what="the shell prompt")
    assert ring_until(home, "Sh", "rang", timeout=6).detail == "landed"
    tmux.type(pane, "echo done-$((40+2))")
    tmux.key(pane, "Enter")
    poll(
        lambda: "done-42" in tmux.capture(pane),
        what="the shell to run a later command: " + tmux.capture(pane)[:600],
    )
    assert not marker.exists(), "the ring text was executed by the shell"
    assert mailbox.unread(home, "sh", crewlog.load(home, "sh")[0])  # a comment reads nothing


def test_a_missing_agent_program_refuses_and_leaves_nothing(cli, tmux):
    r = cli(
        "crew",
        "Ghost",
        "--task",
        "T",
        "--command",
        "no-such-agent-xyz --flag",
        "--socket",
        tmux.socket,
        "--json",
    )
    assert r.code == 1 and r.json["error"]["code"] == "agent_not_found"
    assert not (cli.home / "crew" / "ghost").exists()
    windows = tmux.tmux("list-windows", "-a", "-F", "#{window_name}", check=False).stdout
    assert "Ghost" not in windows


def test_a_missing_tmux_refuses_and_leaves_nothing(cli, tmp_path):
    bare = tmp_path / "bin"
    bare.mkdir()
    r = cli("crew", "Jack", "--task", "T", "--json", env={"PATH": str(bare)})
    assert r.code == 1 and r.json["error"]["code"] == "tmux_unavailable"
    assert "tmux" in r.json["error"]["message"]
    assert not (cli.home / "crew" / "jack").exists()
    # --no-launch needs no tmux at all
    r = cli("crew", "Jack", "--task", "T", "--json", "--no-launch", env={"PATH": str(bare)})
    assert r.code == 0 and r.json["pane"] is None


def test_held_behind_a_draft_for_300_s_raises_one_held_notice(crew, tmux):
    home, pane = crew["home"], crew["pane"]
    tmux.type(pane, "a long think")
    first = poll(
        lambda: (lambda o: o if o.gate == "human_draft" else None)(doorbell.ring(home, "Sim")),
        timeout=5,
        what="the human_draft gate",
    )
    assert first.action == "held"
    since = doorbell.read_stamp(home, "sim").held_since
    assert doorbell.ring(home, "Sim", at=since + timedelta(seconds=299)).gate == "human_draft"
    assert [n for n in mailbox.notifications(home, "sim") if n.status == "held"] == []
    doorbell.ring(home, "Sim", at=since + timedelta(seconds=301))
    doorbell.ring(home, "Sim", at=since + timedelta(seconds=400))
    held = [n for n in mailbox.notifications(home, "sim") if n.status == "held"]
    assert len(held) == 1 and "human draft" in held[0].summary
    assert notify.wait(home, "Sim", timeout=0).status == "held"
    assert crew["log"].lines() == []  # and still nothing typed over the draft


def test_steady_mail_and_a_flipping_gate_do_not_postpone_the_held_notice(crew, tmux):
    """The 300 s clock belongs to the oldest held message: newer mail every 100 s and a
    gate that flips away from the draft and back do not restart it, and the notice names
    that message and when it was first held."""
    home, pane = crew["home"], crew["pane"]
    tmux.type(pane, "a long think")
    first = poll(
        lambda: (lambda o: o if o.gate == "human_draft" else None)(doorbell.ring(home, "Sim")),
        timeout=5,
        what="the human_draft gate",
    )
    stamp = doorbell.read_stamp(home, "sim")
    since, oldest = stamp.held_since, stamp.held_head
    assert first.action == "held" and oldest is not None
    for step in (100, 200):  # new mail, then a ring at the new time: still the old clock
        protocol.tell(home, "Sim", f"follow-up {step}", assignment_id=crew["assignment"])
        assert doorbell.ring(home, "Sim", at=since + timedelta(seconds=step)).gate == "human_draft"
        now_stamp = doorbell.read_stamp(home, "sim")
        assert (now_stamp.held_since, now_stamp.held_head) == (since, oldest)
    assert [n for n in mailbox.notifications(home, "sim") if n.status == "held"] == []
    doorbell.ring(home, "Sim", at=since + timedelta(seconds=301))
    held = [n for n in mailbox.notifications(home, "sim") if n.status == "held"]
    assert len(held) == 1, held
    assert oldest in held[0].summary and f"{since:%H:%M:%S}" in held[0].summary
    assert crew["log"].lines() == []  # nothing typed over the draft all along


def test_the_held_clock_survives_a_gate_flip(crew, tmux):
    """Another gate holding the same mail for a while (here: a cooldown stamp) keeps the
    first-held time; the human-draft notice then counts from it."""
    home, pane = crew["home"], crew["pane"]
    tmux.type(pane, "drafting")
    poll(
        lambda: doorbell.ring(home, "Sim").gate == "human_draft",
        timeout=5,
        what="the human_draft gate",
    )
    since = doorbell.read_stamp(home, "sim").held_since
    stamp = doorbell.read_stamp(home, "sim")
    # the gate flips: a ring 4 s ago puts the crew in cooldown for one attempt
    doorbell._save(
        home, "sim", stamp.model_copy(update=dict(rung_at=since + timedelta(seconds=196)))
    )
    assert doorbell.ring(home, "Sim", at=since + timedelta(seconds=200)).gate == "cooldown"
    assert doorbell.read_stamp(home, "sim").held_since == since
    doorbell.ring(home, "Sim", at=since + timedelta(seconds=305))
    held = [n for n in mailbox.notifications(home, "sim") if n.status == "held"]
    assert len(held) == 1, held


def test_an_approval_modal_on_a_hookless_pane_is_reported_once(crew, tmux):
    home, pane = crew["home"], crew["pane"]
    assert doorbell.check_approval(home, "Sim") is False
    tmux.type(pane, "/approve")
    tmux.key(pane, "Enter")
    poll(lambda: "Press enter to confirm" in tmux.capture(pane), what="the approval modal")
    assert doorbell.check_approval(home, "Sim") is True
    assert doorbell.check_approval(home, "Sim") is True  # still up: not reported again
    raised = [n for n in mailbox.notifications(home, "sim") if n.status == "awaiting_approval"]
    assert len(raised) == 1
    tmux.type(pane, "2")
    tmux.key(pane, "Enter")
    poll(
        lambda: doorbell.check_approval(home, "Sim") is False,
        timeout=5,
        what="the modal to be gone",
    )
    assert not doorbell.read_stamp(home, "sim").approval_seen


def test_the_runner_sleeps_on_inotify_and_wakes_on_a_write(home):
    from captain_tui.runtime.runner import Runner

    runner = Runner(home, ring=False)
    try:
        runner.sleep(0.01)  # starts the watcher; nothing has happened yet
        before = runner.changes
        writer = threading.Timer(0.3, lambda: (home.root / "poke.json").write_text("{}"))
        writer.start()
        poll(
            lambda: (runner.sleep(1.0), runner.changes > before)[1],
            timeout=5,
            what="the watcher to report the write",
        )
        writer.join()
    finally:
        runner.close()

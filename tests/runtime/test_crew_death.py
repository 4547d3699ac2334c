"""A crew that dies is reported: real tmux on a private socket, real processes, the real CLI.

tmux's ``pane-died`` hook reports a process that ends (any exit status, any signal); the
slow probe reports a window, session or server that vanished. Either way: one ``error``
notification per death, its work item ``failed``; never for a crew that finished first,
never for a dismissal.
"""

from __future__ import annotations

import json
import os
import signal
import sys
from pathlib import Path

import pytest
from conftest import Cli
from support.cli import ok_clean as ok
from support.tmux import SLEEPER, PrivateTmux, needs_tmux, poll, recruit_into, sim_command

from captain_tui.runtime import death_watch, launch
from captain_tui.runtime.tmux import Tmux
from state.crew import crewlog, mailbox, protocol
from state.crew import death_notice as crew_deaths
from state.home import Home
from state.inputs import TERMINAL_UNSAFE
from state.work import ledger

pytestmark = needs_tmux


def recruit(cli, tmux, name: str, command: str = SLEEPER, *extra: str) -> dict:
    return recruit_into(cli, tmux, name, f"{name}'s task: tidy the docs", *extra, command=command)


def errors(home: Home, key: str) -> list:
    return [n for n in mailbox.notifications(home, key) if n.status == "error"]


def dead(tmux, pane_id: str) -> bool:
    proc = tmux.tmux("display-message", "-p", "-t", pane_id, "#{pane_dead}", check=False)
    return proc.stdout.strip() == "1"


def hook(cli, r: dict) -> None:
    """Run the pane-died hook again, as tmux would (it is idempotent, and exits 0 silently)."""
    res = cli(
        "hook", "tmux", "pane-died", r["crew"].lower(), r["incarnation_id"], r["pane"]["pane_id"]
    )
    assert (res.code, res.out, res.err) == (0, "", "")


def test_a_crew_killed_after_reading_its_mail_is_one_error_with_its_last_lines(cli, home, tmux):
    r = recruit(cli, tmux, "Sim", sim_command(Path(cli.home).parent / "sim.log"))
    pane = r["pane"]["pane_id"]
    poll(lambda: "›" in tmux.capture(pane), what="the simulated crew's prompt")
    tmux.type(pane, f"captain inbox {r['crew']}")
    tmux.key(pane, "Enter")
    snapshot = crewlog.load(home, "sim")[0]
    poll(lambda: not mailbox.unread(home, "sim", snapshot), what="the task read")
    poll(lambda: "tidy the docs" in tmux.capture(pane), what="the task on screen")

    os.kill(r["pane"]["pane_pid"], signal.SIGKILL)
    got = ok(cli("wait", "Sim", "--json", "--timeout", "20"))
    assert got["status"] == "error" and got["crew"] == "Sim"
    assert got["assignment_id"] == r["assignment_id"]
    assert got["delivery_id"] == crew_deaths.delivery_id(r["incarnation_id"])
    summary = got["summary"]
    assert "killed by signal 9 (SIGKILL)" in summary
    assert "Sim's task: tidy the docs" in summary  # the last lines of the pane
    assert "captain dismiss Sim" in summary and f"--handoff {r['assignment_id']}" in summary
    assert len(summary) <= 1600

    item = ledger.get(home, r["work_id"])
    assert item.state == "failed" and item.attempts[-1].outcome == "failed"
    assert "killed by signal 9" in ledger.events(home, r["work_id"])[-1].reason

    # the hook again, the probe, a second runner: still one error
    hook(cli, r)
    assert death_watch.Probe().round(home) == [] and death_watch.Probe().round(home) == []
    assert len(errors(home, "sim")) == 1
    human = cli("wait", "Sim", "--ack", got["delivery_id"], "--timeout", "0")
    assert human.code == 0 and "timeout" in human.out

    # what the captain does next works: dismiss, then recruit the name again
    ok(cli("dismiss", "Sim", "--json"))
    again = recruit(cli, tmux, "Sim", SLEEPER, "--handoff", r["assignment_id"])
    assert again["incarnation_id"] != r["incarnation_id"]


def test_an_exit_before_done_is_an_error_and_an_exit_after_done_is_not(cli, home, tmux):
    quitter = recruit(cli, tmux, "Quitter", "sh -c 'read line; exit 3'")
    finisher = recruit(cli, tmux, "Finisher", "sh -c 'read line; exit 0'")
    # both read their mail; the finisher reports done, then each process ends
    assert cli("inbox", "Quitter", env=quitter["env"]).code == 0
    assert cli("inbox", "Finisher", env=finisher["env"]).code == 0
    ok(cli("done", "Finisher", "--report", "done; checked", "--json", env=finisher["env"]))
    for r in (quitter, finisher):
        tmux.key(r["pane"]["pane_id"], "Enter")
    got = ok(cli("wait", "Quitter", "--json", "--timeout", "20"))
    assert got["status"] == "error" and "exited with status 3" in got["summary"]
    assert ledger.get(home, quitter["work_id"]).state == "failed"

    poll(lambda: dead(tmux, finisher["pane"]["pane_id"]), what="the finisher's exit")
    hook(cli, finisher)  # what tmux ran: it decides nothing is wrong
    death_watch.Probe().round(home)
    assert errors(home, "finisher") == []
    assert ledger.get(home, finisher["work_id"]).state == "succeeded"
    (done,) = mailbox.notifications(home, "finisher")
    assert done.status == "done"

    # a next task for a crew whose process has ended: nobody will do it, and that is an error
    ok(cli("wait", "Finisher", "--ack", done.delivery_id, "--timeout", "0", "--json"))
    spec = ok(
        cli(
            "assign", "Finisher", "--task", "next", "--handoff", finisher["assignment_id"], "--json"
        )
    )
    (n,) = death_watch.Probe().round(home)
    assert n.status == "error" and n.assignment_id == spec["assignment_id"]
    assert "exited with status 0" in n.summary
    assert ledger.get(home, ledger.work_id_for_assignment(spec["assignment_id"])).state == "failed"


@pytest.mark.skipif(not hasattr(os, "pidfd_open"), reason="pidfds are Linux's")
def test_a_runner_sees_a_death_at_once_even_when_tmux_fires_no_hook(cli, home, tmux):
    """A tmux built with libutempter can lose the SIGCHLD of a pane whose terminal closed
    first: no status, no pane-died. The runner's pidfd watch notices the process end and
    nudges tmux into reaping it. Here the hook is removed, so only the runner can tell."""
    r = recruit(cli, tmux, "Lone", "sleep 300")  # the shell execs it: alone on its terminal
    tmux.tmux("set-hook", "-uw", "-t", r["pane"]["window_id"], "pane-died")
    probe = death_watch.Probe()
    try:
        assert probe.round(home) == []  # alive: now watched
        os.kill(r["pane"]["pane_pid"], signal.SIGKILL)
        found = poll(lambda: probe.quick(home), timeout=5, what="the runner's quick look")
    finally:
        probe.close()
    (n,) = found
    assert n.status == "error" and "killed by signal 9 (SIGKILL)" in n.summary
    assert ledger.get(home, r["work_id"]).state == "failed"


def test_dismissal_closes_the_pane_on_purpose_and_is_never_an_error(cli, home, tmux, monkeypatch):
    monkeypatch.setattr(death_watch, "CONFIRM_AFTER", 0.2)
    plain = recruit(cli, tmux, "Plain")
    ok(cli("dismiss", "Plain", "--json"))
    probe = death_watch.Probe()
    assert probe.round(home) == []

    # the moment between the pane closing and the dismissal being written: the probe sees
    # the pane gone, but a vanished pane counts only when a second look still finds it so
    racy = recruit(cli, tmux, "Racy")
    snapshot = crewlog.load(home, "racy")[0]
    assert launch.close_pane(snapshot.pane) is True
    assert probe.round(home) == []  # first look: not yet
    protocol.dismiss(home, "Racy", stopped=True)
    poll(lambda: probe.round(home) == [] and not probe.pending, timeout=5, what="a later look")
    for key in ("plain", "racy"):
        assert errors(home, key) == []
        assert {n.status for n in mailbox.notifications(home, key)} <= {"bounced"}
    for r in (plain, racy):
        assert ledger.get(home, r["work_id"]).state == "cancelled"


def test_a_killed_session_or_server_is_one_error_per_crew(cli, home, tmux, monkeypatch):
    other = PrivateTmux()
    try:
        ann = recruit(cli, tmux, "Ann", SLEEPER, "--session", "doomed")
        bob = recruit(cli, tmux, "Bob", SLEEPER, "--session", "doomed")
        kept = recruit(cli, tmux, "Kept", SLEEPER, "--session", "kept")
        cid = recruit(cli, other, "Cid")

        # the session killed outside captain: no hook fires; the probe finds both panes
        # gone and reports each crew once, whichever runner looks, however often
        monkeypatch.setattr(death_watch, "CONFIRM_AFTER", 0.2)
        tmux.tmux("kill-session", "-t", "doomed")
        runners = [death_watch.Probe(), death_watch.Probe()]
        poll(
            lambda: (
                errors(home, "ann") and errors(home, "bob")
                if [p.round(home) for p in runners]
                else None
            ),
            timeout=10,
            what="the probe's verdict",
        )
        for p in runners:
            assert p.round(home) == []
        for r in (ann, bob):
            (n,) = errors(home, r["crew"].lower())
            assert "window was closed outside captain" in n.summary
            assert ledger.get(home, r["work_id"]).state == "failed"
        assert errors(home, "kept") == [] and errors(home, "cid") == []
        assert ledger.get(home, kept["work_id"]).state == "running"

        # the whole server killed: a real `captain wait` (its runner probes) returns it
        assert cli("inbox", "Cid", env=cid["env"]).code == 0  # unread mail would bounce
        other.tmux("kill-server")
        got = ok(cli("wait", "Cid", "--json", "--timeout", "20"))
        assert got["status"] == "error" and "tmux server is gone" in got["summary"]
        assert ledger.get(home, cid["work_id"]).state == "failed"
        assert len(errors(home, "cid")) == 1 and errors(home, "kept") == []
    finally:
        other.kill()


def test_a_hostile_home_path_and_hostile_pane_text_stay_inert(tmp_path, project, tmux):
    """The home's path goes into the hook's command line: a space, quotes, ``$``, ``#{``,
    a backtick and ``;`` must reach the hook as the path. What the dying program printed is
    shown sanitised: no escape sequence, no control or bidi character."""
    root = tmp_path / "we ird 'q\"$HOME #{pane_id};`touch pwned`" / "home"
    cli = Cli(root, project)
    noisy = (
        "printf 'plain words\\n\\033[31mred\\033[0m \\033]0;title\\007after\\n"
        "\\342\\200\\256reversed \\302\\233 c1\\n'; sleep 300"
    )
    r = recruit(cli, tmux, "Noisy", f"sh -c {json.dumps(noisy)}")
    pane = r["pane"]["pane_id"]
    poll(lambda: "after" in tmux.capture(pane), what="the noisy output")
    assert cli("inbox", "Noisy", env=r["env"]).code == 0  # unread mail would bounce first
    os.kill(r["pane"]["pane_pid"], signal.SIGTERM)
    got = ok(cli("wait", "Noisy", "--json", "--timeout", "20"))
    assert got["status"] == "error" and "signal 15 (SIGTERM)" in got["summary"]
    assert "plain words" in got["summary"] and "red" in got["summary"]
    assert TERMINAL_UNSAFE.search(got["summary"]) is None
    assert not list(tmp_path.rglob("pwned")) and not Path("pwned").exists()
    home = Home(root)
    assert ledger.get(home, r["work_id"]).state == "failed"
    human = cli("wait", "Noisy", "--timeout", "0")  # owed: refused, and printed safely
    assert "\x1b" not in human.out + human.err


def test_the_hook_command_survives_every_quoting_layer(tmp_path, tmux, monkeypatch):
    """What tmux stores and runs for a hostile home path is that path, byte for byte."""
    odd = str(tmp_path / "a b'c\"d$e#{f}##{g}`h`;i\\j~k{l} $(m)")
    out = tmp_path / "argv.json"
    script = tmp_path / "record.py"
    script.write_text(
        "import json, os, sys\n"
        "json.dump([os.environ['CAPTAIN_HOME'], *sys.argv[1:]],"
        f" open({str(out)!r}, 'w'))\n"
    )
    monkeypatch.setattr(death_watch, "captain_command", lambda: [sys.executable, str(script)])
    command = death_watch.hook_command(odd, "jack", "inc_01ABC")
    tmux.tmux("new-session", "-d", "-s", "t", "sleep 300")
    tmux.tmux("set-hook", "-w", "-t", "t", "pane-died", command)
    tmux.tmux("set-option", "-w", "-t", "t", "remain-on-exit", "on")
    pid = int(tmux.tmux("display-message", "-p", "-t", "t", "#{pane_pid}").stdout)
    os.kill(pid, signal.SIGKILL)

    def argv():
        death_watch.nudge(Tmux(tmux.socket))  # what a runner does when tmux lost the SIGCHLD
        return out.exists() and out.read_text() and json.loads(out.read_text())

    got = poll(argv, what="the hook's argv")
    assert got[0] == odd
    assert got[1:5] == ["hook", "tmux", "pane-died", "jack"] and got[5] == "inc_01ABC"
    assert got[6].startswith("%")


def test_the_hook_fails_open_and_silent(cli, home, tmux):
    bad = [
        [],
        ["pane-died"],
        ["pane-died", "no such", "inc_1", "%1"],
        ["pane-died", "jack", "inc_1", "%1"],
        ["other", "jack", "inc_1", "%1"],
    ]
    for argv in bad:
        res = cli("hook", "tmux", *argv)
        assert (res.code, res.out, res.err) == (0, "", ""), argv
    nowhere = Cli(Path(cli.home).parent / "no-home", cli.cwd)
    res = nowhere("hook", "tmux", "pane-died", "jack", "inc_1", "%1")
    assert (res.code, res.out) == (0, "") and not (Path(cli.home).parent / "no-home").exists()

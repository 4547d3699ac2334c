"""The work ledger against real tmux on a private socket: slots, dispatch, stop, reconcile.

Crews are recruited through the real CLI with ``--command`` (a plain ``sleep``) into a tmux
server of the test's own. What the ledger says is checked against what tmux says: a
window exists or not, a pane answers or not.
"""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import threading
from datetime import datetime, timedelta
from pathlib import Path

import pytest
from support.cli import ok_clean as ok
from support.tmux import SLEEPER, needs_tmux, poll, recruit_into

from captain_tui.runtime import ledger_probe as ledger_runtime
from state.clock import now
from state.crew import crewlog
from state.records import PaneLocator
from state.work import ledger

pytestmark = needs_tmux


def configure(home, text: str) -> None:
    (home.root / "config.toml").write_text(text)


def recruit(cli, tmux, name: str) -> dict:
    return recruit_into(
        cli, tmux, name, f"{name}'s task", "--owns", f"src/{name.lower()}", "--allow", "edit"
    )


def crew_done(cli, r: dict) -> dict:
    """The crew process, from the env recruiting printed: read the task, then done."""
    assert cli("inbox", r["crew"], "--json", env=r["env"]).code == 0
    return ok(cli("done", r["crew"], "--report", "finished; checked", "--json", env=r["env"]))


def windows(tmux) -> list[str]:
    proc = tmux.tmux("list-windows", "-a", "-F", "#{window_name}", check=False)
    return proc.stdout.split() if proc.returncode == 0 else []


def pane_exists(tmux, pane_id: str) -> bool:
    proc = tmux.tmux("display-message", "-p", "-t", pane_id, "#{pane_id}", check=False)
    return proc.returncode == 0 and proc.stdout.strip() == pane_id


def item(home, work_id: str):
    return ledger.get(home, work_id)


def lease_file(home, work_id: str) -> datetime | None:
    path = home.root / "work" / work_id / "lease.json"
    if not path.exists():
        return None
    return datetime.fromisoformat(json.loads(path.read_text())["expires_at"].replace("Z", "+00:00"))


def past_lease(home, work_id: str, seconds: float = 1.0) -> datetime:
    expires = ledger.lease_expires(home, item(home, work_id))
    assert expires is not None
    return expires + timedelta(seconds=seconds)


def pane_environ(pid: int) -> dict[str, str]:
    raw = Path(f"/proc/{pid}/environ").read_bytes().split(b"\0")
    return dict(e.decode().split("=", 1) for e in raw if b"=" in e)


# -- capacity and dispatch ------------------------------------------------------------------


def test_a_queued_crew_launches_when_a_slot_frees(cli, home, tmux):
    configure(home, "[ledger]\nslots = 1\n")
    a = recruit(cli, tmux, "Able")
    assert a["queued"] is False and a["pane"] is not None
    a_item = item(home, a["work_id"])
    assert a_item.state == "running"
    assert a_item.attempts[-1].runtime_locator.pane_id == a["pane"]["pane_id"]
    assert windows(tmux) == ["Able"]

    b = recruit(cli, tmux, "Baker")
    assert b["queued"] is True and b["pane"] is None
    assert item(home, b["work_id"]).state == "queued"
    assert windows(tmux) == ["Able"]  # no window for Baker
    human = cli("work", "list", "--state", "queued")
    assert b["work_id"] in human.out

    # a round while the slot is held starts nothing
    assert f"{b['work_id']}: started" not in ledger_runtime.round(home)
    assert item(home, b["work_id"]).state == "queued" and windows(tmux) == ["Able"]

    crew_done(cli, a)
    assert item(home, a["work_id"]).state == "succeeded"
    changes = ledger_runtime.round(home)
    assert f"{b['work_id']}: started" in changes

    started = item(home, b["work_id"])
    assert started.state == "running" and started.generation == 1
    locator = started.attempts[-1].runtime_locator
    assert locator is not None and locator.socket == tmux.socket
    assert pane_exists(tmux, locator.pane_id)
    assert sorted(windows(tmux)) == ["Able", "Baker"]
    shown = tmux.tmux("display-message", "-p", "-t", locator.pane_id, "#{window_name}").stdout
    assert shown.strip() == "Baker"
    # the pane is Baker's, with Baker's own environment, and the crew log knows it
    env = pane_environ(locator.pane_pid)
    for key, value in b["env"].items():
        assert env[key] == value
    snapshot, _ = crewlog.load(home, "baker")
    assert snapshot.pane == locator
    # another round does not start it twice
    assert f"{b['work_id']}: started" not in ledger_runtime.round(home)
    assert sorted(windows(tmux)) == ["Able", "Baker"]

    # dismissing with a confirmed close cancels the item
    dismissed = ok(cli("dismiss", "Baker", "--json"))
    assert dismissed["pane_stopped"] is True
    assert not pane_exists(tmux, locator.pane_id)
    done = item(home, b["work_id"])
    assert done.state == "cancelled"
    assert [e.type for e in ledger.events(home, b["work_id"])][-2:] == [
        "cancel_requested",
        "cancelled",
    ]
    assert ledger.held(home) == []


def test_a_running_watch_launches_the_queued_crew(cli, home, tmux):
    configure(home, "[ledger]\nslots = 1\n")
    a = recruit(cli, tmux, "Able")
    b = recruit(cli, tmux, "Baker")
    assert b["queued"] is True
    watch = subprocess.Popen(
        [sys.executable, "-m", "captain_tui", "watch"],
        cwd=cli.cwd,
        env=cli.env(),
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        # the watch runs rounds, but Baker's slot is held by Able
        poll(
            lambda: lease_file(home, a["work_id"]) is not None,
            timeout=30,
            what="the watch's first ledger round (Able's heartbeat)",
        )
        assert item(home, b["work_id"]).state == "queued" and windows(tmux) == ["Able"]
        crew_done(cli, a)
        started = poll(
            lambda: (lambda i: i if i.state == "running" else None)(item(home, b["work_id"])),
            timeout=30,
            what="the watch to start Baker",
        )
        locator = started.attempts[-1].runtime_locator
        assert locator is not None and pane_exists(tmux, locator.pane_id)
        assert sorted(windows(tmux)) == ["Able", "Baker"]
    finally:
        watch.send_signal(signal.SIGINT)
        try:
            watch.wait(timeout=15)
        except subprocess.TimeoutExpired:
            watch.kill()
            watch.wait()
    assert "Traceback" not in watch.stderr.read()


def test_dismissing_a_queued_crew_cancels_it_and_nothing_launches(cli, home, tmux):
    configure(home, "[ledger]\nslots = 1\n")
    a = recruit(cli, tmux, "Able")
    b = recruit(cli, tmux, "Baker")
    assert ok(cli("dismiss", "Baker", "--json"))["pane_stopped"] is None
    assert item(home, b["work_id"]).state == "cancelled"  # queued: no process to stop
    crew_done(cli, a)
    assert ledger_runtime.round(home) == []
    assert windows(tmux) == ["Able"]
    assert item(home, b["work_id"]).state == "cancelled"


# -- the reconciler -------------------------------------------------------------------------


def test_killed_pane_with_expired_lease_fails_and_a_live_one_is_renewed(cli, home, tmux):
    a = recruit(cli, tmux, "Able")
    b = recruit(cli, tmux, "Baker")
    a_pane = item(home, a["work_id"]).attempts[-1].runtime_locator
    b_pane = item(home, b["work_id"]).attempts[-1].runtime_locator

    # alive: a pass heartbeats it (lease.json written), the state stays running
    assert lease_file(home, b["work_id"]) is None
    ledger.examine(home, ledger_runtime.probe, holder="t", at=now())
    first = lease_file(home, b["work_id"])
    assert first is not None and item(home, b["work_id"]).state == "running"

    tmux.tmux("kill-pane", "-t", a_pane.pane_id)
    poll(lambda: ledger_runtime.probe(a_pane) == "gone", what="Able's pane to be gone")
    assert ledger_runtime.probe(b_pane) == "alive"  # the server is still up

    # gone, but the lease has not expired: nothing is decided yet
    assert ledger.examine(home, ledger_runtime.probe, holder="t", at=now()) == []
    assert item(home, a["work_id"]).state == "running"

    later = max(past_lease(home, a["work_id"]), first + timedelta(seconds=1))
    changes = ledger.examine(home, ledger_runtime.probe, holder="t", at=later)
    assert any(c.startswith(f"{a['work_id']}: failed") for c in changes), changes
    assert f"{b['work_id']}: lease renewed" in changes
    failed = item(home, a["work_id"])
    assert failed.state == "failed" and failed.attempts[-1].outcome == "failed"
    last = ledger.events(home, a["work_id"])[-1]
    assert last.type == "failed" and "confirmed gone" in last.reason and last.actor == "t"

    renewed = lease_file(home, b["work_id"])
    assert renewed > first and renewed == later + timedelta(seconds=ledger.lease_seconds(home))
    assert item(home, b["work_id"]).state == "running"
    assert (
        ledger.public(home, item(home, b["work_id"]), detail=True)["attempts"][-1]["lease_holder"]
        == "t"
    )


def test_an_exited_crew_process_is_gone_though_its_pane_stays(cli, home, tmux):
    """Crew windows keep a dead pane readable (remain-on-exit): the pane is still there,
    but its process has exited, so the lease must not be renewed for it."""
    r = ok(
        cli(
            "crew",
            "Quitter",
            "--task",
            "T",
            "--command",
            "sh -c 'sleep 1; exit 3'",
            "--socket",
            tmux.socket,
            "--json",
        )
    )
    locator = item(home, r["work_id"]).attempts[-1].runtime_locator
    poll(
        lambda: (
            tmux.tmux(
                "display-message", "-p", "-t", locator.pane_id, "#{pane_dead}", check=False
            ).stdout.strip()
            == "1"
        ),
        what="the pane's process to exit",
    )
    assert pane_exists(tmux, locator.pane_id)  # the dead pane is kept
    assert ledger_runtime.probe(locator) == "gone"
    changes = ledger.examine(
        home, ledger_runtime.probe, holder="t", at=past_lease(home, r["work_id"])
    )
    assert any(c.startswith(f"{r['work_id']}: failed") for c in changes), changes
    assert item(home, r["work_id"]).state == "failed"
    assert lease_file(home, r["work_id"]) is None  # it was never renewed


def test_killed_server_is_confirmed_gone_and_fails(cli, home, tmux):
    a = recruit(cli, tmux, "Able")
    locator = item(home, a["work_id"]).attempts[-1].runtime_locator
    assert ledger_runtime.probe(locator) == "alive"
    tmux.tmux("kill-server")
    # a killed server can leave its socket behind: tmux then says no server runs there
    poll(lambda: ledger_runtime.probe(locator) == "gone", what="the killed server to be gone")
    Path(tmux.socket).unlink(missing_ok=True)
    assert ledger_runtime.probe(locator) == "gone"
    changes = ledger.examine(
        home, ledger_runtime.probe, holder="t", at=past_lease(home, a["work_id"])
    )
    assert any(c.startswith(f"{a['work_id']}: failed") for c in changes), changes
    assert item(home, a["work_id"]).state == "failed"
    assert ledger.held(home) == []


@pytest.fixture
def unanswering_server(tmp_path):
    """A unix socket where a tmux server should be, which hangs up on every client: tmux
    can neither reach a server there nor say that none runs."""
    path = str(tmp_path / "not-tmux.sock")
    listener = socket.socket(socket.AF_UNIX)
    listener.bind(path)
    listener.listen(16)
    listener.settimeout(0.1)
    stop = threading.Event()

    def serve():
        while not stop.is_set():
            try:
                conn, _ = listener.accept()
            except TimeoutError:
                continue
            except OSError:
                return
            conn.close()

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    yield path
    stop.set()
    listener.close()
    thread.join(timeout=5)
    if os.path.exists(path):
        os.unlink(path)


def test_an_unverifiable_pane_needs_reconciliation_and_keeps_it(home, unanswering_server):
    locator = PaneLocator(
        socket=unanswering_server, session="captain", window_id="@1", pane_id="%1", pane_pid=None
    )
    assert ledger_runtime.probe(locator) == "unknown"
    wid = ledger.accept(home, source="chat", input={"text": "x"}, requester="captain:t").work_id
    ledger.claim(home, wid, holder="w", locator=locator)

    # unknown and not expired: no verdict, and no renewal either
    assert ledger.examine(home, ledger_runtime.probe, holder="t", at=now()) == []
    assert item(home, wid).state == "running" and lease_file(home, wid) is None

    at = past_lease(home, wid)
    changes = ledger.examine(home, ledger_runtime.probe, holder="t", at=at)
    assert changes == [f"{wid}: needs reconciliation"]
    stuck = item(home, wid)
    assert stuck.state == "needs_reconciliation" and stuck.attempts[-1].outcome is None
    assert [i.work_id for i in ledger.held(home)] == [wid]  # it keeps its slot
    # a timer never clears it
    assert ledger.examine(home, ledger_runtime.probe, holder="t", at=at + timedelta(days=30)) == []
    assert item(home, wid).state == "needs_reconciliation"
    assert ledger_runtime.round(home) == []
    assert item(home, wid).state == "needs_reconciliation"


# -- cancelling an assignment is dismissing its crew -----------------------------------------


def test_work_cancel_of_an_assignment_dismisses_its_crew_and_bounces_its_mail(cli, home, tmux):
    a = recruit(cli, tmux, "Able")
    pane = a["pane"]["pane_id"]
    assert pane_exists(tmux, pane)
    ok(
        cli(
            "tell",
            "Able",
            "also update the changelog",
            "--assignment",
            a["assignment_id"],
            "--json",
        )
    )
    # the task and the follow-up are both unread: both bounce with the dismissal
    cancelled = ok(cli("work", "cancel", a["work_id"], "--json"))
    assert cancelled["outcome"] == "cancelled" and cancelled["state"] == "cancelled"
    dismissed = cancelled["dismissed"]
    assert dismissed["crew"] == "Able" and dismissed["pane_stopped"] is True
    assert dismissed["assignment_id"] == a["assignment_id"] and len(dismissed["bounced"]) == 2
    assert not pane_exists(tmux, pane)
    row = ok(cli("status", "--all", "--json"))["crew"][0]
    assert row["state"] == "dismissed"
    # every bounce is a notification; once acknowledged, the name is free for a handoff
    n = ok(cli("wait", "Able", "--timeout", "0", "--json"))
    statuses = []
    while n["status"] != "timeout":
        statuses.append(n["status"])
        n = ok(cli("wait", "Able", "--ack", n["delivery_id"], "--timeout", "0", "--json"))
    assert statuses == ["bounced", "bounced"]
    again = ok(
        cli(
            "crew",
            "Able",
            "--task",
            "try again",
            "--handoff",
            a["assignment_id"],
            "--command",
            SLEEPER,
            "--socket",
            tmux.socket,
            "--json",
        )
    )
    assert again["assignment_id"] != a["assignment_id"]
    assert item(home, again["work_id"]).state == "running"


def test_work_cancel_words_say_the_crew_was_dismissed_and_how_to_recruit_again(cli, tmux):
    a = recruit(cli, tmux, "Able")
    human = cli("work", "cancel", a["work_id"])
    assert human.code == 0, human.err
    assert f"Cancelled {a['work_id']}" in human.out
    assert "Able is dismissed" in human.out and f"--handoff {a['assignment_id']}" in human.out


def test_work_cancel_of_a_finished_assignment_leaves_the_crew_alone(cli, home, tmux):
    a = recruit(cli, tmux, "Able")
    crew_done(cli, a)
    cancelled = ok(cli("work", "cancel", a["work_id"], "--json"))
    assert cancelled["outcome"] == "already_terminal" and cancelled["dismissed"] is None
    assert ok(cli("status", "--json"))["crew"][0]["state"] == "done"
    assert pane_exists(tmux, a["pane"]["pane_id"])


def test_a_refused_cancel_touches_neither_the_pane_nor_the_crew(cli, home, tmux):
    """Every refusal comes before the pane is closed: a reason that is refused leaves the
    crew assigned and its pane running."""
    a = recruit(cli, tmux, "Able")
    refused = cli("work", "cancel", a["work_id"], "--reason", "bad\x01reason", "--json")
    assert refused.code == 1 and refused.json["error"]["code"] == "invalid_text"
    assert pane_exists(tmux, a["pane"]["pane_id"])
    assert ok(cli("status", "--json"))["crew"][0]["state"] == "assigned"
    assert item(home, a["work_id"]).state == "running"


def test_a_rounds_batched_probe_answers_as_the_per_pane_probe_does(cli, home, tmux):
    """The runners' round asks each tmux server once (``Panes``), not each pane twice; its
    answers are ``probe``'s: alive, an exited process in a kept pane, a closed window, a
    server gone."""
    able, baker = recruit(cli, tmux, "Able"), recruit(cli, tmux, "Baker")
    quitter = ok(
        cli(
            "crew",
            "Quitter",
            "--task",
            "T",
            "--command",
            "sh -c 'sleep 1; exit 3'",
            "--socket",
            tmux.socket,
            "--json",
        )
    )
    a, b, q = (
        item(home, r["work_id"]).attempts[-1].runtime_locator for r in (able, baker, quitter)
    )
    poll(lambda: ledger_runtime.probe(q) == "gone", what="Quitter's process to exit")
    tmux.tmux("kill-pane", "-t", b.pane_id)
    poll(lambda: ledger_runtime.probe(b) == "gone", what="Baker's pane to close")
    panes = ledger_runtime.Panes()
    assert (
        [panes(x) for x in (a, b, q)]
        == [ledger_runtime.probe(x) for x in (a, b, q)]
        == ["alive", "gone", "gone"]
    )
    tmux.tmux("kill-server")
    poll(lambda: ledger_runtime.probe(a) == "gone", what="the server to be gone")
    assert ledger_runtime.Panes()(a) == "gone"
    assert panes(a) == "alive"  # one round, one look: the next round asks again


@pytest.mark.parametrize(
    "lease, every", [(None, 15.0), (60, 15.0), (20, 5.0), (1, 5.0), (3600, 15.0)]
)
def test_runners_renew_a_lease_a_few_times_per_lease_not_every_round(home, lease, every):
    """Each heartbeat writes a lease file every watcher of the home reads: a runner renews
    a quarter-lease apart (no more often than its rounds), not on every 5 s round."""
    from captain_tui.runtime import runner

    if lease is not None:
        home.root.mkdir(parents=True, exist_ok=True)
        (home.root / "config.toml").write_text(f"[ledger]\nlease_seconds = {lease}\n")
    assert runner.examine_every(home) == every
    assert every <= ledger.lease_seconds(home) / 4 or every == runner.LEDGER_EVERY

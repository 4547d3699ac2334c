"""Start-up dialogs with the REAL Claude Code and Codex: blocked, seen, answered.

Each agent is recruited through the real ``captain crew --agent ...`` (``support.agents``:
a tmux server in a loopback-only network namespace, a stand-in model API) into a project
it has never been told to trust, so it opens on its folder-trust dialog instead of its
composer. A runner ticks as ``captain wait`` ticks it (``Runner.tick`` every 0.1 s), and:

- the crew is ``blocked: folder trust`` in ``status`` (text and ``--json``) within one
  probe interval of the dialog being drawn, and ``wait`` returns one ``blocked`` notice;
- ``u`` on the crew in the cockpit (driven in-process by the Pilot) chooses the trust
  option, and the agent reaches its composer; the next probe clears the state;
- with the dialog gone, the same answer is refused (``no_dialog``), and nothing is typed
  into the composer.

Skipped, with the reason, where the agent, tmux or the network namespace is missing.
"""

from __future__ import annotations

import json
import subprocess
import time
from pathlib import Path

import pytest
from support.agents import AgentCrew, start_agent_crew
from support.claude import StandIn, claude_available, claude_binary, claude_env
from support.cockpit import Cockpit, drive, select_row, toasts, until
from support.codex import CodexCrew, ResponsesStandIn, codex_available, codex_binary, codex_env

from captain_tui import usecases
from captain_tui.runtime import dialogs, doorbell
from captain_tui.runtime.pane_reader import read_screen
from captain_tui.runtime.runner import Runner
from state.crew import notify
from state.crew.guards import CAPTAIN
from state.errors import CaptainError

pytestmark = pytest.mark.usefixtures("plain_terminal", "private_config")  # the cockpit's

SLACK = 1.5  # a loaded 2-core machine: a capture and a few file writes on top of the interval


def _status_row(crew: AgentCrew) -> dict:
    """The crew's row of ``status --json`` (read in process: the rows the CLI prints)."""
    return next(row for row in usecases.status(crew.home).crew if row["name"] == crew.name)


def _blocked_then_answered(crew: AgentCrew) -> None:
    runner = Runner(crew.home, crew.name)
    try:
        # the runner ticks from the start, as a wait armed right after recruiting does; from
        # the moment the dialog is drawn, one probe interval is the bound
        deadline = time.monotonic() + 60
        drawn = row = screen = None
        while time.monotonic() < deadline:
            runner.tick()
            if drawn is None:
                screen = crew.pane.capture(ansi=True)
                if read_screen(screen, crew.agent).dialog == "folder_trust":
                    drawn = time.monotonic()
            row = _status_row(crew)
            if row["state"] == "blocked":
                break
            time.sleep(0.1)
        assert drawn is not None, crew.pane.capture()
        took = time.monotonic() - drawn
        assert row["state"] == "blocked", (row, screen)
        assert took <= dialogs.PROBE_EVERY + SLACK, took
        assert row["dialog"] == "folder_trust"
        printed = crew.cli("status", "--json")  # the real CLI says the same
        assert printed.returncode == 0, printed.stderr
        (mine,) = [r for r in json.loads(printed.stdout)["crew"] if r["name"] == crew.name]
        assert (mine["state"], mine["dialog"]) == ("blocked", "folder_trust")
        text = crew.cli("status").stdout
        (line,) = [line for line in text.splitlines() if line.startswith(crew.name)]
        assert "blocked: folder trust" in line, text

        n = notify.wait(crew.home, crew.name, timeout=0)
        assert n is not None and n.status == "blocked", n
        assert "folder trust" in n.summary and "press u" in n.summary
        notify.wait(crew.home, crew.name, timeout=0, ack=n.delivery_id)

        # the captain presses u on the crew in the cockpit (in-process, the Pilot)
        app = Cockpit(crew.home, run_doorbell=False)

        async def press_u(pilot) -> None:
            await select_row(pilot, "crew", crew.key)
            await until(pilot, lambda: app.view.crew(crew.key).dialog, what="the dialog")
            await pilot.press("u")
            await until(
                pilot,
                lambda: any("Answered" in t or "still on screen" in t for t in toasts(app)),
                timeout=30,
                what="the answer's toast",
            )

        drive(app, press_u)
        said = toasts(app)
        assert any(f"Answered {crew.name}'s folder trust dialog" in t for t in said), (
            said,
            crew.pane.capture(),
        )
        # the agent goes on to its composer: the dialog was answered, not dismissed
        crew.pane.wait_for(lambda s: read_screen(s, crew.agent).composer_readable, timeout=30)
        assert _status_row(crew)["state"] != "blocked"
        # the next probe reads the pane again: no dialog, the state stays cleared, and the
        # composer it saw ends the probing of this crew (it is past its start-up)
        assert dialogs.probe(crew.home, crew.key) is None
        assert doorbell.read_stamp(crew.home, crew.key).composer_seen
        row = _status_row(crew)
        assert row["state"] != "blocked" and row["dialog"] is None, row
        # no dialog: the answer refuses and sends nothing
        before = read_screen(crew.pane.capture(ansi=True), crew.agent)
        with pytest.raises(CaptainError) as err:
            dialogs.answer(crew.home, crew.name, "folder_trust", ctx=CAPTAIN)
        assert err.value.code == "no_dialog"
        after = read_screen(crew.pane.capture(ansi=True), crew.agent)
        assert after.draft == before.draft  # nothing typed on the composer
    finally:
        runner.close()


def test_claude_code_at_its_folder_trust_dialog_is_blocked_and_u_trusts_it(tmp_path: Path):
    reason = claude_available()
    if reason:
        pytest.skip(reason)
    elsewhere = tmp_path / "elsewhere"  # the only directory its .claude.json trusts
    elsewhere.mkdir()
    crew = start_agent_crew(
        "claude",
        tmp_path,
        binary=claude_binary(),
        name="Jack",
        task="tidy the docs",
        stand_in=lambda jail: StandIn(jail=jail),
        env=lambda base_url: claude_env(tmp_path, elsewhere, base_url),
        home_root=tmp_path / "home",
        project=tmp_path / "project",
        width=100,
        height=30,
    )
    with crew:
        _blocked_then_answered(crew)


def test_codex_at_its_folder_trust_dialog_is_blocked_and_u_trusts_it(tmp_path: Path):
    reason = codex_available()
    if reason:
        pytest.skip(reason)
    project = tmp_path / "project"  # a git project (Codex asks only there) it does not trust
    project.mkdir()
    git = ["git", "-C", str(project), "-c", "user.name=t", "-c", "user.email=t@example.com"]
    subprocess.run(["git", "init", "-q", str(project)], check=True)
    subprocess.run([*git, "commit", "-q", "--allow-empty", "-m", "start"], check=True)
    crew = start_agent_crew(
        "codex",
        tmp_path,
        binary=codex_binary(),
        name="Jack",
        task="tidy the docs",
        stand_in=lambda jail: ResponsesStandIn(jail),
        env=lambda base_url: codex_env(tmp_path, tmp_path / "elsewhere", base_url),
        home_root=tmp_path / "home",
        project=project,
        width=120,
        height=40,
        crew_cls=CodexCrew,
    )
    with crew:
        _blocked_then_answered(crew)

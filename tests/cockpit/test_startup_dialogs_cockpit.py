"""The cockpit and a crew blocked at its agent's start-up dialog, in real tmux: its own
runner sees the dialog (Crew panel: ``blocked``, the Doorbell column naming the dialog, a
toast saying what to press), ``u`` trusts the folder with exactly the dialog's keys, and a
dialog only a person answers is not answered: ``u`` says to jump to the pane.

The agent is ``support.dialogs``' stand-in: a program drawing a real capture of the dialog
and logging every key it receives."""

from __future__ import annotations

import pytest
from support.cockpit import Cockpit, drive, select_row, toasts, until
from support.dialogs import keys_received, recruit_at_dialog
from support.tmux import needs_tmux

pytestmark = [needs_tmux, pytest.mark.usefixtures("plain_terminal", "private_config")]


def _crew_cells(app) -> list[str]:
    panel = app.query_one("#crew")
    row = app.view.crew("jack")
    return [cell.plain for cell in panel.row_cells(row, app.clock(), 30)]


def test_u_trusts_the_folder_of_a_crew_blocked_at_its_trust_dialog(cli, tmux, tmp_path):
    home, log = recruit_at_dialog(
        cli, tmux, tmp_path, "claude", "claude-code-2.1.332/folder-trust.txt"
    )
    app = Cockpit(home, run_doorbell=True)  # its runner probes the panes

    async def scenario(pilot):
        row = await until(
            pilot,
            lambda: (r := app.view.crew("jack")) is not None and r.state == "blocked" and r,
            what="Jack blocked",
        )
        assert row.dialog == "folder_trust"
        cells = _crew_cells(app)
        assert "blocked" in cells and "folder trust" in cells, cells
        await until(
            pilot,
            lambda: any("folder trust" in t and "press u" in t for t in toasts(app)),
            what="the blocked toast",
        )
        await select_row(pilot, "crew", "jack")
        await pilot.press("u")
        await until(
            pilot,
            lambda: any("Answered Jack's folder trust dialog" in t for t in toasts(app)),
            what="the answer's toast",
        )
        assert keys_received(log) == ["Down", "Enter"]
        await until(pilot, lambda: app.view.crew("jack").state != "blocked", what="unblocked")

    drive(app, scenario)


def test_u_leaves_a_dialog_only_a_person_answers_and_says_jump(cli, tmux, tmp_path):
    home, log = recruit_at_dialog(
        cli, tmux, tmp_path, "codex", "codex-0.169-120x40/extra-onboarding-model-migration.txt"
    )
    app = Cockpit(home, run_doorbell=True)

    async def scenario(pilot):
        await until(
            pilot,
            lambda: (r := app.view.crew("jack")) is not None and r.state == "blocked",
            what="Jack blocked",
        )
        assert "model migration" in _crew_cells(app)
        await select_row(pilot, "crew", "jack")
        assert app.screen.active_bindings["u"].enabled is False  # dimmed: not ours to answer
        await pilot.press("u")
        await until(
            pilot,
            lambda: any("model migration dialog is yours" in t for t in toasts(app)),
            what="the why-not toast",
        )
        assert any("jump to its pane" in t for t in toasts(app))
        assert keys_received(log) == []
        assert app.view.crew("jack").state == "blocked"

    drive(app, scenario)

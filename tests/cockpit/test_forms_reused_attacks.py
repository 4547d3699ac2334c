"""A form's outcome closes that form and no other (#28's kept forms, attacked): a send still
under way while the person opens another form above it from the command palette. Driven
through the real cockpit (Pilot), the send held back by the home's own locks held by the
test (a slow disk, another captain writing); nothing is timed."""

from __future__ import annotations

import fcntl
import os
from pathlib import Path

import pytest
from support.cockpit import Cockpit, crew, drive, select_row, toasts, type_text, until
from textual.widgets import Input, TextArea

from captain_tui.cockpit import command_table
from state.home import Home
from widgets.screens.forms import FormScreen, RecruitScreen, TellScreen

pytestmark = pytest.mark.usefixtures("plain_terminal", "private_config")  # support/cockpit_env.py


def _hold_every_lock(home: Home) -> list[int]:
    """Every lock the home has, held exclusively here (a slow disk, another captain): a
    write the cockpit sends waits until they are let go."""
    fds = []
    for path in sorted((home.root / "locks").rglob("*.lock")):
        fd = os.open(path, os.O_RDWR)
        fcntl.flock(fd, fcntl.LOCK_EX)
        fds.append(fd)
    return fds


def test_a_send_that_lands_while_another_form_is_on_top_closes_only_its_own_form(
    home: Home, project: Path
):
    """A Tell is sent; while it is under way the person opens Recruit from the command
    palette and types in it. When the Tell lands, its own form goes, and Recruit (with
    what was typed) stays on top; nothing is left 'sending…' on the stack."""
    crew(home, "Jack", "Fix the login bug", project=project)
    app = Cockpit(home, run_doorbell=False)

    async def scenario(pilot):
        await select_row(pilot, "crew", "jack")
        await pilot.press("t")
        tell = await until(pilot, lambda: isinstance(app.screen, TellScreen) and app.screen)
        await type_text(pilot, "for Jack")
        held = _hold_every_lock(home)
        try:
            await pilot.press("ctrl+s")
            await until(pilot, lambda: tell.busy, what="the Tell under way")
            app._invoke(command_table.BY_ID["recruit"])  # what the palette's Recruit runs
            recruit = await until(
                pilot, lambda: isinstance(app.screen, RecruitScreen) and app.screen
            )
            await type_text(pilot, "Gibbs")
        finally:
            for fd in held:
                os.close(fd)
        await until(pilot, lambda: any("Jack" in t for t in toasts(app)), what="sent")
        await until(pilot, lambda: tell not in app.screen_stack, what="the Tell form gone")
        assert app.screen is recruit
        assert recruit.query_one("#name", Input).value == "Gibbs"
        assert not any(isinstance(s, FormScreen) and s.busy for s in app.screen_stack)
        # and the Tell form, kept, opens again as a fresh one once Recruit is closed
        await pilot.press("escape")
        await until(pilot, lambda: not isinstance(app.screen, FormScreen), what="Recruit closed")
        await pilot.press("t")
        again = await until(pilot, lambda: isinstance(app.screen, TellScreen) and app.screen)
        assert again is tell and not again.busy
        assert again.query_one("#message", TextArea).text == ""

    drive(app, scenario)

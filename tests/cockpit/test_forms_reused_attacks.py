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
from textual import events
from textual.widgets import Input, Select, TextArea

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
                pilot,
                lambda: (
                    isinstance(app.screen, RecruitScreen) and app.screen.is_mounted and app.screen
                ),
                what="Recruit",
            )
            await type_text(pilot, "Gibbs")
        finally:
            for fd in held:
                os.close(fd)
        await until(pilot, lambda: any("Jack" in t for t in toasts(app)), what="sent")
        await until(pilot, lambda: tell.sent_beneath, what="the Tell form told it was sent")
        assert app.screen is recruit
        assert recruit.query_one("#name", Input).value == "Gibbs"
        assert not recruit.busy
        # Recruit closed: the sent Tell form goes as it is shown, never waiting "sending…"
        await pilot.press("escape")
        await until(pilot, lambda: not isinstance(app.screen, FormScreen), what="both closed")
        assert tell not in app.screen_stack and not tell.busy
        # and the Tell form, kept, opens again as a fresh one
        await pilot.press("t")
        again = await until(pilot, lambda: isinstance(app.screen, TellScreen) and app.screen)
        assert again is tell and not again.busy
        assert again.query_one("#message", TextArea).text == ""

    drive(app, scenario)


def _burst(app, *keys: str) -> None:
    """Keys queued at once, as a fast typist or a slow machine delivers them: none is
    handled before the last is queued."""
    for key in keys:
        event = events.Key(key, {"space": " "}.get(key, key if len(key) == 1 else None))
        event.set_sender(app)
        app.post_message(event)


def test_keys_act_on_a_form_in_the_order_typed_and_never_after_it_closed(home: Home, project: Path):
    """Letters, escape, then ctrl+s, typed faster than the cockpit handles them: the form
    is cancelled with every letter typed before escape kept in its draft, and ctrl+s,
    typed after, sends nothing (was: ctrl+s, a priority key, was handled ahead of the keys
    still queued and sent the message the person had just cancelled). Letters then ctrl+s:
    every letter is in what is sent. An open option list still closes on escape."""
    jack = crew(home, "Jack", "Fix the login bug", project=project)
    mail = sorted(home.mail_dir("jack").iterdir())  # its task
    app = Cockpit(home, run_doorbell=False)

    async def scenario(pilot):
        await select_row(pilot, "crew", "jack")
        await pilot.press("t")
        tell = await until(pilot, lambda: isinstance(app.screen, TellScreen) and app.screen)
        await type_text(pilot, "not yet")
        _burst(app, "space", "x", "y", "escape", "ctrl+s")
        await until(pilot, lambda: any("Nothing was sent" in t for t in toasts(app)))
        await until(pilot, lambda: not tell.is_current)
        await pilot.pause()
        assert not any("Told Jack" in t for t in toasts(app)), toasts(app)
        assert not tell.busy and tell not in app.screen_stack
        assert app.drafts[f"tell:{jack.assignment_id}"]["message"] == "not yet xy"
        assert sorted(home.mail_dir("jack").iterdir()) == mail  # nothing was sent

        await pilot.press("t")
        await until(pilot, lambda: app.screen is tell)
        assert tell.query_one("#message", TextArea).text == "not yet xy"
        _burst(app, "space", "n", "o", "w", "ctrl+s")
        await until(pilot, lambda: any("Told Jack" in t for t in toasts(app)), what="sent")
        sent = set(home.mail_dir("jack").iterdir()) - set(mail)
        assert len(sent) == 1 and "not yet xy now" in sent.pop().read_text()

        await pilot.press("r")
        recruit = await until(
            pilot,
            lambda: isinstance(app.screen, RecruitScreen) and app.screen.is_mounted and app.screen,
            what="Recruit",
        )
        agent = recruit.query_one("#agent", Select)
        agent.focus()
        await pilot.press("enter")
        await until(pilot, lambda: agent.expanded, what="the agent list open")
        await pilot.press("escape")
        await until(pilot, lambda: not agent.expanded, what="the agent list closed")
        assert app.screen is recruit  # the form stays
        await pilot.press("escape")
        await until(pilot, lambda: not isinstance(app.screen, FormScreen), what="form closed")

    drive(app, scenario)

"""A form is built once and shown again (#28: a keystroke -> its frame within 16 ms), and
every open of it is as a fresh one was: its subject, its draft or nothing, no refusal, no
offer and no undo left from the last open, the focus on its first field; it restyles when
the theme changed while it was hidden; it is opaque, so the cockpit is not drawn again
beneath it. Driven through the real cockpit with keys (Pilot); nothing is timed here
(bench/cockpit_budgets.py measures the frames)."""

from __future__ import annotations

from pathlib import Path

import pytest
from support.cockpit import Cockpit, crew, drive, select_row, type_text, until
from textual.color import Color
from textual.widgets import Checkbox, Input, Static, TextArea

from state.home import Home
from widgets.screens.forms import ConfirmScreen, FormScreen, RecruitScreen, TellScreen

pytestmark = pytest.mark.usefixtures("plain_terminal", "private_config")  # support/cockpit_env.py

LONG_TASK = (
    "Rewrite the session store so that every expired session is swept on start, the sweep is "
    "logged with its count, and the old format is still read for one release after this one"
)


async def _open(pilot, key: str, kind: type[FormScreen]) -> FormScreen:
    await pilot.press(key)
    return await until(
        pilot, lambda: isinstance(pilot.app.screen, kind) and pilot.app.screen, what=kind.__name__
    )


async def _close(pilot) -> None:
    await pilot.press("escape")
    await until(pilot, lambda: not isinstance(pilot.app.screen, FormScreen), what="form closed")


def test_a_form_is_built_once_and_each_open_is_about_its_own_crew(home: Home, project: Path):
    crew(home, "Jack", "Fix the login bug", project=project)
    crew(home, "Gibbs", LONG_TASK, project=project)
    app = Cockpit(home, run_doorbell=False)

    async def scenario(pilot):
        await select_row(pilot, "crew", "jack")
        first = await _open(pilot, "t", TellScreen)
        short = first.query_one("#context", Static).size.height
        await type_text(pilot, "half a thought for Jack")
        await _close(pilot)  # its draft is kept for Jack's assignment

        await select_row(pilot, "crew", "gibbs")
        again = await _open(pilot, "t", TellScreen)
        assert again is first  # shown again, not built again
        assert again.crew == "Gibbs"
        context = again.query_one("#context", Static)
        assert "Gibbs" in str(context.render()) and "Jack" not in str(context.render())
        # a longer text is laid out again: all of it shown, not cut to the last one's height
        await until(
            pilot,
            lambda: (
                context.size.height
                == context.get_content_height(
                    context.container_size, again.size, context.content_size.width
                )
                > short
            ),
            what="the context laid out for Gibbs's longer task",
        )
        message = again.query_one("#message", TextArea)
        assert message.text == "" and again.focused is message
        await pilot.press("ctrl+z")  # no undo back into what was typed for Jack
        assert message.text == ""
        await _close(pilot)

        await select_row(pilot, "crew", "jack")
        back = await _open(pilot, "t", TellScreen)
        assert back is first and back.crew == "Jack"
        assert back.query_one("#message", TextArea).text == "half a thought for Jack"
        await _close(pilot)

    drive(app, scenario)


def test_a_form_shown_again_keeps_no_refusal_no_offer_and_no_focus_from_the_last_open(
    home: Home,
):
    app = Cockpit(home, run_doorbell=False)

    async def scenario(pilot):
        form = await _open(pilot, "r", RecruitScreen)
        await pilot.press("ctrl+s")  # no name: the form refuses by itself
        error = form.query_one("#error", Static)
        await until(pilot, lambda: "The name is empty." in str(error.render()), what="refusal")
        assert not error.disabled
        form.offer_handoff("Jack", "asg_1", "Fix the login bug")  # as a refusal offers it
        form.query_one("#owns", Input).focus()
        await pilot.press(*"src")
        await _close(pilot)

        again = await _open(pilot, "r", RecruitScreen)
        assert again is form
        assert error.disabled and str(error.render()) == ""  # no refusal from the last open
        box = again.query_one("#handoff", Checkbox)
        assert box.has_class("-hidden") and not box.value and again.handoff is None
        assert again.focused is again.query_one("#name", Input)  # its first field, again
        assert again.query_one("#owns", Input).value == ""  # nothing typed there is kept
        # (only a cancelled form's task or message is kept as a draft)
        await _close(pilot)

    drive(app, scenario)


def test_a_form_hidden_while_the_theme_changed_is_shown_in_the_new_theme(home: Home):
    app = Cockpit(home, run_doorbell=False)

    async def scenario(pilot):
        form = await _open(pilot, "r", RecruitScreen)
        await _close(pilot)
        theme = next(t for t in sorted(app.available_themes) if t != app.theme)
        app.theme = theme
        await pilot.pause()
        again = await _open(pilot, "r", RecruitScreen)
        assert again is form
        surface = Color.parse(app.theme_variables["surface"])
        dialog = again.query_one("#dialog")
        await until(
            pilot,
            lambda: dialog.styles.background.hex == surface.hex,
            what=f"the form drawn in {theme}",
        )
        await _close(pilot)

    drive(app, scenario)


def test_forms_and_confirmations_are_opaque(home: Home, project: Path):
    """The cockpit beneath a form is not drawn again through a tint for each frame."""
    crew(home, "Jack", project=project)
    app = Cockpit(home, run_doorbell=False)

    async def scenario(pilot):
        for key, kind in (("t", TellScreen), ("r", RecruitScreen), ("d", ConfirmScreen)):
            await pilot.press(key)
            screen = await until(pilot, lambda k=kind: isinstance(app.screen, k) and app.screen)
            assert screen.styles.background.a == 1, kind.__name__
            await pilot.press("escape")
            await until(pilot, lambda k=kind: not isinstance(app.screen, k))

    drive(app, scenario)

"""Nothing stored reaches the cockpit's screen raw: what a terminal would obey is shown as
'\ufffd' in every panel.

A crew's hook summary, a question, a task: each is text someone else wrote.
The cockpit draws them through ``widgets.cells`` (``state.inputs.for_terminal``); this test
plants hostile text where each record takes it, opens the real cockpit, and reads back
every panel's rendered lines (``Widget.render_lines``, public) and the exported screen: no
character in ``TERMINAL_UNSAFE`` is drawn, and the replacement mark is.
"""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest
from support.cockpit import as_crew, crew, until
from textual.geometry import Region

from captain_tui.cockpit.app import CaptainApp
from state.clock import now
from state.crew import notify, protocol
from state.home import Home
from state.inputs import TERMINAL_UNSAFE
from widgets.panels.row_list import PanelTable

pytestmark = pytest.mark.usefixtures("private_config")  # support/cockpit_env.py

# what a record's intake lets through differs: summaries keep ESC (an agent said it), text
# a person typed keeps bidi overrides (names, holders and requesters refuse both at intake)
SUMMARY = "Bash: \x1b]0;pwned\x07rm -rf / \x1b[2J\u202etxt.exe\x9b31m\ud800"
QUESTION = "Rebase \u202eesaber\u202c or \u2066merge\u2069?"


def hostile_home(root: Path) -> Home:
    home = Home(root / "home")
    jack = crew(home, "Jack", "Fix \u202ethe\u202c login bug")
    notify.signal(
        home, "Jack", "awaiting_approval", SUMMARY, at=now(), incarnation_id=jack.incarnation_id
    )
    amy = crew(home, "Amy")
    protocol.ask(home, "Amy", QUESTION, ctx=as_crew(amy))
    return home


def drawn(app: CaptainApp) -> str:
    """Every panel table's rendered lines, plus the exported screen."""
    parts = [app.export_screenshot()]
    for table in app.query(PanelTable):
        region = Region(0, 0, table.size.width, table.size.height)
        parts.extend(seg.text for strip in table.render_lines(region) for seg in strip)
    return "".join(parts)


def test_hostile_text_in_every_panel_is_drawn_inert(tmp_path):
    home = hostile_home(tmp_path)
    app = CaptainApp(home)
    seen = {}

    async def main() -> None:
        async with app.run_test(size=(160, 40)) as pilot:
            await until(
                pilot,
                lambda: app.scanned and app.last_refresh is not None,
                what="the first scan of the home",
            )
            await until(
                pilot,
                lambda: "Rebase" in drawn(app) and "Bash" in drawn(app),
                what="the hostile rows on screen",
            )
            seen["screen"] = drawn(app)

    asyncio.run(main())
    screen = seen["screen"]
    bad = TERMINAL_UNSAFE.search(screen)
    assert bad is None, f"drew {bad.group()!r} raw"
    assert "\ufffd" in screen  # shown as the replacement mark, not dropped silently

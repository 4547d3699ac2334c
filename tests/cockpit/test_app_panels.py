"""Panels change only what changed: a patched row looks exactly like a freshly built table,
the cursor stays on what was picked while rows come and go, and a feed update leaves the
panels whose rows did not change alone."""

from __future__ import annotations

import asyncio
from datetime import datetime, timedelta, timezone
from pathlib import Path

import pytest
from support.cockpit import as_crew, crew, drive, until
from textual.app import App
from textual.geometry import Region

from captain_tui.cockpit import command_table
from captain_tui.cockpit.app import CaptainApp
from state.clock import now as store_now
from state.crew import notify, protocol
from state.home import Home
from widgets.panels.base import Panel
from widgets.panels.notifications_panel import NotificationsPanel
from widgets.panels.row_list import PanelTable
from widgets.view import NotificationRow

pytestmark = pytest.mark.usefixtures("private_config")  # support/cockpit_env.py

NOW = datetime(2026, 11, 29, 14, 30, 0, tzinfo=timezone.utc)


def note(n: int, summary: str = "", status: str = "working") -> NotificationRow:
    return NotificationRow(
        key="jack",
        crew="Jack",
        delivery_id=f"dlv_{n:04d}",
        status=status,
        assignment_id="asg_1",
        summary=summary or f"Report {n}",
        created_at=NOW - timedelta(minutes=60 - n),
    )


class OnePanel(App):
    def compose(self):
        yield NotificationsPanel(id="notifications")


def run_panel(steps) -> tuple[str, list]:
    """Show each (rows, now, every_row) in turn on a fresh panel; the screen afterwards, and
    the table's lines as segments."""
    app = OnePanel()
    out = {}

    async def main() -> None:
        async with app.run_test(size=(90, 14)) as pilot:
            panel = app.query_one(NotificationsPanel)
            await pilot.pause()
            for rows, at, every_row in steps:
                panel.show(rows, at, every_row=every_row)
                await pilot.pause()
            out["svg"] = app.export_screenshot()
            table = panel.table
            out["lines"] = [
                list(strip)
                for strip in table.render_lines(Region(0, 0, table.size.width, table.size.height))
            ]

    asyncio.run(main())
    return out["svg"], out["lines"]


def test_patched_rows_render_like_a_fresh_table():
    """``PanelTable`` re-renders only changed rows and draws a moved row from its cache
    (lines are cached by row, not by place): after cells changed, rows came, went and moved,
    the screen and the table's lines must be what a fresh table shows."""
    first = [note(5), note(4), note(3), note(2), note(1)]
    later = [note(6), note(5), note(4, "Rewritten report"), note(2, status="error"), note(1)]
    patched = run_panel(
        [(first, NOW, True), (later, NOW, False), (later, NOW + timedelta(minutes=7), True)]
    )  # the ages tick
    fresh = run_panel([(later, NOW + timedelta(minutes=7), True)])
    assert patched[0] == fresh[0]
    assert patched[1] == fresh[1]


def test_a_feed_update_keeps_unchanged_rows_as_they_are_until_the_ages_tick():
    rows = [note(2), note(1)]
    calls: list[set] = []
    real = PanelTable.patch_rows

    def counted(self, changes):
        calls.append(set(changes))
        return real(self, changes)

    PanelTable.patch_rows = counted
    try:
        run_panel(
            [
                (rows, NOW, True),
                ([note(2, "New words"), note(1)], NOW + timedelta(minutes=5), False),
                ([note(2, "New words"), note(1)], NOW + timedelta(minutes=5), True),
            ]
        )
    finally:
        PanelTable.patch_rows = real
    # the feed update re-rendered the changed row only; the ages tick then the other one
    assert [c for c in calls if c] == [{"dlv_0002"}, {"dlv_0001"}]


def test_the_cursor_stays_on_the_picked_row_while_rows_come_and_go():
    app = OnePanel()

    async def main() -> None:
        async with app.run_test(size=(90, 14)) as pilot:
            panel = app.query_one(NotificationsPanel)
            panel.show([note(3), note(2), note(1)], NOW)
            panel.table.focus()
            await pilot.pause()
            assert panel.current_key == "dlv_0003"  # not picked: the first row
            await pilot.press("j")
            assert panel.current_key == "dlv_0002"
            panel.show([note(4), note(3), note(2), note(1)], NOW, every_row=False)
            await pilot.pause()
            assert panel.current_key == "dlv_0002"  # a row came above: still on it
            assert panel.rows() == [note(4), note(3), note(2), note(1)]
            panel.show([note(4), note(3), note(1)], NOW, every_row=False)
            await pilot.pause()
            assert panel.current_key == "dlv_0001"  # it went: where it was
            assert [panel.table.get_row_at(i)[3].plain for i in range(3)] == [
                "Report 4",
                "Report 3",
                "Report 1",
            ]

    asyncio.run(main())


def test_a_change_draws_only_the_lines_it_changed():
    """Lines are cached by row, not by place: a changed cell draws its row's line again and
    nothing else; a row that came draws itself (and the row that lost the cursor to it); a
    row that went, and the rows that moved up or down, come from the cache."""
    app = OnePanel()
    drawn: list[str] = []
    real = PanelTable._draw_row

    def counted(self, row_key, *args):
        drawn.append(row_key)
        return real(self, row_key, *args)

    async def main() -> None:
        async with app.run_test(size=(90, 14)) as pilot:
            panel = app.query_one(NotificationsPanel)
            rows = [note(5), note(4), note(3), note(2), note(1)]
            panel.show(rows, NOW)
            panel.table.focus()  # focus changes the look: every line is drawn again
            await pilot.pause()
            assert sorted(drawn) == ["dlv_0001", "dlv_0002", "dlv_0003", "dlv_0004", "dlv_0005"]

            async def step(rows) -> list[str]:
                drawn.clear()
                panel.show(rows, NOW, every_row=False)
                await pilot.pause()
                return sorted(drawn)

            rows[2] = note(3, "Rewritten report")
            assert await step(rows) == ["dlv_0003"]
            rows.insert(0, note(6))  # on top: the cursor (not picked) stays on the first row
            assert await step(rows) == ["dlv_0005", "dlv_0006"]
            del rows[4]  # dlv_0002: the row under it moves up
            assert await step(rows) == []
            rows.reverse()  # every row moves
            assert await step(rows) == ["dlv_0001", "dlv_0006"]  # the cursor's, and its old
            assert await step(rows) == []  # nothing changed
            assert [panel.table.get_row_at(i)[3].plain for i in range(5)] == [
                "Report 1",
                "Rewritten report",
                "Report 4",
                "Report 5",
                "Report 6",
            ]

    PanelTable._draw_row = counted
    try:
        asyncio.run(main())
    finally:
        PanelTable._draw_row = real


class Recording(OnePanel):
    def __init__(self) -> None:
        super().__init__()
        self.said: list[tuple[str, str]] = []

    def on_panel_table_row_highlighted(self, message: PanelTable.RowHighlighted) -> None:
        self.said.append(("highlighted", message.row_key))

    def on_panel_table_row_selected(self, message: PanelTable.RowSelected) -> None:
        self.said.append(("selected", message.row_key))


def test_vim_keys_and_clicks_move_the_cursor_and_say_where():
    app = Recording()

    async def main() -> None:
        async with app.run_test(size=(90, 14)) as pilot:
            panel = app.query_one(NotificationsPanel)
            table = panel.table
            panel.show([note(n) for n in range(30, 0, -1)], NOW)  # more than fit
            table.focus()
            await until(pilot, lambda: app.said, what="the first row highlighted")
            assert app.said == [("highlighted", "dlv_0030")] and not table.picked
            await pilot.press("j", "j", "k")
            assert panel.current_key == "dlv_0029" and table.picked
            await pilot.press("G")
            assert panel.current_key == "dlv_0001"
            await pilot.pause()
            height = table.scrollable_content_region.height
            lines = [s.text for s in table.render_lines(Region(0, 0, table.size.width, height))]
            assert lines[0].split() == ["Age", "Crew", "Status", "Summary"]  # stays on top
            assert "Report 1 " in lines[-1] + " "  # the cursor's row, scrolled into view
            await pilot.press("g")
            assert panel.current_key == "dlv_0030" and table.scroll_offset.y == 0
            await pilot.press("down")
            assert panel.current_key == "dlv_0029"
            await pilot.pause()
            assert [k for what, k in app.said] == [
                "dlv_0030",
                "dlv_0029",
                "dlv_0028",
                "dlv_0029",
                "dlv_0001",
                "dlv_0030",
                "dlv_0029",
            ]
            app.said.clear()
            await pilot.click(table, offset=(3, 3))  # the header is line 0: the 3rd row
            assert panel.current_key == "dlv_0028"
            await pilot.click(table, offset=(3, 3))  # again: selected
            await pilot.click(table, offset=(3, 0))  # the header: nothing
            await pilot.pause()
            assert app.said == [("highlighted", "dlv_0028"), ("selected", "dlv_0028")]
            assert panel.current_key == "dlv_0028"

    asyncio.run(main())


def test_an_update_to_notifications_only_leaves_the_other_tables_alone(home: Home, project: Path):
    """Acknowledging an older notification changes Notifications and nothing on screen
    elsewhere: no other table gets a row added, removed, re-rendered or cleared."""
    jack = crew(home, "Jack", project=project)
    crew(home, "Gibbs", "Docs", project=project)
    older = notify.signal(home, "Jack", "working", "First report", at=store_now())
    notify.signal(home, "Jack", "working", "Second report", at=store_now() + timedelta(seconds=1))
    protocol.ask(home, "Jack", "Which one?", ctx=as_crew(jack))
    stopped = datetime.now().astimezone()
    app = CaptainApp(home, run_doorbell=False, clock=lambda: stopped)  # ages stay put
    touched: list[str] = []

    def spy(name):
        real = getattr(PanelTable, name)

        def wrapped(self, *args, **kwargs):
            if name != "patch_rows" or args[0]:
                touched.append(f"{self.parent.id}.{name}")
            return real(self, *args, **kwargs)

        return real, wrapped

    async def scenario(pilot):
        panel = app.query_one("#notifications")
        await until(pilot, lambda: older.delivery_id in panel._keys, what="the notifications")
        await pilot.pause(0.3)
        saved = {}
        for name in ("patch_rows", "add_row", "remove_row", "clear", "order_rows"):
            saved[name], wrapped = spy(name)
            setattr(PanelTable, name, wrapped)
        shown: list[str] = []
        real_show = Panel.show
        Panel.show = lambda self, *a, **k: shown.append(self.id) or real_show(self, *a, **k)
        try:
            notify.acknowledge(home, "Jack", older.delivery_id)
            await until(
                pilot,
                lambda: older.delivery_id not in panel._keys,
                what="the acknowledged row to go",
            )
            await pilot.pause(0.3)
        finally:
            Panel.show = real_show
            for name, real in saved.items():
                setattr(PanelTable, name, real)
        assert set(touched) == {"notifications.remove_row"}
        assert "questions" not in shown and "doorbells" not in shown and "work" not in shown

    drive(app, scenario)


def test_the_help_screen_describes_every_panel_the_cockpit_shows(home: Home):
    """The help screen's "The panels" names each panel the cockpit draws (it once left
    Approvals out)."""
    app = CaptainApp(home, run_doorbell=False)
    shown: list[str] = []

    async def scenario(pilot):
        shown.extend(p.title for p in app.query(Panel))

    drive(app, scenario)
    assert {"Crew", "Questions", "Approvals", "Work"} <= set(shown), shown
    described = command_table.help_markdown().split("## The panels", 1)[1]
    assert [t for t in shown if f"- **{t}** —" not in described] == []

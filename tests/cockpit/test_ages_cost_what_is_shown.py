"""An ages tick costs what is on screen, not what the panel holds: when the clock moves, only
the rows on screen whose age reads differently are rendered again (the big home's ~1,000
rows were all rendered every tick: a UI-thread stall a keystroke waited behind), and every
age still reads right — on screen at once, and off screen as soon as it is read or scrolled
into view.

A real Textual app (headless) with the real Notifications panel; the rows' cells are counted
on their way through the panel's own ``row_cells``. What "right" looks like is a fresh panel
shown at the same time: its lines must be the ticked panel's, line for line.
"""

from __future__ import annotations

import asyncio
import time
from datetime import datetime, timedelta, timezone

import pytest
from support.cockpit import crew, drive, until
from textual.app import App
from textual.geometry import Region

from captain_tui.cockpit.app import CaptainApp
from captain_tui.cockpit.feed import home_feed
from widgets.cells import AgeWatch, age
from widgets.panels.notifications_panel import NotificationsPanel
from widgets.view import NotificationRow

pytestmark = pytest.mark.usefixtures("private_config")  # support/cockpit_env.py

NOW = datetime(2026, 11, 29, 14, 30, 0, tzinfo=timezone.utc)
ROWS = 60  # far more than the panel shows (about ten)
SIZE = (90, 14)


def note(n: int) -> NotificationRow:
    return NotificationRow(
        key="jack",
        crew="Jack",
        delivery_id=f"dlv_{n:04d}",
        status="working",
        assignment_id="asg_1",
        summary=f"Report {n}",
        created_at=NOW
        - timedelta(minutes=n + 1, seconds=30),  # "1m".."1h": the minutes turn at +30s
    )


class Counted(NotificationsPanel):
    """The real panel, noting each row whose cells it renders."""

    rendered: list[str]

    def row_cells(self, row, now, flex):
        self.rendered.append(row.delivery_id)
        return super().row_cells(row, now, flex)


class OnePanel(App):
    def compose(self):
        yield Counted(id="notifications")


def tick(panel: NotificationsPanel, now: datetime) -> None:
    panel.show_ages(now)  # what the cockpit's ages timer does for each panel


def lines(panel: NotificationsPanel) -> list:
    table = panel.table
    return [
        list(strip)
        for strip in table.render_lines(Region(0, 0, table.size.width, table.size.height))
    ]


def screens(steps, *, bottom: bool) -> tuple[list, list[str], str]:
    """Show the rows at NOW, then move the clock by each step in turn; the table's lines
    (after going to the last row if ``bottom``), the rows rendered by the last tick, and the
    age the last row's cells say when read."""
    app = OnePanel()
    out: dict = {}

    async def main() -> None:
        async with app.run_test(size=SIZE) as pilot:
            panel = app.query_one(Counted)
            panel.rendered = []
            rows = [note(n) for n in range(ROWS)]
            panel.show(rows, NOW)
            await pilot.pause()
            at = NOW
            for step in steps:
                at += step
                panel.rendered = []
                tick(panel, at)
                await pilot.pause()
            out["rendered"] = panel.rendered
            out["last"] = panel.table.get_row_at(ROWS - 1)[0].plain
            if bottom:
                panel.table.focus()
                await pilot.press("G")
                await pilot.pause()
            out["lines"] = lines(panel)

    asyncio.run(main())
    return out["lines"], out["rendered"], out["last"]


def fresh(at: datetime, *, bottom: bool) -> list:
    """The lines of a panel shown once at ``at``: what the ticked one must show."""
    app = OnePanel()
    out: dict = {}

    async def main() -> None:
        async with app.run_test(size=SIZE) as pilot:
            panel = app.query_one(Counted)
            panel.rendered = []
            panel.show([note(n) for n in range(ROWS)], at)
            await pilot.pause()
            if bottom:
                panel.table.focus()
                await pilot.press("G")
                await pilot.pause()
            out["lines"] = lines(panel)

    asyncio.run(main())
    return out["lines"]


def test_an_ages_tick_renders_only_the_rows_on_screen_and_every_age_reads_right():
    minute = timedelta(minutes=1)
    later = NOW + 2 * minute
    ticked, rendered, last = screens([minute, minute], bottom=False)
    # the minutes turned ("1m" -> "3m" ...), but only those on screen were rendered
    assert 0 < len(rendered) <= SIZE[1], rendered
    assert len(set(rendered)) == len(rendered)
    assert "dlv_0059" not in rendered
    # the ages on screen read as a fresh panel shown at the new time reads them
    assert ticked == fresh(later, bottom=False)
    # a row off screen says its right age when read ...
    assert last == age(note(ROWS - 1).created_at, later)
    # ... and when scrolled into view
    scrolled, _, _ = screens([minute, minute], bottom=True)
    assert scrolled == fresh(later, bottom=True)


def test_a_tick_when_no_age_reads_differently_renders_nothing():
    _, rendered, _ = screens([timedelta(seconds=5)], bottom=False)
    assert rendered == []  # "4m" is "4m" for a minute


def test_a_row_scrolled_into_view_whose_age_turns_sooner_wakes_the_next_tick_sooner():
    """Rows off screen are rendered when scrolled into view, at the last tick's time: one
    whose age turns sooner than any on screen must bring the next tick to then (the app's
    watch is told: ``AgeWatch.wake``), or it would read "3m" for up to a minute."""
    hours = [
        NotificationRow(
            key="jack",
            crew="Jack",
            delivery_id=f"old_{n:04d}",
            status="working",
            assignment_id="asg_1",
            summary=f"Old report {n}",
            created_at=NOW - timedelta(hours=2, minutes=n),  # "2h": turns in ~an hour
        )
        for n in range(12)
    ]
    minutes = [note(n) for n in range(48)]  # below them, off screen: turn at +30 s
    heard: list[datetime] = []
    told = AgeWatch(wake=heard.append)

    class Told(App):
        def compose(self):
            yield NotificationsPanel(id="notifications", ages=told)

    app = Told()
    later = NOW + timedelta(minutes=2)

    async def main() -> None:
        async with app.run_test(size=SIZE) as pilot:
            panel = app.query_one(NotificationsPanel)
            panel.show(hours + minutes, NOW)
            await pilot.pause()
            panel.show_ages(later)  # the minutes turned, off screen: none rendered
            told.soonest = panel.next_due()  # what the app's tick leaves it at
            assert told.soonest is not None and told.soonest > later + timedelta(minutes=30)
            heard.clear()
            panel.table.focus()
            await pilot.press("G")
            await pilot.pause()

    asyncio.run(main())
    # the rows drawn at the bottom read "Nm" as of the tick and turn 30 s after it
    assert heard and heard[0] == later + timedelta(seconds=30), heard


def test_in_the_cockpit_a_row_drawn_between_ticks_has_its_age_turn_on_time(
    home, project, monkeypatch
):
    """The real cockpit, its next ages tick a minute away (the crew's age reads in minutes):
    a row drawn between two ticks that reads "0s" must read "2s" two seconds later, not
    when the minute is up. The row is put in the panel as a feed update puts one, but not
    through the feed (whose update brings the next tick near anyway): only the row's own
    age can bring it near."""
    crew(home, "Jack", project=project)
    offset = timedelta(minutes=3)  # Jack's age reads "3m": the next tick is a minute away

    def clock() -> datetime:
        return datetime.now().astimezone() + offset

    app = CaptainApp(home, run_doorbell=False, clock=clock)
    app.ages_every = 0.05
    rescans: list[datetime] = []  # when each ended
    real_rescan = home_feed.Feed.rescan

    def rescan(feed, progress=None):
        update = real_rescan(feed, progress)
        rescans.append(clock())
        return update

    monkeypatch.setattr(home_feed.Feed, "rescan", rescan)

    def settled() -> bool:
        shown = app.last_refresh
        return len(rescans) >= 2 and shown is not None and shown > rescans[-1]

    async def scenario(pilot):
        # the watcher's own rescan is over and shown: the next is 30 s away, so nothing
        # re-shows the panel from the view, or brings the next tick near, meanwhile
        await until(pilot, settled, what="the watcher's rescan, shown")
        # ... and the tick that update brought near is over: the next is ~a minute away
        await until(
            pilot,
            lambda: app._ages_due - time.monotonic() > 20,
            what="the next ages tick a minute away",
        )
        panel = app.query_one(NotificationsPanel)
        fresh = NotificationRow(
            key="jack",
            crew="Jack",
            delivery_id="dlv_between",
            status="working",
            assignment_id="asg_1",
            summary="Between two ticks",
            created_at=clock() - timedelta(seconds=0.2),
        )
        panel.show([fresh], clock(), every_row=False)
        await pilot.pause()
        assert panel.table.get_row_at(0)[0].plain == "0s"
        await until(
            pilot, lambda: panel.table.get_row_at(0)[0].plain == "2s", timeout=8, what='"2s"'
        )

    drive(app, scenario)

"""The cockpit redraws its ages ("4m") when one will read differently, not on a clock that
mostly finds none did: an idle cockpit whose ages read in minutes does not wake for them
every few seconds, and an age still turns over ("2m" -> "3m") on time.

The cockpit runs for real (headless) on a home recorded without panes; its clock is the
real one moved forward, so the crew's age reads in minutes. The window in which nothing
may be redrawn is measured in the feed's own periodic rescans (a 0.2 s clock here), never
slept for.
"""

from __future__ import annotations

from datetime import datetime, timedelta
from pathlib import Path

from support.cockpit import crew, drive, until

from captain_tui.cockpit.app import CaptainApp
from captain_tui.cockpit.feed import home_feed
from state.home import Home
from widgets.panels.crew_panel import CrewPanel

AGES_EVERY = 0.05  # the floor between two redraws: the old fixed clock, 20 times a second
RESCAN_EVERY = 0.2
RESCANS = 3  # the idle window: this many periodic rescans (0.6 s: 12 old redraws)
TURNS_AFTER = 5.0  # seconds from the app's start until the crew's age reads "3m"


def test_an_idle_cockpit_redraws_ages_only_when_one_reads_differently(
    home: Home, project: Path, monkeypatch
):
    crew(home, "Jack", project=project)
    # the clock moved so that Jack's age (from his recruit, a moment ago) turns from "2m"
    # to "3m" TURNS_AFTER seconds from now: it reads in minutes throughout the idle window
    offset = timedelta(minutes=3) - timedelta(seconds=TURNS_AFTER)

    def clock() -> datetime:
        return datetime.now().astimezone() + offset

    app = CaptainApp(home, run_doorbell=False, clock=clock)
    app.ages_every = AGES_EVERY
    app.rescan_every = RESCAN_EVERY
    redraws: list[float] = []
    real = app._show_ages

    def counted() -> None:
        redraws.append(1)
        real()

    app._show_ages = counted  # type: ignore[method-assign]  # counted on the way through
    rescans: list[int] = []
    real_rescan = home_feed.Feed.rescan

    def rescan(feed, progress=None):
        rescans.append(1)
        return real_rescan(feed, progress)

    monkeypatch.setattr(home_feed.Feed, "rescan", rescan)

    async def scenario(pilot):
        panel = app.query_one(CrewPanel)
        await until(pilot, lambda: len(rescans) >= 2, what="the watcher's rescan")

        def age_reads(text: str) -> bool:
            return any(cell.plain == text for cell in panel.table.get_row_at(0))

        await until(pilot, lambda: age_reads("2m"), what='"2m"')
        redraws.clear()
        seen = len(rescans)
        await until(pilot, lambda: len(rescans) >= seen + RESCANS, what="three rescans")
        # nothing read differently: no redraw (the fixed clock redrew ~12 times here)
        assert len(redraws) <= 1, redraws
        # and the age still turns over when it reads differently
        await until(pilot, lambda: age_reads("3m"), timeout=TURNS_AFTER + 10, what='"3m"')

    drive(app, scenario)

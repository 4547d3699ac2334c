"""The cockpit on a shared ledger: the Work panel names the ledger in use (files, or the
database's URL with its password redacted), hears another home's writes through PostgreSQL's
notifications without waiting for a rescan, and, with no listener at all, still catches up
on its own short clock (what a lost notification costs).

Each test sets the clocks that could also explain what it sees out of reach (a rescan every
10 minutes), and the home's watcher off: the other home's writes land in the database only.
Polled with deadlines (``until``), never timed."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest
from support.cockpit import drive, until
from support.ledger_backends import open_ledgers

from captain_tui.cockpit.app import CaptainApp
from state.home import Home
from state.work import ledger
from state.work.location import ledger_location
from widgets.panels.work_panel import WorkPanel
from widgets.screens.help import HelpScreen

pytestmark = pytest.mark.usefixtures("plain_terminal", "private_config")  # support/cockpit_env.py

NEVER = 600.0  # seconds: a clock that must not be what a test sees
PASSWORD = "s3cret-pw"


@pytest.fixture
def pg(request):
    with open_ledgers(request, "postgresql") as made:
        yield made


def shared_homes(tmp_path: Path, pg) -> tuple[Home, Home]:
    """Two homes on one database ledger (two hosts, say); the first's URL has a password
    (the test cluster trusts local connections and ignores it)."""
    url = pg.fresh_url()
    with_password = url.replace("postgres@", f"postgres:{PASSWORD}@", 1)
    homes = []
    for name, its_url in (("here", with_password), ("there", url)):
        root = tmp_path / name
        Home(root)
        (root / "config.toml").write_text(f'[ledger]\nurl = "{its_url}"\n')
        homes.append(Home(root))
    return homes[0], homes[1]


def cockpit(home: Home, *, listen: bool = True, work_every: float = NEVER) -> CaptainApp:
    app = CaptainApp(home, run_doorbell=False)
    app.watch_home = False  # the other home's writes land in the database, not here
    app.rescan_every = NEVER
    app.listen_ledger = listen
    app.work_every = work_every
    return app


def submit(home: Home, text: str = "Summarise the incidents"):
    return ledger.accept(home, source="chat", input={"text": text}, requester="captain:there")


def foot(app: CaptainApp) -> str:
    return str(app.query_one(WorkPanel).border_subtitle)


def test_the_work_panel_names_the_file_ledger(home: Home):
    app = CaptainApp(home, run_doorbell=False)

    async def scenario(pilot):
        await until(pilot, lambda: "ledger: files" in foot(app), what="the ledger's name")
        assert foot(app) == "f filter · ledger: files"
        await pilot.press("question_mark")
        await until(pilot, lambda: isinstance(app.screen, HelpScreen), what="the help")
        assert "· **Work ledger:** `files`" in app.screen.markdown

    drive(app, scenario)


def test_another_homes_write_is_shown_at_its_notification(tmp_path: Path, pg):
    here, there = shared_homes(tmp_path, pg)
    shown = ledger_location(here).shown
    assert "***" in shown and PASSWORD not in shown
    app = cockpit(here)

    async def scenario(pilot):
        await until(pilot, lambda: f"ledger: {shown}" in foot(app), what="the ledger's URL")
        assert PASSWORD not in foot(app)
        await pilot.press("question_mark")
        await until(pilot, lambda: isinstance(app.screen, HelpScreen), what="the help")
        assert f"**Work ledger:** `{shown}`" in app.screen.markdown
        assert PASSWORD not in app.screen.markdown
        await pilot.press("escape")
        first = await asyncio.to_thread(submit, there)
        # the listener's (re)connection re-reads the Work panel, or the write's notification
        # does: either way it is listening once the row is there
        await until(
            pilot,
            lambda: app.view.work_item(first.work_id) is not None,
            what="the other home's item",
        )
        await asyncio.to_thread(ledger.claim, there, first.work_id, holder="worker")
        await until(
            pilot,
            lambda: app.view.work_item(first.work_id).state == "running",
            what="the claim, by its notification",
        )
        second = await asyncio.to_thread(submit, there, "Another one")
        await until(
            pilot,
            lambda: app.view.work_item(second.work_id) is not None,
            what="a second item, by its notification",
        )

    drive(app, scenario)


def test_with_no_notifications_the_work_panel_catches_up_on_its_clock(tmp_path: Path, pg):
    here, there = shared_homes(tmp_path, pg)
    app = cockpit(here, listen=False, work_every=0.5)

    async def scenario(pilot):
        item = await asyncio.to_thread(submit, there)
        await until(
            pilot,
            lambda: app.view.work_item(item.work_id) is not None,
            what="the item, on the Work panel's own clock",
        )
        await asyncio.to_thread(ledger.claim, there, item.work_id, holder="worker")
        await until(
            pilot,
            lambda: app.view.work_item(item.work_id).state == "running",
            what="the claim, on the Work panel's own clock",
        )

    drive(app, scenario)


def test_a_ledger_changed_under_the_running_cockpit_is_said(home: Home):
    """A `[ledger] url` edited while the cockpit runs is never followed: the feed raises
    one alert naming what the setting names now and the ledger it keeps showing."""
    import time

    from captain_tui.cockpit.feed.home_feed import Feed

    feed = Feed(home)
    assert feed.rescan().view.ledger == "files"
    (home.root / "config.toml").write_text('[ledger]\nurl = "mysql://nope/x"\n')
    deadline, said = time.monotonic() + 10, []
    while not said and time.monotonic() < deadline:  # the config is read once it is still
        update = feed.rescan_work()
        said = [a for a in (update.alerts if update else []) if a.kind == "ledger"]
        time.sleep(0.05)
    assert len(said) == 1 and "unusable" in said[0].body and "files" in said[0].body
    assert feed.view.ledger == "files"  # kept: the cockpit's ledger handle is resolved once
    again = feed.rescan_work()
    assert again is None or not any(a.kind == "ledger" for a in again.alerts)  # said once

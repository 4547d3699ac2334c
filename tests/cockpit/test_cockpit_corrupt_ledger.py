"""The cockpit on a damaged or unreadable work ledger (real Pilot, real PostgreSQL, real
files): one panel's read failure never blanks another.

A work item damaged past captain (tests/support/corrupt.py) is left out of the Work panel,
which shows the rest and names it, with one notice however often the ledger is read again;
the file-backed Crew panel is drawn all along. A ledger that cannot be read at all (its
database unreachable) leaves the Crew panel drawn and the Work panel saying what is wrong
instead of "Reading the home…". Polled with deadlines (``until``), never timed.
"""

from __future__ import annotations

import asyncio
import socket
from pathlib import Path

import pytest
from support.cockpit import Cockpit, crew, drive, toasts, until
from support.corrupt import damage_item
from support.ledger_backends import BACKENDS, open_ledgers

from captain_tui.cockpit.app import CaptainApp
from state.home import Home
from state.work import ledger
from widgets.panels.crew_panel import CrewPanel
from widgets.panels.work_panel import WorkPanel

NEVER = 600.0  # seconds: a clock that must not be what a test sees

pytestmark = pytest.mark.usefixtures("plain_terminal", "private_config")  # support/cockpit_env.py


@pytest.fixture(params=BACKENDS)
def made(request):
    with open_ledgers(request, request.param) as made:
        yield made


def home_on(tmp_path: Path, url: str | None) -> Home:
    root = tmp_path / "home"
    Home(root)
    if url:
        (root / "config.toml").write_text(f'[ledger]\nurl = "{url}"\n')
    return Home(root)


def cockpit(home: Home, *, work_every: float = NEVER) -> CaptainApp:
    app = Cockpit(home, run_doorbell=False)
    app.watch_home = False
    app.rescan_every = NEVER
    app.listen_ledger = False  # the Work panel's own clock re-reads it (work_every)
    app.work_every = work_every
    return app


def submit(home: Home, text: str):
    return ledger.accept(home, source="chat", input={"text": text}, requester="captain:test")


def foot(app: CaptainApp) -> str:
    return str(app.query_one(WorkPanel).border_subtitle)


def notices_of(app: CaptainApp, ident: str) -> list[str]:
    return [t for t in toasts(app) if ident in t]


def test_a_corrupt_work_item_is_left_out_and_said_once(tmp_path: Path, made) -> None:
    home = home_on(tmp_path, made.fresh_url())
    crew(home, "alice")
    good, bad = submit(home, "good"), submit(home, "bad")
    damage_item(home, bad.work_id, "wrong shape")
    app = cockpit(home, work_every=0.2)

    async def scenario(pilot):
        crew_panel, work_panel = app.query_one(CrewPanel), app.query_one(WorkPanel)
        await until(
            pilot, lambda: crew_panel.loaded and work_panel.loaded, what="both panels drawn"
        )
        assert [r.name for r in crew_panel.rows()] == ["alice"]
        shown = {r.work_id for r in work_panel.rows()}
        assert good.work_id in shown and bad.work_id not in shown
        await until(pilot, lambda: notices_of(app, bad.work_id), what="the notice")
        if not made.postgres:
            return  # files: that read quarantined the bad files (the store's own report)
        assert "⚠" in foot(app) and "could not be read" in foot(app)
        # read again and again (the Work panel's clock, each read the whole ledger): each
        # item submitted later is on screen after a read that met the bad one again
        for n in range(3):
            later = await asyncio.to_thread(submit, home, f"later {n}")
            await until(
                pilot,
                lambda: app.view.work_item(later.work_id) is not None,
                what=f"item {n} submitted after the first read",
            )
        assert len(notices_of(app, bad.work_id)) == 1, toasts(app)
        assert bad.work_id in app.view.work_problem

    drive(app, scenario)


def _closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture
def pg(request):
    with open_ledgers(request, "postgresql") as made:
        yield made


def test_an_unreadable_ledger_leaves_the_crew_panel_drawn_and_says_why(tmp_path: Path, pg) -> None:
    home = home_on(tmp_path, pg.fresh_url())
    crew(home, "alice")
    # the database goes away (its URL now names a port nobody listens on)
    (home.root / "config.toml").write_text(
        f'[ledger]\nurl = "postgresql://postgres@127.0.0.1:{_closed_port()}/nothing"\n'
    )
    home = Home(home.root)
    app = cockpit(home)

    async def scenario(pilot):
        crew_panel, work_panel = app.query_one(CrewPanel), app.query_one(WorkPanel)
        await until(
            pilot, lambda: crew_panel.loaded and work_panel.loaded, what="both panels drawn"
        )
        assert [r.name for r in crew_panel.rows()] == ["alice"]
        assert work_panel.rows() == []
        said = str(app.query_one("#work .empty").render())
        assert "could not be read" in said and "Reading the home" not in said, said
        assert "⚠" in foot(app)

    drive(app, scenario)


def test_a_ledger_that_never_answers_keeps_no_crew_off_the_screen(tmp_path: Path, pg) -> None:
    home = home_on(tmp_path, pg.fresh_url())
    crew(home, "alice")
    # a "database" that takes the connection and never says a word: libpq waits for its
    # answer (up to its connect timeout) while the feed reads the ledger
    mute = socket.socket()
    mute.bind(("127.0.0.1", 0))
    mute.listen(8)
    port = mute.getsockname()[1]
    (home.root / "config.toml").write_text(
        f'[ledger]\nurl = "postgresql://postgres@127.0.0.1:{port}/nothing"\n'
    )
    app = cockpit(Home(home.root))

    async def main() -> None:
        async with app.run_test(notifications=True) as pilot:
            crew_panel, work_panel = app.query_one(CrewPanel), app.query_one(WorkPanel)
            try:
                await until(
                    pilot,
                    lambda: crew_panel.loaded,
                    timeout=5,
                    what="the Crew panel, while the ledger says nothing",
                )
                assert [r.name for r in crew_panel.rows()] == ["alice"]
                assert not app.scanned and not work_panel.loaded
                said = str(app.query_one("#work .empty").render())
                assert "Reading the home" in said, said
            finally:
                mute.close()  # the waiting connection is reset: the read fails at once
            await until(pilot, lambda: work_panel.loaded, what="the Work panel, after it")
            said = str(app.query_one("#work .empty").render())
            assert "could not be read" in said, said

    try:
        asyncio.run(main())
    finally:
        mute.close()

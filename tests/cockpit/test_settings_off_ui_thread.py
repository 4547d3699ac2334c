"""A changed setting is written by a worker thread, never by the UI thread (docs/design.md,
"Threads in the cockpit"): a config directory that does not answer leaves the cockpit
answering keys, and one that refuses the write is a toast, not a crash."""

from __future__ import annotations

import json
import os
import threading
from pathlib import Path

import pytest
from support.cockpit import Cockpit, drive, toasts, until

from captain_tui.cockpit import prefs
from state.home import Home
from widgets.screens.settings import SettingsScreen

PATIENCE = 5.0  # seconds the stuck write is held while the UI is asked to answer

pytestmark = pytest.mark.usefixtures("plain_terminal", "private_config")  # support/cockpit_env.py


def test_a_stuck_settings_write_does_not_freeze_the_cockpit(home: Home):
    """The write's temp file is a FIFO with no reader: opening it blocks until one comes.
    The UI must answer a key meanwhile; only then does the test read the FIFO, releasing
    the write. Written on the UI thread, the key waits for the reader, which waits
    ``PATIENCE`` seconds for the key: the test sees the timeout."""
    config = Path(os.environ["CAPTAIN_CONFIG_DIR"])
    config.mkdir(parents=True)
    fifo = config / f".{prefs.FILE_NAME}.{os.getpid()}.tmp"  # prefs.save's temp name
    os.mkfifo(fifo)
    answered = threading.Event()
    got: dict[str, object] = {}

    def reader() -> None:
        got["timed_out"] = not answered.wait(PATIENCE)
        with open(fifo, "rb") as pipe:  # the writer holds it open: this releases it
            got["written"] = pipe.read()

    app = Cockpit(home, run_doorbell=False)
    releaser = threading.Thread(target=reader, daemon=True)

    async def scenario(pilot):
        await pilot.press("s")
        await until(pilot, lambda: isinstance(app.screen, SettingsScreen))
        releaser.start()
        app.screen.query_one("#alert_bell").value = False  # the save starts
        await pilot.pause()
        await pilot.press("escape")  # the UI answers a key while the write is stuck
        await until(
            pilot,
            lambda: not isinstance(app.screen, SettingsScreen),
            what="the settings screen closed",
        )
        answered.set()
        await until(pilot, lambda: "written" in got, what="the write released")

    drive(app, scenario)
    releaser.join(PATIENCE * 2)
    assert got["timed_out"] is False, "the UI thread waited on the settings write"
    assert json.loads(got["written"])["alert_bell"] is False


def test_a_settings_write_that_fails_is_a_toast_and_the_cockpit_runs_on(
    home: Home, tmp_path: Path, monkeypatch
):
    blocker = tmp_path / "not-a-directory"
    blocker.write_text("a file where the config directory should be\n")
    monkeypatch.setenv("CAPTAIN_CONFIG_DIR", str(blocker / "captain"))
    app = Cockpit(home, run_doorbell=False)

    async def scenario(pilot):
        await pilot.press("s")
        await until(pilot, lambda: isinstance(app.screen, SettingsScreen))
        app.screen.query_one("#alert_bell").value = False
        await until(
            pilot,
            lambda: any("Settings not saved" in t for t in toasts(app)),
            what="the toast saying the settings were not saved",
        )
        assert app.settings.alert_bell is False  # the change holds for this cockpit
        await pilot.press("escape")
        await until(
            pilot,
            lambda: not isinstance(app.screen, SettingsScreen),
            what="the cockpit still answering",
        )

    drive(app, scenario)

"""A broken ``config.toml`` is said in the cockpit too: a toast, the file left as it is.

The CLI prints the store's reports on stderr; the cockpit learns of moved files from their
``quarantine/*.reason`` (tests/cockpit/test_app_live.py), and of what the store reports and
leaves in place (a config that does not parse) from its doorbell thread, which reads the
settings on every round (docs/store.md, "Settings").
"""

from __future__ import annotations

import pytest
from support.cockpit import drive, toasts, until

from captain_tui.cockpit.app import CaptainApp
from state.home import Home

pytestmark = pytest.mark.usefixtures("private_config")  # support/cockpit_env.py

BROKEN = "[ledger\nslots = 2\n"


def test_a_broken_config_is_a_toast_and_stays_where_it_is(home: Home):
    (home.root / "config.toml").write_text(BROKEN)
    app = CaptainApp(home)  # with its doorbell thread: a runner, which reads the settings

    async def scenario(pilot):
        said = await until(pilot, lambda: [t for t in toasts(app) if "config.toml" in t],
                           timeout=20, what="the config toast")
        assert "not valid TOML" in said[0]

    drive(app, scenario)
    assert (home.root / "config.toml").read_text() == BROKEN
    assert not (home.root / "quarantine").exists()

"""A broken ``config.toml`` is said in the cockpit too: a toast, the file left as it is.

The CLI prints the store's reports on stderr; the cockpit learns of moved files from their
``quarantine/*.reason`` (tests/cockpit/test_app_live.py), and of what the store reports and
leaves in place (a config that does not parse) from its doorbell thread, which reads the
settings on every round (docs/store.md, "Settings").
"""

from __future__ import annotations

import pytest
from support.cockpit import Cockpit, drive, toasts, until

from state.home import Home

pytestmark = pytest.mark.usefixtures("private_config")  # support/cockpit_env.py

BROKEN = "[ledger\nslots = 2\n"


def test_a_broken_config_is_a_toast_and_stays_where_it_is(home: Home):
    (home.root / "config.toml").write_text(BROKEN)
    app = Cockpit(home)  # with its doorbell thread: a runner, which reads the settings

    async def scenario(pilot):
        said = await until(
            pilot,
            lambda: [t for t in toasts(app) if "config.toml" in t],
            timeout=20,
            what="the config toast",
        )
        assert "not valid TOML" in said[0]

    drive(app, scenario)
    assert (home.root / "config.toml").read_text() == BROKEN
    assert not (home.root / "quarantine").exists()


def test_a_setting_out_of_range_is_a_toast_and_the_last_good_settings_stay(home: Home):
    """A running cockpit has good settings: an edit to ``slots = inf`` is said
    (``invalid_config``, the key) and the cockpit goes on with the ones it had."""
    import os

    from state.work import ledger

    path = home.root / "config.toml"
    path.write_text("[ledger]\nslots = 3\n")
    app = Cockpit(home)

    async def scenario(pilot):
        await until(
            pilot, lambda: ledger.slots(home) == 3, timeout=20, what="the good settings read"
        )
        path.write_text("[ledger]\nslots = inf\n")
        past = os.stat(path).st_mtime - 10
        os.utime(path, (past, past))  # still: believed at once
        said = await until(
            pilot,
            lambda: [t for t in toasts(app) if "invalid_config" in t],
            timeout=20,
            what="the invalid_config toast",
        )
        assert "[ledger] slots" in said[0]
        assert ledger.slots(app.home) == 3

    drive(app, scenario)
    assert path.read_text() == "[ledger]\nslots = inf\n"

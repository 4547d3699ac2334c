"""What names a home's ledger: ``CAPTAIN_LEDGER_URL``, else ``[ledger] url`` in its
``config.toml``, else nothing (the file home). The one rule of which source decides,
read without parsing a URL: ``state.work.location`` parses what is named, and a command
that needs only "is it the file home?" (``captain work list`` on plain records,
``state.crew_side.captain``) asks ``in_files`` here without importing it (its
dataclasses and URL parsing cost a captain's cold start ~10 ms).
"""

from __future__ import annotations

import os
from collections.abc import Mapping

from state.errors import CaptainError
from state.home import Home

ENV = "CAPTAIN_LEDGER_URL"


def named(home: Home, environ: Mapping[str, str] | None = None) -> tuple[str | None, object]:
    """``CAPTAIN_LEDGER_URL``'s value (an empty one is unset: None) and config.toml's
    ``[ledger]`` section where it decides (``ledger_section``)."""
    env = os.environ if environ is None else environ
    variable = env.get(ENV) or None
    return variable, ledger_section(home, variable)


def ledger_section(home: Home, variable: str | None) -> object:
    """config.toml's ``[ledger]`` section, where it decides the ledger (no
    ``CAPTAIN_LEDGER_URL``). A config.toml that exists but could not be read is refused
    (``invalid_config``) rather than read as "no url": its ``[ledger] url`` may name a
    database, and work written to the file home meanwhile would be missing from it."""
    if variable is None:
        problem = home.config_unusable()
        if problem is not None:
            raise CaptainError(
                "invalid_config",
                f"config.toml {problem}. Captain cannot tell which ledger this home uses (its "
                "[ledger] url may name a database), so it reads and writes no work items "
                f"until the file is fixed (or {ENV} names the ledger).",
            )
    return home.config().get("ledger")


def in_files(variable: str | None, section: object) -> bool:
    """Whether nothing names a ledger, so the home's own files hold it."""
    return not variable and not (isinstance(section, dict) and "url" in section)

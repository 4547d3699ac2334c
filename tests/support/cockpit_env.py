"""Where the cockpit under test runs: autouse fixtures, applied to every test of a module
that imports them (``from support.cockpit_env import private_config``).

Not a ``tests/cockpit/conftest.py``: a second module named ``conftest`` would shadow
``tests/conftest.py`` for every test module that does ``from conftest import ...``.
"""

from __future__ import annotations

from pathlib import Path

import pytest


@pytest.fixture(autouse=True)
def private_config(tmp_path: Path, monkeypatch):
    """Settings go to a temporary directory, never the real user config."""
    monkeypatch.setenv("CAPTAIN_CONFIG_DIR", str(tmp_path / "config"))


@pytest.fixture(autouse=True)
def plain_terminal(monkeypatch):
    """A plain terminal: not inside tmux, not a VTE one (so desktop notices are the OSC 9
    kind), ``TERM=xterm-256color``."""
    monkeypatch.delenv("TMUX", raising=False)
    monkeypatch.delenv("VTE_VERSION", raising=False)
    monkeypatch.setenv("TERM", "xterm-256color")

"""Where the cockpit under test runs: fixtures a cockpit test module applies to each of its
tests with ``pytestmark = pytest.mark.usefixtures("private_config", "plain_terminal")``
(tests/conftest.py registers this module with ``pytest_plugins``).

Not a ``tests/cockpit/conftest.py``: a second module named ``conftest`` would shadow
``tests/conftest.py`` for every test module that does ``from conftest import ...``.
"""

from __future__ import annotations

from pathlib import Path

import pytest


@pytest.fixture
def private_config(tmp_path: Path, monkeypatch):
    """Settings go to a temporary directory, never the real user config."""
    monkeypatch.setenv("CAPTAIN_CONFIG_DIR", str(tmp_path / "config"))


@pytest.fixture
def plain_terminal(monkeypatch):
    """A plain terminal: not inside tmux, not a VTE one (so desktop notices are the OSC 9
    kind), ``TERM=xterm-256color``."""
    monkeypatch.delenv("TMUX", raising=False)
    monkeypatch.delenv("VTE_VERSION", raising=False)
    monkeypatch.setenv("TERM", "xterm-256color")

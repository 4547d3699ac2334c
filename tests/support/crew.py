"""The crew protocol in tests, called directly (no CLI): recruiting, and a refusal checked
by its stable code. ``jack`` is a fixture for every module (tests/conftest.py registers this
module with ``pytest_plugins``); a module that needs another Jack (a real agent's) defines
its own, which wins.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from state.crew import protocol
from state.errors import CaptainError
from state.home import Home

EDITOR = {"owns": ["src"], "allow": ["edit", "read"]}  # a crew that may edit src/


def hire(home: Home, project: Path, name: str = "Jack", task: str = "Do the thing", **kw):
    """Recruit ``name`` in ``project`` (``protocol.recruit``; ``kw`` as it takes them)."""
    kw.setdefault("cwd", str(project))
    return protocol.recruit(home, name, task, **kw)


def refused(code: str, fn, *args, **kwargs) -> CaptainError:
    """``fn(*args, **kwargs)`` raises a CaptainError with ``code``; returns it."""
    with pytest.raises(CaptainError) as info:
        fn(*args, **kwargs)
    assert info.value.code == code, f"expected {code}, got {info.value.code}: {info.value}"
    return info.value


@pytest.fixture
def jack(home: Home, project: Path):
    """Jack, recruited to write the docs in the test's project."""
    return hire(home, project, "Jack", "Write the docs")

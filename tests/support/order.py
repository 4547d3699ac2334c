"""The order CI's two workers take the test files in: the longest first.

With ``-n 2 --dist loadfile`` each file runs whole on one worker, and a worker takes the
next file when it is almost done with its own. pytest-xdist's default order (the files
with the most tests first) sends the files with a few long tests — the stress runs, the
state machines, the real agent CLIs — last, where one of them can keep one worker busy for
minutes after the other has run out of files. So pyproject's addopts say
``--no-loadscope-reorder``, and this plugin (registered in tests/conftest.py) moves the
files below to the front, longest first (measured with ``--durations=0``; README's
"Set up" says how). Every other file keeps its collection order
after them; the tests inside a file keep theirs.
"""

from __future__ import annotations

# the slowest files, longest first (seconds of one worker's time, measured 2026-12-01)
LONGEST_FIRST = (
    "tests/stress/test_stress.py",
    "tests/state/test_ledger_machine.py",
)


def pytest_collection_modifyitems(session, config, items) -> None:
    rank = {path: i for i, path in enumerate(LONGEST_FIRST)}
    last = len(LONGEST_FIRST)
    items.sort(key=lambda item: rank.get(item.nodeid.split("::", 1)[0], last))  # stable

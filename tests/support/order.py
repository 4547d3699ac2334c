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

# the slowest files, longest first: seconds of one worker's time in a whole run with
# --durations=0 on 2 shared cores (2026-12-01; what matters is the order, not the figures)
LONGEST_FIRST = (
    "tests/state/test_ledger_crash.py",  # 439 s
    "tests/api/test_api.py",  # 213 s
    "tests/stress/test_stress.py",  # 197 s (fixed chaos times: README's stress summaries)
    "tests/runtime/test_doorbell_tmux.py",  # 129 s
    "tests/state/test_ledger_machine.py",  # 126 s
    "tests/cockpit/test_app_actions.py",  # 97 s
    "tests/cli/test_stdin_and_args.py",  # 93 s
    "tests/cli/test_cli_fuzz.py",  # 92 s
    "tests/cli/test_cli.py",  # 86 s
    "tests/api/test_api_schema.py",  # 82 s
    "tests/state/test_crew_fast.py",  # 69 s
    "tests/cockpit/test_app_work.py",  # 64 s
    "tests/runtime/test_ledger_tmux.py",  # 64 s
    "tests/cli/test_read_only_home.py",  # 57 s
    "tests/cli/test_ledger_cli.py",  # ~50 s since its calls run in process (232 s before)
)


def pytest_collection_modifyitems(session, config, items) -> None:
    rank = {path: i for i, path in enumerate(LONGEST_FIRST)}
    last = len(LONGEST_FIRST)
    items.sort(key=lambda item: rank.get(item.nodeid.split("::", 1)[0], last))  # stable

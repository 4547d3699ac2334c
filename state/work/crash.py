"""Crash points: a mutation dies, for real, between two of its writes when a test asks.

``CAPTAIN_LEDGER_CRASH`` names a step (``accepted:after-input``, ``dismiss:after-crew``, ...);
the process that reaches it SIGKILLs itself there, so the crash tests see exactly what a
power cut at that point would leave. Every call site is a plain string literal so the crash
tests can list them from the sources.
"""

from __future__ import annotations

import os
import signal

CRASH_ENV = "CAPTAIN_LEDGER_CRASH"


def crash_point(step: str) -> None:
    """Die between two writes of a mutation when the crash tests select this step."""
    if os.environ.get(CRASH_ENV) == step:
        os.kill(os.getpid(), signal.SIGKILL)


def crash_armed() -> bool:
    """Whether a crash test selected a step in this process (a write made in one statement
    then passes its crash points before its COMMIT: ``state.work.ledger``)."""
    return bool(os.environ.get(CRASH_ENV))

"""The real CLI in tests: ``Run``, the ``cli`` fixture checked on every call, and reading
its answers: one success, one refusal, each checked whole.

Each test module's ``run`` fixture is ``Run(cli, ...)``. (Not one fixture in a
``tests/cli/conftest.py``: a second module named ``conftest`` would shadow
``tests/conftest.py`` for every test module that does ``from conftest import ...``.)
"""

from __future__ import annotations

import json
from concurrent.futures import ThreadPoolExecutor

from state.errors import CODES


def ok(result) -> dict:
    """Exit 0 and one ``{"ok": true, ...}`` object on stdout; returns it."""
    assert result.code == 0, (result.code, result.out[:2000], result.err[:2000])
    payload = json.loads(result.out)
    assert payload.get("ok") is True, payload
    return payload


def ok_clean(result) -> dict:
    """``ok``, and no traceback on stderr either (a warning may be there)."""
    assert "Traceback" not in result.err, result.err
    return ok(result)


def refused(result, code: str) -> dict:
    """Exit 1 and stdout exactly ``{"ok": false, "error": {"code", "message", ...}}`` with
    ``code`` (a stable one) and a sentence; returns the error."""
    assert result.code == 1, (result.code, result.out[:2000], result.err[:2000])
    payload = json.loads(result.out)
    assert set(payload) == {"ok", "error"} and payload["ok"] is False, payload
    error = payload["error"]
    assert isinstance(error, dict) and error["code"] == code, error
    assert code in CODES, code
    assert isinstance(error["message"], str) and error["message"].strip(), error
    return error


class Run:
    """The ``cli`` fixture (tests/conftest.py), asserting on every call that no traceback
    reached a person and, unless ``any_exit``, that the exit code is 0, 1 or 2; with
    ``no_warnings``, also that nothing was quarantined or left behind (no warning)."""

    def __init__(self, cli, *, any_exit: bool = False, no_warnings: bool = False) -> None:
        self.cli = cli
        self.home = cli.home
        self.any_exit = any_exit
        self.no_warnings = no_warnings

    def __call__(self, *args: str, env: dict[str, str] | None = None,
                 stdin: str | None = None, timeout: float = 60):
        result = self.cli(*args, env=env, stdin=stdin, timeout=timeout)
        assert "Traceback" not in result.err, result.err
        assert "Traceback" not in result.out, result.out
        if self.no_warnings:
            assert "warning" not in result.err, result.err
        if not self.any_exit:
            assert result.code in (0, 1, 2), (result.code, result.err)
        return result

    def many(self, *jobs):
        """Independent, read-only-or-refused calls, two at a time (this box has 2 cores).
        A job is the arguments, or ``(arguments, env)``."""
        jobs = [(job, None) if isinstance(job[0], str) else job for job in jobs]
        with ThreadPoolExecutor(max_workers=2) as pool:
            return list(pool.map(lambda job: self(*job[0], env=job[1]), jobs))

"""The real CLI in tests: ``Run``, the ``cli`` fixture checked on every call, and reading
its answers: one success, one refusal, each checked whole.

Each test module's ``run`` fixture is ``runner(request, cli, ...)``: ``Run`` calling
``main(argv)`` in this process (``InProcess``), a real process per call for the few tests
marked ``IN_A_PROCESS``. (Not one fixture in a
``tests/cli/conftest.py``: a second module named ``conftest`` would shadow
``tests/conftest.py`` for every test module that does ``from conftest import ...``.)
"""

from __future__ import annotations

import json
import re
import sys
from concurrent.futures import ThreadPoolExecutor

import pytest

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


REFUSAL_LINE = re.compile(r"^captain: \[([a-z_]+)\] \S")


def refused_human(result, code: str, *, quiet: bool = True) -> str:
    """Exit 1, nothing on stdout (unless not ``quiet``: a refusal that hands over what it is
    about, like ``done`` with unread mail), and a ``captain: [code] message`` line on stderr
    (the first such line: a warning may come before it); returns the message."""
    assert result.code == 1, (result.code, result.out[:2000], result.err[:2000])
    if quiet:
        assert result.out == "", result.out[:2000]
    lines = [line for line in result.err.splitlines() if line.startswith("captain: [")]
    assert lines, result.err
    match = REFUSAL_LINE.match(lines[0])
    assert match and match.group(1) == code, lines[0]
    assert code in CODES, code
    return lines[0][len(f"captain: [{code}] ") :]


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

    def __call__(
        self,
        *args: str,
        env: dict[str, str] | None = None,
        stdin: str | None = None,
        timeout: float = 60,
    ):
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
        if getattr(self.cli, "in_process", False):  # one process's env, cwd and streams
            return [self(*job[0], env=job[1]) for job in jobs]
        with ThreadPoolExecutor(max_workers=2) as pool:
            return list(pool.map(lambda job: self(*job[0], env=job[1]), jobs))


# -- the CLI in this process ----------------------------------------------------------------

# A CLI test marked so runs every call as a real ``python -m captain_tui`` (``runner``).
IN_A_PROCESS = pytest.mark.in_a_process


def runner(request, cli, **checks) -> Run:
    """A CLI test module's ``run`` fixture: ``Run`` over ``InProcess(cli)``, or over the real
    ``cli`` for a test marked ``IN_A_PROCESS`` (each CLI test file keeps a few of those, so
    the entry point and what only a process has are exercised too)."""
    real = request.node.get_closest_marker("in_a_process") is not None
    return Run(cli if real else InProcess(cli), **checks)


class InProcess:
    """The ``cli`` fixture's ``Cli`` (tests/conftest.py), but calling
    ``captain_tui.cli.main.main(argv)`` in this process instead of starting a Python per call
    (which costs ~0.3 s of a 2-core box each): same arguments, same result, and as near as a
    process can make it the same world as a fresh ``python -m captain_tui``:

    - the environment is exactly ``Cli.env()`` (the developer's ``CAPTAIN_*`` dropped, the
      home, the test's ledger URL, the call's ``env``) for the call, then restored;
    - the working directory is the project's for the call, then restored;
    - stdin is the call's text (empty when none: a subprocess here would have read the
      worker's own); stdout and stderr are fresh UTF-8 streams, strict like a pipe's;
    - what the process remembers between calls is forgotten first: the store's pending
      reports (kept for the test and put back afterwards); the PostgreSQL connections a
      call opened are closed after it (a process that ends closes them).

    Calls run one at a time (``Run.many`` runs them in order here): the environment, the
    working directory and the standard streams are the process's own. What only a real
    process shows (the entry point, ``-m captain_tui``, exit codes through ``sys.exit``, a
    crew's PATH) keeps a few subprocess smoke tests in each CLI test file.
    """

    in_process = True

    def __init__(self, cli) -> None:
        self.cli = cli
        self.home = cli.home
        self.cwd = cli.cwd

    def env(self, extra: dict[str, str] | None = None) -> dict[str, str]:
        return self.cli.env(extra)

    def __call__(
        self,
        *args: str,
        env: dict[str, str] | None = None,
        timeout: float = 60,
        stdin: str | None = None,
    ):
        import io
        import os
        from contextlib import redirect_stderr, redirect_stdout

        from conftest import Result

        from captain_tui.cli.main import main

        wanted = self.env(env)
        saved_env = dict(os.environ)
        saved_cwd = os.getcwd()
        saved_stdin = sys.stdin
        out_b, err_b = io.BytesIO(), io.BytesIO()
        out = io.TextIOWrapper(out_b, encoding="utf-8", errors="strict", write_through=True)
        err = io.TextIOWrapper(err_b, encoding="utf-8", errors="strict", write_through=True)
        try:
            os.environ.clear()
            os.environ.update(wanted)
            os.chdir(self.cwd)
            sys.stdin = io.TextIOWrapper(io.BytesIO((stdin or "").encode()), encoding="utf-8")
            with redirect_stdout(out), redirect_stderr(err):
                try:
                    code = main(list(args))
                except SystemExit as exc:  # argparse: usage errors, --help, --version
                    code = exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 1)
                out.flush()
                err.flush()
        finally:
            sys.stdin = saved_stdin
            os.chdir(saved_cwd)
            os.environ.clear()
            os.environ.update(saved_env)
        return Result(code, out_b.getvalue().decode("utf-8"), err_b.getvalue().decode("utf-8"))


def invoke(*argv: str) -> tuple[int, dict | None, str]:
    """``main(argv)`` in this process: the exit code, stdout read as one JSON object (None
    when empty) and stderr. For tests that set the environment themselves (``InProcess``
    gives each call a fresh process's world instead)."""
    import io
    from contextlib import redirect_stderr, redirect_stdout

    from captain_tui.cli.main import main

    out_b, err_b = io.BytesIO(), io.BytesIO()
    out = io.TextIOWrapper(out_b, encoding="utf-8", write_through=True)
    err = io.TextIOWrapper(err_b, encoding="utf-8", write_through=True)
    with redirect_stdout(out), redirect_stderr(err):
        try:
            code = main(list(argv))
        except SystemExit as exc:
            code = exc.code
    text = out_b.getvalue().decode()
    return code, json.loads(text) if text.strip() else None, err_b.getvalue().decode()

"""Every part of ``python -m bench`` runs in its smallest mode (``--smoke``) and produces
its numbers, so a refactor cannot break a bench script silently; and a part that cannot
run says why in its row, in one sentence, while the others still run.

The parts run the way a person runs them (``python -m bench --smoke --only PART``), all
at once (each waits far more than it computes), in throwaway homes and on private tmux
sockets (each script makes its own); the ledger parts use the tests' PostgreSQL server
(``CAPTAIN_BENCH_PG_URL``: tests/support/postgres.py).
"""

from __future__ import annotations

import json
import math
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
from support import postgres

REPO = Path(__file__).resolve().parents[1]
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))

from bench.__main__ import FAILED, NOT_RUN, SUITE  # noqa: E402

PARTS = [part[0] for part in SUITE]
LEDGER_PARTS = ("ledger claims", "ledger wake-ups")
TIMEOUT = 240  # seconds for one part's smoke run, on a busy machine (seconds when idle)


def _env(tmp: Path, **extra: str) -> dict[str, str]:
    env = {
        k: v
        for k, v in os.environ.items()
        if k not in ("CAPTAIN_LEDGER_URL", "CAPTAIN_BENCH_PG_URL", "TMUX")
    }
    env["CAPTAIN_HOME"] = str(tmp / "home")  # each script makes its own; never the user's
    return {**env, **extra}


def _bench(argv: list[str], env: dict[str, str], out: Path) -> subprocess.Popen:
    return subprocess.Popen(
        [sys.executable, "-m", "bench", *argv, "--out", str(out)],
        cwd=REPO,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


@pytest.fixture(scope="module")
def smoke_runs(request, tmp_path_factory):
    """Every part's ``python -m bench --smoke --only PART``, started together: part ->
    (the process, its JSON path). The ledger parts only when a PostgreSQL server can be
    had (their tests then ask for it again, and skip or fail with the reason)."""
    tmp = tmp_path_factory.mktemp("bench-smoke")
    pg_url = None
    if postgres.why_not() is None:
        try:
            pg_url = postgres.server(request.config).admin_url
        except (pytest.skip.Exception, pytest.fail.Exception):
            pg_url = None
    runs = {}
    for i, part in enumerate(PARTS):
        if part in LEDGER_PARTS and pg_url is None:
            continue
        extra = {"CAPTAIN_BENCH_PG_URL": pg_url} if part in LEDGER_PARTS else {}
        out = tmp / f"part-{i}.json"
        runs[part] = (_bench(["--smoke", "--only", part], _env(tmp, **extra), out), out)
    yield runs
    for proc, _ in runs.values():
        if proc.poll() is None:
            proc.kill()
        proc.communicate()


def _numbers(row: dict) -> list[float]:
    """Every number a row holds: its numeric fields and the figures in its text."""
    found = [
        float(v) for k, v in row.items() if isinstance(v, (int, float)) and not isinstance(v, bool)
    ]
    for text in (row.get("measured", ""),):
        found += [float(x) for x in re.findall(r"-?\d+(?:\.\d+)?", text)]
        found += [math.nan for _ in re.findall(r"\bnan\b", text, re.IGNORECASE)]
        found += [math.inf for _ in re.findall(r"\binf\b", text, re.IGNORECASE)]
    return found


@pytest.mark.parametrize("part", PARTS)
def test_each_bench_part_runs_in_smoke_mode_and_produces_finite_numbers(smoke_runs, part):
    if part in LEDGER_PARTS and part not in smoke_runs:
        postgres.server()  # skips (or, with CAPTAIN_TEST_PG_REQUIRED=1, fails) with why
    proc, out = smoke_runs[part]
    try:
        stdout, stderr = proc.communicate(timeout=TIMEOUT)
    except subprocess.TimeoutExpired:
        proc.kill()
        stdout, stderr = proc.communicate()
        pytest.fail(f"{part}: no answer within {TIMEOUT} s\n{stderr[-3000:]}")
    assert "Traceback" not in stdout, stdout
    (section,) = json.loads(out.read_text())["sections"]
    rows = section["rows"]
    if part == "agent doorbell" and all(r["verdict"] == NOT_RUN for r in rows):
        # the live tests skip the same way when .ci/install-agents found no npm
        pytest.skip("; ".join(r["measured"] for r in rows))
    detail = f"{part}: {json.dumps(rows, indent=1)}\n{section['stderr'][-3000:]}"
    assert proc.returncode == 0, detail
    assert section["ran"] and section["exit"] in (0, 1), detail  # 1: a budget missed
    assert rows, detail
    for row in rows:
        assert row["verdict"] not in (NOT_RUN, FAILED), detail
        numbers = _numbers(row)
        assert numbers and all(math.isfinite(x) for x in numbers), detail


def _finished_rows(smoke_runs, part: str) -> list[dict]:
    """A part's rows from its JSON, once its smoke run has ended (the test above reads its
    output; here the process is only waited for)."""
    proc, out = smoke_runs[part]
    if proc.poll() is None:
        proc.communicate(timeout=TIMEOUT)
    (section,) = json.loads(out.read_text())["sections"]
    return section["rows"]


def test_the_idle_cockpit_is_one_measurement_judged_against_one_budget(smoke_runs):
    """One fact, one measurement: the idle cockpit's rows come from bench/cockpit_idle.py
    (by process and by thread) and from nowhere else, but the cockpit part's row with every
    crew holding an approval request open (which no other row measures), and every one is
    judged against the same budget, cockpit_idle.BUDGET (docs/design.md: <= 1 %)."""
    from bench.cockpit_idle import BUDGET

    idle_rows = {
        part: [r for r in _finished_rows(smoke_runs, part) if r["what"].startswith("cockpit idle")]
        for part in ("cockpit", "cockpit idle")
    }
    (held,) = idle_rows["cockpit"]  # the no-panes and live-panes rows are cockpit_idle's now
    assert "holding an approval request open" in held["what"], held
    assert "by thread" in idle_rows["cockpit idle"][1]["measured"], idle_rows["cockpit idle"]
    for row in (held, idle_rows["cockpit idle"][0]):
        assert row["budget"] == f"<= {BUDGET:g} %", row
        assert "watcher process" in row["measured"] and "tmux clients" in row["measured"], row


def test_a_part_that_cannot_run_or_crashes_says_why_in_its_row_and_the_next_still_runs(tmp_path):
    """No tmux on PATH: the doorbell part cannot run; a PostgreSQL URL nobody listens on:
    the wake-ups part crashes. Each gets one row with one sentence, no traceback; the
    second runs although the first could not; the exit code says not all ran."""
    bin_dir = tmp_path / "bin"  # a PATH with this Python and nothing else (no tmux)
    bin_dir.mkdir()
    (bin_dir / "python3").symlink_to(sys.executable)
    env = _env(
        tmp_path,
        PATH=str(bin_dir),
        CAPTAIN_BENCH_PG_URL="postgresql://nobody@127.0.0.1:9/none?connect_timeout=5",
    )
    out = tmp_path / "results.json"
    proc = _bench(["--smoke", "--only", "doorbell and wait", "--only", "ledger wake-ups"], env, out)
    stdout, stderr = proc.communicate(timeout=TIMEOUT)
    assert proc.returncode == 1, stdout + stderr
    assert "Traceback" not in stdout, stdout
    sections = {s["name"]: s for s in json.loads(out.read_text())["sections"]}
    assert list(sections) == ["doorbell and wait", "ledger wake-ups"], stdout
    (door,) = sections["doorbell and wait"]["rows"]
    assert door["verdict"] == NOT_RUN, door
    assert door["measured"].startswith("cannot run here: tmux is not installed"), door
    (wake,) = sections["ledger wake-ups"]["rows"]
    assert wake["verdict"] == FAILED, wake
    assert wake["measured"].startswith(
        "crashed (exit 1): psycopg.OperationalError: connection failed"
    ), wake
    assert "\n" not in wake["measured"], wake
    assert "Traceback" not in wake["measured"] and 'File "' not in wake["measured"], wake
    for row in (door, wake):
        assert f"| {row['what']} | {row['measured']} |" in stdout, stdout
    assert "Did not run: doorbell and wait, ledger wake-ups" in stdout, stdout

"""A killed test run leaves no PostgreSQL server behind for long: the next run that needs
one stops and removes every throwaway cluster whose run is gone (tests/support/postgres.py,
``reap_orphans``), and never one whose run is alive."""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pytest
from support.postgres import reap_orphans, server_bindir

TESTS = Path(__file__).resolve().parents[1]

CHILD = """
import sys, time
from support.postgres import Cluster, server_bindir
cluster = Cluster(server_bindir()).start()
print(cluster.root, flush=True)
time.sleep(600)
"""


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return True


@pytest.fixture
def tmp_path():
    """A directory of its own under the system's temporary one: the server's own user
    (postgres, when we are root) must reach it, and pytest's are private to us."""
    made = Path(tempfile.mkdtemp(prefix="captain-reaper-"))
    os.chmod(made, 0o755)
    yield made
    shutil.rmtree(made, ignore_errors=True)


def test_a_killed_runs_cluster_is_stopped_and_removed_and_a_live_ones_never(tmp_path):
    bindir = server_bindir()
    if bindir is None:
        pytest.skip("no PostgreSQL server binaries here")
    env = {**os.environ, "PYTHONPATH": str(TESTS), "TMPDIR": str(tmp_path)}
    run = subprocess.Popen(
        [sys.executable, "-c", CHILD], stdout=subprocess.PIPE, text=True, env=env, cwd=TESTS
    )
    try:
        assert run.stdout is not None
        root = Path(run.stdout.readline().strip())
        assert root.parent == tmp_path, root
        postmaster = int((root / "data" / "postmaster.pid").read_text().split()[0])
        assert reap_orphans(bindir, str(tmp_path)) == []  # its run is alive: untouched
        assert _alive(postmaster) and root.exists()
    finally:
        run.send_signal(signal.SIGKILL)  # as a CI timeout would: no atexit runs
        run.wait()
    assert _alive(postmaster), "the server outlived its run (what the reaper is for)"
    assert reap_orphans(bindir, str(tmp_path)) == [root]
    deadline = time.monotonic() + 30
    while _alive(postmaster):
        assert time.monotonic() < deadline, "the orphaned server was not stopped"
        time.sleep(0.05)
    assert not root.exists()

"""Settings that parse but do not fit are ``invalid_config``, and nothing is half-done.

The issue: ``[ledger] lease_seconds = inf`` (or ``1e300``, or ``slots = inf``) made
``captain crew`` fail with ``internal_error`` (an OverflowError) *after* the crew was
recorded, so the recruit reported failure while ``status`` listed the crew; ``nan``,
``true`` and ``1.5`` were quietly replaced by a default the person never asked for. The
rule (``state/config.py``, one table of every key, checked whole in ``Home.config``): a
value of the wrong type or range is refused with ``invalid_config`` naming the key and
what it takes, before any command writes anything; a key captain does not know is a
warning; a process that already has good settings (``serve``, the cockpit) keeps them.

Through the real CLI's ``main()``, in process (each call is a fresh ``Home``, as a command
is), on a real home.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from support.cli import invoke

from state import config
from state.home import Home

REPO = Path(__file__).resolve().parents[2]

BAD_NUMBERS = [
    "inf",
    "-inf",
    "nan",
    "1e400",
    "-1",
    "1e300",
    str(10**30),
    "true",
    '"8"',
    "[1]",
    "{ a = 1 }",
    "1979-05-27",
]
# (table line, key, values that must be refused besides BAD_NUMBERS' that do not fit)
NUMERIC = [
    ("[ledger]", "slots", ["0", "1.5", "10001"]),
    ("[ledger]", "lease_seconds", ["0.5", "86401"]),
    ("[crew]", "wait_timeout", ["315360001"]),
    ("[crew]", "budget_usd", ["0", "0.001", "1000001"]),  # docs/budgets.md
    ("[endpoints.gh]", "retention_days", ["3651"]),
    ("[endpoints.gh]", "max_attempts", ["0", "21", "2.0"]),
]
OTHER = [
    ("[endpoints.gh]", "routine", ['"yes"', "1"]),
    ("[endpoints.gh]", "signature", ['"captian"', "true"]),
    ("[endpoints.gh]", "events", ['"push"', "[1]"]),
    ("[endpoints.gh]", "secret", ["123"]),
    ("[ledger]", "url", ["5"]),
    ("[crew]", "pi_approval_tools", ['"bash"', "[1]", '["rm -rf"]', '[""]', "true", "[[]]"]),
]  # url's own code: state/work/location.py


@pytest.fixture
def world(tmp_path: Path):
    root = tmp_path / "home"
    Home(root)
    project = tmp_path / "project"
    project.mkdir()
    return root, project


def write(root: Path, text: str) -> None:
    (root / "config.toml").write_text(text)


def recruit(root: Path, project: Path, name: str = "Jack", *extra: str):
    return invoke(
        "crew",
        name,
        "--task",
        "t",
        "--no-launch",
        "--cwd",
        str(project),
        "--home",
        str(root),
        "--json",
        *extra,
    )


def nothing_recorded(root: Path, *, status: bool = True) -> None:
    """No crew, no work item, no mail: the refused command wrote nothing."""
    for folder in ("crew", "work", "mail"):
        entries = (
            [n for n in os.listdir(root / folder) if not n.startswith(".")]
            if (root / folder).exists()
            else []
        )
        assert entries == [], f"{folder}/ holds {entries} after a refusal"
    if status:
        code, shown, _ = invoke("status", "--home", str(root), "--json")
        # status still answers: no crew; a setting it cannot use fails it (exit 1, the code)
        assert shown["crew"] == [], shown
        assert code == 0 or (
            code == 1 and shown["error"]["code"] in ("invalid_config", "invalid_ledger_url")
        ), shown


def refused_invalid_config(result, key: str) -> str:
    code, payload, err = result
    assert code == 1 and payload and payload["ok"] is False, result
    assert payload["error"]["code"] == "invalid_config", payload
    message = payload["error"]["message"]
    assert key in message and "it takes" in message, message
    assert "Traceback" not in err
    return message


@pytest.mark.parametrize(
    "table, key, values", [(t, k, BAD_NUMBERS + extra) for t, k, extra in NUMERIC] + OTHER
)
def test_a_value_that_does_not_fit_refuses_the_recruit_and_records_nothing(
    world, table, key, values
):
    root, project = world
    for value in values:
        write(root, f"{table}\n{key} = {value}\n")
        result = recruit(root, project)
        if key == "url":
            assert result[0] == 1 and result[1]["error"]["code"] == "invalid_ledger_url", result
        else:
            message = refused_invalid_config(result, f"{table[:-1]}] {key}")
            assert config.SETTINGS.get(table.strip("[]"), config.ENDPOINT)[key].takes() in message
        nothing_recorded(root, status=False)
        assert (root / "config.toml").read_text() == f"{table}\n{key} = {value}\n"
    nothing_recorded(root)


def test_every_command_that_reads_settings_refuses_the_same_way(world):
    """``lease_seconds = inf`` was an OverflowError in every claim; now each command says
    the one key."""
    root, project = world
    write(root, "[ledger]\nlease_seconds = inf\n")
    home = ("--home", str(root), "--json")
    for argv in (
        ("work", "submit", "--text", "x"),
        ("work", "claim"),
        ("work", "list"),
        ("wait", "--all"),
        ("tokens", "list"),
        ("deliveries", "purge"),
    ):
        refused_invalid_config(invoke(*argv, *home), "[ledger] lease_seconds")
    nothing_recorded(root)


def test_serve_and_the_cockpit_refuse_to_start_on_it(world):
    """Neither has good settings to keep yet: each says the key and exits, before a port
    is bound or the screen taken (a real process for serve, with a deadline)."""
    root, _ = world
    write(root, "[ledger]\nslots = 1e400\n")
    env = {k: v for k, v in os.environ.items() if not k.startswith("CAPTAIN_")}
    served = subprocess.run(
        [
            sys.executable,
            "-m",
            "captain_tui",
            "serve",
            "--port",
            "0",
            "--home",
            str(root),
            "--json",
        ],
        capture_output=True,
        text=True,
        timeout=30,
        env={**env, "PYTHONPATH": str(REPO)},
    )
    assert served.returncode == 1, served
    assert json.loads(served.stdout)["error"]["code"] == "invalid_config", served
    code, _, err = invoke("--home", str(root))  # the cockpit
    assert code == 1 and "[invalid_config] [ledger] slots" in err, err


def test_the_bounds_themselves_are_accepted(world):
    root, project = world
    write(
        root,
        "[ledger]\nslots = 10000\nlease_seconds = 86400\n[crew]\nwait_timeout = 0\n"
        "[endpoints.gh]\nretention_days = 3650\nmax_attempts = 20\nroutine = true\n"
        'signature = "captain"\nevents = []\nsecret = ""\n',
    )
    code, payload, err = recruit(root, project)
    assert code == 0 and payload["ok"] and not payload["queued"], (payload, err)
    assert "warning" not in err, err
    code, payload, err = invoke("work", "show", payload["work_id"], "--home", str(root), "--json")
    assert code == 0 and payload["item"]["state"] == "running", payload


def test_an_unknown_key_is_a_warning_and_the_command_runs(world):
    root, project = world
    write(root, "[ledger]\nslot = 3\n[review]\nx = 1\n")
    code, payload, err = recruit(root, project)
    assert code == 0 and payload["ok"], payload
    assert "does not know" in err and "[ledger] slot" in err and "[review]" in err, err


def test_a_running_process_keeps_its_last_good_settings_and_says_why(tmp_path):
    """``serve`` and the cockpit never stop over an edit: the refusal is a warning there."""
    home = Home(tmp_path / "home")
    path = home.root / "config.toml"
    path.write_text("[ledger]\nslots = 3\n")
    assert home.setting("ledger", "slots") == 3
    path.write_text("[ledger]\nslots = inf\n")
    past = os.stat(path).st_mtime - 10
    os.utime(path, (past, past))  # still: believed at once
    assert home.setting("ledger", "slots") == 3 and home.setting("ledger", "slots") == 3
    warned = home.store.reports.warnings()
    assert len(warned) == 1 and "[invalid_config] [ledger] slots" in warned[0][1], warned
    assert "last good settings are kept" in warned[0][1]


NUMBERS = st.one_of(
    st.floats(allow_nan=True, allow_infinity=True),
    st.integers(min_value=-(10**40), max_value=10**40),
    st.booleans(),
)


@settings(
    max_examples=12,
    derandomize=True,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture],
)
@given(where=st.sampled_from([(t, k) for t, k, _ in NUMERIC]), number=NUMBERS)
def test_any_number_either_works_or_is_invalid_config_and_nothing_is_half_done(
    tmp_path_factory, where, number
):
    root = tmp_path_factory.mktemp("h") / "home"
    Home(root)
    project = root.parent / "p"
    project.mkdir()
    table, key = where
    shown = "true" if number is True else "false" if number is False else repr(number)
    write(root, f"{table}\n{key} = {shown}\n")
    code, payload, err = recruit(root, project)
    assert "Traceback" not in err
    fits = config.SETTINGS.get(table.strip("[]"), config.ENDPOINT)[key].fits(number)
    if fits:
        assert code == 0 and payload["ok"], (shown, payload)
    else:
        refused_invalid_config((code, payload, err), key)
        nothing_recorded(root)

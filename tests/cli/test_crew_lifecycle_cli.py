"""#14 §2 and §4 through the real CLI: a --no-launch crew's lease, captain-side inbox,
``--version``, ``hook --help`` and where ``status`` says the home is.

Every call is ``main(argv)`` in this process (``support.cli.InProcess``; ``python -m
captain_tui`` for ``IN_A_PROCESS``) on a tmp_path home; crews that are launched open in
the private tmux server tests/conftest.py sets up.
"""

from __future__ import annotations

import subprocess
import sys
import time

import pytest
from support.cli import IN_A_PROCESS, ok, refused, runner


@pytest.fixture
def run(request, cli):
    return runner(request, cli, any_exit=True)


def show(run, work_id: str) -> dict:
    return ok(run("work", "show", work_id, "--json"))["item"]


def poll(what, check, deadline: float = 45.0):
    """Call ``what`` until ``check`` holds for its answer; fail at the deadline."""
    end = time.monotonic() + deadline
    while True:
        value = what()
        if check(value):
            return value
        assert time.monotonic() < end, f"still not there after {deadline}s: {value}"
        time.sleep(0.2)


# -- a --no-launch crew is held by its external holder ------------------------------------------


def test_a_no_launch_crew_outlives_its_lease_while_a_runner_is_alive(run, cli, tmp_path):
    chat = ok(run("work", "submit", "--text", "a chat task", "--json"))["item"]  # a home
    (cli.home / "config.toml").write_text("[ledger]\nlease_seconds = 1\n")
    log = (tmp_path / "watch.out").open("w")
    watch = subprocess.Popen(
        [sys.executable, "-m", "captain_tui", "watch"],
        cwd=cli.cwd,
        env=cli.env(),
        stdout=log,
        stderr=subprocess.STDOUT,
    )
    try:
        outside = ok(
            run(
                "crew",
                "Nolan",
                "--task",
                "started elsewhere",
                "--owns",
                "src/n",
                "--allow",
                "edit",
                "--no-launch",
                "--json",
            )
        )
        launched = ok(
            run(
                "crew",
                "Jack",
                "--task",
                "in a pane",
                "--owns",
                "src/j",
                "--allow",
                "edit",
                "--json",
            )
        )
        # the control: a worker's claim with no locator, taken after both crews' claims,
        # so once it is decided every earlier lease was past too when the runner looked
        ok(run("work", "claim", chat["work_id"], "--holder", "worker-a", "--json"))

        control = poll(
            lambda: show(run, chat["work_id"]), lambda item: item["state"] == "needs_reconciliation"
        )
        assert control["attempts"][-1]["lease_holder"] == "worker-a"

        item = show(run, outside["work_id"])
        assert item["state"] == "running", item
        attempt = item["attempts"][-1]
        assert attempt["lease_holder"] == "external" and attempt["runtime_locator"] is None
        assert watch.poll() is None  # the runner was alive the whole time

        # a launched crew is unchanged: held by captain, its pane seen alive, its lease renewed
        pane_item = poll(
            lambda: show(run, launched["work_id"]),
            lambda i: i["attempts"][-1]["heartbeat_at"] is not None,
        )
        assert pane_item["state"] == "running"
        assert pane_item["attempts"][-1]["runtime_locator"] is not None

        # the external attempt ends by its own report: the crew reads its mail, then done
        env = outside["env"]
        assert run("inbox", "Nolan", "--json", env=env).code == 0
        ok(run("done", "Nolan", "--report", "did it", "--json", env=env))
        assert show(run, outside["work_id"])["state"] == "succeeded"
    finally:
        watch.terminate()
        watch.wait(timeout=30)
        log.close()
        run("dismiss", "Jack", "--json")


def test_no_worker_may_claim_as_the_external_holder(run):
    chat = ok(run("work", "submit", "--text", "a chat task", "--json"))["item"]
    err = refused(
        run("work", "claim", chat["work_id"], "--holder", "external", "--json"), "invalid_argument"
    )
    assert "reserved" in err["message"]
    assert show(run, chat["work_id"])["state"] == "queued"


# -- captain-side inbox is a peek ---------------------------------------------------------------


def test_captain_side_inbox_is_a_peek_and_the_crew_still_writes_receipts(run):
    r = ok(
        run(
            "crew",
            "Jack",
            "--task",
            "the task text",
            "--owns",
            "src",
            "--allow",
            "edit",
            "--no-launch",
            "--json",
        )
    )
    receipts = run.cli.home / "receipts" / "jack"

    peek = ok(run("inbox", "Jack", "--json"))  # the captain's own shell: no CAPTAIN_ROLE
    assert peek["peek"] is True
    assert [m["text"] for m in peek["messages"]] == ["the task text"]
    human = run("inbox", "Jack")
    assert human.code == 0 and "the task text" in human.out
    assert "peek: nothing was marked read" in human.out
    assert not receipts.exists() or not any(receipts.iterdir())

    # the crew's own reading is the delivery: it gets the same mail and writes the receipt
    box = ok(run("inbox", "Jack", "--json", env=r["env"]))
    assert "peek" not in box and [m["text"] for m in box["messages"]] == ["the task text"]
    assert (receipts / f"{r['message_id']}.json").exists()
    assert "peek" not in run("inbox", "Jack", env=r["env"]).out
    again = ok(run("inbox", "Jack", "--json"))
    assert again["messages"] == [] and again["peek"] is True


# -- small things: --version, hook's help, where the home is ------------------------------------


@IN_A_PROCESS
def test_version_and_hook_help(run):
    from importlib import metadata

    version = run("--version")
    assert version.code == 0 and version.out.strip() == f"captain {metadata.version('captain-tui')}"

    listed = run("--help")
    assert listed.code == 0 and "    hook " in listed.out
    usage = run("hook", "--help")
    assert usage.code == 0 and usage.out.startswith("usage: captain hook ")
    assert "failed open" not in usage.out + usage.err
    assert "exits 0" in usage.out
    # a real hook call still fails open: exit 0 and one line, whatever it was given
    bogus = run("hook", "nonesuch", "Event")
    assert bogus.code == 0 and "failed open" in bogus.err


def test_status_says_where_the_home_is_and_never_creates_one(run):
    home = run.cli.home
    human = run("status")
    assert human.code == 0 and f"No captain home at {home}" in human.out
    assert "captain crew NAME" in human.out
    payload = ok(run("status", "--json"))
    assert payload["home"] == str(home) and payload["home_exists"] is False
    assert payload["crew"] == []
    assert not home.exists()  # a read: nothing was created

    ok(
        run(
            "crew",
            "Jack",
            "--task",
            "t",
            "--owns",
            "src",
            "--allow",
            "edit",
            "--no-launch",
            "--json",
        )
    )
    payload = ok(run("status", "--json"))
    assert payload["home"] == str(home) and payload["home_exists"] is True
    assert [row["name"] for row in payload["crew"]] == ["Jack"]
    assert run("status").out.rstrip().endswith(f"Home: {home}")

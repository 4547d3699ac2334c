"""An assignment's budget through the real CLI (docs/budgets.md): ``captain crew`` and
``captain assign --budget-usd``, the ``[crew] budget_usd`` default, and ``captain tell NAME
--budget-usd`` (with or without a message), each recorded as the crew's own events and
folded into its snapshot; an amount that is not one is ``invalid_argument`` before
anything is written.

``main(argv)`` in this process on a tmp_path home (``support.cli.InProcess``), crews
recorded with ``--no-launch``.
"""

from __future__ import annotations

import pytest
from support.cli import ok, refused, runner

from state.crew import crewlog, protocol
from state.crew.guards import Context
from state.home import Home

BAD_AMOUNTS = ["0", "-1", "0.001", "1000001", "nan", "inf", "-inf", "1e400", "five", "", "0x10"]


@pytest.fixture
def run(request, cli):
    return runner(request, cli)


def recruit(run, name: str, *extra: str) -> dict:
    return ok(run("crew", name, "--task", f"{name}'s task", "--no-launch", "--json", *extra))


def snapshot(run, name: str):
    found, _ = crewlog.load(Home(run.home), name.lower())
    assert found is not None
    return found


def events(run, name: str) -> list:
    return crewlog.events(Home(run.home), name.lower())


def finish(run, crew: dict) -> None:
    """The crew reports done and the captain acknowledges it."""
    home = Home(run.home)
    ctx = Context.from_env(crew["env"])
    protocol.inbox(home, crew["crew"], deliver=lambda batch: None, ctx=ctx)  # reads its task
    finished = protocol.done(home, crew["crew"], "did it", ctx=ctx)
    ok(run("wait", crew["crew"], "--ack", finished.delivery_id, "--timeout", "0", "--json"))


def test_each_assignment_starts_with_its_own_budget_or_the_configured_one(run):
    (run.home).mkdir(parents=True, exist_ok=True)
    (run.home / "config.toml").write_text("[crew]\nbudget_usd = 3\n")
    jack = recruit(run, "Jack", "--budget-usd", "2.5")
    kim = recruit(run, "Kim")
    assert snapshot(run, "Jack").budget_usd == 2.5
    assert snapshot(run, "Kim").budget_usd == 3.0  # [crew] budget_usd
    assert [e.budget_usd for e in events(run, "Jack")] == [2.5]  # on the recruited event

    finish(run, jack)
    ok(run("assign", "Jack", "--task", "next", "--handoff", jack["assignment_id"], "--json"))
    assert snapshot(run, "Jack").budget_usd == 3.0  # a budget never carries over
    finish(run, kim)
    ok(
        run(
            "assign",
            "Kim",
            "--task",
            "next",
            "--handoff",
            kim["assignment_id"],
            "--budget-usd",
            "$7",
            "--json",
        )
    )
    assert snapshot(run, "Kim").budget_usd == 7.0

    (run.home / "config.toml").write_text("")
    recruit(run, "Lee")
    assert snapshot(run, "Lee").budget_usd is None  # no default: no budget


def test_tell_sets_the_budget_with_or_without_a_message(run):
    jack = recruit(run, "Jack", "--budget-usd", "1")
    aid = jack["assignment_id"]
    alone = ok(run("tell", "Jack", "--assignment", aid, "--budget-usd", "4", "--json"))
    assert alone["budget_usd"] == 4.0 and alone["message_id"] is None, alone
    assert snapshot(run, "Jack").budget_usd == 4.0
    last = events(run, "Jack")[-1]
    assert (last.type, last.actor, last.assignment_id, last.budget_usd) == (
        "budget_set",
        "captain",
        aid,
        4.0,
    )
    both = ok(run("tell", "Jack", "carry on", "--assignment", aid, "--budget-usd", "9", "--json"))
    assert both["message_id"].startswith("msg_") and both["budget_usd"] == 9.0, both
    assert snapshot(run, "Jack").budget_usd == 9.0
    plain = ok(run("tell", "Jack", "and the docs", "--assignment", aid, "--json"))
    assert plain["budget_usd"] == 9.0  # a message alone leaves the budget as it is
    assert snapshot(run, "Jack").budget_usd == 9.0

    neither = refused(run("tell", "Jack", "--assignment", aid, "--json"), "invalid_argument")
    assert "--budget-usd" in neither["message"]
    stale = refused(
        run("tell", "Jack", "--assignment", "asg_0000", "--budget-usd", "5", "--json"),
        "stale_assignment",
    )
    assert stale["message"]
    assert snapshot(run, "Jack").budget_usd == 9.0


def test_an_amount_that_is_not_one_is_refused_before_anything_is_written(run):
    jack = recruit(run, "Jack")
    aid = jack["assignment_id"]
    before = len(events(run, "Jack"))
    for bad in BAD_AMOUNTS:
        refusal = refused(
            run("crew", "Kim", "--task", "t", "--no-launch", f"--budget-usd={bad}", "--json"),
            "invalid_argument",
        )
        assert "--budget-usd" in refusal["message"] and "US dollars" in refusal["message"]
        assert not (run.home / "crew" / "kim").exists()
        refused(
            run("tell", "Jack", "hello", "--assignment", aid, f"--budget-usd={bad}", "--json"),
            "invalid_argument",
        )
    assert len(events(run, "Jack")) == before
    assert not list((run.home / "mail" / "jack").glob("*.json"))[1:]  # the task's mail only

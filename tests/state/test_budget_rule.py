"""The budget rule (``state.crew.budget.review``, docs/budgets.md) on a real home: at 80 %
of the budget the captain is told once per amount; at 100 % every tool call is refused and
the crew is ``held`` once per amount, which ``wait`` returns; raising the budget releases it;
spend that cannot be priced is said once and refuses nothing; two hooks at once say a
notice once; a hook killed between its claim and its notice leaves the notice for the next.
"""

from __future__ import annotations

import threading

import pytest
from support.crew import hire, refused

from state.crew import budget, crewlog, mailbox, notify, protocol
from state.crew.spend import Spend
from state.home import Home


def spent(cost: float | None, *unpriced: str) -> Spend:
    return Spend(
        input_tokens=1000,
        output_tokens=100,
        cache_read_tokens=0,
        cache_write_tokens=0,
        turns=3,
        cost_usd=cost,
        unpriced_models=tuple(unpriced),
    )


def crew(home: Home):
    snapshot, _ = crewlog.load(home, "jack")
    assert snapshot is not None
    return snapshot


def notices(home: Home) -> list:
    return sorted(mailbox.notifications(home, "jack"), key=lambda n: n.created_at)


@pytest.fixture
def jack(home: Home, project):
    return hire(home, project, "Jack", "Write the docs", budget_usd=1.0)


def test_at_80_percent_the_captain_is_told_once_per_amount(home: Home, jack):
    assert budget.review(home, "jack", crew(home), spent(0.79)) is None
    assert [n.status for n in notices(home)] == []
    for cost in (0.80, 0.85, 0.99):
        assert budget.review(home, "jack", crew(home), spent(cost)) is None
    (warn,) = notices(home)
    assert warn.status == "working" and warn.assignment_id == jack.assignment_id
    assert "$0.80 of its $1.00 budget" in warn.summary and "(80 %)" in warn.summary
    assert "--budget-usd" in warn.summary
    assert protocol.crew_state(home, "jack") == "assigned"  # told, not held

    protocol.set_budget(home, "Jack", 2.0, assignment_id=jack.assignment_id)
    assert budget.review(home, "jack", crew(home), spent(1.5)) is None
    assert len(notices(home)) == 1  # 75 % of the new amount: nothing yet
    assert budget.review(home, "jack", crew(home), spent(1.6)) is None
    assert [n.status for n in notices(home)] == ["working", "working"]  # once per amount


def test_at_the_budget_every_call_is_refused_and_wait_returns_held_once(home: Home, jack):
    refusal = budget.review(home, "jack", crew(home), spent(1.0))
    assert refusal is not None
    assert "budget" in refusal and jack.assignment_id in refusal and "captain" in refusal
    assert "$1.00 spent of $1.00" in refusal
    for cost in (1.0, 1.2, 5.0):  # every later call: refused, and said no more
        assert budget.review(home, "jack", crew(home), spent(cost)) is not None
    (held,) = notices(home)
    assert held.status == "held" and "reached its $1.00 budget" in held.summary
    assert protocol.crew_state(home, "jack") == "held"
    assert budget.is_held(home, "jack", crew(home))

    got = notify.wait(home, "Jack", timeout=0)
    assert got is not None and got.delivery_id == held.delivery_id and got.status == "held"


def test_raising_the_budget_releases_the_crew_and_lowering_it_holds_it(home: Home, jack):
    assert budget.review(home, "jack", crew(home), spent(1.1)) is not None
    (held,) = notices(home)
    protocol.set_budget(home, "Jack", 3.0, assignment_id=jack.assignment_id)
    assert crew(home).budget_usd == 3.0
    assert held.delivery_id in mailbox.acked(home, "jack")  # released: the notice is settled
    assert protocol.crew_state(home, "jack") == "assigned"
    assert not budget.is_held(home, "jack", crew(home))
    assert budget.review(home, "jack", crew(home), spent(1.1)) is None  # the next call runs

    # lowered under the spend: held again at the new amount (its own notice)
    assert budget.review(home, "jack", crew(home), spent(2.9)) is None  # 96 %: told
    protocol.set_budget(home, "Jack", 2.0, assignment_id=jack.assignment_id)
    assert budget.review(home, "jack", crew(home), spent(2.9)) is not None
    assert [n.status for n in notices(home)] == ["held", "working", "held"]

    # a crew that is done, or an old assignment's ID: nothing to set
    refused("stale_assignment", protocol.set_budget, home, "Jack", 5.0, assignment_id="asg_other")


def test_unpriced_spend_is_said_once_and_refuses_nothing(home: Home, jack):
    for _ in range(3):
        assert budget.review(home, "jack", crew(home), spent(None, "model-x")) is None
    (told,) = notices(home)
    assert told.status == "working"
    assert "cannot be enforced" in told.summary and "model-x" in told.summary
    assert '[prices."MODEL"]' in told.summary
    protocol.set_budget(home, "Jack", 4.0, assignment_id=jack.assignment_id)
    assert budget.review(home, "jack", crew(home), spent(None, "model-x")) is None
    assert len(notices(home)) == 2  # once per amount


def test_no_budget_no_notice(home: Home, project):
    hire(home, project, "Jack", "Write the docs")
    assert crew(home).budget_usd is None
    assert budget.review(home, "jack", crew(home), spent(1e6)) is None
    assert budget.review(home, "jack", crew(home), spent(None, "m")) is None
    assert notices(home) == []


def test_hooks_at_once_say_the_held_notice_once(home: Home, jack):
    snapshot = crew(home)
    start = threading.Barrier(8)
    answers: list = []

    def hook() -> None:
        start.wait()
        answers.append(budget.review(Home(home.root), "jack", snapshot, spent(2.0)))

    threads = [threading.Thread(target=hook) for _ in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(answers) == 8 and all(a is not None for a in answers)
    assert [n.status for n in notices(home)] == ["held"]


def test_a_claim_whose_notice_was_never_written_is_written_by_the_next_call(home: Home, jack):
    assert budget.review(home, "jack", crew(home), spent(1.0)) is not None
    (held,) = notices(home)
    # the hook was killed after its claim and before the notice: the notice is not there
    (home.notifications_dir("jack") / f"{held.delivery_id}.json").unlink()
    assert notices(home) == []
    assert budget.review(home, "jack", crew(home), spent(1.0)) is not None
    (again,) = notices(home)
    assert again.delivery_id == held.delivery_id and again.status == "held"


def test_a_hook_that_read_the_budget_before_it_was_raised_says_no_stale_notice(home: Home, jack):
    """The race: a tool call's hook read the crew's budget ($1), then the captain raised it
    to $5 (releasing the crew), then the hook reviewed its $1.10 against the $1 it read.
    The call itself may be refused (its next runs), but no ``held`` or 80 % notice of the
    old amount is said after the raise: the crew is not shown held by a budget it no
    longer has, and ``wait`` returns nothing stale."""
    before = crew(home)
    protocol.set_budget(home, "Jack", 5.0, assignment_id=jack.assignment_id)
    budget.review(home, "jack", before, spent(1.1))  # the stale hook: $1 read, $5 now
    budget.review(home, "jack", before, spent(0.9))  # and a stale 80 %
    assert notices(home) == []
    assert protocol.crew_state(home, "jack") == "assigned"
    assert budget.review(home, "jack", crew(home), spent(1.1)) is None  # the next call runs
    # the budget as it stands still holds: 80 % told, reached held
    assert budget.review(home, "jack", crew(home), spent(4.1)) is None
    assert budget.review(home, "jack", crew(home), spent(5.2)) is not None
    assert [n.status for n in notices(home)] == ["working", "held"]

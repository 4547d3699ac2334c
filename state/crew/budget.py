"""An assignment's budget: the one rule that compares what was measured with it.

The budget (``budget_usd`` on the crew's snapshot, docs/budgets.md) is set by
``captain crew`` / ``captain assign --budget-usd``, else ``[crew] budget_usd``, and changed
by ``captain tell NAME --budget-usd``. ``review`` is called by the agents' pre-tool hooks
with what ``state.crew.spend.measure`` returned, and by ``set_budget``:

- measured spend at ``BUDGET_WARN_SHARE`` (80 %) of the budget or more: the captain is told
  once per budget value (a ``working`` notice: the crew carries on);
- at the budget or more: the crew is ``held`` (one ``held`` notice per budget value, which
  ``captain wait`` returns) and every tool call is refused with the returned reason, until
  the budget is raised past the spend;
- spend that cannot be priced (``cost_usd`` None: a model with no price): the captain is told
  once per budget value that the budget cannot be enforced, and nothing is refused.

Each notice is claimed by a marker (``budget/<key>/<assignment>.<kind>.<amount>.json``)
written once, which names the notice's delivery ID; the notice itself is written after
it and again by any later review that finds it missing, so a review killed in between
leaves no notice unsaid, and two hooks at once say it once.

Crew-side: imported by hooks on every tool call, so no pydantic at import (only a notice,
once per budget value, pays for the models).
"""

from __future__ import annotations

import json
import math
import os
from typing import Any, Protocol

from state.errors import CaptainError
from state.home import Home
from state.vocab import BUDGET_MAX_USD, BUDGET_MIN_USD, BUDGET_WARN_SHARE

WARN, HELD, UNPRICED = "warn", "held", "unpriced"
STATUS = {WARN: "working", HELD: "held", UNPRICED: "working"}  # the existing vocabulary


class Measured(Protocol):  # state.crew.spend.Spend
    @property
    def cost_usd(self) -> float | None: ...
    @property
    def unpriced_models(self) -> tuple[str, ...]: ...
    @property
    def turns(self) -> int: ...


def takes() -> str:
    return f"an amount in US dollars from {usd(BUDGET_MIN_USD)} to {usd(BUDGET_MAX_USD)}"


def check_amount(value: object, where: str = "--budget-usd") -> float:
    """A budget someone typed, as a float; ``invalid_argument`` unless it is a finite
    number in [BUDGET_MIN_USD, BUDGET_MAX_USD]. The one rule for every way in (the CLI's
    flags, the use cases; ``[crew] budget_usd`` has the same range in state/config.py)."""
    amount: float | None
    if isinstance(value, bool):
        amount = None
    elif isinstance(value, (int, float)):
        amount = float(value)
    elif isinstance(value, str) and len(value) <= 40:
        try:
            amount = float(value.strip().removeprefix("$"))
        except ValueError:
            amount = None
    else:
        amount = None
    if (
        amount is None
        or not math.isfinite(amount)
        or not (BUDGET_MIN_USD <= amount <= BUDGET_MAX_USD)
    ):
        shown = repr(value) if not isinstance(value, str) else value[:40]
        raise CaptainError("invalid_argument", f"{where} {shown} is not {takes()}.")
    return amount


def default(home: Home) -> float | None:
    """``[crew] budget_usd`` (None: no budget unless one is given)."""
    found = home.setting("crew", "budget_usd")  # checked at load: a float or None
    return float(found) if found is not None else None


def usd(amount: float) -> str:
    """Dollars for a sentence: cents, or four places below a cent."""
    if 0 < abs(amount) < 0.01:
        return f"${amount:.4f}"
    return f"${amount:,.2f}"


def _amount_tag(budget: float) -> str:
    return f"{budget:.6f}"


def _marker(
    home: Home, key: str, assignment_id: str, kind: str, budget: float, create: bool = True
) -> Any:
    folder = home.store.dir("budget", key, create=create and home.store.writable)
    return folder / f"{assignment_id}.{kind}.{_amount_tag(budget)}.json"


def _raise_line(name: str, assignment_id: str) -> str:
    return f"Raise it with: captain tell {name} --assignment {assignment_id} --budget-usd AMOUNT."


def _notice_text(kind: str, name: str, assignment_id: str, budget: float, spend: Measured) -> str:
    if kind == UNPRICED:
        models = ", ".join(spend.unpriced_models) or "its model"
        return (
            f"{name}'s {usd(budget)} budget on {assignment_id} cannot be enforced: captain "
            f"has no price for {models}, so its spend is counted in tokens only. Add a "
            f'price under [prices."MODEL"] in config.toml (docs/budgets.md).'
        )
    cost = spend.cost_usd or 0.0
    share = math.floor(100 * cost / budget)
    if kind == WARN:
        return (
            f"{name} has spent {usd(cost)} of its {usd(budget)} budget on {assignment_id} "
            f"({share} %); at {usd(budget)} its tool calls are refused. "
            + _raise_line(name, assignment_id)
        )
    return (
        f"{name} reached its {usd(budget)} budget on {assignment_id} (spent {usd(cost)}): "
        "its tool calls are refused until the budget is raised. " + _raise_line(name, assignment_id)
    )


def refusal(name: str, assignment_id: str, budget: float, cost: float) -> str:
    """What the agent's model is told when a tool call is refused."""
    return (
        f"The captain's budget for this assignment ({assignment_id}) is reached: "
        f"{usd(cost)} spent of {usd(budget)}. This tool call was not run, and no tool "
        "call will run until the captain raises the budget. Ask the captain for more: end "
        "your turn now with a short note of where the work stands and what is left (the "
        f"captain has been told that {name} is held by its budget)."
    )


def is_held(home: Home, key: str, snapshot: Any) -> bool:
    """Whether the current assignment is held by its budget as it stands (its ``held``
    notice for this very amount was claimed): one stat, for the Stop hook, which lets a
    held crew stop rather than send it back to tools it cannot run."""
    budget = getattr(snapshot, "budget_usd", None)
    if budget is None:
        return False
    marker = _marker(home, key, snapshot.assignment.assignment_id, HELD, budget, create=False)
    return os.path.lexists(marker)


def standing(cost: float | None, budget: float | None) -> str | None:
    """Where a measured cost stands against a budget: ``HELD`` (reached: tool calls are
    refused), ``WARN`` (80 % or more), ``UNPRICED`` (it cannot be enforced), None (under,
    or no budget). The one rule the gate and every display follow."""
    if budget is None:
        return None
    if cost is None:
        return UNPRICED
    if cost >= budget:
        return HELD
    if cost >= BUDGET_WARN_SHARE * budget:
        return WARN
    return None


def review(
    home: Home, key: str, snapshot: Any, spend: Measured, *, locked: bool = False
) -> str | None:
    """The budget rule for the crew's current assignment: says each notice that is due
    (once per budget value) and returns the refusal for a tool call, None when it may run.
    ``snapshot``: the crew's (a model or the fast path's plain record), as the caller read
    it; ``locked``: the caller holds the crew lock and read it under that lock (else a
    notice is said only if the budget is still the one read: ``_say``)."""
    budget = getattr(snapshot, "budget_usd", None)
    if budget is None or snapshot.dismissed_at is not None or snapshot.done_at is not None:
        return None
    cost = spend.cost_usd
    kind = standing(cost, budget)
    if kind is not None:
        _say(home, key, snapshot, kind, budget, spend, locked)
    if kind == HELD and cost is not None:
        return refusal(snapshot.name, snapshot.assignment.assignment_id, budget, cost)
    return None


def _say(
    home: Home,
    key: str,
    snapshot: Any,
    kind: str,
    budget: float,
    spend: Measured,
    locked: bool,
) -> None:
    """The notice ``kind`` for this budget value, once: claimed by its marker, then written
    (again when a killed review left it unwritten). A notice that cannot be written now (a
    full disk; something planted where its marker goes) is tried again by the next call:
    it never turns a refusal into an allow, so nothing here raises.

    Said under the crew lock, and only while the crew's budget is still the one the hook
    read: ``tell --budget-usd`` changes the budget and settles the ``held`` notices under
    that lock, so a hook that read the old budget just before it either said its notice
    first (and it is settled) or says nothing after (no crew shown held by a budget it no
    longer has). Once per budget value, so the crew-side fast path pays for this rarely."""
    try:
        if _said(home, key, snapshot.assignment.assignment_id, kind, budget):
            return  # every call past the budget comes here: no lock, no models
        if locked:
            _claim_and_write(home, key, snapshot, kind, budget, spend)
            return
        from state.crew import crewlog
        from state.crew.guards import lock_name

        with home.store.lock(lock_name(key)):
            now, _ = crewlog.load(home, key)
            if (
                now is None
                or now.budget_usd != budget
                or now.assignment.assignment_id != snapshot.assignment.assignment_id
                or now.dismissed_at is not None
                or now.done_at is not None
            ):
                return  # the budget read is no longer the crew's: nothing to say of it
            _claim_and_write(home, key, snapshot, kind, budget, spend)
    except Exception:  # noqa: BLE001 - the rule's answer stands without its notice
        pass


def _said(home: Home, key: str, assignment_id: str, kind: str, budget: float) -> bool:
    """This notice for this budget value is claimed and written already."""
    delivery_id = _claimed(home, _marker(home, key, assignment_id, kind, budget))
    if delivery_id is None:
        return False
    return os.path.lexists(home.notifications_dir(key) / f"{delivery_id}.json")


def _claim_and_write(
    home: Home, key: str, snapshot: Any, kind: str, budget: float, spend: Measured
) -> None:
    assignment_id = snapshot.assignment.assignment_id
    marker = _marker(home, key, assignment_id, kind, budget)
    delivery_id = _claimed(home, marker)
    if delivery_id is None:
        from state.ids import DELIVERY, new_id

        fresh = new_id(DELIVERY)
        body = json.dumps({"delivery_id": fresh, "kind": kind, "budget_usd": budget}).encode()
        home.store.create_once(marker, body + b"\n", same=lambda old, new: True)
        delivery_id = _claimed(home, marker)  # ours, or the one a concurrent hook wrote
        if delivery_id is None:
            return
    path = home.notifications_dir(key) / f"{delivery_id}.json"
    if os.path.lexists(path):
        return
    _write_notice(home, key, snapshot, kind, delivery_id, budget, spend)


def _claimed(home: Home, marker: Any) -> str | None:
    try:
        data = home.store.read_json(marker)
    except Exception:  # noqa: BLE001 - a bad marker is the store's to report
        return None
    found = data.get("delivery_id") if isinstance(data, dict) else None
    return found if isinstance(found, str) and found.startswith("dlv_") else None


def _write_notice(
    home: Home,
    key: str,
    snapshot: Any,
    kind: str,
    delivery_id: str,
    budget: float,
    spend: Measured,
) -> None:
    from state.clock import now
    from state.crew import mailbox
    from state.inputs import summarize
    from state.records import Notification
    from state.store import encode

    assignment_id = snapshot.assignment.assignment_id
    last = mailbox.last_message(home, key, assignment_id)
    notice = Notification(
        delivery_id=delivery_id,
        status=STATUS[kind],
        crew=snapshot.name,
        assignment_id=assignment_id,
        summary=summarize(_notice_text(kind, snapshot.name, assignment_id, budget, spend)),
        queued_at=last.queued_at if last else None,
        created_at=now(),
    )
    path = home.notifications_dir(key) / f"{delivery_id}.json"
    home.store.create_once(path, encode(notice), same=lambda old, new: True)


def held_notices(home: Home, key: str, assignment_id: str) -> list[str]:
    """Delivery IDs of the ``held`` notices this assignment's budgets raised."""
    folder = home.store.dir("budget", key, create=False)
    try:
        names = sorted(os.listdir(folder))
    except FileNotFoundError:
        return []
    out = []
    for name in names:
        if name.startswith(f"{assignment_id}.{HELD}.") and name.endswith(".json"):
            found = _claimed(home, folder / name)
            if found is not None:
                out.append(found)
    return out

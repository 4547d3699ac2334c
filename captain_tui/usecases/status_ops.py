"""``status``, the read model: the crew's rows with their doorbell stamps, which ledger the
home uses and what keeps it from being used. The CLI words it; a crew sees itself only.

Read-only: a home that does not exist yet is said, never created.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any, NamedTuple

from captain_tui.repo import discovery
from state.crew.guards import CAPTAIN, Context, own_view
from state.errors import CaptainError
from state.home import Home

if TYPE_CHECKING:
    from state.crew.spend import Spend


class Status(NamedTuple):  # not a dataclass: importing dataclasses costs status ~5-10 ms
    root: Path
    home_exists: bool
    ledger: dict  # the location as JSON, with "error" when it cannot be used
    postgres: bool | None  # None: the location itself is not one (a bad URL)
    described: str  # the location in a line (a password redacted), "" when invalid
    problem: CaptainError | None  # what keeps the ledger from being used: status fails
    workspace_id: str | None
    crew: list[dict]  # protocol.crew_status's rows, each with its "doorbell"
    landing: tuple[dict, ...] = ()  # lands running, queued or interrupted (repo.landing_queue)
    spend: dict | None = None  # every listed crew's spend summed (_spend_of)

    def as_json(self) -> dict:
        return {
            "crew": self.crew,
            "spend": self.spend,
            "landing": list(self.landing),
            "workspace_id": self.workspace_id,
            "home": str(self.root),
            "home_exists": self.home_exists,
            "ledger": self.ledger,
        }


def _location(home: Home):
    from state.work.location import ledger_location

    try:
        location = ledger_location(home)
    except CaptainError as err:
        return {"kind": "invalid", "error": err.as_json()}, None, "", err
    return location.as_json(), location.postgres, location.describe(), None


def _workspace(home: Home):
    """The workspace ID and what stopped the ledger from saying it (a database that is
    unreachable, not migrated, or whose driver is missing); None, None in a read-only look
    at a home that has none minted yet."""
    from state.crew_side import door

    try:
        return door.workspace_id(home), None
    except CaptainError as err:
        return None, err


def _bell(stamp: Any, row: dict) -> dict:
    """The doorbell's stamp of the crew's current incarnation, as status --json says it."""
    live = stamp if stamp is not None and stamp.incarnation_id == row["incarnation_id"] else None
    return {
        "gate": live.gate if live else None,
        "held_since": live.held_since.isoformat() if live and live.held_since else None,
        "head": live.head if live else None,
    }


def _changes(snapshots: list) -> list[dict | None]:
    """Each crew's change now (``captain_tui.repo.change``): None for a dismissed crew or
    one whose project is not a git repository (git and its module not even loaded when no
    crew's is). The rest are read together (``change.summaries_of``), with git's memo of
    directories shared by all of them: crews share a project."""
    repos: dict[str, bool] = {}  # projects known to be outside any repository, or not
    wanted = [
        i
        for i, s in enumerate(snapshots)
        if s.dismissed_at is None and discovery.may_have_change(s, repos)
    ]
    found: list[dict | None] = [None] * len(snapshots)
    if not wanted:
        return found
    from captain_tui.repo import change, git

    with git.one_look_per_directory():
        read = change.summaries_of([snapshots[i] for i in wanted])
    for i, summary in zip(wanted, read, strict=True):
        found[i] = summary
    return found


def _spend_of(home: Home, row: dict) -> Spend:
    """The crew's spend (``state.crew.spend``): its current assignment's and every
    assignment's sum, as status --json says them; the sum is returned for the home's."""
    from state.crew import spend

    figures = spend.crew_spend(home, row["name"].lower())
    current = figures.get(row["assignment_id"], spend.NOTHING)
    whole = spend.total(list(figures.values()))
    row["spend"] = {
        **spend.as_json(whole),
        "assignment": {"assignment_id": row["assignment_id"], **spend.as_json(current)},
        "assignments": [
            {"assignment_id": aid, **spend.as_json(f)} for aid, f in sorted(figures.items())
        ],
    }
    return whole


def status(home: Home, *, ctx: Context = CAPTAIN, include_dismissed: bool = False) -> Status:
    """The crew (dismissed ones too with ``include_dismissed``) and the ledger. A ledger
    that cannot be used is reported in ``problem``, not raised, so the crew still shows.

    Read on plain records, or through the models when any is unusual
    (``state.crew_side.door``); git is asked once per project directory, however many crew
    share it, and not at all for a project outside any repository."""
    from captain_tui.repo import landing_queue
    from state.crew import spend
    from state.crew_side import door

    ledger, postgres, described, problem = _location(home)
    if not home.root.is_dir():
        return Status(home.root, False, ledger, postgres, described, problem, None, [])
    # a crew sees itself only, and only as itself: another crew's incarnation ID is all it
    # would need to read that crew's mail and write its receipts
    own = own_view(ctx, lambda key: door.load(home, key))
    found = door.status_rows(home, include_dismissed)
    if own is not None:
        found = [f for f in found if f.row["name"].lower() == own]
    rows = []
    sums = []
    changes = _changes([snapshot for _, snapshot, _ in found])
    for (row, _, stamp), change in zip(found, changes, strict=True):
        row["doorbell"] = _bell(stamp, row)
        row["change"] = change
        sums.append(_spend_of(home, row))
        rows.append(row)
    spent = spend.as_json(spend.total(sums))
    workspace = None
    if problem is None:
        workspace, problem = _workspace(home)
        if problem is not None:
            ledger = {**ledger, "error": problem.as_json()}
    landing = () if own is not None else tuple(landing_queue.queue(home))
    return Status(
        home.root, True, ledger, postgres, described, problem, workspace, rows, landing, spent
    )

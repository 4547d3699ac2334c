"""Which part of the cockpit a changed path touches: docs/store.md's layout turned around.

The watcher reports paths; ``route`` names the crew (or work item) and the part of its cache
each one changes, so the feed re-reads only that. Paths no panel shows map to None.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Literal

# -- which panel a changed path touches ------------------------------------------------------

# what a changed path is to the cockpit: a part of one crew's cache, its ring stamp (bell),
# a quarantined file, or a work item (Route.name: its work ID)
RouteKind = Literal[
    "crew", "mail", "read", "note", "acks", "approval", "bell", "quarantine", "work", "spend"
]

# top-level directory (docs/store.md) -> the part of a crew's cache it holds
_KINDS: dict[str, RouteKind] = {
    "crew": "crew",  # crew/<key>/events/*, crew/<key>/state.json
    "mail": "mail",  # mail/<key>/<message-id>.json
    "receipts": "read",
    "bounces": "read",
    "notifications": "note",  # notifications/<key>/<delivery-id>.json
    "acks": "acks",
    "approvals": "approval",  # approvals/<key>/<apr-id>.json, decisions/..., outcomes/...
}


# work/<id>/... files no panel shows: the input (its events follow) and the lease (heartbeats)
_WORK_QUIET = frozenset({"input.json", "lease.json"})


@dataclass(frozen=True)
class Route:
    kind: RouteKind
    key: str | None
    name: str | None = None  # the record's name (message or delivery ID) where it matters


def route(root: Path, path: str) -> Route | None:
    """Which part of the cockpit a changed path touches; None for what no panel shows
    (locks, returned markers, agent settings, temp files)."""
    try:
        parts = Path(path).relative_to(root).parts
    except ValueError:
        return None
    if not parts or parts[-1].startswith("."):
        return None  # temp files are published under another name; that event follows
    top = parts[0]
    if top == "doorbell" and len(parts) == 2 and parts[1].endswith(".json"):
        return Route("bell", parts[1][: -len(".json")])
    if top == "spend" and len(parts) == 2 and parts[1].endswith(".json"):
        return Route("spend", parts[1][: -len(".json")])  # spend/<key>.json (state.crew.spend)
    if top == "quarantine" and len(parts) == 2 and parts[1].endswith(".reason"):
        return Route("quarantine", None, parts[1])
    if top == "work" and len(parts) >= 3 and parts[2] not in _WORK_QUIET:
        return Route("work", None, parts[1])  # work/<id>/events/*, work/<id>/item.json
    if top == "ledger" and len(parts) == 3 and parts[1] == "open":
        return Route("work", None, parts[2])  # ledger/open/<id>: opened or closed
    kind = _KINDS.get(top)
    if kind is None or len(parts) < 2:
        return None
    name = parts[2][: -len(".json")] if len(parts) == 3 and parts[2].endswith(".json") else None
    return Route(kind, parts[1], name)

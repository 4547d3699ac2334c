"""``status`` on plain records: the crew's rows and the home's workspace ID, or ``Unsure``.

A captain that is itself an agent runs ``status`` as often as ``tell`` and ``wait``, and
importing pydantic alone costs more than its start-up budget (docs/design.md, "The
captain's side"). So the rows are made here by ``state.crew.roster``'s one rule from records
``state.crew_side.plain`` reads: a snapshot only when it is exactly as new as its events
(``fast.snapshot``), the mail, the notifications, the doorbell's stamp. ``status`` writes
nothing, so there is nothing to decline before: whenever any record is unusual (a bad
file, a snapshot behind its events, a stamp of an older shape) this raises ``Unsure`` and
``state.crew_side.door`` asks the models instead, which fold, report and quarantine as
always.
"""

from __future__ import annotations

from state.crew import roster
from state.crew_side import captain, fast, plain
from state.home import Home


def _ring_stamp(home: Home, key: str) -> plain.Rec | None:
    """``protocol.ring_stamp``."""
    return plain.read(home.store, home.ring_stamp_path(key), "RingStamp")


READERS = roster.Readers(
    snapshot=fast.snapshot,
    unread=fast.unread,
    notifications=captain.notifications,
    ring_stamp=_ring_stamp,
)


def rows(home: Home, include_dismissed: bool) -> list[roster.Row]:
    """``protocol.crew_status``'s rows, each with the snapshot and stamp it was made from."""
    return roster.rows(home, include_dismissed, READERS)


def workspace_id(home: Home) -> str | None:
    """``tokens.workspace_id`` of a home whose ledger is its own files (``workspace.json``,
    None when none is minted yet); ``Unsure`` on a database ledger (its driver answers) and
    when this look would mint one (a home opened to write: the full path mints)."""
    from state.work.location import ledger_location

    if ledger_location(home).postgres:
        raise plain.Unsure("a database ledger: its driver answers")
    found = plain.read(home.store, home.root / "workspace.json", "HomeWorkspace")
    if found is None:
        if not home.read_only:
            raise plain.Unsure("no workspace yet: the full path mints it")
        return None
    minted: str = found.workspace_id
    return minted

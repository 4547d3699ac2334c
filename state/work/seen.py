"""Whether an assignment's work item is known to exist without asking its ledger.

The crew's own commands (``state/crew_side/fast.py``) and the crew log's settling
(``state.work.settle``) ask it on every run, so it must cost a ``stat`` and load nothing:
no pydantic, no config, no driver. Each backend answers it where it keeps its items:

- the files: the item's first event (``first_event``, the file backend's own layout,
  ``state.work.files``), durable as soon as it is written;
- a shared ledger (PostgreSQL): this home's note ``work-seen/<id>`` (``note``), written
  once the item is committed there (``settle.accepted``). An item is never removed, so
  the note never lies.

This module is the one place that knows either path; ``Home`` knows neither.
"""

from __future__ import annotations

import os
from pathlib import Path

from state.home import Home

NOTES = "work-seen"


def events_dir(root: Path, work_id: str) -> Path:
    """The file backend's ``work/<id>/events`` (``state.work.files``)."""
    return Path(root, "work", work_id, "events")


def first_event(root: Path, work_id: str) -> Path:
    """The file backend's first event of the item: it exists once the item does."""
    return events_dir(root, work_id) / "00000001.json"


def note_path(home: Home, work_id: str) -> Path:
    """``work-seen/<id>``: a shared ledger's item, noted in this home once committed."""
    return Path(home.root, NOTES, work_id)


def known(home: Home, work_id: str) -> bool:
    """Whether the item is known to exist without asking a database: the files' first
    event, or a shared ledger's note."""
    return os.path.lexists(first_event(home.root, work_id)) or os.path.lexists(
        note_path(home, work_id)
    )


def note(home: Home, work_id: str) -> None:
    """Write the note (create-once: a second writer's is the same empty file)."""
    path = note_path(home, work_id)
    home.store.dir(NOTES)  # 0700, a symlink refused
    home.store.create_once(path, b"", same=lambda old, new: True)

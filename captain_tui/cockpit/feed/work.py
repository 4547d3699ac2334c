"""The Work panel's part of the feed: work items read into ``WorkRow``s, kept current cheaply.

``feed.home.Feed`` owns one ``WorkFeed`` and calls it from the pump's thread. A rescan lists
``work/`` and re-reads only items that can still change: a finished item's history is never
rewritten, so once read it is never read again. Between rescans, ``apply`` re-reads exactly
the items the watcher saw change (``feed.routes.route`` maps ``work/<id>/...`` and
``ledger/open/<id>`` to the item's ID).

An item that enters needs_reconciliation after the first scan raises an alert, like a bounce.
"""

from __future__ import annotations

from collections.abc import Iterable

from captain_tui.cockpit import jobs
from state.errors import CaptainError
from state.home import Home
from state.inputs import crew_key
from state.work import controls, ledger
from state.work.models import WorkItem
from widgets.view import RECONCILE, WorkRow


class WorkFeed:
    """Not thread-safe: the feed's thread owns it."""

    def __init__(self, home: Home) -> None:
        self.home = home
        self.rows: dict[str, WorkRow] = {}
        self.problem: str | None = None  # the last listing failure, said once
        self.tasks: dict[str, str] = {}  # an assignment's task never changes: read once

    def rescan(self, alerts: list, *, announce: bool) -> dict[str, WorkRow]:
        """Every item again (finished ones from the cache); a new dict every time. A ledger
        that cannot be listed (``work/`` swapped for a symlink, say) is reported once and
        costs only the Work panel's freshness, never the crew panels."""
        try:
            ids = ledger.all_ids(self.home)
        except CaptainError as err:
            if err.message != self.problem:
                from captain_tui.cockpit.feed.alerts import Alert

                alerts.append(Alert("quarantine", "The work ledger could not be read",
                                    f"{err.message} (the Work panel shows what was read last)"))
            self.problem = err.message
            return dict(self.rows)
        self.problem = None
        rows: dict[str, WorkRow] = {}
        for work_id in ids:
            old = self.rows.get(work_id)
            row = old if old is not None and old.finished else self._read(work_id)
            if row is not None:
                rows[work_id] = row
                _announce(old, row, alerts, announce)
        self.rows = rows
        return rows

    def apply(self, ids: Iterable[str], alerts: list, *,
              announce: bool) -> dict[str, WorkRow] | None:
        """Re-read these items; the new rows, or None when nothing shown changed."""
        rows = None
        for work_id in dict.fromkeys(ids):
            old = self.rows.get(work_id)
            row = self._read(work_id)
            if row == old:
                continue
            rows = dict(self.rows) if rows is None else rows
            if row is None:
                rows.pop(work_id, None)
            else:
                rows[work_id] = row
                _announce(old, row, alerts, announce)
        if rows is not None:
            self.rows = rows
        return rows

    def _read(self, work_id: str) -> WorkRow | None:
        try:
            item = ledger.load(self.home, work_id)
        except CaptainError:
            return None  # not a work item, or a history that does not fold: not shown
        if item is None:
            return None
        why = None
        if item.state == RECONCILE:
            try:
                history = ledger.events(self.home, work_id)
            except CaptainError:
                history = []
            why = next((e.reason for e in reversed(history)
                        if e.type == "needs_reconciliation"), None)
        try:
            facts = controls.facts(self.home, item)  # a webhook item: its delivery record
        except CaptainError:
            facts = controls.Facts(item.work_id, item.state, item.source, item.delivery_id)
        return work_row(item, why, facts, self._task(item))

    def _task(self, item: WorkItem) -> str | None:
        if item.source != "assignment" or not item.assignment_id:
            return None
        task = self.tasks.get(item.assignment_id)
        if task is None:  # not read yet, or not on the crew's record yet: ask again
            task = jobs.task_of(self.home, item)
            if task is not None:
                self.tasks[item.assignment_id] = task
        return task


def work_row(item: WorkItem, why: str | None = None,
             facts: controls.Facts | None = None, task: str | None = None) -> WorkRow:

    current = item.attempts[-1] if item.attempts else None
    locator = current.runtime_locator if current is not None else None
    return WorkRow(work_id=item.work_id, key=_key(item.crew),
                   state=item.state, source=item.source, crew=item.crew,
                   generation=item.generation, created_at=item.created_at,
                   updated_at=item.updated_at, target_revision=item.target_revision,
                   replay_of=item.replay_of, pane=locator.pane_id if locator else None, why=why,
                   facts=facts, title=jobs.title(item, task),
                   named=jobs.named_as(item, task))


def _key(crew: str | None) -> str | None:
    try:
        return crew_key(crew) if crew else None
    except CaptainError:
        return None


def _announce(old: WorkRow | None, row: WorkRow, alerts: list, announce: bool) -> None:
    if announce and row.reconciling and (old is None or not old.reconciling):
        from captain_tui.cockpit.feed.alerts import Alert

        where = f"{row.crew}'s assignment" if row.crew else f"a {row.source} item"
        what = f"{row.crew}'s task" if row.crew else f"A {row.source} item"
        alerts.append(Alert(RECONCILE, f"{what} needs reconciliation",
                            f"{row.why or 'its outcome is unclear'} ({where}, generation "
                            f"{row.generation}). It keeps its slot until you resolve it."))

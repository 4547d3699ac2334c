"""The Work panel's part of the feed: work items read into ``WorkRow``s, kept current cheaply.

``feed.home_feed.Feed`` owns one ``WorkFeed`` and calls it from the pump's thread. A rescan reads
the open items and the newest ``FINISHED_SHOWN`` finished ones (``ledger.open_ids``,
``ledger.recent_finished_ids``), never the whole history, so its cost grows with what the
panel shows; a finished item's history is never rewritten, so once read it is never read
again, and the finished rows held are the newest ``FINISHED_SHOWN`` of those read (an old
item that finished while watched stays). Between rescans, ``apply`` re-reads exactly the
items the watcher or the ledger's notifications saw change (``feed.path_routes.route`` maps
``work/<id>/...`` and ``ledger/open/<id>`` to the item's ID).

An item that enters needs_reconciliation after the first scan raises an alert, like a bounce.

A read that fails costs the Work panel only, never the crew panels (``problem``): a ledger
that cannot be read at all (a database down, ``work/`` swapped for a symlink, anything
raised) keeps the rows read last; an item that does not validate (``ledger_corrupt``) is
left out and the rest shown. Each is said once — one alert per problem, one per corrupt
item — and named in the panel (``HomeView.work_problem``) for as long as it lasts.
"""

from __future__ import annotations

from collections.abc import Iterable

from captain_tui.cockpit import jobs
from state.crew.spend import Spend
from state.errors import CaptainError
from state.home import Home
from state.inputs import crew_key
from state.work import controls, corrupt, ledger
from state.work.ledger_records import Attempt, WorkItem
from widgets.view import FINISHED_SHOWN, RECONCILE, WorkRow

# refusals about the whole ledger, not one item: a read that meets one keeps the rows read
# last instead of dropping the item (every other refusal is the item's own)
LEDGER_WIDE = frozenset(
    {
        "ledger_unreachable",
        "ledger_error",
        "ledger_not_migrated",
        "ledger_schema_newer",
        "postgres_not_installed",
        "invalid_ledger_url",
    }
)


class WorkFeed:
    """Not thread-safe: the feed's thread owns it."""

    def __init__(self, home: Home) -> None:
        self.home = home
        self.rows: dict[str, WorkRow] = {}
        self.problem: str | None = None  # the last failure to read the ledger, said once
        self.tasks: dict[str, str] = {}  # an assignment's task never changes: read once
        self.corrupt: dict[str, str] = {}  # work ID -> why it cannot be read, while it lasts
        self._said: set[str] = set()  # corrupt items already alerted (once per item)

    @property
    def shown_problem(self) -> str:
        """What the Work panel says is wrong ("" when nothing is)."""
        if self.problem is not None:
            return (
                f"The work ledger could not be read: {self.problem} Showing what was "
                "read last; trying again."
            )
        if self.corrupt:
            ids = sorted(self.corrupt)
            more = f" and {len(ids) - 3} more" if len(ids) > 3 else ""
            return (
                f"{len(ids)} work item{'s' if len(ids) > 1 else ''} could not be read "
                f"(ledger_corrupt) and {'are' if len(ids) > 1 else 'is'} not shown: "
                f"{', '.join(ids[:3])}{more}."
            )
        return ""

    def rescan(self, alerts: list, *, announce: bool) -> dict[str, WorkRow]:
        """The open items again and the newest finished ones (``FINISHED_SHOWN``, what the
        panel shows), never the whole history: a finished row held already is kept without
        a read, and the finished rows held are trimmed to the newest ``FINISHED_SHOWN``. A
        new dict every time. A ledger that cannot be read, for whatever reason, is reported
        once and costs only the Work panel's freshness (the rows read last stay), never the
        crew panels."""
        try:
            rows: dict[str, WorkRow] = {}
            self.corrupt = {}
            recent = ledger.recent_finished_ids(self.home, FINISHED_SHOWN)
            finished = {w: r for w, r in self.rows.items() if r.finished}
            was_open = [w for w, r in self.rows.items() if not r.finished]  # finished unseen?
            for work_id in dict.fromkeys([*ledger.open_ids(self.home), *was_open, *recent]):
                old = self.rows.get(work_id)
                row = old if old is not None and old.finished else self._read(work_id, alerts)
                if row is None:
                    continue
                _announce(old, row, alerts, announce)
                if row.finished:
                    finished[work_id] = row
                else:
                    rows[work_id] = row
                    finished.pop(work_id, None)
            newest = sorted(
                finished.values(), key=lambda r: (r.updated_at, r.work_id), reverse=True
            )[:FINISHED_SHOWN]
            for row in newest:
                rows[row.work_id] = row
        except Exception as exc:  # noqa: BLE001 - the Work panel's failure stays its own
            self._failed(exc, alerts)
            return dict(self.rows)
        self.problem = None
        self.rows = rows
        return rows

    def _failed(self, exc: Exception, alerts: list) -> None:
        what = (
            exc.message
            if isinstance(exc, CaptainError)
            else f"{type(exc).__name__}: {str(exc)[:300]}"
        )
        if what != self.problem:
            from captain_tui.cockpit.feed.alerts import Alert

            alerts.append(
                Alert(
                    "quarantine",
                    "The work ledger could not be read",
                    f"{what} (the Work panel shows what was read last)",
                )
            )
        self.problem = what

    def apply(
        self, ids: Iterable[str], alerts: list, *, announce: bool
    ) -> dict[str, WorkRow] | None:
        """Re-read these items; the new rows, or None when nothing shown changed."""
        rows = None
        try:
            for work_id in dict.fromkeys(ids):
                old = self.rows.get(work_id)
                row = self._read(work_id, alerts)
                if row == old:
                    continue
                rows = dict(self.rows) if rows is None else rows
                if row is None:
                    rows.pop(work_id, None)
                else:
                    rows[work_id] = row
                    _announce(old, row, alerts, announce)
        except Exception as exc:  # noqa: BLE001 - as in rescan: the next one repairs it
            self._failed(exc, alerts)
            return dict(self.rows)
        if rows is not None:
            self.rows = rows
        return rows

    def _read(self, work_id: str, alerts: list) -> WorkRow | None:
        try:
            item = ledger.load(self.home, work_id)
        except CaptainError as err:
            if err.code in LEDGER_WIDE:
                raise  # the ledger's, not the item's: keep what was read last
            if err.code == corrupt.CODE:
                self._corrupt(work_id, err, alerts)
            return None  # not a work item, or a history that does not fold: not shown
        self.corrupt.pop(work_id, None)
        if item is None:
            return None
        why = None
        if item.state == RECONCILE:
            try:
                history = ledger.events(self.home, work_id)
            except CaptainError:
                history = []
            why = next(
                (e.reason for e in reversed(history) if e.type == "needs_reconciliation"), None
            )
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

    def _corrupt(self, work_id: str, err: CaptainError, alerts: list) -> None:
        self.corrupt[work_id] = err.message
        if work_id in self._said:
            return
        self._said.add(work_id)
        from captain_tui.cockpit.feed.alerts import Alert

        alerts.append(Alert("quarantine", "A work item could not be read", err.message))


def work_row(
    item: WorkItem,
    why: str | None = None,
    facts: controls.Facts | None = None,
    task: str | None = None,
) -> WorkRow:

    current = item.attempts[-1] if item.attempts else None
    locator = current.runtime_locator if current is not None else None
    return WorkRow(
        work_id=item.work_id,
        key=_key(item.crew),
        state=item.state,
        source=item.source,
        crew=item.crew,
        generation=item.generation,
        created_at=item.created_at,
        updated_at=item.updated_at,
        target_revision=item.target_revision,
        replay_of=item.replay_of,
        pane=locator.pane_id if locator else None,
        why=why,
        facts=facts,
        title=jobs.title(item, task),
        named=jobs.named_as(item, task),
        spent=tuple(attempt_spend(a) for a in item.attempts),
    )


def attempt_spend(attempt: Attempt) -> Spend | None:
    """What an attempt's spend notes recorded (docs/ledger.md "Spend"); None: nothing."""
    if attempt.turns is None:
        return None
    return Spend(
        attempt.input_tokens or 0,
        attempt.output_tokens or 0,
        attempt.cache_read_tokens or 0,
        attempt.cache_write_tokens or 0,
        attempt.turns,
        attempt.cost_usd,
        (),
    )


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
        alerts.append(
            Alert(
                RECONCILE,
                f"{what} needs reconciliation",
                f"{row.why or 'its outcome is unclear'} ({where}, generation "
                f"{row.generation}). It keeps its slot until you resolve it.",
            )
        )

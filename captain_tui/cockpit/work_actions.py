"""The cockpit's Work commands: cancel, replay, resolve, and the Work panel's filter.

A mixin of ``CaptainApp`` (kept apart so app.py stays about the cockpit as a whole), typed:
each method's ``self`` is a ``WorkHost``, the Protocol that says what the mixin needs of the
app. Like every action, each one opens a confirmation or a form on the UI thread and runs
the use case (``jobs`` over ``usecases``) in a thread worker (``_in_worker`` / ``_open``);
a refusal shows its code and writes nothing.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime
from functools import partial
from typing import Any, Protocol, TypeVar

from textual.notifications import SeverityLevel
from textual.widget import Widget

from captain_tui.cockpit import jobs
from state.home import Home
from state.work import controls
from widgets.panels.work_panel import WorkPanel
from widgets.screens.forms import ConfirmScreen, FormScreen
from widgets.screens.work_forms import ReplayScreen, ResolveScreen
from widgets.view import RECONCILE, HomeView, WorkRow

_Node = TypeVar("_Node", bound=Widget)
F = TypeVar("F", bound=FormScreen)  # a kind of form (CaptainApp._form)


class WorkHost(Protocol):
    """The app as its Work commands see it: what ``CaptainApp`` gives them (its home, the
    view the feed read, its clock, toasts, screens and the way every action runs its use
    case off the UI thread), and the mixin's own methods, which call one another."""

    home: Home
    view: HomeView
    last_refresh: datetime | None
    clock: Callable[[], datetime]

    def query_one(self, selector: type[_Node], /) -> _Node: ...

    def notify(
        self,
        message: str,
        *,
        title: str = "",
        severity: SeverityLevel = "information",
        timeout: float | None = None,
        markup: bool = False,
    ) -> None: ...

    def push_screen(
        self, screen: ConfirmScreen, callback: Callable[[bool | None], None], /
    ) -> object: ...

    def _open(
        self, form: FormScreen, perform: Callable[[dict[str, Any]], str], ring: str | None = None
    ) -> None: ...

    def _in_worker(self, job: Callable[[], str | jobs.Said]) -> object: ...

    def _form(self, kind: type[F], *subject: Any, key: str) -> F: ...

    def _show(self) -> None: ...

    # the mixin's own (WorkCommands)
    def selected_work(self) -> WorkRow | None: ...

    def why_not_work(self: WorkHost, need: str) -> str | None: ...

    def _work_refused(self: WorkHost, need: str) -> bool: ...


class WorkCommands:
    """The Work panel's commands, mixed into ``CaptainApp`` (see ``WorkHost``)."""

    def selected_work(self: WorkHost) -> WorkRow | None:
        """The work item under the Work panel's cursor (its first row until one is picked:
        needs reconciliation comes first)."""
        return self.view.work_item(self.query_one(WorkPanel).current_key)

    def why_not_work(self: WorkHost, need: str) -> str | None:
        item = self.selected_work()
        if item is None:
            return "No work item is selected."
        # cancel and replay are offered by state.work.controls, from the facts the feed read
        action = {"live_work": "cancel", "finished_work": "replay"}.get(need)
        refused = (
            controls.refusal(
                action,
                item.facts or controls.Facts(item.work_id, item.state, item.source),
                self.clock(),
            )
            if action
            else None
        )
        if refused is not None and refused.code == "routine_receipt":
            return refused.message  # the reason that holds whatever its state
        what = _upper(_named(item))
        if need == "live_work" and item.finished:
            return f"{what} has already finished ({item.state}); nothing to cancel."
        if need == "finished_work" and not item.finished:
            return (
                f"{what} is {item.state}; only a finished item can be replayed "
                "(replaying live work would run it twice; cancel it first)."
            )
        if need == "reconciling_work" and not item.reconciling:
            return f"{what} is {item.state}; only an item that needs reconciliation is resolved."
        return refused.message if refused is not None else None

    def action_cycle_work_filter(self: WorkHost) -> None:
        panel = self.query_one(WorkPanel)
        panel.cycle_filter()
        if self.last_refresh is not None:
            self._show()

    def _work_refused(self: WorkHost, need: str) -> bool:
        """Say why, and open nothing, when the control is not offered (the key is dimmed;
        this covers a body that expired, or a row that changed, since it was drawn)."""
        why = self.why_not_work(need)
        if why is not None:
            self.notify(why, title="Not offered", severity="warning", markup=False)
        return why is not None

    def action_cancel_work(self: WorkHost) -> None:
        item = self.selected_work()
        if item is None or self._work_refused("live_work"):
            return
        if item.state == "queued":
            body = f"{_upper(_named(item))} has not started: it will be cancelled at once."
        else:
            stop = (
                f"Its pane {item.pane} is closed"
                if item.pane
                else "It has no pane on record, so its stop cannot be confirmed"
            )
            body = (
                f"{_upper(_named(item))} {_words(item.state)} (generation {item.generation}). "
                f"{stop}; only a confirmed stop cancels it. Otherwise it needs "
                "reconciliation and keeps its slot until you resolve it."
            )
        if item.source == "assignment" and item.crew:
            body += (
                f" While it is {item.crew}'s current assignment, {item.crew} will be "
                "dismissed with it (its unread mail will bounce); recruiting the name "
                "again (r) offers to carry on from that task."
            )
        body += " Cancelling never undoes what the work already did."

        def decided(yes: bool | None) -> None:
            if yes:
                self._in_worker(partial(jobs.cancel_work, self.home, item.work_id))

        self.push_screen(ConfirmScreen(f"Cancel {_named(item)}?", body, yes="Cancel work"), decided)

    def action_replay_work(self: WorkHost) -> None:
        item = self.selected_work()
        if item is None or self._work_refused("finished_work"):
            return
        form = self._form(ReplayScreen, item, key=f"replay:{item.work_id}")
        self._open(
            form,
            lambda v: jobs.replay_work(self.home, item.work_id, v["reason"], v["target_revision"]),
        )

    def action_resolve_work(self: WorkHost) -> None:
        item = self.selected_work()
        if item is None or not item.reconciling:
            return
        form = self._form(ResolveScreen, item, key=f"resolve:{item.work_id}:{item.generation}")
        self._open(
            form,
            lambda v: jobs.resolve_work(
                self.home, item.work_id, v["generation"], v["to"], v["reason"], v["runtime_stopped"]
            ),
        )


def _words(state: str) -> str:
    return "needs reconciliation" if state == RECONCILE else f"is {state}"


def reconciling_text(count: int) -> str:
    """The title line's loud part."""
    return f"{count} {'needs' if count == 1 else 'need'} reconciliation" if count else ""


def _named(item: WorkRow) -> str:
    """A work item in a dialog: its name (the feed's, ``jobs.named``), never its bare ID."""
    return item.named or item.work_id


def _upper(text: str) -> str:
    return text[:1].upper() + text[1:]

"""The cockpit: a Textual app over one home.

Threads and messages, in one place:

- the feed pump (a thread worker) owns the ``Feed``; it reads the home and posts
  ``FeedUpdated`` with a fresh immutable ``HomeView``;
- the watcher (a thread worker reading the watcher process on an event loop of its own,
  see ``Watcher``) turns change batches into pump requests;
- on a PostgreSQL ledger, the ledger listener (a thread worker, ``LedgerListener``) turns
  the database's notifications into pump requests for the work items written;
- the doorbell (a thread worker) runs ``Runner.tick`` like ``captain wait`` does, so held
  mail rings in while the cockpit is open;
- every action runs its protocol call in a thread worker, which posts its result as a
  message (``worker_results``) that an ``on_…`` method here shows;
- the pane preview (``widgets.preview``) keeps its own clock and captures tmux in a thread
  worker of its own, through the function the app gives it.

The UI thread only renders views and opens forms: it never touches the disk or tmux.
Alerts are batched by ``alert_batch.AlertBatch``; the Work panel's commands are the typed
mixin ``work.WorkCommands``.
"""

from __future__ import annotations

import dataclasses
import threading
import time
import weakref
from collections.abc import Callable
from datetime import datetime
from functools import partial
from typing import Any, TypeVar

from textual import events, on, work
from textual.actions import parse as parse_action
from textual.app import App, ComposeResult, SystemCommand
from textual.containers import Horizontal, Vertical
from textual.content import Content
from textual.dom import DOMNode
from textual.message import Message
from textual.notifications import SeverityLevel
from textual.screen import Screen
from textual.timer import Timer
from textual.worker import get_current_worker

from captain_tui import usecases as ops
from captain_tui.cockpit import command_table, jobs, prefs
from captain_tui.cockpit.alert_batch import ALERT_TIMEOUT, ALERT_WINDOW, AlertBatch
from captain_tui.cockpit.command_table import BY_ACTION, COMMANDS, Command
from captain_tui.cockpit.feed.alerts import Alert
from captain_tui.cockpit.feed.home_feed import Feed, Update
from captain_tui.cockpit.feed.listener import LedgerListener
from captain_tui.cockpit.feed.pump import RESCAN_SECONDS, WORK_SECONDS, FeedPump
from captain_tui.cockpit.feed.watcher import Watcher
from captain_tui.cockpit.heap import Collector
from captain_tui.cockpit.review_actions import ReviewCommands
from captain_tui.cockpit.terminal import recording, writer
from captain_tui.cockpit.work_actions import WorkCommands, reconciling_text
from captain_tui.cockpit.worker_results import (
    AlertRaised,
    AttachNeeded,
    ConfirmNeeded,
    FormSent,
    Outcome,
    Refused,
)
from captain_tui.repo.change import Change
from captain_tui.runtime.tmux import Tmux, resolve_socket
from state.crew import spend
from state.crew.guards import CAPTAIN
from state.errors import CaptainError
from state.home import Home
from state.records import PaneLocator
from state.vocab import counted, dialog_title, ended, quoted, short
from widgets.cells import AgeWatch, age, as_markup, clean, one_line
from widgets.chrome import CockpitFooter, CockpitHeader
from widgets.panels.approvals_panel import ApprovalsPanel
from widgets.panels.base import Panel
from widgets.panels.crew_panel import CrewPanel
from widgets.panels.doorbells_panel import DoorbellsPanel
from widgets.panels.notifications_panel import NotificationsPanel
from widgets.panels.questions_panel import QuestionsPanel
from widgets.panels.row_list import PanelTable
from widgets.panels.work_panel import WorkPanel
from widgets.preview import EVERY as PREVIEW_EVERY
from widgets.preview import PanePreview, Subject
from widgets.screens.forms import (
    AnswerScreen,
    AssignScreen,
    ConfirmScreen,
    DenyScreen,
    FormScreen,
    RecruitScreen,
    TellScreen,
)
from widgets.screens.help import HelpScreen
from widgets.screens.review_screen import ReviewScreen
from widgets.screens.settings import SettingsScreen
from widgets.view import ApprovalRow, CrewRow, CrewView, HomeView, NotificationRow, QuestionRow

# the runner is asked when one of its clocks is due (Runner.due), a change is heard under
# the home, or a crew's process ends; never less often than this (a safety net)
DOORBELL_LONGEST = 5.0
AGES_EVERY = 5.0  # "4m ago" columns are re-rendered from the view (no I/O) this often,
AGES_LONGEST = 60.0  # ... or, while no age drawn will read differently sooner, this seldom
# an action's plain good news. Textual's toast rack stays bottom right: over the pane preview
# (the least needed while a toast is fresh), below the Work panel, which a stack of toasts
# reaches; so routine ones leave soon, and only what needs the captain stays ALERT_TIMEOUT
OUTCOME_TIMEOUT = 3
T = TypeVar("T")  # what a job returns (_attempt)
F = TypeVar("F", bound=FormScreen)  # a kind of form (_form)


class FeedUpdated(Message):
    """A new view of the home. Only the newest one matters, so a queued one is replaced by
    the next — unless it carries alerts, which must each be raised."""

    def __init__(self, update: Update) -> None:
        super().__init__()
        self.update = update

    def can_replace(self, message: Message) -> bool:
        return isinstance(message, FeedUpdated) and not self.update.alerts


class FeedProblem(Message):
    """The feed could not read the home (it keeps retrying)."""

    def __init__(self, error: Exception) -> None:
        super().__init__()
        self.error = error


def _local_now() -> datetime:
    return datetime.now().astimezone()


class CaptainApp(WorkCommands, ReviewCommands, App):
    CSS_PATH = "cockpit.tcss"
    TITLE = "captain"
    BINDINGS = command_table.bindings()
    NOTIFICATION_TIMEOUT = OUTCOME_TIMEOUT
    _loud = ""  # the title line's "2 need reconciliation" (see format_title)

    def __init__(
        self,
        home: Home,
        *,
        run_doorbell: bool = True,
        clock: Callable[[], datetime] | None = None,
        socket: str | None = None,
    ) -> None:
        super().__init__()
        self.home = home
        # this cockpit's tmux server, resolved once (--socket > $CAPTAIN_TMUX_SOCKET > the
        # tmux it runs in > captain; the demo passes its private one): every window the
        # cockpit opens goes there. What acts on an existing pane (jump, dismiss, the
        # preview, the doorbell) uses the server that pane's record names.
        self.tmux_socket = resolve_socket(socket)
        self.run_doorbell = run_doorbell
        self.clock = clock or _local_now
        self.settings = prefs.load()
        self._saving = threading.Lock()  # settings writes, one at a time (_save_settings)
        self.view = HomeView()
        self.scanned = False  # the first full read of the home has finished
        self.last_refresh: datetime | None = None
        self.last_change: datetime | None = None  # when the view last differed (the header)
        # knobs for tests and benchmarks; set them before the app runs
        self.watch_home = True
        self.listen_ledger = True  # a PostgreSQL ledger's notifications (files: none)
        self.rescan_every = RESCAN_SECONDS
        self.work_every = WORK_SECONDS  # the Work panel's re-read on a shared ledger
        self.preview_every = PREVIEW_EVERY  # the pane preview's capture (it backs off)
        self.ages_every = AGES_EVERY
        self.alert_window = ALERT_WINDOW
        self.drafts: dict[str, dict[str, Any]] = {}  # cancelled forms' text, by draft key
        self._forms: dict[type[FormScreen], FormScreen] = {}  # each form, built once (_form)
        self._jobs: dict[FormScreen, tuple[Callable[[dict], str], str | None]] = {}
        # each open review screen's change: it goes with its screen
        self._reviews: weakref.WeakKeyDictionary[ReviewScreen, Change] = weakref.WeakKeyDictionary()
        self._pump: FeedPump | None = None
        self._watcher: Watcher | None = None
        self._listener: LedgerListener | None = None
        self._stopping = False
        self._config_said: str | None = None  # the invalid_config last toasted
        self._last_problem: str | None = None
        self._footer_state: tuple[bool, ...] | None = None
        self._heap = Collector()  # full garbage collections between events (cockpit.heap)
        # time.monotonic() of the last feed update or key: a due full collection waits
        # until neither came for a moment (cockpit.heap)
        self._active_at = 0.0
        self._ages_timer: Timer | None = None  # the next ages redraw (_show_ages)
        self._ages_due = 0.0  # ... at this time.monotonic()
        # when the soonest age drawn reads differently; told of a sooner one (_age_sooner)
        self._ages_watch = AgeWatch(wake=self._age_sooner)
        self.alert_batch = AlertBatch(self, closing=lambda: self._closing_down)
        self._doorbell_wake: Any = None  # what the doorbell worker sleeps on (runner.Wake)
        self.doorbell_ticks = 0  # rounds the doorbell worker ran (tests, benchmarks)

    # -- layout ------------------------------------------------------------------------

    def compose(self) -> ComposeResult:
        yield CockpitHeader(icon="⚓")
        keys = {c.id: command_table.key_label(c) for c in COMMANDS}
        ages = self._ages_watch
        yield CrewPanel(id="crew", keys=keys, ages=ages)
        with Horizontal(id="lower"):
            with Vertical(id="inbox"):
                yield QuestionsPanel(id="questions", keys=keys, ages=ages)
                yield ApprovalsPanel(id="approvals", keys=keys, ages=ages)
                yield NotificationsPanel(id="notifications", keys=keys, ages=ages)
                yield DoorbellsPanel(id="doorbells", keys=keys, ages=ages)
            with Vertical(id="side"):
                yield WorkPanel(id="work", keys=keys, ages=ages)
                yield PanePreview(_capture_pane, every=self.preview_every, id="preview")
        yield CockpitFooter()

    def on_mount(self) -> None:
        if self.settings.theme in self.available_themes:
            self.theme = self.settings.theme
        self.theme_changed_signal.subscribe(self, self._theme_changed)
        self.sub_title = "reading the home…"
        self.alert_batch.window = self.alert_window  # a knob: set before the app runs
        self.query_one("#crew", CrewPanel).table.focus()
        self._pump = FeedPump(
            Feed(self.home),
            lambda update: self.post_message(FeedUpdated(update)),
            rescan_every=self.rescan_every,
            work_every=self.work_every,
            report=lambda exc: self.post_message(FeedProblem(exc)),
        )
        self.run_worker(self._pump.run, thread=True, name="feed", group="feed", exit_on_error=False)
        if self.run_doorbell:
            self.run_worker(
                self._doorbell_loop,
                thread=True,
                name="doorbell",
                group="doorbell",
                exit_on_error=False,
            )
        self._ages_in(self.ages_every)
        self._heap.start()
        self.set_interval(1.0, lambda: self._heap.tick(time.monotonic() - self._active_at))

    async def on_event(self, event: events.Event) -> None:
        if isinstance(event, events.Key):
            # a person typing: the full collection that is due waits for them to pause (a
            # form opened on the big home waited 541 ms for one in the bench)
            self._active_at = time.monotonic()
        await super().on_event(event)

    def on_unmount(self) -> None:
        self._stopping = True
        if self._doorbell_wake is not None:
            self._doorbell_wake.set()  # its loop ends now, not at its next clock
        self._heap.stop()
        if self._pump is not None:
            self._pump.stop()
        if self._watcher is not None:
            self._watcher.stop()
        if self._listener is not None:
            self._listener.stop()

    @property
    def _closing_down(self) -> bool:
        """Late messages (a worker's result, a highlight) can arrive while the app shuts
        down; with no screen left there is nothing to show them on."""
        return self._stopping or not self.is_running or not self.screen_stack

    # -- the feed ------------------------------------------------------------------------

    def on_feed_updated(self, message: FeedUpdated) -> None:
        update = message.update
        assert self._pump is not None  # it posted this
        self._active_at = time.monotonic()
        if self.last_change is None or update.view != self.view:
            self.last_change = self.clock()  # a rescan that found nothing new is not news
            if self._ages_timer is not None:
                self._ages_soon()
        self.view = update.view
        self.scanned = self.scanned or update.scanned
        self.last_refresh = self.clock()
        self._last_problem = None  # the home reads again: a new problem is news
        if self._closing_down:
            return
        self._show()
        if self.scanned and not self._heap.frozen:
            self.call_after_refresh(self._heap.freeze)  # what start-up built stays
        if self.watch_home and self._watcher is None:
            # after the first rows are painted (see Watcher); once up, it rescans
            self._watcher = Watcher(self.home.root, self._pump)
            self.run_worker(
                self._watcher.run, thread=True, name="watcher", group="feed", exit_on_error=False
            )
        if self.listen_ledger and self._listener is None and self.scanned:
            # a shared ledger's writes change nothing under the home: hear them from the
            # database (on the files the worker finds no listener and ends at once)
            self._listener = LedgerListener(self.home, self._pump)
            self.run_worker(
                self._listener.run, thread=True, name="ledger", group="feed", exit_on_error=False
            )
        for alert in update.alerts:
            self.alert_batch.add(alert)

    def _show(self) -> None:
        """Render the current view. Only panels whose rows changed are touched, and they
        change only the rows and cells that changed: an event costs a row, not a screen."""
        if self.last_refresh is None or self._closing_down:
            return  # nothing read yet: panels keep saying so
        now = self.clock()
        view = self.view
        for panel, rows in (
            (self.query_one(CrewPanel), view.crew_rows()),
            (self.query_one(QuestionsPanel), view.questions()),
            (self.query_one(ApprovalsPanel), view.approvals()),
            (self.query_one(DoorbellsPanel), view.doorbells()),
            (self.query_one(NotificationsPanel), view.notifications()),
        ):
            if not panel.loaded or rows != panel.rows():
                panel.show(rows, now, every_row=False)
        if self.scanned:  # until the ledger was read once, the panel says it is reading
            self.query_one(WorkPanel).show_view(view, now)
        self._loud = reconciling_text(view.reconciling())
        self._show_status(now)
        self._refresh_footer()
        self._follow_preview(again=False)  # the selected crew changed (or its pane)?

    def _show_status(self, now: datetime) -> None:
        """The header's status: the home is watched all along, so it says when the view
        last changed (and, once that is a while ago, how long ago: true with no event)."""
        rows = self.view.crew_rows()
        count = len(rows)
        figures = [r.spend_all for r in rows if r.spend_all is not None]
        spent = f" · spent {spend.shown(spend.total(figures))}" if figures else ""
        changed = self.last_change or now
        since = f", {age(changed, now)} ago" if (now - changed).total_seconds() >= 60 else ""
        reading = "" if self.scanned else " · reading the home…"
        loud = f" · {self._loud}" if self._loud else ""
        self.sub_title = (
            f"{count} crew{spent} · watching · last change {changed:%H:%M:%S}{since}{reading}{loud}"
        )

    def _ages_in(self, seconds: float) -> None:
        """Redraw the ages ``seconds`` from now (one timer, moved: never two)."""
        if self._ages_timer is not None:
            self._ages_timer.stop()
        self._ages_due = time.monotonic() + seconds
        self._ages_timer = self.set_timer(seconds, self._show_ages, name="ages")

    def _show_ages(self) -> None:
        """The clock moved: "4m" may now be "5m". Rows are the same, so only the age cells
        that read differently are rendered again. The next redraw is when the first age
        drawn will read differently (at least ``ages_every``, at most ``AGES_LONGEST``
        seconds away): an idle cockpit whose ages read in minutes wakes for them once a
        minute, not every ``ages_every`` seconds to find nothing changed."""
        self._ages_timer = None
        if self._closing_down:
            return
        if self.last_refresh is None:
            self._ages_in(self.ages_every)
            return
        now = self.clock()
        soonest: datetime | None = None
        for panel in self.query(Panel):
            panel.show_ages(now)  # only the rows on screen whose ages read differently
            due = panel.next_due()
            if due is not None and (soonest is None or due < soonest):
                soonest = due
        self._ages_watch.soonest = soonest
        self._show_status(now)
        self._refresh_footer()  # a webhook body's expiry dims Replay with no event
        wait = AGES_LONGEST if soonest is None else (soonest - now).total_seconds()
        if self.last_change is not None:  # the header says "N ago" from a minute on
            quiet = (now - self.last_change).total_seconds()
            if quiet < 60:
                wait = min(wait, 60 - quiet)
        self._ages_in(min(max(wait, self.ages_every), AGES_LONGEST))

    def _age_sooner(self, when: datetime) -> None:
        """A row drawn between two ages ticks (a new row, one scrolled into view) has an
        age that reads differently at ``when``, sooner than any before: the next tick is
        moved to then (never sooner than ``ages_every`` from now)."""
        if self._ages_timer is None:
            return  # in a tick (it works out the next), or not started
        wait = max((when - self.clock()).total_seconds(), self.ages_every)
        if time.monotonic() + wait < self._ages_due:
            self._ages_in(wait)

    def _ages_soon(self) -> None:
        """The rows changed: a new row's age ("0s") reads differently soon."""
        if self._ages_due > time.monotonic() + self.ages_every:
            self._ages_in(self.ages_every)

    def _refresh_footer(self) -> None:
        """Tell the footer only when a key's dimming changes: working out the keys asks
        ``why_not`` of every command again (and a change of keys recomposes the footer,
        see ``CockpitFooter``)."""
        state = tuple(self.why_not(c) is None for c in COMMANDS)
        if state != self._footer_state:
            self._footer_state = state
            self.refresh_bindings()

    def notify(
        self,
        message: str,
        *,
        title: str = "",
        severity: SeverityLevel = "information",
        timeout: float | None = None,
        markup: bool = False,
    ) -> None:
        """Every toast (the app's, its screens' and widgets'): its text cleaned
        (``widgets.cells.clean``) and never parsed as markup, whatever the caller asked.
        A toast says what crews, hooks, webhooks and file names said."""
        super().notify(
            clean(str(message)),
            title=clean(str(title)),
            severity=severity,
            timeout=timeout,
            markup=False,
        )

    def format_title(self, title: str, sub_title: str) -> Content:
        """The title line; work that needs reconciliation is said loudly at its end. Both
        parts are cleaned: a screen's title may name what a crew wrote."""
        title, sub_title = one_line(title), one_line(sub_title)
        loud = self._loud
        if not loud or not sub_title.endswith(loud):
            return super().format_title(title, sub_title)
        quiet = sub_title[: -len(loud)]
        colour = self.theme_variables.get("error", "red")
        return Content.assemble(
            Content(title),
            (" — ", "dim"),
            Content(quiet).stylize("dim"),
            (f" ⚠ {loud} ", f"bold {colour} reverse"),
        )

    def on_feed_problem(self, message: FeedProblem) -> None:
        exc = message.error
        what = exc.message if isinstance(exc, CaptainError) else f"{type(exc).__name__}: {exc}"
        if self._closing_down or what == self._last_problem:
            return  # the pump retries every second; say it once, not every second
        self._last_problem = what
        self.notify(
            f"{what}\nShowing what was read last; trying again.",
            markup=False,
            title="The home could not be read",
            severity="error",
            timeout=8,
        )

    def action_rescan(self) -> None:
        if self._pump is not None:
            self._pump.request_rescan()
            self.notify("Reading the whole home again.", timeout=2)

    def _doorbell_loop(self) -> None:
        """The cockpit is one of the runners: held doorbells ring while it is open."""
        from captain_tui.runtime.runner import Runner, Wake

        worker = get_current_worker()
        runner = Runner(self.home)
        wake = self._doorbell_wake = Wake()
        pump = self._pump
        if pump is not None:  # rounds skip the crews while the watcher hears nothing
            runner.heard = pump.heard
            pump.on_heard = wake.set  # ... and the loop sleeps until it hears something
        try:
            while not (worker.is_cancelled or self._stopping):
                try:
                    runner.tick()
                except Exception as exc:  # noqa: BLE001 - a doorbell problem must not stop it
                    self.log.warning(f"doorbell: {type(exc).__name__}: {exc}")
                self._store_warnings()
                self.doorbell_ticks += 1
                wake.wait(min(runner.due(), DOORBELL_LONGEST), runner.fds())
        finally:
            if pump is not None:
                pump.on_heard = None
            runner.close()  # its watches on crews' processes (pidfds)
            wake.close()

    def _store_warnings(self) -> None:
        """What the store reports and leaves in place (a broken config.toml, a file it could
        not move) has no quarantine/*.reason for the feed to see: a toast here. Moved files
        are the feed's (their .reason file), and so are ledger rows that do not validate
        (the Work panel's, once per item); drained so the list does not grow."""
        from state.errors import CaptainError
        from state.work import corrupt
        from state.work.backend import CHANGED

        try:
            self.home.config()  # a stat per round; said as soon as the file breaks, used or not
        except CaptainError as err:  # invalid_config with no good settings to keep
            if err.message != self._config_said:
                self._config_said = err.message
                self.post_message(
                    AlertRaised(
                        Alert(
                            "quarantine", "config.toml is not usable", f"[{err.code}] {err.message}"
                        )
                    )
                )
        reports = self.home.store.reports
        reports.reported()
        for path, reason in reports.warnings():
            if path.startswith(corrupt.PREFIX) or reason.startswith(f"[{CHANGED}]"):
                continue  # the Work panel says these itself (once per item, per change)
            self.post_message(
                AlertRaised(Alert("quarantine", f"{path} is not usable", f"{path} {reason}"))
            )

    # -- alerts (batched by alert_batch.AlertBatch) -------------------------------------

    def on_alert_raised(self, message: AlertRaised) -> None:
        if not self._closing_down:
            self.alert_batch.add(message.alert)

    def emit_to_terminal(self, sequence: str) -> None:
        """Bytes for the terminal itself (bell, desktop notices); nothing when headless."""
        if sequence == "\a":
            self.bell()
            return
        driver = writer(self)  # see get_driver_class
        if driver is not None:
            driver.write(sequence)
            driver.flush()

    def get_driver_class(self):
        """The platform's driver, findable while it runs: Textual has no public way to
        write a desktop notice's escape sequence (captain_tui.cockpit.terminal)."""
        return recording(super().get_driver_class())

    # -- what is selected ----------------------------------------------------------------

    def _main_focus_panel(self) -> Panel | None:
        """The panel holding focus on the main screen (a modal or the palette on top does
        not change what the person had selected)."""
        node: DOMNode | None = self.screen_stack[0].focused
        while node is not None and not isinstance(node, Panel):
            node = node.parent
        return node

    def selected_crew(self) -> CrewRow | None:
        """The crew of the row under the cursor in the focused panel (or in Crew)."""
        panel = self._main_focus_panel()
        row = panel.current if panel is not None else None
        key = getattr(row, "key", None)
        if key is None:
            key = self.query_one(CrewPanel).current_key
        return self.view.crew(key)

    def _chosen_crews_view(self) -> CrewView | None:
        """The view of the crew the captain chose in Crew, when Crew has the focus (from the
        other panels, ``a`` and ``y`` keep to the row highlighted in Questions/Approvals)."""
        if not isinstance(self._main_focus_panel(), CrewPanel):
            return None
        crew = self.selected_crew()
        return self.view.crews.get(crew.key) if crew is not None else None

    def selected_question(self) -> QuestionRow | None:
        """What ``a`` answers: in Crew, the selected crew's own question when it has one (a on
        a crew answers that crew, never another's listed first); else the one highlighted in
        Questions."""
        own = self._chosen_crews_view()
        if own is not None and own.question is not None:
            return own.question
        return self.view.question(self.query_one(QuestionsPanel).current_key)

    def selected_approval(self) -> ApprovalRow | None:
        """What ``y`` / ``Y`` / ``N`` decide: in Crew, the selected crew's oldest open request
        when it has one; else the one highlighted in Approvals (its first row until another
        is picked)."""
        own = self._chosen_crews_view()
        if own is not None and own.approvals:
            return min(own.approvals, key=lambda a: (a.created_at, a.request_id))
        return self.view.approval(self.query_one(ApprovalsPanel).current_key)

    def selected_notification(self) -> NotificationRow | None:
        return self.view.notification(self.query_one(NotificationsPanel).current_key)

    def to_acknowledge(self) -> list[NotificationRow]:
        """What ``x`` acknowledges now. In Notifications: the highlighted one. Anywhere else:
        every notification of the selected crew still listed, oldest first — what blocks
        its next task (``n``), e.g. its *done* report and a question answered elsewhere."""
        if isinstance(self._main_focus_panel(), NotificationsPanel):
            n = self.selected_notification()
            return [n] if n is not None else []
        crew = self.selected_crew()
        view = self.view.crews.get(crew.key) if crew is not None else None
        return (
            sorted(view.notifications, key=lambda n: (n.created_at, n.delivery_id))
            if view is not None
            else []
        )

    def _why_not_acknowledge(self) -> str | None:
        if self.to_acknowledge():
            return None
        crew = (
            None
            if isinstance(self._main_focus_panel(), NotificationsPanel)
            else self.selected_crew()
        )
        if crew is None:
            return "Nothing to acknowledge."
        others = (
            " (the Notifications panel lists other crews')" if self.view.notifications() else ""
        )
        return f"{crew.name} has no notification to acknowledge{others}."

    def why_not(self, command: Command) -> str | None:
        """Why a command cannot run now (None: it can). Dims it in the footer."""
        need = command.needs
        if need is None:
            return None
        if need.endswith("_work"):
            return self.why_not_work(need)
        if need == "question":
            return None if self.selected_question() else "No question is waiting."
        if need in ("approval", "approval_session"):
            a = self.selected_approval()
            if a is None:
                return "No approval request is open."
            if need == "approval_session" and not a.allow_session:
                return f"{a.crew}'s agent ({a.agent}) cannot take 'allow for this session'."
            return None
        if need == "notification":
            return self._why_not_acknowledge()
        crew = self.selected_crew()
        if crew is None:
            return "No crew is selected."
        if need == "working_crew" and crew.done:
            return f"{crew.name} has finished; press {_key('assign')} for its next task."
        if need == "done_crew" and not crew.done:
            return (
                ended(f"{crew.name} is still on its task {quoted(short(crew.task))}")
                + " It gets a next task once it says it is done."
            )
        if need == "pane" and crew.pane is None:
            return f"{crew.name} has no tmux pane (it was recorded with --no-launch)."
        if need == "blocked_crew":
            return _why_not_unblock(crew)
        return None

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        command = BY_ACTION.get(action)
        if command is not None and self.why_not(command):
            return None  # shown dimmed: the key is there, it just does not apply now
        return True

    async def run_action(self, action, default_namespace=None, namespaces=None) -> bool:
        """Every command's key (and a click on it in the footer) comes here: one that does
        not apply now says why in a toast instead of doing nothing. The one place for every
        command in ``command_table.COMMANDS``; the palette goes through ``_invoke``."""
        if isinstance(action, str):
            namespace, name, _ = parse_action(action)
            ours = namespace == "app" if namespace else default_namespace in (None, self)
            command = BY_ACTION.get(name) if ours else None
            if command is not None and self._said_why_not(command):
                return True  # handled: the key did what it can, it said why
        return await super().run_action(action, default_namespace, namespaces)

    def _said_why_not(self, command: Command) -> bool:
        why = self.why_not(command)
        if why:
            self.notify(
                why,
                title=f"{command.label} ({command_table.key_label(command)}) is not available now",
                severity="warning",
                markup=False,
                timeout=4,
            )
        return bool(why)

    @on(PanelTable.RowHighlighted)
    def _selection_moved(self) -> None:
        if self._closing_down:
            return
        self._refresh_footer()  # a table refilled by the feed moves its cursor too
        self._follow_preview()

    def on_descendant_focus(self) -> None:
        if self._closing_down:
            return
        self.refresh_bindings()
        self._follow_preview()

    # -- the command palette -------------------------------------------------------------

    def get_system_commands(self, screen: Screen):
        for command in COMMANDS:
            why = self.why_not(command)
            help_text = f"{command_table.key_label(command)} · {command.description}"
            if why:
                help_text += f" (not now: {why})"
            yield SystemCommand(
                as_markup(command.label), as_markup(help_text), partial(self._invoke, command)
            )
        yield from super().get_system_commands(screen)

    def _invoke(self, command: Command) -> None:
        if self._said_why_not(command):
            return
        getattr(self, f"action_{command.action}")()

    # -- actions -------------------------------------------------------------------------

    def _open(
        self, form: FormScreen, perform: Callable[[dict], str], ring: str | None = None
    ) -> None:
        self._jobs[form] = (perform, ring)
        self.push_screen(form)

    def _form(self, kind: type[F], *subject: Any, key: str) -> F:
        """The cockpit's ``kind`` form, about ``subject``, offering the draft kept under
        ``key``. Each kind is built at its first open and kept (installed), so the next
        opens compose, style and lay out nothing: the form is filled and shown (#28: a
        keystroke -> its frame within 16 ms). One already on the screen stack is never
        refilled under the person: a fresh one, not kept, opens above it."""
        kept = self._forms.get(kind)
        draft = self.drafts.get(key)
        if isinstance(kept, kind) and kept not in self.screen_stack:
            kept.prepare(*subject, draft_key=key, draft=draft)
            return kept
        form = kind(*subject, draft_key=key, draft=draft)
        if kept is None:
            self._forms[kind] = form
            self.install_screen(form, f"form-{kind.__name__}")
        return form

    def action_answer(self) -> None:
        q = self.selected_question()
        if q is None:
            return
        asked = f"{age(q.asked_at, self.clock())} ago"
        form = self._form(AnswerScreen, q.crew, q.text, asked, key=f"answer:{q.question_id}")
        self._open(
            form,
            lambda v: jobs.answer(self.home, q.crew, q.question_id, q.assignment_id, v["text"]),
            ring=q.crew,
        )

    def _approve(self, decision: str) -> None:
        a = self.selected_approval()
        if a is None:
            return
        self._in_worker(partial(jobs.approve, self.home, a.crew, a.request_id, a.tool, decision))

    def action_approve_allow(self) -> None:
        self._approve("allow")

    def action_approve_allow_session(self) -> None:
        self._approve("allow_session")

    def action_approve_deny(self) -> None:
        a = self.selected_approval()
        if a is None:
            return
        form = self._form(DenyScreen, a.crew, a.tool, a.excerpt, key=f"deny:{a.request_id}")
        self._open(
            form,
            lambda v: jobs.approve(self.home, a.crew, a.request_id, a.tool, "deny", v["reason"]),
        )

    def action_tell(self) -> None:
        crew = self.selected_crew()
        if crew is None or crew.done:
            return
        form = self._form(
            TellScreen, crew.name, crew.task, crew.assignment_id, key=f"tell:{crew.assignment_id}"
        )
        self._open(
            form,
            lambda v: jobs.tell(self.home, crew.name, crew.assignment_id, v["text"]),
            ring=crew.name,
        )

    def action_assign(self) -> None:
        crew = self.selected_crew()
        if crew is None or not crew.done:
            return
        owed = [
            n
            for n in self.view.notifications()
            if n.key == crew.key and n.assignment_id == crew.assignment_id
        ]
        warning = ""
        if owed:
            said = "; ".join(jobs.described(n.status, n.summary) for n in reversed(owed))
            warning = (
                f"{crew.name} has {counted(len(owed), 'notification')} not "
                f"acknowledged yet ({said}): the next task is refused until "
                f"{'it is' if len(owed) == 1 else 'they are'}. Press escape, then "
                f"{_key('acknowledge')} on {crew.name} in Crew."
            )
        form = self._form(
            AssignScreen,
            crew.name,
            crew.assignment_id,
            crew.task,
            list(crew.owns),
            list(crew.allow),
            warning,
            key=f"assign:{crew.assignment_id}",
        )
        self._open(
            form,
            lambda v: jobs.assign(
                self.home, crew.name, v["handoff"], v["task"], v["owns"], v["allow"]
            ),
            ring=crew.name,
        )

    def action_recruit(self) -> None:
        form = self._form(RecruitScreen, key="recruit")
        self._open(form, lambda v: jobs.recruit(self.home, v, socket=self.tmux_socket))

    def action_acknowledge(self) -> None:
        notes = self.to_acknowledge()
        if not notes:
            return
        name = notes[0].crew
        said = [(n.delivery_id, jobs.described(n.status, n.summary)) for n in notes]
        if len(notes) == 1:
            self._in_worker(partial(jobs.acknowledge_all, self.home, name, said))
            return

        def decided(yes: bool | None) -> None:
            if yes:
                self._in_worker(partial(jobs.acknowledge_all, self.home, name, said))

        now = self.clock()
        listed = "\n".join(
            f"• {what} ({age(n.created_at, now)} ago)"
            for n, (_, what) in zip(notes, said, strict=True)
        )
        body = (
            f"{listed}\n\nAcknowledging says you have seen "
            f"{'it' if len(notes) == 1 else 'them'}; {name}'s next task (or recruiting "
            "the name again) waits for that."
        )
        self.push_screen(
            ConfirmScreen(
                f"Acknowledge {name}'s {counted(len(notes), 'notification')}?",
                body,
                yes="Acknowledge",
            ),
            decided,
        )

    def action_land(self) -> None:
        crew = self.selected_crew()
        if crew is None or not crew.done:
            return
        self._ask_to_land(crew.name, crew.assignment_id)

    @work(thread=True, group="actions", exit_on_error=False)
    def _ask_to_land(self, name: str, assignment_id: str) -> None:
        """The queue is read off the UI thread, then the confirmation asks."""
        try:
            body = _attempt(lambda _: jobs.land_preview(self.home, name), None)
        except CaptainError as err:
            self.post_message(Refused(err))
            return

        def decided(yes: bool | None) -> None:
            if yes:
                self._in_worker(partial(jobs.land, self.home, name, assignment_id))

        self.post_message(
            ConfirmNeeded(ConfirmScreen(f"Land {name}'s work?", body, yes="Land"), decided)
        )

    def on_confirm_needed(self, message: ConfirmNeeded) -> None:
        if not self._closing_down:
            self.push_screen(message.screen, message.decided)

    def action_dismiss(self) -> None:
        crew = self.selected_crew()
        if crew is None:
            return
        unread = counted(crew.unread, "unread message")
        bounce = (
            f" Its {unread} will bounce, each with a notification to acknowledge."
            if crew.unread
            else ""
        )
        window = " Its tmux window will be closed." if crew.pane else ""
        task = ended(f"{crew.name} will be retired from its task {quoted(short(crew.task))}")
        space = crew.workspace
        tree = (
            f" Its worktree and branch {space.branch} go only if everything on them is on "
            f"{space.base_branch} or nothing was done; otherwise they are kept, and the "
            f"notice says so (captain dismiss {crew.name} --discard removes them anyway)."
            if space is not None
            else ""
        )
        body = (
            f"{task}{window}{bounce}{tree} The name can be recruited again later, carrying "
            "on from that task (the Recruit form offers it)."
        )

        def decided(yes: bool | None) -> None:
            if yes:
                self._in_worker(partial(jobs.dismiss, self.home, crew.name))

        self.push_screen(ConfirmScreen(f"Dismiss {crew.name}?", body, yes="Dismiss"), decided)

    def action_unblock(self) -> None:
        crew = self.selected_crew()
        if crew is None or crew.dialog is None:
            return
        self._in_worker(partial(jobs.unblock, self.home, crew.name, crew.dialog))

    def action_jump(self) -> None:
        crew = self.selected_crew()
        if crew is None or crew.pane is None:
            return
        self._jump(crew)

    @work(thread=True, group="actions", exit_on_error=False)
    def _jump(self, crew: CrewRow) -> None:
        if crew.pane is None:
            return  # action_jump asked only for a crew with a pane
        try:
            attach = ops.jump(crew.pane, ctx=CAPTAIN)
        except CaptainError as err:
            self.post_message(Refused(err))
            return
        if attach is not None:
            self.post_message(AttachNeeded(crew.name, attach))

    def on_attach_needed(self, message: AttachNeeded) -> None:
        if self._closing_down:
            return
        name, attach = message.crew, message.attach
        self.copy_to_clipboard(attach.command)
        title = {"no_client": f"No terminal is attached to {name}'s tmux: attach one"}.get(
            attach.reason, f"{name}'s pane is on another tmux: run this in another terminal"
        )
        self.notify(
            f"{attach.sentence}\n(the command is copied to the clipboard)",
            markup=False,
            timeout=30,
            title=title,
        )

    def action_toggle_preview(self) -> None:
        preview = self.query_one(PanePreview)
        preview.display = not preview.display
        self._follow_preview()

    def action_help(self) -> None:
        # one line each, cleaned, inside a code span: drawn as written, never as Markdown
        home = one_line(_shown_path(self.home.root)).replace("`", "'")
        where = f"**Home:** `{home}`"
        if self.view.ledger:  # as the feed read it (off this thread): never a password
            ledger = one_line(self.view.ledger).replace("`", "'")
            where += f" · **Work ledger:** `{ledger}`"
        self.push_screen(HelpScreen(f"{where}\n\n{command_table.help_markdown()}"))

    def action_settings(self) -> None:
        values = {
            "theme": self.theme,
            "alert_toast": self.settings.alert_toast,
            "alert_bell": self.settings.alert_bell,
            "alert_desktop": self.settings.alert_desktop,
        }
        self.push_screen(SettingsScreen(values, sorted(self.available_themes)))

    # -- doing the work, off the UI thread -----------------------------------------------

    @on(FormScreen.Submitted)
    def _form_submitted(self, event: FormScreen.Submitted) -> None:
        perform, ring = self._jobs[event.form]
        self._run_form(event.form, perform, ring, event.values)

    @on(FormScreen.Cancelled)
    def _form_cancelled(self, event: FormScreen.Cancelled) -> None:
        self._jobs.pop(event.form, None)
        if any(
            str(v).strip()
            for k, v in event.draft.items()
            if k in ("answer", "message", "task", "reason")
        ):
            self.drafts[event.form.draft_key] = event.draft
            self.notify("Nothing was sent. Your text is kept for next time.", timeout=3)

    @work(thread=True, group="actions", exit_on_error=False)
    def _run_form(
        self, form: FormScreen, perform: Callable[[dict], str], ring: str | None, values: dict
    ) -> None:
        try:
            said = _attempt(perform, values)
        except CaptainError as err:
            self.post_message(Refused(err, form))
            return
        self.post_message(FormSent(form, said))
        if ring is not None:
            note = jobs.ring(self.home, ring)  # the mail is durable; this only speeds it
            if note is not None:
                self.post_message(Outcome(note, severity="warning"))

    def on_form_sent(self, message: FormSent) -> None:
        if self._closing_down:
            return
        form, said = message.form, message.said
        self._jobs.pop(form, None)
        self.drafts.pop(form.draft_key, None)
        self._close_form(form)
        self.notify(said, markup=False)

    def _close_form(self, form: FormScreen) -> None:
        """A sent form goes, and only it. Textual's ``dismiss`` pops the top screen,
        whichever it is: a form sent while another was opened above it (from the command
        palette) would close that one, losing what was typed there, and itself stay on the
        stack saying "sending…". One below the top is told it was sent: it says so, takes
        no key, and closes itself the moment it is shown again (Textual has no public way
        to take a screen out from under another)."""
        if form is self.screen:
            form.dismiss(None)
        elif form in self.screen_stack:
            form.close_when_shown()

    @work(thread=True, group="actions", exit_on_error=False)
    def _in_worker(self, job: Callable[[], str | jobs.Said]) -> None:
        try:
            said = _attempt(lambda _: job(), None)
        except CaptainError as err:
            self.post_message(Refused(err))
            return
        if isinstance(said, jobs.Said):
            timeout = {"error": ALERT_TIMEOUT, "warning": 6}.get(said.severity, OUTCOME_TIMEOUT)
            self.post_message(Outcome(said.text, severity=said.severity, timeout=timeout))
        else:
            self.post_message(Outcome(said))

    def on_outcome(self, message: Outcome) -> None:
        if not self._closing_down:
            self.notify(
                message.text,
                title=message.title,
                severity=message.severity,
                timeout=message.timeout,
                markup=False,
            )

    def on_refused(self, message: Refused) -> None:
        if not self._closing_down:
            self._refused(message.error, message.form)

    def _refused(self, err: CaptainError, form: FormScreen | None = None) -> None:
        in_crew = self.view.crew(str(err.extra.get("crew", "")).lower()) is not None
        text = f"[{err.code}] {_said_here(err, in_crew)}"
        if form is not None and form in self.screen_stack:
            form.refused(text)
            if (
                err.code == "crew_dismissed"
                and isinstance(form, RecruitScreen)
                and err.extra.get("handoff")
            ):
                form.offer_handoff(
                    err.extra["crew"], err.extra["handoff"], err.extra.get("task") or ""
                )
        self.notify(
            text, title="Refused — nothing was written", severity="error", markup=False, timeout=10
        )

    # -- the pane preview (it keeps its own clock: widgets.preview) ---------------------

    def _follow_preview(self, *, again: bool = True) -> None:
        """Tell the preview what is selected (``again=False``: only if that changed); in
        Approvals it shows the highlighted request instead of a pane."""
        if self._closing_down:
            return
        request = self._previewed_approval()
        if request is not None:
            subject = Subject(f"Approval · {request.crew}", _approval_detail(request))
        else:
            subject = Subject.of(self.selected_crew(), any_crew=bool(self.view.crew_rows()))
        self.query_one(PanePreview).follow(subject, again=again)

    def _previewed_approval(self) -> ApprovalRow | None:
        """In Approvals, the preview shows the highlighted request instead of a pane."""
        if isinstance(self._main_focus_panel(), ApprovalsPanel):
            return self.selected_approval()
        return None

    # -- settings ------------------------------------------------------------------------

    @on(SettingsScreen.Changed)
    def _setting_changed(self, event: SettingsScreen.Changed) -> None:
        if event.name == "theme":
            self.theme = event.value  # _theme_changed saves it
            return
        setattr(self.settings, event.name, bool(event.value))
        self._save_settings()

    def _theme_changed(self, theme) -> None:
        if self.settings.theme != theme.name:
            self.settings.theme = theme.name
            self._save_settings()
        if self.last_refresh is not None:  # row colours come from the theme: re-render
            for panel in self.query(Panel):
                panel.show(panel.rows(), self.clock())

    @work(thread=True, group="settings", exit_on_error=False)
    def _save_settings(self) -> None:
        """Write the settings off the UI thread (a slow or stuck config directory never
        freezes the cockpit), one write at a time, each of the settings as they are when it
        writes: the last write holds the last change, whichever worker ran first."""
        with self._saving:
            try:
                prefs.save(dataclasses.replace(self.settings))
            except OSError as exc:
                self.post_message(
                    Outcome(
                        f"{prefs.FILE_NAME} in {prefs.config_dir()} could not "
                        f"be written ({exc.strerror or type(exc).__name__}); the change holds "
                        "until the cockpit closes.",
                        title="Settings not saved",
                        severity="warning",
                    )
                )


def _capture_pane(pane: PaneLocator) -> str:
    """The pane preview's capture, run in its thread worker: one tmux call."""
    return Tmux(pane.socket).capture(pane, ansi=True)


def _shown_path(path) -> str:
    """A path as a person types it: under their home directory, ``~/…``."""
    from pathlib import Path

    try:
        return "~/" + str(Path(path).relative_to(Path.home()))
    except (ValueError, RuntimeError):
        return str(path)


def _said_here(err: CaptainError, in_crew: bool) -> str:
    """A refusal as the cockpit words it: the state's sentence names the CLI's flags
    (``--handoff asg_…``, ``captain wait --ack``); here it names the form's box and the
    key that clears it."""
    extra = err.extra
    if err.code == "crew_dismissed" and extra.get("handoff"):
        return (
            f"{extra['crew']} was dismissed. To recruit the name again, carry on from its "
            "last task: tick the box below (it is ticked for you) and send again."
        )
    if err.code == "unacknowledged" and extra.get("crew"):
        count = extra.get("count", 1)
        said = jobs.described(extra.get("status", ""), extra.get("summary", ""))
        first = "it" if count == 1 else f"them (first: {said})"
        where = (
            f"{extra['crew']} in Crew, or on each in Notifications"
            if in_crew
            else "each in Notifications"
        )
        what = said if count == 1 else counted(count, "notification")
        return (
            f"{extra['crew']} has {'a notification' if count == 1 else what} not "
            f"acknowledged{f' ({what})' if count == 1 else ''}. Acknowledge {first}: "
            f"press {_key('acknowledge')} on {where}; then send again."
        )
    return err.message


def _why_not_unblock(crew: CrewRow) -> str | None:
    """Why ``u`` cannot answer the crew's start-up dialog (None: it can)."""
    from captain_tui.runtime.pane_reader import dialog_rule

    if crew.state != "blocked" or crew.dialog is None:
        return f"{crew.name} is not at a start-up dialog."
    rule = dialog_rule(crew.agent, crew.dialog)
    if rule is None or rule.safe is None:
        return (
            f"{crew.name}'s {dialog_title(crew.dialog)} dialog is yours to answer: press "
            f"{_key('jump')} to jump to its pane."
        )
    return None


def _key(command_id: str) -> str:
    return command_table.key_label(command_table.BY_ID[command_id])


def _attempt(perform: Callable[[Any], T], values: Any) -> T:
    """Run one protocol call; every failure becomes a refusal with a stable code."""
    try:
        return perform(values)
    except CaptainError:
        raise
    except OSError as exc:
        raise ops.store_error(exc) from None
    except Exception as exc:  # noqa: BLE001 - never a traceback in the cockpit
        raise CaptainError("internal_error", f"unexpected {type(exc).__name__}: {exc}") from None


def run_cockpit(home: Home, *, socket: str | None = None) -> int:
    """Open the cockpit on ``home`` until the person quits; crews it recruits open on the
    tmux server ``socket`` names (default: where ``captain crew`` would put them)."""
    CaptainApp(home, socket=socket).run()
    return 0


if __name__ == "__main__":  # pragma: no cover - `python -m captain_tui.cockpit.app`: a look
    from state.home import default_home

    raise SystemExit(run_cockpit(Home(default_home())))


def _approval_detail(a: ApprovalRow) -> str:
    """A request as the preview shows it: what it asks, whose, until when (its excerpt is
    bounded and escaped when recorded; the preview's sanitiser draws it inert again)."""
    lines = [
        f"{a.crew} ({a.agent}) asks to run {a.tool}:",
        "",
        a.excerpt,
        "",
        f"request {a.request_id}",
        f"fingerprint sha256:{a.fingerprint[:16]}…",
        f"asked at {a.created_at:%H:%M:%S}; the agent's own prompt takes it at "
        f"{a.expires_at:%H:%M:%S} if you do not decide.",
    ]
    if a.decided:
        lines.append(f"decided: {a.decided} (the hook is picking it up)")
    keys = f"{_key('allow')} allow" + (
        f", {_key('allow_session')} allow for the session" if a.allow_session else ""
    )
    keys += f", {_key('deny')} deny (with a reason)"
    lines += ["", keys]
    return "\n".join(lines)

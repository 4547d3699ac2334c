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
- every action runs its protocol call in a thread worker and reports back with
  ``call_from_thread``; the pane preview captures tmux in a thread worker too.

The UI thread only renders views and opens forms: it never touches the disk or tmux.
"""

from __future__ import annotations

import dataclasses
import threading
import time
from collections.abc import Callable
from datetime import datetime
from functools import partial
from typing import Any

from textual import on, work
from textual.actions import parse as parse_action
from textual.app import App, ComposeResult, SystemCommand
from textual.containers import Horizontal, Vertical
from textual.content import Content
from textual.message import Message
from textual.screen import Screen
from textual.worker import get_current_worker

from captain_tui import usecases as ops
from captain_tui.cockpit import commands, jobs
from captain_tui.cockpit import desktop_alerts as alerts
from captain_tui.cockpit import prefs as settings
from captain_tui.cockpit.commands import BY_ACTION, COMMANDS, Command
from captain_tui.cockpit.feed.alerts import Alert, flood
from captain_tui.cockpit.feed.home import Feed, Update
from captain_tui.cockpit.feed.listener import LedgerListener
from captain_tui.cockpit.feed.pump import RESCAN_SECONDS, WORK_SECONDS, FeedPump
from captain_tui.cockpit.feed.watcher import Watcher
from captain_tui.cockpit.heap import Collector
from captain_tui.cockpit.terminal import recording, writer
from captain_tui.cockpit.work import WorkCommands, reconciling_text
from captain_tui.runtime.tmux import resolve_socket
from state.crew.rules import CAPTAIN
from state.errors import CaptainError
from state.home import Home
from state.vocab import counted, ended, quoted, short
from widgets.cells import age, as_markup, clean, one_line
from widgets.chrome import CockpitFooter, CockpitHeader
from widgets.panels.approvals import ApprovalsPanel
from widgets.panels.base import Panel
from widgets.panels.crew import CrewPanel
from widgets.panels.doorbells import DoorbellsPanel
from widgets.panels.notifications import NotificationsPanel
from widgets.panels.questions import QuestionsPanel
from widgets.panels.row_list import PanelTable
from widgets.panels.work import WorkPanel
from widgets.preview import PanePreview
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
from widgets.screens.settings import SettingsScreen
from widgets.view import ApprovalRow, CrewRow, HomeView, NotificationRow, QuestionRow

DOORBELL_EVERY = 0.25  # the runner keeps its own clocks; this is how often it is asked
AGES_EVERY = 5.0  # "4m ago" columns are re-rendered from the view (no I/O) this often
PREVIEW_EVERY = 1.0  # the selected crew's pane is captured again this often while it changes
PREVIEW_IDLE_EVERY = 4.0  # ... backing off to this while its captures come back the same
ALERT_WINDOW = 0.5  # alerts arriving this close together are said as one (and rung once)
ALERT_TIMEOUT = 10  # an alert's toast stays this long (it needs the captain)
# an action's plain good news. Textual's toast rack stays bottom right: over the pane preview
# (the least needed while a toast is fresh), below the Work panel, which a stack of toasts
# reaches; so routine ones leave soon, and only what needs the captain stays ALERT_TIMEOUT
OUTCOME_TIMEOUT = 3


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


class PaneCaptured(Message):
    def __init__(self, key: str, capture: str | None, problem: str | None = None) -> None:
        super().__init__()
        self.key = key
        self.capture = capture
        self.problem = problem


def _local_now() -> datetime:
    return datetime.now().astimezone()


class CaptainApp(WorkCommands, App):
    CSS_PATH = "cockpit.tcss"
    TITLE = "captain"
    BINDINGS = commands.bindings()
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
        self.settings = settings.load()
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
        self.preview_every = PREVIEW_EVERY
        self.ages_every = AGES_EVERY
        self.alert_window = ALERT_WINDOW
        self.drafts: dict[str, dict[str, Any]] = {}  # cancelled forms' text, by draft key
        self._jobs: dict[FormScreen, tuple[Callable[[dict], str], str | None]] = {}
        self._pump: FeedPump | None = None
        self._watcher: Watcher | None = None
        self._listener: LedgerListener | None = None
        self._stopping = False
        self._config_said: str | None = None  # the invalid_config last toasted
        self._last_problem: str | None = None
        self._footer_state: tuple[bool, ...] | None = None
        self._previewed: tuple | None = None  # the crew (key, pane) the preview last asked for
        self._last_capture: tuple[str, str] | None = None  # (crew key, text) last captured
        self._preview_pause = PREVIEW_EVERY  # seconds to the next timed capture (backs off)
        self._preview_due = 0.0  # time.monotonic() of the next timed capture
        self._heap = Collector()  # full garbage collections between events (cockpit.heap)
        self._updated_at = 0.0  # time.monotonic() of the last feed update
        self._pending_alerts: list[Alert] = []  # waiting out ALERT_WINDOW, see _alert

    # -- layout ------------------------------------------------------------------------

    def compose(self) -> ComposeResult:
        yield CockpitHeader(icon="⚓")
        keys = {c.id: commands.key_label(c) for c in COMMANDS}
        yield CrewPanel(id="crew", keys=keys)
        with Horizontal(id="lower"):
            with Vertical(id="inbox"):
                yield QuestionsPanel(id="questions", keys=keys)
                yield ApprovalsPanel(id="approvals", keys=keys)
                yield NotificationsPanel(id="notifications", keys=keys)
                yield DoorbellsPanel(id="doorbells", keys=keys)
            with Vertical(id="side"):
                yield WorkPanel(id="work", keys=keys)
                yield PanePreview(id="preview")
        yield CockpitFooter()

    def on_mount(self) -> None:
        if self.settings.theme in self.available_themes:
            self.theme = self.settings.theme
        self.theme_changed_signal.subscribe(self, self._theme_changed)
        self.sub_title = "reading the home…"
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
        self.set_interval(self.ages_every, self._show_ages)
        self.set_interval(self.preview_every, self._preview_tick)
        self._heap.start()
        self.set_interval(1.0, lambda: self._heap.tick(time.monotonic() - self._updated_at))

    def on_unmount(self) -> None:
        self._stopping = True
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
        self._updated_at = time.monotonic()
        if self.last_change is None or update.view != self.view:
            self.last_change = self.clock()  # a rescan that found nothing new is not news
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
            self._alert(alert)

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
        if self._preview_target() != self._previewed:
            self._refresh_preview()  # the selected crew changed (or its pane); else the timer

    def _show_status(self, now: datetime) -> None:
        """The header's status: the home is watched all along, so it says when the view
        last changed (and, once that is a while ago, how long ago: true with no event)."""
        count = len(self.view.crew_rows())
        changed = self.last_change or now
        since = f", {age(changed, now)} ago" if (now - changed).total_seconds() >= 60 else ""
        reading = "" if self.scanned else " · reading the home…"
        loud = f" · {self._loud}" if self._loud else ""
        self.sub_title = (
            f"{count} crew · watching · last change {changed:%H:%M:%S}{since}{reading}{loud}"
        )

    def _show_ages(self) -> None:
        """The clock moved: "4m" may now be "5m". Rows are the same, so only the age cells
        that read differently are rendered again."""
        if self.last_refresh is None or self._closing_down:
            return
        now = self.clock()
        for panel in self.query(Panel):
            if panel.loaded:
                panel.show(panel.rows(), now)
        self._show_status(now)
        self._refresh_footer()  # a webhook body's expiry dims Replay with no event

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
        severity: str = "information",
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
        from captain_tui.runtime.runner import Runner

        worker = get_current_worker()
        runner = Runner(self.home)
        try:
            while not (worker.is_cancelled or self._stopping):
                try:
                    runner.tick()
                except Exception as exc:  # noqa: BLE001 - a doorbell problem must not stop it
                    self.log.warning(f"doorbell: {type(exc).__name__}: {exc}")
                self._store_warnings()
                worker.cancelled_event.wait(DOORBELL_EVERY)
        finally:
            runner.close()  # its watches on crews' processes (pidfds)

    def _store_warnings(self) -> None:
        """What the store reports and leaves in place (a broken config.toml, a file it could
        not move) has no quarantine/*.reason for the feed to see: a toast here. Moved files
        are the feed's (their .reason file), and so are ledger rows that do not validate
        (the Work panel's, once per item); drained so the list does not grow."""
        from state.errors import CaptainError
        from state.store import Store
        from state.work import corrupt

        try:
            self.home.config()  # a stat per round; said as soon as the file breaks, used or not
        except CaptainError as err:  # invalid_config with no good settings to keep
            if err.message != self._config_said:
                self._config_said = err.message
                self.call_from_thread(
                    self._alert,
                    Alert("quarantine", "config.toml is not usable", f"[{err.code}] {err.message}"),
                )
        Store.reported()
        for path, reason in Store.warnings():
            if path.startswith(corrupt.PREFIX):
                continue
            self.call_from_thread(
                self._alert, Alert("quarantine", f"{path} is not usable", f"{path} {reason}")
            )

    # -- alerts --------------------------------------------------------------------------

    def _alert(self, alert: Alert) -> None:
        """Raise an alert. Those arriving within ``ALERT_WINDOW`` of the first are said
        together: one toast per kind (a flood of questions is one "5 new questions" toast),
        one bell and one desktop notice for them all."""
        if alert.kind == "quarantine":  # the store's report: always shown, never rung
            self.notify(
                alert.body,
                title=alert.title,
                severity="warning",
                markup=False,
                timeout=ALERT_TIMEOUT,
            )
            return
        if not self._pending_alerts:
            self.set_timer(self.alert_window, self._raise_alerts, name="alerts")
        self._pending_alerts.append(alert)

    def _raise_alerts(self) -> None:
        pending, self._pending_alerts = self._pending_alerts, []
        if not pending or self._closing_down:
            return
        kinds: dict[str, list[Alert]] = {}
        for alert in pending:
            kinds.setdefault(alert.kind, []).append(alert)
        said = [
            group[0] if len(group) == 1 else flood(kind, group) for kind, group in kinds.items()
        ]
        if self.settings.alert_toast:
            for alert in said:
                loud = alert.kind in ("bounced", "error", "needs_reconciliation")
                self.notify(
                    alert.body[:400],
                    title=alert.title,
                    markup=False,
                    timeout=ALERT_TIMEOUT,
                    severity="error" if loud else "warning",
                )
        if self.settings.alert_bell:
            self.emit_to_terminal("\a")
        if self.settings.alert_desktop:
            first = said[0]
            title = first.title if len(said) == 1 else " · ".join(a.title for a in said)
            body = first.body if len(said) == 1 else f"{len(pending)} alerts"
            self.emit_to_terminal(alerts.desktop_notice(f"captain: {title}", body))

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
        node = self.screen_stack[0].focused
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

    def selected_question(self) -> QuestionRow | None:
        return self.view.question(self.query_one(QuestionsPanel).current_key)

    def selected_approval(self) -> ApprovalRow | None:
        """The request highlighted in Approvals (its first row until another is picked)."""
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
        return None

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        command = BY_ACTION.get(action)
        if command is not None and self.why_not(command):
            return None  # shown dimmed: the key is there, it just does not apply now
        return True

    async def run_action(self, action, default_namespace=None, namespaces=None) -> bool:
        """Every command's key (and a click on it in the footer) comes here: one that does
        not apply now says why in a toast instead of doing nothing. The one place for every
        command in ``commands.COMMANDS``; the palette goes through ``_invoke``."""
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
                title=f"{command.label} ({commands.key_label(command)}) is not available now",
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
        self._refresh_preview()

    def on_descendant_focus(self) -> None:
        if self._closing_down:
            return
        self.refresh_bindings()
        self._refresh_preview()

    # -- the command palette -------------------------------------------------------------

    def get_system_commands(self, screen: Screen):
        for command in COMMANDS:
            why = self.why_not(command)
            help_text = f"{commands.key_label(command)} · {command.description}"
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

    def _draft(self, key: str) -> dict[str, Any]:
        return {"draft_key": key, "draft": self.drafts.get(key)}

    def action_answer(self) -> None:
        q = self.selected_question()
        if q is None:
            return
        asked = f"{age(q.asked_at, self.clock())} ago"
        form = AnswerScreen(q.crew, q.text, asked, **self._draft(f"answer:{q.question_id}"))
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
        form = DenyScreen(a.crew, a.tool, a.excerpt, **self._draft(f"deny:{a.request_id}"))
        self._open(
            form,
            lambda v: jobs.approve(self.home, a.crew, a.request_id, a.tool, "deny", v["reason"]),
        )

    def action_tell(self) -> None:
        crew = self.selected_crew()
        if crew is None or crew.done:
            return
        form = TellScreen(
            crew.name, crew.task, crew.assignment_id, **self._draft(f"tell:{crew.assignment_id}")
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
        form = AssignScreen(
            crew.name,
            crew.assignment_id,
            crew.task,
            list(crew.owns),
            list(crew.allow),
            warning,
            **self._draft(f"assign:{crew.assignment_id}"),
        )
        self._open(
            form,
            lambda v: jobs.assign(
                self.home, crew.name, v["handoff"], v["task"], v["owns"], v["allow"]
            ),
            ring=crew.name,
        )

    def action_recruit(self) -> None:
        form = RecruitScreen(**self._draft("recruit"))
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
        body = (
            f"{task}{window}{bounce} The name can be recruited again later, carrying on "
            "from that task (the Recruit form offers it)."
        )

        def decided(yes: bool | None) -> None:
            if yes:
                self._in_worker(partial(jobs.dismiss, self.home, crew.name))

        self.push_screen(ConfirmScreen(f"Dismiss {crew.name}?", body, yes="Dismiss"), decided)

    def action_jump(self) -> None:
        crew = self.selected_crew()
        if crew is None or crew.pane is None:
            return
        self._jump(crew)

    @work(thread=True, group="actions", exit_on_error=False)
    def _jump(self, crew: CrewRow) -> None:
        try:
            attach = ops.jump(crew.pane, ctx=CAPTAIN)
        except CaptainError as err:
            self.call_from_thread(self._refused, err)
            return
        if attach is not None:
            self.call_from_thread(self._show_attach, crew.name, attach)

    def _show_attach(self, name: str, attach: ops.Attach) -> None:
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
        self._refresh_preview()

    def action_help(self) -> None:
        # one line each, cleaned, inside a code span: drawn as written, never as Markdown
        home = one_line(_shown_path(self.home.root)).replace("`", "'")
        where = f"**Home:** `{home}`"
        if self.view.ledger:  # as the feed read it (off this thread): never a password
            ledger = one_line(self.view.ledger).replace("`", "'")
            where += f" · **Work ledger:** `{ledger}`"
        self.push_screen(HelpScreen(f"{where}\n\n{commands.help_markdown()}"))

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
            self.call_from_thread(self._refused, err, form)
            return
        self.call_from_thread(self._form_done, form, said)
        if ring is not None:
            note = jobs.ring(self.home, ring)  # the mail is durable; this only speeds it
            if note is not None:
                self.call_from_thread(self.notify, note, severity="warning", markup=False)

    def _form_done(self, form: FormScreen, said: str) -> None:
        self._jobs.pop(form, None)
        self.drafts.pop(form.draft_key, None)
        form.dismiss(None)
        self.notify(said, markup=False)

    @work(thread=True, group="actions", exit_on_error=False)
    def _in_worker(self, job: Callable[[], str | jobs.Said]) -> None:
        try:
            said = _attempt(lambda _: job(), None)
        except CaptainError as err:
            self.call_from_thread(self._refused, err)
            return
        if isinstance(said, jobs.Said):
            self.call_from_thread(
                self.notify,
                said.text,
                severity=said.severity,
                markup=False,
                timeout={"error": ALERT_TIMEOUT, "warning": 6}.get(said.severity, OUTCOME_TIMEOUT),
            )
        else:
            self.call_from_thread(self.notify, said, markup=False)

    def _refused(self, err: CaptainError, form: FormScreen | None = None) -> None:
        in_crew = self.view.crew(str(err.extra.get("crew", "")).lower()) is not None
        text = f"[{err.code}] {_said_here(err, in_crew)}"
        if form is not None and form.is_attached:
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

    # -- the pane preview ----------------------------------------------------------------

    def _preview_target(self) -> tuple:
        request = self._previewed_approval()
        if request is not None:
            return ("approval", request)
        crew = self.selected_crew()
        return (crew.key, crew.pane) if crew is not None else (None, bool(self.view.crew_rows()))

    def _previewed_approval(self) -> ApprovalRow | None:
        """In Approvals, the preview shows the highlighted request instead of a pane."""
        if isinstance(self._main_focus_panel(), ApprovalsPanel):
            return self.selected_approval()
        return None

    def _preview_tick(self) -> None:
        """The timer: capture again when due. A pane whose captures come back the same is
        asked less and less often (up to PREVIEW_IDLE_EVERY); a change, or another crew
        selected, and it is followed every second again."""
        if time.monotonic() >= self._preview_due:
            self._refresh_preview()

    def _refresh_preview(self) -> None:
        self._preview_due = time.monotonic() + self._preview_pause
        if self._closing_down:
            return
        preview = self.query_one(PanePreview)
        if not preview.display:
            self._previewed = None  # shown again: asked again
            return
        self._previewed = self._preview_target()
        request = self._previewed_approval()
        if request is not None:
            preview.show_message(f"Approval · {request.crew}", _approval_detail(request))
            return
        crew = self.selected_crew()
        if crew is None:
            preview.show_message(
                "Pane",
                "Each crew's tmux pane shows here, live."
                if not self.view.crew_rows()
                else "Select a crew to see its pane.",
            )
        elif crew.pane is None:
            preview.show_message(
                f"Pane · {crew.name}",
                f"{crew.name} has no tmux pane: it was recorded with "
                "--no-launch, so its process runs wherever you started it.",
            )
        else:
            self._capture(crew)

    @work(thread=True, group="preview", exclusive=True, exit_on_error=False)
    def _capture(self, crew: CrewRow) -> None:
        """One tmux call per refresh (the preview runs every second; it must stay cheap)."""
        from captain_tui.runtime.tmux import Tmux

        try:
            capture = Tmux(crew.pane.socket).capture(crew.pane, ansi=True)
        except CaptainError as err:
            self.post_message(
                PaneCaptured(crew.key, None, f"{crew.name}'s pane cannot be read: {err.message}")
            )
            return
        self.post_message(PaneCaptured(crew.key, capture))

    def on_pane_captured(self, message: PaneCaptured) -> None:
        if self._closing_down:
            return
        crew = self.selected_crew()
        if crew is None or crew.key != message.key:
            return  # the selection moved on while tmux answered
        preview = self.query_one(PanePreview)
        if message.capture is None:
            preview.show_message(f"Pane · {crew.name}", message.problem or "")
            return
        captured = (message.key, message.capture)
        if captured == self._last_capture:
            self._preview_pause = min(
                self._preview_pause * 2, max(PREVIEW_IDLE_EVERY, self.preview_every)
            )
        else:
            self._preview_pause = self.preview_every
        self._preview_due = min(self._preview_due, time.monotonic() + self._preview_pause)
        self._last_capture = captured
        preview.show_capture(crew.name, message.capture)

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
                settings.save(dataclasses.replace(self.settings))
            except OSError as exc:
                self.call_from_thread(
                    self.notify,
                    f"{settings.FILE_NAME} in {settings.config_dir()} could not "
                    f"be written ({exc.strerror or type(exc).__name__}); the change holds "
                    "until the cockpit closes.",
                    title="Settings not saved",
                    severity="warning",
                    markup=False,
                )


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


def _key(command_id: str) -> str:
    return commands.key_label(commands.BY_ID[command_id])


def _attempt(perform: Callable[[Any], str], values: Any) -> str:
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

"""Raising alerts in batches: those arriving within ``window`` seconds of the first are said
together, one toast per kind (a flood of questions is one "5 new questions" toast), one
bell and one desktop notice for them all, each as the person's settings say. The store's
reports (kind ``quarantine``) are shown at once and never rung.

Runs on the UI thread (alerts come in messages); it writes to the terminal through the
app, which owns the driver (``CaptainApp.emit_to_terminal``).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Protocol

from textual.notifications import SeverityLevel

from captain_tui.cockpit import desktop_alerts
from captain_tui.cockpit.feed.alerts import Alert, AlertKind, flood
from captain_tui.cockpit.prefs import Settings

ALERT_WINDOW = 0.5  # alerts arriving this close together are said as one (and rung once)
ALERT_TIMEOUT = 10  # an alert's toast stays this long (it needs the captain)
LOUD = ("bounced", "error", "needs_reconciliation")  # said as errors; the rest as warnings


class AlertHost(Protocol):
    """What the batch needs of the cockpit (``CaptainApp`` has each)."""

    settings: Settings

    def notify(
        self,
        message: str,
        *,
        title: str = "",
        severity: SeverityLevel = "information",
        timeout: float | None = None,
        markup: bool = False,
    ) -> None: ...

    def emit_to_terminal(self, sequence: str) -> None: ...

    def set_timer(
        self, delay: float, callback: Callable[[], object], *, name: str | None = None
    ) -> object: ...


class AlertBatch:
    def __init__(
        self, host: AlertHost, *, window: float = ALERT_WINDOW, closing: Callable[[], bool]
    ) -> None:
        self.host = host
        self.window = window
        self.closing = closing  # true while the app shuts down: nothing is said then
        self.pending: list[Alert] = []  # waiting out the window

    def add(self, alert: Alert) -> None:
        if alert.kind == "quarantine":  # the store's report: always shown, never rung
            self.host.notify(
                alert.body,
                title=alert.title,
                severity="warning",
                markup=False,
                timeout=ALERT_TIMEOUT,
            )
            return
        if not self.pending:
            self.host.set_timer(self.window, self.flush, name="alerts")
        self.pending.append(alert)

    def flush(self) -> None:
        """Say what waited out the window."""
        pending, self.pending = self.pending, []
        if not pending or self.closing():
            return
        kinds: dict[AlertKind, list[Alert]] = {}
        for alert in pending:
            kinds.setdefault(alert.kind, []).append(alert)
        said = [
            group[0] if len(group) == 1 else flood(kind, group) for kind, group in kinds.items()
        ]
        settings = self.host.settings
        if settings.alert_toast:
            for alert in said:
                self.host.notify(
                    alert.body[:400],
                    title=alert.title,
                    markup=False,
                    timeout=ALERT_TIMEOUT,
                    severity="error" if alert.kind in LOUD else "warning",
                )
        if settings.alert_bell:
            self.host.emit_to_terminal("\a")
        if settings.alert_desktop:
            first = said[0]
            title = first.title if len(said) == 1 else " · ".join(a.title for a in said)
            body = first.body if len(said) == 1 else f"{len(pending)} alerts"
            self.host.emit_to_terminal(desktop_alerts.desktop_notice(f"captain: {title}", body))

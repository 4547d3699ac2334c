"""Alert batching is a class of its own (#24 §5), driven here on a bare Textual app with no
home and no feed: alerts added within the window are said as one toast per kind, one bell
and one desktop notice; the store's reports are shown at once and never rung; the
person's switches are obeyed; nothing is said while the app closes."""

from __future__ import annotations

import asyncio

from textual.app import App

from captain_tui.cockpit.alert_batch import ALERT_TIMEOUT, AlertBatch
from captain_tui.cockpit.feed.alerts import Alert
from captain_tui.cockpit.prefs import Settings

WINDOW = 0.2


class Host(App):
    """What a batch needs of the cockpit (``AlertHost``), recording what it is asked to say."""

    def __init__(self, settings: Settings) -> None:
        super().__init__()
        self.settings = settings
        self.toasts: list[tuple[str, str, str, float | None]] = []
        self.emitted: list[str] = []
        self.closing = False

    def notify(self, message, *, title="", severity="information", timeout=None, markup=False):
        self.toasts.append((severity, title, message, timeout))

    def emit_to_terminal(self, sequence: str) -> None:
        self.emitted.append(sequence)


def asked(name: str) -> Alert:
    return Alert("asked", f"{name} asks", f"{name}: rebase or merge?", crew=name)


def run(settings: Settings, scenario) -> Host:
    host = Host(settings)

    async def main() -> None:
        async with host.run_test() as pilot:
            batch = AlertBatch(host, window=WINDOW, closing=lambda: host.closing)
            await scenario(pilot, batch)

    asyncio.run(main())
    return host


async def until(pilot, predicate, what: str, timeout: float = 10.0):
    deadline = asyncio.get_running_loop().time() + timeout
    while not predicate():
        if asyncio.get_running_loop().time() >= deadline:
            raise AssertionError(f"timed out after {timeout} s waiting for {what}")
        await pilot.pause(0.02)


def test_a_batch_says_each_kind_once_with_one_bell_and_one_desktop_notice():
    said: dict[str, object] = {}

    async def scenario(pilot, batch: AlertBatch) -> None:
        for name in ("Ada", "Brook", "Cy", "Dee"):
            batch.add(asked(name))
        batch.add(Alert("bounced", "Mail to Eve bounced", "Eve is gone", crew="Eve"))
        batch.add(Alert("quarantine", "config.toml is not usable", "[invalid_config] line 3"))
        said["at_once"] = list(pilot.app.toasts)  # the store's report: not batched
        await until(pilot, lambda: len(pilot.app.toasts) == 3, "the batch's two toasts")
        await pilot.pause(WINDOW * 2)  # a second window: nothing more is said
        said["pending"] = list(batch.pending)

    host = run(Settings(), scenario)
    assert said["at_once"] == [
        ("warning", "config.toml is not usable", "[invalid_config] line 3", ALERT_TIMEOUT)
    ]
    assert host.toasts[1:] == [
        ("warning", "4 new questions", "Ada, Brook, Cy and 1 more", ALERT_TIMEOUT),
        ("error", "Mail to Eve bounced", "Eve is gone", ALERT_TIMEOUT),
    ]
    assert said["pending"] == []
    assert host.emitted[0] == "\a" and len(host.emitted) == 2  # the report is never rung
    assert "captain: 4 new questions · Mail to Eve bounced" in host.emitted[1]
    assert "5 alerts" in host.emitted[1]


def test_a_batch_obeys_the_switches_and_says_nothing_while_the_app_closes():
    async def switched_off(pilot, batch: AlertBatch) -> None:
        batch.add(asked("Ada"))
        await until(pilot, lambda: not batch.pending, "the window to pass")

    quiet = run(Settings(alert_toast=False, alert_bell=False, alert_desktop=False), switched_off)
    assert quiet.toasts == [] and quiet.emitted == []

    async def closing(pilot, batch: AlertBatch) -> None:
        batch.add(asked("Ada"))
        pilot.app.closing = True
        await until(pilot, lambda: not batch.pending, "the window to pass")

    closed = run(Settings(), closing)
    assert closed.toasts == [] and closed.emitted == []

    async def bell_only(pilot, batch: AlertBatch) -> None:
        batch.add(asked("Ada"))
        await until(pilot, lambda: pilot.app.emitted, "the bell")

    rung = run(Settings(alert_toast=False, alert_desktop=False), bell_only)
    assert rung.toasts == [] and rung.emitted == ["\a"]

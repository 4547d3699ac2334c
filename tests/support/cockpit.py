"""Driving the cockpit in tests: homes built with the protocol, and waiting without sleeping.

pytest-asyncio is not used: each test is a plain ``def`` that runs its scenario with
``asyncio.run`` (see ``drive``).
"""

from __future__ import annotations

import asyncio
import inspect
import time
from collections.abc import Awaitable, Callable
from pathlib import Path

from captain_tui.cockpit.app import CaptainApp
from state.crew import protocol
from state.crew.guards import Context
from state.home import Home

SIZE = (120, 36)


def crew(
    home: Home, name: str, task: str = "Fix the login bug", project: Path | None = None, **kwargs
):
    """A crew recorded only (--no-launch): no tmux needed."""
    return protocol.recruit(home, name, task, cwd=str(project) if project else None, **kwargs)


def as_crew(recruit) -> Context:
    return Context.from_env(recruit.env)


def drive(app: CaptainApp, scenario: Callable, *, size=SIZE) -> None:
    """Run ``scenario(pilot)`` against ``app`` to completion, in a fresh event loop."""

    async def main() -> None:
        async with app.run_test(size=size, notifications=True) as pilot:
            await until(
                pilot,
                lambda: app.scanned and app.last_refresh is not None,
                what="the first scan of the home",
            )
            await scenario(pilot)

    asyncio.run(main())


async def until(
    pilot, predicate: Callable[[], object], *, timeout: float = 10.0, what: str = "condition"
):
    """Let the app run until ``predicate()`` is truthy; fail after ``timeout`` seconds."""
    deadline = time.monotonic() + timeout
    while True:
        value = predicate()
        if value:
            return value
        if time.monotonic() >= deadline:
            raise AssertionError(f"timed out after {timeout} s waiting for {what}")
        await pilot.pause(0.02)


class Cockpit(CaptainApp):
    """The cockpit under test: ``CaptainApp``, which also keeps the text of every toast it
    showed (Textual keeps its notifications in a private attribute, so tests read this
    list). A subclass, so importing this module changes nothing for any other app."""

    CSS_PATH = Path(inspect.getfile(CaptainApp)).with_name(CaptainApp.CSS_PATH)  # its own

    def __init__(self, *args, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        self.shown_toasts: list[str] = []

    def notify(self, message, *, title: str = "", **kwargs) -> None:
        self.shown_toasts.append(f"{title}: {message}" if title else str(message))
        return super().notify(message, title=title, **kwargs)


def toasts(app: Cockpit) -> list[str]:
    """Every toast the app has shown, oldest first (the app must be a ``Cockpit``)."""
    if not isinstance(app, Cockpit):
        raise TypeError("toasts() reads a Cockpit's toasts: build the app as Cockpit(...)")
    return list(app.shown_toasts)


async def type_text(pilot, text: str) -> None:
    """Type like a person: newlines are Enter."""
    for line_no, line in enumerate(text.split("\n")):
        if line_no:
            await pilot.press("enter")
        if line:
            await pilot.press(*line)


async def focus_panel(pilot, panel_id: str) -> None:
    pilot.app.query_one(f"#{panel_id}").table.focus()
    await pilot.pause()


async def select_row(pilot, panel_id: str, key: str) -> None:
    """Move the cursor of a panel to the row with this key, with keys, as a person would."""
    panel = pilot.app.query_one(f"#{panel_id}")
    await until(pilot, lambda: key in panel._keys, what=f"row {key} in {panel_id}")
    panel.table.focus()
    await pilot.press("g", *["j"] * panel._keys.index(key))
    assert panel.current_key == key


def decide_in_cockpit(home: Home, request_id: str, key: str) -> list[str]:
    """The captain in the cockpit (in-process, driven by the Pilot): waits for the request
    ``request_id`` in Approvals, moves the cursor to it with keys, presses ``key`` (``y``
    allow, ``Y`` allow for the session) and waits for the row to leave. Returns the toasts
    shown. A live agent's test uses it on the request its real agent holds open."""
    app = Cockpit(home, run_doorbell=False)

    async def scenario(pilot) -> None:
        await select_row(pilot, "approvals", request_id)
        await pilot.press(key)
        await until(
            pilot,
            lambda: app.view.approval(request_id) is None,
            what=f"request {request_id} to leave Approvals",
        )

    drive(app, scenario)
    return toasts(app)


Scenario = Callable[..., Awaitable[None]]

"""The pane preview wakes only when a capture is due: one timer, set for the next capture,
not a clock that ticks every ``every`` seconds to find the backed-off capture not yet due;
and nothing at all while it shows a message (a crew with no pane). A real tmux pane that
prints once and then stays the same, and beside it a preview showing a message; the window
is measured in the first one's captures, never slept for.
"""

from __future__ import annotations

import asyncio
from pathlib import Path

from support.tmux import PrivateTmux, needs_tmux
from textual.app import App

from captain_tui.runtime.tmux import Tmux
from state.records import PaneLocator
from widgets.preview import PanePreview, Subject

EVERY, IDLE = 0.05, 0.4  # backed off, the old clock ticked 8 times a capture
CAPTURES = 3  # the window: this many captures of the idle pane


async def _until(pilot, predicate, what: str, timeout: float = 10.0):
    deadline = asyncio.get_running_loop().time() + timeout
    while not (value := predicate()):
        if asyncio.get_running_loop().time() >= deadline:
            raise AssertionError(f"timed out after {timeout} s waiting for {what}")
        await pilot.pause(0.02)
    return value


@needs_tmux
def test_an_idle_panes_preview_wakes_once_a_capture_and_not_for_a_message(tmp_path: Path):
    server = PrivateTmux()
    made = server.tmux(
        *("new-session", "-d", "-x", "80", "-y", "20", "-P", "-F"),
        "#{session_name} #{window_id} #{pane_id}",
        "sh -c 'echo IDLE-MARK; exec sleep 600'",
    )
    session, window, pane = made.stdout.split()
    jack = PaneLocator(socket=server.socket, session=session, window_id=window, pane_id=pane)
    captures: list[str] = []
    ticks: dict[str, int] = {"pane": 0, "message": 0}

    def capture(locator: PaneLocator) -> str:  # the cockpit's own: one real tmux call
        text = Tmux(locator.socket).capture(locator, ansi=True)
        captures.append(text)
        return text

    class Preview(PanePreview):
        def wake(self) -> None:
            ticks[str(self.id)] += 1  # counted on the way through
            super().wake()

    class Host(App):
        def compose(self):
            yield Preview(capture, every=EVERY, idle_every=IDLE, id="pane")
            yield Preview(capture, every=EVERY, idle_every=IDLE, id="message")

    seen: dict[str, int] = {}

    async def main() -> None:
        app = Host()
        async with app.run_test(size=(80, 40)) as pilot:
            pane = app.query_one("#pane", PanePreview)
            message = app.query_one("#message", PanePreview)
            pane.follow(Subject("Pane · Jack", key="jack", name="Jack", pane=jack))
            # a crew with no pane: its message is shown once, and nothing wakes for it
            message.follow(Subject("Pane · Kim", "Kim has no tmux pane.", key="kim", name="Kim"))
            await _until(pilot, lambda: pane.pause >= IDLE, "the back-off to idle_every")
            ticks.update(pane=0, message=0)
            first = len(captures)
            await _until(pilot, lambda: len(captures) >= first + CAPTURES, "three captures")
            seen.update(ticks, captures=len(captures) - first)

    try:
        asyncio.run(main())
    finally:
        server.kill()
    # one wake-up per capture (the old 0.05 s clock: ~8 a capture, ~24 here), and none
    # for the message (the old clock: as many)
    assert seen["pane"] <= seen["captures"] + 1, seen
    assert seen["message"] == 0, seen

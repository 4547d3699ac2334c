"""The pane preview is a widget with its own clock (#24 §5): told what is selected, it
captures a real tmux pane in a thread worker of its own, backs off while the pane stays the
same and follows a change at once, with no app around it but a host that mounts it; a
capture that comes back for a crew no longer selected is dropped, and a pane that cannot be
read is said in the panel."""

from __future__ import annotations

import asyncio
import threading
from pathlib import Path

from support.tmux import PrivateTmux, needs_tmux
from textual.app import App
from textual.widgets import Static

from captain_tui.runtime.tmux import Tmux
from state.records import PaneLocator
from widgets.preview import PanePreview, Subject

EVERY, IDLE = 0.1, 0.8


def _shown(preview: PanePreview) -> str:
    screen = preview.query_one("#screen", Static)
    empty = preview.query_one(".empty", Static)
    shown = screen if screen.display else empty
    return str(getattr(shown.content, "plain", shown.content))


async def _until(pilot, predicate, what: str, timeout: float = 10.0):
    deadline = asyncio.get_running_loop().time() + timeout
    while not (value := predicate()):
        if asyncio.get_running_loop().time() >= deadline:
            raise AssertionError(f"timed out after {timeout} s waiting for {what}")
        await pilot.pause(0.02)
    return value


@needs_tmux
def test_the_preview_keeps_its_own_clock_and_captures_off_the_ui_thread(tmp_path: Path):
    server = PrivateTmux()
    flag = tmp_path / "go"
    program = (
        f"echo FIRST-MARK; while [ ! -e {flag} ]; do sleep 0.1; done; "
        "echo SECOND-MARK; exec sleep 600"
    )
    made = server.tmux(
        *("new-session", "-d", "-x", "80", "-y", "20", "-P", "-F"),
        "#{session_name} #{window_id} #{pane_id}",
        f"sh -c '{program}'",
    )
    session, window, pane = made.stdout.split()
    jack = PaneLocator(socket=server.socket, session=session, window_id=window, pane_id=pane)
    captured_on: list[int] = []

    def capture(locator: PaneLocator) -> str:  # the cockpit's own: one real tmux call
        captured_on.append(threading.get_ident())
        return Tmux(locator.socket).capture(locator, ansi=True)

    seen: dict[str, object] = {}

    class Preview(PanePreview):
        def show_capture(self, crew: str, capture: str) -> None:
            if "SECOND-MARK" in capture:  # the change's first capture: its pause, then
                seen.setdefault("after_change", self.pause)
            super().show_capture(crew, capture)

    class Host(App):
        def compose(self):
            yield Preview(capture, every=EVERY, idle_every=IDLE)

    async def main() -> None:
        app = Host()
        async with app.run_test(size=(80, 20)) as pilot:
            ui_thread = threading.get_ident()
            preview = app.query_one(PanePreview)
            preview.follow(Subject("Pane · Jack", key="jack", name="Jack", pane=jack))
            await _until(pilot, lambda: "FIRST-MARK" in _shown(preview), "the pane's text")
            # the same capture again and again: the widget's own timer asks less often
            await _until(pilot, lambda: preview.pause >= IDLE, "the back-off to idle_every")
            seen["backed_off"] = preview.pause
            flag.touch()
            await _until(pilot, lambda: "SECOND-MARK" in _shown(preview), "the pane's change")
            seen["off_ui"] = bool(captured_on) and ui_thread not in captured_on

            # another crew selected, then Jack's capture comes back: it is not drawn
            preview.follow(Subject("Pane · Kim", "Kim has no tmux pane.", key="kim", name="Kim"))
            await _until(pilot, lambda: "Kim has no tmux pane." in _shown(preview), "Kim")
            preview.on_pane_preview_captured(PanePreview.Captured("jack", "STALE-MARK"))
            seen["stale"] = _shown(preview)

            # Jack again, on a server that is gone: said in the panel, nothing raised
            server.kill()
            preview.follow(Subject("Pane · Jack", key="jack", name="Jack", pane=jack))
            seen["gone"] = await _until(
                pilot,
                lambda: "pane cannot be read" in _shown(preview) and _shown(preview),
                "the unreadable pane's sentence",
            )

    try:
        asyncio.run(main())
    finally:
        server.kill()
    assert seen["backed_off"] == IDLE  # doubled from EVERY while captures were the same
    assert seen["after_change"] == EVERY  # it changed: followed every EVERY again
    assert seen["off_ui"], "a capture ran on the UI thread"
    assert seen["stale"] == "Kim has no tmux pane."
    assert str(seen["gone"]).startswith("Jack's pane cannot be read: tmux capture-pane failed")

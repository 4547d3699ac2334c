"""A newcomer's first minute, for real: `captain demo` in a tmux pane, driven by keys."""

from __future__ import annotations

import sys

from support.tmux import PrivateTmux, needs_tmux, poll

pytestmark = needs_tmux


def test_demo_in_a_real_terminal_answer_a_question_and_see_the_crew_finish(tmp_path):
    outer = PrivateTmux()  # the person's terminal; the demo makes its own crew server
    try:
        outer.tmux(
            "new-session",
            "-d",
            "-x",
            "120",
            "-y",
            "36",
            "-s",
            "person",
            "-e",
            f"CAPTAIN_CONFIG_DIR={tmp_path / 'config'}",
            f"{sys.executable} -m captain_tui demo; echo DEMO-EXITED-$?; sleep 60",
        )
        pane = "person"
        screen = poll(
            lambda: (lambda s: s if "Questions 3" in s else None)(outer.capture(pane)),
            timeout=60,
            what="three questions in the cockpit",
        )
        assert "asked" in screen
        # each crew's turn was measured by the real Stop hook: the header sums it
        poll(
            lambda: " spent $" in outer.capture(pane),
            timeout=20,
            what="the crews' spend in the header",
        )
        outer.key(pane, "a")
        poll(lambda: "ctrl+s" in outer.capture(pane), timeout=10, what="the answer modal")
        outer.type(pane, "Yes, show both.")
        poll(
            lambda: "Yes, show both." in outer.capture(pane),
            timeout=10,
            what="the typed answer on screen",
        )  # as a person sees it before sending
        outer.key(pane, "C-s")
        try:
            poll(
                lambda: "Questions 2" in outer.capture(pane),
                timeout=10,
                what="the answered question to leave the list",
            )
        except AssertionError as err:
            raise AssertionError(f"{err}\n{outer.capture(pane)}") from None
        poll(
            lambda: " done " in outer.capture(pane),
            timeout=40,
            what="the answered crew to report done",
        )
        outer.key(pane, "C-q")
        poll(
            lambda: "DEMO-EXITED-0" in outer.capture(pane),
            timeout=20,
            what="the demo to quit cleanly",
        )
    finally:
        outer.kill()

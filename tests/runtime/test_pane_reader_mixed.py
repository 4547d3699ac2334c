"""The pane reader over screens mixed from every agent's real captures.

A ring is typed only into a composer the reader positively recognises as this agent's,
idle and empty. So a screen made of pieces of the *other* agents' screens (their
composers, dialogs, spinners, transcripts, in any order, cut anywhere, with or without
colours) must never read as an empty composer of this one: the doorbell would type into a
program it does not know. Each agent's own mutations are in test_pane_reader_{pi,codex}.py
and test_pane_reader.py; this file mixes across agents.
"""

from __future__ import annotations

from pathlib import Path

from hypothesis import given, settings
from hypothesis import strategies as st

from captain_tui.runtime.pane_reader import read_screen

SCREENS = Path(__file__).resolve().parents[1] / "fixtures" / "screens"
# fixture folder -> the agent kind whose screens it holds
FOLDERS = {"claude-code": "claude", "codex": "codex", "codex-0.169-120x40": "codex", "pi": "pi"}
KINDS = ("claude", "codex", "pi")


def _captures() -> dict[str, list[list[str]]]:
    """Per agent kind, each capture (plain and ANSI) as its lines."""
    out: dict[str, list[list[str]]] = {kind: [] for kind in KINDS}
    for folder, kind in FOLDERS.items():
        for path in sorted((SCREENS / folder).iterdir()):
            if path.suffix in (".txt", ".ansi"):
                out[kind].append(path.read_text(encoding="utf-8").splitlines())
    return out


CAPTURES = _captures()


def test_every_agent_has_captures_to_mix():
    assert all(len(CAPTURES[kind]) >= 8 for kind in KINDS), {
        kind: len(screens) for kind, screens in CAPTURES.items()
    }


@st.composite
def foreign_screen(draw, reader: str) -> str:
    """Pieces of other agents' captures: 1-4 runs of consecutive lines, each from any
    capture of an agent other than ``reader``, ending anywhere (the bottom of a screen
    is where every reader looks for its composer)."""
    pool = [lines for kind, screens in CAPTURES.items() if kind != reader for lines in screens]
    rows: list[str] = []
    for _ in range(draw(st.integers(1, 4))):
        lines = draw(st.sampled_from(pool))
        start = draw(st.integers(0, max(0, len(lines) - 1)))
        end = draw(st.integers(start + 1, len(lines)))
        rows += lines[start:end]
    return "\n".join(rows) + "\n"


@settings(max_examples=300, deadline=None)
@given(data=st.data(), reader=st.sampled_from(KINDS))
def test_another_agents_screen_never_reads_as_an_empty_composer(data, reader):
    screen = data.draw(foreign_screen(reader))
    seen = read_screen(screen, reader)
    assert not (seen.composer_readable and seen.draft == "" and not seen.approval), (
        f"{reader} read a screen of other agents as its own empty composer: {seen.reason}\n"
        + screen[-1500:]
    )


def test_each_agents_own_idle_screen_is_still_clear():
    """The property above is not met by refusing everything: each reader still reads its
    own agent's idle capture as an empty composer."""
    for folder, kind in (("claude-code", "claude"), ("codex-0.169-120x40", "codex"), ("pi", "pi")):
        for suffix in (".txt", ".ansi"):
            seen = read_screen((SCREENS / folder / f"idle-empty{suffix}").read_text(), kind)
            assert seen.composer_readable and seen.draft == "" and not seen.working, (
                folder,
                suffix,
                seen.reason,
            )

"""The pane reader against real Codex 0.169.0 screens (120x40, the shared lab's captures).

Each capture must read right, and screens mutated from them must never read as a clear,
empty composer (``composer_readable`` with ``draft == ""``) unless the composer is still
positively Codex's idle, empty one: the doorbell types only into that.
Provenance of the captures: tests/fixtures/README.md.
"""

from __future__ import annotations

import os
import re
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from captain_tui.runtime.pane_reader import Screen, read_screen

REPO = Path(__file__).resolve().parents[2]
SCREENS = Path(os.environ.get("CAPTAIN_FIXTURES", REPO / "tests" / "fixtures" / "screens"))
DIR = SCREENS / "codex-0.169-120x40"
PLACEHOLDER = "Ask Codex to do anything"

# (approval, composer_readable, draft, working) for every capture.
EXPECTED = {
    "idle-empty": (False, True, "", False),  # the big logo, then the composer
    "draft": (False, True, "Please refactor the parser module", False),
    "working": (False, True, "", True),  # ◦ Working (3s • esc to interrupt)
    "approval-prompt": (True, False, None, False),
    "after-turn": (False, True, "", False),
    "after-approval-yes": (False, True, "", False),
    "after-approval-denied": (False, True, "", False),
}
# Screens Codex shows before its composer (settled by captain's config, but a person's
# own config may bring them back): never clear.
NEVER_CLEAR = ("extra-onboarding-hooks-trust", "extra-onboarding-model-migration")
CLEAR = [n for n, e in EXPECTED.items() if e == (False, True, "", False)]


def load(name: str, ext: str) -> str:
    return (DIR / f"{name}.{ext}").read_text(encoding="utf-8")


def fields(s: Screen) -> tuple:
    return (s.approval, s.composer_readable, s.draft, s.working)


def clear(s: Screen) -> bool:
    """What the doorbell needs to type: no prompt, readable, empty, not working."""
    return not s.approval and s.composer_readable and s.draft == "" and not s.working


def reads_empty(s: Screen) -> bool:
    return s.composer_readable and s.draft == ""


@pytest.mark.parametrize("ext", ["txt", "ansi"])
@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_real_codex_captures_read_right(name: str, ext: str):
    screen = read_screen(load(name, ext), "codex")
    assert fields(screen) == EXPECTED[name], screen
    assert screen.reason


@pytest.mark.parametrize("ext", ["txt", "ansi"])
@pytest.mark.parametrize("name", NEVER_CLEAR)
def test_codex_startup_screens_are_never_clear(name: str, ext: str):
    screen = read_screen(load(name, ext), "codex")
    assert not clear(screen), screen
    assert screen.approval or not screen.composer_readable, screen


def test_the_working_capture_shows_the_status_line_read():
    assert "◦ Working (3s • esc to interrupt)" in load("working", "txt")
    assert "Working" in read_screen(load("working", "txt"), "codex").reason


# --------------------------------------------------------------------------- mutations

_COMPOSER = re.compile(r"^(\x1b\[[0-9;]*m)*›")
# Junk rows never start a composer (no ›): one that did, with a placeholder, would be a
# composer indeed.
_JUNK = st.text(
    alphabet=st.characters(
        blacklist_categories=("Cs", "Cc"), blacklist_characters="›\u2028\u2029\x85"
    ),
    min_size=1,
    max_size=60,
).filter(lambda t: t.strip() != "")


def _composer_row(lines: list[str]) -> int:
    rows = [i for i, line in enumerate(lines) if _COMPOSER.match(line)]
    assert rows, "a clear capture has a composer row"
    return rows[-1]


@st.composite
def typed_on_clear(draw):
    """A clear capture whose composer row now holds something a person typed (never dim)
    or nothing at all: neither is positively an empty composer."""
    name = draw(st.sampled_from(CLEAR + ["working"]))
    ext = draw(st.sampled_from(["txt", "ansi"]))
    lines = load(name, ext).split("\n")
    c = _composer_row(lines)
    text = draw(
        st.one_of(
            st.just(""),
            st.just(" "),
            st.text(min_size=1, max_size=80).filter(lambda t: t.strip() not in ("", PLACEHOLDER)),
            st.sampled_from(
                [
                    PLACEHOLDER[:-1],
                    PLACEHOLDER + "!",
                    "ask codex to do anything",
                    PLACEHOLDER.replace(" ", "  "),
                ]
            ),
        )
    )
    bold = "\x1b[1m›\x1b[0m" if ext == "ansi" else "›"
    lines[c] = f"{bold} {text}" if text or draw(st.booleans()) else bold
    return "\n".join(lines), "codex"


@st.composite
def junk_under_clear(draw):
    """A clear capture with rows added under its composer: a placeholder with more than a
    short footer under it is a transcript line, not the composer."""
    name = draw(st.sampled_from(CLEAR))
    ext = draw(st.sampled_from(["txt", "ansi"]))
    lines = load(name, ext).split("\n")
    c = _composer_row(lines)
    junk = draw(st.lists(_JUNK, min_size=5, max_size=12))
    at = draw(st.integers(c + 1, len(lines)))
    lines[at:at] = junk
    return "\n".join(lines), "codex"


@st.composite
def cut_from_busy(draw):
    """A screen that is not an empty composer (a prompt, a draft, a start-up screen) with
    rows deleted and junk rows inserted anywhere."""
    name = draw(st.sampled_from(["approval-prompt", "draft", *NEVER_CLEAR]))
    ext = draw(st.sampled_from(["txt", "ansi"]))
    lines = load(name, ext).split("\n")
    for _ in range(draw(st.integers(0, 8))):
        if lines and draw(st.booleans()):
            del lines[draw(st.integers(0, len(lines) - 1))]
        else:
            lines.insert(draw(st.integers(0, len(lines))), draw(_JUNK))
    return "\n".join(lines), name


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(typed_on_clear())
def test_prop_anything_typed_on_the_composer_is_never_empty(case):
    text, _ = case
    screen = read_screen(text, "codex")
    assert not reads_empty(screen), (screen, text.split("\n")[-6:])


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(junk_under_clear())
def test_prop_a_placeholder_with_rows_under_it_is_not_the_composer(case):
    text, _ = case
    screen = read_screen(text, "codex")
    assert not reads_empty(screen), (screen, text.split("\n")[-14:])


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(cut_from_busy())
def test_prop_mutated_prompts_drafts_and_startup_screens_never_read_empty(case):
    text, name = case
    screen = read_screen(text, "codex")
    assert not reads_empty(screen), (name, screen, text)

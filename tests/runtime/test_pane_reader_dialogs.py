"""The screen reader names the start-up dialog on a real capture of Claude Code or Codex
(``pane_reader.DIALOGS``), and nothing else reads as one.

Captures (``tests/fixtures/screens``, provenance in its README): Claude Code 2.1.332's folder
trust ("Accessing workspace", pointer on "No, exit") and API-key approval; Codex 0.169.0's
folder trust ("Trust this folder?"), model-migration notice, hooks review and login.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from captain_tui.runtime.pane_reader import DIALOGS, read_screen

SCREENS = Path(__file__).resolve().parents[1] / "fixtures" / "screens"

REAL = [
    ("claude-code-2.1.332/folder-trust", "claude", "folder_trust", "No, exit"),
    ("codex-0.169-120x40/extra-folder-trust", "codex", "folder_trust", "Trust and continue"),
    (
        "codex-0.169-120x40/extra-onboarding-model-migration",
        "codex",
        "model_migration",
        "Try new model",
    ),
    ("codex-0.169-120x40/extra-onboarding-hooks-trust", "codex", "hooks_review", "Review hooks"),
    ("claude-code-2.1.332/api-key", "claude", "api_key", "No (recommended)"),
    ("codex-0.169-120x40/extra-login", "codex", "login", "Sign in with ChatGPT"),
]
DIALOG_FILES = {name for name, *_ in REAL}


def _kind(path: Path) -> str:
    top = path.parent.name
    return "claude" if top.startswith("claude") else "codex" if top.startswith("codex") else "pi"


@pytest.mark.parametrize("ext", ["txt", "ansi"])
@pytest.mark.parametrize(("name", "agent", "dialog", "choice"), REAL)
def test_each_real_dialog_is_named_with_its_pointer(name, agent, dialog, choice, ext):
    seen = read_screen((SCREENS / f"{name}.{ext}").read_text(), agent)
    assert (seen.dialog, seen.choice) == (dialog, choice)
    # still a modal: nothing rings into it
    assert seen.approval and not seen.composer_readable and seen.draft is None
    assert dialog.replace("_", " ") in seen.reason


def test_no_other_capture_reads_as_a_dialog():
    others = [
        p
        for p in sorted(SCREENS.glob("*/*"))
        if p.suffix in (".txt", ".ansi") and f"{p.parent.name}/{p.stem}" not in DIALOG_FILES
    ]
    assert len(others) >= 30
    for path in others:
        assert read_screen(path.read_text(), _kind(path)).dialog is None, path


@pytest.mark.parametrize(("name", "agent", "dialog", "choice"), REAL)
def test_a_dialog_read_as_another_agent_is_not_that_agents_dialog(name, agent, dialog, choice):
    other = {"claude": "codex", "codex": "claude"}[agent]
    text = (SCREENS / f"{name}.txt").read_text()
    seen = read_screen(text, other)
    assert seen.dialog is None or any(d.agent == other and d.id == seen.dialog for d in DIALOGS), (
        seen
    )
    assert read_screen(text, "pi").dialog is None
    assert read_screen(text, "shell").dialog is None


@pytest.mark.parametrize(("name", "agent", "dialog", "choice"), REAL)
def test_a_dialog_missing_any_marker_is_not_named_but_still_holds(name, agent, dialog, choice):
    text = (SCREENS / f"{name}.txt").read_text()
    (rule,) = [d for d in DIALOGS if d.agent == agent and d.id == dialog]
    for marker in rule.markers:
        cut = "\n".join(line for line in text.splitlines() if marker not in line)
        seen = read_screen(cut, agent)
        assert seen.dialog is None, marker
        # a half-drawn dialog never reads as a clear composer (a ring would land in it)
        assert seen.approval or not seen.composer_readable or seen.draft, marker


def test_a_transcript_quoting_a_dialog_above_a_readable_composer_is_no_dialog():
    idle = (SCREENS / "codex-0.169-120x40/idle-empty.txt").read_text().splitlines()
    quoted = [
        "• The screen said: Trust this folder?",
        "  › 1. Trust and continue   2. Use existing model   1. Try new model",
        "  Hooks need review · Trust all and continue",
    ]
    at = next(i for i, line in enumerate(idle) if line.startswith("› "))
    text = "\n".join(idle[: at - 2] + quoted + idle[at - 2 :])
    seen = read_screen(text, "codex")
    assert seen.composer_readable and seen.draft == "" and seen.dialog is None


@pytest.mark.parametrize("pointer", [None, "❯ Yes, I trust this folder", "  ❯ No, exit"])
def test_an_approval_prompt_quoting_a_trust_dialog_is_not_one(pointer):
    """A model-written command can put any words in a permission prompt: the prompt's own
    pointer (on its "1. Yes") is not on a trust dialog's option, and a second pointer
    drawn in the quote makes two: never the dialog, so ``u`` never answers it."""
    lines = (SCREENS / "claude-code/approval-prompt.txt").read_text().splitlines()
    at = next(i for i, line in enumerate(lines) if "Do you want to proceed?" in line)
    quote = [
        "   echo 'Accessing workspace: Yes, I trust this folder / No, exit",
        "   Enter to confirm'",
    ] + ([pointer] if pointer else [])
    seen = read_screen("\n".join(lines[:at] + quote + lines[at:]), "claude")
    assert seen.approval and seen.dialog is None

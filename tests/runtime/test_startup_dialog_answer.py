"""Answering a start-up dialog for a crew sends keys only while the pane shows exactly that
dialog (``captain_tui/runtime/dialogs.py``), in real tmux on a private socket.

The crew is recruited through the real CLI as ``--agent claude`` / ``--agent codex``, the
agent on its PATH being a small program that draws a REAL capture of that agent's dialog
(``tests/fixtures/screens``), moves its pointer on ``Down`` as the agent does, and logs
every key it receives. So the tests can say what reached the program, byte for byte:

- the trust dialog: ``Down`` (pointer from "No, exit" to "Yes, I trust this folder"), then
  ``Enter``; nothing else, and the crew's ``blocked`` clears;
- a dialog that changes under the first key: refused (``dialog_changed``), ``Enter`` never
  sent;
- a dialog only a person answers (Codex's model migration): refused (``dialog_not_safe``),
  no key sent; the crew is still ``blocked: model migration``;
- a pane in tmux's copy mode (a key would go to tmux, not the agent): refused, no key sent.
"""

from __future__ import annotations

import pytest
from support.dialogs import keys_received, recruit_at_dialog
from support.tmux import needs_tmux, poll

from captain_tui import usecases
from captain_tui.runtime import dialogs
from state.crew.guards import CAPTAIN
from state.errors import CaptainError
from state.home import Home

pytestmark = needs_tmux


def _state(home: Home) -> tuple[str, str | None]:
    (row,) = usecases.status(home).crew
    return row["state"], row["dialog"]


def _blocked(home: Home, dialog: str) -> None:
    poll(lambda: dialogs.probe(home, "jack") == dialog, what=f"the {dialog} dialog")
    assert _state(home) == ("blocked", dialog)


def test_trust_is_down_then_enter_and_nothing_else(cli, tmux, tmp_path):
    home, log = recruit_at_dialog(
        cli, tmux, tmp_path, "claude", "claude-code-2.1.332/folder-trust.txt"
    )
    _blocked(home, "folder_trust")
    done = dialogs.answer(home, "Jack", "folder_trust", ctx=CAPTAIN)
    assert done.cleared and done.option == "Yes, I trust this folder"
    assert keys_received(log) == ["Down", "Enter"]
    assert _state(home) == ("assigned", None)


def test_a_dialog_that_changes_under_the_first_key_gets_no_enter(cli, tmux, tmp_path):
    home, log = recruit_at_dialog(
        cli, tmux, tmp_path, "claude", "claude-code-2.1.332/folder-trust.txt", "vanish"
    )
    _blocked(home, "folder_trust")
    with pytest.raises(CaptainError) as err:
        dialogs.answer(home, "Jack", "folder_trust", ctx=CAPTAIN)
    assert err.value.code == "dialog_changed"
    assert keys_received(log) == ["Down"]


def test_a_dialog_only_a_person_answers_is_refused_with_no_key(cli, tmux, tmp_path):
    home, log = recruit_at_dialog(
        cli, tmux, tmp_path, "codex", "codex-0.169-120x40/extra-onboarding-model-migration.txt"
    )
    _blocked(home, "model_migration")
    with pytest.raises(CaptainError) as err:
        dialogs.answer(home, "Jack", ctx=CAPTAIN)
    assert err.value.code == "dialog_not_safe"
    assert "jump to the pane" in err.value.message
    with pytest.raises(CaptainError) as err:  # asked for another dialog than the one up
        dialogs.answer(home, "Jack", "folder_trust", ctx=CAPTAIN)
    assert err.value.code == "dialog_changed"
    assert keys_received(log) == []
    assert _state(home) == ("blocked", "model_migration")


def test_a_pane_in_copy_mode_gets_no_key(cli, tmux, tmp_path):
    home, log = recruit_at_dialog(
        cli, tmux, tmp_path, "codex", "codex-0.169-120x40/extra-folder-trust.txt"
    )
    _blocked(home, "folder_trust")
    (row,) = usecases.status(home).crew
    tmux.tmux("copy-mode", "-t", row["pane"]["pane_id"])
    with pytest.raises(CaptainError) as err:
        dialogs.answer(home, "Jack", "folder_trust", ctx=CAPTAIN)
    assert err.value.code == "no_dialog"
    tmux.tmux("send-keys", "-t", row["pane"]["pane_id"], "-X", "cancel")
    assert keys_received(log) == []
    done = dialogs.answer(home, "Jack", "folder_trust", ctx=CAPTAIN)  # out of it: answered
    assert done.cleared and keys_received(log) == ["Enter"]

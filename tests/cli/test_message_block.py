"""How mail reads on a crew's screen (``captain inbox``, a refused ``done``)."""

from __future__ import annotations

from captain_tui.cli.out import message_block


def mail(kind: str, **extra) -> dict:
    return {
        "message_id": "msg_1",
        "kind": kind,
        "queued_at": "2026-12-01T10:00:00+00:00",
        "assignment_id": "asg_2",
        "text": "Fix the changelog\nand the links",
        **extra,
    }


def test_a_new_task_says_which_assignment_id_to_pass():
    """A crew's CAPTAIN_ASSIGNMENT names its first task only: the next task's mail must
    tell it the ID that ``done`` and ``ask`` take, or they answer stale_assignment."""
    block = message_block(mail("assignment"))
    assert "pass --assignment asg_2 to captain done and captain ask" in block
    assert block.splitlines()[-2:] == ["   Fix the changelog", "   and the links"]


def test_a_follow_up_carries_no_such_line():
    assert "--assignment" not in message_block(mail("tell"))

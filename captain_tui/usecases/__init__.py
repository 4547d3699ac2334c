"""The use cases, once: what the CLI, the cockpit and the HTTP API ask captain to do.

Each function takes the caller's ``Context`` and checks its role itself, writes through
``state`` (the rules live there), does the tmux part through ``captain_tui.runtime`` and
git's through ``captain_tui.repo``, and returns what happened as data: which mail bounced,
whether a pane stop was confirmed, which of cancel's three outcomes it was. The surfaces
only turn a result into words (``captain_tui.cli``, ``captain_tui.cockpit.jobs``; ``words``
holds what both say) or JSON (``captain_tui.api``). A refusal is a ``CaptainError`` raised
before anything is written.

``crew_ops`` (recruit, assign, acknowledge, dismiss, jump), ``mail_ops`` (tell,
tell_with_budget, answer, ring), ``review_ops``
(change, change_summary, diff_bytes, comment), ``work_ops`` (cancel, replay, resolve, actor),
``landing_ops`` (land, landing_queue), ``status_ops`` (status, the read model), ``words``.
May import ``captain_tui.runtime``, ``captain_tui.repo``, ``captain_tui.agents`` and
``state``; never the CLI, the cockpit, the API or Textual.
"""

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from captain_tui.usecases.approvals_ops import approve, pending
    from captain_tui.usecases.crew_ops import (
        Attach,
        Dismissal,
        Recruited,
        Recruitment,
        acknowledge,
        assign,
        dismiss,
        jump,
        recruit,
    )
    from captain_tui.usecases.landing_ops import Landing, land, landing_queue
    from captain_tui.usecases.mail_ops import Bell, Told, answer, ring, tell, tell_with_budget
    from captain_tui.usecases.review_ops import change, change_summary, comment, diff_bytes
    from captain_tui.usecases.status_ops import Status, status
    from captain_tui.usecases.words import dismissal_words, store_error, workspace_words
    from captain_tui.usecases.work_ops import Cancellation, actor, cancel, replay, resolve

# Each name's module, imported on first use (PEP 562): a command pays only for the use
# case it runs. ``captain tell`` needs none of the landing, review, approvals or work
# modules, and importing them all cost every captain command ~100 ms of its start.
_WHERE = {
    "approve": "approvals_ops",
    "pending": "approvals_ops",
    **dict.fromkeys(
        (
            "Attach",
            "Dismissal",
            "Recruited",
            "Recruitment",
            "acknowledge",
            "assign",
            "dismiss",
            "jump",
            "recruit",
        ),
        "crew_ops",
    ),
    **dict.fromkeys(("Bell", "Told", "answer", "ring", "tell", "tell_with_budget"), "mail_ops"),
    **dict.fromkeys(("Landing", "land", "landing_queue"), "landing_ops"),
    **dict.fromkeys(("change", "change_summary", "comment", "diff_bytes"), "review_ops"),
    **dict.fromkeys(("Status", "status"), "status_ops"),
    **dict.fromkeys(("dismissal_words", "store_error", "workspace_words"), "words"),
    **dict.fromkeys(("Cancellation", "actor", "cancel", "replay", "resolve"), "work_ops"),
}


def __getattr__(name: str):
    module = _WHERE.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    from importlib import import_module

    value = getattr(import_module(f"{__name__}.{module}"), name)
    globals()[name] = value  # once: the next look-up is a plain attribute
    return value


__all__ = [
    "Attach",
    "Bell",
    "Cancellation",
    "Dismissal",
    "Landing",
    "Recruited",
    "Recruitment",
    "Status",
    "Told",
    "acknowledge",
    "actor",
    "answer",
    "approve",
    "assign",
    "cancel",
    "change",
    "change_summary",
    "comment",
    "diff_bytes",
    "dismiss",
    "dismissal_words",
    "jump",
    "land",
    "landing_queue",
    "pending",
    "recruit",
    "replay",
    "resolve",
    "ring",
    "status",
    "store_error",
    "tell",
    "tell_with_budget",
    "workspace_words",
]

"""The use cases, once: what the CLI, the cockpit and the HTTP API ask captain to do.

Each function takes the caller's ``Context`` and checks its role itself, writes through
``state`` (the rules live there), does the tmux part through ``captain_tui.runtime`` and
git's through ``captain_tui.repo``, and returns what happened as data: which mail bounced,
whether a pane stop was confirmed, which of cancel's three outcomes it was. The surfaces
only turn a result into words (``captain_tui.cli``, ``captain_tui.cockpit.jobs``; ``words``
holds what both say) or JSON (``captain_tui.api``). A refusal is a ``CaptainError`` raised
before anything is written.

``crew_ops`` (recruit, assign, tell, tell_with_budget, answer, acknowledge, dismiss, ring,
jump), ``review_ops`` (change, change_summary, diff_bytes, comment), ``work_ops`` (cancel,
replay, resolve, actor), ``landing_ops`` (land, landing_queue), ``status`` (the read model),
``words``.
May import ``captain_tui.runtime``, ``captain_tui.repo``, ``captain_tui.agents`` and
``state``; never the CLI, the cockpit, the API or Textual.
"""

from captain_tui.usecases.approvals_ops import approve, pending
from captain_tui.usecases.crew_ops import (
    Attach,
    Bell,
    Dismissal,
    Recruited,
    Recruitment,
    acknowledge,
    answer,
    assign,
    dismiss,
    jump,
    recruit,
    ring,
    tell,
    tell_with_budget,
)
from captain_tui.usecases.landing_ops import Landing, land, landing_queue
from captain_tui.usecases.review_ops import change, change_summary, comment, diff_bytes
from captain_tui.usecases.status import Status, status
from captain_tui.usecases.words import dismissal_words, store_error, workspace_words
from captain_tui.usecases.work_ops import Cancellation, actor, cancel, replay, resolve

__all__ = [
    "Attach",
    "Bell",
    "Cancellation",
    "Dismissal",
    "Landing",
    "Recruited",
    "Recruitment",
    "Status",
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

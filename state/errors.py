"""Refusals: a stable code and a sentence a person understands."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

# Stable codes. Add new ones at the end; never rename or reuse one.
CODES = frozenset(
    {
        "invalid_name",
        "unknown_crew",
        "crew_exists",
        "crew_dismissed",
        "crew_forbidden",
        "missing_context",
        "stale_assignment",
        "stale_incarnation",
        "ownership_overlap",
        "grant_denied",
        "question_pending",
        "unknown_question",
        "unread_mail",
        "report_required",
        "duplicate_message",
        "handoff_mismatch",
        "assignment_active",
        "unacknowledged",
        "unknown_delivery",
        "message_conflict",
        "store_error",
        "tmux_unavailable",
        # added by the foundation
        "unknown_action",
        "message_too_large",
        "invalid_text",
        "invalid_path",
        "assignment_done",
        "question_answered",
        "invalid_home",
        "invalid_argument",
        "internal_error",
        "agent_not_found",
        # added by the work ledger
        "unknown_work",
        "stale_generation",
        "not_running",
        "not_queued",
        "no_capacity",
        "not_finished",
        "payload_expired",
        "evidence_required",
        "invalid_filter",
        "not_reconciling",
        "delivery_conflict",
        "unknown_endpoint",
        # added by the HTTP API
        "unknown_token",
        "unauthorized",
        "forbidden",
        "bad_signature",
        "unknown_workspace",
        # added by the trust work
        "invalid_role",
        # added by the hostile-client work on captain serve
        "not_found",
        "method_not_allowed",
        "request_timeout",
        # added by the record bounds: a write the store's reader would refuse
        "record_too_large",
        # added by the delivery rules: a routine endpoint's receipt is executed by whatever
        # runs that endpoint's deliveries, so captain refuses to cancel or replay it (409)
        "routine_receipt",
        # added by the PostgreSQL ledger: which ledger a home uses, and reaching it
        "invalid_ledger_url",
        "ledger_unreachable",
        "postgres_not_installed",
        "ledger_schema_newer",
        "ledger_error",
        "ledger_not_migrated",
        # a command line argparse cannot take, answered with --json (exit 2)
        "usage",
        "ledger_not_imported",
        "ledger_import_conflict",
        # added by the corrupted-row work: one ledger row that does not validate, named
        "ledger_corrupt",
        # added by the config bounds: a setting in config.toml of the wrong type or range
        "invalid_config",
        # a ledger setting changed under a running process, which keeps its ledger: said
        # as a warning (state.work.backend.LedgerHandle), never a refusal
        "ledger_changed",
        "ledger_not_imported",
        "ledger_import_conflict",
        # a command line argparse cannot take, answered with --json (exit 2)
        "usage",
        # added by the worktrees (issue #25): git failed, or a crew's worktree cannot be made
        "git_failed",
        "detached_head",
        "branch_exists",
        "worktree_exists",
        # added by review (#25): a crew whose project is not a git repository has no change
        "no_change",
        # added by captain land (docs/landing.md): a serialized, checked merge
        "not_done",
        "already_landed",
        "nothing_to_land",
        "conflict",
        "tests_failed",
        "outside_grant",
        "dirty_checkout",
        "land_busy",
        "base_moved",
        "no_worktree",
        # added by the start-up dialogs (issue #26): answering one for the crew
        "no_dialog",
        "dialog_not_safe",
        "dialog_changed",
        # added by approvals (#26): a request ID that is not this crew's, one decided
        # already, one its agent's hook let go (expired, answered in the pane)
        "unknown_approval",
        "approval_decided",
        "approval_closed",
    }
)


class CaptainError(Exception):
    """A refusal. ``extra`` lands in the JSON error object beside code and message."""

    def __init__(self, code: str, message: str, **extra: Any) -> None:
        assert code in CODES, code
        super().__init__(message)
        self.code = code
        self.message = message
        self.extra = extra
        # Called by whoever showed the refusal to a person, after it was shown (done's
        # unread mail counts as read only once it was actually printed).
        self.after_report: Callable[[], None] | None = None

    def as_json(self) -> dict[str, Any]:
        return {"code": self.code, "message": self.message, **self.extra}

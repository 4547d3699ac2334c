"""Alerts: what needs the captain now (a question, an approval, a bounce, ...), seen for the
first time since start-up. The feed raises them; the app turns them into a toast, the bell
and a desktop notification, each as the person's settings say."""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Literal, cast

from state.records import Notification

# a notification's status that needs the captain (widgets.view.ALERT_STATUSES), a file that
# could not be read, a work item that needs reconciliation, the Work panel's ledger changed
AlertKind = Literal[
    "asked",
    "awaiting_approval",
    "blocked",
    "bounced",
    "error",
    "quarantine",
    "needs_reconciliation",
    "ledger",
]


@dataclass(frozen=True)
class Alert:
    """Something that needs the captain now, seen for the first time since start-up."""

    kind: AlertKind
    title: str
    body: str
    crew: str | None = None  # whose it is, named when a flood is said in one toast


# a flood of one kind is said in one toast: "5 new questions: Ada, Brook, Cy and 2 more"
FLOOD_TITLES = {
    "asked": "{n} new questions",
    "awaiting_approval": "{n} crew need approval",
    "bounced": "{n} messages bounced",
    "error": "{n} crew died",
    "blocked": "{n} crew blocked at a start-up dialog",
    "needs_reconciliation": "{n} tasks need reconciliation",
}
NAMED = 3  # crews named in a flood's toast; the rest are counted


def flood(kind: AlertKind, alerts: list[Alert]) -> Alert:
    """Several alerts of one kind as one: a count and the crews' names."""
    names = list(dict.fromkeys(a.crew or a.title for a in alerts))
    shown = ", ".join(names[:NAMED])
    if len(names) > NAMED:
        shown += f" and {len(names) - NAMED} more"
    title = FLOOD_TITLES.get(kind, "{n} alerts").format(n=len(alerts))
    return Alert(kind, title, shown)


def alert_for(n: Notification) -> Alert:
    title = {
        "asked": f"{n.crew} asks",
        "awaiting_approval": f"{n.crew} needs approval",
        "bounced": f"Mail to {n.crew} bounced",
        "error": f"{n.crew} died",
        "blocked": f"{n.crew} is blocked",
    }[n.status]
    body = {"bounced": _named, "error": _death}.get(n.status, lambda s: s)(n.summary)
    kind = cast(AlertKind, n.status)  # one of the statuses titled above (else KeyError there)
    return Alert(kind, title, body, crew=n.crew)


_BOUNCED = re.compile(r"^msg_[0-9A-Za-z]+ bounced \(")
_WORK_ITEM = re.compile(r"\bwork item wrk_[0-9A-Za-z]+ ")


_DIED_ON = re.compile(r" before reporting done on asg_[0-9A-Za-z]+:")
_ITEM_IS = re.compile(r"Its work item wrk_[0-9A-Za-z]+ is (\w+)\.")


def _death(summary: str) -> str:
    """A death's summary names the assignment, the work item and the delivery to
    acknowledge (the CLI's next step): the toast says who died, how, and what became of
    the task — its first line, without the IDs (the pane's last lines and the commands are
    in the Notifications panel)."""
    head = _DIED_ON.sub(" before reporting done:", summary.split("\n", 1)[0])
    return _ITEM_IS.sub(
        lambda m: (
            "Its task failed."
            if m.group(1) == "failed"
            else f"Its task is {m.group(1).replace('_', ' ')}."
        ),
        head,
    )


def _named(summary: str) -> str:
    """A bounce's summary says "msg_… bounced (work item wrk_… cancelled): the text": the
    toast says what the mail was and why, not the IDs."""
    return _WORK_ITEM.sub("its task was ", _BOUNCED.sub("Bounced (", summary))

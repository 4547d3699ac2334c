"""Every cockpit command, once: the footer bindings, the command palette and the help
screen are all generated from ``COMMANDS``, so a key, a label or a description is changed
in exactly one place.
"""

from __future__ import annotations

from dataclasses import dataclass

from textual.binding import Binding, BindingType


@dataclass(frozen=True)
class Command:
    id: str  # stable: the binding id (keymaps) and the palette entry
    keys: str  # Textual key names, comma-separated
    label: str  # the footer's word
    description: str  # the palette's help line, the footer tooltip, the help screen
    action: str  # App.action_<action>
    needs: str | None = None  # what must be selected for it to apply (see CaptainApp.why_not)
    group: str = "Crew"  # help screen section
    show: bool = True  # in the footer


COMMANDS: tuple[Command, ...] = (
    Command(
        "answer",
        "a",
        "Answer",
        "Answer the question highlighted in Questions (the oldest unless you pick another); "
        "from Crew, the selected crew's own question when it has one.",
        "answer",
        needs="question",
    ),
    Command(
        "allow",
        "y",
        "Allow",
        "Allow the request highlighted in Approvals (the oldest unless you pick another; from "
        "Crew, the selected crew's own): the agent's own hook answers with it; nothing is "
        "typed into its pane.",
        "approve_allow",
        needs="approval",
        group="Approvals",
    ),
    Command(
        "allow_session",
        "Y",
        "Allow session",
        "Allow the request (as y), and the same for the rest of the agent's session "
        "(Claude Code and pi; not Codex).",
        "approve_allow_session",
        needs="approval_session",
        group="Approvals",
        show=False,  # the footer is full at 120 columns: the Approvals panel names it
    ),
    Command(
        "deny",
        "N",
        "Deny",
        "Deny the request (as y picks it) with a reason the agent is told.",
        "approve_deny",
        needs="approval",
        group="Approvals",
    ),
    Command(
        "tell",
        "t",
        "Tell",
        "Send the selected crew a follow-up message on its current assignment.",
        "tell",
        needs="working_crew",
    ),
    Command(
        "assign",
        "n",
        "Next task",
        "Give the selected crew its next assignment; the finished one is handed off.",
        "assign",
        needs="done_crew",
    ),
    Command(
        "acknowledge",
        "x",
        "Ack",
        "In Notifications: acknowledge the highlighted one. Anywhere else: acknowledge "
        "every notification of the selected crew — what blocks its next task (its done, "
        "an approval, a bounce) — listing them and asking first when there are several.",
        "acknowledge",
        needs="notification",
    ),
    Command(
        "unblock",
        "u",
        "Unblock",
        "The selected crew is blocked at its agent's start-up dialog: choose the answer "
        "captain may give for it — trust the crew's own project folder (Claude Code, Codex). "
        "The key goes to the pane only while it shows exactly that dialog, re-read just "
        "before and after; any other dialog (API key, model migration, hooks review, login) is "
        "yours to answer: jump to the pane.",
        "unblock",
        needs="blocked_crew",
        show=False,  # said in the blocked crew's toast and notice; in help and the palette
    ),
    Command(
        "recruit",
        "r",
        "Recruit",
        "Recruit a new crew member with its first task, in a new tmux window. A name "
        "that was dismissed is offered to carry on from its last task (a handoff).",
        "recruit",
    ),
    Command(
        "land",
        "l",
        "Land",
        "Land the selected done crew's work: its branch onto the branch it started from, "
        "one land at a time per repository, merged or rebased per [review] land, its "
        "uncommitted files committed first, refused on a conflict, a path outside its "
        "--owns, failing [review] test_command or uncommitted changes in your checkout "
        "(asks first, showing the landing queue; nothing moves unless every check passes).",
        "land",
        needs="done_crew",
        show=False,
    ),
    Command(
        "dismiss",
        "d",
        "Dismiss",
        "Retire the selected crew: its window will be closed and its unread mail will "
        "bounce (asks first).",
        "dismiss",
        needs="crew",
    ),
    Command(
        "jump",
        "enter",
        "Jump",
        "Go to the selected crew's tmux pane (or show the command that attaches to it).",
        "jump",
        needs="pane",
    ),
    Command(
        "review",
        "D",
        "Review",
        "Review the selected crew's change: every file it changed since its base "
        "(outside its --owns marked !, not committed u) and each file's diff, "
        "syntax-coloured; n/p move file to file, ./, hunk to hunk, c comments on a hunk — "
        "the comment goes to the crew as a tell quoting path:line, its assignment stays open.",
        "review",
        needs="crew",
    ),
    Command(
        "cancel_work",
        "c",
        "Cancel",
        "Cancel the work item highlighted in Work (asks first). A queued item is cancelled "
        "at once; a running one only when its pane's stop is confirmed, else it needs "
        "reconciliation. A crew's assignment is cancelled by dismissing the crew (its "
        "window closes, its unread mail bounces). It never undoes what the work already "
        "did. Not offered on a routine receipt (whatever runs its endpoint owns it).",
        "cancel_work",
        needs="live_work",
        group="Work",
    ),
    Command(
        "replay_work",
        "R",
        "Replay",
        "Run a finished work item's input again as a new item, with your reason (and "
        "another target revision if you name one). The original stays as it was. Not "
        "offered on a webhook item whose raw body has expired, nor on a routine receipt.",
        "replay_work",
        needs="finished_work",
        group="Work",
    ),
    Command(
        "resolve_work",
        "v",
        "Resolve",
        "Give your verdict on the highlighted work item that needs reconciliation: what "
        "it became, what you checked, and whether its process is stopped. Frees its slot; "
        "starts nothing.",
        "resolve_work",
        needs="reconciling_work",
        group="Work",
    ),
    Command(
        "work_filter",
        "f",
        "Filter work",
        "Show all work, or only queued, running, needing reconciliation, or finished "
        "(the Work panel's title says which).",
        "cycle_work_filter",
        group="Work",
        show=False,
    ),
    Command(
        "rescan",
        "ctrl+r",
        "Rescan",
        "Read the whole home again now (it also happens every 30 s by itself).",
        "rescan",
        group="Cockpit",
        show=False,
    ),
    Command(
        "preview",
        "p",
        "Preview",
        "Show or hide the pane preview of the selected crew.",
        "toggle_preview",
        group="Cockpit",
        show=False,
    ),
    Command(
        "settings",
        "s",
        "Settings",
        "Alerts (toast, bell, desktop notice) and the theme.",
        "settings",
        group="Cockpit",
        show=False,
    ),
    Command(
        "help",
        "question_mark,f1",
        "Help",
        "Every key, and what the panels mean.",
        "help",
        group="Cockpit",
    ),
)

BY_ID = {c.id: c for c in COMMANDS}
BY_ACTION = {c.action: c for c in COMMANDS}

# Keys Textual or the lists provide; listed on the help screen so it tells the whole story.
BUILT_IN = (
    ("tab / shift+tab", "Move between panels"),
    ("j / k, ↓ / ↑", "Move in a list"),
    ("ctrl+p", "Command palette: every command, searchable"),
    ("ctrl+s", "In a form: send it"),
    ("escape", "In a form: cancel, nothing is sent"),
    ("ctrl+q", "Quit"),
)


def bindings() -> list[BindingType]:
    return [
        Binding(c.keys, c.action, c.label, show=c.show, tooltip=c.description, id=c.id)
        for c in COMMANDS
    ]


def key_label(command: Command) -> str:
    names = {"question_mark": "?", "enter": "enter", "ctrl+r": "ctrl+r"}
    return " / ".join(names.get(k, k) for k in command.keys.split(","))


def help_markdown() -> str:
    """The help screen, generated: a key the registry does not know cannot appear here."""
    out = [
        "# captain — the cockpit",
        "",
        "Your crew works in tmux panes; this screen shows what each one needs from you. "
        "Everything you do here is written to the home first, then the crew's doorbell "
        "rings — nothing is typed over a person's draft, nothing is lost.",
        "",
    ]
    for group in dict.fromkeys(c.group for c in COMMANDS):
        out += [f"## {group}", ""]
        out += [
            f"- `{key_label(c)}` **{c.label}** — {c.description}"
            for c in COMMANDS
            if c.group == group
        ]
        out.append("")
    out += ["A key that does not apply now is dimmed; pressed, it says why.", ""]
    out += ["## Everywhere", ""]
    out += [f"- `{k}` {d}" for k, d in BUILT_IN]
    out += [
        "",
        "## The panels",
        "",
        "- **Crew** — one row per crew: its state (*assigned*, *asked*, *approval*, "
        "*done*), its task, unread mail, last activity, what holds its doorbell and what "
        "its agent has spent on the assignment (the header sums every crew's). "
        "*blocked*: its agent sits at a start-up dialog, named in the Doorbell column; "
        f"`{key_label(BY_ID['unblock'])}` answers folder trust, any other is yours to "
        f"answer in the pane (`{key_label(BY_ID['jump'])}`). *held*: it reached its "
        "budget, its tool calls refused, until the budget is raised (or the notice "
        "acknowledged).",
        "- **Questions** — pending questions, the one waiting longest first. Press "
        f"`{key_label(BY_ID['answer'])}`.",
        "- **Approvals** — the permission requests crews' agents hold open for you "
        "(Claude Code, Codex; pi for the tools `[crew] pi_approval_tools` names), the "
        "oldest first; highlighted, the preview shows the whole request. "
        f"`{key_label(BY_ID['allow'])}` allows, `{key_label(BY_ID['allow_session'])}` "
        f"for the agent's session, `{key_label(BY_ID['deny'])}` denies with a reason; "
        "undecided, the agent's own prompt takes it in its pane.",
        "- **Doorbells** — mail that could not be rung in yet, and why (a human draft on "
        "the composer, an approval prompt, …). It rings by itself once that clears.",
        "- **Notifications** — what crews reported, newest first; acknowledge each once "
        "you have seen it. A finished crew gets its next task after its *done* is "
        f"acknowledged: `{key_label(BY_ID['acknowledge'])}` on the crew in Crew does it "
        "(ask → answer → done → ack → next task, without coming here). A dismissed "
        "crew's bounces are listed here until acknowledged; they block recruiting the "
        "name again.",
        "- **Work** — the work ledger: every assignment, chat and webhook run is a work "
        "item with a *state* (queued, running, succeeded, failed, cancelled, "
        "**needs reconciliation**), a *generation* (bumped on every claim: the fence "
        "against a stale worker) and its *source* (*routine* for a routine receipt, which "
        "offers no Cancel or Replay); *Since* is how long it has been in "
        "that state. An item **needs reconciliation** when its process may still be "
        "alive but nobody could verify it: it is listed first in red, counted in the "
        "title line, and keeps its slot until you press "
        f"`{key_label(BY_ID['resolve_work'])}` — no timer clears it. "
        f"`{key_label(BY_ID['work_filter'])}` cycles the filter: all, queued, running, "
        "needs reconciliation, finished.",
        "- **Pane** — the selected crew's tmux pane, live.",
        "",
    ]
    return "\n".join(out)

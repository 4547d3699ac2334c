"""Modal forms: answer, tell, assign, recruit — and the yes/no confirmation.

A form never writes anything. ``ctrl+s`` (or Enter in a one-line field) posts
``FormScreen.Submitted`` with its values; the app does the work in a worker and either
closes the form (``done``) or shows the refusal inside it (``refused``), so nothing typed is
lost to a refusal. ``escape`` cancels and hands the draft back (``FormScreen.Cancelled``)
so the app can offer it again next time.
"""

from __future__ import annotations

import shlex
from typing import Any, ClassVar, cast

from textual import on
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, Vertical, VerticalScroll
from textual.message import Message
from textual.screen import ModalScreen
from textual.widgets import Button, Checkbox, Input, Label, Select, Static, TextArea

from state.vocab import ended, quoted, short
from widgets.cells import inert


def crew_key_of(name: str) -> str:
    return name.strip().lower()


class FormError(Exception):
    """A value the form can reject itself, before anything is sent."""


FORM_CSS = """
FormScreen, ConfirmScreen {
    align: center middle;
    background: $background 60%;
}
FormScreen > #dialog, ConfirmScreen > #dialog {
    width: 84;
    max-width: 95%;
    height: auto;
    max-height: 95%;
    border: round $accent;
    border-title-color: $accent;
    border-title-style: bold;
    background: $surface;
    padding: 1 2 0 2;
}
FormScreen #fields {
    height: auto;
    max-height: 30;
}
FormScreen .context {
    color: $text-muted;
    margin-bottom: 1;
    height: auto;
    max-height: 8;
}
FormScreen .quote {
    border-left: outer $warning;
    padding: 0 1;
    margin-bottom: 1;
    height: auto;
    max-height: 10;
}
FormScreen Label {
    color: $text-muted;
    margin-top: 1;
}
FormScreen TextArea {
    height: 10;
}
FormScreen TextArea.short {
    height: 5;
}
FormScreen Input, FormScreen Select {
    margin-right: 1;
    background: $boost;
}
FormScreen .pair {
    height: auto;
}
FormScreen .pair > Vertical {
    width: 1fr;
    height: auto;
}
FormScreen Checkbox {
    margin-top: 1;
}
FormScreen Checkbox.-hidden {
    display: none;
}
FormScreen #error {
    color: $error;
    height: auto;
    margin-top: 1;
}
FormScreen #error:disabled {
    display: none;
}
FormScreen .hint, ConfirmScreen .hint {
    color: $text-muted;
    margin-top: 1;
    height: 1;
}
ConfirmScreen #buttons {
    height: auto;
    margin-top: 1;
    align-horizontal: right;
}
ConfirmScreen Button {
    margin-left: 2;
}
"""


class FormScreen(ModalScreen[Any]):
    """The base of every form: title, fields, an error line, and the keys."""

    DEFAULT_CSS = FORM_CSS
    BINDINGS: ClassVar = [
        Binding("ctrl+s", "submit", "Send", priority=True),
        Binding("escape", "cancel", "Cancel"),
    ]
    AUTO_FOCUS = "#fields Input, #fields TextArea"
    title_text: ClassVar[str] = ""
    HINT: ClassVar[str] = "ctrl+s send · escape cancel (your text is kept)"

    class Submitted(Message):
        def __init__(self, form: FormScreen, values: dict[str, Any]) -> None:
            super().__init__()
            self.form = form
            self.values = values

    class Cancelled(Message):
        def __init__(self, form: FormScreen, draft: dict[str, Any]) -> None:
            super().__init__()
            self.form = form
            self.draft = draft

    def __init__(self, *, draft_key: str, draft: dict[str, Any] | None = None) -> None:
        super().__init__()
        self.draft_key = draft_key  # the app keeps a cancelled form's text under this
        self.initial = draft or {}
        self.busy = False

    def compose(self) -> ComposeResult:
        with Vertical(id="dialog") as dialog:
            dialog.border_title = inert(self.title_text)
            with VerticalScroll(id="fields"):
                yield from self.fields()
            yield Static("", id="error", markup=False, disabled=True)
            yield Static(self.HINT, classes="hint", markup=False)

    def fields(self) -> ComposeResult:
        raise NotImplementedError

    def values(self) -> dict[str, Any]:
        """What is sent; raise FormError for what the form can refuse by itself."""
        raise NotImplementedError

    def draft(self) -> dict[str, Any]:
        """What is kept when the form is cancelled (by default: every field's text)."""
        out: dict[str, Any] = {}
        for widget in self.query("Input, TextArea"):
            if widget.id:
                out[widget.id] = (
                    widget.text if isinstance(widget, TextArea) else cast(Input, widget).value
                )
        return out

    def initial_text(self, field: str, default: str = "") -> str:
        return self.initial.get(field, default)

    # -- keys ------------------------------------------------------------------------------

    def action_submit(self) -> None:
        if self.busy:
            return  # already sent; a second ctrl+s must not send twice
        try:
            values = self.values()
        except FormError as err:
            self.show_error(str(err))
            return
        self.busy = True
        self.show_error("")
        self.query_one(".hint", Static).update("sending…")
        self.post_message(self.Submitted(self, values))

    def action_cancel(self) -> None:
        if self.busy:
            return  # the work is under way; its outcome closes the form
        # to the app directly: this screen is going away and takes its queue with it
        self.app.post_message(self.Cancelled(self, self.draft()))
        self.dismiss(None)

    @on(Input.Submitted)
    def _enter_in_one_line_field(self, event: Input.Submitted) -> None:
        event.stop()
        self.action_submit()

    # -- outcome (called by the app) -------------------------------------------------------

    def refused(self, text: str) -> None:
        self.busy = False
        self.query_one(".hint", Static).update(self.HINT)
        self.show_error(text)

    def show_error(self, text: str) -> None:
        error = self.query_one("#error", Static)
        error.update(inert(text))
        error.disabled = not text


def _text_area(field_id: str, text: str, classes: str = "") -> TextArea:
    area = TextArea(
        text,
        id=field_id,
        soft_wrap=True,
        show_line_numbers=False,
        tab_behavior="focus",
        classes=classes,
    )
    area.move_cursor(area.document.end)
    return area


def _words(text: str, what: str) -> list[str]:
    try:
        return shlex.split(text)
    except ValueError as err:
        raise FormError(f"{what}: {err} (quote paths that contain spaces)") from None


def _required(text: str, what: str) -> str:
    if not text.strip():
        raise FormError(f"The {what} is empty.")
    return text


class AnswerScreen(FormScreen):
    title_text = "Answer"

    def __init__(self, crew: str, question: str, asked: str, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.crew = crew
        self.question = question
        self.asked = asked

    def fields(self) -> ComposeResult:
        yield Static(inert(f"{self.crew} asked {self.asked}:"), classes="context")
        yield Static(inert(self.question), classes="quote")
        yield Label("Your answer")
        yield _text_area("answer", self.initial_text("answer"))

    def values(self) -> dict[str, Any]:
        return {"text": _required(self.query_one("#answer", TextArea).text, "answer")}


class TellScreen(FormScreen):
    title_text = "Tell"

    def __init__(self, crew: str, task: str, assignment_id: str, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.crew = crew
        self.crew_task = task
        self.assignment_id = assignment_id

    def fields(self) -> ComposeResult:
        yield Static(
            inert(ended(f"A follow-up for {self.crew} on its task {quoted(self.crew_task)}")),
            classes="context",
        )
        yield Label("Message")
        yield _text_area("message", self.initial_text("message"))

    def values(self) -> dict[str, Any]:
        return {"text": _required(self.query_one("#message", TextArea).text, "message")}


class DenyScreen(FormScreen):
    """The reason for denying an approval request: the agent is told it."""

    title_text = "Deny"

    def __init__(self, crew: str, tool: str, excerpt: str, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.crew = crew
        self.tool = tool
        self.excerpt = excerpt

    def fields(self) -> ComposeResult:
        yield Static(
            inert(f"{self.crew} asks to run {self.tool}: {self.excerpt}"), classes="context"
        )
        yield Label("Reason (the agent is told it)")
        yield _text_area("reason", self.initial_text("reason"))

    def values(self) -> dict[str, Any]:
        return {"reason": _required(self.query_one("#reason", TextArea).text, "reason")}


class AssignScreen(FormScreen):
    title_text = "Next assignment"

    def __init__(
        self,
        crew: str,
        handoff: str,
        previous_task: str,
        owns: list[str],
        allow: list[str],
        warning: str = "",
        **kwargs: Any,
    ) -> None:
        super().__init__(**kwargs)
        self.crew = crew
        self.handoff = handoff
        self.previous_task = previous_task
        self.owns = owns
        self.allow = allow
        self.warning = warning

    def fields(self) -> ComposeResult:
        finished = ended(f"{self.crew} finished its task {quoted(self.previous_task)}")
        yield Static(
            inert(
                f"{finished}\nThe next task carries on from it (a handoff): its "
                "grants are offered again below."
            ),
            classes="context",
        )
        if self.warning:
            yield Static(inert(self.warning), classes="quote")
        yield Label("Task")
        yield _text_area("task", self.initial_text("task"))
        yield Label("Owns (paths, space-separated; kept from the last assignment)")
        yield Input(self.initial_text("owns", shlex.join(self.owns)), id="owns", compact=True)
        yield Label("Allow (read search edit test build format commit version delete)")
        yield Input(self.initial_text("allow", " ".join(self.allow)), id="allow", compact=True)

    def values(self) -> dict[str, Any]:
        task = _required(self.query_one("#task", TextArea).text, "task")
        owns = _words(self.query_one("#owns", Input).value, "Owns")
        allow = _words(self.query_one("#allow", Input).value, "Allow")
        # unchanged grants are passed as "inherit", exactly like omitting --owns/--allow
        return {
            "task": task,
            "handoff": self.handoff,
            "owns": None if owns == self.owns else owns,
            "allow": None if allow == self.allow else allow,
        }


AGENTS = (
    ("shell — your $SHELL", "shell"),
    ("claude — Claude Code, with hooks", "claude"),
    ("codex — Codex CLI, with hooks", "codex"),
    ("pi — pi, with captain's extension", "pi"),
    ("program — any command", "program"),
)


class RecruitScreen(FormScreen):
    title_text = "Recruit"

    def fields(self) -> ComposeResult:
        with Horizontal(classes="pair"):
            with Vertical():
                yield Label("Name")
                yield Input(
                    self.initial_text("name"),
                    id="name",
                    max_length=32,
                    compact=True,
                    placeholder="a letter, then letters, digits, _ or -",
                )
            with Vertical():
                yield Label("Agent")
                yield Select(
                    AGENTS,
                    value=self.initial.get("agent", "shell"),
                    allow_blank=False,
                    id="agent",
                    compact=True,
                )
        yield Label("Task (the first assignment)")
        yield _text_area("task", self.initial_text("task"), classes="short")
        with Horizontal(classes="pair"):
            with Vertical():
                yield Label("Owns (paths)")
                yield Input(
                    self.initial_text("owns"),
                    id="owns",
                    compact=True,
                    placeholder="src/auth tests/auth",
                )
            with Vertical():
                yield Label("Allow (actions)")
                yield Input(
                    self.initial_text("allow"),
                    id="allow",
                    compact=True,
                    placeholder="read edit test",
                )
        with Horizontal(classes="pair"):
            with Vertical():
                yield Label("Command (agent program)")
                yield Input(
                    self.initial_text("command"),
                    id="command",
                    compact=True,
                    placeholder="what runs in the pane",
                )
            with Vertical():
                yield Label("Project directory")
                yield Input(
                    self.initial_text("cwd"),
                    id="cwd",
                    compact=True,
                    placeholder="where captain runs",
                )
        yield Checkbox(
            "Record only — I start its process myself (--no-launch)",
            self.initial.get("no_launch", False),
            id="no_launch",
            compact=True,
        )
        # offered once a recruit is refused because the name was dismissed (offer_handoff)
        yield Checkbox(
            "Carry on from the name's last task",
            False,
            id="handoff",
            compact=True,
            classes="-hidden",
        )

    def offer_handoff(self, crew: str, assignment_id: str, task: str) -> None:
        """The name was used before: recruiting it again carries on from its last task (a
        handoff, as ``captain crew NAME --handoff``). Offered here, ticked, so the person
        sends again instead of typing an ID."""
        self.handoff = (crew_key_of(crew), assignment_id)
        box = self.query_one("#handoff", Checkbox)
        box.label = inert(
            ended(f"Carry on from {crew}'s last task {quoted(short(task))}")
            + " (its grants carry over unless you change them)"
        )
        box.value = True
        box.remove_class("-hidden")

    def draft(self) -> dict[str, Any]:
        out = super().draft()
        out["agent"] = self.query_one("#agent", Select).value
        out["no_launch"] = self.query_one("#no_launch", Checkbox).value
        return out

    def values(self) -> dict[str, Any]:
        name = self.query_one("#name", Input).value.strip()
        if not name:
            raise FormError("The name is empty.")
        command = self.query_one("#command", Input).value.strip() or None
        agent = self.query_one("#agent", Select).value
        if agent == "program" and not command:
            raise FormError("A program crew needs a command to run.")
        return {
            "name": name,
            "task": _required(self.query_one("#task", TextArea).text, "task"),
            "agent": agent,
            "command": command if agent == "program" or command else None,
            "owns": tuple(_words(self.query_one("#owns", Input).value, "Owns")),
            "allow": tuple(_words(self.query_one("#allow", Input).value, "Allow")),
            "cwd": self.query_one("#cwd", Input).value.strip() or None,
            "launch": not self.query_one("#no_launch", Checkbox).value,
            "handoff": self._handoff_for(name),
        }

    def _handoff_for(self, name: str) -> str | None:
        offered = getattr(self, "handoff", None)
        if offered is None or offered[0] != crew_key_of(name):
            return None  # another name than the one the offer was for
        return offered[1] if self.query_one("#handoff", Checkbox).value else None


class ConfirmScreen(ModalScreen[bool]):
    """Yes or no, with the consequences spelled out. No is the default."""

    DEFAULT_CSS = FORM_CSS
    BINDINGS: ClassVar = [
        Binding("y", "answer(True)", "Yes"),
        Binding("n,escape", "answer(False)", "No"),
    ]

    def __init__(self, title: str, body: str, yes: str = "Yes") -> None:
        super().__init__()
        self.title_text = title
        self.body = body
        self.yes = yes

    def compose(self) -> ComposeResult:
        with Vertical(id="dialog") as dialog:
            dialog.border_title = inert(self.title_text)
            yield Static(inert(self.body))
            with Horizontal(id="buttons"):
                yield Button("No", id="no", variant="default")
                yield Button(inert(self.yes), id="yes", variant="error")
            yield Static("y yes · n / escape no", classes="hint", markup=False)

    def on_mount(self) -> None:
        self.query_one("#no", Button).focus()

    def action_answer(self, yes: bool) -> None:
        self.dismiss(yes)

    @on(Button.Pressed)
    def _pressed(self, event: Button.Pressed) -> None:
        self.dismiss(event.button.id == "yes")

"""Modal forms: answer, tell, assign, recruit — and the yes/no confirmation.

A form never writes anything. ``ctrl+s`` (or Enter in a one-line field) posts
``FormScreen.Submitted`` with its values; the app does the work in a worker and either
closes the form (``done``) or shows the refusal inside it (``refused``), so nothing typed is
lost to a refusal. ``escape`` cancels and hands the draft back (``FormScreen.Cancelled``)
so the app can offer it again next time.

A form is built once and shown again (#28: a keystroke opens or closes one within a frame).
Its widgets are composed empty; ``prepare`` gives it what it is about (a crew, a question)
and the draft to offer before each open, and ``fill`` — the one place a form's fields get
their text — puts them in, clears what the last open left (a refusal, a hidden box, the
undo history) and puts the focus on the first field. Forms are opaque: the cockpit beneath
is not drawn again through a tint for each of the form's frames.
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
    background: $background;
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
        # neither is a priority key: a priority key is handled as it arrives, ahead of the
        # keys before it still waiting in the focused field's queue, so escape then ctrl+s
        # typed fast sent what the person had just cancelled, and the last letters typed
        # before either would be left out of what is sent or kept
        Binding("ctrl+s", "submit", "Send"),
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

    def __init__(
        self, *subject: Any, draft_key: str = "", draft: dict[str, Any] | None = None
    ) -> None:
        super().__init__()
        self.draft_key = ""  # the app keeps a cancelled form's text under this
        self.initial: dict[str, Any] = {}
        self.busy = False
        self.sent_beneath = False  # sent while another screen was on top: see close_when_shown
        self.styled_under: tuple[Any, ...] | None = None  # see update_node_styles
        self.shown: dict[str, str] = {}  # what each text widget says (show_text), by its id
        self.prepare(*subject, draft_key=draft_key, draft=draft)

    def prepare(self, *subject: Any, draft_key: str, draft: dict[str, Any] | None = None) -> None:
        """Before each open: what the form is about (``about``'s arguments) and the draft
        kept under ``draft_key``. A form already built is filled now; a new one when it is
        mounted."""
        self.draft_key = draft_key
        self.initial = draft or {}
        self.busy = False
        self.sent_beneath = False
        self.about(*subject)
        if self.is_mounted:
            self.fill_all()

    def close_when_shown(self) -> None:
        """This form's work is done while another screen is above it: it stays busy (no
        key sends or cancels it again), says it was sent, and goes as soon as it is shown."""
        self.sent_beneath = True
        self.show_text("hint", "sent")

    def on_screen_resume(self) -> None:
        if self.sent_beneath:
            self.sent_beneath = False
            self.busy = False
            self.dismiss(None)

    def about(self, *subject: Any) -> None:
        """Keep what this open of the form is about (a form about nothing: nothing)."""

    def update_node_styles(self, animate: bool = True) -> None:
        """Textual restyles a screen and everything on it each time it is shown; a form
        shown again under the same theme, focus and classes would get the styles it has
        (restyling its widgets was most of opening the Recruit form again). Anything that
        changed meanwhile — the theme, the app's focus, a class of the form's or the app's
        — restyles it as before; each widget's own changes (focus, hover, its classes)
        restyle that widget, not the screen, and are untouched."""
        if not self.is_mounted:
            super().update_node_styles(animate)
            return
        app = self.app
        under = (
            app.theme,
            app.ansi_color,
            app.app_focus,
            frozenset(app.classes),
            frozenset(self.classes),
        )
        if under == self.styled_under:
            return
        super().update_node_styles(animate)
        self.styled_under = under

    def compose(self) -> ComposeResult:
        with Vertical(id="dialog") as dialog:
            dialog.border_title = inert(self.title_text)
            with VerticalScroll(id="fields"):
                yield from self.fields()
            yield Static("", id="error", markup=False, disabled=True)
            yield Static(self.HINT, id="hint", classes="hint", markup=False)

    def on_mount(self) -> None:
        self.fill_all()

    def fields(self) -> ComposeResult:
        """The form's widgets, composed once and empty (``fill`` gives them their text)."""
        raise NotImplementedError

    def fill(self) -> None:
        """Put this open's subject and draft (``initial_text``) in the fields."""
        raise NotImplementedError

    def fill_all(self) -> None:
        """The form as a fresh one: filled, no refusal, the hint, scrolled to its top, the
        focus on its first field."""
        self.fill()
        self.show_error("")
        self.show_text("hint", self.HINT)
        self.query_one("#fields", VerticalScroll).scroll_home(animate=False)
        first = next((w for w in self.query(self.AUTO_FOCUS) if w.focusable), None)
        if first is not None:
            self.set_focus(first)

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
        if self.busy or not self.is_current:
            # already sent (a second ctrl+s must not send twice), or this form was closed
            # (cancelled) with keys typed after it still in its fields' queues
            return
        try:
            values = self.values()
        except FormError as err:
            self.show_error(str(err))
            return
        self.busy = True
        self.show_error("")
        self.show_text("hint", "sending…")
        self.post_message(self.Submitted(self, values))

    def action_cancel(self) -> None:
        if self.busy or not self.is_current:
            return  # the work is under way (its outcome closes the form), or it is closed
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
        self.show_text("hint", self.HINT)
        self.show_error(text)

    def show_error(self, text: str) -> None:
        self.show_text("error", text)
        self.query_one("#error", Static).disabled = not text

    def show_text(self, widget_id: str, text: str) -> None:
        """What the text widget ``widget_id`` says, drawn inert. The same text again touches
        nothing, and a new one as tall as the last is drawn in place: only a change of
        height lays the form out again (Textual lays out the whole screen for each new
        text otherwise, the most of opening a form built before)."""
        if self.shown.get(widget_id) == text:
            return
        self.shown[widget_id] = text
        widget = self.query_one(f"#{widget_id}", Static)
        width = widget.content_size.width
        if not width:  # not laid out yet: its first layout sizes it
            widget.update(inert(text))
            return
        before = widget.get_content_height(widget.container_size, self.size, width)
        widget.update(inert(text), layout=False)
        if widget.get_content_height(widget.container_size, self.size, width) != before:
            widget.refresh(layout=True)


def _text_area(field_id: str, classes: str = "") -> TextArea:
    return TextArea(
        id=field_id,
        soft_wrap=True,
        show_line_numbers=False,
        tab_behavior="focus",
        classes=classes,
    )


def _put_text(area: TextArea, text: str) -> None:
    """A text field's text for this open: no undo back to an earlier open's, the cursor at
    its end (the same text is not loaded again: that would lay the form out again)."""
    if area.text == text:
        area.history.clear()
    else:
        area.load_text(text)
    area.move_cursor(area.document.end)


def _put_value(field: Input, text: str) -> None:
    field.value = text
    field.cursor_position = len(text)


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

    def about(self, crew: str, question: str, asked: str) -> None:
        self.crew = crew
        self.question = question
        self.asked = asked

    def fields(self) -> ComposeResult:
        yield Static(classes="context", id="context")
        yield Static(classes="quote", id="quote")
        yield Label("Your answer")
        yield _text_area("answer")

    def fill(self) -> None:
        self.show_text("context", f"{self.crew} asked {self.asked}:")
        self.show_text("quote", self.question)
        _put_text(self.query_one("#answer", TextArea), self.initial_text("answer"))

    def values(self) -> dict[str, Any]:
        return {"text": _required(self.query_one("#answer", TextArea).text, "answer")}


class TellScreen(FormScreen):
    title_text = "Tell"

    def about(self, crew: str, task: str, assignment_id: str) -> None:
        self.crew = crew
        self.crew_task = task
        self.assignment_id = assignment_id

    def fields(self) -> ComposeResult:
        yield Static(classes="context", id="context")
        yield Label("Message")
        yield _text_area("message")

    def fill(self) -> None:
        self.show_text(
            "context",
            ended(f"A follow-up for {self.crew} on its task {quoted(self.crew_task)}"),
        )
        _put_text(self.query_one("#message", TextArea), self.initial_text("message"))

    def values(self) -> dict[str, Any]:
        return {"text": _required(self.query_one("#message", TextArea).text, "message")}


class DenyScreen(FormScreen):
    """The reason for denying an approval request: the agent is told it."""

    title_text = "Deny"

    def about(self, crew: str, tool: str, excerpt: str) -> None:
        self.crew = crew
        self.tool = tool
        self.excerpt = excerpt

    def fields(self) -> ComposeResult:
        yield Static(classes="context", id="context")
        yield Label("Reason (the agent is told it)")
        yield _text_area("reason")

    def fill(self) -> None:
        self.show_text(
            "context",
            f"{self.crew} asks to run {self.tool}: {self.excerpt}",
        )
        _put_text(self.query_one("#reason", TextArea), self.initial_text("reason"))

    def values(self) -> dict[str, Any]:
        return {"reason": _required(self.query_one("#reason", TextArea).text, "reason")}


class AssignScreen(FormScreen):
    title_text = "Next assignment"

    def about(
        self,
        crew: str,
        handoff: str,
        previous_task: str,
        owns: list[str],
        allow: list[str],
        warning: str = "",
    ) -> None:
        self.crew = crew
        self.handoff = handoff
        self.previous_task = previous_task
        self.owns = owns
        self.allow = allow
        self.warning = warning

    def fields(self) -> ComposeResult:
        yield Static(classes="context", id="context")
        yield Static(classes="quote", id="quote")
        yield Label("Task")
        yield _text_area("task")
        yield Label("Owns (paths, space-separated; kept from the last assignment)")
        yield Input(id="owns", compact=True)
        yield Label("Allow (read search edit test build format commit version delete)")
        yield Input(id="allow", compact=True)

    def fill(self) -> None:
        finished = ended(f"{self.crew} finished its task {quoted(self.previous_task)}")
        self.show_text(
            "context",
            f"{finished}\nThe next task carries on from it (a handoff): its "
            "grants are offered again below.",
        )
        quote = self.query_one("#quote", Static)
        self.show_text("quote", self.warning)
        quote.display = bool(self.warning)
        _put_text(self.query_one("#task", TextArea), self.initial_text("task"))
        _put_value(self.query_one("#owns", Input), self.initial_text("owns", shlex.join(self.owns)))
        _put_value(
            self.query_one("#allow", Input), self.initial_text("allow", " ".join(self.allow))
        )

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
    HANDOFF = "Carry on from the name's last task"

    def about(self) -> None:
        # (crew key, assignment ID) once a refusal offered the name's last task (offer_handoff)
        self.handoff: tuple[str, str] | None = None

    def fields(self) -> ComposeResult:
        with Horizontal(classes="pair"):
            with Vertical():
                yield Label("Name")
                yield Input(
                    id="name",
                    max_length=32,
                    compact=True,
                    placeholder="a letter, then letters, digits, _ or -",
                )
            with Vertical():
                yield Label("Agent")
                yield Select(AGENTS, value="shell", allow_blank=False, id="agent", compact=True)
        yield Label("Task (the first assignment)")
        yield _text_area("task", classes="short")
        with Horizontal(classes="pair"):
            with Vertical():
                yield Label("Owns (paths)")
                yield Input(id="owns", compact=True, placeholder="src/auth tests/auth")
            with Vertical():
                yield Label("Allow (actions)")
                yield Input(id="allow", compact=True, placeholder="read edit test")
        with Horizontal(classes="pair"):
            with Vertical():
                yield Label("Command (agent program)")
                yield Input(id="command", compact=True, placeholder="what runs in the pane")
            with Vertical():
                yield Label("Project directory")
                yield Input(id="cwd", compact=True, placeholder="where captain runs")
        yield Checkbox(
            "Record only — I start its process myself (--no-launch)", id="no_launch", compact=True
        )
        # offered once a recruit is refused because the name was dismissed (offer_handoff)
        yield Checkbox(self.HANDOFF, id="handoff", compact=True, classes="-hidden")

    def fill(self) -> None:
        for field in ("name", "owns", "allow", "command", "cwd"):
            _put_value(self.query_one(f"#{field}", Input), self.initial_text(field))
        agent = self.query_one("#agent", Select)
        agent.expanded = False
        agent.value = self.initial.get("agent", "shell")
        _put_text(self.query_one("#task", TextArea), self.initial_text("task"))
        self.query_one("#no_launch", Checkbox).value = self.initial.get("no_launch", False)
        box = self.query_one("#handoff", Checkbox)
        if not box.has_class("-hidden"):  # offered in the last open: not in this one
            box.label = self.HANDOFF
            box.add_class("-hidden")
        box.value = False

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
        offered = self.handoff
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

"""What the cockpit's thread workers hand back to the UI thread: each a message, posted with
``post_message`` and handled by the app's ``on_…`` method, so a worker never runs code on the
UI thread itself (no ``call_from_thread``) and never waits for it.
"""

from __future__ import annotations

from collections.abc import Callable

from textual.message import Message
from textual.notifications import SeverityLevel

from captain_tui import usecases as ops
from captain_tui.cockpit.feed.alerts import Alert
from captain_tui.repo.change import Change
from state.errors import CaptainError
from widgets.diffview import FileDiff
from widgets.screens.forms import ConfirmScreen, FormScreen
from widgets.screens.review_screen import FileEntry, ReviewScreen


class Refused(Message):
    """A use case said no (nothing was written); ``form``: the form that asked, if any."""

    def __init__(self, error: CaptainError, form: FormScreen | None = None) -> None:
        super().__init__()
        self.error = error
        self.form = form


class FormSent(Message):
    """A form's use case is done: the form closes and ``said`` is toasted."""

    def __init__(self, form: FormScreen, said: str) -> None:
        super().__init__()
        self.form = form
        self.said = said


class Outcome(Message):
    """A sentence for a toast: what an action did, or what a worker could not do."""

    def __init__(
        self,
        text: str,
        *,
        title: str = "",
        severity: SeverityLevel = "information",
        timeout: float | None = None,
    ) -> None:
        super().__init__()
        self.text = text
        self.title = title
        self.severity = severity
        self.timeout = timeout


class AttachNeeded(Message):
    """``jump`` could not switch a terminal to ``crew``'s pane: say how to attach one."""

    def __init__(self, crew: str, attach: ops.Attach) -> None:
        super().__init__()
        self.crew = crew
        self.attach = attach


class AlertRaised(Message):
    """An alert found off the UI thread (the doorbell worker's store warnings)."""

    def __init__(self, alert: Alert) -> None:
        super().__init__()
        self.alert = alert


class ConfirmNeeded(Message):
    """A worker read what a confirmation says (e.g. the landing queue): the UI thread asks
    it, and ``decided`` gets the answer."""

    def __init__(self, screen: ConfirmScreen, decided: Callable[[bool | None], None]) -> None:
        super().__init__()
        self.screen = screen
        self.decided = decided


class ChangeRead(Message):
    """A review screen's change, read (``review``): its headline and files, and the first
    file's diff drawn without the language's colours (None: no file, or it could not be
    read)."""

    def __init__(
        self,
        screen: ReviewScreen,
        change: Change,
        headline: str,
        files: list[FileEntry],
        first: FileDiff | None,
    ) -> None:
        super().__init__()
        self.screen = screen
        self.change = change
        self.headline = headline
        self.files = files
        self.first = first


class FileDrawn(Message):
    """A file's diff drawn for a review screen; ``again``: the same diff, now coloured."""

    def __init__(self, screen: ReviewScreen, diff: FileDiff, again: bool = False) -> None:
        super().__init__()
        self.screen = screen
        self.diff = diff
        self.again = again


class ReviewProblem(Message):
    """What a review screen's change or file could not be read for (a refusal's code and
    sentence)."""

    def __init__(self, screen: ReviewScreen, text: str) -> None:
        super().__init__()
        self.screen = screen
        self.text = text

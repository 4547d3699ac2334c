"""The cockpit's review screen for the selected crew: its change, file by file, and
comments that go back to it as a tell (``usecases.comment``).

A mixin of ``CaptainApp``, typed: each method's ``self`` is a ``ReviewHost``, the Protocol
that says what the mixin needs of the app. The UI thread never touches git or the disk: the
change (which for a 10,000-file change takes seconds of git) and each file's diff are
computed and drawn (``widgets.diffview.render``) in thread workers, which post
``worker_results``' ``ChangeRead``, ``FileDrawn`` or ``ReviewProblem``; the ``on_…`` methods
here hand them to the screen, on the UI thread.
"""

from __future__ import annotations

import weakref
from collections.abc import Callable
from typing import Any, Protocol, TypeVar

from textual import work
from textual.message import Message

from captain_tui import usecases as ops
from captain_tui.cockpit import jobs
from captain_tui.cockpit.worker_results import ChangeRead, FileDrawn, ReviewProblem
from captain_tui.repo.change import Change
from captain_tui.usecases.words import change_words
from state.errors import CaptainError
from state.home import Home
from widgets.diffview import render
from widgets.screens.forms import FormScreen
from widgets.screens.review_screen import CommentScreen, FileEntry, ReviewScreen
from widgets.view import CrewRow

F = TypeVar("F", bound=FormScreen)  # a kind of form (CaptainApp._form)


def headline(s: dict) -> str:
    """The change's shape in a line (the CLI's ``captain diff`` says the same)."""
    where = (
        "the shared checkout's uncommitted work"
        if s["shared_checkout"]
        else f"since {s['base_commit'][:12]}" + (f" on {s['branch']}" if s.get("branch") else "")
    )
    counts, *more = change_words(s)
    return " · ".join([f"{counts}, {where}", *more])


class ReviewHost(Protocol):
    """The app as its review commands see it: what ``CaptainApp`` gives them (its home, the
    selected crew, screens, forms and their drafts, messages from workers, each open review
    screen's change in ``_reviews``, weakly: it goes with its screen), and the mixin's own
    methods, which call one another."""

    home: Home
    _reviews: weakref.WeakKeyDictionary[ReviewScreen, Change]

    @property
    def _closing_down(self) -> bool: ...

    def selected_crew(self) -> CrewRow | None: ...

    def push_screen(self, screen: ReviewScreen, /) -> object: ...

    def post_message(self, message: Message, /) -> bool: ...

    def _open(
        self, form: FormScreen, perform: Callable[[dict[str, Any]], str], ring: str | None = None
    ) -> None: ...

    def _form(self, kind: type[F], *subject: Any, key: str) -> F: ...

    # the mixin's own (ReviewCommands)
    def _read_change(self, screen: ReviewScreen, name: str) -> object: ...

    def _read_file(self, screen: ReviewScreen, path: str) -> object: ...

    def _diff_text(self, screen: ReviewScreen, change: Change, path: str) -> str | None: ...


class ReviewCommands:
    """The review screen's commands and its workers' results, mixed into ``CaptainApp``
    (see ``ReviewHost``)."""

    def action_review(self: ReviewHost) -> None:
        crew = self.selected_crew()
        if crew is None:
            return
        screen = ReviewScreen(crew.name)
        self.push_screen(screen)
        self._read_change(screen, crew.name)

    @work(thread=True, group="review", exclusive=True, exit_on_error=False)
    def _read_change(self: ReviewHost, screen: ReviewScreen, name: str) -> None:
        try:
            change = ops.change(self.home, name)
        except CaptainError as err:
            self.post_message(ReviewProblem(screen, f"[{err.code}] {err.message}"))
            return
        files = [
            FileEntry(f.path, f.status, f.added, f.removed, f.uncommitted, f.outside)
            for f in change.files
        ]
        first = self._diff_text(screen, change, files[0].path) if files else None
        plain = render(files[0].path, first, syntax=False) if first is not None else None
        self.post_message(ChangeRead(screen, change, headline(change.summary()), files, plain))
        if first is not None:  # the first file in the same worker: on screen sooner
            self.post_message(FileDrawn(screen, render(files[0].path, first), again=True))

    def _diff_text(self: ReviewHost, screen: ReviewScreen, change: Change, path: str) -> str | None:
        try:
            return ops.diff_bytes(change, [path]).decode("utf-8", "surrogateescape")
        except CaptainError as err:
            self.post_message(ReviewProblem(screen, f"[{err.code}] {err.message}"))
            return None

    # the workers' results, on the UI thread; a screen closed meanwhile is left alone
    def on_change_read(self: ReviewHost, message: ChangeRead) -> None:
        if self._closing_down or not message.screen.is_attached:
            return
        self._reviews[message.screen] = message.change  # before the list asks for a file
        message.screen.show_change(message.headline, message.files, message.first)

    def on_file_drawn(self: ReviewHost, message: FileDrawn) -> None:
        if not self._closing_down and message.screen.is_attached:
            message.screen.show_file(message.diff, again=message.again)

    def on_review_problem(self: ReviewHost, message: ReviewProblem) -> None:
        if not self._closing_down and message.screen.is_attached:
            message.screen.show_problem(message.text)

    # named handlers, not @on: Textual collects @on only on classes it builds (not mixins)
    def on_review_screen_file_wanted(self: ReviewHost, event: ReviewScreen.FileWanted) -> None:
        self._read_file(event.screen, event.path)

    @work(thread=True, group="review-file", exclusive=True, exit_on_error=False)
    def _read_file(self: ReviewHost, screen: ReviewScreen, path: str) -> None:
        change = self._reviews.get(screen)
        if change is None:
            return
        text = self._diff_text(screen, change, path)
        if text is None:
            return
        # first without the language's colours (the diff is on screen sooner), then with
        self.post_message(FileDrawn(screen, render(path, text, syntax=False)))
        self.post_message(FileDrawn(screen, render(path, text), again=True))

    def on_review_screen_comment_wanted(
        self: ReviewHost, event: ReviewScreen.CommentWanted
    ) -> None:
        name = event.screen.crew
        form = self._form(
            CommentScreen,
            name,
            event.path,
            event.line,
            event.lines,
            key=f"comment:{name}:{event.path}:{event.line}",
        )
        self._open(
            form,
            lambda v: jobs.comment(self.home, name, event.path, event.line, event.lines, v["text"]),
            ring=name,
        )

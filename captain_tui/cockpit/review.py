"""The cockpit's review screen for the selected crew: its change, file by file, and
comments that go back to it as a tell (``usecases.comment``).

A mixin of ``CaptainApp``. The UI thread never touches git or the disk: the change (which
for a 10,000-file change takes seconds of git) and each file's diff are computed and drawn
(``widgets.diffview.render``) in thread workers, then handed to the screen.
"""

from __future__ import annotations

from textual import work

from captain_tui import usecases as ops
from captain_tui.cockpit import jobs
from state.errors import CaptainError
from widgets.diffview import render
from widgets.screens.review import CommentScreen, FileEntry, ReviewScreen


def headline(s: dict) -> str:
    """The change's shape in a line (the CLI's ``captain diff`` says the same)."""
    where = (
        "the shared checkout's uncommitted work"
        if s["shared_checkout"]
        else f"since {s['base_commit'][:12]}" + (f" on {s['branch']}" if s.get("branch") else "")
    )
    line = (
        f"{s['files_changed']} files, +{s['lines_added']} -{s['lines_removed']}, "
        f"{s['commits']} commits, {where}"
    )
    if s["uncommitted_count"]:
        line += f" · {s['uncommitted_count']} not committed"
    if s["outside_grant_count"]:
        line += f" · {s['outside_grant_count']} OUTSIDE --owns"
    if s["history_rewritten"]:
        line += " · history rewritten since its base"
    return line


class ReviewCommands:
    """Needs the app's ``home``, ``_open``, ``_draft``, ``selected_crew`` and ``_reviews``
    (each open review screen's change, weakly: it goes with its screen)."""

    def action_review(self) -> None:
        crew = self.selected_crew()
        if crew is None:
            return
        screen = ReviewScreen(crew.name)
        self.push_screen(screen)
        self._read_change(screen, crew.name)

    @work(thread=True, group="review", exclusive=True, exit_on_error=False)
    def _read_change(self, screen: ReviewScreen, name: str) -> None:
        try:
            change = ops.change(self.home, name)
        except CaptainError as err:
            self.call_from_thread(screen.show_problem, f"[{err.code}] {err.message}")
            return
        self._reviews[screen] = change
        files = [
            FileEntry(f.path, f.status, f.added, f.removed, f.uncommitted, f.outside)
            for f in change.files
        ]
        self.call_from_thread(screen.show_change, headline(change.summary()), files)

    # named handlers, not @on: Textual collects @on only on classes it builds (not mixins)
    def on_review_screen_file_wanted(self, event: ReviewScreen.FileWanted) -> None:
        self._read_file(event.screen, event.path)

    @work(thread=True, group="review-file", exclusive=True, exit_on_error=False)
    def _read_file(self, screen: ReviewScreen, path: str) -> None:
        change = self._reviews.get(screen)
        if change is None:
            return
        try:
            body = ops.diff_bytes(change, [path])
        except CaptainError as err:
            self.call_from_thread(screen.show_problem, f"[{err.code}] {err.message}")
            return
        drawn = render(path, body.decode("utf-8", "surrogateescape"))
        self.call_from_thread(screen.show_file, drawn)

    def on_review_screen_comment_wanted(self, event: ReviewScreen.CommentWanted) -> None:
        name = event.screen.crew
        form = CommentScreen(
            name,
            event.path,
            event.line,
            event.lines,
            **self._draft(f"comment:{name}:{event.path}:{event.line}"),
        )
        self._open(
            form,
            lambda v: jobs.comment(self.home, name, event.path, event.line, event.lines, v["text"]),
            ring=name,
        )

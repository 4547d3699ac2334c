"""The review screen: a crew's change — its files (outside-grant ones marked) and the
selected file's diff, syntax-coloured (``widgets.diffview``) — and the comment form.

It never reads git or the disk: it posts ``FileWanted`` and ``CommentWanted``; the app
computes in a worker and hands back ``show_change``, ``show_file`` or ``show_problem``.
Keys: ``n``/``]`` and ``p``/``[`` (or j/k in the list) move file to file, ``.``/``}`` and
``,``/``{`` hunk to hunk, ``c`` comments on the hunk under the cursor, escape closes.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, ClassVar

from rich.text import Text
from textual import on
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, VerticalScroll
from textual.geometry import Size
from textual.message import Message
from textual.screen import Screen
from textual.scroll_view import ScrollView
from textual.strip import Strip
from textual.widgets import Label, Static, TextArea

from state.vocab import ended
from widgets.cells import clean, inert
from widgets.diffview import FileDiff, Hunk, line_of, shown_path
from widgets.screens.forms import FormScreen, _put_text, _required, _text_area


@dataclass(frozen=True)
class FileEntry:
    path: str
    status: str  # added, modified, deleted, typechange
    added: int | None  # None: binary
    removed: int | None
    uncommitted: bool
    outside: str | None  # why it lies outside --owns


def file_label(f: FileEntry) -> Text:
    label = Text(no_wrap=True, overflow="ellipsis")
    label.append("!" if f.outside else " ", style="bold red")
    label.append("u" if f.uncommitted else " ", style="yellow")
    label.append(f" {f.status[:1].upper()} ", style="dim")
    if f.added is None:
        label.append("  bin    ", style="dim")
    else:
        label.append(f"+{f.added:<4}", style="green")
        label.append(f"-{f.removed:<4}", style="red")
    label.append(shown_path(f.path), style="bold red" if f.outside else "")
    return label


class FileList(ScrollView, can_focus=True):
    """The changed files, one row each, drawn a screenful at a time (the Line API): a
    10,000-file change costs what is visible, not what is listed."""

    DEFAULT_CSS = """
    FileList {
        background: $surface;
    }
    FileList > .file-list--cursor {
        background: $accent 40%;
    }
    """
    COMPONENT_CLASSES: ClassVar = {"file-list--cursor"}
    BINDINGS: ClassVar = [
        Binding("down", "move(1)", show=False),
        Binding("up", "move(-1)", show=False),
        Binding("pagedown", "page(1)", show=False),
        Binding("pageup", "page(-1)", show=False),
        Binding("home", "move(-1_000_000)", show=False),
        Binding("end", "move(1_000_000)", show=False),
    ]

    class Highlighted(Message):
        def __init__(self, index: int) -> None:
            super().__init__()
            self.index = index

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.files: list[FileEntry] = []
        self.cursor = -1

    def set_files(self, files: list[FileEntry]) -> None:
        self.files = files
        self.cursor = -1
        self.virtual_size = Size(self.size.width, len(files))
        self.scroll_to(y=0, animate=False)
        self.refresh()
        if files:
            self.move_to(0)

    def move_to(self, index: int) -> None:
        if not self.files:
            return
        index = max(0, min(len(self.files) - 1, index))
        if index == self.cursor:
            return
        self.cursor = index
        if index < self.scroll_y:
            self.scroll_to(y=index, animate=False)
        elif index >= self.scroll_y + self.scrollable_content_region.height:
            self.scroll_to(y=index - self.scrollable_content_region.height + 1, animate=False)
        self.refresh()
        self.post_message(self.Highlighted(index))

    def action_move(self, step: int) -> None:
        self.move_to(self.cursor + step)

    def action_page(self, step: int) -> None:
        self.move_to(self.cursor + step * max(self.scrollable_content_region.height - 1, 1))

    def render_line(self, y: int) -> Strip:
        index = int(self.scroll_y) + y
        width = self.scrollable_content_region.width
        if not (0 <= index < len(self.files)):
            return Strip.blank(width, self.rich_style)
        label = file_label(self.files[index])
        label.truncate(max(width, 1), overflow="ellipsis", pad=True)
        style = self.rich_style
        if index == self.cursor:
            style += self.get_component_rich_style("file-list--cursor")
        segments = list(label.render(self.app.console))
        return Strip(segments).apply_style(style).crop_extend(0, width, style)


class ReviewScreen(Screen[None]):
    DEFAULT_CSS = """
    ReviewScreen #review-head {
        height: auto;
        max-height: 3;
        padding: 0 1;
        background: $boost;
    }
    ReviewScreen #review-main {
        height: 1fr;
    }
    ReviewScreen #review-files {
        width: 38%;
        min-width: 30;
        height: 1fr;
        border: round $accent;
        border-title-color: $accent;
    }
    ReviewScreen #review-diff {
        width: 1fr;
        height: 1fr;
        border: round $accent;
        border-title-color: $accent;
    }
    ReviewScreen #review-body {
        width: auto;
    }
    ReviewScreen .hint {
        color: $text-muted;
        height: 1;
        padding: 0 1;
    }
    """
    BINDINGS: ClassVar = [
        Binding("escape,q", "close", "Close"),
        Binding("n,right_square_bracket", "file(1)", "Next file"),
        Binding("p,left_square_bracket", "file(-1)", "Previous file"),
        Binding("full_stop,right_curly_bracket", "hunk(1)", "Next hunk"),
        Binding("comma,left_curly_bracket", "hunk(-1)", "Previous hunk"),
        Binding("c", "comment", "Comment"),
        Binding("j", "file(1)", show=False),
        Binding("k", "file(-1)", show=False),
    ]
    HINT = (
        "n/p file · ./, hunk · c comment on the hunk (a tell) · escape close"
        "   ! outside --owns  u not committed"
    )

    class FileWanted(Message):
        def __init__(self, screen: ReviewScreen, path: str) -> None:
            super().__init__()
            self.screen = screen
            self.path = path

    class CommentWanted(Message):
        def __init__(self, screen: ReviewScreen, path: str, line: int, lines: list[str]) -> None:
            super().__init__()
            self.screen = screen
            self.path = path
            self.line = line
            self.lines = lines

    def __init__(self, crew: str) -> None:
        super().__init__()
        self.crew = crew
        self.files: list[FileEntry] = []
        self.current: FileDiff | None = None
        self.hunk = -1

    def compose(self) -> ComposeResult:
        yield Static(inert(f"Review · {self.crew} · reading its change…"), id="review-head")
        with Horizontal(id="review-main"):
            files = FileList(id="review-files")
            files.border_title = "Files"
            yield files
            with VerticalScroll(id="review-diff") as diff:
                diff.border_title = "Diff"
                yield Static(inert(""), id="review-body")
        yield Static(self.HINT, classes="hint", markup=False)

    # -- what the app hands over -----------------------------------------------------------

    def show_change(
        self, headline: str, files: list[FileEntry], first: FileDiff | None = None
    ) -> None:
        """The change's files; ``first``: the first file's diff, read with them."""
        self.files = files
        self.query_one("#review-head", Static).update(inert(f"Review · {self.crew} · {headline}"))
        listed = self.query_one("#review-files", FileList)
        listed.border_title = clean(f"Files ({len(files)})")
        listed.set_files(files)
        if first is not None:
            self.show_file(first)
        if files:
            listed.focus()
        else:
            self._body(Text("Nothing changed since its base."))

    def show_file(self, diff: FileDiff, again: bool = False) -> None:
        """Show a file's diff; ``again``: the same diff, now syntax-coloured (the place in
        it is kept)."""
        if self.selected is None or diff.path != self.selected.path:
            return  # the person has moved on; the newer request's answer follows
        if again and (self.current is None or self.current.path != diff.path):
            return
        self.current = diff
        self._body(diff.picture)
        if again:
            return
        self.hunk = 0 if diff.hunks else -1
        self.query_one("#review-diff").border_title = clean(f"Diff · {shown_path(diff.path)}")
        self._scroll_to_hunk()

    def show_problem(self, text: str) -> None:
        self._body(inert(text))

    # -- keys ------------------------------------------------------------------------------

    @property
    def selected(self) -> FileEntry | None:
        index = self.query_one("#review-files", FileList).cursor
        return self.files[index] if 0 <= index < len(self.files) else None

    @on(FileList.Highlighted)
    def _moved(self, event: FileList.Highlighted) -> None:
        entry = self.selected
        if entry is None or (self.current is not None and self.current.path == entry.path):
            return  # shown already (the first file comes with the change)
        self.current, self.hunk = None, -1
        self._body(Text(clean(f"reading {shown_path(entry.path)}…"), style="dim"))
        self.post_message(self.FileWanted(self, entry.path))

    def action_file(self, step: int) -> None:
        listed = self.query_one("#review-files", FileList)
        listed.move_to(listed.cursor + step)

    def action_hunk(self, step: int) -> None:
        if self.current is None or not self.current.hunks:
            return
        self.hunk = max(0, min(len(self.current.hunks) - 1, self.hunk + step))
        self._scroll_to_hunk()

    def action_comment(self) -> None:
        hunk = self.current_hunk
        if hunk is None or self.current is None:
            self.notify("Select a file with a hunk to comment on.", severity="warning")
            return
        self.post_message(
            self.CommentWanted(self, self.current.path, line_of(hunk, 1), list(hunk.lines))
        )

    def action_close(self) -> None:
        self.dismiss(None)

    @property
    def current_hunk(self) -> Hunk | None:
        if self.current is None or not (0 <= self.hunk < len(self.current.hunks)):
            return None
        return self.current.hunks[self.hunk]

    def _scroll_to_hunk(self) -> None:
        hunk = self.current_hunk
        scroll = self.query_one("#review-diff", VerticalScroll)
        scroll.scroll_to(y=hunk.row if hunk else 0, animate=False)
        total = len(self.current.hunks) if self.current else 0
        where = f"hunk {self.hunk + 1}/{total}" if hunk else "no hunk"
        scroll.border_subtitle = clean(where)

    def _body(self, picture: Text) -> None:
        self.query_one("#review-body", Static).update(picture)


class CommentScreen(FormScreen):
    """A review comment: it goes to the crew as a tell quoting ``path:line`` and the lines."""

    title_text = "Review comment"

    def about(self, crew: str, path: str, line: int, lines: list[str]) -> None:
        self.crew = crew
        self.path = path
        self.line = line
        self.lines = lines

    def fields(self) -> ComposeResult:
        yield Static(classes="context", id="context")
        yield Static(classes="quote", id="quote")
        yield Label("Comment")
        yield _text_area("message")

    def fill(self) -> None:
        self.show_text(
            "context",
            ended(
                f"To {self.crew}, as a follow-up on its assignment (which stays open), "
                f"quoting {shown_path(self.path)}:{self.line}"
            ),
        )
        self.show_text("quote", "\n".join(self.lines[:8]))
        _put_text(self.query_one("#message", TextArea), self.initial_text("message"))

    def values(self) -> dict[str, Any]:
        return {"text": _required(self.query_one("#message", TextArea).text, "comment")}

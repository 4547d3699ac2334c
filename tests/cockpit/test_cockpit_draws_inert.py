"""Nothing drawn by the cockpit can command the terminal: the bytes a real terminal receives.

A real cockpit (``captain --home ...``) runs in a tmux pane of a private server (the
captain's terminal); ``pipe-pane -O`` records every byte the cockpit writes to it. Hostile
text then arrives through every source the cockpit draws outside its panels (the panels
are tests/cockpit/test_cockpit_terminal_safety.py's): a hook summary (a toast, the bell, a
desktop notice), a question, a file name the store quarantines (a quarantine report), a
crew's pane content (the preview), its task (the Tell dialog), the home's path (the help
screen). The recording must hold no hostile sequence: no clipboard write (OSC 52), no
retitle (OSC 0/1/2), no reset (ESC c), no C1 control, no bidi or tag character, no
sequence carrying a hostile payload, no markup obeyed; and every payload's words must be
drawn, as text (proof that each source reached the screen).
"""

from __future__ import annotations

import ast
import contextlib
import io
import re
import sys
from pathlib import Path

from support.tmux import PrivateTmux, needs_tmux, poll

from captain_tui.cli.main import main
from state.clock import now
from state.crew import notify
from state.home import Home

pytestmark = needs_tmux

ESC, BEL = "\x1b", "\x07"
TAGS = "\U000e0001\U000e0041\U000e007f"  # invisible "tag" text
BIDI = "\u202e\u2066\u200f\u061c"


def hostile(word: str, *, controls: bool = True, sep: str = " ") -> str:
    """A payload named ``word``: every kind of sequence a terminal obeys, each followed by
    ``word`` (a drawn sequence leaves ``word`` right behind its first character), and Rich
    markup that would be an action or a link if it were parsed."""
    parts = []
    if controls:
        parts += [
            f"{ESC}]52;c;SE9TVElMRQ=={BEL}{word}-clip",  # write the clipboard
            f"{ESC}]0;{word}-title{BEL}",
            f"{ESC}]2;{word}-title2{ESC}\\",  # retitle
            f"{ESC}c{word}-reset",
            f"{ESC}[2J{ESC}[H{word}-clear",  # reset, clear
            f"{ESC}P+q{word}-dcs{ESC}\\",  # a DCS query
            f"\x9b2J{word}-c1csi \x9d0;{word}-c1osc\x9c",  # the 8-bit forms
            f"\x01\x08\x0e{word}-c0 \x7f",
        ]
    parts += [
        f"[@click=app.quit]{word}-click[/] [link=evil:x]{word}-link[/]",
        f"{BIDI}{word}-bidi{TAGS}",
    ]  # last: a pane's preview shows its bottom lines
    return sep.join(parts)


SOURCES = ("sum", "quar", "pane", "task", "home")


def cockpit_bytes(tmp_path: Path) -> str:
    """Run the scenario; what the cockpit wrote to its terminal, decoded."""
    root = tmp_path.joinpath("home", *hostile("Xhome").split(" "))  # names <= 255 B
    root.mkdir(parents=True)
    home = Home(root)
    crews = PrivateTmux()  # the crews' tmux server
    outer = PrivateTmux()  # the captain's terminal
    Path(crews.socket).parent.mkdir(mode=0o700, parents=True, exist_ok=True)
    record = tmp_path / "terminal.bytes"
    pane_script = tmp_path / "pane.py"
    pane_script.write_text(
        "import sys, time\n"
        f"sys.stdout.write({hostile('Xpane', sep=chr(10))!r} + '\\n')\n"
        "sys.stdout.write('\\x1b[31mred\\x1b[0m \\x1b]8;;https://evil.example\\x1b\\\\"
        "Xpane-hyperlink\\x1b]8;;\\x1b\\\\\\n')\n"
        "sys.stdout.flush()\ntime.sleep(300)\n"
    )
    try:
        with contextlib.redirect_stdout(io.StringIO()):
            code = main(
                [
                    "crew",
                    "Jack",
                    "--task",
                    hostile("Xtask", controls=False),
                    "--command",
                    f"{sys.executable} {pane_script}",
                    "--socket",
                    crews.socket,
                    "--home",
                    str(root),
                ]
            )
        assert code == 0
        outer.tmux(
            "new-session",
            "-d",
            "-x",
            "160",
            "-y",
            "45",
            "-s",
            "captain",
            "-e",
            f"CAPTAIN_CONFIG_DIR={tmp_path / 'config'}",
            f"{sys.executable} -m captain_tui --home '{root}'; echo COCKPIT-EXITED-$?; sleep 60",
        )
        outer.tmux("pipe-pane", "-O", "-t", "captain", f"cat > '{record}'")
        pane = "captain"

        def screen() -> str:
            return outer.capture(pane)

        def written() -> str:
            """What the cockpit has written so far: hostile text that was obeyed leaves
            tmux's screen in no state to read, so arrivals are looked for here."""
            return record.read_bytes().decode("utf-8", "surrogateescape") if record.exists() else ""

        def arrives(text: str, what: str) -> None:
            start = len(written())
            poll(lambda: text in written()[start:], timeout=10, what=what)

        poll(
            lambda: "Jack" in screen() and "Xpane" in written(),
            timeout=20,
            what="the cockpit showing Jack and its pane",
        )
        # a hook's summary (a toast, the bell, a desktop notice)
        notify.signal(home, "Jack", "awaiting_approval", hostile("Xsum"), at=now())
        arrives("Xsum-bidi", "the summary's toast")
        # a file the store quarantines, named by someone else
        name = (
            f"msg_[@click=app.quit]Xquar-click[-] {BIDI}Xquar-bidi"
            f"{TAGS} {ESC}]52;c;SE9TVElMRQ=={BEL}Q {ESC}]0;Q{BEL} {ESC}c {ESC}[2J \x9b2J"
            " \x01.json"
        )  # a file name holds at most 255 bytes
        (home.mail_dir("jack") / name).write_bytes(b"\xff not json")
        arrives("Xquar-bidi", "the quarantine report")
        # the Tell dialog quotes the task
        outer.key(pane, "t")
        arrives("Xtask-bidi", "the Tell dialog")
        outer.key(pane, "Escape")
        poll(lambda: "A follow-up for" not in screen(), timeout=10, what="it to close")
        # the help screen names the home
        outer.key(pane, "?")
        arrives("Xhome-bidi", "the help screen")
        outer.key(pane, "Escape")
        poll(lambda: "Home:" not in screen(), timeout=10, what="it to close")
        outer.key(pane, "C-q")
        poll(lambda: "COCKPIT-EXITED-0" in written(), timeout=20, what="the cockpit to quit")
    finally:
        outer.kill()
        crews.kill()
    return record.read_bytes().decode("utf-8", "surrogateescape")


# what the cockpit itself writes around what it draws: CSI (cursor, modes, SGR), keypad
# modes, Textual's pointer shape (OSC 22), the alert's bell, and the desktop notice (OSC 9,
# wrapped for tmux). A hostile BEL only ever came inside a sequence: its ESC is caught.
NOTICE = re.compile(r"\x1bPtmux;\x1b\x1b\]9;(captain: [^\x1b\x07]*)\x07\x1b\\")
OWN_SEQUENCE = re.compile(r"\x1b\[[0-?]*[ -/]*[@-~]|\x1b\]22;[a-z-]*\x07|\x1b[=>78]|\x07")
UNSAFE = re.compile(
    "[\x00-\x08\x0b\x0c\x0e-\x1f\x7f-\x9f\u061c\u200e\u200f\u202a-\u202e"
    "\u2066-\u2069\ud800-\udfff\U000e0000-\U000e007f]"
)


def test_hostile_text_from_every_source_reaches_the_terminal_inert(tmp_path):
    received = cockpit_bytes(tmp_path)
    notices = NOTICE.findall(received)
    assert notices and any("Xsum" in n for n in notices)  # the notice was sent
    for notice in notices:
        assert not UNSAFE.search(notice), notice  # nothing in it ends it or starts another
    rest = OWN_SEQUENCE.sub("", NOTICE.sub("", received))
    # every escape sequence left is one the cockpit's own drawing does not write
    strays = sorted({rest[m.start() : m.start() + 24] for m in re.finditer(ESC, rest)})
    assert not strays, f"sequences from hostile text reached the terminal: {strays}"
    bad = UNSAFE.search(rest)
    assert bad is None, (
        f"{bad.group()!r} reached the terminal: {rest[bad.start() - 40 : bad.end() + 40]!r}"
    )
    for marker in ("]52;c;", "]0;", "]2;"):
        assert ESC + marker not in received
    for source in SOURCES:
        word = f"X{source}"
        assert f"{word}-bidi" in rest, f"the {source} was never drawn"
        assert f"[@click=app.quit]{word}" in rest, f"the {source}'s markup was obeyed"


# -- markup: crew- and webhook-supplied text drawn where Textual would parse it ---------------

MARKUP = "[@click=app.quit]deploy[/] [link=https://evil.example]here[/]"


def _meta(content) -> list:
    """The actions and links a drawn Content carries (markup that was obeyed)."""
    return [
        span.style
        for span in content.spans
        if "@click" in str(span.style) or "link" in str(span.style)
    ]


def test_a_webhook_revision_in_the_replay_form_is_drawn_not_obeyed(home: Home):
    from support.cockpit import drive, select_row, until
    from textual.widgets import Label

    from captain_tui.cockpit.app import CaptainApp
    from state.work import ledger
    from widgets.screens.work_forms import ReplayScreen

    item = ledger.accept(
        home, source="chat", input={"text": "x"}, requester="captain:test", target_revision=MARKUP
    )
    item = ledger.claim(home, item.work_id, holder="worker")
    ledger.report(home, item.work_id, item.generation, "succeeded", actor="worker")
    app = CaptainApp(home, run_doorbell=False)
    drawn = {}

    async def scenario(pilot):
        await select_row(pilot, "work", item.work_id)
        await pilot.press("R")
        form = await until(pilot, lambda: isinstance(app.screen, ReplayScreen) and app.screen)
        drawn["labels"] = [label.render() for label in form.query(Label)]

    drive(app, scenario)
    label = next(c for c in drawn["labels"] if "Target revision" in str(c))
    assert MARKUP in str(label), str(label)  # every bracket drawn
    assert not _meta(label)


def test_a_ledger_url_in_the_work_panels_foot_is_drawn_not_obeyed(home: Home, monkeypatch):
    from support.cockpit import drive, until

    from captain_tui.cockpit.app import CaptainApp
    from widgets.panels.work_panel import WorkPanel

    # the database name: a query value may not hold a second '=' (libpq refuses it)
    url = "postgresql://u@/[@click=app.quit]x[/]\u202eevil?host=/nonexistent"
    monkeypatch.setenv("CAPTAIN_LEDGER_URL", url)
    app = CaptainApp(home, run_doorbell=False)
    app.listen_ledger = False
    drawn = {}

    async def scenario(pilot):
        panel = app.query_one(WorkPanel)
        await until(pilot, lambda: "ledger:" in str(panel.border_subtitle), what="the foot")
        drawn["foot"] = panel.border_subtitle  # the drawn title, as Textual markup

    drive(app, scenario)
    from textual.content import Content

    foot = Content.from_markup(drawn["foot"])  # what is drawn
    assert "/[@click=app.quit]x[/]\ufffdevil?host=" in foot.plain, foot.plain
    assert not _meta(foot)


# -- the boundary, in the code: every string handed to a widget comes from widgets.cells ------

PROGRAM = Path(__file__).resolve().parents[2]
DRAWS = {"Static", "Label", "Button", "Checkbox", "Markdown", "update"}  # first argument
TITLES = {"border_title", "border_subtitle"}  # assigned
BUILT_HERE = {"inert", "plain", "from_pane", "as_markup", "one_line", "clean"}  # widgets.cells
# drawn values that are not built by a widgets.cells call where they are handed over
CHECKED_ELSEWHERE = {
    ("widgets/chrome.py", "title"): "App.format_title's Content (CaptainApp cleans it)",
    ("widgets/preview.py", "text"): "from_pane's Text, a line above",
    ("widgets/screens/review_screen.py", "picture"): "a widgets.diffview picture (each line of "
    "the diff passes cells.clean there) or inert text",
    ("widgets/screens/help.py", "self.markdown"): "the command registry's Markdown; the app "
    "puts the home and ledger in as one_line "
    "code spans (action_help)",
}


def _drawn_values(tree: ast.AST):
    for node in ast.walk(tree):
        if isinstance(node, ast.Call) and node.args:
            func = node.func
            name = func.id if isinstance(func, ast.Name) else getattr(func, "attr", "")
            if name in DRAWS:
                yield node.args[0]
        if isinstance(node, ast.Call):
            yield from (k.value for k in node.keywords if k.arg == "placeholder")
        if isinstance(node, ast.Assign):
            if any(isinstance(t, ast.Attribute) and t.attr in TITLES for t in node.targets):
                yield node.value


def _built_here(value: ast.expr) -> bool:
    if isinstance(value, ast.Constant):
        return isinstance(value.value, str)  # a literal: our own words
    if isinstance(value, ast.Call):
        func = value.func
        return (func.id if isinstance(func, ast.Name) else getattr(func, "attr", "")) in BUILT_HERE
    name = value.id if isinstance(value, ast.Name) else getattr(value, "attr", "")
    return bool(name) and name.isupper()  # a class's constant (HINT, LOADING_TEXT)


def test_every_string_a_widget_draws_is_built_by_widgets_cells():
    """Static, Label, Button, Checkbox, Markdown, update(), placeholders and border titles
    in widgets/ and captain_tui/cockpit/ get a literal, a constant or what widgets.cells
    built; markup is never turned on; toasts go through CaptainApp.notify, which cleans."""
    from textual.app import App

    from captain_tui.cockpit.app import CaptainApp

    strays = []
    for folder in ("widgets", "captain_tui/cockpit"):
        for path in sorted((PROGRAM / folder).rglob("*.py")):
            rel = path.relative_to(PROGRAM).as_posix()
            tree = ast.parse(path.read_text(encoding="utf-8"))
            for value in _drawn_values(tree):
                source = ast.unparse(value)
                if not _built_here(value) and (rel, source) not in CHECKED_ELSEWHERE:
                    strays.append(f"{rel}:{value.lineno}: {source}")
            for node in ast.walk(tree):
                if (
                    isinstance(node, ast.keyword)
                    and node.arg == "markup"
                    and not (isinstance(node.value, ast.Constant) and node.value.value is False)
                ):
                    strays.append(f"{rel}:{node.value.lineno}: markup={ast.unparse(node.value)}")
                if isinstance(node, ast.Attribute) and node.attr == "from_markup":
                    strays.append(f"{rel}:{node.lineno}: from_markup")
    assert strays == [], "drawn without widgets.cells:\n" + "\n".join(strays)
    assert CaptainApp.notify is not App.notify  # the toasts' one door (see test above)


def test_the_pane_preview_keeps_colours_and_drops_everything_else():
    """tmux's capture keeps what a program printed into cells: bidi and tag characters, C1
    controls as characters, and (tmux 3.4+) OSC 8 hyperlinks, which the captain's terminal
    would offer to open. The preview draws the colours and nothing else."""
    import asyncio

    from rich.text import Text
    from textual.app import App
    from textual.widgets import Static

    from widgets.preview import PanePreview

    capture = (
        f"\x1b[31mred\x1b[0m {BIDI}Xpane-bidi{TAGS} \x9b2J\n"
        f"\x1b]8;;https://evil.example\x1b\\Xpane-hyperlink\x1b]8;;\x1b\\\n"
    )

    class Host(App):
        def compose(self):
            yield PanePreview()

    shown = {}

    async def main() -> None:
        app = Host()
        async with app.run_test(size=(80, 20)) as pilot:
            preview = app.query_one(PanePreview)
            preview.show_capture("Jack", capture)
            await pilot.pause()
            shown["content"] = preview.query_one("#screen", Static).content

    asyncio.run(main())
    text = shown["content"]
    assert isinstance(text, Text)
    assert "red" in text.plain and "Xpane-bidi" in text.plain and "Xpane-hyperlink" in text.plain
    assert not UNSAFE.search(text.plain), repr(text.plain)
    styles = [span.style for span in text.spans]
    assert any(getattr(style, "color", None) for style in styles)  # the colours stay
    assert not any(getattr(style, "link", None) for style in styles), styles

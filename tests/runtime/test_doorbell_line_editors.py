"""The doorbell's notice is inert in every line editor, as root and as a user.

A shell's line editor may be in any keymap, and none shows it: in vi command mode every
letter is a command (``#`` comments out and runs the line, ``v`` runs $EDITOR, ``k`` fetches
history, ``Enter`` runs whatever that left), and emacs mode after a stray ESC reads the
next key as Meta. So the doorbell types only where the kernel edits the line (dash, bash
--noediting here); a shell with a line editor gets the notice printed on its terminal,
which nothing reads. Every crew's task is hostile mail (support.tmux.hostile): no
byte of it reaches any pane.

One tmux server, every shell in every mode started at once, each as root (``#`` prompts)
and as ``nobody`` (``$``/``%``/``>`` prompts). Each shell's history holds a command that
appends a line to ``runs`` and its $EDITOR is a trap, so a history entry run again, an
editor opened or any word of the notice run shows as a file. After the ring the line must
be empty (redrawn with Ctrl-L), a command typed then must run alone, and no word of the
notice may run as a command (each is a trap on $PATH).
"""

from __future__ import annotations

import contextlib
import io
import json
import os
import shutil
import tempfile
from pathlib import Path

import pytest
from support.tmux import PrivateTmux, hostile, needs_tmux, poll

from captain_tui.cli.main import main
from captain_tui.runtime import doorbell, pane_reader
from state.home import Home

pytestmark = needs_tmux

# shell -> argv
SHELLS = {
    "bash": ["bash", "--norc", "--noprofile", "-i"],
    "bashvi": ["bash", "--norc", "--noprofile", "-o", "vi", "-i"],
    "dash": ["dash", "-i"],
    # no line editor, and '#' not a comment: the typed notice looks for a command '#'
    "bashne": ["bash", "--noprofile", "--rcfile", "{rc}", "--noediting", "-i"],
    "zsh": ["zsh", "-f", "-i"],
    # fish reads its configuration from the empty $HOME below (with --no-config, fish
    # 3.6 has no key bindings at all once vi mode is chosen)
    "fish": ["fish", "-i"],
    "fishvi": ["fish", "-i", "-C", "fish_vi_key_bindings"],
}
# mode -> (shell, a line typed to set it up, keys that put the line in that state)
MODES = {
    "bash-emacs": ("bash", None, ()),
    "bash-emacs-stray-esc": ("bash", None, ("Escape",)),
    "bash-vi-insert": ("bashvi", "bind 'set show-mode-in-prompt on'", ()),
    "bash-vi-command": ("bashvi", "bind 'set show-mode-in-prompt on'", ("Escape",)),
    "dash": ("dash", None, ()),
    "bash-noediting-no-comments": ("bashne", None, ()),
    # the kernel edits the line, but 'm' ends one there: the notice is printed, not typed
    "dash-stty-eol-m": ("dash", "stty eol m", ()),
    "zsh-emacs": ("zsh", None, ()),
    "zsh-emacs-stray-esc": ("zsh", None, ("Escape",)),
    "zsh-vi-insert": (
        "zsh",
        'bindkey -v; zle-keymap-select() { print -n "\\e]2;$KEYMAP\\a" }; zle -N zle-keymap-select',
        (),
    ),
    "zsh-vi-command": (
        "zsh",
        'bindkey -v; zle-keymap-select() { print -n "\\e]2;$KEYMAP\\a" }; zle -N zle-keymap-select',
        ("Escape",),
    ),
    "fish-default": ("fish", None, ()),
    "fish-vi-insert": ("fishvi", None, ()),
    "fish-vi-command": ("fishvi", None, ("Escape",)),
}
USERS = ("root", "nobody")
CASES = [(mode, user) for mode in MODES for user in USERS]
TYPED = ("dash", "bash-noediting-no-comments")  # the kernel edits their line
EDITORS = tuple(m for m in MODES if m not in TYPED and not m.startswith("dash"))


def _shown_in(tmux: PrivateTmux, pane: str, mode: str) -> bool:
    """The pane shows that the keys of ``mode`` took effect (vi command mode)."""
    if not mode.endswith("vi-command"):
        return True
    if mode.startswith("zsh"):
        title = tmux.tmux("display-message", "-p", "-t", pane, "#{pane_title}").stdout
        return title.strip() == "vicmd"
    return "(cmd)" in tmux.capture(pane) or "[N]" in tmux.capture(pane)


def _empty_prompt(tmux: PrivateTmux, pane: str) -> bool:
    """The cursor sits on a prompt with nothing after it."""
    info = tmux.tmux("display-message", "-p", "-t", pane, "#{cursor_x} #{cursor_y}").stdout
    x, y = (int(v) for v in info.split())
    seen = pane_reader.read_screen(tmux.capture(pane), "shell", cursor=(x, y))
    return seen.composer_readable and seen.draft == ""


@pytest.fixture(scope="module")
def world(tmp_path_factory):
    """Every case's crew, recruited in one home onto one private tmux server, each at an
    empty prompt in its mode's keymap with one command in its history."""
    missing = sorted(
        {SHELLS[s][0] for s, _, _ in MODES.values() if shutil.which(SHELLS[s][0]) is None}
    )
    if missing or shutil.which("runuser") is None:
        pytest.skip(
            f"not installed: {missing or ['runuser']} (.ci/install-agents installs zsh and fish)"
        )
    home = Home(tmp_path_factory.mktemp("editors") / "home")
    home.root.mkdir(parents=True, exist_ok=True)
    (home.root / "config.toml").write_text(f"[ledger]\nslots = {len(CASES)}\n")
    shared = Path(tempfile.mkdtemp(prefix="captain-editors-", dir="/tmp"))
    shared.chmod(0o777)  # nobody's HOME, working directory, traps and $EDITOR
    editor = shared / "editor"
    editor.write_text(f"#!/bin/sh\ntouch {shared}/editor-ran\n")
    editor.chmod(0o755)
    # each word of the notice, run as a command, leaves a file in that crew's $HOME
    words = shared / "bin"
    words.mkdir()
    for word in set(doorbell.notice("E0").split()) - {"#", "read", "E0"}:
        (words / word).write_text(f'#!/bin/sh\ntouch "$HOME/ran-{word}"\n')
        (words / word).chmod(0o755)
    rc = shared / "bashrc"
    rc.write_text("shopt -u interactive_comments\n")
    tmux = PrivateTmux()
    crews = {}
    try:
        for i, (mode, user) in enumerate(CASES):
            if user == "nobody" and os.geteuid() != 0:
                continue  # runuser needs root; the other cases run as this user
            shell, setup, _ = MODES[mode]
            name = f"E{i}"
            trap = shared / name
            trap.mkdir()
            trap.chmod(0o777)
            # fish's first interactive start in a new $HOME otherwise runs its man-page
            # completion generator in the background: a python process per shell, ~30 s of
            # a core each, which outlives the test and slowed the whole CI run
            made = trap / ".local/share/fish/generated_completions"
            made.mkdir(parents=True)
            for part in (made, made.parent, made.parent.parent, made.parent.parent.parent):
                part.chmod(0o777)
            env = (
                f"env PATH={words}:$PATH HOME={trap} XDG_CONFIG_HOME={trap}/.config "
                f"EDITOR={editor} VISUAL={editor} FCEDIT={editor}"
            )
            argv = " ".join(SHELLS[shell]).replace("{rc}", str(rc))
            command = f"{env} {argv}" if user == "root" else f"runuser -u nobody -- {env} {argv}"
            out = io.StringIO()
            with contextlib.redirect_stdout(out), contextlib.redirect_stderr(io.StringIO()):
                code = main(
                    [
                        "crew",
                        name,
                        "--task",
                        hostile(trap),
                        "--command",
                        command,
                        "--cwd",
                        str(trap),
                        "--socket",
                        tmux.socket,
                        "--home",
                        str(home.root),
                        "--json",
                    ]
                )
            assert code == 0, out.getvalue()
            pane = json.loads(out.getvalue())["pane"]["pane_id"]
            crews[(mode, user)] = {"name": name, "pane": pane, "trap": trap}
        for (mode, _), crew in crews.items():
            poll(
                lambda: _empty_prompt(tmux, crew["pane"]),
                timeout=20,
                what=f"{mode}'s prompt: {tmux.capture(crew['pane'])[-300:]}",
            )
            setup = MODES[mode][1]
            if setup:
                tmux.type(crew["pane"], setup)
                tmux.key(crew["pane"], "Enter")
                # the mode's settings first (`stty eol m` ends a line at each 'm' typed once
                # it has run), then a seed with no 'm': $HOME is the crew's trap directory
                poll(
                    lambda: _empty_prompt(tmux, crew["pane"]),
                    timeout=20,
                    what=f"{mode}'s setup: {tmux.capture(crew['pane'])[-300:]}",
                )
            tmux.type(crew["pane"], 'echo seed >> "$HOME/runs"')
            tmux.key(crew["pane"], "Enter")
        for (mode, _), crew in crews.items():
            runs = crew["trap"] / "runs"
            poll(
                lambda: runs.exists() and _empty_prompt(tmux, crew["pane"]),
                timeout=20,
                what=f"{mode}'s history to be seeded: {tmux.capture(crew['pane'])[-300:]}",
            )
        yield home, tmux, crews, shared
    finally:
        tmux.kill()
        shutil.rmtree(shared, ignore_errors=True)


@pytest.mark.parametrize(("mode", "user"), CASES)
def test_the_notice_runs_nothing_and_leaves_nothing_on_the_line(world, mode, user):
    home, tmux, crews, shared = world
    if (mode, user) not in crews:
        pytest.skip("the tests do not run as root: no shell as another user (runuser)")
    crew = crews[(mode, user)]
    pane, trap, name = crew["pane"], crew["trap"], crew["name"]
    for key in MODES[mode][2]:
        tmux.key(pane, key)
    poll(lambda: _shown_in(tmux, pane, mode), timeout=5, what=f"{mode} to take effect")
    outcomes = []

    def rung():
        outcomes.append(doorbell.ring(home, name))
        return outcomes[-1].action == "rang"

    poll(rung, timeout=10, interval=0.1, what=f"the ring ({outcomes[-3:]})")
    outcome = outcomes[-1]
    stamp = doorbell.read_stamp(home, name.lower())
    screen = tmux.capture(pane)
    rows = [row.rstrip() for row in screen.splitlines()]
    assert "fix it" not in screen and "touch" not in screen  # no byte of the mail
    assert doorbell.notice(name) in screen
    if mode in EDITORS:
        # the editor redraws its line (bash's vi insert keymap has no redraw key: from
        # command mode): it must be empty, nothing of the notice left on it
        tmux.key(pane, *(("Escape", "C-l") if mode == "bash-vi-insert" else ("C-l",)))
        poll(
            lambda: _empty_prompt(tmux, pane) and doorbell.notice(name) not in tmux.capture(pane),
            timeout=5,
            what=f"{mode}'s line, redrawn, to be empty: {tmux.capture(pane)[-400:]}",
        )
    if mode.endswith("vi-command") or mode == "bash-vi-insert":
        tmux.key(pane, "i")
    marker = trap / "ok"  # no 'm' in what is typed (dash with `stty eol m`)
    tmux.type(pane, 'touch "$HOME/ok"')
    tmux.key(pane, "Enter")
    poll(
        marker.exists,
        timeout=10,
        what=f"{mode}'s shell to run a command typed after the ring: {tmux.capture(pane)[-400:]}",
    )
    # no word of the notice ran as a command, nothing the mail asks for exists
    assert sorted(p.name for p in trap.iterdir() if not p.name.startswith(".")) == ["ok", "runs"], (
        tmux.capture(pane)
    )
    assert (trap / "runs").read_text() == "seed\n"  # no history entry ran again
    assert not (shared / "editor-ran").exists()  # no editor was opened
    if mode in TYPED:
        # the kernel edits the line: typed, seen where it was typed, submitted
        assert (outcome.detail, stamp.typed) == ("landed", doorbell.notice(name))
    else:  # a line editor: printed on a row of its own, never typed, so no Enter either
        assert doorbell.notice(name) in rows, screen
        assert outcome.detail.startswith("printed") and stamp.typed is None, outcome
        assert stamp.landed and stamp.head is not None
    assert doorbell.ring(home, name).action == "nothing"  # rung once, not wedged


def test_a_typed_notice_not_seen_where_it_was_typed_is_erased_not_left_as_a_draft(
    cli, tmux, tmp_path
):
    """dash as root (prompt ``# ``), its terminal upper-casing what it prints (``stty
    olcuc``): the kernel edits the line, so the notice is typed, but its echo never reads
    as typed. Not landed, it is never submitted, and it is erased with the terminal's own
    erase character: the line is empty again, nothing is left to hold the doorbell as a
    human draft, and the next command typed runs alone."""
    if shutil.which("dash") is None:
        pytest.skip("dash is not installed")
    work = tmp_path / "work"
    work.mkdir()
    r = cli(
        "crew",
        "Olcuc",
        "--task",
        "T",
        "--command",
        "dash -i",
        "--socket",
        tmux.socket,
        "--cwd",
        str(work),
        "--json",
    )
    assert r.code == 0, r.err
    pane, home = r.json["pane"]["pane_id"], Home(cli.home)
    poll(lambda: _empty_prompt(tmux, pane), what="dash's prompt")
    tmux.type(pane, "stty olcuc")
    tmux.key(pane, "Enter")
    poll(
        lambda: tmux.capture(pane).count("#") >= 2 and _empty_prompt(tmux, pane),
        what="the next prompt",
    )
    outcomes = []
    poll(
        lambda: outcomes.append(doorbell.ring(home, "Olcuc")) or outcomes[-1].action == "rang",
        timeout=10,
        interval=0.1,
        what=f"the ring ({outcomes[-3:]})",
    )
    poll(
        lambda: _empty_prompt(tmux, pane),
        timeout=5,
        what=f"the line to be empty again: {tmux.capture(pane)}",
    )
    assert doorbell.ring(home, "Olcuc").gate != "human_draft"
    assert outcomes[-1].detail.endswith("erased"), outcomes[-1]
    stamp = doorbell.read_stamp(home, "olcuc")
    assert (stamp.landed, stamp.typed) == (False, None)
    marker = work / "marker"
    tmux.type(pane, f"touch {marker}")
    tmux.key(pane, "Enter")
    poll(marker.exists, what=f"the next command to run: {tmux.capture(pane)}")
    assert sorted(p.name for p in work.iterdir()) == ["marker"]


@pytest.mark.parametrize("how", ["command", "job"])
def test_a_program_reading_a_line_is_never_answered_by_the_notice(cli, tmux, tmp_path, how):
    """The kernel edits the line, but the program reading it is not a shell: a script's
    prompt ("Deploy build 42 to production >"), as the crew's own command or as a job run
    from an interactive dash. Enter there would answer it, so the notice is printed,
    never typed: the script is still waiting, and nothing it guards has run."""
    if shutil.which("dash") is None:
        pytest.skip("dash is not installed")
    work = tmp_path / "work"
    work.mkdir()
    deployed = work / "DEPLOYED"
    script = work / "deploy.sh"
    script.write_text(
        "#!/bin/sh\nprintf 'Deploy build 42 to production (Ctrl-C aborts) > '\n"
        f'read answer\necho "deploy ran ($answer)" > {deployed}\nsleep 600\n'
    )
    script.chmod(0o755)
    command = str(script) if how == "command" else "dash -i"
    r = cli(
        "crew",
        "Dave",
        "--task",
        "T",
        "--command",
        command,
        "--socket",
        tmux.socket,
        "--cwd",
        str(work),
        "--json",
    )
    assert r.code == 0, r.err
    pane, home = r.json["pane"]["pane_id"], Home(cli.home)
    if how == "job":
        poll(lambda: _empty_prompt(tmux, pane), what="dash's prompt")
        tmux.type(pane, str(script))
        tmux.key(pane, "Enter")
    poll(lambda: "production (Ctrl-C aborts) >" in tmux.capture(pane), what="the prompt")
    outcomes = []
    poll(
        lambda: outcomes.append(doorbell.ring(home, "Dave")) or outcomes[-1].action == "rang",
        timeout=15,
        interval=0.1,
        what=f"the ring ({outcomes[-3:]})",
    )
    assert outcomes[-1].detail.startswith("printed"), outcomes[-1]
    assert doorbell.read_stamp(home, "dave").typed is None
    assert doorbell.notice("Dave") in tmux.capture(pane)
    assert not deployed.exists(), deployed.read_text()

"""``captain demo``: a private tmux server, a throwaway home, three simulated crew.

The crew are ``captain_tui.cockpit.simcrew --auto``: they take their task from the doorbell, run
``captain inbox``, work a while (a spinner), ask the captain one question with
``captain ask``, wait for the answer and finish with ``captain done``. Nothing here needs
an agent CLI or the network. Quitting ends the private server and removes the home unless
``--keep``.
"""

from __future__ import annotations

import os
import shlex
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
from pathlib import Path

from captain_tui import usecases
from captain_tui.runtime.tmux import socket_path_for, tmux_binary
from state.crew.guards import CAPTAIN
from state.home import Home

# name, task, owns, allow, the question it asks, the files it changes (simcrew --change)
CREW: tuple[tuple[str, str, list[str], list[str], str, list[str]], ...] = (
    (
        "Ada",
        "Tidy the README: fix the broken links and the install section.",
        ["README.md", "docs"],
        ["read", "edit"],
        "Should the install section show pipx as well as pip?",
        ["README.md"],
    ),
    (
        "Brook",
        "Add a --verbose flag to the export command and test it.",
        ["src/export.py", "tests/test_export.py"],
        ["read", "edit", "test"],
        "Verbose output on stderr or stdout?",
        ["src/export.py", "tests/test_export.py", "CHANGELOG.md"],  # the last: not its own
    ),
    (
        "Cy",
        "Find why the nightly build is slow and report the top three causes.",
        [],
        ["read", "search", "build"],
        "May I drop the docs build from nightly if it is the main cause?",
        [],
    ),
)
# the demo project, a git repository with one commit: each crew works in its own worktree
# and its edits (simcrew --change) are a change to review (D in the cockpit)
PROJECT = {
    "README.md": "# demo project\n\nInstall: see [the docs](docs/install.md).\n",
    "docs/install.md": "# Install\n\n    pip install demo\n",
    "src/export.py": "import json\n\n\ndef export(rows, path):\n"
    "    with open(path, 'w') as f:\n        json.dump(rows, f)\n",
    "tests/test_export.py": "from export import export\n",
    "CHANGELOG.md": "# Changelog\n",
}
IDENTITY = {
    "GIT_AUTHOR_NAME": "captain demo",
    "GIT_AUTHOR_EMAIL": "demo@example.invalid",
    "GIT_COMMITTER_NAME": "captain demo",
    "GIT_COMMITTER_EMAIL": "demo@example.invalid",
}


class Demo:
    """Everything the demo created, so that it can all be taken down again."""

    def __init__(
        self, root: Path | None = None, *, work: float = 4.0, socket: str | None = None
    ) -> None:
        self.root = root or Path(tempfile.mkdtemp(prefix="captain-demo-"))
        self.home = Home(self.root / "home")
        self.project = self.root / "project"
        self.socket = socket or socket_path_for(f"captain-demo-{os.getpid()}")
        self.work = work

    def start(self) -> None:
        tmux_binary()  # a clear tmux_unavailable before anything is made
        self._make_project()
        for name, task, owns, allow, question, changes in CREW:
            program = shlex.join(
                [
                    sys.executable,
                    "-m",
                    "captain_tui.cockpit.simcrew",
                    "--auto",
                    "--ask",
                    question,
                    "--work",
                    str(self.work),
                    *[arg for path in changes for arg in ("--change", path)],
                ]
            )
            usecases.recruit(
                self.home,
                usecases.Recruitment(
                    name=name,
                    task=task,
                    command=program,
                    owns=tuple(owns),
                    allow=tuple(allow),
                    cwd=str(self.project),
                    socket=self.socket,
                    session="demo",
                ),
                ctx=CAPTAIN,
            )

    def _make_project(self) -> None:
        """The demo's project: a git repository with one commit on ``main``."""
        from captain_tui.repo import git

        for name, text in PROJECT.items():
            path = self.project / name
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(text)
        here = str(self.project)
        git.run(["init", "-q", "-b", "main"], cwd=here)
        git.run(["add", "-A"], cwd=here)
        git.run(["commit", "-q", "-m", "demo project"], cwd=here, env=IDENTITY)

    def stop(self, *, keep: bool) -> None:
        subprocess.run([tmux_binary(), "-S", self.socket, "kill-server"], capture_output=True)
        Path(self.socket).unlink(missing_ok=True)
        if not keep:
            shutil.rmtree(self.root, ignore_errors=True)


HANGUP_GRACE = 5.0  # seconds the cockpit has to end by itself after SIGHUP or SIGTERM


def _end_on_hangup(demo: Demo, app, *, keep: bool) -> None:
    """Closing the terminal (SIGHUP) or a plain ``kill`` (SIGTERM) ends the demo like
    ``ctrl+q``: the cockpit is asked to exit, so ``run_demo``'s clean-up runs (its tmux
    server, crews and home used to outlive it). A cockpit that cannot end by itself (its
    terminal is gone) is not waited for: after HANGUP_GRACE the demo is taken down from
    here and the process ends."""

    def last_resort(signum: int) -> None:
        try:
            app.call_from_thread(app.exit)
        except Exception:  # noqa: BLE001 - the app is gone or going: the timer decides
            pass
        threading.main_thread().join(HANGUP_GRACE)
        if threading.main_thread().is_alive():
            demo.stop(keep=keep)
            os._exit(128 + signum)

    def end(signum, frame):
        threading.Thread(
            target=last_resort, args=(signum,), daemon=True, name="demo-hangup"
        ).start()

    for name in ("SIGHUP", "SIGTERM"):
        signal.signal(getattr(signal, name), end)


def run_demo(*, keep: bool = False) -> int:
    demo = Demo()
    try:
        demo.start()
        from captain_tui.cockpit.app import CaptainApp

        app = CaptainApp(demo.home, socket=demo.socket)  # its recruits stay in the demo
        _end_on_hangup(demo, app, keep=keep)
        app.run()
        return 0
    finally:
        demo.stop(keep=keep)
        if keep:
            print(f"The demo home is kept at {demo.home.root}")

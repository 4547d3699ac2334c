"""Render the cockpit headlessly on a fixed home and write ``screenshots/``.

    python scripts/screenshots.py [--out screenshots]

SVG always; PNG too when cairosvg is installed (``pip install cairosvg``), rendered with a
monospace font that has the box-drawing glyphs the cockpit uses (DejaVu Sans Mono).
The home, the clock and the size (120x36) are fixed, so a changed picture means a changed UI.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import sys
import tempfile
from datetime import datetime, timedelta, timezone
from pathlib import Path

from state import clock
from state.crew import approvals, crewlog, notify, protocol, spend
from state.crew.guards import Context
from state.home import Home
from state.work import ledger, spent

SIZE = (120, 36)
CLOCK = datetime(2026, 11, 29, 9, 30, tzinfo=timezone.utc)


def build_home(root: Path) -> Home:
    """Three crew: one asking, one working with unread mail, one finished; and beside their
    work items, a chat item queued and one a worker ran whose stop could not be confirmed
    (it needs reconciliation). Times and IDs come from a fixed clock (``state.clock``), so
    every run writes the same home."""
    with clock.using(clock.Fixed(CLOCK - timedelta(minutes=45))) as fixed:
        return _build_home(root, fixed)


GIT_ENV = {
    "GIT_AUTHOR_NAME": "demo",
    "GIT_AUTHOR_EMAIL": "demo@example.invalid",
    "GIT_COMMITTER_NAME": "demo",
    "GIT_COMMITTER_EMAIL": "demo@example.invalid",
    "GIT_AUTHOR_DATE": "2026-11-29T09:00:00Z",
    "GIT_COMMITTER_DATE": "2026-11-29T09:00:00Z",
    "GIT_CONFIG_GLOBAL": os.devnull,
    "GIT_CONFIG_NOSYSTEM": "1",
}
EXPORT = (
    "import json\n\n\ndef export(rows, path):\n"
    "    with open(path, 'w') as f:\n        json.dump(rows, f)\n"
)
EXPORT_VERBOSE = (
    "import json\nimport logging\n\nlog = logging.getLogger(__name__)\n\n\n"
    "def export(rows, path, verbose=False):\n"
    "    if verbose:\n        log.info('exporting %d rows to %s', len(rows), path)\n"
    "    with open(path, 'w') as f:\n        json.dump(rows, f)\n"
)


def _git(project: Path, *args: str) -> None:
    import subprocess

    env = {k: v for k, v in os.environ.items() if not k.startswith("GIT_")} | GIT_ENV
    subprocess.run(["git", *args], cwd=project, env=env, check=True, capture_output=True)


def _project(root: Path) -> Path:
    """A git repository with one commit: Brook's change is made on top of it."""
    project = root / "project"
    (project / "src").mkdir(parents=True, exist_ok=True)
    (project / "src/export.py").write_text(EXPORT)
    (project / "README.md").write_text("# exporter\n")
    (project / "CHANGELOG.md").write_text("# Changelog\n")
    _git(project, "init", "-q", "-b", "main")
    _git(project, "add", "-A")
    _git(project, "commit", "-qm", "exporter")
    return project


def _build_home(root: Path, fixed: clock.Fixed) -> Home:
    home = Home(root / "home")
    project = _project(root)
    ada = protocol.recruit(
        home,
        "Ada",
        "Tidy the README: fix the broken links.",
        agent="claude",  # --no-launch: its spend and Brook's request are Claude Code's
        cwd=str(project),
        owns=["README.md", "docs"],
        allow=["read", "edit"],
    )
    protocol.inbox(home, "Ada", deliver=lambda batch: None, ctx=Context.from_env(ada.env))
    fixed.advance(minutes=20)
    protocol.ask(
        home,
        "Ada",
        "Should the install section show pipx as well as pip?",
        ctx=Context.from_env(ada.env),
    )
    fixed.advance(minutes=5)
    brook = protocol.recruit(
        home,
        "Brook",
        "Add a --verbose flag to export and test it.",
        agent="claude",
        cwd=str(project),
        owns=["src/export.py"],
        allow=["edit", "test"],
        budget_usd=1.5,  # its spend near it: the Spend column shows the budget, amber
    )
    protocol.tell(home, "Brook", "Also update the changelog.", assignment_id=brook.assignment_id)
    (project / "src/export.py").write_text(EXPORT_VERBOSE)  # Brook's change, uncommitted
    (project / "CHANGELOG.md").write_text("# Changelog\n\n- export --verbose\n")  # not owned
    cy = protocol.recruit(
        home,
        "Cy",
        "Find why the nightly build is slow.",
        agent="claude",
        cwd=str(project),
        allow=["read", "search", "build"],
    )
    protocol.inbox(home, "Cy", deliver=lambda batch: None, ctx=Context.from_env(cy.env))
    protocol.done(
        home,
        "Cy",
        "Docs build is 70% of nightly; caching node_modules saves 4 min.",
        ctx=Context.from_env(cy.env),
    )
    fixed.advance(minutes=12)
    # Brook's agent asks permission; its hook holds the request for the captain
    snapshot, _ = crewlog.load(home, "brook")
    request = approvals.open_request(
        home,
        snapshot,
        agent="claude",
        tool="Bash",
        command="rm -rf build/",
        session_allowed=True,
        timeout=600,
    )
    notify.signal(
        home,
        "Brook",
        "awaiting_approval",
        f"asks to run Bash: rm -rf build/ (approval {request.request_id})",
        at=clock.now(),
        request_id=request.request_id,
    )
    # what each crew's agent spent, measured from a transcript as its Stop hook would
    _spent(home, root, "ada", ada.assignment_id, "claude-sonnet-4-5-20250929", 14)
    _spent(home, root, "brook", brook.assignment_id, "claude-opus-4-5-20251101", 31)
    _spent(home, root, "cy", cy.assignment_id, "claude-sonnet-4-5-20250929", 52)
    ago = lambda minutes: CLOCK - timedelta(minutes=minutes)  # noqa: E731
    ledger.accept(
        home,
        source="chat",
        input={"text": "Draft the release notes"},
        requester="captain:demo",
        target_revision="v2.3.0",
        at=ago(3),
    )
    stuck = ledger.accept(
        home,
        source="chat",
        input={"text": "Re-run the flaky e2e suite"},
        requester="captain:demo",
        at=ago(40),
    )
    ledger.claim(home, stuck.work_id, holder="worker:ci", at=ago(38))
    ledger.cancel(home, stuck.work_id, actor="captain:demo", at=ago(6))  # no stop confirmed
    return home


def _spent(home: Home, root: Path, key: str, assignment_id: str, model: str, turns: int) -> None:
    """``turns`` answers of a Claude Code transcript, measured (``state.crew.spend``) and put
    on the assignment's attempt (``state.work.spent``), as the Stop hook and its recorder do."""
    transcript = root / f"{key}.jsonl"
    lines = []
    for n in range(turns):
        usage = {
            "input_tokens": 40 + 7 * n,
            "output_tokens": 380 + 29 * n,
            "cache_read_input_tokens": 9_000 + 1_150 * n,
            "cache_creation_input_tokens": 600 + 35 * n,
        }
        message = {"id": f"msg_{key}_{n}", "model": model, "usage": usage}
        lines.append(json.dumps({"type": "assistant", "message": message}))
    transcript.write_text("\n".join(lines) + "\n")
    figure = spend.measure(home, key, assignment_id, "claude", str(transcript))
    spent.record(home, assignment_id, figure, actor=key)


async def _shoot(home: Home, out: Path) -> list[Path]:
    from captain_tui.cockpit.app import CaptainApp

    app = CaptainApp(home, run_doorbell=False, clock=lambda: CLOCK)
    written = []
    async with app.run_test(size=SIZE) as pilot:
        for _ in range(200):  # the first scan runs in a worker
            if app.scanned and app.last_refresh is not None:
                break
            await pilot.pause(0.05)
        await pilot.pause(0.5)  # the footer and the panels settle (a busy machine is slow)
        written.append(_save(app.export_screenshot(title="captain"), out / "cockpit.svg"))
        app.query_one("#approvals").table.focus()  # the request's detail in the preview
        await pilot.pause(0.3)
        shot = app.export_screenshot(title="captain — approvals")
        written.append(_save(shot, out / "approvals.svg"))
        app.query_one("#crew").table.focus()
        await pilot.press("question_mark")
        await pilot.pause(0.3)
        written.append(_save(app.export_screenshot(title="captain — help"), out / "help.svg"))
        await pilot.press("escape")
        await _review(pilot, "brook")
        written.append(_save(app.export_screenshot(title="captain — review"), out / "review.svg"))
    return written


async def _review(pilot, key: str) -> None:
    """Select the crew ``key`` in Crew, open its review and show its first owned file."""
    from widgets.panels.crew_panel import CrewPanel
    from widgets.screens.review_screen import ReviewScreen

    app = pilot.app
    panel = app.query_one(CrewPanel)
    panel.table.focus()
    await pilot.press("g", *["j"] * panel._keys.index(key), "D")
    for _ in range(200):
        screen = app.screen
        if isinstance(screen, ReviewScreen) and screen.files:
            break
        await pilot.pause(0.05)
    await pilot.press("n")  # CHANGELOG.md (outside its --owns) first, then src/export.py
    for _ in range(200):
        current = screen.current
        if current is not None and current.path == "src/export.py" and current.coloured:
            break
        await pilot.pause(0.05)
    await pilot.pause(0.3)


def _save(svg: str, path: Path) -> Path:
    path.write_text(svg)
    return path


def _png(svg_path: Path) -> Path | None:
    try:
        import cairosvg
    except ImportError:
        return None
    png = svg_path.with_suffix(".png")
    svg = svg_path.read_text().replace("font-family: Fira Code", "font-family: DejaVu Sans Mono")
    cairosvg.svg2png(bytestring=svg.encode(), write_to=str(png), output_width=1800)
    return png


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", default="screenshots", type=Path)
    args = parser.parse_args(argv)
    args.out.mkdir(parents=True, exist_ok=True)
    os.environ.setdefault("CAPTAIN_CONFIG_DIR", tempfile.mkdtemp())  # default settings
    with tempfile.TemporaryDirectory() as tmp:
        os.environ["HOME"] = tmp  # the help screen shows the home as ~/home, run after run
        home = build_home(Path(tmp))
        # the cockpit's own reads at the pictures' time too: a request shown is still open
        with clock.using(clock.Fixed(CLOCK)):
            shots = asyncio.run(_shoot(home, args.out))
        for svg in shots:
            png = _png(svg)
            print(f"wrote {svg}" + (f" and {png}" if png else ""))
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""Render the cockpit headlessly on a fixed home and write ``screenshots/``.

    python -m captain_tui.screenshots [--out screenshots]

SVG always; PNG too when cairosvg is installed (``pip install cairosvg``), rendered with a
monospace font that has the box-drawing glyphs the cockpit uses (DejaVu Sans Mono).
The home, the clock and the size (120x36) are fixed, so a changed picture means a changed UI.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import sys
import tempfile
from datetime import datetime, timezone
from pathlib import Path

from state import notify, protocol
from state.home import Home
from state.protocol import Context

SIZE = (120, 36)
CLOCK = datetime(2026, 11, 29, 9, 30, tzinfo=timezone.utc)


def build_home(root: Path) -> Home:
    """Three crew: one asking, one working with unread mail, one finished."""
    home = Home(root / "home")
    project = root / "project"
    project.mkdir(parents=True, exist_ok=True)
    ada = protocol.recruit(home, "Ada", "Tidy the README: fix the broken links.", cwd=str(project),
                           owns=["README.md", "docs"], allow=["read", "edit"])
    protocol.inbox(home, "Ada", deliver=lambda batch: None, ctx=Context.from_env(ada.env))
    protocol.ask(home, "Ada", "Should the install section show pipx as well as pip?",
                 ctx=Context.from_env(ada.env))
    brook = protocol.recruit(home, "Brook", "Add a --verbose flag to export and test it.",
                             cwd=str(project), owns=["src/export.py"], allow=["edit", "test"])
    protocol.tell(home, "Brook", "Also update the changelog.",
                  assignment_id=brook.assignment_id)
    cy = protocol.recruit(home, "Cy", "Find why the nightly build is slow.", cwd=str(project),
                          allow=["read", "search", "build"])
    protocol.inbox(home, "Cy", deliver=lambda batch: None, ctx=Context.from_env(cy.env))
    protocol.done(home, "Cy", "Docs build is 70% of nightly; caching node_modules saves 4 min.",
                  ctx=Context.from_env(cy.env))
    notify.signal(home, "Brook", "awaiting_approval", "permission prompt: Bash: rm -rf build/",
                  at=notify.now())
    return home


async def _shoot(home: Home, out: Path) -> list[Path]:
    from captain_tui.app import CaptainApp

    app = CaptainApp(home, run_doorbell=False, clock=lambda: CLOCK)
    written = []
    async with app.run_test(size=SIZE) as pilot:
        for _ in range(200):  # the first scan runs in a worker
            if app.scanned:
                break
            await pilot.pause(0.05)
        await pilot.pause(0.2)
        written.append(_save(app.export_screenshot(title="captain"), out / "cockpit.svg"))
        await pilot.press("question_mark")
        await pilot.pause(0.3)
        written.append(_save(app.export_screenshot(title="captain — help"), out / "help.svg"))
    return written


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
        home = build_home(Path(tmp))
        for svg in asyncio.run(_shoot(home, args.out)):
            png = _png(svg)
            print(f"wrote {svg}" + (f" and {png}" if png else ""))
    return 0


if __name__ == "__main__":
    sys.exit(main())

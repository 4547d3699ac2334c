"""watchfiles' one private name, held to one place and one version.

``captain_tui/runtime/homewatch.py`` needs a non-recursive watch of the home's top level
beside recursive watches of its other folders, set up before the old one is closed (no
gap in which a write is missed); watchfiles' public ``watch`` gives one or the other per
call, so homewatch uses ``watchfiles._rust_notify.RustNotify`` itself. A private name can
change in any release: watchfiles is pinned exactly, and this test fails when another
module reaches into watchfiles' private names or the pin moves without a look at them.
"""

from __future__ import annotations

import ast
import re
from importlib.metadata import version
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
ALLOWED = {("captain_tui/runtime/homewatch.py", "watchfiles._rust_notify", "RustNotify")}


def _private_uses() -> set[tuple[str, str, str]]:
    found = set()
    for root in ("state", "captain_tui", "widgets", "bench", "scripts"):
        for path in sorted((REPO / root).rglob("*.py")):
            tree = ast.parse(path.read_text(), str(path))
            rel = str(path.relative_to(REPO))
            for node in ast.walk(tree):
                if isinstance(node, ast.ImportFrom) and (node.module or "").startswith(
                    "watchfiles"
                ):
                    for alias in node.names:
                        private = "._" in node.module or alias.name.startswith("_")
                        if private:
                            found.add((rel, node.module, alias.name))
                elif isinstance(node, ast.Import):
                    for alias in node.names:
                        if alias.name.startswith("watchfiles._"):
                            found.add((rel, alias.name, ""))
    return found


def test_only_homewatch_uses_a_private_watchfiles_name():
    assert _private_uses() == ALLOWED


def test_watchfiles_is_pinned_to_the_version_homewatch_was_written_for():
    pyproject = (REPO / "pyproject.toml").read_text()
    pinned = re.search(r'"watchfiles==([0-9.]+)"', pyproject)
    assert pinned, "watchfiles must be pinned exactly (homewatch uses a private name)"
    assert version("watchfiles") == pinned.group(1) == "1.3.0"

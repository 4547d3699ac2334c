"""docs/design.md stays true to the tree: every module and path it names exists, every
module of a package it describes is named, and it states as many import contracts as
pyproject.toml runs. "When this page and the code disagree, one of them has a bug."""

from __future__ import annotations

import ast
import re
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
DOC = (ROOT / "docs" / "design.md").read_text(encoding="utf-8")
PACKAGES = ("state", "captain_tui", "widgets")
# backticked names that are the home's layout (docs/store.md), not the repository's
HOME_PATHS = {
    "locks/",
    "quarantine/",
    "locks/ring-<key>.lock",
    "config.toml",
    "ledger/",
    "ledger/finished/",
}
NUMBERS = {
    "one": 1,
    "two": 2,
    "three": 3,
    "four": 4,
    "five": 5,
    "six": 6,
    "seven": 7,
    "eight": 8,
    "nine": 9,
    "ten": 10,
}


def _files() -> list[str]:
    skip = {".venv", ".git", "__pycache__", "node_modules"}
    return [
        p.relative_to(ROOT).as_posix()
        for p in ROOT.rglob("*")
        if not skip.intersection(p.relative_to(ROOT).parts)
    ]


FILES = _files()


def _exists(name: str) -> bool:
    """A path as the page writes it: from the repository's root, or from inside one of its
    folders (``cli/main.py``, ``feed/pump.py``), a file or a folder (``feed/``)."""
    name = name.rstrip("/")
    return any(f == name or f.endswith("/" + name) for f in FILES)


def _section(title: str) -> str:
    match = re.search(rf"^## {re.escape(title)}\n(.*?)(?=^## )", DOC, re.S | re.M)
    assert match, f"docs/design.md has no section {title!r}"
    return match.group(1)


def _tree() -> list[tuple[str, str]]:
    """(path, description) for each entry of the tree block, folders nested by indent."""
    block = re.search(r"```\n(state/.*?)```", _section("The tree"), re.S)
    assert block, "the tree block is missing"
    entries: list[tuple[str, str]] = []
    stack: list[tuple[int, str]] = []  # (indent, folder path)
    for line in block.group(1).splitlines():
        match = re.match(r"^( *)(\S+(?:, \S+)*)(?:  +(.*))?$", line)
        if not match or len(match.group(1)) >= 20:
            if entries:  # a description's continuation line
                path, text = entries[-1]
                entries[-1] = (path, f"{text} {line.strip()}")
            continue
        indent, names, text = len(match.group(1)), match.group(2), match.group(3) or ""
        while stack and stack[-1][0] >= indent:
            stack.pop()
        parent = stack[-1][1] if stack else ""
        for name in names.split(", "):
            path = parent + name
            entries.append((path, text))
            if name.endswith("/"):
                stack.append((indent, path))
    return entries


def test_every_entry_of_the_tree_exists():
    entries = _tree()
    assert len(entries) > 20, "the tree block was not parsed"
    missing = [path for path, _ in entries if not (ROOT / path.rstrip("/")).exists()]
    assert missing == [], f"docs/design.md's tree names what does not exist: {missing}"


def test_every_module_of_a_package_in_the_tree_is_named_there():
    """A module added to a package the tree describes is named in its entry (or its own)."""
    unnamed = []
    for path, text in _tree():
        if not path.endswith("/") or not path.startswith(PACKAGES):
            continue
        words = set(re.findall(r"[A-Za-z_][A-Za-z0-9_]*", text))
        listed = {p.rstrip("/") for p, _ in _tree()}
        for module in sorted((ROOT / path).glob("*.py")):
            if module.name.startswith("__"):
                continue
            if module.stem not in words and f"{path}{module.name}" not in listed:
                unnamed.append(f"{path}{module.name}")
    assert unnamed == [], f"docs/design.md's tree does not name: {unnamed}"


def test_every_path_the_page_names_in_backticks_exists():
    named = {
        m
        for m in re.findall(r"`([^`\s]+)`", DOC)
        if re.fullmatch(r"[\w./<>-]+(\.(py|md|tcss|ts|toml)|/)", m)
    } - HOME_PATHS
    assert len(named) > 30, "the page's paths were not found"
    missing = sorted(n for n in named if not _exists(n))
    assert missing == [], f"docs/design.md names paths that do not exist: {missing}"


def test_every_dotted_name_the_page_gives_resolves():
    """``state.work.deliveries.ingest``, ``agents.kinds.COMPOSERS``: the module exists, and
    the name after it is defined there."""
    heads = PACKAGES + (
        "agents",
        "runtime",
        "cli",
        "cockpit",
        "api",
        "feed",
        "doorbell",
        "ledger_probe",
        "death_watch",
        "inputs",
        "tokens",
        "ops",
        "deliveries",
    )
    broken = []
    checked = 0
    for name in sorted(set(re.findall(r"`([a-z_]+(?:\.[A-Za-z_][A-Za-z0-9_]*)+)`", DOC))):
        if not name.startswith(tuple(h + "." for h in heads)):
            continue
        parts = name.split(".")
        module = None
        for cut in range(len(parts), 0, -1):
            stem = "/".join(parts[:cut])
            candidates = [
                f
                for f in FILES
                if f.startswith(PACKAGES)
                and any(
                    f == end or f.endswith("/" + end)
                    for end in (stem + ".py", stem + "/__init__.py")
                )
            ]
            if candidates:
                module, rest = candidates[0], parts[cut:]
                break
        if module is None:
            broken.append(f"{name}: no such module")
            continue
        checked += 1
        if rest:
            tree = ast.parse((ROOT / module).read_text(encoding="utf-8"))
            defined = {getattr(n, "name", None) for n in tree.body} | {
                t.id
                for n in tree.body
                if isinstance(n, (ast.Assign, ast.AnnAssign))
                for t in (n.targets if isinstance(n, ast.Assign) else [n.target])
                if isinstance(t, ast.Name)
            }
            if rest[0] not in defined:
                broken.append(f"{name}: {module} defines no {rest[0]}")
    assert checked >= 5, "the page's dotted names were not found"
    assert broken == [], f"docs/design.md names what the code does not hold: {broken}"


def test_the_layers_section_states_every_import_contract():
    contracts = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["importlinter"][
        "contracts"
    ]
    layers = _section("Layers")
    said = re.search(r"`\[tool\.importlinter\]`: (\w+) contracts", layers)
    assert said, "the Layers section does not say how many contracts lint-imports runs"
    assert NUMBERS.get(said.group(1), -1) == len(contracts)
    listed = re.findall(r"^  (\d+)\. ", layers, re.M)
    assert [int(n) for n in listed] == list(range(1, len(contracts) + 1)), (
        "the Layers section lists one item per contract of pyproject.toml, in order"
    )

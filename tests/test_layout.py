"""The layout holds: four programs in four folders, imports only downward, no cycles, lint clean.

docs/design.md draws the layers; ``pyproject.toml``'s ``[tool.importlinter]`` states them
as contracts. These tests run the real tools on the real tree, so a change that breaks a
layer, closes an import cycle or lets a folder go undocumented fails here.
"""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

import grimp

REPO = Path(__file__).resolve().parents[1]
PACKAGES = ("state", "captain_tui", "widgets")
BIN = Path(sys.executable).parent


def _run(tool: str, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [str(BIN / tool), *args], cwd=REPO, capture_output=True, text=True, timeout=300
    )


def test_import_contracts_hold():
    result = _run("lint-imports")
    assert result.returncode == 0, result.stdout + result.stderr
    assert "0 broken" in result.stdout


def cycles(graph) -> list[list[str]]:
    """Strongly connected components of more than one module (Tarjan's, iteratively)."""
    edges = {m: sorted(graph.find_modules_directly_imported_by(m)) for m in graph.modules}
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []
    for root in sorted(edges):
        if root in index:
            continue
        work = [(root, 0)]
        while work:
            node, i = work.pop()
            if i == 0:
                index[node] = low[node] = len(index)
                stack.append(node)
                on_stack.add(node)
            if i < len(edges[node]):
                work.append((node, i + 1))
                nxt = edges[node][i]
                if nxt not in index:
                    work.append((nxt, 0))
                elif nxt in on_stack:
                    low[node] = min(low[node], index[nxt])
                continue
            if low[node] == index[node]:
                component = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.append(member)
                    if member == node:
                        break
                if len(component) > 1:
                    found.append(sorted(component))
            if work:
                parent = work[-1][0]
                low[parent] = min(low[parent], low[node])
    return found


def test_no_import_cycles_between_modules():
    graph = grimp.build_graph(*PACKAGES)
    assert len(graph.modules) > 80
    assert cycles(graph) == []


def test_the_cycle_finder_finds_a_cycle():
    """The check above can fail: a graph with a cycle is reported."""
    graph = grimp.ImportGraph()
    for name in ("a", "a.x", "a.y", "a.z"):
        graph.add_module(name)
    graph.add_import(importer="a.x", imported="a.y")
    graph.add_import(importer="a.y", imported="a.z")
    graph.add_import(importer="a.z", imported="a.x")
    assert cycles(graph) == [["a.x", "a.y", "a.z"]]


def test_ruff_is_clean():
    result = _run("ruff", "check", ".")
    assert result.returncode == 0, result.stdout + result.stderr


def test_ruff_format_is_applied():
    """One format for the whole tree, so a diff shows what changed and nothing else."""
    result = _run("ruff", "format", "--check", ".")
    assert result.returncode == 0, result.stdout + result.stderr


def test_mypy_is_clean():
    """The types hold on every package ([tool.mypy] in pyproject.toml: strict on ``state``),
    so a vocabulary written as a ``Literal`` (a crew's state, a cancel's outcome) is checked
    wherever it is used, not only where a comment lists it."""
    result = _run("mypy")
    assert result.returncode == 0, result.stdout + result.stderr


def test_every_folder_says_what_it_holds_and_what_it_may_import():
    folders = [p.parent for package in PACKAGES for p in (REPO / package).rglob("__init__.py")]
    assert len(folders) >= 12
    for folder in folders:
        doc = ast.get_docstring(ast.parse((folder / "__init__.py").read_text()))
        where = folder.relative_to(REPO)
        assert doc and len(doc.split()) >= 12, f"{where}/__init__.py: say what it holds"
        assert "import" in doc, f"{where}/__init__.py: say what it may import"


# Names more than one module may carry: a package's own file and a program's entry point.
SHARED_NAMES = {"__init__", "__main__"}


def module_names(root: Path, packages: tuple[str, ...]) -> dict[str, list[str]]:
    """Every module's last name (a file's stem, a package's folder) -> where it is."""
    names: dict[str, list[str]] = {}
    for package in packages:
        for path in sorted((root / package).rglob("*.py")):
            if "__pycache__" in path.parts:
                continue
            where = path.relative_to(root).as_posix()
            names.setdefault(path.stem, []).append(where)
            if path.name == "__init__.py":
                names.setdefault(path.parent.name, []).append(where)
    return names


def test_every_module_name_is_unique():
    """A module's name says what it holds, so no two say the same: ``rules`` beside ``rules``
    or ``work`` five times made every import and every traceback ask which one."""
    names = module_names(REPO, (*PACKAGES, "bench"))
    assert len(names) > 100
    shared = {
        name: places
        for name, places in names.items()
        if len(places) > 1 and name not in SHARED_NAMES
    }
    assert shared == {}, f"modules that share a name: {shared}"


def test_the_name_check_finds_a_shared_name(tmp_path):
    """The check above can fail: two modules of one name in two packages are both found,
    and so is a module named like a package."""
    for rel in ("a/__init__.py", "a/rules.py", "b/__init__.py", "b/rules.py", "b/a.py"):
        (tmp_path / rel).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / rel).write_text("")
    names = module_names(tmp_path, ("a", "b"))
    assert names["rules"] == ["a/rules.py", "b/rules.py"]
    assert names["a"] == ["a/__init__.py", "b/a.py"]

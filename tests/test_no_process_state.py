"""No new process-wide mutable state (issue 24, point 4): state that one thread, one home
or one test changes for every other belongs to an owner (a ``Home``, a ``Store``, an app,
a test's own subclass), not to a module or a class.

An ``ast`` walk over the packages (and the tests' shared helpers) finds:

- a module-level container (``{}``, ``[]``, ``set()``, ...) that a function changes, and a
  ``global`` rebinding: a module cache;
- a class attribute set or changed from outside the class body (``Store.listener = f``,
  ``cls._seen.append(x)``, ``CaptainApp.notify = patched``): a class-wide switch.

What remains is listed below, each with why it is still process-wide; the list only
shrinks. A new entry needs a reason a reviewer accepts."""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SCANNED = ("state", "captain_tui", "widgets", "tests/support")

# (module path, name): why it is still process-wide. Shrink this; do not grow it.
MODULE_STATE = {
    (
        "state/clock.py",
        "_current",
    ): "the process's one clock (every record's time and ID order); only tests and the "
    "screenshot script swap it, for a block, with clock.using(): a clock passed to every "
    "now() would be passed through every function that writes a record",
}
CLASS_STATE = {
    (
        "state/records.py",
        "EventFile._adapter",
    ): "a constant built on first use (pydantic's TypeAdapter): the same for everyone",
    (
        "tests/support/agents.py",
        "NetJail._probe",
    ): "a fact about the machine (can a test isolate an agent from the network), found once",
}

MUTATORS = {
    "append",
    "add",
    "update",
    "clear",
    "pop",
    "popitem",
    "setdefault",
    "extend",
    "insert",
    "remove",
    "discard",
    "appendleft",
    "extendleft",
    "__setitem__",
}
CONTAINERS = {"dict", "list", "set", "defaultdict", "OrderedDict", "deque", "Counter"}


def _modules() -> list[tuple[str, ast.Module]]:
    out = []
    for top in SCANNED:
        for path in sorted((ROOT / top).rglob("*.py")):
            rel = path.relative_to(ROOT).as_posix()
            out.append((rel, ast.parse(path.read_text(encoding="utf-8"), rel)))
    return out


MODULES = _modules()
CLASSES = {
    node.name for _, tree in MODULES for node in ast.walk(tree) if isinstance(node, ast.ClassDef)
}
CLASSES |= {
    alias.asname or alias.name
    for _, tree in MODULES
    for node in ast.walk(tree)
    if isinstance(node, ast.ImportFrom)
    and (node.module or "").startswith(("state", "captain_tui", "widgets"))
    for alias in node.names
    if alias.name[:1].isupper()
}


def _is_container(value: ast.expr | None) -> bool:
    if isinstance(value, (ast.Dict, ast.List, ast.Set, ast.DictComp, ast.ListComp, ast.SetComp)):
        return True
    if isinstance(value, ast.Call):
        func = value.func
        name = (
            func.id
            if isinstance(func, ast.Name)
            else func.attr
            if isinstance(func, ast.Attribute)
            else ""
        )
        return name in CONTAINERS
    return False


def _base(node: ast.expr) -> ast.expr:
    """``x`` of ``x[k]``, ``x.attr`` stays itself."""
    while isinstance(node, ast.Subscript):
        node = node.value
    return node


def _changed(tree: ast.AST) -> list[ast.expr]:
    """Every expression a statement under ``tree`` changes in place or binds."""
    out: list[ast.expr] = []
    for node in ast.walk(tree):
        if isinstance(node, (ast.Assign, ast.AugAssign, ast.AnnAssign)):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            for target in targets:
                for t in target.elts if isinstance(target, ast.Tuple) else [target]:
                    out.append(t)
        elif isinstance(node, ast.Delete):
            out.extend(node.targets)
        elif (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Attribute)
            and node.func.attr in MUTATORS
        ):
            out.append(ast.Subscript(value=node.func.value, slice=ast.Constant(0)))
    return out


def _module_state(rel: str, tree: ast.Module) -> set[str]:
    containers = set()
    for node in tree.body:
        if isinstance(node, (ast.Assign, ast.AnnAssign)) and _is_container(node.value):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            containers |= {t.id for t in targets if isinstance(t, ast.Name)}
    found = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Global):
            found |= set(node.names)
        if not isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            continue
        for target in _changed(node):
            if isinstance(target, ast.Subscript):
                base = _base(target)
                if isinstance(base, ast.Name) and base.id in containers:
                    found.add(base.id)
    return found


def _class_state(rel: str, tree: ast.Module) -> set[str]:
    """``Class.attr`` (or ``cls.attr``) set, or changed in place, outside a class body."""
    found = set()

    def visit(node: ast.AST, owner: str | None, in_function: bool) -> None:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, ast.ClassDef):
                visit(child, child.name, False)
            elif isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef)):
                local = {n.name for n in ast.walk(child) if isinstance(n, ast.ClassDef)}
                for target in _changed(child):
                    target = _base(target)
                    if not isinstance(target, ast.Attribute) or not isinstance(
                        target.value, ast.Name
                    ):
                        continue
                    name = target.value.id
                    if name in local:
                        continue  # a class this call builds (and names) is its own
                    if name == "cls" and owner:
                        found.add(f"{owner}.{target.attr}")
                    elif name in CLASSES:
                        found.add(f"{name}.{target.attr}")
                visit(child, owner, True)
            elif isinstance(child, ast.stmt) and not in_function and owner is None:
                for target in _changed(child):
                    target = _base(target)
                    if (
                        isinstance(target, ast.Attribute)
                        and isinstance(target.value, ast.Name)
                        and target.value.id in CLASSES
                    ):
                        found.add(f"{target.value.id}.{target.attr}")
                visit(child, owner, in_function)

    visit(tree, None, False)
    return found


def test_no_module_cache_beyond_the_listed_ones():
    found = {
        (rel, name)
        for rel, tree in MODULES
        for name in _module_state(rel, tree)
        if not rel.startswith("tests/")
    }  # the tests' session helpers keep theirs
    new = sorted(found - set(MODULE_STATE))
    assert new == [], (
        "module-level state changed at runtime: give it an owner (a Home, a "
        f"Store, an app) instead: {new}"
    )
    gone = sorted(set(MODULE_STATE) - found)
    assert gone == [], f"no longer module state: strike it from MODULE_STATE: {gone}"


def test_no_class_attribute_changed_at_runtime_beyond_the_listed_ones():
    found = {(rel, name) for rel, tree in MODULES for name in _class_state(rel, tree)}
    new = sorted(found - set(CLASS_STATE))
    assert new == [], (
        "a class attribute is set or changed at runtime, for every instance "
        f"and thread: make it an instance's (or a subclass's): {new}"
    )
    gone = sorted(set(CLASS_STATE) - found)
    assert gone == [], f"no longer class state: strike it from CLASS_STATE: {gone}"


def test_importing_the_cockpit_helpers_changes_no_class():
    """tests/support/cockpit.py gives tests a subclass that keeps toasts; the real
    ``CaptainApp.notify`` stays the app's own for every other test and process."""
    import support.cockpit  # noqa: F401 - imported for what it must not do

    from captain_tui.cockpit.app import CaptainApp

    assert CaptainApp.notify.__qualname__ == "CaptainApp.notify"
    assert CaptainApp.notify.__module__ == "captain_tui.cockpit.app"

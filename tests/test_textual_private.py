"""No private Textual name anywhere in the program: Textual is pinned, but its private names
change without notice in any release, and a patch that leans on them breaks silently (a
cache keyed differently renders stale rows; a renamed attribute is just set on the side).

Every ``.py`` under the program's folders is read with ``ast`` (nothing of ours is imported)
and fails on:

(a) an import from a Textual module whose dotted path has a ``_`` component, or of a
    ``_name`` from a Textual module;
(b) ``super()._x`` in a class on the Textual side (see below);
(c) ``obj._x`` (or ``getattr(obj, "_x")``) where ``_x`` is a private name Textual defines:
    - in a class on the Textual side (derived from a Textual class, or mixed into one of
      ours that is), any ``self._x`` Textual defines, and any method or class attribute of
      that name: our own ``self._x`` there would clobber Textual's state;
    - in any other class, ``self._x`` unless that class assigns ``self._x`` itself;
    - any other receiver, unless some class of ours off the Textual side defines that name
      (the type of ``obj`` is not known statically; a name only Textual defines is never
      ours), and always when the receiver is a Textual module.

A Textual class's private names are those in its ``dir()``, in ``dir()`` of a constructed
instance where that is cheap, and every ``self._x`` in the source of each class of its MRO
(attributes set outside ``__init__`` too). A class of ours is checked against the Textual
classes it builds on; any other receiver against every Textual class loaded once those we
build on (``BUILT_ON``, and every base in our code) are: a widget holds other widgets.
"""

from __future__ import annotations

import ast
import importlib
import inspect
import sys
import textwrap
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
ROOTS = ("state", "captain_tui", "widgets", "scripts", "bench", "tests")

# Textual classes we build on or may build on: their private names count even where no class
# of ours derives from them yet (a subclass added later is checked from the first day).
BUILT_ON = (
    "textual.app.App",
    "textual.screen.Screen",
    "textual.screen.ModalScreen",
    "textual.widget.Widget",
    "textual.widgets.Static",
    "textual.scroll_view.ScrollView",
    "textual.widgets.DataTable",
    "textual.widgets.Footer",
    "textual.widgets.Header",
    "textual.widgets.Input",
    "textual.widgets.TextArea",
    "textual.widgets.Label",
    "textual.widgets.Markdown",
    "textual.widgets.OptionList",
    "textual.widgets.Select",
    "textual.widgets.Switch",
    "textual.widgets.Button",
    "textual.containers.Vertical",
    "textual.containers.Horizontal",
    "textual.containers.VerticalScroll",
    "textual.message.Message",
)
CHEAP_TO_BUILD = (
    "textual.widget.Widget",
    "textual.widgets.Static",
    "textual.scroll_view.ScrollView",
    "textual.widgets.DataTable",
    "textual.widgets.Input",
    "textual.widgets.TextArea",
    "textual.widgets.Footer",
    "textual.widgets.Header",
    "textual.containers.Vertical",
    "textual.app.App",
)

# Names Textual defines that are also ordinary Python: never Textual's state.
NOT_TEXTUAL = frozenset(
    {"_abc_impl", "_is_protocol", "_fields", "_asdict", "_replace", "_make", "_field_defaults"}
)


def sources(base: Path) -> list[Path]:
    return sorted(
        p for root in ROOTS for p in (base / root).rglob("*.py") if "__pycache__" not in p.parts
    )


def module_name(path: Path, base: Path) -> str:
    parts = list(path.relative_to(base).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def is_private(name: str) -> bool:
    return name.startswith("_") and not (name.startswith("__") and name.endswith("__"))


def is_textual(dotted: str) -> bool:
    return dotted == "textual" or dotted.startswith("textual.")


# -- our code, read ---------------------------------------------------------------------------


@dataclass
class ClassInfo:
    module: str
    qualname: str
    bases: list[str]  # dotted, as resolved through the module's imports
    owns: set[str] = field(default_factory=set)  # self._x assigned, methods, class attrs
    textual_side: bool = False


@dataclass
class Module:
    name: str
    path: Path
    tree: ast.Module
    imports: dict[str, str]  # local name -> dotted origin


def read_module(path: Path, base: Path) -> Module:
    name = module_name(path, base)
    tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    imports: dict[str, str] = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                if alias.asname:
                    imports[alias.asname] = alias.name
                else:
                    top = alias.name.split(".")[0]
                    imports[top] = top
        elif isinstance(node, ast.ImportFrom):
            origin = node.module or ""
            if node.level:  # relative: from the package, up level - 1
                up = package.split(".")[: len(package.split(".")) - (node.level - 1)]
                origin = ".".join([*up, origin] if origin else up)
            for alias in node.names:
                imports[alias.asname or alias.name] = f"{origin}.{alias.name}"
    return Module(name, path, tree, imports)


def dotted(node: ast.expr) -> str | None:
    if isinstance(node, ast.Subscript):  # Generic[T], DataTable[str]
        return dotted(node.value)
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute):
        inner = dotted(node.value)
        return f"{inner}.{node.attr}" if inner else None
    return None


def resolve(module: Module, name: str, local_classes: set[str]) -> str:
    head, _, rest = name.partition(".")
    if head in module.imports:
        origin = module.imports[head]
        return f"{origin}.{rest}" if rest else origin
    if head in local_classes:
        return f"{module.name}.{name}"
    return name


def self_names(node: ast.AST) -> set[str]:
    """Every ``self._x`` assigned (plainly, augmented or annotated) under ``node``."""
    out = set()
    for n in ast.walk(node):
        targets = []
        if isinstance(n, ast.Assign):
            targets = n.targets
        elif isinstance(n, (ast.AugAssign, ast.AnnAssign)):
            targets = [n.target]
        for t in targets:
            for sub in ast.walk(t):
                if (
                    isinstance(sub, ast.Attribute)
                    and isinstance(sub.value, ast.Name)
                    and sub.value.id == "self"
                    and is_private(sub.attr)
                ):
                    out.add(sub.attr)
    return out


def own_members(cls: ast.ClassDef) -> set[str]:
    """Methods and class attributes a class body defines, and the ``self._x`` it assigns."""
    out = self_names(cls)
    for stmt in cls.body:
        if isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef)) and is_private(stmt.name):
            out.add(stmt.name)
        elif isinstance(stmt, ast.Assign):
            out |= {t.id for t in stmt.targets if isinstance(t, ast.Name) and is_private(t.id)}
        elif (
            isinstance(stmt, ast.AnnAssign)
            and isinstance(stmt.target, ast.Name)
            and is_private(stmt.target.id)
        ):
            out.add(stmt.target.id)
    return out


@dataclass
class Program:
    modules: list[Module]
    classes: dict[str, ClassInfo]  # "module.qualname" -> info
    nodes: dict[int, str]  # id(ClassDef node) -> its "module.qualname"


@cache
def program(base: Path = REPO) -> Program:
    modules = [read_module(p, base) for p in sources(base)]
    classes: dict[str, ClassInfo] = {}
    nodes: dict[int, str] = {}
    for m in modules:
        local = {n.name for n in ast.walk(m.tree) if isinstance(n, ast.ClassDef)}

        def visit(node: ast.AST, prefix: str, m=m, local=local) -> None:
            for child in ast.iter_child_nodes(node):
                if isinstance(child, ast.ClassDef):
                    qual = f"{prefix}{child.name}"
                    bases = [resolve(m, d, local) for d in map(dotted, child.bases) if d]
                    key = f"{m.name}.{qual}"
                    classes[key] = ClassInfo(m.name, qual, bases, own_members(child))
                    nodes[id(child)] = key
                    visit(child, f"{qual}.")
                elif isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef)):
                    visit(child, f"{prefix}{child.name}.<locals>.")
                elif isinstance(child, (ast.stmt, ast.excepthandler, ast.match_case)):
                    visit(child, prefix)

        visit(m.tree, "")
    # the Textual side: derived from a Textual class, or a mixin of such a class of ours
    changed = True
    while changed:
        changed = False
        for info in classes.values():
            if info.textual_side:
                continue
            if any(is_textual(b) or (b in classes and classes[b].textual_side) for b in info.bases):
                info.textual_side = changed = True
        for info in classes.values():
            if info.textual_side:
                for b in info.bases:
                    if b in classes and not classes[b].textual_side:
                        classes[b].textual_side = changed = True
    return Program(modules, classes, nodes)


# -- Textual's private names --------------------------------------------------------------------


def load(dotted_name: str):
    module, _, attr = dotted_name.rpartition(".")
    return getattr(importlib.import_module(module), attr)


@cache
def _self_attributes(module: str) -> dict[str, frozenset[str]]:
    """Every ``self._x`` in each class of a Textual module, by class qualname."""
    try:
        tree = ast.parse(inspect.getsource(importlib.import_module(module)))
    except (OSError, TypeError):
        return {}
    out: dict[str, frozenset[str]] = {}

    def visit(body, prefix: str) -> None:
        for stmt in body:
            if isinstance(stmt, ast.ClassDef):
                qual = f"{prefix}{stmt.name}"
                out[qual] = frozenset(
                    n.attr
                    for n in ast.walk(stmt)
                    if isinstance(n, ast.Attribute)
                    and isinstance(n.value, ast.Name)
                    and n.value.id == "self"
                    and is_private(n.attr)
                )
                visit(stmt.body, f"{qual}.")

    visit(tree.body, "")
    return out


@cache
def privates_of(cls: type) -> frozenset[str]:
    """The private names of a Textual class: its MRO's members, every ``self._x`` in their
    source, and what a built one holds where building one is cheap."""
    names = {n for n in dir(cls) if is_private(n)}
    for klass in cls.__mro__:
        if is_textual(klass.__module__):
            names |= _self_attributes(klass.__module__).get(klass.__qualname__, frozenset())
    if cls in _cheap():
        try:
            names |= {n for n in dir(cls()) if is_private(n)}
        except Exception:  # noqa: BLE001 - only where building one is cheap and harmless
            pass
    return frozenset(names - NOT_TEXTUAL)


@cache
def _cheap() -> frozenset[type]:
    return frozenset(load(n) for n in CHEAP_TO_BUILD)


def textual_roots(info: ClassInfo, prog: Program, seen: frozenset[str] = frozenset()) -> set[str]:
    """The Textual classes a class of ours builds on: through its bases, and for a mixin,
    those of the classes it is mixed into."""
    key = f"{info.module}.{info.qualname}"
    if key in seen:
        return set()
    seen = seen | {key}
    roots = {b for b in info.bases if is_textual(b)}
    for b in info.bases:
        if b in prog.classes:
            roots |= textual_roots(prog.classes[b], prog, seen)
    for other in prog.classes.values():
        if key in other.bases and other.textual_side:
            roots |= textual_roots(other, prog, seen)
    return roots


def class_privates(info: ClassInfo, prog: Program) -> frozenset[str]:
    out: set[str] = set()
    for root in textual_roots(info, prog):
        cls = load(root)
        if isinstance(cls, type):
            out |= privates_of(cls)
    return frozenset(out)


@cache
def textual_private_names() -> frozenset[str]:
    """Every private name of every Textual class loaded once the classes we build on are: a
    ``obj._x`` may reach any of them (a FooterKey inside a Footer, a Static's content)."""
    import textual.widgets

    for name in (*BUILT_ON, *(f"textual.widgets.{w}" for w in textual.widgets.__all__)):
        load(name)
    for info in program(REPO).classes.values():
        for base in info.bases:
            if is_textual(base):
                load(base)
    names: set[str] = set()
    for module_name_, module in list(sys.modules.items()):
        if not is_textual(module_name_) or module is None:
            continue
        for value in list(vars(module).values()):
            if isinstance(value, type) and value.__module__ == module_name_:
                names |= privates_of(value)
    return frozenset(names)


# -- the checks ---------------------------------------------------------------------------------


def is_super_call(node: ast.expr | None) -> bool:
    return (
        isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "super"
    )


def problems(base: Path = REPO) -> list[str]:
    prog = program(base)
    everywhere = textual_private_names()
    # names a class of ours off the Textual side defines: obj._x may be one of those
    ours = set().union(*(c.owns for c in prog.classes.values() if not c.textual_side))
    found: list[str] = []

    for m in prog.modules:
        where = lambda node, m=m: f"{m.path.relative_to(base)}:{node.lineno}"  # noqa: E731

        for node in ast.walk(m.tree):  # (a) imports
            if isinstance(node, ast.ImportFrom) and node.module and not node.level:
                if is_textual(node.module):
                    if any(part.startswith("_") for part in node.module.split(".")):
                        found.append(f"{where(node)}: imports from private {node.module}")
                    found += [
                        f"{where(node)}: imports private {node.module}.{a.name}"
                        for a in node.names
                        if a.name.startswith("_")
                    ]
            elif isinstance(node, ast.Import):
                found += [
                    f"{where(node)}: imports private {a.name}"
                    for a in node.names
                    if is_textual(a.name) and any(p.startswith("_") for p in a.name.split("."))
                ]

        def check(owner: ast.AST, cls: ClassInfo | None, m=m, where=where) -> None:
            for node in ast.iter_child_nodes(owner):
                if isinstance(node, ast.ClassDef):
                    inner = prog.classes[prog.nodes[id(node)]]
                    if inner.textual_side:  # its methods and class attributes
                        found.extend(
                            f"{where(node)}: {inner.qualname} defines {n}, a name Textual uses"
                            for n in sorted(inner.owns & class_privates(inner, prog))
                            if not _self_assigned_only(node, n)
                        )
                    check(node, inner)
                    continue
                attr, receiver = _attribute(node)
                if attr is not None and is_private(attr):
                    found.extend(
                        _judge(node, attr, receiver, cls, m, prog, everywhere, ours, where)
                    )
                check(node, cls)

        check(m.tree, None)
    return sorted(set(found))


def _self_assigned_only(cls_node: ast.ClassDef, name: str) -> bool:
    """Reported as an access instead (with its line) when only ``self.name = ...``."""
    return name in self_names(cls_node) and not any(
        isinstance(s, (ast.FunctionDef, ast.AsyncFunctionDef))
        and s.name == name
        or isinstance(s, ast.Assign)
        and any(isinstance(t, ast.Name) and t.id == name for t in s.targets)
        or isinstance(s, ast.AnnAssign)
        and isinstance(s.target, ast.Name)
        and s.target.id == name
        for s in cls_node.body
    )


def _attribute(node: ast.AST) -> tuple[str | None, ast.expr | None]:
    if isinstance(node, ast.Attribute):
        return node.attr, node.value
    if (
        isinstance(node, ast.Call)
        and isinstance(node.func, ast.Name)
        and node.func.id in ("getattr", "setattr", "hasattr", "delattr")
        and len(node.args) >= 2
        and isinstance(node.args[1], ast.Constant)
        and isinstance(node.args[1].value, str)
    ):
        return node.args[1].value, node.args[0]
    return None, None


def _judge(node, attr, receiver, cls, m, prog, everywhere, ours, where) -> list[str]:
    if is_super_call(receiver):  # (b)
        if cls is not None and cls.textual_side:
            return [f"{where(node)}: super().{attr} in {cls.qualname}, a Textual subclass"]
        return []
    chain = dotted(receiver)
    head = chain.split(".")[0] if chain else None
    if head in m.imports:  # a module or class imported by name: its origin says whose
        if is_textual(resolve(m, chain, set())):
            return [f"{where(node)}: {chain}.{attr} is private to Textual"]
        return []
    if isinstance(receiver, ast.Name) and receiver.id in ("self", "cls") and cls is not None:
        if cls.textual_side:
            if attr in class_privates(cls, prog):
                return [
                    f"{where(node)}: self.{attr} in {cls.qualname} is Textual's own "
                    f"{attr} (a Textual subclass must not read or set it)"
                ]
            return []
        if attr in everywhere and attr not in cls.owns:
            return [f"{where(node)}: self.{attr} in {cls.qualname} is not its own: Textual's"]
        return []
    if attr in everywhere and attr not in ours:
        return [f"{where(node)}: {ast.unparse(receiver)}.{attr} is private to Textual"]
    return []


# -- the tests ----------------------------------------------------------------------------------


def test_the_program_uses_no_private_textual_name():
    found = problems()
    assert not found, "private Textual names in use:\n" + "\n".join(found)


def test_the_scan_sees_what_it_is_meant_to_catch(tmp_path):
    """The checks themselves, on code that breaks each rule once (and code that does not)."""
    private = textual_private_names()
    assert {"_driver", "_render_cell", "_on_click", "_disabled"} <= private
    assert "_not_a_textual_name_xyz" not in private
    bad = textwrap.dedent("""
        from textual.widgets._header import HeaderTitle
        from textual.widgets import DataTable, Static
        from textual.app import App
        from textual import _time

        class Table(DataTable):
            def _render_cell(self, *a):
                return super()._render_cell(*a)

            async def on_click(self, event):
                await super()._on_click(event)

        class Mine(Static):
            def __init__(self):
                super().__init__()
                self._size = 3

        class Helper:
            def ring(self, app):
                app._driver.write("x")
                self._closing

        class Fine:
            def __init__(self):
                self._data = {}

            def get(self):
                return self._data

        class Mixin:
            def quit_soon(self):
                return self._exit

        class Cockpit(Mixin, App):
            pass

        def build():
            class Nested(Static):
                def dim(self, key):
                    key._disabled = True
                    return getattr(self, "_content_width_cache")
            return Nested
    """)
    (tmp_path / "widgets").mkdir()
    (tmp_path / "widgets" / "probe.py").write_text(bad, encoding="utf-8")
    text = "\n".join(p.split(": ", 1)[1] for p in problems(tmp_path))
    assert "imports from private textual.widgets._header" in text
    assert "imports private textual._time" in text
    assert "Table defines _render_cell" in text
    assert "super()._render_cell in Table" in text
    assert "super()._on_click in Table" in text
    assert "self._size in Mine" in text
    assert "app._driver is private to Textual" in text
    assert "self._closing in Helper" in text
    assert "self._exit in Mixin" in text  # a mixin of an App is on the Textual side
    assert "key._disabled is private to Textual" in text
    assert "self._content_width_cache in build.<locals>.Nested" in text  # getattr too
    assert "Fine" not in text and "Cockpit" not in text

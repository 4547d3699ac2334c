"""The cockpit's thread workers hand their results back as messages (#24 §5): a worker
posts one of ``worker_results``' messages and the app's ``on_…`` method shows it, so no
worker runs code on the UI thread itself (``call_from_thread``) nor waits for it. Read with
``ast``: nothing of the cockpit is run."""

from __future__ import annotations

import ast
import inspect
import textwrap
from pathlib import Path

from textual.message import Message

from captain_tui.cockpit import worker_results
from captain_tui.cockpit.app import CaptainApp

COCKPIT = Path(__file__).resolve().parents[2] / "captain_tui" / "cockpit"
# demo.py's SIGHUP thread is no worker: it asks an app that may be gone to exit
NOT_A_WORKER = {"demo.py"}


def _calls(path: Path, name: str) -> list[int]:
    tree = ast.parse(path.read_text(encoding="utf-8"))
    return [
        node.lineno
        for node in ast.walk(tree)
        if isinstance(node, ast.Call)
        and isinstance(node.func, ast.Attribute)
        and node.func.attr == name
    ]


def test_no_cockpit_worker_calls_into_the_ui_thread():
    found = {
        f"{path.relative_to(COCKPIT)}:{line}"
        for path in COCKPIT.rglob("*.py")
        if path.name not in NOT_A_WORKER
        for line in _calls(path, "call_from_thread")
    }
    assert not found, f"post a worker_results message instead: {sorted(found)}"


def test_every_worker_result_has_its_handler_on_the_app():
    messages = [
        cls
        for _, cls in inspect.getmembers(worker_results, inspect.isclass)
        if issubclass(cls, Message) and cls.__module__ == worker_results.__name__
    ]
    assert len(messages) >= 5
    missing = [m.__name__ for m in messages if not callable(getattr(CaptainApp, m.handler_name, 0))]
    assert not missing, f"no on_… handler on CaptainApp for {missing}"
    parts = [c for c in CaptainApp.__mro__ if c.__module__.startswith("captain_tui.cockpit")]
    assert len(parts) >= 3, parts  # the app and its mixins (work, review)
    posted = {
        node.func.id
        for part in parts
        for node in ast.walk(ast.parse(textwrap.dedent(inspect.getsource(part))))
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Name)
    }
    unused = [m.__name__ for m in messages if m.__name__ not in posted]
    assert not unused, f"messages no worker posts: {unused}"

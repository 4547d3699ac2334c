"""The parts mixed into or owned by the cockpit say what they need of it (#24 §5): the Work
and review commands mixins reach, on ``self``, only what their Protocols (``WorkHost``,
``ReviewHost``) declare, the alert batch only what ``AlertHost`` declares on its host, and
``CaptainApp`` has every one of those members. Read with ``ast`` and checked on a real app
built over a real home (not run)."""

from __future__ import annotations

import ast
import inspect
import textwrap

import pytest

from captain_tui.cockpit import alert_batch, review_actions, work_actions
from captain_tui.cockpit.app import CaptainApp
from state.home import Home

pytestmark = pytest.mark.usefixtures("private_config")  # support/cockpit_env.py


def _declared(protocol: type) -> set[str]:
    """A Protocol's members: its annotated attributes, its properties and its methods."""
    methods = {
        n for n, v in vars(protocol).items() if inspect.isfunction(v) or isinstance(v, property)
    }
    return set(protocol.__annotations__) | methods


def _reached(source: str, receiver: ast.expr) -> set[str]:
    """Every attribute read or called on ``receiver`` (``self``, or ``self.host``)."""
    target = ast.dump(receiver)
    return {
        node.attr
        for node in ast.walk(ast.parse(textwrap.dedent(source)))
        if isinstance(node, ast.Attribute) and ast.dump(node.value) == target
    }


SELF = ast.Name(id="self", ctx=ast.Load())


def test_the_work_commands_reach_only_what_their_protocol_declares():
    reached = _reached(inspect.getsource(work_actions.WorkCommands), SELF)
    assert reached, "the mixin reaches nothing: the ast walk is broken"
    undeclared = reached - _declared(work_actions.WorkHost)
    assert not undeclared, f"WorkCommands uses {sorted(undeclared)}; declare them in WorkHost"


def test_the_review_commands_reach_only_what_their_protocol_declares():
    reached = _reached(inspect.getsource(review_actions.ReviewCommands), SELF)
    assert {"home", "post_message", "_reviews"} <= reached
    undeclared = reached - _declared(review_actions.ReviewHost)
    assert not undeclared, f"ReviewCommands uses {sorted(undeclared)}; declare them in ReviewHost"


def test_the_alert_batch_reaches_only_what_its_protocol_declares():
    host = ast.Attribute(value=SELF, attr="host", ctx=ast.Load())
    reached = _reached(inspect.getsource(alert_batch.AlertBatch), host)
    assert {"notify", "emit_to_terminal", "set_timer", "settings"} <= reached
    undeclared = reached - _declared(alert_batch.AlertHost)
    assert not undeclared, f"AlertBatch uses {sorted(undeclared)}; declare them in AlertHost"


def test_the_cockpit_has_everything_its_parts_declare(home: Home):
    app = CaptainApp(home, run_doorbell=False)  # built, not run
    for protocol in (work_actions.WorkHost, review_actions.ReviewHost, alert_batch.AlertHost):
        missing = sorted(n for n in _declared(protocol) if not hasattr(app, n))
        assert not missing, f"CaptainApp lacks {protocol.__name__}'s {missing}"

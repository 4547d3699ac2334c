"""The API serves each vocabulary as the code defines it (docs/api.md's fields): a work
item's state and source, an event's type, a cancel's outcome, what resolve settles an item
as, a token's role. Each is a ``Literal`` written once in ``state``; the OpenAPI document
the server publishes (what schemathesis holds every response to) lists exactly its words,
in its order, so a word added to the code is served and checked, and none is served that
the code does not have.
"""

from __future__ import annotations

from typing import get_args

import pytest

from captain_tui.api import endpoints
from state.home import Home
from state.work import ledger_records, tokens


def _words(field: dict) -> list:
    """The enum of a field's schema, also where the field may be null (``anyOf``)."""
    if "enum" in field:
        return field["enum"]
    (enum,) = [f["enum"] for f in field.get("anyOf", ()) if "enum" in f]
    return enum


@pytest.fixture(scope="module")
def document(tmp_path_factory) -> dict:
    home = Home(tmp_path_factory.mktemp("vocab") / "home")
    return endpoints._routes(home).openapi()


SERVED = [
    ("WorkItem", "state", ledger_records.WorkState),
    ("WorkItem", "source", ledger_records.Source),
    ("Event", "state", ledger_records.WorkState),
    ("Event", "source", ledger_records.Source),
    ("Event", "type", ledger_records.EventType),
    ("Resolution", "to", ledger_records.WorkState),
    ("CancelOut", "state", ledger_records.WorkState),
    ("CancelOut", "outcome", ledger_records.CancelOutcome),
    ("ResolveBody", "to", ledger_records.Terminal),
    ("Workspace", "role", tokens.Role),
]


@pytest.mark.parametrize(
    ("model", "field", "vocabulary"), SERVED, ids=[f"{m}.{f}" for m, f, _ in SERVED]
)
def test_the_api_serves_each_vocabulary_as_the_code_defines_it(document, model, field, vocabulary):
    served = _words(document["components"]["schemas"][model]["properties"][field])
    assert served == list(get_args(vocabulary))


def test_the_lists_the_refusals_name_are_the_vocabularies():
    """``state {x!r} is not one of ...`` and the like list the same words, in the same order."""
    assert ledger_records.WORK_STATES == get_args(ledger_records.WorkState)
    assert ledger_records.SOURCES == get_args(ledger_records.Source)
    assert ledger_records.EVENT_TYPES == get_args(ledger_records.EventType)
    assert ledger_records.CANCEL_OUTCOMES == get_args(ledger_records.CancelOutcome)
    assert ledger_records.TERMINAL == frozenset(get_args(ledger_records.Terminal))
    assert tokens.ROLES == get_args(tokens.Role)

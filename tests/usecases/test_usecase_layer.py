"""The use cases are one layer (``captain_tui.usecases``): each takes the caller's
``Context`` and refuses a crew itself, before anything is read or written — no surface
checks on its behalf — and status, the read model, shows a crew only itself."""

from __future__ import annotations

import errno
import inspect
from pathlib import Path

import pytest

from captain_tui import usecases
from state.crew.guards import CAPTAIN, Context
from state.errors import CaptainError
from state.home import Home
from state.records import PaneLocator

CREW = Context("crew", "Ada", "inc_x", "asg_x")
# helpers; change_summary: the shape for wait's done and a status row, whose callers have
# already decided who may see that crew
NOT_USE_CASES = {"actor", "change_summary", "dismissal_words", "store_error", "workspace_words"}


def _use_cases():
    exported = {name: getattr(usecases, name) for name in usecases.__all__}  # loaded lazily
    return {
        name: fn
        for name, fn in exported.items()
        if inspect.isfunction(fn) and name not in NOT_USE_CASES
    }


def test_every_use_case_takes_the_callers_context():
    missing = [
        name for name, fn in _use_cases().items() if "ctx" not in inspect.signature(fn).parameters
    ]
    assert missing == []


CALLS = {
    "recruit": lambda h: usecases.recruit(
        h, usecases.Recruitment("Ada", "t", cwd="/nowhere"), ctx=CREW
    ),
    "assign": lambda h: usecases.assign(h, "Ada", "t", handoff="asg_x", ctx=CREW),
    "tell": lambda h: usecases.tell(h, "Ada", "hi", assignment_id="asg_x", ctx=CREW),
    "tell_with_budget": lambda h: usecases.tell_with_budget(
        h, "Ada", None, assignment_id="asg_x", ctx=CREW, budget_usd=5
    ),
    "answer": lambda h: usecases.answer(h, "Ada", "q_x", "yes", assignment_id="asg_x", ctx=CREW),
    "acknowledge": lambda h: usecases.acknowledge(h, "Ada", "d_x", ctx=CREW),
    "dismiss": lambda h: usecases.dismiss(h, "Ada", ctx=CREW),
    "ring": lambda h: usecases.ring(h, "Ada", ctx=CREW),
    "jump": lambda h: usecases.jump(
        PaneLocator(socket="/nowhere", session="s", window_id="@1", pane_id="%1"), env={}, ctx=CREW
    ),
    "cancel": lambda h: usecases.cancel(h, "wrk_x", actor="a", ctx=CREW),
    "change": lambda h: usecases.change(h, "Ada", ctx=CREW),
    "diff_bytes": lambda h: usecases.diff_bytes(None, ctx=CREW),
    "comment": lambda h: usecases.comment(h, "Ada", "src/a.py", 1, ["+a"], "why?", ctx=CREW),
    "replay": lambda h: usecases.replay(h, "wrk_x", actor="a", reason="again", ctx=CREW),
    "resolve": lambda h: usecases.resolve(
        h, "wrk_x", generation=1, to="failed", reason="checked", actor="a", ctx=CREW
    ),
    "land": lambda h: usecases.land(h, "Ada", assignment_id="asg_x", ctx=CREW),
    "landing_queue": lambda h: usecases.landing_queue(h, ctx=CREW),
    "pending": lambda h: usecases.pending(h, ctx=CREW),
    "approve": lambda h: usecases.approve(h, "Ada", "apr_x", "allow", ctx=CREW),
}


def test_every_changing_use_case_is_in_the_table():
    assert set(CALLS) == set(_use_cases()) - {"status"}


@pytest.mark.parametrize("name", sorted(CALLS))
def test_a_crew_is_refused_by_the_use_case_itself_before_anything_is_written(
    name: str, tmp_path: Path
):
    home = Home(tmp_path / "home")
    before = sorted(home.root.rglob("*"))
    with pytest.raises(CaptainError) as refused:
        CALLS[name](home)
    assert refused.value.code == "crew_forbidden", refused.value
    assert sorted(home.root.rglob("*")) == before  # refused before anything was written


def test_status_shows_a_crew_only_itself_and_the_captain_everyone(tmp_path: Path):
    home = Home(tmp_path / "home")
    ada = usecases.recruit(
        home, usecases.Recruitment("Ada", "one", cwd=str(tmp_path), launch=False), ctx=CAPTAIN
    )
    usecases.recruit(
        home, usecases.Recruitment("Bo", "two", cwd=str(tmp_path), launch=False), ctx=CAPTAIN
    )
    everyone = usecases.status(home, ctx=CAPTAIN)
    assert [r["name"] for r in everyone.crew] == ["Ada", "Bo"]
    assert everyone.problem is None and everyone.home_exists
    assert all(
        r["doorbell"] == {"gate": None, "held_since": None, "head": None} for r in everyone.crew
    )
    mine = usecases.status(home, ctx=Context.from_env(ada.env))
    assert [r["name"] for r in mine.crew] == ["Ada"]


def test_status_of_a_home_not_made_yet_creates_nothing(tmp_path: Path):
    home = Home(tmp_path / "home", read_only=True)  # as the CLI's read-only commands open it
    s = usecases.status(home, ctx=CAPTAIN)
    assert (s.home_exists, s.crew, s.workspace_id) == (False, [], None)
    assert not home.root.exists()


def test_an_os_failure_is_one_store_error_with_what_failed_and_where():
    err = usecases.store_error(OSError(errno.ENOSPC, "No space left on device", "/h/x.json"))
    assert (err.code, err.message) == ("store_error", "No space left on device (/h/x.json).")
    assert usecases.store_error(OSError("bare")).message == "bare (home)."


class _D:
    def __init__(self, bounced, stopped):
        self.bounced, self.pane_stopped, self.fate = bounced, stopped, None


def test_one_dismissal_sentence_each_surface_naming_its_place():
    assert (
        usecases.dismissal_words(_D((1, 2), True))
        == "; 2 unread messages bounced; its pane is closed"
    )
    assert (
        usecases.dismissal_words(_D((), False), place="window")
        == "; its window could NOT be confirmed closed"
    )
    assert usecases.dismissal_words(_D((), None)) == ""

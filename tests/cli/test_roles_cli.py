"""Roles are not only an environment variable: the real CLI (``main``, in-process) run with
exactly the environment a crew's process would have.

A process with any crew identity (``CAPTAIN_CREW``, ``CAPTAIN_INCARNATION`` or
``CAPTAIN_ASSIGNMENT``) is a crew whatever ``CAPTAIN_ROLE`` says; a crew's views of the home
(``status``, ``work list``, ``work show``) show its own records only, and only once its
name and incarnation hold, and no refusal names another crew's incarnation; webhook
deliveries are the captain's alone.
"""

from __future__ import annotations

import contextlib
import io
import json
import os
from types import SimpleNamespace

import pytest

from captain_tui.cli.main import main
from state.crew import protocol
from state.errors import CODES


@pytest.fixture
def run(home, project, monkeypatch):
    """``captain ARGS --json`` in-process with ``env`` as the whole CAPTAIN_* environment
    (none: the captain)."""
    monkeypatch.chdir(project)

    def call(*args: str, env: dict[str, str] | None = None):
        with monkeypatch.context() as m:
            for k in [
                k for k in os.environ if k.startswith("CAPTAIN_") and k != "CAPTAIN_TMUX_SOCKET"
            ]:
                m.delenv(k)
            m.setenv("CAPTAIN_HOME", str(home.root))
            for k, v in (env or {}).items():
                m.setenv(k, v)
            out, err = io.StringIO(), io.StringIO()
            with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
                code = main(list(args))
        assert "Traceback" not in err.getvalue()
        return SimpleNamespace(code=code, out=out.getvalue(), err=err.getvalue())

    call.many = lambda *jobs: [call(*argv, env=env) for argv, env in jobs]
    return call


def ok_json(result) -> dict:
    assert result.code == 0, (result.out, result.err)
    payload = json.loads(result.out)
    assert payload["ok"] is True
    return payload


def refused_json(result, code: str) -> dict:
    assert result.code == 1, (result.out, result.err)
    error = json.loads(result.out)["error"]
    assert error["code"] == code and code in CODES, error
    assert error["message"].strip()
    return error


@pytest.fixture
def recruit(home, project):
    def hire(name: str, owns: str) -> dict:
        r = protocol.recruit(home, name, "T", owns=[owns], allow=["edit"], cwd=str(project))
        return {"env": r.env, "incarnation_id": r.incarnation_id, "assignment_id": r.assignment_id}

    return hire


def test_a_crew_that_unsets_or_renames_its_role_is_still_a_crew(run, recruit):
    jack = recruit("Jack", "src/a")
    gibbs = recruit("Gibbs", "src/b")
    envs = []
    for role in ("", "captain"):
        envs += [
            {**jack["env"], "CAPTAIN_ROLE": role},
            # one identity variable is enough: the rest of the crew's env removed
            {"CAPTAIN_ROLE": role, "CAPTAIN_ASSIGNMENT": jack["assignment_id"]},
        ]
    jobs = []
    for env in envs:
        jobs += [
            (("tell", "Gibbs", "from Jack", "--assignment", gibbs["assignment_id"], "--json"), env),
            (("dismiss", "Gibbs", "--json"), env),
            (("deliveries", "purge", "--json"), env),
        ]
    for result in run.many(*jobs):
        assert "crew" in refused_json(result, "crew_forbidden")["message"]
    row = [r for r in ok_json(run("status", "--json"))["crew"] if r["name"] == "Gibbs"][0]
    assert row["state"] == "assigned" and row["unread"] == 1  # nothing reached Gibbs
    # with the role emptied, Jack's status still shows Jack alone
    rows = ok_json(run("status", "--json", env=envs[0]))["crew"]
    assert [r["name"] for r in rows] == ["Jack"]


def test_a_crew_sees_its_own_work_items_only(run, recruit):
    jack = recruit("Jack", "src/a")
    gibbs = recruit("Gibbs", "src/b")
    captain = ok_json(run("work", "list", "--json"))["items"]
    mine = [i["work_id"] for i in captain if i["crew"] == "Jack"]
    theirs = [i["work_id"] for i in captain if i["crew"] == "Gibbs"]
    assert len(mine) == len(theirs) == 1
    listed, limited, own, other = run.many(
        (("work", "list", "--json"), jack["env"]),
        (("work", "list", "--limit", "1", "--json"), jack["env"]),
        (("work", "show", mine[0], "--json"), jack["env"]),
        (("work", "show", theirs[0], "--json"), jack["env"]),
    )
    assert [i["work_id"] for i in ok_json(listed)["items"]] == mine
    assert [i["work_id"] for i in ok_json(limited)["items"]] == mine  # the page is filled
    assert ok_json(own)["item"]["crew"] == "Jack"
    error = refused_json(other, "crew_forbidden")
    assert theirs[0] in error["message"] and gibbs["incarnation_id"] not in other.out
    human = run("work", "list", env=jack["env"]).out
    assert "Gibbs" not in human and theirs[0] not in human


def test_a_crew_may_not_list_or_show_webhook_deliveries(run, recruit):
    jack = recruit("Jack", "src/a")
    listed, shown = run.many(
        (("deliveries", "list", "--json"), jack["env"]),
        (("deliveries", "show", "whd_0", "--json"), jack["env"]),
    )
    refused_json(listed, "crew_forbidden")
    refused_json(shown, "crew_forbidden")
    ok_json(run("deliveries", "list", "--json"))  # the captain's


def test_a_crew_name_typed_into_the_env_shows_nothing_of_that_crew(run, recruit):
    """Jack naming himself Gibbs, with his own incarnation (or none), sees neither Gibbs's
    status row (its incarnation ID is all it would need to act as Gibbs) nor its items."""
    jack = recruit("Jack", "src/a")
    gibbs = recruit("Gibbs", "src/b")
    posing = {**jack["env"], "CAPTAIN_CREW": "Gibbs"}
    nameless = {k: v for k, v in posing.items() if k != "CAPTAIN_INCARNATION"}
    results = run.many(
        (("status", "--json"), posing),
        (("work", "list", "--json"), posing),
        (("status", "--json"), nameless),
        # nor does a refusal name the incarnation it wanted
        (("check", "Gibbs", "edit", "src/b/x.py", "--json"), posing),
        (("inbox", "Gibbs", "--json"), posing),
    )
    for result in results[:2] + results[3:]:
        refused_json(result, "stale_incarnation")
    refused_json(results[2], "missing_context")
    for result in results:
        assert gibbs["incarnation_id"] not in result.out + result.err


def test_the_role_is_decided_the_same_in_a_real_process(cli, recruit):
    """One real ``python -m captain_tui`` with the role emptied: still a crew."""
    jack = recruit("Jack", "src/a")
    result = cli("dismiss", "Jack", "--json", env={**jack["env"], "CAPTAIN_ROLE": ""})
    refused_json(result, "crew_forbidden")
    assert "Traceback" not in result.err


def test_a_crew_may_not_start_a_cockpit_not_even_the_demo(run, recruit):
    """The demo's cockpit is on a throwaway home, but it is still a captain's cockpit
    (it recruits, answers, dismisses): a crew process is refused before anything starts."""
    jack = recruit("Jack", "src/a")
    result = run("demo", "--json", env=jack["env"])
    assert "demo" in refused_json(result, "crew_forbidden")["message"]

"""Every protocol rule, through the functions in ``state/`` (the CLI path is tested elsewhere).

The captain calls with the default context; a crew process is played by
``Context.from_env(recruit.env)``, exactly the environment recruiting hands the crew.
"""

from __future__ import annotations

import pytest
from conftest import crew_ctx
from support.crew import hire, refused

from state.crew import crewlog, mailbox, notify, protocol
from state.crew.guards import Context
from state.home import Home
from state.inputs import MAX_TEXT_BYTES
from state.records import SUMMARY_MAX, Message

# -- helpers --------------------------------------------------------------------------------


def read_all(home: Home, r) -> list[Message]:
    """The crew reads its queued mail (inbox), as the crew."""
    return protocol.inbox(home, r.crew, deliver=lambda batch: None, ctx=crew_ctx(r))


def finish(home: Home, r, report: str = "changed it; checks pass"):
    read_all(home, r)
    return protocol.done(home, r.crew, report, ctx=crew_ctx(r))


def ack_everything(home: Home, name: str) -> list:
    """Drain and acknowledge every notification of one crew, as a captain would."""
    seen = []
    n = notify.wait(home, name, timeout=0)
    while n is not None:
        seen.append(n)
        n = notify.wait(home, name, timeout=0, ack=n.delivery_id)
    return seen


def key(name: str) -> str:
    return name.lower()


def mail_of(home: Home, name: str) -> list[Message]:
    return mailbox.messages(home, key(name))


# -- recruit: names -------------------------------------------------------------------------


@pytest.mark.parametrize("name", ["J", "Jack", "a" * 32, "Gibbs_2", "x-ray", "Q9"])
def test_recruit_accepts_valid_names(home, project, name):
    r = hire(home, project, name)
    assert r.crew == name
    assert [row["name"] for row in protocol.crew_status(home)] == [name]


@pytest.mark.parametrize(
    "name",
    [
        "",
        "../x",
        "a/b",
        "a b",
        "1abc",
        "_abc",
        "-abc",
        "a" * 33,
        "ab\x00c",
        "ab\ncd",
        "abc\n",
        "tab\there",
        "J\u00e4ck",
        "\u0416ack",
        "Jack\u200b",
        ".hidden",
        "a.b",
    ],
)
def test_recruit_refuses_invalid_names(home, project, name):
    refused("invalid_name", hire, home, project, name)
    assert protocol.crew_status(home, include_dismissed=True) == []
    assert home.crew_keys() == []


def test_crew_names_are_unique_case_insensitively(home, project):
    hire(home, project, "Jack")
    err = refused("crew_exists", hire, home, project, "JACK", owns=["other"])
    assert "Jack" in err.message
    refused("crew_exists", hire, home, project, "jack")
    assert [row["name"] for row in protocol.crew_status(home)] == ["Jack"]


def test_any_case_of_the_name_addresses_the_same_crew(home, project):
    r = hire(home, project, "Jack")
    m = protocol.tell(home, "JACK", "hello", assignment_id=r.assignment_id)
    assert m.crew == "Jack"
    assert [x.message_id for x in mail_of(home, "jack")][-1] == m.message_id


# -- recruit: IDs, first mail, grants -------------------------------------------------------


def test_recruit_gives_separate_distinct_ids_and_a_crew_env(home, project):
    a = hire(home, project, "Jack")
    b = hire(home, project, "Gibbs")
    ids = [
        a.incarnation_id,
        a.assignment_id,
        a.message_id,
        b.incarnation_id,
        b.assignment_id,
        b.message_id,
    ]
    assert len(set(ids)) == 6
    assert a.incarnation_id.startswith("inc_") and a.assignment_id.startswith("asg_")
    assert a.message_id.startswith("msg_")
    assert a.env == {
        "CAPTAIN_HOME": str(home.root),
        "CAPTAIN_ROLE": "crew",
        "CAPTAIN_CREW": "Jack",
        "CAPTAIN_INCARNATION": a.incarnation_id,
        "CAPTAIN_ASSIGNMENT": a.assignment_id,
    }


def test_the_task_is_the_first_mail_of_kind_assignment(home, project):
    r = hire(home, project, task="Rewrite the docs site content")
    mail = mail_of(home, "Jack")
    assert len(mail) == 1
    first = mail[0]
    assert (first.message_id, first.kind, first.text) == (
        r.message_id,
        "assignment",
        "Rewrite the docs site content",
    )
    assert (first.assignment_id, first.incarnation_id) == (r.assignment_id, r.incarnation_id)
    assert (home.mail_dir("jack") / f"{r.message_id}.json").is_file()


def test_recruit_records_owns_and_allow_and_collapses_duplicate_actions(home, project):
    hire(
        home,
        project,
        owns=["src/content", "src/app/docs", "src/content"],
        allow=["edit", "build", "edit", "build", "read"],
    )
    [row] = protocol.crew_status(home)
    assert row["owns"] == [str(project / "src/content"), str(project / "src/app/docs")]
    assert row["allow"] == ["edit", "build", "read"]


@pytest.mark.parametrize("bad", ["write", "EDIT", "", "edit ", "rm"])
def test_recruit_refuses_unknown_actions(home, project, bad):
    err = refused("unknown_action", hire, home, project, allow=["edit", bad])
    assert repr(bad) in err.message
    assert protocol.crew_status(home, include_dismissed=True) == []


def test_recruit_refuses_an_empty_task(home, project):
    refused("invalid_text", hire, home, project, task="  \n ")


# -- recruit: ownership ---------------------------------------------------------------------


@pytest.mark.parametrize(
    "mine,theirs",
    [
        ("src/app", "src/app"),  # equal
        ("src/app/docs", "src/app"),  # inside theirs
        ("src", "src/app"),  # theirs inside mine
        ("src/../src/app", "src/app"),  # normalised before comparing
        ("./src/app/", "src/app"),
        ("src/app", "src/x/../app/y"),
    ],
)
def test_overlapping_active_ownership_is_refused(home, project, mine, theirs):
    hire(home, project, "Jack", owns=[theirs])
    err = refused("ownership_overlap", hire, home, project, "Gibbs", owns=["other", mine])
    assert "Jack" in err.message
    assert err.extra.get("crew") == "Jack"
    assert [row["name"] for row in protocol.crew_status(home)] == ["Jack"]


def test_absolute_path_overlaps_the_same_relative_one(home, project):
    hire(home, project, "Jack", owns=["src/app"])
    refused(
        "ownership_overlap",
        hire,
        home,
        project,
        "Gibbs",
        owns=[str(project / "src" / "app" / "x.py")],
    )


def test_ownership_is_compared_component_wise(home, project):
    hire(home, project, "Jack", owns=["src/app"])
    hire(home, project, "Gibbs", owns=["src/application", "src/ap", "src/app2"])
    assert {row["name"] for row in protocol.crew_status(home)} == {"Jack", "Gibbs"}


def test_relative_owns_resolve_against_each_crews_project_dir(home, tmp_path):
    one, two = tmp_path / "one", tmp_path / "two"
    one.mkdir(), two.mkdir()
    protocol.recruit(home, "Jack", "t", owns=["src"], cwd=str(one))
    protocol.recruit(home, "Gibbs", "t", owns=["src"], cwd=str(two))  # different dirs
    refused(
        "ownership_overlap",
        protocol.recruit,
        home,
        "Bill",
        "t",
        owns=["../one/src/a"],
        cwd=str(two),
    )


def test_a_done_crew_no_longer_blocks_ownership(home, project):
    jack = hire(home, project, "Jack", owns=["src/app"], allow=["edit"])
    refused("ownership_overlap", hire, home, project, "Gibbs", owns=["src/app"])
    finish(home, jack)
    gibbs = hire(home, project, "Gibbs", owns=["src/app"])
    assert gibbs.crew == "Gibbs"


def test_a_dismissed_crew_no_longer_blocks_ownership(home, project):
    hire(home, project, "Jack", owns=["src/app"])
    protocol.dismiss(home, "Jack")
    assert hire(home, project, "Gibbs", owns=["src/app"]).crew == "Gibbs"


def test_invalid_owned_path_is_refused(home, project):
    refused("invalid_path", hire, home, project, owns=["src\x00x"])
    refused("invalid_path", hire, home, project, owns=[""])


# -- recruit: a dismissed name --------------------------------------------------------------


def test_dismissed_name_needs_the_handoff_of_its_last_assignment(home, project):
    old = hire(home, project, "Jack", owns=["src/app"], allow=["edit", "test"])
    read_all(home, old)
    protocol.dismiss(home, "Jack")

    err = refused("crew_dismissed", hire, home, project, "Jack", owns=["x"])
    assert old.assignment_id in err.message
    # what a form offers instead of asking for the flag: the handoff, whose and what task
    assert (err.extra["handoff"], err.extra["crew"]) == (old.assignment_id, "Jack")
    assert err.extra["task"] == crewlog.load(home, "jack")[0].assignment.task
    err = refused("handoff_mismatch", hire, home, project, "Jack", handoff="asg_WRONG")
    assert old.assignment_id in err.message
    refused("handoff_mismatch", hire, home, project, "Jack", handoff=old.assignment_id.lower())

    new = hire(home, project, "jack", task="again", handoff=old.assignment_id)
    assert new.incarnation_id != old.incarnation_id
    assert new.assignment_id != old.assignment_id
    [row] = protocol.crew_status(home)
    assert row["owns"] == [str(project / "src/app")]  # inherited
    assert row["allow"] == ["edit", "test"]
    assert protocol.check(home, "Jack", "edit", ["src/app/a.py"], ctx=crew_ctx(new)).allowed


def test_redo_of_dismissed_name_with_explicit_grants_replaces_them(home, project):
    old = hire(home, project, "Jack", owns=["src/app"], allow=["edit"])
    read_all(home, old)
    protocol.dismiss(home, "Jack")
    hire(home, project, "Jack", handoff=old.assignment_id, owns=["docs"], allow=["read"])
    [row] = protocol.crew_status(home)
    assert (row["owns"], row["allow"]) == ([str(project / "docs")], ["read"])


def test_redo_of_dismissed_name_waits_for_bounced_notifications_to_be_acked(home, project):
    old = hire(home, project, "Jack")  # task mail is unread ...
    protocol.tell(home, "Jack", "and this", assignment_id=old.assignment_id)
    bounced = protocol.dismiss(home, "Jack")  # ... so both bounce
    assert len(bounced) == 2

    err = refused("unacknowledged", hire, home, project, "Jack", handoff=old.assignment_id)
    assert err.extra["delivery_id"] in {b.delivery_id for b in bounced}
    assert err.extra["status"] == "bounced"

    seen = ack_everything(home, "Jack")
    assert {n.delivery_id for n in seen} == {b.delivery_id for b in bounced}
    assert hire(home, project, "Jack", handoff=old.assignment_id).crew == "Jack"


def test_handoff_for_a_never_seen_name_is_a_mismatch(home, project):
    other = hire(home, project, "Gibbs")
    refused("handoff_mismatch", hire, home, project, "Jack", handoff=other.assignment_id)
    assert "jack" not in home.crew_keys()


def test_a_crew_process_may_not_recruit(home, project):
    r = hire(home, project, "Jack")
    refused("crew_forbidden", hire, home, project, "Gibbs", ctx=crew_ctx(r))
    assert "gibbs" not in home.crew_keys()


# -- check ----------------------------------------------------------------------------------


def test_check_grants_an_allowed_action_inside_owned_paths(home, project):
    r = hire(home, project, owns=["src/app"], allow=["edit"])
    ctx = crew_ctx(r)
    for path in ["src/app/x.py", "src/app", "./src/app/deep/er.py", str(project / "src/app/y.py")]:
        v = protocol.check(home, "Jack", "edit", [path], ctx=ctx)
        assert v.allowed is True, path
    v = protocol.check(home, "Jack", "edit", ["src/app/a.py", "src/app/b.py"], ctx=ctx)
    assert v.allowed and r.assignment_id in v.reason


@pytest.mark.parametrize(
    "path", ["src/application/x.py", "src/other.py", "src/app/../../x", "/etc/passwd", "src"]
)
def test_check_denies_paths_outside_owned_ones(home, project, path):
    r = hire(home, project, owns=["src/app"], allow=["edit"])
    v = protocol.check(home, "Jack", "edit", ["src/app/ok.py", path], ctx=crew_ctx(r))
    assert v.allowed is False
    assert path in v.reason


@pytest.mark.parametrize("action", ["edit", "format", "delete", "commit", "version"])
def test_path_scoped_actions_check_paths(home, project, action):
    r = hire(home, project, owns=["src/app"], allow=[action])
    ctx = crew_ctx(r)
    assert protocol.check(home, "Jack", action, ["src/app/a"], ctx=ctx).allowed
    assert not protocol.check(home, "Jack", action, ["docs/a"], ctx=ctx).allowed


@pytest.mark.parametrize("action", ["read", "search", "test", "build"])
def test_unscoped_actions_do_not_check_paths(home, project, action):
    r = hire(home, project, owns=["src/app"], allow=[action])
    assert protocol.check(home, "Jack", action, ["/anywhere/at/all"], ctx=crew_ctx(r)).allowed


def test_check_denies_an_action_not_granted(home, project):
    r = hire(home, project, owns=["src/app"], allow=["read", "edit"])
    v = protocol.check(home, "Jack", "delete", ["src/app/x"], ctx=crew_ctx(r))
    assert v.allowed is False
    assert "delete" in v.reason and "read, edit" in v.reason


def test_check_refuses_an_unknown_action(home, project):
    r = hire(home, project, allow=["edit"])
    refused("unknown_action", protocol.check, home, "Jack", "rm", ["x"], ctx=crew_ctx(r))


def test_check_grants_nothing_after_done(home, project):
    r = hire(home, project, owns=["src/app"], allow=["read", "edit"])
    finish(home, r)
    for action in ["read", "edit"]:
        v = protocol.check(home, "Jack", action, ["src/app/x"], ctx=crew_ctx(r))
        assert v.allowed is False
        assert "done" in v.reason


def test_check_enforces_crew_context(home, project):
    jack = hire(home, project, "Jack", allow=["read"])
    gibbs = hire(home, project, "Gibbs", allow=["read"])
    refused("crew_forbidden", protocol.check, home, "Jack", "read", [], ctx=crew_ctx(gibbs))
    err = refused(
        "stale_assignment",
        protocol.check,
        home,
        "Jack",
        "read",
        [],
        ctx=Context("crew", "Jack", jack.incarnation_id, "asg_OLD"),
    )
    assert jack.assignment_id in err.message
    err = refused("missing_context", protocol.check, home, "Jack", "read", [])  # captain, no id
    assert jack.assignment_id in err.message
    assert protocol.check(home, "Jack", "read", [], assignment_id=jack.assignment_id).allowed


# -- crew context ---------------------------------------------------------------------------


def test_stale_incarnation_is_refused_naming_the_live_assignment(home, project):
    r = hire(home, project)
    ctx = Context("crew", "Jack", "inc_NOTTHEONE", r.assignment_id)
    err = refused("stale_incarnation", protocol.ask, home, "Jack", "q?", ctx=ctx)
    assert r.assignment_id in err.message


def test_old_incarnation_after_redo_is_stale(home, project):
    old = hire(home, project)
    read_all(home, old)
    protocol.dismiss(home, "Jack")
    new = hire(home, project, handoff=old.assignment_id)
    err = refused("stale_incarnation", protocol.ask, home, "Jack", "q?", ctx=crew_ctx(old))
    assert new.assignment_id in err.message
    refused(
        "stale_incarnation", protocol.inbox, home, "Jack", deliver=lambda b: None, ctx=crew_ctx(old)
    )
    refused("stale_incarnation", protocol.done, home, "Jack", "r", ctx=crew_ctx(old))


def test_stale_assignment_is_refused_naming_the_live_one(home, project):
    r = hire(home, project)
    ctx = Context("crew", "Jack", r.incarnation_id, "asg_SOMETHINGELSE")
    err = refused("stale_assignment", protocol.ask, home, "Jack", "q?", ctx=ctx)
    assert r.assignment_id in err.message and "asg_SOMETHINGELSE" in err.message
    # IDs match exactly: another case of the live ID is not it
    ctx = Context("crew", "Jack", r.incarnation_id, r.assignment_id.lower())
    refused("stale_assignment", protocol.ask, home, "Jack", "q?", ctx=ctx)


@pytest.mark.parametrize("drop", ["CAPTAIN_ASSIGNMENT", "CAPTAIN_INCARNATION", "CAPTAIN_CREW"])
def test_missing_crew_context_is_refused_naming_the_live_assignment(home, project, drop):
    r = hire(home, project)
    env = {k: v for k, v in r.env.items() if k != drop}
    err = refused("missing_context", protocol.ask, home, "Jack", "q?", ctx=Context.from_env(env))
    assert r.assignment_id in err.message
    assert mailbox.notifications(home, "jack") == []


def test_crew_may_not_act_for_another_crew(home, project):
    jack = hire(home, project, "Jack")
    hire(home, project, "Gibbs")
    refused("crew_forbidden", protocol.ask, home, "Gibbs", "q?", ctx=crew_ctx(jack))
    refused("crew_forbidden", protocol.done, home, "Gibbs", "r", ctx=crew_ctx(jack))
    refused(
        "crew_forbidden", protocol.inbox, home, "Gibbs", deliver=lambda b: None, ctx=crew_ctx(jack)
    )
    assert mailbox.notifications(home, "gibbs") == []


def test_crew_may_not_run_captain_commands(home, project):
    r = hire(home, project, "Jack")
    ctx = crew_ctx(r)
    refused(
        "crew_forbidden", protocol.tell, home, "Jack", "x", assignment_id=r.assignment_id, ctx=ctx
    )
    refused(
        "crew_forbidden",
        protocol.answer,
        home,
        "Jack",
        "q_x",
        "x",
        assignment_id=r.assignment_id,
        ctx=ctx,
    )
    refused("crew_forbidden", protocol.assign, home, "Jack", "t", handoff=r.assignment_id, ctx=ctx)
    refused("crew_forbidden", protocol.dismiss, home, "Jack", ctx=ctx)
    refused("crew_forbidden", notify.wait, home, "Jack", timeout=0, ctx=ctx)
    [row] = protocol.crew_status(home)
    assert row["state"] == "assigned"


def test_explicit_assignment_overrides_the_env(home, project):
    r = hire(home, project)
    ctx = Context("crew", "Jack", r.incarnation_id, None)
    q = protocol.ask(home, "Jack", "q?", assignment_id=r.assignment_id, ctx=ctx)
    assert q.assignment_id == r.assignment_id


# -- ask ------------------------------------------------------------------------------------


def test_ask_records_one_question_and_notifies(home, project):
    r = hire(home, project)
    q = protocol.ask(home, "Jack", "Which behaviour is intended?", ctx=crew_ctx(r))
    assert q.question_id.startswith("q_") and q.assignment_id == r.assignment_id
    [n] = mailbox.notifications(home, "jack")
    assert (n.status, n.question_id, n.delivery_id, n.crew, n.assignment_id) == (
        "asked",
        q.question_id,
        q.delivery_id,
        "Jack",
        r.assignment_id,
    )
    assert n.summary == "Which behaviour is intended?"
    assert n.queued_at == mail_of(home, "Jack")[-1].queued_at


def test_only_one_pending_question_per_assignment(home, project):
    r = hire(home, project)
    q = protocol.ask(home, "Jack", "first?", ctx=crew_ctx(r))
    err = refused("question_pending", protocol.ask, home, "Jack", "second?", ctx=crew_ctx(r))
    assert q.question_id in err.message
    assert err.extra["question_id"] == q.question_id
    assert len(mailbox.notifications(home, "jack")) == 1


def test_after_an_answer_a_new_question_is_allowed(home, project):
    r = hire(home, project)
    q1 = protocol.ask(home, "Jack", "first?", ctx=crew_ctx(r))
    protocol.answer(home, "Jack", q1.question_id, "yes", assignment_id=r.assignment_id)
    q2 = protocol.ask(home, "Jack", "second?", ctx=crew_ctx(r))
    assert q2.question_id != q1.question_id
    refused("question_pending", protocol.ask, home, "Jack", "third?", ctx=crew_ctx(r))


def test_captain_calling_ask_without_assignment_is_missing_context(home, project):
    r = hire(home, project)
    err = refused("missing_context", protocol.ask, home, "Jack", "q?")
    assert r.assignment_id in err.message


def test_ask_after_done_is_refused(home, project):
    r = hire(home, project)
    finish(home, r)
    refused("assignment_done", protocol.ask, home, "Jack", "q?", ctx=crew_ctx(r))


def test_ask_refuses_bad_text(home, project):
    r = hire(home, project)
    refused("invalid_text", protocol.ask, home, "Jack", "", ctx=crew_ctx(r))
    refused("invalid_text", protocol.ask, home, "Jack", "a\x1bb", ctx=crew_ctx(r))
    refused(
        "message_too_large", protocol.ask, home, "Jack", "x" * (MAX_TEXT_BYTES + 1), ctx=crew_ctx(r)
    )


def test_ask_for_unknown_crew(home, project):
    refused("unknown_crew", protocol.ask, home, "Nobody", "q?", assignment_id="asg_X")


# -- answer ---------------------------------------------------------------------------------


def test_answer_arrives_as_mail_of_kind_answer(home, project):
    r = hire(home, project)
    q = protocol.ask(home, "Jack", "which?", ctx=crew_ctx(r))
    m = protocol.answer(
        home, "Jack", q.question_id, "Keep existing behaviour", assignment_id=r.assignment_id
    )
    assert (m.kind, m.question_id, m.text, m.assignment_id) == (
        "answer",
        q.question_id,
        "Keep existing behaviour",
        r.assignment_id,
    )
    got = read_all(home, r)
    assert [x.message_id for x in got][-1] == m.message_id
    assert got[-1].kind == "answer" and got[-1].question_id == q.question_id


def test_answer_with_a_wrong_question_id(home, project):
    r = hire(home, project)
    refused(
        "unknown_question",
        protocol.answer,
        home,
        "Jack",
        "q_NONE",
        "x",
        assignment_id=r.assignment_id,
    )
    q = protocol.ask(home, "Jack", "which?", ctx=crew_ctx(r))
    err = refused(
        "unknown_question",
        protocol.answer,
        home,
        "Jack",
        "q_NONE",
        "x",
        assignment_id=r.assignment_id,
    )
    assert q.question_id in err.message
    refused(
        "unknown_question",
        protocol.answer,
        home,
        "Jack",
        q.question_id.lower(),
        "x",
        assignment_id=r.assignment_id,
    )


def test_a_question_is_answered_once(home, project):
    r = hire(home, project)
    q = protocol.ask(home, "Jack", "which?", ctx=crew_ctx(r))
    protocol.answer(home, "Jack", q.question_id, "this", assignment_id=r.assignment_id)
    refused(
        "question_answered",
        protocol.answer,
        home,
        "Jack",
        q.question_id,
        "that",
        assignment_id=r.assignment_id,
    )
    refused(
        "question_answered",
        protocol.answer,
        home,
        "Jack",
        q.question_id,
        "this",
        assignment_id=r.assignment_id,
    )
    assert [m.kind for m in mail_of(home, "Jack")] == ["assignment", "answer"]


def test_answer_on_a_stale_assignment(home, project):
    r = hire(home, project)
    q = protocol.ask(home, "Jack", "which?", ctx=crew_ctx(r))
    err = refused(
        "stale_assignment",
        protocol.answer,
        home,
        "Jack",
        q.question_id,
        "x",
        assignment_id="asg_OLD",
    )
    assert r.assignment_id in err.message


def test_a_question_of_a_retired_assignment_cannot_be_answered(home, project):
    r = hire(home, project)
    q = protocol.ask(home, "Jack", "which?", ctx=crew_ctx(r))
    protocol.answer(home, "Jack", q.question_id, "this", assignment_id=r.assignment_id)
    finish(home, r)
    ack_everything(home, "Jack")
    spec = protocol.assign(home, "Jack", "next", handoff=r.assignment_id)
    refused(
        "unknown_question",
        protocol.answer,
        home,
        "Jack",
        q.question_id,
        "late",
        assignment_id=spec.assignment_id,
    )


# -- tell -----------------------------------------------------------------------------------


def test_tell_appends_a_follow_up(home, project):
    r = hire(home, project, task="the task")
    m = protocol.tell(home, "Jack", "also update the changelog", assignment_id=r.assignment_id)
    assert (m.kind, m.assignment_id, m.incarnation_id) == (
        "tell",
        r.assignment_id,
        r.incarnation_id,
    )
    assert [x.text for x in mail_of(home, "Jack")] == ["the task", "also update the changelog"]
    [row] = protocol.crew_status(home)
    assert row["assignment_id"] == r.assignment_id  # the task and grants are unchanged


def test_tell_refuses_repeating_the_last_message_by_its_id(home, project):
    r = hire(home, project, task="the task")
    err = refused(
        "duplicate_message", protocol.tell, home, "Jack", "the task", assignment_id=r.assignment_id
    )
    assert err.extra["message_id"] == r.message_id and r.message_id in err.message
    m = protocol.tell(home, "Jack", "one", assignment_id=r.assignment_id)
    err = refused(
        "duplicate_message", protocol.tell, home, "Jack", "one", assignment_id=r.assignment_id
    )
    assert err.extra["message_id"] == m.message_id
    assert len(mail_of(home, "Jack")) == 2


def test_tell_allows_repeating_an_older_message(home, project):
    r = hire(home, project)
    protocol.tell(home, "Jack", "one", assignment_id=r.assignment_id)
    protocol.tell(home, "Jack", "two", assignment_id=r.assignment_id)
    again = protocol.tell(home, "Jack", "one", assignment_id=r.assignment_id)
    assert [m.text for m in mail_of(home, "Jack")][1:] == ["one", "two", "one"]
    assert again.message_id == mail_of(home, "Jack")[-1].message_id


def test_tell_after_an_answer_compares_with_the_answer(home, project):
    r = hire(home, project)
    q = protocol.ask(home, "Jack", "which?", ctx=crew_ctx(r))
    a = protocol.answer(home, "Jack", q.question_id, "this one", assignment_id=r.assignment_id)
    err = refused(
        "duplicate_message", protocol.tell, home, "Jack", "this one", assignment_id=r.assignment_id
    )
    assert err.extra["message_id"] == a.message_id


def test_tell_refuses_a_dismissed_crew(home, project):
    r = hire(home, project)
    protocol.dismiss(home, "Jack")
    refused("crew_dismissed", protocol.tell, home, "Jack", "more", assignment_id=r.assignment_id)


def test_tell_refuses_an_unknown_crew(home, project):
    refused("unknown_crew", protocol.tell, home, "Nobody", "hi", assignment_id="asg_X")


def test_tell_refuses_a_done_assignment(home, project):
    r = hire(home, project)
    finish(home, r)
    refused("assignment_done", protocol.tell, home, "Jack", "more", assignment_id=r.assignment_id)


def test_tell_refuses_a_stale_assignment(home, project):
    r = hire(home, project)
    err = refused("stale_assignment", protocol.tell, home, "Jack", "more", assignment_id="asg_OLD")
    assert r.assignment_id in err.message


def test_tell_limits_size_in_bytes(home, project):
    r = hire(home, project)
    exactly = "x" * MAX_TEXT_BYTES
    assert MAX_TEXT_BYTES == 64 * 1024
    protocol.tell(home, "Jack", exactly, assignment_id=r.assignment_id)
    refused(
        "message_too_large",
        protocol.tell,
        home,
        "Jack",
        "y" * (MAX_TEXT_BYTES + 1),
        assignment_id=r.assignment_id,
    )
    # 32,769 characters, but 65,538 UTF-8 bytes
    refused(
        "message_too_large",
        protocol.tell,
        home,
        "Jack",
        "\u00e9" * 32769,
        assignment_id=r.assignment_id,
    )
    assert len(mail_of(home, "Jack")) == 2


@pytest.mark.parametrize(
    "text",
    ["a\x00b", "a\rb", "\x1b[31mred", "bell\x07", "del\x7f", "c1\x85", "back\x08space", "a\ud800b"],
)
def test_tell_refuses_control_characters(home, project, text):
    r = hire(home, project)
    refused("invalid_text", protocol.tell, home, "Jack", text, assignment_id=r.assignment_id)
    assert len(mail_of(home, "Jack")) == 1


def test_tell_accepts_newline_tab_and_unicode(home, project):
    r = hire(home, project)
    text = "line one\n\tindented \u00e9\u4e2d\U0001f600\n"
    m = protocol.tell(home, "Jack", text, assignment_id=r.assignment_id)
    assert mail_of(home, "Jack")[-1].text == text == m.text


@pytest.mark.parametrize("text", ["", " ", "\n\t\n"])
def test_tell_refuses_empty_text(home, project, text):
    r = hire(home, project)
    refused("invalid_text", protocol.tell, home, "Jack", text, assignment_id=r.assignment_id)


# -- done -----------------------------------------------------------------------------------


@pytest.mark.parametrize("report", [None, "", "   ", "\n\t"])
def test_done_needs_a_report(home, project, report):
    r = hire(home, project)
    read_all(home, r)
    refused("report_required", protocol.done, home, "Jack", report, ctx=crew_ctx(r))
    assert protocol.crew_status(home)[0]["state"] == "assigned"


def test_done_is_refused_while_a_question_is_pending(home, project):
    r = hire(home, project)
    read_all(home, r)
    q = protocol.ask(home, "Jack", "which?", ctx=crew_ctx(r))
    err = refused("question_pending", protocol.done, home, "Jack", "report", ctx=crew_ctx(r))
    assert q.question_id in err.message
    protocol.answer(home, "Jack", q.question_id, "this", assignment_id=r.assignment_id)
    read_all(home, r)
    assert protocol.done(home, "Jack", "report", ctx=crew_ctx(r)).assignment_id == r.assignment_id


def test_done_with_unread_mail_serves_it_and_then_counts_it_read(home, project):
    r = hire(home, project)
    read_all(home, r)
    m1 = protocol.tell(home, "Jack", "also this", assignment_id=r.assignment_id)
    m2 = protocol.tell(home, "Jack", "and that", assignment_id=r.assignment_id)
    err = refused("unread_mail", protocol.done, home, "Jack", "report", ctx=crew_ctx(r))
    assert [m["message_id"] for m in err.extra["messages"]] == [m1.message_id, m2.message_id]
    assert [m["text"] for m in err.extra["messages"]] == ["also this", "and that"]
    # not shown yet: still unread
    refused("unread_mail", protocol.done, home, "Jack", "report", ctx=crew_ctx(r))
    err.after_report()
    assert protocol.crew_status(home)[0]["unread"] == 0
    event = protocol.done(home, "Jack", "report", ctx=crew_ctx(r))
    assert event.assignment_id == r.assignment_id
    assert protocol.crew_status(home)[0]["state"] == "done"


def test_done_counts_the_unread_task_as_mail(home, project):
    r = hire(home, project)
    err = refused("unread_mail", protocol.done, home, "Jack", "report", ctx=crew_ctx(r))
    assert [m["kind"] for m in err.extra["messages"]] == ["assignment"]
    err.after_report()
    protocol.done(home, "Jack", "report", ctx=crew_ctx(r))


def test_done_notifies_with_a_capped_summary(home, project):
    r = hire(home, project)
    report = "R" * 5000
    event = finish(home, r, report)
    [n] = mailbox.notifications(home, "jack")
    assert (n.status, n.delivery_id, n.assignment_id) == (
        "done",
        event.delivery_id,
        r.assignment_id,
    )
    assert len(n.summary) == SUMMARY_MAX == 1600
    assert n.summary.startswith("R" * 1500)
    short = hire(home, project, "Gibbs")
    finish(home, short, "short report")
    assert mailbox.notifications(home, "gibbs")[0].summary == "short report"


def test_done_twice_is_refused(home, project):
    r = hire(home, project)
    finish(home, r)
    refused("assignment_done", protocol.done, home, "Jack", "again", ctx=crew_ctx(r))
    assert len(mailbox.notifications(home, "jack")) == 1


def test_captain_done_requires_the_explicit_assignment(home, project):
    r = hire(home, project)
    read_all(home, r)
    refused("missing_context", protocol.done, home, "Jack", "report")
    refused("stale_assignment", protocol.done, home, "Jack", "report", assignment_id="asg_X")


# -- inbox ----------------------------------------------------------------------------------


def test_inbox_serves_queued_mail_oldest_first_then_nothing(home, project):
    r = hire(home, project, task="task")
    protocol.tell(home, "Jack", "one", assignment_id=r.assignment_id)
    protocol.tell(home, "Jack", "two", assignment_id=r.assignment_id)
    delivered = []
    got = protocol.inbox(home, "Jack", deliver=delivered.append, ctx=crew_ctx(r))
    assert [m.text for m in got] == ["task", "one", "two"]
    assert delivered == [got]
    for m in got:
        assert (home.receipts_dir("jack") / f"{m.message_id}.json").is_file()
    again = []
    assert protocol.inbox(home, "Jack", deliver=again.append, ctx=crew_ctx(r)) == []
    assert again == [[]]
    protocol.tell(home, "Jack", "three", assignment_id=r.assignment_id)
    assert [m.text for m in read_all(home, r)] == ["three"]


def test_inbox_writes_no_receipt_before_delivery_returns(home, project):
    r = hire(home, project)

    def deliver(batch):
        # at delivery time, nothing is receipted yet
        assert home.store.names(home.receipts_dir("jack")) == []
        raise OSError("stdout closed")

    with pytest.raises(OSError):
        protocol.inbox(home, "Jack", deliver=deliver, ctx=crew_ctx(r))
    assert home.store.names(home.receipts_dir("jack")) == []
    assert protocol.crew_status(home)[0]["unread"] == 1
    assert [m.message_id for m in read_all(home, r)] == [r.message_id]


def test_inbox_for_another_crew_is_forbidden(home, project):
    jack = hire(home, project, "Jack")
    hire(home, project, "Gibbs")
    refused(
        "crew_forbidden", protocol.inbox, home, "Gibbs", deliver=lambda b: None, ctx=crew_ctx(jack)
    )
    assert protocol.crew_status(home)[0]["unread"] == 1  # Gibbs' mail untouched
    assert home.store.names(home.receipts_dir("gibbs")) == []


def test_inbox_of_an_unknown_or_dismissed_crew(home, project):
    refused("unknown_crew", protocol.inbox, home, "Nobody", deliver=lambda b: None)
    hire(home, project)
    protocol.dismiss(home, "Jack")
    refused("crew_dismissed", protocol.inbox, home, "Jack", deliver=lambda b: None)


# -- assign --handoff -----------------------------------------------------------------------


def test_assign_needs_the_old_assignment_done(home, project):
    r = hire(home, project)
    err = refused(
        "assignment_active", protocol.assign, home, "Jack", "next", handoff=r.assignment_id
    )
    assert r.assignment_id in err.message


def test_assign_needs_the_exact_handoff_id(home, project):
    r = hire(home, project)
    finish(home, r)
    ack_everything(home, "Jack")
    for wrong in ["asg_WRONG", r.assignment_id.lower(), r.assignment_id + " ", ""]:
        err = refused("handoff_mismatch", protocol.assign, home, "Jack", "next", handoff=wrong)
        assert r.assignment_id in err.message


def test_assign_needs_every_notification_acknowledged(home, project):
    r = hire(home, project)
    done = finish(home, r)
    err = refused("unacknowledged", protocol.assign, home, "Jack", "next", handoff=r.assignment_id)
    assert err.extra["delivery_id"] == done.delivery_id and err.extra["status"] == "done"
    n = notify.wait(home, "Jack", timeout=0)
    assert n.delivery_id == done.delivery_id
    refused("unacknowledged", protocol.assign, home, "Jack", "next", handoff=r.assignment_id)
    idle = notify.wait(home, "Jack", timeout=0, ack=done.delivery_id)
    assert idle.status == "idle"
    spec = protocol.assign(home, "Jack", "next", handoff=r.assignment_id)
    assert spec.handoff_of == r.assignment_id


def test_assign_needs_signal_notifications_of_the_old_assignment_acked(home, project):
    r = hire(home, project)
    finish(home, r)
    ack_everything(home, "Jack")
    from state.clock import now

    late = notify.signal(home, "Jack", "error", "pane died", at=now())
    err = refused("unacknowledged", protocol.assign, home, "Jack", "next", handoff=r.assignment_id)
    assert err.extra["delivery_id"] == late.delivery_id
    ack_everything(home, "Jack")
    protocol.assign(home, "Jack", "next", handoff=r.assignment_id)


def test_assign_inherits_omitted_owns_and_allow(home, project):
    r = hire(home, project, owns=["src/app"], allow=["edit", "test"])
    finish(home, r)
    ack_everything(home, "Jack")
    spec = protocol.assign(home, "Jack", "next", handoff=r.assignment_id, allow=["read"])
    assert spec.owns == [str(project / "src/app")] and spec.allow == ["read"]
    assert spec.assignment_id != r.assignment_id and spec.message_id != r.message_id
    new = Context("crew", "Jack", r.incarnation_id, spec.assignment_id)
    protocol.inbox(home, "Jack", deliver=lambda batch: None, ctx=new)
    protocol.done(home, "Jack", "ok", ctx=new)
    ack_everything(home, "Jack")
    spec2 = protocol.assign(home, "Jack", "third", handoff=spec.assignment_id, owns=["docs"])
    assert spec2.owns == [str(project / "docs")] and spec2.allow == ["read"]


def test_assign_mails_the_task_and_checks_ownership(home, project):
    r = hire(home, project, "Jack", owns=["src/app"])
    hire(home, project, "Gibbs", owns=["docs"])
    finish(home, r)
    ack_everything(home, "Jack")
    refused(
        "ownership_overlap",
        protocol.assign,
        home,
        "Jack",
        "next",
        handoff=r.assignment_id,
        owns=["docs/x"],
    )
    spec = protocol.assign(home, "Jack", "the next task", handoff=r.assignment_id)
    last = mail_of(home, "Jack")[-1]
    assert (last.message_id, last.kind, last.text, last.assignment_id) == (
        spec.message_id,
        "assignment",
        "the next task",
        spec.assignment_id,
    )


def test_after_assign_the_old_env_is_stale_and_the_new_explicit_id_works(home, project):
    r = hire(home, project, allow=["read"])
    finish(home, r)
    ack_everything(home, "Jack")
    spec = protocol.assign(home, "Jack", "next", handoff=r.assignment_id)
    ctx = crew_ctx(r)  # still carries the old CAPTAIN_ASSIGNMENT
    err = refused("stale_assignment", protocol.ask, home, "Jack", "q?", ctx=ctx)
    assert spec.assignment_id in err.message
    err = refused("stale_assignment", protocol.check, home, "Jack", "read", [], ctx=ctx)
    assert spec.assignment_id in err.message
    assert protocol.check(
        home, "Jack", "read", [], assignment_id=spec.assignment_id, ctx=ctx
    ).allowed
    q = protocol.ask(home, "Jack", "q?", assignment_id=spec.assignment_id, ctx=ctx)
    assert q.assignment_id == spec.assignment_id


def test_assign_refuses_unknown_and_dismissed_crew(home, project):
    refused("unknown_crew", protocol.assign, home, "Nobody", "t", handoff="asg_X")
    r = hire(home, project)
    protocol.dismiss(home, "Jack")
    refused("crew_dismissed", protocol.assign, home, "Jack", "t", handoff=r.assignment_id)


def test_a_new_assignment_clears_the_old_question(home, project):
    r = hire(home, project)
    q = protocol.ask(home, "Jack", "which?", ctx=crew_ctx(r))
    protocol.answer(home, "Jack", q.question_id, "this", assignment_id=r.assignment_id)
    finish(home, r)
    ack_everything(home, "Jack")
    spec = protocol.assign(home, "Jack", "next", handoff=r.assignment_id)
    ctx = Context("crew", "Jack", r.incarnation_id, spec.assignment_id)
    protocol.ask(home, "Jack", "new one?", ctx=ctx)
    assert protocol.crew_status(home)[0]["state"] == "asked"


# -- dismiss --------------------------------------------------------------------------------


def test_dismiss_bounces_unread_mail_with_one_notification_each(home, project):
    r = hire(home, project)
    read_all(home, r)
    m1 = protocol.tell(home, "Jack", "one", assignment_id=r.assignment_id)
    m2 = protocol.tell(home, "Jack", "two", assignment_id=r.assignment_id)
    bounced = protocol.dismiss(home, "Jack", reason="pane gone")
    assert [b.message_id for b in bounced] == [m1.message_id, m2.message_id]
    assert sorted(home.store.names(home.bounces_dir("jack"))) == sorted(
        [m1.message_id, m2.message_id]
    )
    ns = mailbox.notifications(home, "jack")
    assert sorted((n.status, n.message_id) for n in ns) == sorted(
        [("bounced", m1.message_id), ("bounced", m2.message_id)]
    )
    for n in ns:
        assert n.assignment_id == r.assignment_id and "pane gone" in n.summary
        assert (
            n.queued_at == {m1.message_id: m1.queued_at, m2.message_id: m2.queued_at}[n.message_id]
        )
    assert len({n.delivery_id for n in ns}) == 2


def test_dismiss_with_nothing_unread_bounces_nothing(home, project):
    r = hire(home, project)
    read_all(home, r)
    assert protocol.dismiss(home, "Jack") == []
    assert mailbox.notifications(home, "jack") == []


def test_dismissed_crew_is_refused_by_tell_ask_and_dismiss(home, project):
    r = hire(home, project)
    protocol.dismiss(home, "Jack")
    refused("crew_dismissed", protocol.tell, home, "Jack", "x", assignment_id=r.assignment_id)
    refused("crew_dismissed", protocol.ask, home, "Jack", "q?", ctx=crew_ctx(r))
    refused("crew_dismissed", protocol.dismiss, home, "Jack")
    refused("crew_dismissed", protocol.done, home, "Jack", "r", ctx=crew_ctx(r))
    refused("crew_dismissed", protocol.check, home, "Jack", "read", [], ctx=crew_ctx(r))


def test_dismiss_unknown_crew(home, project):
    refused("unknown_crew", protocol.dismiss, home, "Nobody")


def test_crew_status_hides_dismissed_unless_asked(home, project):
    hire(home, project, "Jack")
    hire(home, project, "Gibbs")
    protocol.dismiss(home, "Jack")
    assert [row["name"] for row in protocol.crew_status(home)] == ["Gibbs"]
    rows = {row["name"]: row for row in protocol.crew_status(home, include_dismissed=True)}
    assert set(rows) == {"Jack", "Gibbs"}
    assert rows["Jack"]["state"] == "dismissed" and rows["Gibbs"]["state"] == "assigned"


def test_crew_status_states(home, project):
    r = hire(home, project)
    assert protocol.crew_status(home)[0]["state"] == "assigned"
    assert protocol.crew_status(home)[0]["unread"] == 1
    q = protocol.ask(home, "Jack", "q?", ctx=crew_ctx(r))
    row = protocol.crew_status(home)[0]
    assert (row["state"], row["question_id"], row["unacknowledged"]) == ("asked", q.question_id, 1)
    protocol.answer(home, "Jack", q.question_id, "a", assignment_id=r.assignment_id)
    finish(home, r)
    assert protocol.crew_status(home)[0]["state"] == "done"


# -- the event log: IDs are never reused ----------------------------------------------------


def test_history_records_every_event_in_order(home, project):
    r = hire(home, project)
    q = protocol.ask(home, "Jack", "q?", ctx=crew_ctx(r))
    protocol.answer(home, "Jack", q.question_id, "a", assignment_id=r.assignment_id)
    finish(home, r)
    protocol.dismiss(home, "Jack")
    assert [e.type for e in crewlog.events(home, "jack")] == [
        "recruited",
        "asked",
        "done",
        "dismissed",
    ]
    assert [e.seq for e in crewlog.events(home, "jack")] == [1, 2, 3, 4]


# -- text limits apply to every text a person types -----------------------------------------


def _text_calls(home, project):
    r = hire(home, project, "Jack")
    q = protocol.ask(home, "Jack", "which?", ctx=crew_ctx(r))
    ctx = crew_ctx(r)
    return {
        "recruit task": lambda t: hire(home, project, "Gibbs", task=t),
        "tell": lambda t: protocol.tell(home, "Jack", t, assignment_id=r.assignment_id),
        "answer": lambda t: protocol.answer(
            home, "Jack", q.question_id, t, assignment_id=r.assignment_id
        ),
        "done report": lambda t: protocol.done(home, "Jack", t, ctx=ctx),
    }


@pytest.mark.parametrize("what", ["recruit task", "tell", "answer", "done report"])
def test_every_text_is_limited_to_64_kib(home, project, what):
    call = _text_calls(home, project)[what]
    refused("message_too_large", call, "z" * (MAX_TEXT_BYTES + 1))


@pytest.mark.parametrize("what", ["recruit task", "tell", "answer", "done report"])
def test_every_text_refuses_control_characters(home, project, what):
    call = _text_calls(home, project)[what]
    refused("invalid_text", call, "fine\x1b[2Jnot")


def test_inbox_with_the_old_env_after_assign_delivers_the_new_task(home, project):
    r = hire(home, project)
    finish(home, r)
    ack_everything(home, "Jack")
    spec = protocol.assign(home, "Jack", "the next task", handoff=r.assignment_id)
    got = read_all(home, r)  # the crew's env still names the retired assignment
    assert [(m.message_id, m.kind, m.text) for m in got] == [
        (spec.message_id, "assignment", "the next task")
    ]


def test_redo_after_dismiss_does_not_serve_the_bounced_mail(home, project):
    old = hire(home, project, task="old task")
    protocol.dismiss(home, "Jack")
    ack_everything(home, "Jack")
    new = hire(home, project, task="new task", handoff=old.assignment_id)
    assert [m.text for m in read_all(home, new)] == ["new task"]


# -- ownership through symlinks ----------------------------------------------------------


def test_a_symlink_to_owned_paths_overlaps_them_either_way(home, project):
    """`ln -s src/a srclink`: owning srclink is owning src/a, whoever came first."""
    (project / "src" / "a").mkdir(parents=True)
    (project / "srclink").symlink_to(project / "src" / "a")
    hire(home, project, "Jack", owns=["src/a"])
    err = refused("ownership_overlap", hire, home, project, "Gibbs", owns=["srclink"])
    assert "Jack" in err.message
    hire(home, project, "Bill", owns=["src/b"])
    (project / "blink").symlink_to(project / "src")  # a link to a parent of both
    refused("ownership_overlap", hire, home, project, "Anna", owns=["blink/b/c"])


def test_the_link_owned_first_still_overlaps_the_real_path(home, project):
    (project / "src" / "a").mkdir(parents=True)
    (project / "srclink").symlink_to("src/a")  # relative links resolve the same
    hire(home, project, "Gibbs", owns=["srclink"])
    refused("ownership_overlap", hire, home, project, "Jack", owns=["src/a/login.py"])


def test_a_path_inside_the_project_that_leads_outside_it_is_refused(home, project, tmp_path):
    outside = tmp_path / "elsewhere"
    outside.mkdir()
    (project / "escape").symlink_to(outside)
    err = refused("invalid_path", hire, home, project, "Jack", owns=["escape/x"])
    assert "outside" in err.message and "escape/x" in err.message
    assert home.crew_keys() == []  # nothing written


# -- the answer acknowledges its question ------------------------------------------------------


def test_the_answer_acknowledges_its_asked_notification(home, project):
    """ask -> answer -> done -> next task with no separate acknowledgement of `asked`:
    the captain's answer is the response to it (README, the protocol's step 4)."""
    r = hire(home, project)
    read_all(home, r)
    q = protocol.ask(home, "Jack", "Keep it?", ctx=crew_ctx(r))
    asked = notify.wait(home, "Jack", timeout=0)
    assert asked is not None and asked.status == "asked"  # returned, not acknowledged
    protocol.answer(home, "Jack", q.question_id, "yes", assignment_id=r.assignment_id)
    assert mailbox.unacknowledged(home, key("Jack")) == []
    finish(home, r)
    done = notify.wait(home, "Jack", timeout=0)  # no `unacknowledged` refusal for `asked`
    assert done is not None and done.status == "done"
    notify.wait(home, "Jack", timeout=0, ack=done.delivery_id)
    nxt = protocol.assign(home, "Jack", "next", handoff=r.assignment_id)
    assert nxt.assignment_id != r.assignment_id

"""Toasts name crews and tasks, never raw IDs (``asg_…``, ``wrk_…``, ``msg_…``, ``dlv_…``):
the alerts the feed raises for a death and for bounced mail, from real records."""

from __future__ import annotations

import re
from pathlib import Path

from captain_tui.cockpit.feed.home_feed import Feed
from state.crew import death_notice, protocol
from state.home import Home
from state.records import PaneLocator

RAW_ID = re.compile(r"\b(asg|wrk|msg|dlv|inc|q)_[0-9A-Za-z]{6,}")


def _launch(env):
    return (
        PaneLocator(
            socket="/nonexistent/captain-alerts.sock",
            session="s",
            window_id="@1",
            pane_id="%1",
            pane_pid=300001,
        ),
        lambda: None,
    )


def test_death_and_bounce_toasts_name_the_crew_and_what_happened(home: Home, project: Path):
    feed = Feed(home)
    feed.rescan()
    gibbs = protocol.recruit(home, "Gibbs", "Write the docs", cwd=str(project), launch=_launch)
    jack = protocol.recruit(home, "Jack", "Fix the login bug", cwd=str(project), launch=_launch)
    protocol.tell(home, "Jack", "Also the changelog", assignment_id=jack.assignment_id)
    death_notice.record(
        home,
        "Gibbs",
        gibbs.incarnation_id,
        death_notice.Death(
            how=death_notice.EXITED, status=3, pane_id="%1", last_lines=("Traceback: boom",)
        ),
    )
    protocol.dismiss(home, "Jack")
    alerts = feed.rescan().alerts
    by_kind = {a.kind: a for a in alerts}
    died = by_kind["error"]
    assert died.title == "Gibbs died"
    assert died.body == (
        "Gibbs died before reporting done: its process exited with status 3. Its task failed."
    )
    bounced = [a for a in alerts if a.kind == "bounced"]
    assert {a.body for a in bounced} == {
        "Bounced (crew dismissed): Fix the login bug",
        "Bounced (crew dismissed): Also the changelog",
    }
    for alert in alerts:
        assert not RAW_ID.search(alert.title + alert.body), alert


def test_a_dismissed_crews_bounces_are_listed_until_acknowledged(home: Home, project: Path):
    """They block recruiting the name again, so the Notifications panel lists them (the Crew
    panel does not list the crew); acknowledged, they and the crew leave the view."""
    from state.crew import notify

    jack = protocol.recruit(home, "Jack", "Fix the login bug", cwd=str(project), launch=_launch)
    protocol.tell(home, "Jack", "Also the changelog", assignment_id=jack.assignment_id)
    protocol.dismiss(home, "Jack")
    view = Feed(home).rescan().view
    assert view.crew_rows() == []
    listed = view.notifications()
    assert [n.status for n in listed] == ["bounced", "bounced"] and listed[0].crew == "Jack"
    for n in listed:
        notify.acknowledge(home, "Jack", n.delivery_id)
    view = Feed(home).rescan().view
    assert view.notifications() == [] and "jack" not in view.crews

"""One truth per crew: after any sequence of protocol and runtime events, ``captain status``
(``protocol.crew_status``, what the CLI prints) and the cockpit (its ``Feed``, fed only the
paths that changed, as the watcher feeds it) say the same of every crew: its state, its
unread mail, its pending question, its unacknowledged notifications.

A Hypothesis state machine drives real protocol calls on a real home: recruit (launched,
with a pane locator), tell, the crew reading its inbox, ask, answer, done, the captain
acknowledging, dismissal, the crew's process dying, an approval prompt, a held doorbell and
the probe seeing a start-up dialog come and go (``blocked: <dialog>``).
Both views are compared after every step; the Feed is the cockpit's own incremental one.
"""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

from conftest import crew_ctx
from hypothesis import HealthCheck, settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, invariant, rule

from captain_tui.cockpit.feed.home_feed import Feed
from captain_tui.runtime import dialogs
from state.clock import now
from state.crew import crewlog, death_notice, notify, protocol, standing
from state.errors import CaptainError
from state.home import Home
from state.records import PaneLocator

NAMES = ("Ada", "Brook", "Cy")


def _files(root: Path) -> dict[str, tuple[int, int]]:
    """Every file under the home with what changes when it is written (inode, mtime)."""
    out = {}
    for folder, _, names in os.walk(root):
        for name in names:
            path = os.path.join(folder, name)
            try:
                st_ = os.lstat(path)
            except FileNotFoundError:
                continue
            out[path] = (st_.st_ino, st_.st_mtime_ns)
    return out


class OneTruth(RuleBasedStateMachine):
    def __init__(self) -> None:
        super().__init__()
        self.tmp = tempfile.TemporaryDirectory()
        self.home = Home(Path(self.tmp.name) / "home")
        self.project = Path(self.tmp.name) / "project"
        self.project.mkdir()
        self.recruits: dict[str, object] = {}
        self.panes = 0
        self.feed = Feed(self.home)
        self.feed.rescan()
        self.seen = _files(self.home.root)

    def teardown(self) -> None:
        self.tmp.cleanup()

    def _live(self, name: str):
        r = self.recruits.get(name)
        row = next((x for x in protocol.crew_status(self.home) if x["name"] == name), None)
        return (r, row) if r is not None and row is not None else (None, None)

    def _try(self, fn, *args, **kwargs):
        """A protocol call a person might make at any moment: refused is fine."""
        try:
            return fn(*args, **kwargs)
        except CaptainError:
            return None

    # -- the events ---------------------------------------------------------------------

    @rule(name=st.sampled_from(NAMES))
    def recruit(self, name):
        old = self.recruits.get(name)
        handoff = old.assignment_id if old is not None else None

        def launch(env):
            self.panes += 1
            return (
                PaneLocator(
                    socket="/nonexistent/captain-one-truth.sock",
                    session="s",
                    window_id=f"@{self.panes}",
                    pane_id=f"%{self.panes}",
                    pane_pid=200000 + self.panes,
                ),
                lambda: None,
            )

        r = self._try(
            protocol.recruit,
            self.home,
            name,
            f"task of {name}",
            handoff=handoff,
            cwd=str(self.project),
            launch=launch,
        )
        if r is not None:
            self.recruits[name] = r

    @rule(name=st.sampled_from(NAMES), text=st.sampled_from(["more", "also this", "again"]))
    def tell(self, name, text):
        r, row = self._live(name)
        if r is not None:
            self._try(
                protocol.tell,
                self.home,
                name,
                f"{text} {self.panes}",
                assignment_id=row["assignment_id"],
            )

    @rule(name=st.sampled_from(NAMES))
    def crew_reads_inbox(self, name):
        r, _ = self._live(name)
        if r is not None:
            self._try(protocol.inbox, self.home, name, deliver=lambda batch: None, ctx=crew_ctx(r))

    @rule(name=st.sampled_from(NAMES))
    def crew_asks(self, name):
        r, row = self._live(name)
        if r is not None:
            self._try(
                protocol.ask,
                self.home,
                name,
                "which way?",
                assignment_id=row["assignment_id"],
                ctx=crew_ctx(r),
            )

    @rule(name=st.sampled_from(NAMES))
    def captain_answers(self, name):
        r, row = self._live(name)
        if r is not None and row["question_id"]:
            self._try(
                protocol.answer,
                self.home,
                name,
                row["question_id"],
                "this way",
                assignment_id=row["assignment_id"],
            )

    @rule(name=st.sampled_from(NAMES))
    def crew_done(self, name):
        r, row = self._live(name)
        if r is not None:
            self._try(
                protocol.done,
                self.home,
                name,
                "did it",
                assignment_id=row["assignment_id"],
                ctx=crew_ctx(r),
            )

    @rule(name=st.sampled_from(NAMES))
    def captain_acknowledges_one(self, name):
        if name in self.recruits:
            n = self._try(notify.wait, self.home, name, timeout=0)
            if n is not None:
                self._try(notify.acknowledge, self.home, name, n.delivery_id)

    @rule(name=st.sampled_from(NAMES))
    def dismiss(self, name):
        if name in self.recruits:
            self._try(protocol.dismiss, self.home, name)

    @rule(name=st.sampled_from(NAMES), status=st.sampled_from([0, 3]))
    def process_dies(self, name, status):
        r, row = self._live(name)
        if r is not None and row["pane"]:
            death_notice.record(
                self.home,
                name,
                row["incarnation_id"],
                death_notice.Death(
                    how=death_notice.EXITED, status=status, pane_id=row["pane"]["pane_id"]
                ),
            )

    @rule(name=st.sampled_from(NAMES), status=st.sampled_from(["awaiting_approval", "held"]))
    def agent_signals(self, name, status):
        r, row = self._live(name)
        if r is not None:
            self._try(
                notify.signal,
                self.home,
                name,
                status,
                f"{status} for {name}",
                at=now(),
                incarnation_id=row["incarnation_id"],
            )

    @rule(
        name=st.sampled_from(NAMES),
        dialog=st.sampled_from(["folder_trust", "model_migration", None]),
    )
    def probe_sees_a_start_up_dialog(self, name, dialog):
        """What the runners' probe records when it reads the pane (a dialog, or none)."""
        r, _ = self._live(name)
        if r is not None:
            snapshot, _ = crewlog.load(self.home, name.lower())
            dialogs.record(self.home, snapshot, dialog)

    # -- the one truth -------------------------------------------------------------------

    @invariant()
    def status_and_cockpit_agree(self):
        after = _files(self.home.root)
        changed = [p for p in set(after) | set(self.seen) if after.get(p) != self.seen.get(p)]
        self.seen = after
        self.feed.apply(changed)
        cockpit = {
            v.crew.name: (
                v.crew.state,
                v.crew.unread,
                v.question.question_id if v.question else None,
                v.crew.unacknowledged,
                v.crew.assignment_id,
                v.crew.dialog,
            )
            for v in self.feed.view.crews.values()
            if v.crew is not None
        }
        cli = {
            r["name"]: (
                r["state"],
                r["unread"],
                r["question_id"],
                r["unacknowledged"],
                r["assignment_id"],
                r["dialog"],
            )
            for r in protocol.crew_status(self.home)
        }
        assert cockpit == cli
        fresh = Feed(self.home)
        fresh.rescan()
        assert {r.name: r.state for r in fresh.view.crew_rows()} == {
            name: row[0] for name, row in cli.items()
        }
        assert set(row[0] for row in cli.values()) <= set(standing.STATES)


OneTruth.TestCase.settings = settings(
    max_examples=25,
    stateful_step_count=25,
    deadline=None,
    derandomize=True,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much],
)
test_status_and_cockpit_tell_one_story = OneTruth.TestCase

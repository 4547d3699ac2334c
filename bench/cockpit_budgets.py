"""The cockpit against its budgets (docs/design.md, "Budgets"), as numbers.

1. store event -> row visible: the real ``CaptainApp``, headless, on a home of 20 crew. A
   separate writer process (as a crew's CLI would be) writes each record through the
   ``state`` protocol — a ``tell`` (the crew row's Mail cell), a crew's ``ask`` (a row in
   Questions) or a crew ``signal`` (a row in Notifications), in turn. Latency runs from
   the moment the record is published under its name (the writer's ``os.link`` or
   ``os.replace`` returned) to the end of the first screen refresh after the row reached
   its panel's list: that moment is taken inside ``Panel.show``, the only way rows get
   in (no polling, so the bench does not compete with the app), and reported too. Between
   events the record is tidied away untimed (answered, acknowledged), so panels keep their
   size.
2. a big home (default: 100 crew, 50k messages, 50k notifications; mostly read and
   acknowledged, some not), written straight in the store's on-disk format and cached for
   reuse (``--big-home PATH``): the cockpit's first paint in a fresh process (first crew
   rows, and the first full scan done, both from process start), its peak RSS, and the
   cost of one new event there against the small home (20 crew, 500 messages); the
   slowest single event and what it overlapped (a full rescan, a full garbage collection,
   or neither); and events each written 0-50 ms after a full rescan started (the periodic
   one made due every second): the worst moment, budget max <= 250 ms.
3. (the idle cockpit is measured once, by ``bench/cockpit_idle.py``: its ``measure``, by
   process and by thread, against its ``BUDGET``; part 6 uses both)

4. the Work panel on a ledger of ``--work-finished`` finished items (default 100k), on the
   files and on PostgreSQL (bench/ledger_claims.py's server and bulk fill): work event ->
   row on screen in the real app (a writer process accepts an item; timed from just
   before its ``ledger.accept`` call, so the write is included; tidied by a cancel,
   untimed), what one periodic Work panel rescan asks of the ledger (item reads, SQL
   statements, directory entries, whole-history listings) and costs, and what the real
   cockpit, doorbell on, asks of it while idle (three periodic rescans in the window; on
   PostgreSQL its listener connected), each against the same ledger at a tenth of the
   size (at most 1,000): none of it may grow with history. The files' shortcut fill leaves
   the index of the newest finished to be rebuilt, and one item closed through the ledger
   (untimed) rebuilds it, as the first close after an upgrade does.

5. a keystroke on the big home -> the frame with its result (the Pilot posts the key; the
   frame is the end of the first screen refresh after the key's action ran, Textual's
   ``call_after_refresh`` asked as ``run_action`` returns): the Crew panel's cursor down
   and up, the Tell form and the Recruit form opened and closed; budget p95 <= 16 ms.

6. approvals (#26), 20 crew: a real ``PermissionRequest`` hook raises a request -> its row
   in the Approvals panel (from the request file's publication, its ctime; and from the
   hook's start), budget p95 <= 200 ms; then, with every crew holding a request open (its
   hook waiting), event -> row and the idle cockpit again (``bench/cockpit_idle.py``'s
   measurement over ``--idle-seconds``, at most 15 s), within their budgets.

Prints one Markdown table and the machine; ``--json PATH`` also writes every number (and
the table's rows, under ``rows``).

    python bench/cockpit_budgets.py [--events 200] [--paint-runs 3] [--idle-seconds 30]
                            [--big-home PATH] [--work-finished 100000] [--no-work]
                            [--collide-events 45] [--key-rounds 40]
                            [--approval-rounds 20] [--quick] [--smoke] [--json PATH]
"""

from __future__ import annotations

# Only light imports at the top: the first-paint driver re-runs this file and its clock
# starts before the interpreter does.
import argparse
import asyncio
import inspect
import json
import os
import platform
import random
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from collections.abc import Callable

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from bench.report import SMOKE, run_script  # noqa: E402

SIZE = (160, 50)
EVENT_TIMEOUT = 15.0
KINDS = ("tell", "signal", "ask")
SPEC_VERSION = 1
UNREAD_FRAC = 0.01  # of each crew's mail, newest first, left unread
UNACKED_FRAC = 0.01  # of each crew's notifications, newest first, left unacknowledged
MAX_EVENT_MS = 250.0  # no single event -> row slower than this on the big home (#28)
WORK_IDLE_MAX = 15.0  # seconds the Work panel part leaves the cockpit idle (3 ledger rounds)


def _log(text: str) -> None:
    print(f"[bench {time.strftime('%H:%M:%S')}] {text}", file=sys.stderr, flush=True)


class _Others:
    """How many cores the rest of the machine kept busy meanwhile (the machine is shared):
    all busy CPU time (/proc/stat) minus this bench's own and its reaped children's."""

    def __init__(self) -> None:
        self.start = self._sample()

    @staticmethod
    def _sample() -> tuple[float, float, float]:
        fields = [int(x) for x in Path("/proc/stat").read_text().split("\n", 1)[0].split()[1:]]
        busy = (sum(fields[:8]) - fields[3] - fields[4]) / os.sysconf("SC_CLK_TCK")
        t = os.times()
        return time.monotonic(), busy, t.user + t.system + t.children_user + t.children_system

    def cores(self) -> float:
        wall, busy, ours = (b - a for a, b in zip(self.start, self._sample()))
        return max(busy - ours, 0.0) / wall if wall > 0 else 0.0


def _phase(results: dict, name: str, run):
    """Run one phase, noting how busy the rest of the machine was meanwhile."""
    others = _Others()
    value = run()
    results.setdefault("others_cores", {})[name] = round(others.cores(), 2)
    _log(f"  (other processes kept {others.cores():.2f} cores busy meanwhile)")
    return value


# -- homes, written straight in the on-disk format (docs/store.md) ---------------------------


def _id(prefix: str, at: datetime, rng: random.Random) -> str:
    """An ID of the store's shape whose time part is ``at`` (a backdated record)."""
    from state.ids import _b32  # the same alphabet and layout as every real ID

    return f"{prefix}_{_b32(int(at.timestamp() * 1000), 10)}{_b32(rng.getrandbits(80), 16)}"


def _put(path: Path, data: bytes) -> None:
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o600)
    try:
        os.write(fd, data)
    finally:
        os.close(fd)


_WORDS = (
    "the login form",
    "retry logic",
    "flaky test",
    "config loader",
    "migration",
    "error message",
    "README",
    "benchmark",
    "cache",
    "parser",
    "CLI flag",
    "timeout",
)


def _text(rng: random.Random, i: int) -> str:
    words = " ".join(rng.choice(_WORDS) for _ in range(rng.randint(4, 30)))
    return f"Note {i}: please look at {words}."


def build_home(
    root: Path,
    crews: int,
    messages: int,
    notifications: int,
    *,
    unread_frac: float = UNREAD_FRAC,
    unacked_frac: float = UNACKED_FRAC,
    launch=None,
    seed: int = 1,
) -> dict:
    """Recruit ``crews`` through the protocol (a real history each), then write their
    mail, receipts, notifications, acks and returned markers directly, backdated over the
    last 30 days. The newest ``unread_frac`` of each crew's mail stays unread and the
    newest ``unacked_frac`` of its notifications unacknowledged."""
    from state.crew import crewlog, protocol
    from state.home import Home
    from state.records import Ack, Message, Notification, Receipt, Returned
    from state.store import encode

    rng = random.Random(seed)
    home = Home(root)
    project = root.parent / "project"
    project.mkdir(parents=True, exist_ok=True)
    now = datetime.now(timezone.utc)
    start = now - timedelta(days=30)
    per_mail = max(messages // crews - 1, 0)  # the recruit wrote each crew's task mail
    per_note = notifications // crews
    unread_n = round((per_mail + 1) * unread_frac)
    unacked_n = round(per_note * unacked_frac)
    statuses_acked = ("working", "idle", "done", "asked", "error", "held", "working")
    statuses_open = ("working", "idle", "error", "held")
    began = time.monotonic()
    for c in range(crews):
        name = f"Crew{c + 1:03d}"
        key = name.lower()
        kwargs = {"launch": launch(home, name, key)} if launch else {}
        protocol.recruit(
            home,
            name,
            f"Task {c + 1}: {_text(rng, c)}",
            cwd=str(project),
            agent="program" if launch else "shell",
            **kwargs,
        )
        snap, _ = crewlog.load(home, key)
        assert snap is not None  # recruited just above
        asg, inc = snap.assignment.assignment_id, snap.incarnation_id
        mail, receipts = home.mail_dir(key), home.receipts_dir(key)
        notes, acks, returned = (
            home.notifications_dir(key),
            home.acks_dir(key),
            home.returned_dir(key),
        )
        read_at = now - timedelta(minutes=5)
        if unread_n == 0:  # the task mail was read too
            _put(
                receipts / f"{snap.assignment.message_id}.json",
                encode(
                    Receipt(
                        message_id=snap.assignment.message_id,
                        crew=name,
                        assignment_id=asg,
                        read_at=read_at,
                        via="inbox",
                    )
                ),
            )
        step = (now - start - timedelta(hours=1)) / max(per_mail, 1)
        for j in range(per_mail):
            at = start + step * j
            mid = _id("msg", at, rng)
            _put(
                mail / f"{mid}.json",
                encode(
                    Message(
                        message_id=mid,
                        crew=name,
                        incarnation_id=inc,
                        assignment_id=asg,
                        kind="tell",
                        text=_text(rng, j),
                        queued_at=at,
                    )
                ),
            )
            if j < per_mail - max(unread_n - 1, 0):
                _put(
                    receipts / f"{mid}.json",
                    encode(
                        Receipt(
                            message_id=mid,
                            crew=name,
                            assignment_id=asg,
                            read_at=at + step / 2,
                            via=rng.choice(("inbox", "hook")),
                        )
                    ),
                )
        step = (now - start - timedelta(hours=1)) / max(per_note, 1)
        for j in range(per_note):
            at = start + step * j
            did = _id("dlv", at, rng)
            acked = j < per_note - unacked_n
            status = rng.choice(statuses_acked if acked else statuses_open)
            _put(
                notes / f"{did}.json",
                encode(
                    Notification(
                        delivery_id=did,
                        status=status,
                        crew=name,
                        assignment_id=asg,
                        summary=_text(rng, j)[:300],
                        queued_at=at,
                        created_at=at,
                    )
                ),
            )
            if acked:
                _put(
                    returned / f"{did}.json",
                    encode(Returned(delivery_id=did, crew=name, returned_at=at + step / 3)),
                )
                _put(
                    acks / f"{did}.json",
                    encode(Ack(delivery_id=did, crew=name, acked_at=at + step / 2)),
                )
        if crews >= 50 and (c + 1) % 10 == 0:
            _log(f"built {c + 1}/{crews} crew ({time.monotonic() - began:.0f} s)")
    return {
        "crews": crews,
        "messages": messages,
        "notifications": notifications,
        "unread_frac": unread_frac,
        "unacked_frac": unacked_frac,
        "build_s": round(time.monotonic() - began, 1),
    }


def census(root: Path) -> dict:
    """What is in the home right now (the event phases add a little to it)."""

    def count(top: str) -> int:
        base = root / top
        if not base.is_dir():
            return 0
        return sum(
            sum(1 for e in os.scandir(d.path) if e.name.endswith(".json"))
            for d in os.scandir(base)
            if d.is_dir()
        )

    out = {top: count(top) for top in ("mail", "receipts", "notifications", "acks", "returned")}
    out["crew"] = sum(1 for d in os.scandir(root / "crew") if d.is_dir())
    out["unread"] = out["mail"] - out["receipts"]
    out["unacknowledged"] = out["notifications"] - out["acks"]
    return out


def big_home(path: Path, crews: int, messages: int, notifications: int, rebuild: bool) -> Path:
    """``path/home``, built once and reused while ``path/spec.json`` matches."""
    spec = {
        "version": SPEC_VERSION,
        "crews": crews,
        "messages": messages,
        "notifications": notifications,
        "unread_frac": UNREAD_FRAC,
        "unacked_frac": UNACKED_FRAC,
    }
    spec_file, root = path / "spec.json", path / "home"
    if spec_file.exists():
        try:
            have = json.loads(spec_file.read_text())
        except ValueError:
            have = {}
        if not rebuild and {k: have.get(k) for k in spec} == spec and (root / "home.json").exists():
            # a cockpit or command that refused its records (an older checkout's, which
            # does not know a newer record's fields) quarantined them: the home left has
            # fewer crews and messages than its spec, and every figure on it would lie
            quarantined = list((root / "quarantine").glob("*.reason"))
            if quarantined:
                raise SystemExit(
                    f"the big home at {root} was damaged since it was built: "
                    f"{len(quarantined)} of its files were quarantined (one reason: "
                    f"{quarantined[0].read_text(errors='replace')[:300]}); build it afresh "
                    "with --rebuild, or give another --big-home."
                )
            _log(f"reusing the big home at {root}")
            return root
        shutil.rmtree(path / "home", ignore_errors=True)
        shutil.rmtree(path / "project", ignore_errors=True)
        spec_file.unlink()
    elif path.exists() and any(path.iterdir()):
        raise SystemExit(
            f"{path} is not empty and holds no bench spec.json; refusing to "
            "build a home there (give an empty or new directory)."
        )
    path.mkdir(parents=True, exist_ok=True)
    _log(
        f"building the big home at {root} ({crews} crew, {messages} messages, "
        f"{notifications} notifications); reuse it with --big-home {path}"
    )
    built = build_home(root, crews, messages, notifications)
    spec_file.write_text(json.dumps({**spec, "build_s": built["build_s"]}) + "\n")
    _log(f"built in {built['build_s']} s")
    return root


# -- the writer: another process writing through the protocol --------------------------------


def writer_main(root: str) -> int:
    """Reads one JSON request a line, does it through ``state``, answers one JSON line with
    ``t``: time.monotonic() right after the first record was published under its name."""
    from state.clock import now
    from state.crew import crewlog, notify, protocol
    from state.crew.guards import Context
    from state.home import Home

    published: list[float] = []
    real_link, real_replace = os.link, os.replace

    def link(*args, **kwargs):
        real_link(*args, **kwargs)
        published.append(time.monotonic())

    def replace(*args, **kwargs):
        real_replace(*args, **kwargs)
        published.append(time.monotonic())

    os.link, os.replace = link, replace  # state.store calls os.link / os.replace
    home = Home(Path(root))
    for line in sys.stdin:
        req = json.loads(line)
        published.clear()
        try:
            snap, _ = crewlog.load(home, req["key"])
            assert snap is not None  # the bench asks only of crews it made
            asg = snap.assignment.assignment_id
            op = req["op"]
            out: dict = {}
            if op == "tell":
                out["id"] = protocol.tell(
                    home, snap.name, req["text"], assignment_id=asg
                ).message_id
            elif op == "ask":
                ctx = Context("crew", snap.name, snap.incarnation_id, asg)
                event = protocol.ask(home, snap.name, req["text"], ctx=ctx)
                out.update(id=event.question_id, delivery_id=event.delivery_id)
            elif op == "signal":
                n = notify.signal(home, snap.name, "working", req["text"], at=now())
                out["id"] = n.delivery_id if n else None
            elif op == "answer":
                protocol.answer(
                    home, snap.name, req["question_id"], "Yes, go ahead.", assignment_id=asg
                )
            elif op == "ack":
                notify.acknowledge(home, snap.name, req["delivery_id"])
            out["t"] = published[0] if published else None
        except Exception as exc:  # noqa: BLE001 - reported to the bench, which stops
            out = {"error": f"{type(exc).__name__}: {exc}"}
        print(json.dumps(out), flush=True)
    return 0


# -- 1 and 2b: event -> row in the real app ---------------------------------------------------


class _RescanCounter:
    """Counts ``Feed.rescan`` calls (start-up, watcher up, periodic, or: a bug)."""

    def __init__(self) -> None:
        from captain_tui.cockpit.feed import home_feed as feed

        self.feed = feed
        self.real = feed.Feed.rescan
        self.runs: list[tuple[float, float]] = []  # (start, seconds)
        # called (on the pump's thread) as each rescan starts
        self.on_start: Callable[[float], object] | None = None
        counter = self

        def rescan(feed_self, progress=None):
            t = time.monotonic()
            if counter.on_start is not None:
                counter.on_start(t)
            try:
                return counter.real(feed_self, progress)
            finally:
                counter.runs.append((t, time.monotonic() - t))

        feed.Feed.rescan = rescan  # type: ignore[method-assign]  # timed: the bench wraps it

    def restore(self) -> None:
        self.feed.Feed.rescan = self.real  # type: ignore[method-assign]


class _FullCollections:
    """When Python's full (generation 2) garbage collections ran: (start, seconds)."""

    def __init__(self) -> None:
        import gc

        self.gc = gc
        self.runs: list[tuple[float, float]] = []
        self._began = 0.0
        gc.callbacks.append(self._note)

    def _note(self, phase: str, info: dict) -> None:
        if info.get("generation") != 2:
            return
        if phase == "start":
            self._began = time.monotonic()
        else:
            self.runs.append((self._began, time.monotonic() - self._began))

    def restore(self) -> None:
        self.gc.callbacks.remove(self._note)


def _overlaps(span: tuple[float, float], runs: list[tuple[float, float]]) -> float:
    """How long the runs (start, seconds) overlapping ``span`` (start, end) lasted, summed."""
    a, b = span
    return sum(s for t, s in runs if t < b and t + s > a)


def _cause(span, rescans, collections) -> str:
    """What a slow event overlapped: a full rescan, a full garbage collection, or neither."""
    out = []
    if (r := _overlaps(span, rescans)) > 0:
        out.append(f"during a full rescan of {r * 1000:.0f} ms")
    if (c := _overlaps(span, collections)) > 0:
        out.append(f"during a full garbage collection of {c * 1000:.0f} ms")
    return ", ".join(out) or "no full rescan or full collection overlapped it"


async def _writer(root: Path, flag: str):
    """This script in a child process (``flag``: which writer), writing into the home at
    ``root`` on request, and ``ask``: one JSON request, its JSON reply."""
    writer = await asyncio.create_subprocess_exec(
        sys.executable,
        __file__,
        flag,
        str(root),
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        env={**os.environ, "PYTHONPATH": str(REPO)},
    )

    to, back = writer.stdin, writer.stdout
    assert to is not None and back is not None  # both are pipes

    async def ask(req: dict) -> dict:
        to.write((json.dumps(req) + "\n").encode())
        await to.drain()
        reply = json.loads(await back.readline())
        if "error" in reply:
            raise RuntimeError(f"writer refused {req}: {reply['error']}")
        return reply

    return writer, ask


async def _wait(predicate, timeout: float, what: str, every: float = 0.05):
    """Untimed waiting (set-up, tidying): a slow poll, so the bench stays out of the way."""
    deadline = time.monotonic() + timeout
    while True:
        value = predicate()
        if value:
            return value
        if time.monotonic() >= deadline:
            raise TimeoutError(f"timed out after {timeout:.0f} s waiting for {what}")
        await asyncio.sleep(every)


class _Shown:
    """Timed waiting, without polling: every ``Panel.show`` (the only way rows reach a
    panel's list) runs the pending checks; the first time one holds, the moment is
    noted (``data``) and so is the end of the next screen refresh after it (``painted``:
    the row is on screen)."""

    def __init__(self) -> None:
        from widgets.panels.base import Panel

        self.panel_class = Panel
        self.real = Panel.show
        self.checks: dict = {}
        self.data: dict[str, float] = {}
        self.painted: dict[str, float] = {}
        self.events: dict[str, asyncio.Event] = {}
        shown = self

        def show(panel, rows, now, **kwargs):
            shown.real(panel, rows, now, **kwargs)
            shown.check(panel)

        Panel.show = show  # type: ignore[method-assign, assignment]  # the bench wraps it

    def check(self, panel) -> None:
        """Run the pending checks on ``panel`` (after it was shown, or after the app
        rendered a view that left it as it was)."""
        for name, check in list(self.checks.items()):
            if check(panel):
                del self.checks[name]
                self.data[name] = time.monotonic()
                panel.app.call_after_refresh(self._painted, name)

    def _painted(self, name: str) -> None:
        self.painted[name] = time.monotonic()
        self.events[name].set()

    def expect(self, name: str, check) -> None:
        self.data.pop(name, None)
        self.painted.pop(name, None)
        self.events[name] = asyncio.Event()
        self.checks[name] = check

    async def wait(self, name: str, timeout: float) -> bool:
        try:
            await asyncio.wait_for(self.events[name].wait(), timeout)
            return True
        except asyncio.TimeoutError:
            self.checks.pop(name, None)
            return False

    def restore(self) -> None:
        self.panel_class.show = self.real  # type: ignore[method-assign]


async def _events(
    root: Path, n_events: int, label: str, settle: float = 1.0, collide: bool = False
) -> dict:
    """Events one after another; ``collide``: each written 0-50 ms after a full rescan
    started (the periodic one, made due every second), the worst moment there is."""
    from bench.report import pct
    from captain_tui.cockpit.app import CaptainApp
    from state.home import Home
    from widgets.panels.crew_panel import CrewPanel
    from widgets.panels.notifications_panel import NotificationsPanel
    from widgets.panels.questions_panel import QuestionsPanel

    rescans = _RescanCounter()
    collections = _FullCollections()
    app = CaptainApp(Home(root), run_doorbell=False)
    if collide:
        app.rescan_every = 1.0
    loop = asyncio.get_running_loop()
    rescan_started = asyncio.Event()
    rescans.on_start = lambda t: loop.call_soon_threadsafe(rescan_started.set)
    spans: list[tuple[float, float, float]] = []  # (published, painted, ms)
    writer, ask = await _writer(root, "--writer")

    latencies: dict[str, list[float]] = {k: [] for k in KINDS}  # to the painted screen
    in_table: dict[str, list[float]] = {k: [] for k in KINDS}  # to the panel's list
    missed = 0
    shown = _Shown()
    rng = random.Random(7)
    try:
        async with app.run_test(size=SIZE, notifications=True):
            await _wait(
                lambda: app.scanned and len(rescans.runs) >= 2,
                300,
                "the first scan and the watcher's",
            )
            await asyncio.sleep(settle)
            crew_panel = app.query_one(CrewPanel)
            q_panel, n_panel = app.query_one(QuestionsPanel), app.query_one(NotificationsPanel)
            keys = [row.key for row in app.view.crew_rows()]
            before_rescans = len(rescans.runs)
            began = time.monotonic()

            for i in range(n_events):
                kind, key = KINDS[i % len(KINDS)], keys[i % len(keys)]
                text = f"bench {label} {i} at {time.time_ns()}"
                if kind == "tell":
                    crew = app.view.crew(key)
                    assert crew is not None  # made before the run
                    want = str(crew.unread + 1)

                    def seen(panel, key=key, want=want):
                        return (
                            panel is crew_panel
                            and crew_panel.table.get_cell(key, "unread").plain == want
                        )
                else:
                    target = q_panel if kind == "ask" else n_panel
                    before = set(target._keys)

                    def seen(panel, target=target, before=before):
                        return panel is target and any(k not in before for k in panel._keys)

                if collide:  # untimed: wait for the next rescan to start, then write
                    rescan_started.clear()
                    await asyncio.wait_for(rescan_started.wait(), 60)
                    await asyncio.sleep(rng.uniform(0.0, 0.05))
                shown.expect("row", seen)
                reply = await ask({"op": kind, "key": key, "text": text})
                if not await shown.wait("row", EVENT_TIMEOUT) or reply.get("t") is None:
                    missed += 1
                else:
                    latencies[kind].append((shown.painted["row"] - reply["t"]) * 1000)
                    in_table[kind].append((shown.data["row"] - reply["t"]) * 1000)
                    spans.append((reply["t"], shown.painted["row"], latencies[kind][-1]))
                # tidy up, untimed: every panel back to its size before the next event
                if kind == "ask":
                    await ask({"op": "answer", "key": key, "question_id": reply["id"]})
                    await ask({"op": "ack", "key": key, "delivery_id": reply["delivery_id"]})
                    await _wait(
                        lambda r=reply: (
                            r["id"] not in q_panel._keys and r["delivery_id"] not in n_panel._keys
                        ),
                        30,
                        "the answered question to go",
                        every=0.01,
                    )
                elif kind == "signal" and reply.get("id"):
                    await ask({"op": "ack", "key": key, "delivery_id": reply["id"]})
                    await _wait(
                        lambda r=reply: r["id"] not in n_panel._keys,
                        30,
                        "the acknowledged notification to go",
                        every=0.01,
                    )
                await asyncio.sleep(rng.uniform(0.03, 0.08))  # off the watcher's phase
            elapsed = time.monotonic() - began
            during = rescans.runs[before_rescans:]
    finally:
        rescans.restore()
        collections.restore()
        shown.restore()
        writer.stdin.close()
        await writer.wait()
    every = [v for values in latencies.values() for v in values]
    slowest = max(spans, key=lambda s: s[2])
    return {
        "events": len(every),
        "slowest_cause": _cause(slowest[:2], rescans.runs, collections.runs),
        "during_rescan": sum(1 for a, b, _ in spans if _overlaps((a, b), rescans.runs) > 0),
        "full_collections": len(collections.runs),
        "missed": missed,
        "p50_ms": statistics.median(every),
        "p95_ms": pct(every, 95),
        "max_ms": max(every),
        "by_kind": {
            k: {"n": len(v), "p50_ms": statistics.median(v), "p95_ms": pct(v, 95), "max_ms": max(v)}
            for k, v in latencies.items()
            if v
        },
        "seconds": round(elapsed, 1),
        "rescans_during": len(during),
        "rescan_ms": [round(s * 1000) for _, s in during],
        "first_scan_ms": round(rescans.runs[0][1] * 1000) if rescans.runs else None,
        "in_table_p50_ms": statistics.median(v for vs in in_table.values() for v in vs),
        "in_table_p95_ms": pct([v for vs in in_table.values() for v in vs], 95),
        "samples_ms": {k: [round(x, 2) for x in v] for k, v in latencies.items()},
    }


def event_phase(
    root: Path, n_events: int, label: str, settle: float = 1.0, collide: bool = False
) -> dict:
    during = ", each written as a full rescan starts" if collide else ""
    _log(f"event -> row on the {label} home: {n_events} events{during}")
    return asyncio.run(_events(root, n_events, label, settle, collide))


# -- 4: the Work panel on a ledger of many finished items, on each backend ------------------


def work_writer_main(root: str) -> int:
    """Reads one JSON request a line (``accept``, ``cancel``), does it through the ledger,
    answers one JSON line with ``t``: time.monotonic() just before the call (conservative:
    the latency then includes the whole write), and ``published``: when its first event
    was published (the files: the event's create-once link returned, as part 1 times a
    record; PostgreSQL: the commit returned, when every reader can first see it)."""
    from state.home import Home
    from state.work import ledger
    from state.work.files import FileBackend

    home = Home(Path(root))
    published: list[float] = []
    real_append = FileBackend.append

    def append(backend, work_id, event):
        real_append(backend, work_id, event)
        published.append(time.monotonic())

    # this process is the bench's writer: timing, not behaviour
    FileBackend.append = append  # type: ignore[method-assign]
    for line in sys.stdin:
        req = json.loads(line)
        try:
            published.clear()
            t = time.monotonic()
            out: dict[str, object]
            if req["op"] == "accept":
                out = {
                    "id": ledger.accept(
                        home, source="chat", input={"text": req["text"]}, requester="bench"
                    ).work_id
                }
            else:
                ledger.cancel(home, req["id"], actor="bench")
                out = {}
            out["t"] = t
            out["published"] = published[0] if published else time.monotonic()
        except Exception as exc:  # noqa: BLE001 - reported to the bench, which stops
            out = {"error": f"{type(exc).__name__}: {exc}"}
        print(json.dumps(out), flush=True)
    return 0


class _WorkReads:
    """Counts what a Work panel rescan (or an idle cockpit) asks of the ledger, going
    through to the real backend: item reads, listings of every work ID (``all_ids``: the
    files' ``work/`` listing), directory entries read (every ``os.scandir`` in this
    process, and every ``os.listdir``: the store's listings) and, on PostgreSQL, SQL statements."""

    def __init__(self) -> None:
        from state.work import ledger
        from state.work.files import FileBackend
        from state.work.pg_backend import PostgresBackend

        self.counts = {"item": 0, "all_ids": 0, "sql": 0, "entries": 0}
        # the name the ledger calls, wrapped below (not an export of the ledger's)
        counts, real_for = self.counts, ledger.backend_for  # type: ignore[attr-defined]
        self._undo = [
            (ledger, "backend_for", real_for),
            (os, "scandir", os.scandir),
            (os, "listdir", os.listdir),
        ]
        real_scandir, real_listdir = os.scandir, os.listdir

        def listdir(path=".") -> list:
            names = real_listdir(path)  # the store lists a folder in one pass this way too
            counts["entries"] += len(names)
            return names

        class Entries:
            def __init__(self, path=".") -> None:
                self.it = real_scandir(path)

            def __iter__(self):
                for entry in self.it:
                    counts["entries"] += 1
                    yield entry

            def __enter__(self):
                return self

            def __exit__(self, *exc) -> None:
                self.it.close()

            def close(self) -> None:
                self.it.close()

        os.scandir = Entries  # type: ignore[assignment]  # counts what a rescan lists
        os.listdir = listdir

        class Counting:
            def __init__(self, real) -> None:
                self.real = real

            def item(self, work_id, *, repair=False):
                counts["item"] += 1
                return self.real.item(work_id, repair=repair)

            def __getattr__(self, name):
                return getattr(self.real, name)

        def counted(owner, name: str, key: str) -> None:
            real = getattr(owner, name)

            def call(*args, **kwargs):
                counts[key] += 1
                return real(*args, **kwargs)

            self._undo.append((owner, name, real))
            setattr(owner, name, call)

        counted(FileBackend, "all_ids", "all_ids")
        counted(PostgresBackend, "all_ids", "all_ids")
        counted(PostgresBackend, "run", "sql")
        ledger.backend_for = lambda home: Counting(real_for(home))  # type: ignore[attr-defined]

    def take(self) -> dict:
        out = dict(self.counts)
        for k in self.counts:
            self.counts[k] = 0
        return out

    def restore(self) -> None:
        for owner, name, value in reversed(self._undo):
            setattr(owner, name, value)


def rescan_cost(home, runs: int = 5) -> dict:
    """A fresh Work panel feed's first rescan, then ``runs`` steady ones (what the cockpit
    repeats on its clock): time and what each asked of the ledger."""
    from captain_tui.cockpit.feed.work_feed import WorkFeed

    reads = _WorkReads()
    try:
        feed = WorkFeed(home)
        t = time.monotonic()
        rows = feed.rescan([], announce=False)
        first = {"ms": (time.monotonic() - t) * 1000, "rows": len(rows), **reads.take()}
        times, asked = [], []
        for _ in range(runs):
            t = time.monotonic()
            feed.rescan([], announce=False)
            times.append((time.monotonic() - t) * 1000)
            asked.append(reads.take())
    finally:
        reads.restore()
    return {
        "first": first,
        "steady_ms": statistics.median(times),
        "steady": max(asked, key=lambda a: a["item"] + a["sql"] + a["all_ids"] + a["entries"]),
    }


def _close_one(home) -> None:
    """One item accepted and cancelled through the ledger (untimed): after a fill by the
    shortcut, the first close files the newest finished items as any writer would (the
    files' index, built once from the ``work/`` listing)."""
    from state.work import ledger

    item = ledger.accept(home, source="chat", input={"text": "bench close"}, requester="bench")
    ledger.cancel(home, item.work_id, actor="bench")


async def _work_idle(root: Path, seconds: float, settle: float) -> dict:
    """The real app, doorbell on, left alone for ``seconds`` once its first scan is shown
    (and, on PostgreSQL, its ledger listener connected), with its periodic rescan every
    third of that (30 s in the cockpit): what it asked of the ledger meanwhile (statements,
    directory entries, item reads)."""
    from captain_tui.cockpit.app import CaptainApp
    from state.home import Home

    app = CaptainApp(Home(root))
    app.rescan_every = max(seconds / 3, 0.2)  # the periodic rescan is part of idle: 3 of them
    reads = _WorkReads()
    try:
        async with app.run_test(size=SIZE, notifications=True):
            await _wait(lambda: app.scanned and app.view.work, 300, "the first scan")
            if app.view.ledger != "files":
                await _wait(
                    lambda: app._pump is not None and app._pump.listening, 60, "the ledger listener"
                )
            await asyncio.sleep(settle)
            reads.take()
            t = time.monotonic()
            await asyncio.sleep(seconds)
            asked = reads.take()
            asked["seconds"] = round(time.monotonic() - t, 1)
    finally:
        reads.restore()
    return asked


async def _work_events(root: Path, n_events: int, settle: float) -> dict:
    from bench.report import pct
    from captain_tui.cockpit.app import CaptainApp
    from state.home import Home
    from widgets.panels.work_panel import WorkPanel

    app = CaptainApp(Home(root), run_doorbell=False)
    writer, ask = await _writer(root, "--work-writer")

    painted, in_table, called, missed = [], [], [], 0
    shown = _Shown()
    rng = random.Random(7)
    try:
        async with app.run_test(size=SIZE, notifications=True):
            await _wait(lambda: app.scanned and app.view.work, 300, "the first scan")
            await asyncio.sleep(settle)
            panel = app.query_one(WorkPanel)
            for i in range(n_events):
                before = set(panel._keys)
                shown.expect(
                    "row",
                    lambda p, before=before: p is panel and any(k not in before for k in p._keys),
                )
                reply = await ask({"op": "accept", "text": f"bench work {i}"})
                if not await shown.wait("row", EVENT_TIMEOUT):
                    missed += 1
                else:
                    painted.append((shown.painted["row"] - reply["published"]) * 1000)
                    in_table.append((shown.data["row"] - reply["published"]) * 1000)
                    called.append((shown.painted["row"] - reply["t"]) * 1000)
                # tidy up, untimed: the new item finishes, the panel keeps its size
                await ask({"op": "cancel", "id": reply["id"]})
                await _wait(
                    lambda r=reply: (w := app.view.work.get(r["id"])) is not None and w.finished,
                    30,
                    "the cancelled item to show finished",
                    every=0.01,
                )
                await asyncio.sleep(rng.uniform(0.03, 0.08))
    finally:
        shown.restore()
        writer.stdin.close()
        await writer.wait()
    return {
        "events": len(painted),
        "missed": missed,
        "p50_ms": statistics.median(painted) if painted else None,
        "p95_ms": pct(painted, 95) if painted else None,
        "max_ms": max(painted) if painted else None,
        "in_table_p50_ms": statistics.median(in_table) if in_table else None,
        "in_table_p95_ms": pct(in_table, 95) if in_table else None,
        "from_call_p50_ms": statistics.median(called) if called else None,
        "from_call_p95_ms": pct(called, 95) if called else None,
    }


def work_phase(
    tmp: Path, finished: int, small: int, n_events: int, settle: float, idle: float
) -> list:
    """On each backend: a ledger of ``small`` finished items, its rescan cost and what an
    idle cockpit asks of it over ``idle`` seconds; grown to ``finished``, both again and
    event -> Work row in the real app."""
    from bench.ledger_claims import Postgres, add_finished, make_home
    from bench.report import CannotRun

    out = []
    pg = None
    for kind in ("files", "postgresql"):
        entry: dict = {"backend": kind, "finished": finished, "small": small}
        out.append(entry)
        url = None
        if kind == "postgresql":
            try:
                pg = Postgres()
            except CannotRun as exc:
                entry["skipped"] = str(exc)
                _log(f"work panel on {kind}: skipped ({exc})")
                continue
            url = pg.fresh_url()
        try:
            root = tmp / f"work-{kind}" / "home"
            root.parent.mkdir()
            home = make_home(root, url)
            _log(f"work panel on {kind}: {small} finished items")
            add_finished(kind, home, small, via_api=0)
            _close_one(home)
            entry["small_cost"] = rescan_cost(home)
            _log(f"work panel on {kind}: idle cockpit, {small} finished items")
            entry["small_idle"] = asyncio.run(_work_idle(root, idle, settle))
            _log(f"work panel on {kind}: {finished} finished items")
            entry["fill"] = add_finished(kind, home, finished - small, via_api=0)
            _close_one(home)
            entry["cost"] = rescan_cost(home)
            _log(f"work panel on {kind}: idle cockpit, {finished} finished items")
            entry["idle"] = asyncio.run(_work_idle(root, idle, settle))
            _log(f"work panel on {kind}: event -> row, {n_events} events")
            entry["events"] = asyncio.run(_work_events(root, n_events, settle))
        except Exception as exc:  # noqa: BLE001 - one backend's failure is its row's
            import traceback

            _log(f"work panel on {kind} failed:\n{traceback.format_exc()}")
            entry["failed"] = f"{type(exc).__name__}: {str(exc)[:200]}"
        finally:
            if kind == "postgresql" and pg is not None:
                pg.stop()
    return out


# -- 6: approvals (#26): a held hook's request -> its row in the Approvals panel -------------

APPROVAL_BUDGET_MS = 200.0


class _Hooks:
    """Real ``PermissionRequest`` hooks (``python -m captain_tui hook claude ...``, as the
    agent runs them), each in a crew's environment, held until decided or stopped."""

    def __init__(self, root: Path) -> None:
        from state.crew import approvals
        from state.home import Home

        self.home = Home(root)
        (root / "config.toml").write_text("[crew]\napproval_timeout = 900\n")
        self.procs: list[subprocess.Popen] = []
        for key in self.home.crew_keys():
            approvals.prepare(self.home, key)  # as each crew's agent start does

    def raise_one(self, key: str, i: int) -> subprocess.Popen:
        from state.crew import crewlog, protocol

        snap, _ = crewlog.load(self.home, key)
        assert snap is not None  # the bench asks only of crews it made
        env = {
            **{k: v for k, v in os.environ.items() if not k.startswith("CAPTAIN_")},
            **protocol.crew_env(
                self.home, snap.name, snap.incarnation_id, snap.assignment.assignment_id
            ),
            "PYTHONPATH": str(REPO),
        }
        proc = subprocess.Popen(
            [sys.executable, "-m", "captain_tui", "hook", "claude", "PermissionRequest"],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            env=env,
            cwd=self.home.root.parent,
        )
        assert proc.stdin is not None  # PIPE
        data = {
            "hook_event_name": "PermissionRequest",
            "tool_name": "Bash",
            "tool_input": {"command": f"make bench-target-{i}"},
        }
        proc.stdin.write(json.dumps(data).encode())
        proc.stdin.close()
        self.procs.append(proc)
        return proc

    def stop(self) -> None:
        """Every hook still held ends as the agent ends one (SIGTERM: no decision)."""
        for proc in self.procs:
            if proc.poll() is None:
                proc.terminate()
        for proc in self.procs:
            try:
                proc.wait(30)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
            if proc.stdout is not None:
                proc.stdout.close()
        self.procs.clear()


async def _approval_rows(root: Path, rounds: int, settle: float) -> dict:
    """The real cockpit on ``root``; each round a real hook raises a request for the next
    crew. Timed from the request's publication (its file's ctime: the store's create-once
    link, the moment a watcher can first see it; wall clock, as the hook is another
    process) to the end of the first screen refresh after its row reached the Approvals
    panel, and from the hook's start (its cold start included). Tidied untimed: the request
    allowed, the hook gone, its notice acknowledged."""
    from bench.report import pct
    from captain_tui import usecases
    from captain_tui.cockpit.app import CaptainApp
    from state.crew import notify
    from state.home import Home
    from widgets.panels.approvals_panel import ApprovalsPanel

    hooks = _Hooks(root)
    home = hooks.home
    rescans = _RescanCounter()
    app = CaptainApp(Home(root), run_doorbell=False)
    published, spawned, listed, missed = [], [], [], 0
    shown = _Shown()
    wall_at: dict[str, float] = {}
    real_painted = shown._painted

    def painted(name: str) -> None:
        wall_at[name] = time.time()
        real_painted(name)

    shown._painted = painted  # type: ignore[method-assign]  # the wall clock too, here
    try:
        async with app.run_test(size=SIZE, notifications=True):
            await _wait(
                lambda: app.scanned and len(rescans.runs) >= 2,
                300,
                "the first scan and the watcher's",
            )
            await asyncio.sleep(settle)
            panel = app.query_one(ApprovalsPanel)
            keys = [row.key for row in app.view.crew_rows()]
            for i in range(rounds):
                key = keys[i % len(keys)]
                before = set(panel._keys)
                shown.expect(
                    "row",
                    lambda p, before=before: p is panel and any(k not in before for k in p._keys),
                )
                t0 = time.monotonic()
                proc = hooks.raise_one(key, i)
                if not await shown.wait("row", EVENT_TIMEOUT):
                    missed += 1
                    continue
                (request_id,) = set(panel._keys) - before
                req = home.root / "approvals" / key / f"{request_id}.json"
                ctime = req.stat().st_ctime_ns / 1e9
                published.append((wall_at["row"] - ctime) * 1000)
                listed.append(
                    (wall_at["row"] - ctime - (shown.painted["row"] - shown.data["row"])) * 1000
                )
                spawned.append((shown.painted["row"] - t0) * 1000)
                # tidy up, untimed
                row = app.view.crew(key)
                assert row is not None  # made before the run
                crew_name = row.name
                await asyncio.to_thread(usecases.approve, home, crew_name, request_id, "allow")
                await asyncio.to_thread(proc.wait, 30)
                await _wait(lambda r=request_id: r not in panel._keys, 30, "the request to go")
                for n in [n for n in app.view.notifications() if n.key == key]:
                    notify.acknowledge(home, crew_name, n.delivery_id)
                await _wait(
                    lambda: not any(n.key == key for n in app.view.notifications()),
                    30,
                    "the notice to go",
                )
                await asyncio.sleep(random.uniform(0.03, 0.08))
    finally:
        hooks.stop()
        rescans.restore()
        shown.restore()
    return {
        "crews": len(keys),
        "rounds": len(published),
        "missed": missed,
        "p50_ms": statistics.median(published) if published else None,
        "p95_ms": pct(published, 95) if published else None,
        "max_ms": max(published) if published else None,
        "in_table_p50_ms": statistics.median(listed) if listed else None,
        "in_table_p95_ms": pct(listed, 95) if listed else None,
        "from_hook_start_p50_ms": statistics.median(spawned) if spawned else None,
        "from_hook_start_p95_ms": pct(spawned, 95) if spawned else None,
    }


def approvals_phase(
    root: Path, rounds: int, n_events: int, idle_seconds: float, settle: float, warm: float
) -> dict:
    """Request -> Approvals row; then, with a request held open by every crew, the event
    -> row and idle runs again."""
    _log(f"approvals: request -> Approvals row, {rounds} rounds")
    out: dict = {"rows": asyncio.run(_approval_rows(root, rounds, settle))}
    hooks = _Hooks(root)
    try:
        from state.crew import approvals

        keys = sorted(d.name for d in (root / "crew").iterdir() if d.is_dir())
        for i, key in enumerate(keys):
            hooks.raise_one(key, 1000 + i)
        _log(f"approvals: {len(keys)} requests held open, one per crew")
        deadline = time.monotonic() + 120
        while len(approvals.open_requests(hooks.home)) < len(keys):
            if time.monotonic() > deadline:
                raise TimeoutError("the crews' requests did not all open")
            time.sleep(0.1)
        out["held"] = len(keys)
        out["events"] = event_phase(root, n_events, "held requests", settle)
        from bench.cockpit_idle import measure  # the one idle measurement (and budget)

        _log(f"approvals: the cockpit idle for {idle_seconds:.0f} s, requests held open")
        out["idle"] = measure(root, None, idle_seconds, warm)["idle"]
    finally:
        hooks.stop()
    return out


# -- 5: a keystroke -> the frame with its result, on the big home ---------------------------

# (key, what it does, how to know it was done): the Crew panel's cursor down and up, the
# Tell form opened and closed after each (so each Tell is about another crew than the last
# one: its text is new), the Recruit form opened and closed. A form is built at its first
# open and shown again after (widgets/screens/forms.py): the first round's opens build them.
KEYSTROKES = (
    ("j", "move the selection down (Crew panel)", "moved"),
    ("t", "open the Tell form", "TellScreen"),
    ("escape", "close a form", "closed"),
    ("k", "move the selection up (Crew panel)", "moved"),
    ("t", "open the Tell form", "TellScreen"),
    ("escape", "close a form", "closed"),
    ("r", "open the Recruit form (a new crew)", "RecruitScreen"),
    ("escape", "close a form", "closed"),
)
KEY_BUDGET_MS = 16.0
AGES_TICKS = 15  # ages redraws timed after the keystrokes, the clock a minute on for each


async def _keys(root: Path, rounds: int, settle: float) -> dict:
    """The real cockpit on ``root`` (the feed and watcher running, as ``captain`` runs
    them); each keystroke posted as the Pilot posts one, timed from just before it is
    posted to the end of the first screen refresh after its action ran (Textual's
    ``call_after_refresh``, asked as the action returns: the frame drawn with its
    result)."""
    from bench.report import pct
    from captain_tui.cockpit.app import CaptainApp
    from state.home import Home
    from widgets.panels.base import Panel
    from widgets.panels.crew_panel import CrewPanel

    class Timed(CaptainApp):
        """The cockpit, noting when the frame after each key's action was drawn."""

        CSS_PATH = str(Path(inspect.getfile(CaptainApp)).with_name(str(CaptainApp.CSS_PATH)))

        def __init__(self, *args, **kwargs) -> None:
            super().__init__(*args, **kwargs)
            self.bench_frame = asyncio.Event()
            self.bench_frame_at = 0.0
            self.bench_actions: list[str] = []

        async def run_action(self, action, *args, **kwargs) -> bool:
            done = await super().run_action(action, *args, **kwargs)
            self.bench_actions.append(str(action))
            self.call_after_refresh(self.bench_drawn)
            return done

        def bench_drawn(self) -> None:
            self.bench_frame_at = time.monotonic()
            self.bench_frame.set()

    rescans = _RescanCounter()
    collections = _FullCollections()
    ahead = [timedelta(0)]  # the app's clock runs this far ahead (the ages redraws below)
    app = Timed(
        Home(root), run_doorbell=False, clock=lambda: datetime.now().astimezone() + ahead[0]
    )
    by_key: dict[str, list[float]] = {}
    ticks: list[float] = []
    spans: list[tuple[float, float, float, str]] = []
    rng = random.Random(11)
    try:
        async with app.run_test(size=SIZE, notifications=True) as pilot:
            await _wait(
                lambda: app.scanned and len(rescans.runs) >= 2,
                300,
                "the first scan and the watcher's",
            )
            await asyncio.sleep(settle)
            table = app.query_one(CrewPanel).table
            table.focus()
            await pilot.pause()
            crews = len(app.view.crew_rows())
            built: set[str] = set()
            for _ in range(rounds):
                for key, what, done in KEYSTROKES:
                    before = (type(app.screen).__name__, table.cursor_row)
                    app.bench_frame.clear()
                    t0 = time.monotonic()
                    await pilot.press(key)
                    await asyncio.wait_for(app.bench_frame.wait(), EVENT_TIMEOUT)
                    ms = (app.bench_frame_at - t0) * 1000
                    now = (type(app.screen).__name__, table.cursor_row)
                    if (
                        done == "moved"
                        and now[1] == before[1]
                        or (done not in ("moved", "closed") and now[0] != done)
                    ):
                        raise RuntimeError(f"{key!r} did not {what}: {before} -> {now}")
                    label = what
                    if done.endswith("Screen") and done not in built:
                        built.add(done)
                        label = f"{what}, the first (it is built)"
                    by_key.setdefault(label, []).append(ms)
                    spans.append((t0, app.bench_frame_at, ms, label))
                    await asyncio.sleep(rng.uniform(0.03, 0.08))  # a person types slower
            # what a key pressed meanwhile waits behind: an ages redraw (the UI thread's
            # periodic work) with the clock a minute on each time, so every minute turns
            for _ in range(AGES_TICKS):
                ahead[0] += timedelta(minutes=1, seconds=1)
                if app._ages_timer is not None:
                    app._ages_timer.stop()  # this one instead of the timer's
                t0 = time.perf_counter()
                app._show_ages()
                ticks.append((time.perf_counter() - t0) * 1000)
                await pilot.pause()
            shown = sum(len(p.rows()) for p in app.query(Panel))
    finally:
        rescans.restore()
        collections.restore()
    every = [ms for _, _, ms, _ in spans]
    slowest = max(spans, key=lambda s: s[2])
    return {
        "crews": crews,
        "keys": len(every),
        "p50_ms": statistics.median(every),
        "p95_ms": pct(every, 95),
        "max_ms": max(every),
        "slowest": slowest[3],
        "slowest_cause": _cause(slowest[:2], rescans.runs, collections.runs),
        "ages_tick": {
            "n": len(ticks),
            "rows": shown,
            "p50_ms": statistics.median(ticks),
            "p95_ms": pct(ticks, 95),
            "max_ms": max(ticks),
        },
        "by_key": {
            what: {
                "n": len(v),
                "p50_ms": statistics.median(v),
                "p95_ms": pct(v, 95),
                "max_ms": max(v),
            }
            for what, v in by_key.items()
        },
    }


def keys_phase(root: Path, rounds: int, settle: float) -> dict:
    _log(f"keystroke -> frame on the big home: {rounds} rounds of {len(KEYSTROKES)} keys")
    return asyncio.run(_keys(root, rounds, settle))


# -- 2a: first paint and RSS, in a fresh process ---------------------------------------------


def _status_kb(field: str) -> int | None:
    try:
        for line in Path("/proc/self/status").read_text().splitlines():
            if line.startswith(field + ":"):
                return int(line.split()[1])
    except OSError:
        pass
    return None


def _children() -> list[int]:
    """This process's live children (the watcher process, tmux clients in flight)."""
    me, out = str(os.getpid()), []
    for pid in os.listdir("/proc"):
        if pid.isdigit():
            try:
                stat = Path(f"/proc/{pid}/stat").read_text()
            except OSError:
                continue
            if stat.rsplit(")", 1)[1].split()[1] == me:
                out.append(int(pid))
    return out


def _hwm_of(pid: int) -> int:
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmHWM:"):
                return int(line.split()[1])
    except OSError:
        pass
    return 0


def paint_driver(root: str, settle: float) -> int:
    """Start the cockpit as ``captain`` does (doorbell on) and report when the first crew
    rows and the full first scan reached the Crew panel's table, and peak RSS."""
    from captain_tui.cockpit.app import CaptainApp
    from state.home import Home
    from widgets.panels.crew_panel import CrewPanel

    rescans = _RescanCounter()
    marks: dict = {}

    async def main() -> None:
        app = CaptainApp(Home(Path(root)))
        shown = _Shown()
        first: list[int] = []

        def rows(panel) -> bool:
            if isinstance(panel, CrewPanel) and panel.table.row_count > 0:
                first.append(panel.table.row_count)
                return True
            return False

        shown.expect("rows", rows)
        shown.expect(
            "scan",
            lambda panel: (
                isinstance(panel, CrewPanel)
                and app.scanned
                and panel.table.row_count == len(app.view.crew_rows())
            ),
        )
        # The full scan is on screen with the frame after the app took the scan's own
        # update: since the crews are drawn before the ledger is read, that update most
        # often changes no crew row, so no Panel.show follows it, and a mark taken on the
        # next one timed the first ages redraw (5 s after mount), not the scan.
        real_show_view = CaptainApp._show

        def show_view(app_self: CaptainApp) -> None:
            real_show_view(app_self)
            if app_self is app and "scan" in shown.checks:
                shown.check(app.query_one(CrewPanel))

        CaptainApp._show = show_view  # type: ignore[method-assign, assignment]  # the bench times it
        async with app.run_test(size=SIZE, notifications=True):
            if not (await shown.wait("rows", 300) and await shown.wait("scan", 300)):
                raise TimeoutError("the crew rows did not come")
            marks.update(
                t_rows=shown.painted["rows"],
                t_scan=shown.painted["scan"],
                rows_first=first[0],
                rows=app.query_one(CrewPanel).table.row_count,
            )
            await _wait(lambda: len(rescans.runs) >= 2, 300, "the watcher")
            marks["t_watch"] = time.monotonic()
            await asyncio.sleep(settle)
            marks["vmhwm_kb"] = _status_kb("VmHWM")
            marks["vmrss_kb"] = _status_kb("VmRSS")
            marks["children_hwm_kb"] = sum(_hwm_of(pid) for pid in _children())
            marks["rescan_ms"] = [round(s * 1000) for _, s in rescans.runs]
            print(json.dumps(marks), flush=True)
            os._exit(0)  # the numbers are out; tearing down threads is not measured

    asyncio.run(main())
    return 0


def paint_phase(root: Path, runs: int, settle: float) -> dict:
    _log(f"first paint on the big home: {runs} fresh processes")
    out = []
    for _ in range(runs):
        t0 = time.monotonic()
        proc = subprocess.run(
            [sys.executable, __file__, "--paint-driver", str(root), "--settle", str(settle)],
            capture_output=True,
            text=True,
            env={**os.environ, "PYTHONPATH": str(REPO)},
            timeout=900,
        )
        if proc.returncode != 0:
            raise RuntimeError(f"paint driver failed: {proc.stderr[-2000:]}")
        marks = json.loads(proc.stdout.strip().splitlines()[-1])
        out.append(
            {
                "rows_ms": (marks["t_rows"] - t0) * 1000,
                "scan_ms": (marks["t_scan"] - t0) * 1000,
                "watch_ms": (marks["t_watch"] - t0) * 1000,
                "rows_first": marks["rows_first"],
                "rows": marks["rows"],
                "vmhwm_mb": marks["vmhwm_kb"] / 1024,
                "watcher_hwm_mb": marks["children_hwm_kb"] / 1024,
                "rescan_ms": marks["rescan_ms"],
            }
        )
        _log(
            f"  first rows {out[-1]['rows_ms']:.0f} ms ({marks['rows_first']} crew), full "
            f"scan {out[-1]['scan_ms']:.0f} ms, watcher up {out[-1]['watch_ms']:.0f} ms, "
            f"peak RSS {out[-1]['vmhwm_mb']:.0f} MB (+ {out[-1]['watcher_hwm_mb']:.0f} MB "
            "watcher process)"
        )
    return {
        "runs": out,
        "rows_ms": statistics.median(r["rows_ms"] for r in out),
        "scan_ms": statistics.median(r["scan_ms"] for r in out),
        "watch_ms": statistics.median(r["watch_ms"] for r in out),
        "peak_rss_mb": max(r["vmhwm_mb"] for r in out),
        "watcher_rss_mb": max(r["watcher_hwm_mb"] for r in out),
        "median_rss_mb": statistics.median(r["vmhwm_mb"] for r in out),
    }


# -- the report -----------------------------------------------------------------------------


def _k(n: int) -> str:
    return f"{n // 1000}k" if n >= 1000 else str(n)


def _verdict(ok: bool) -> str:
    return "meets" if ok else "**missed**"


def _latency(ev: dict) -> str:
    missed = f", {ev['missed']} missed" if ev["missed"] else ""
    return (
        f"p50 {ev['p50_ms']:.0f} ms, p95 {ev['p95_ms']:.0f} ms, max {ev['max_ms']:.0f} ms"
        f"{missed} (in the panel list: p50 {ev['in_table_p50_ms']:.0f}, p95 "
        f"{ev['in_table_p95_ms']:.0f})"
    )


def _asked(a: dict, kind: str) -> str:
    sql = f", {a['sql']} SQL statements" if kind == "postgresql" else ""
    entries = f", {a.get('entries', 0)} directory entries" if kind == "files" else ""
    listed = f", {a['all_ids']} listing of every work ID" if a["all_ids"] else ""
    return f"{a['item']} item reads{sql}{entries}{listed}"


def _grows(big: dict, small: dict, slack: float = 1.0) -> bool:
    """Whether ``big`` asked more of the ledger than ``small`` (times ``slack``, for an idle
    window whose clocks may fit one round more), or listed every work ID."""
    return bool(big["all_ids"]) or any(
        big.get(k, 0) > small.get(k, 0) * slack + (1 if slack > 1 else 0)
        for k in ("item", "sql", "entries")
    )


def _work_rows(w: dict) -> list[str]:
    kind, size = w["backend"], _k(w["finished"])
    if "skipped" in w:
        return [
            f"| Work panel on {kind}, {size} finished items | not run: {w['skipped']} | "
            "— | skipped |"
        ]
    lines = []
    if "cost" not in w:
        return [
            f"| Work panel on {kind}, {size} finished items | failed: {w['failed']} | "
            "— | **missed** |"
        ]
    ev, cost, small = w.get("events"), w["cost"], w["small_cost"]
    if ev is None:
        lines.append(
            f"| Work panel on {kind}, {size} finished items: work event -> row | "
            f"failed: {w['failed']} | p95 <= 100 ms | **missed** |"
        )
    elif ev["events"]:
        lines.append(
            f"| Work panel on {kind}, {size} finished items: work event (an accept, from its "
            f"first event {'published' if kind == 'files' else 'committed'}) -> row on "
            f"screen; {ev['events']} events | p50 {ev['p50_ms']:.0f} ms, p95 "
            f"{ev['p95_ms']:.0f} ms, max {ev['max_ms']:.0f} ms"
            f"{', ' + str(ev['missed']) + ' missed' if ev['missed'] else ''} (in the panel "
            f"list: p50 {ev['in_table_p50_ms']:.0f}, p95 {ev['in_table_p95_ms']:.0f}; from "
            f"the writer's call, the whole write included: p50 {ev['from_call_p50_ms']:.0f},"
            f" p95 {ev['from_call_p95_ms']:.0f}) | p95 <= 100 ms | "
            f"{_verdict(ev['p95_ms'] <= 100 and not ev['missed'])} |"
        )
    else:
        lines.append(
            f"| Work panel on {kind}, {size} finished items: work event -> row | "
            f"{ev['missed']} missed | p95 <= 100 ms | **missed** |"
        )
    grows = _grows(cost["steady"], small["steady"])
    ratio = cost["steady_ms"] / max(small["steady_ms"], 0.001)
    lines.append(
        f"| Work panel on {kind}: one periodic rescan, {size} finished items vs "
        f"{_k(w['small'])} | {cost['steady_ms']:.1f} ms vs {small['steady_ms']:.1f} ms "
        f"(x{ratio:.2f}); asks {_asked(cost['steady'], kind)} vs "
        f"{_asked(small['steady'], kind)}; first rescan {cost['first']['ms']:.0f} ms, "
        f"{_asked(cost['first'], kind)}, {cost['first']['rows']} rows | no read that grows "
        f"with history | {_verdict(not grows)} |"
    )
    idle, small_idle = w.get("idle"), w.get("small_idle")
    if idle is not None and small_idle is not None:
        lines.append(
            f"| Work panel on {kind}: the cockpit idle (doorbell on, 3 periodic rescans) for "
            f"{idle['seconds']:.0f} s, {size} finished items vs {_k(w['small'])} | asked "
            f"{_asked(idle, kind)} vs {_asked(small_idle, kind)} | no read that grows "
            f"with history | {_verdict(not _grows(idle, small_idle, 1.5))} |"
        )
    return lines


def report(results: dict) -> str:
    m = results["machine"]
    others = results.get("others_cores", {})
    busy = ", ".join(f"{k} {v:.2f}" for k, v in others.items())
    lines = [
        f"machine: {m['platform']}, {m['nproc']} cores, Python {m['python']}, "
        f"textual {m['textual']}; load average (1, 5, 15 min) {m['loadavg']} at the "
        f"start, {m.get('loadavg_end', '?')} at the end; cores kept busy by other "
        f"processes during each phase: {busy or '?'}",
        "",
    ]
    lines += ["| what | measured | budget | verdict |", "|---|---|---|---|"]
    if "small" in results:
        lines += _home_rows(results)
    elif "keys" in results:  # --keys-only
        lines.append(_keys_row(results["keys"]))
        lines += _ages_row(results["keys"].get("ages_tick"))
    for w in results.get("work", []):
        lines += _work_rows(w)
    results["rows"] = [
        dict(
            zip(
                ("what", "measured", "budget", "verdict"),
                (c.strip() for c in line.strip("|").split(" | ")),
            )
        )
        for line in lines
        if line.startswith("| ") and not line.startswith("| what |")
    ]
    return "\n".join(lines)


def _keys_row(k: dict) -> str:
    parts = "; ".join(
        f"{what}: p50 {v['p50_ms']:.1f}, p95 {v['p95_ms']:.1f}" for what, v in k["by_key"].items()
    )
    return (
        f"| big home ({k['crews']} crew): a keystroke -> the frame with its result "
        f"(Pilot; {k['keys']} keys: {parts}) | p50 {k['p50_ms']:.1f} ms, p95 "
        f"{k['p95_ms']:.1f} ms, max {k['max_ms']:.0f} ms ({k['slowest']}, "
        f"{k['slowest_cause']}) | p95 <= {KEY_BUDGET_MS:.0f} ms | "
        f"{_verdict(k['p95_ms'] <= KEY_BUDGET_MS)} |"
    )


def _ages_row(a: dict | None) -> list[str]:
    """What a key waits behind at worst on the big home's UI thread: an ages redraw."""
    if not a:
        return []
    return [
        f"| big home: an ages redraw (the UI thread's periodic work; {a['n']} redraws, the "
        f"clock a minute on for each; {a['rows']} rows in the panels) | p50 {a['p50_ms']:.1f} "
        f"ms, p95 {a['p95_ms']:.1f} ms, max {a['max_ms']:.1f} ms | within a key's p95 <= "
        f"{KEY_BUDGET_MS:.0f} ms | {_verdict(a['p95_ms'] <= KEY_BUDGET_MS)} |"
    ]


def _approval_rows_md(a: dict) -> list[str]:
    r = a["rows"]
    lines = []
    if r["rounds"]:
        lines.append(
            f"| approval request raised (a real PermissionRequest hook writes it) -> its row "
            f"in the cockpit's Approvals panel, {r['crews']} crew; {r['rounds']} requests | p50 "
            f"{r['p50_ms']:.0f} ms, p95 {r['p95_ms']:.0f} ms, max {r['max_ms']:.0f} ms"
            f"{', ' + str(r['missed']) + ' missed' if r['missed'] else ''} (from the hook's "
            f"start, its cold start included: p50 {r['from_hook_start_p50_ms']:.0f}, p95 "
            f"{r['from_hook_start_p95_ms']:.0f}) | p95 <= {APPROVAL_BUDGET_MS:.0f} ms | "
            f"{_verdict(r['p95_ms'] <= APPROVAL_BUDGET_MS and not r['missed'])} |"
        )
    else:
        lines.append(
            f"| approval request -> Approvals row | {r['missed']} missed | p95 <= "
            f"{APPROVAL_BUDGET_MS:.0f} ms | **missed** |"
        )
    if "events" in a:
        ev, idle = a["events"], a["idle"]
        lines.append(
            f"| store event -> row on screen, {a['held']} crew each holding an approval "
            f"request open (its hook waiting); {ev['events']} events | {_latency(ev)} | p95 "
            f"<= 100 ms | {_verdict(ev['p95_ms'] <= 100 and not ev['missed'])} |"
        )
        from bench.cockpit_idle import BUDGET as IDLE_BUDGET  # the one idle budget

        lines.append(
            f"| cockpit idle, {a['held']} crew each holding an approval request open (no "
            f"panes), doorbell on, over {idle['wall_s']:.0f} s (bench/cockpit_idle.py's "
            f"measurement) | {idle['total_pct']:.2f} % of one core (cockpit "
            f"{idle['cockpit_pct']:.2f}, watcher process {idle['watcher_pct']:.2f}, tmux "
            f"clients {idle['tmux_clients_pct']:.2f}; the held hooks' own polling is the "
            f"crews', not counted) | <= {IDLE_BUDGET:g} % | "
            f"{_verdict(idle['total_pct'] <= IDLE_BUDGET)} |"
        )
    return lines


def _home_rows(results: dict) -> list[str]:
    lines: list[str] = []
    small, big = results["small"], results["big"]
    ev = results["events_small"]
    sc = small["census"]
    lines.append(
        f"| store event -> row on screen, {sc['crew']} crew ({sc['mail']} messages, "
        f"{sc['notifications']} notifications); {ev['events']} events | {_latency(ev)} | "
        f"p95 <= 100 ms | {_verdict(ev['p95_ms'] <= 100 and not ev['missed'])} |"
    )
    bc = big["census"]
    size = (
        f"{bc['crew']} crew, {_k(bc['mail'])} messages ({bc['unread']} unread), "
        f"{_k(bc['notifications'])} notifications ({bc['unacknowledged']} "
        "unacknowledged)"
    )
    p = results["paint"]
    runs = len(p["runs"])
    lines.append(
        f"| big home ({size}): first paint, first crew rows on screen, from process "
        f"start (median of {runs}) | {p['rows_ms']:.0f} ms | <= 2000 ms | "
        f"{_verdict(p['rows_ms'] <= 2000)} |"
    )
    lines.append(
        f"| big home: first full scan shown, from process start (median of {runs}) | "
        f"{p['scan_ms']:.0f} ms | <= 2000 ms (first paint) | "
        f"{_verdict(p['scan_ms'] <= 2000)} |"
    )
    rss = p["peak_rss_mb"] + p["watcher_rss_mb"]
    lines.append(
        f"| big home: peak RSS, cockpit process + its watcher process (max of "
        f"{runs}) | {p['peak_rss_mb']:.0f} + {p['watcher_rss_mb']:.0f} MB | <= 250 MB | "
        f"{_verdict(rss <= 250)} |"
    )
    eb = results["events_big"]
    lines.append(
        f"| big home: watcher up (events arrive without a rescan), from process "
        f"start (median of {runs}) | {p['watch_ms']:.0f} ms | — | info |"
    )
    lines.append(
        f"| big home: store event -> row on screen; {eb['events']} events | "
        f"{_latency(eb)} | p95 <= 100 ms | "
        f"{_verdict(eb['p95_ms'] <= 100 and not eb['missed'])} |"
    )
    lines.append(
        f"| big home: the slowest single store event -> row on screen, of {eb['events']} "
        f"events | {eb['max_ms']:.0f} ms ({eb['slowest_cause']}; {eb['full_collections']} "
        f"full garbage collections, {eb['rescans_during']} full rescans in the run) | max "
        f"<= {MAX_EVENT_MS:.0f} ms | {_verdict(eb['max_ms'] <= MAX_EVENT_MS)} |"
    )
    if "events_collide" in results:
        ec = results["events_collide"]
        lines.append(
            f"| big home: store event written 0-50 ms after a full rescan started (the "
            f"periodic one made due every second; rescans took p50 "
            f"{statistics.median(ec['rescan_ms'] or [0]):.0f} ms) -> row on screen; "
            f"{ec['events']} events, {ec['during_rescan']} of them shown while a rescan "
            f"ran | {_latency(ec)} | max <= {MAX_EVENT_MS:.0f} ms | "
            f"{_verdict(ec['max_ms'] <= MAX_EVENT_MS and not ec['missed'])} |"
        )
    if "keys" in results:
        lines.append(_keys_row(results["keys"]))
        lines += _ages_row(results["keys"].get("ages_tick"))
    r50, r95 = eb["p50_ms"] / ev["p50_ms"], eb["p95_ms"] / ev["p95_ms"]
    periodic = eb["seconds"] / 30.0
    lines.append(
        f"| one new event, big home / small home | p50 x{r50:.2f}, p95 x{r95:.2f}; "
        f"{eb['rescans_during']} full rescans in {eb['seconds']:.0f} s of events "
        f"(the periodic one, every 30 s) | must not grow with home size (p50 ratio "
        f"<= 1.5); no full rescan per event | "
        f"{_verdict(r50 <= 1.5 and eb['rescans_during'] <= periodic + 1)} |"
    )
    if "approvals" in results:
        lines += _approval_rows_md(results["approvals"])
    return lines


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--events",
        type=int,
        default=None,
        help="events per event -> row run (default 200; --quick 45)",
    )
    parser.add_argument(
        "--approval-rounds",
        type=int,
        default=None,
        help="approval requests raised by real hooks, each timed to its Approvals row "
        "(default 20; --quick 8)",
    )
    parser.add_argument(
        "--key-rounds",
        type=int,
        default=None,
        help=f"rounds of the {len(KEYSTROKES)} timed keystrokes on the big home (default 40; "
        "--quick 8)",
    )
    parser.add_argument(
        "--collide-events",
        type=int,
        default=None,
        help="big-home events each written as a full rescan starts (default 45; --quick 12)",
    )
    parser.add_argument(
        "--paint-runs",
        type=int,
        default=None,
        help="fresh cockpit processes for first paint (default 3; --quick 1)",
    )
    parser.add_argument(
        "--idle-seconds",
        type=float,
        default=None,
        help="idle windows: the Work panel's and, at most 15 s, the approvals' (default 30; "
        "--quick 6); the idle cockpit's own budget is bench/cockpit_idle.py's",
    )
    parser.add_argument(
        "--big-home",
        type=Path,
        default=None,
        help="where the big home is built and cached (default: a fixed "
        "directory in the temp dir, reused while its spec matches)",
    )
    parser.add_argument("--big-crew", type=int, default=100)
    parser.add_argument(
        "--big-messages", type=int, default=None, help="default 50000 (--quick: 10000)"
    )
    parser.add_argument(
        "--big-notifications", type=int, default=None, help="default 50000 (--quick: 10000)"
    )
    parser.add_argument("--rebuild", action="store_true", help="build the big home afresh")
    parser.add_argument("--quick", action="store_true", help="a short run")
    parser.add_argument(
        "--smoke",
        action="store_true",
        help=f"{SMOKE}: one event of each kind, one paint, 0.5 s idle, "
        "3-crew homes and a 4-crew big home built afresh in a temporary "
        "directory",
    )
    parser.add_argument("--json", type=Path, default=None, help="also write results here")
    parser.add_argument(
        "--work-finished",
        type=int,
        default=None,
        help="finished work items for the Work panel part, on each backend "
        "(default 100000; --quick 20000)",
    )
    parser.add_argument("--no-work", action="store_true", help="skip the Work panel part")
    parser.add_argument("--work-only", action="store_true", help="only the Work panel part")
    parser.add_argument(
        "--keys-only",
        action="store_true",
        help="only the keystroke part, on the big home (built or reused as without it)",
    )
    # internal: the processes the bench starts
    parser.add_argument("--writer", help=argparse.SUPPRESS)
    parser.add_argument("--paint-driver", help=argparse.SUPPRESS)
    parser.add_argument("--work-writer", help=argparse.SUPPRESS)
    parser.add_argument("--settle", type=float, default=2.0, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.writer:
        return writer_main(args.writer)
    if args.paint_driver:
        return paint_driver(args.paint_driver, args.settle)
    if args.work_writer:
        return work_writer_main(args.work_writer)

    quick = args.quick
    warm, settle = 3.0, 1.0  # seconds: before idle is measured, before the first event
    small = (20, 500, 500)  # crew, messages, notifications: the small home, the approvals one
    if args.smoke:  # one event of each kind, every phase once, on tiny homes, briefly
        args.events, args.paint_runs, args.idle_seconds = len(KINDS), 1, 0.5
        args.big_crew, args.big_messages, args.big_notifications = 4, 60, 60
        args.settle, warm, settle, small = 0.1, 0.2, 0.1, (3, 30, 30)
        args.work_finished = 300
    events = args.events or (45 if quick else 200)
    approval_rounds = args.approval_rounds or (1 if args.smoke else 8 if quick else 20)
    key_rounds = args.key_rounds or (1 if args.smoke else 8 if quick else 40)
    collide_events = args.collide_events or (len(KINDS) if args.smoke else 12 if quick else 45)
    paint_runs = args.paint_runs or (1 if quick else 3)
    idle_seconds = args.idle_seconds or (6.0 if quick else 30.0)
    work_finished = args.work_finished or (20_000 if quick else 100_000)
    big_messages = args.big_messages or (10_000 if quick else 50_000)
    big_notes = args.big_notifications or (10_000 if quick else 50_000)
    big_path = args.big_home or Path(tempfile.gettempdir()) / (
        f"captain-bench-cockpit-{args.big_crew}x{big_messages}x{big_notes}"
    )

    import textual

    results: dict = {
        "machine": {
            "platform": platform.platform(),
            "machine": platform.machine(),
            "nproc": os.cpu_count(),
            "python": platform.python_version(),
            "textual": textual.__version__,
            "loadavg": " ".join(f"{x:.2f}" for x in os.getloadavg()),
        },
        "args": {
            "events": events,
            "paint_runs": paint_runs,
            "idle_seconds": idle_seconds,
            "quick": quick,
        },
    }
    tmp = Path(tempfile.mkdtemp(prefix="captain-bench-cockpit-"))
    if args.smoke and not args.big_home:
        big_path = tmp / "big"  # built afresh, gone with the rest
    # the cockpit's own settings (theme, alerts) stay out of the person's config
    os.environ["CAPTAIN_CONFIG_DIR"] = str(tmp / "config")
    os.environ.pop("CAPTAIN_HOME", None)
    try:
        if args.work_only:
            results["work"] = _phase(
                results,
                "work",
                lambda: work_phase(
                    tmp,
                    work_finished,
                    min(1000, work_finished // 10),
                    events,
                    settle,
                    min(idle_seconds, WORK_IDLE_MAX),
                ),
            )
            return _finish(results, args)
        if args.keys_only:
            big_root = big_home(big_path, args.big_crew, big_messages, big_notes, args.rebuild)
            results["keys"] = _phase(
                results, "keys", lambda: keys_phase(big_root, key_rounds, settle)
            )
            return _finish(results, args)
        small_root = tmp / "small" / "home"
        small_root.parent.mkdir()
        results["small"] = {"spec": build_home(small_root, *small)}
        results["small"]["census"] = census(small_root)
        results["events_small"] = _phase(
            results, "events_small", lambda: event_phase(small_root, events, "small", settle)
        )

        big_root = big_home(big_path, args.big_crew, big_messages, big_notes, args.rebuild)
        results["big"] = {"path": str(big_root), "census": census(big_root)}
        results["paint"] = _phase(
            results, "paint", lambda: paint_phase(big_root, paint_runs, args.settle)
        )
        results["events_big"] = _phase(
            results, "events_big", lambda: event_phase(big_root, events, "big", settle)
        )
        results["keys"] = _phase(results, "keys", lambda: keys_phase(big_root, key_rounds, settle))
        results["events_collide"] = _phase(
            results,
            "events_collide",
            lambda: event_phase(big_root, collide_events, "big", settle, collide=True),
        )

        appr_root = tmp / "approvals" / "home"
        appr_root.parent.mkdir()
        build_home(appr_root, *small)
        results["approvals"] = _phase(
            results,
            "approvals",
            lambda: approvals_phase(
                appr_root,
                approval_rounds,
                min(events, 60),
                min(idle_seconds, 15.0),
                settle,
                warm,
            ),
        )
        if not args.no_work:
            results["work"] = _phase(
                results,
                "work",
                lambda: work_phase(
                    tmp,
                    work_finished,
                    min(1000, work_finished // 10),
                    events,
                    settle,
                    min(idle_seconds, WORK_IDLE_MAX),
                ),
            )
    finally:
        shutil.rmtree(tmp, ignore_errors=True)

    return _finish(results, args)


def _finish(results: dict, args) -> int:
    results["machine"]["loadavg_end"] = " ".join(f"{x:.2f}" for x in os.getloadavg())
    table = report(results)
    print(table)
    if args.json:
        args.json.write_text(json.dumps(results, indent=2, default=str) + "\n")
    return 0


if __name__ == "__main__":
    run_script(main)

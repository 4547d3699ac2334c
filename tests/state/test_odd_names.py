"""Names the store did not write, planted in every folder it lists, never take a reader down.

A real home is built once through ``state`` (crews with mail, receipts, bounces,
notifications, acks and returned markers; work items; a webhook delivery and a rejection;
a token). Each example copies it and plants entries whose names captain never writes:
non-ASCII digits (``¹``, ``١``, ``𝟏``), numbers of the wrong form (``1``, ``000000001``,
huge), spaces, dots, controls, undecodable bytes, names too long for an ID. Each entry is a
file of garbage, an empty file, a copy of a real sibling record, a directory or a symlink.

Then every reader runs, read-only and then writable. The rule (docs/store.md, "Names"):
an entry named like a record (it ends in the folder's suffix) but not of the shape captain
writes is quarantined by a writer and reported and left alone by a read-only look; either
way every reader answers exactly what it answers without the entries.
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest
from conftest import crew_ctx
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from state.crew import crewlog, mailbox, notify, protocol
from state.crew_side import fast
from state.crew_side.plain import Unsure
from state.home import Home
from state.inputs import NAME_RE
from state.store import RECORD_NAME, SEQ_NAME
from state.work import deliveries, ledger, tokens

CONFIG = '[endpoints.gh]\nsecret = "s"\n'

# Names captain never writes, in every folder (the shapes are state.store's).
KNOWN_ODD = [
    "¹",
    "١",
    "𝟏",
    "１",
    "Ⅻ",
    "\u0661\u0662\u0663\u0664\u0665\u0666\u0667\u0668",
    "1",
    "0",
    "000000001",
    "-1",
    "+1",
    "1e3",
    "0x10",
    " 1",
    "00000001 ",
    "99999999999999999999999",
    "a b",
    "msg_¹",
    "x" * 129,
    "a.b",
    "a\nb",
    "x\nmsg_01JPLANTED0000000000000000",  # its last line alone would be a record's name
    "00000009.json\n00000010",
    "tab\tx",
    "nul\x01",
    "é",
    "msg\udcff",
    "\udcfe\udcff",
    "dlv_X-idle\u200b",
    "*",
    "-",
    "_x",
]


def record_shape(folder: str):
    """What a name the store writes looks like in this folder (its suffix, its shape)."""
    if folder == "crew":
        return "", lambda s: bool(NAME_RE.fullmatch(s)) and s == s.lower()
    if folder.endswith("/events"):
        return ".json", lambda s: bool(SEQ_NAME.fullmatch(s))
    if folder in ("ledger/open", "ledger/finished", "deliveries/pending"):
        return "", lambda s: bool(RECORD_NAME.fullmatch(s))
    return ".json", lambda s: bool(RECORD_NAME.fullmatch(s))


def build(root: Path) -> tuple[list[str], str]:
    """A home with a record in every folder a reader lists; the folders, Jack's work ID."""
    home = Home(root)
    (root / "config.toml").write_text(CONFIG)
    project = root.parent / "project"
    project.mkdir()
    jack = protocol.recruit(home, "Jack", "task one", cwd=str(project))
    protocol.tell(home, "Jack", "and this", assignment_id=jack.assignment_id)
    protocol.inbox(home, "Jack", deliver=lambda batch: None, ctx=crew_ctx(jack))
    protocol.ask(home, "Jack", "which one?", ctx=crew_ctx(jack))
    asked = notify.wait(home, "Jack", timeout=0)
    protocol.answer(home, "Jack", asked.question_id, "that one", assignment_id=jack.assignment_id)
    protocol.inbox(home, "Jack", deliver=lambda batch: None, ctx=crew_ctx(jack))
    protocol.ask(home, "Jack", "and then?", ctx=crew_ctx(jack))
    notify.wait(home, "Jack", timeout=0, ack=asked.delivery_id)  # acks one, returns one
    protocol.recruit(home, "Gibbs", "task two", cwd=str(project))
    protocol.dismiss(home, "Gibbs", stopped=True)  # its unread task bounces
    chat = ledger.accept(home, source="chat", input={"text": "t"}, requester="captain:test")
    ledger.claim(home, chat.work_id, holder="worker")
    ledger.report(home, chat.work_id, 1, "succeeded", actor="worker")
    deliveries.ingest(home, "gh", "source-1", b'{"a": 1}', event="push")
    deliveries.reject(home, "gh", "source-2", b"x", "bad signature")
    tokens.create(home, "member")
    jack_work = ledger.work_id_for_assignment(jack.assignment_id)
    folders = [
        "crew",
        "crew/jack/events",
        "crew/gibbs/events",
        "mail/jack",
        "mail/gibbs",
        "receipts/jack",
        "bounces/gibbs",
        "notifications/jack",
        "acks/jack",
        "returned/jack",
        f"work/{jack_work}/events",
        f"work/{chat.work_id}/events",
        "ledger/open",
        "ledger/finished",
        "deliveries",
        "deliveries/pending",
        "deliveries/rejected",
        "tokens",
    ]
    home.store.dir("deliveries", "pending")  # an intake leaves it empty; it is still listed
    for folder in folders:
        assert (root / folder).is_dir(), folder
    return folders, jack_work


def look(home: Home) -> dict:
    """Everything every reader answers (the CLI's, the cockpit's, serve's reads)."""
    out: dict = {"status": protocol.crew_status(home, include_dismissed=True)}
    for key in ("jack", "gibbs"):
        snapshot, _ = crewlog.load(home, key)
        out[key] = {
            "seq": snapshot.seq,
            "events": [e.seq for e in crewlog.events(home, key)],
            "mail": [m.message_id for m in mailbox.messages(home, key)],
            "unread": [m.message_id for m in mailbox.unread(home, key, snapshot)],
            "notes": [n.delivery_id for n in mailbox.notifications(home, key)],
            "unacked": [n.delivery_id for n in mailbox.unacknowledged(home, key)],
            "acked": sorted(mailbox.acked(home, key)),
            "returned": sorted(mailbox.returned(home, key)),
        }
    try:
        out["fast"] = fast.snapshot(home, "jack").seq
    except Unsure:
        out["fast"] = "unsure"
    items, _ = ledger.page(home, limit=100)
    out["work"] = [ledger.public(home, item, detail=True) for item in items]
    out["open"] = ledger.open_ids(home)
    out["finished"] = ledger.recent_finished_ids(home, 100)
    out["deliveries"] = [deliveries.public(home, d) for d in deliveries.page(home)[0]]
    out["rejections"] = [r.rejection_id for r in deliveries.rejections(home)]
    out["pending"] = home.store.names(home.root / "deliveries" / "pending", suffix="")
    out["tokens"] = [t.token_id for t in tokens.records(home)]
    return out


@pytest.fixture(scope="module")
def template(tmp_path_factory):
    root = tmp_path_factory.mktemp("odd") / "home"
    folders, _ = build(root)
    baseline = look(Home(root, read_only=True))
    assert (
        baseline["jack"]["acked"]
        and baseline["jack"]["returned"]
        and baseline["gibbs"]["mail"]
        and baseline["deliveries"]
        and baseline["rejections"]
        and baseline["tokens"]
        and baseline["open"]
    ), "the template lacks a record kind"
    return root, folders, baseline


def odd_stems(folder: str):
    suffix, fits = record_shape(folder)

    def plantable(stem: str) -> bool:
        name = stem + suffix
        return (
            "/" not in name
            and "\x00" not in name
            and not name.startswith(".")
            and not fits(stem)
            and 0 < len(os.fsencode(name)) <= 255
        )

    try_text = st.text(st.characters(blacklist_categories=("Cs",)), min_size=1, max_size=30)
    undecodable = st.lists(
        st.sampled_from([chr(c) for c in range(0xDC80, 0xDD00)]), min_size=1, max_size=3
    ).map("".join)
    return st.one_of(
        st.sampled_from(KNOWN_ODD),
        try_text,
        undecodable,
        st.tuples(try_text, undecodable).map("".join),
    ).filter(plantable)


KINDS = ("garbage", "empty", "copy", "dir", "symlink")


@st.composite
def plantings(draw, folders):
    chosen = draw(st.lists(st.sampled_from(folders), min_size=1, max_size=6, unique=True))
    return [(folder, draw(odd_stems(folder)), draw(st.sampled_from(KINDS))) for folder in chosen]


def plant(root: Path, folder: str, stem: str, kind: str) -> Path:
    suffix, _ = record_shape(folder)
    directory = root / folder
    path = directory / (stem + suffix)
    siblings = sorted(p for p in directory.iterdir() if p.is_file() and not p.is_symlink())
    if kind == "dir" or folder == "crew" and kind in ("copy", "symlink"):
        path.mkdir()
    elif kind == "symlink" and siblings:
        path.symlink_to(siblings[0])
    elif kind == "copy" and siblings:
        shutil.copyfile(siblings[0], path)
    elif kind == "empty":
        path.write_bytes(b"")
    else:
        path.write_bytes(b"not a record \xff")
    return path


@pytest.mark.parametrize("stem", ["¹", "١", "1", "99999999999999999999999"])
def test_a_non_ascii_or_odd_number_in_an_events_folder_is_not_an_event(template, tmp_path, stem):
    """The example of the issue: one ``¹.json`` made every crew command fail."""
    src, _, baseline = template
    root = tmp_path / "home"
    shutil.copytree(src, root, symlinks=True)
    events = root / "crew" / "jack" / "events"
    shutil.copyfile(events / "00000001.json", events / f"{stem}.json")
    home = Home(root)
    assert look(home) == baseline
    assert not os.path.lexists(events / f"{stem}.json")
    assert [p for p, _ in home.store.reports.reported()] == [f"crew/jack/events/{stem}.json"]
    again = Home(root)
    assert look(again) == baseline and again.store.reports.reported() == []


@settings(
    max_examples=40,
    deadline=None,
    suppress_health_check=[
        HealthCheck.function_scoped_fixture,
        HealthCheck.too_slow,
        HealthCheck.filter_too_much,
    ],
)
@given(data=st.data())
def test_odd_names_in_every_listed_folder_are_quarantined_and_answers_do_not_change(
    template, tmp_path_factory, data
):
    src, folders, baseline = template
    root = tmp_path_factory.mktemp("planted") / "home"
    shutil.copytree(src, root, symlinks=True)
    planted = data.draw(plantings(folders))
    paths = [plant(root, *p) for p in planted]
    # as the disk has it: undecodable bytes that happen to spell UTF-8 come back as text
    rels = {os.fsdecode(os.fsencode(p.relative_to(root))) for p in paths}
    try:
        # a read-only look: the same answers; the entries reported once and left in place
        reader = Home(root, read_only=True)
        assert look(reader) == baseline
        assert all(os.path.lexists(p) for p in paths)
        assert not (root / "quarantine").exists()
        warned = [p for p, _ in reader.store.reports.warnings()]
        assert sorted(warned) == sorted(rels) and reader.store.reports.reported() == []

        # a writer's look: the same answers; every entry moved to quarantine, with a reason
        writer = Home(root)
        assert look(writer) == baseline
        assert not any(os.path.lexists(p) for p in paths)
        reported = writer.store.reports
        assert {p for p, _ in reported.reported()} == rels and reported.warnings() == []
        moved = [n for n in os.listdir(root / "quarantine") if not n.endswith(".reason")]
        assert len(moved) == len(rels)
        assert all(os.path.exists(root / "quarantine" / f"{n}.reason") for n in moved)

        again = Home(root)
        assert look(again) == baseline and again.store.reports.reported() == []  # stays clean
    finally:
        shutil.rmtree(root.parent, ignore_errors=True)

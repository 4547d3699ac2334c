"""The home's writing rules (state/store.py), each tested for real: real files, real
processes, real flock. Nothing here is mocked."""

from __future__ import annotations

import contextlib
import fcntl
import json
import multiprocessing
import os
import stat
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from state.clock import now
from state.errors import CaptainError
from state.records import Message
from state.store import (
    MAX_RECORD_BYTES,
    STALE_TEMP_SECONDS,
    TEMP_PREFIX,
    Store,
    encode,
)

REPO = Path(__file__).resolve().parents[2]


# -- helpers ------------------------------------------------------------------------------


def wait_for(condition, timeout: float, what: str) -> None:
    """Poll ``condition`` until it holds; fail (never hope) when the deadline passes."""
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout}s waiting for {what}")
        time.sleep(0.005)


@contextlib.contextmanager
def umask(mask: int):
    old = os.umask(mask)
    try:
        yield
    finally:
        os.umask(old)


def child_env() -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("CAPTAIN_")}
    env["PYTHONPATH"] = str(REPO) + os.pathsep + env.get("PYTHONPATH", "")
    return env


def temps_under(root: Path) -> list[Path]:
    return [
        Path(d, n)
        for d, dirs, files in os.walk(root)
        for n in files + dirs
        if n.startswith(TEMP_PREFIX)
    ]


def message(mid: str = "msg_1", text: str = "hello") -> Message:
    return Message(
        message_id=mid,
        crew="Ada",
        incarnation_id="inc_1",
        assignment_id="asg_1",
        kind="tell",
        text=text,
        queued_at=now(),
    )


def mode(path: Path) -> int:
    return stat.S_IMODE(os.lstat(path).st_mode)


@pytest.fixture
def store(tmp_path: Path) -> Store:
    root = tmp_path / "home"
    root.mkdir(mode=0o700)
    return Store(root)


# -- rule 1: never in place -----------------------------------------------------------------

READER = r"""
import json, sys
from pathlib import Path
from state.store import Store

target, ready, stop, enough = map(Path, sys.argv[1:5])
A, B = b"a" * 200_000, b"b" * 300_000
store = Store(target.parent)
counts = {"a": 0, "b": 0, "none": 0, "torn": 0, "switches": 0}
torn = None
last = None
told_ready = told_enough = False
while True:
    stopping = stop.exists()
    data = store.read_bytes(target)
    if data == A:
        kind = "a"
    elif data == B:
        kind = "b"
    elif data is None:
        kind = "none"
    else:
        kind = "torn"
        if torn is None:
            torn = {"len": len(data), "first": data[:1].decode("latin-1"),
                    "last": data[-1:].decode("latin-1")}
    counts[kind] += 1
    if kind in ("a", "b"):
        if last is not None and kind != last:
            counts["switches"] += 1
        last = kind
    if not told_ready:
        ready.write_text("1")
        told_ready = True
    if not told_enough and counts["switches"] >= 50:
        enough.write_text("1")
        told_enough = True
    if stopping:
        break
print(json.dumps({**counts, "torn_sample": torn}))
"""


def test_publish_is_never_torn_for_a_concurrent_reader(store: Store, tmp_path: Path) -> None:
    """A reader process looping over read_bytes sees one whole payload or the other."""
    a, b = b"a" * 200_000, b"b" * 300_000
    directory = store.dir("snap")
    target = directory / "state.json"
    store.publish(target, a)
    script = tmp_path / "reader.py"
    script.write_text(READER)
    ready, stop, enough = tmp_path / "ready", tmp_path / "stop", tmp_path / "enough"
    reader = subprocess.Popen(
        [sys.executable, str(script), str(target), str(ready), str(stop), str(enough)],
        env=child_env(),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        wait_for(lambda: ready.exists() or reader.poll() is not None, 60, "the reader to start")
        assert reader.poll() is None, reader.communicate()[1]
        publishes = 0
        deadline = time.monotonic() + 30
        # at least 400 publishes, and on until the reader has watched the file change often
        while publishes < 400 or (not enough.exists() and time.monotonic() < deadline):
            store.publish(target, b if publishes % 2 == 0 else a)
            publishes += 1
        stop.write_text("1")
        out, err = reader.communicate(timeout=60)
    finally:
        if reader.poll() is None:
            reader.kill()
            reader.wait()
    assert reader.returncode == 0, err
    counts = json.loads(out)
    assert counts["torn"] == 0, f"reader saw a torn file: {counts}"
    assert counts["none"] == 0, f"reader saw the file missing mid-publish: {counts}"
    # not vacuous: the reader really was reading while the file kept changing
    assert counts["a"] > 0 and counts["b"] > 0, counts
    assert counts["switches"] >= 50, counts
    assert store.read_bytes(target) in (a, b)


def test_publish_replaces_a_new_inode_and_never_writes_in_place(store: Store) -> None:
    target = store.dir("snap") / "state.json"
    store.publish(target, b"old\n")
    before = os.stat(target).st_ino
    with open(target, "rb") as old:  # a reader that opened the old version
        store.publish(target, b"new contents\n")
        assert old.read() == b"old\n", "the published bytes went into the old file"
    assert os.stat(target).st_ino != before
    assert target.read_bytes() == b"new contents\n"


def test_publish_leaves_no_temp_files(store: Store) -> None:
    directory = store.dir("snap")
    target = directory / "state.json"
    for i in range(50):
        store.publish(target, f"version {i}\n".encode())
    assert sorted(os.listdir(directory)) == ["state.json"]
    assert target.read_bytes() == b"version 49\n"


def test_failed_publish_cleans_its_temp_file(store: Store) -> None:
    directory = store.dir("snap")
    blocker = directory / "state.json"
    blocker.mkdir()
    (blocker / "keep").write_text("x")  # os.replace of a file onto a non-empty dir fails
    with pytest.raises(OSError):
        store.publish(blocker, b"data\n")
    assert sorted(os.listdir(directory)) == ["state.json"]
    assert (blocker / "keep").read_text() == "x"


@pytest.mark.parametrize("mask", [0o000, 0o022, 0o277], ids=lambda m: f"umask-{m:03o}")
def test_files_are_0600_and_dirs_0700_whatever_the_umask(store: Store, mask: int) -> None:
    with umask(mask):
        directory = store.dir("deep", "er")
        store.publish(directory / "snap.json", b"{}\n")
        assert store.create_once(directory / "rec.json", b"{}\n") is True
    assert mode(store.root / "deep") == 0o700
    assert mode(directory) == 0o700
    assert mode(directory / "snap.json") == 0o600
    assert mode(directory / "rec.json") == 0o600


def test_publish_onto_a_symlink_replaces_the_link_not_its_target(
    store: Store, tmp_path: Path
) -> None:
    outside = tmp_path / "outside.json"
    outside.write_bytes(b"precious\n")
    link = store.dir("snap") / "state.json"
    link.symlink_to(outside)
    store.publish(link, b"mine\n")
    assert not link.is_symlink()
    assert link.read_bytes() == b"mine\n"
    assert outside.read_bytes() == b"precious\n"


# -- rule 2: create-once ------------------------------------------------------------------


def test_create_once_true_then_false_for_identical_bytes(store: Store) -> None:
    path = store.dir("mail", "ada") / "msg_1.json"
    data = encode(message())
    assert store.create_once(path, data) is True
    assert path.read_bytes() == data
    assert store.create_once(path, data) is False
    assert path.read_bytes() == data
    assert os.listdir(path.parent) == ["msg_1.json"]


def test_create_once_refuses_different_bytes_and_keeps_the_original(store: Store) -> None:
    path = store.dir("mail", "ada") / "msg_1.json"
    original = encode(message(text="first"))
    store.create_once(path, original)
    inode = os.stat(path).st_ino
    with pytest.raises(CaptainError) as err:
        store.create_once(path, encode(message(text="second")))
    assert err.value.code == "message_conflict"
    assert path.read_bytes() == original
    assert os.stat(path).st_ino == inode
    assert os.listdir(path.parent) == ["msg_1.json"], "the conflict left a temp file behind"


def test_create_once_same_comparator_makes_a_differing_write_idempotent(store: Store) -> None:
    path = store.dir("receipts", "ada") / "msg_1.json"
    first, second = b'{"read_at": 1}\n', b'{"read_at": 2}\n'
    assert store.create_once(path, first) is True
    seen = []

    def any_receipt_counts(old: bytes, new: bytes) -> bool:
        seen.append((old, new))
        return True

    assert store.create_once(path, second, same=any_receipt_counts) is False
    assert seen == [(first, second)]
    assert path.read_bytes() == first, "an idempotent write must not replace the original"
    with pytest.raises(CaptainError) as err:
        store.create_once(path, second, same=lambda old, new: False)
    assert err.value.code == "message_conflict"
    assert path.read_bytes() == first


def _race_create(root: str, index: int, barrier, results) -> None:
    store = Store(Path(root))
    path = Path(root, "mail", "ada", "msg_race.json")
    barrier.wait(timeout=30)
    try:
        results.put(
            (index, "created" if store.create_once(path, b"writer %d\n" % index) else "same")
        )
    except CaptainError as err:
        results.put((index, err.code))


def test_create_once_racing_processes_exactly_one_wins(store: Store) -> None:
    store.dir("mail", "ada")
    ctx = multiprocessing.get_context("fork")
    n = 6
    barrier, results = ctx.Barrier(n), ctx.Queue()
    procs = [
        ctx.Process(target=_race_create, args=(str(store.root), i, barrier, results))
        for i in range(n)
    ]
    for p in procs:
        p.start()
    outcomes = dict(results.get(timeout=60) for _ in procs)
    for p in procs:
        p.join(timeout=30)
        assert p.exitcode == 0
    winners = [i for i, o in outcomes.items() if o == "created"]
    assert len(winners) == 1, outcomes
    assert sorted(o for o in outcomes.values() if o != "created") == ["message_conflict"] * (n - 1)
    path = store.root / "mail" / "ada" / "msg_race.json"
    assert path.read_bytes() == b"writer %d\n" % winners[0]
    assert os.listdir(path.parent) == ["msg_race.json"]


def _occupy_with_symlink(path: Path, outside: Path) -> None:
    path.symlink_to(outside)


def _occupy_with_directory(path: Path, outside: Path) -> None:
    path.mkdir()


def _occupy_with_oversized(path: Path, outside: Path) -> None:
    path.write_bytes(b" " * (MAX_RECORD_BYTES + 1))


@pytest.mark.parametrize(
    "occupy",
    [_occupy_with_symlink, _occupy_with_directory, _occupy_with_oversized],
    ids=lambda f: f.__name__.removeprefix("_occupy_with_"),
)
def test_create_once_onto_a_hostile_entry_is_a_clear_refusal(
    store: Store, tmp_path: Path, occupy
) -> None:
    """A name taken by a symlink / directory / giant file: a CaptainError, nothing followed."""
    outside = tmp_path / "outside.json"
    outside.write_bytes(b"precious\n")
    path = store.dir("mail", "ada") / "msg_1.json"
    occupy(path, outside)
    with pytest.raises(CaptainError) as err:
        store.create_once(path, encode(message()))
    assert err.value.code in ("message_conflict", "store_error")
    assert outside.read_bytes() == b"precious\n"
    assert not temps_under(store.root)


# -- rule 3: flock on a never-deleted lock file -------------------------------------------

LOCKER = r"""
import sys
from pathlib import Path
from state.store import Store

root, marks = Path(sys.argv[1]), Path(sys.argv[2])
with Store(root).lock("x"):
    (marks / "holding").write_text("1")
    sys.stdin.readline()              # the parent says when to let go
    (marks / "releasing").write_text("1")
(marks / "released").write_text("1")
"""


def test_lock_excludes_another_process_until_it_releases(store: Store, tmp_path: Path) -> None:
    marks = tmp_path / "marks"
    marks.mkdir()
    script = tmp_path / "locker.py"
    script.write_text(LOCKER)
    child = subprocess.Popen(
        [sys.executable, str(script), str(store.root), str(marks)],
        env=child_env(),
        stdin=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    taker = None
    try:
        wait_for(
            lambda: (marks / "holding").exists() or child.poll() is not None,
            60,
            "the child to take the lock",
        )
        assert child.poll() is None, child.communicate()[1]
        lock_file = store.root / "locks" / "x.lock"
        inode = os.stat(lock_file).st_ino

        # the child holds a real flock: a non-blocking flock on the same file is refused
        fd = os.open(lock_file, os.O_RDWR)
        try:
            with pytest.raises(BlockingIOError):
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        finally:
            os.close(fd)

        acquired = threading.Event()
        seen: dict[str, bool] = {}

        def take() -> None:
            with Store(store.root).lock("x"):
                seen["child_was_releasing"] = (marks / "releasing").exists()
                seen["child_had_released"] = (marks / "released").exists()
                acquired.set()

        taker = threading.Thread(target=take, daemon=True)
        taker.start()
        assert not acquired.wait(0.3), "the parent got the lock while the child held it"
        assert child.poll() is None

        child.stdin.write("\n")
        child.stdin.flush()
        assert acquired.wait(30), "the parent never got the lock after the child let go"
        assert seen["child_was_releasing"], "the parent got the lock before the child let go"
        taker.join(timeout=30)
        assert child.wait(timeout=30) == 0, child.stderr.read()
    finally:
        if child.poll() is None:
            child.kill()
            child.wait()

    # released: a non-blocking flock now succeeds; the lock file was never deleted/replaced
    assert lock_file.exists()
    assert os.stat(lock_file).st_ino == inode
    fd = os.open(lock_file, os.O_RDWR)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    finally:
        os.close(fd)
    with store.lock("x"):
        pass
    assert os.stat(lock_file).st_ino == inode
    assert mode(lock_file) == 0o600


def test_lock_is_released_when_the_holder_is_killed(store: Store, tmp_path: Path) -> None:
    marks = tmp_path / "marks"
    marks.mkdir()
    script = tmp_path / "locker.py"
    script.write_text(LOCKER)
    child = subprocess.Popen(
        [sys.executable, str(script), str(store.root), str(marks)],
        env=child_env(),
        stdin=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    try:
        wait_for(
            lambda: (marks / "holding").exists() or child.poll() is not None,
            60,
            "the child to take the lock",
        )
        assert child.poll() is None
        child.kill()
        child.wait(timeout=30)
    finally:
        if child.poll() is None:
            child.kill()
            child.wait()
    got = threading.Event()

    def take() -> None:
        with store.lock("x"):
            got.set()

    threading.Thread(target=take, daemon=True).start()
    assert got.wait(30), "a SIGKILLed holder left the lock held"
    assert (store.root / "locks" / "x.lock").exists()


# -- rule 5: quarantine -------------------------------------------------------------------


def _truncated(path: Path, outside: Path) -> None:
    data = encode(message("msg_bad"))
    path.write_bytes(data[: len(data) // 2])


def _empty(path: Path, outside: Path) -> None:
    path.write_bytes(b"")


def _not_utf8(path: Path, outside: Path) -> None:
    path.write_bytes(b'{"schema": 1, "text": "\xff\xfe\xfa"}\n')


def _schema_2(path: Path, outside: Path) -> None:
    record = json.loads(encode(message("msg_bad")))
    record["schema"] = 2
    path.write_text(json.dumps(record))


def _extra_field(path: Path, outside: Path) -> None:
    record = json.loads(encode(message("msg_bad")))
    record["surprise"] = True
    path.write_text(json.dumps(record))


def _symlink(path: Path, outside: Path) -> None:
    path.symlink_to(outside)  # points at a perfectly valid record


def _directory(path: Path, outside: Path) -> None:
    path.mkdir()
    (path / "inner.json").write_bytes(encode(message("msg_inner")))


def _oversized(path: Path, outside: Path) -> None:
    # valid JSON of a valid record, padded past the limit: only the size is wrong
    data = encode(message("msg_bad"))
    path.write_bytes(data + b" " * (MAX_RECORD_BYTES + 1 - len(data) + 10))


def _fifo(path: Path, outside: Path) -> None:
    os.mkfifo(path)


BAD = [
    _truncated,
    _empty,
    _not_utf8,
    _schema_2,
    _extra_field,
    _symlink,
    _directory,
    _oversized,
    _fifo,
]


def quarantine_entries(store: Store) -> tuple[list[str], list[str]]:
    qdir = store.root / "quarantine"
    names = sorted(os.listdir(qdir)) if qdir.exists() else []
    reasons = [n for n in names if n.endswith(".reason")]
    return [n for n in names if not n.endswith(".reason")], reasons


@pytest.mark.parametrize("make_bad", BAD, ids=lambda f: f.__name__.strip("_"))
def test_a_bad_file_is_quarantined_with_a_reason(store: Store, tmp_path: Path, make_bad) -> None:
    outside = tmp_path / "elsewhere.json"
    outside_bytes = encode(message("msg_elsewhere"))
    outside.write_bytes(outside_bytes)
    directory = store.dir("mail", "ada")
    path = directory / "msg_bad.json"
    make_bad(path, outside)
    kind = os.lstat(path).st_mode

    assert store.read(path, Message) is None
    assert not os.path.lexists(path), "the bad file was left in place"

    moved, reasons = quarantine_entries(store)
    assert len(moved) == 1 and moved[0].endswith("mail__ada__msg_bad.json"), moved
    assert reasons == [moved[0] + ".reason"]
    target = store.root / "quarantine" / moved[0]
    assert stat.S_IFMT(os.lstat(target).st_mode) == stat.S_IFMT(kind), "moved something else"
    note = json.loads((store.root / "quarantine" / reasons[0]).read_text())
    assert note["path"] == "mail/ada/msg_bad.json"
    assert note["moved_to"] == moved[0]
    assert note["reason"]
    assert ("mail/ada/msg_bad.json", note["reason"]) in store.quarantined
    assert ("mail/ada/msg_bad.json", note["reason"]) in store.reports.reported()
    assert store.reports.reported() == [], "reported() drains"

    # a symlink is moved as a link; its target is never followed, read or touched
    assert outside.read_bytes() == outside_bytes
    if make_bad is _symlink:
        assert os.readlink(target) == str(outside)
    # the quarantined file is not in the way of a later, good record with the same name
    assert store.create_once(path, encode(message("msg_bad"))) is True
    assert store.read(path, Message).message_id == "msg_bad"


def test_records_skips_bad_files_and_serves_the_good_ones_beside_them(
    store: Store, tmp_path: Path
) -> None:
    outside = tmp_path / "elsewhere.json"
    outside_bytes = encode(message("msg_elsewhere"))
    outside.write_bytes(outside_bytes)
    directory = store.dir("mail", "ada")
    good = [message(f"msg_good{i}", f"good {i}") for i in range(3)]
    for m in good:
        store.create_once(directory / f"{m.message_id}.json", encode(m))
    bad_names = []
    for make_bad in BAD:
        name = f"msg_{make_bad.__name__.strip('_')}"
        make_bad(directory / f"{name}.json", outside)
        bad_names.append(name)

    records = store.records(directory, Message)
    assert [r.message_id for r in records] == [m.message_id for m in good]
    assert records == good

    moved, reasons = quarantine_entries(store)
    assert len(moved) == len(BAD) and len(reasons) == len(BAD)
    reported = {path for path, _ in store.reports.reported()}
    assert reported == {f"mail/ada/{n}.json" for n in bad_names}
    assert sorted(os.listdir(directory)) == sorted(f"{m.message_id}.json" for m in good)
    assert outside.read_bytes() == outside_bytes
    # a second pass finds only the good ones and quarantines nothing more
    assert store.records(directory, Message) == good
    assert len(quarantine_entries(store)[0]) == len(BAD)


def test_read_json_quarantines_garbage_and_non_objects(store: Store) -> None:
    directory = store.dir("settings")
    (directory / "list.json").write_text("[1, 2]")
    (directory / "junk.json").write_bytes(b"\x00\x01not json")
    (directory / "ok.json").write_text('{"a": 1}')
    assert store.read_json(directory / "list.json") is None
    assert store.read_json(directory / "junk.json") is None
    assert store.read_json(directory / "ok.json") == {"a": 1}
    assert sorted(os.listdir(directory)) == ["ok.json"]
    assert len(quarantine_entries(store)[0]) == 2


def test_read_bytes_is_none_for_a_missing_file(store: Store) -> None:
    assert store.read_bytes(store.dir("mail", "ada") / "nope.json") is None
    assert store.read(store.dir("mail", "ada") / "nope.json", Message) is None
    assert not (store.root / "quarantine").exists()


# -- rule 7: no symlinked directories -----------------------------------------------------


def test_dir_refuses_a_symlinked_component(store: Store, tmp_path: Path) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    (store.root / "mail").symlink_to(outside, target_is_directory=True)
    with pytest.raises(CaptainError) as err:
        store.dir("mail", "ada")
    assert err.value.code == "store_error"
    with pytest.raises(CaptainError) as err:
        store.dir("mail")
    assert err.value.code == "store_error"
    assert os.listdir(outside) == [], "something was created through the link"


def test_dir_refuses_a_symlink_deeper_down(store: Store, tmp_path: Path) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    store.dir("mail")
    (store.root / "mail" / "ada").symlink_to(outside, target_is_directory=True)
    with pytest.raises(CaptainError) as err:
        store.dir("mail", "ada")
    assert err.value.code == "store_error"
    with pytest.raises(CaptainError) as err:
        store.dir("mail", "ada", "deeper")
    assert err.value.code == "store_error"
    assert os.listdir(outside) == []


def test_dir_refuses_a_directory_swapped_for_a_symlink_after_first_use(
    store: Store, tmp_path: Path
) -> None:
    """A long-lived process (the cockpit) must not trust an earlier check forever."""
    outside = tmp_path / "outside"
    (outside / "ada").mkdir(parents=True)
    store.dir("mail", "ada")
    (store.root / "mail").rename(tmp_path / "moved-away")
    (store.root / "mail").symlink_to(outside, target_is_directory=True)
    with pytest.raises(CaptainError) as err:
        store.create_once(store.dir("mail", "ada") / "msg_1.json", b"{}\n")
    assert err.value.code == "store_error"
    assert os.listdir(outside / "ada") == [], "a record was written through the symlink"


def test_dir_refuses_a_file_where_a_directory_should_be(store: Store) -> None:
    (store.root / "mail").write_text("not a dir")
    with pytest.raises(CaptainError) as err:
        store.dir("mail", "ada")
    assert err.value.code == "store_error"
    assert (store.root / "mail").read_text() == "not a dir"


def test_the_home_itself_may_be_a_link_you_chose(tmp_path: Path) -> None:
    real = tmp_path / "real-home"
    real.mkdir()
    link = tmp_path / "home-link"
    link.symlink_to(real, target_is_directory=True)
    store = Store(link)
    store.create_once(store.dir("mail", "ada") / "msg_1.json", b"{}\n")
    assert (real / "mail" / "ada" / "msg_1.json").read_bytes() == b"{}\n"


# -- rule 4: temp files are skipped and swept -------------------------------------------------


def make_temp(directory: Path, name: str, age: float) -> Path:
    path = directory / name
    path.write_bytes(b"half a record")
    stamp = time.time() - age
    os.utime(path, (stamp, stamp))
    return path


def test_sweep_removes_stale_temp_files_and_keeps_fresh_ones(store: Store) -> None:
    mail = store.dir("mail", "ada")
    crew = store.dir("crew", "ada", "events")
    stale1 = make_temp(mail, f"{TEMP_PREFIX}123-deadbeef", STALE_TEMP_SECONDS + 30)
    stale2 = make_temp(crew, f"{TEMP_PREFIX}456-cafebabe", STALE_TEMP_SECONDS * 10)
    fresh = make_temp(mail, f"{TEMP_PREFIX}789-0badf00d", 1)
    record = mail / "msg_1.json"
    store.create_once(record, b"{}\n")
    old_stamp = time.time() - STALE_TEMP_SECONDS * 10
    os.utime(record, (old_stamp, old_stamp))  # an old *record* is not debris
    hidden = make_temp(mail, ".hidden-not-a-temp", STALE_TEMP_SECONDS * 10)

    assert store.sweep() == 2
    assert not stale1.exists() and not stale2.exists()
    assert fresh.exists()
    assert record.read_bytes() == b"{}\n"
    assert hidden.exists()
    assert store.sweep() == 0


def test_sweep_never_follows_a_symlinked_directory(store: Store, tmp_path: Path) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    theirs = make_temp(outside, f"{TEMP_PREFIX}1-abc", STALE_TEMP_SECONDS * 10)
    (store.root / "linked").symlink_to(outside, target_is_directory=True)
    store.sweep()
    assert theirs.exists(), "sweep deleted a file outside the home through a symlink"


def test_sweep_removes_a_stale_temp_symlink_but_not_its_target(
    store: Store, tmp_path: Path
) -> None:
    outside = tmp_path / "outside.txt"
    outside.write_text("precious")
    link = store.dir("mail") / f"{TEMP_PREFIX}1-abc"
    link.symlink_to(outside)
    stamp = time.time() - STALE_TEMP_SECONDS * 10
    os.utime(link, (stamp, stamp), follow_symlinks=False)
    store.sweep()
    assert not os.path.lexists(link)
    assert outside.read_text() == "precious"


def test_names_skips_dot_files_and_sweeps_stale_temps_in_its_directory(store: Store) -> None:
    mail = store.dir("mail", "ada")
    other = store.dir("mail", "bob")
    for name in ("msg_2.json", "msg_1.json", "msg_3.txt"):
        (mail / name).write_text("{}")
    (mail / ".hidden.json").write_text("{}")
    stale = make_temp(mail, f"{TEMP_PREFIX}1-aaaa.json", STALE_TEMP_SECONDS + 30)
    fresh = make_temp(mail, f"{TEMP_PREFIX}2-bbbb.json", 0)
    elsewhere = make_temp(other, f"{TEMP_PREFIX}3-cccc", STALE_TEMP_SECONDS * 10)

    assert store.names(mail) == ["msg_1", "msg_2"]
    assert store.names(mail, suffix=".txt") == ["msg_3"]
    assert not stale.exists(), "listing the directory should sweep its stale temp"
    assert fresh.exists(), "a fresh temp may belong to a live writer"
    assert (mail / ".hidden.json").exists()
    assert elsewhere.exists(), "names() sweeps only the directory it lists"
    assert store.names(store.root / "nope") == []


@pytest.mark.parametrize(
    "odd",
    [
        "x\nmsg_9.json",  # its last line alone is a record's name
        "msg_8.json\nmsg_9.json",  # each line alone is one
        "msg_8\n.json",
        "bad name.json",
    ],
)
def test_names_lists_no_record_that_a_name_with_a_newline_forges(store: Store, odd) -> None:
    """``names`` matches a folder's stems in one pass over its listing joined by newlines;
    a name holding a newline must not read as records (nor hide an odd name): it takes
    the per-name rule, so it is quarantined, and only the real records are listed."""
    mail = store.dir("mail", "ada")
    for name in ("msg_1.json", "msg_2.json", odd):
        (mail / name).write_text("{}")
    assert store.names(mail) == ["msg_1", "msg_2"]
    assert sorted(os.listdir(mail)) == ["msg_1.json", "msg_2.json"], "not quarantined"


def test_records_never_read_a_temp_file(store: Store) -> None:
    mail = store.dir("mail", "ada")
    good = message("msg_1")
    store.create_once(mail / "msg_1.json", encode(good))
    make_temp(mail, f"{TEMP_PREFIX}9-half.json", 0)  # a writer mid-way: half a record
    assert store.records(mail, Message) == [good]
    assert not (store.root / "quarantine").exists(), "a live writer's temp was quarantined"

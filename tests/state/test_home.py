"""state/home.py (where the home is, whether it is safe, its settings) and the crew log's
rule that events are the truth and ``state.json`` only a cache."""

from __future__ import annotations

import contextlib
import os
import stat
from pathlib import Path

import pytest

from state.crew import crewlog, mailbox, protocol
from state.crew.guards import Context
from state.errors import CaptainError
from state.home import DEFAULT_WAIT_TIMEOUT, Home, check_filesystem, filesystem_type
from state.records import CrewSnapshot, HomeMeta
from state.store import encode


@contextlib.contextmanager
def umask(mask: int):
    old = os.umask(mask)
    try:
        yield
    finally:
        os.umask(old)


def mode(path: Path) -> int:
    return stat.S_IMODE(os.lstat(path).st_mode)


def listing(path: Path) -> dict[str, bytes]:
    return {
        str(p.relative_to(path)): p.read_bytes() if p.is_file() else b"<dir>"
        for p in sorted(path.rglob("*"))
    }


# -- creating and opening a home ------------------------------------------------------------


@pytest.mark.parametrize("mask", [0o022, 0o000, 0o277], ids=lambda m: f"umask-{m:03o}")
def test_a_new_home_is_0700_with_home_json(tmp_path: Path, mask: int) -> None:
    root = tmp_path / "deep" / "home"
    with umask(mask):
        home = Home(root)
    assert home.root == root
    assert root.is_dir()
    assert mode(root) == 0o700, oct(mode(root))
    meta = HomeMeta.model_validate_json((root / "home.json").read_bytes())
    assert meta.kind == "captain-home"
    assert mode(root / "home.json") == 0o600


def test_reopening_a_home_keeps_it(tmp_path: Path) -> None:
    root = tmp_path / "home"
    Home(root)
    marker = (root / "home.json").read_bytes()
    (root / "mail").mkdir()
    Home(root)
    assert (root / "home.json").read_bytes() == marker


def test_an_existing_empty_directory_becomes_a_home_and_is_tightened(tmp_path: Path) -> None:
    root = tmp_path / "home"
    root.mkdir()
    os.chmod(root, 0o755)
    Home(root)
    assert (root / "home.json").exists()
    assert mode(root) == 0o700


def test_a_non_empty_directory_that_is_not_a_home_is_refused(tmp_path: Path) -> None:
    root = tmp_path / "someones-files"
    root.mkdir()
    (root / "thesis.tex").write_text("years of work")
    (root / "src").mkdir()
    (root / "src" / "main.c").write_text("int main(){}")
    os.chmod(root, 0o755)
    before = listing(root)
    with pytest.raises(CaptainError) as err:
        Home(root)
    assert err.value.code == "invalid_home"
    assert listing(root) == before, "captain wrote into a directory it refused"
    assert mode(root) == 0o755


def test_a_file_is_not_a_home(tmp_path: Path) -> None:
    path = tmp_path / "home"
    path.write_text("just a file")
    with pytest.raises(CaptainError) as err:
        Home(path)
    assert err.value.code == "invalid_home"
    assert path.read_text() == "just a file"


def test_a_symlink_to_a_file_is_not_a_home(tmp_path: Path) -> None:
    target = tmp_path / "file"
    target.write_text("just a file")
    link = tmp_path / "home"
    link.symlink_to(target)
    with pytest.raises(CaptainError) as err:
        Home(link)
    assert err.value.code == "invalid_home"
    assert target.read_text() == "just a file"


# -- network filesystems --------------------------------------------------------------------


def mountinfo(*mounts: tuple[str, str]) -> str:
    """Fake /proc/self/mountinfo text, one line per (mount point, fstype), in order."""
    lines = []
    for i, (point, fstype) in enumerate(mounts):
        escaped = point.replace(" ", "\\040")
        optional = f"shared:{i} " if i % 2 else ""  # zero or more optional fields
        lines.append(
            f"{20 + i} 1 0:{40 + i} / {escaped} rw,relatime {optional}- {fstype} src{i} rw"
        )
    return "\n".join(lines) + "\n"


@pytest.fixture
def base(tmp_path: Path) -> Path:
    return Path(os.path.realpath(tmp_path))


@pytest.mark.parametrize(
    "fstype", ["nfs", "nfs4", "cifs", "smb3", "fuse.sshfs", "9p", "ceph", "lustre"]
)
def test_a_home_on_a_network_filesystem_is_refused(base: Path, fstype: str) -> None:
    info = mountinfo(("/", "ext4"), (str(base / "net"), fstype))
    home = base / "net" / "captain"
    assert filesystem_type(home, info) == fstype
    with pytest.raises(CaptainError) as err:
        check_filesystem(home, info)
    assert err.value.code == "invalid_home"
    assert fstype in err.value.message


@pytest.mark.parametrize("fstype", ["ext4", "tmpfs", "xfs", "btrfs", "overlay", "zfs"])
def test_a_home_on_a_local_filesystem_is_accepted(base: Path, fstype: str) -> None:
    info = mountinfo(("/", "nfs4"), (str(base), fstype))
    assert filesystem_type(base / "home", info) == fstype
    check_filesystem(base / "home", info)


def test_the_longest_mount_prefix_wins_whatever_the_line_order(base: Path) -> None:
    home = base / "a" / "b" / "home"
    info = mountinfo((str(base / "a" / "b"), "ext4"), ("/", "nfs4"), (str(base / "a"), "cifs"))
    assert filesystem_type(home, info) == "ext4"
    check_filesystem(home, info)
    info = mountinfo((str(base / "a"), "ext4"), ("/", "tmpfs"), (str(base / "a" / "b"), "nfs4"))
    assert filesystem_type(home, info) == "nfs4"
    with pytest.raises(CaptainError):
        check_filesystem(home, info)


def test_a_mount_point_matches_whole_path_components_only(base: Path) -> None:
    # /x/ho is NFS, but /x/home is not under it
    info = mountinfo(("/", "ext4"), (str(base / "ho"), "nfs4"))
    assert filesystem_type(base / "home", info) == "ext4"
    check_filesystem(base / "home", info)
    assert filesystem_type(base / "ho", info) == "nfs4"
    assert filesystem_type(base / "ho" / "home", info) == "nfs4"


def test_the_later_of_two_mounts_on_one_point_is_the_visible_one(base: Path) -> None:
    info = mountinfo(("/", "ext4"), (str(base), "ext4"), (str(base), "nfs4"))
    assert filesystem_type(base / "home", info) == "nfs4"
    info = mountinfo(("/", "ext4"), (str(base), "nfs4"), (str(base), "tmpfs"))
    assert filesystem_type(base / "home", info) == "tmpfs"


def test_escaped_spaces_in_mount_points(base: Path) -> None:
    info = mountinfo(("/", "ext4"), (str(base / "my share"), "cifs"))
    assert filesystem_type(base / "my share" / "home", info) == "cifs"
    with pytest.raises(CaptainError):
        check_filesystem(base / "my share" / "home", info)


def test_garbage_mountinfo_lines_are_skipped(base: Path) -> None:
    info = "garbage\n\n1 2 3\n" + mountinfo(("/", "ext4"), (str(base), "nfs4")) + "x - \n"
    assert filesystem_type(base / "home", info) == "nfs4"


def test_home_refuses_to_open_on_nfs_and_writes_nothing(base: Path) -> None:
    info = mountinfo(("/", "ext4"), (str(base / "nfs"), "nfs4"))
    root = base / "nfs" / "home"
    with pytest.raises(CaptainError) as err:
        Home(root, mountinfo=info)
    assert err.value.code == "invalid_home"
    assert not (root / "home.json").exists()
    # the same path on a local disk is fine
    Home(root, mountinfo=mountinfo(("/", "ext4")))
    assert (root / "home.json").exists()


def test_an_existing_home_that_is_now_on_nfs_is_refused(base: Path) -> None:
    root = base / "home"
    Home(root)
    with pytest.raises(CaptainError) as err:
        Home(root, mountinfo=mountinfo(("/", "ext4"), (str(base), "nfs")))
    assert err.value.code == "invalid_home"


def test_real_mountinfo_accepts_the_test_home(tmp_path: Path) -> None:
    Home(tmp_path / "home")  # /proc/self/mountinfo of this machine
    assert filesystem_type(tmp_path) != ""


# -- config.toml ----------------------------------------------------------------------------


def test_wait_timeout_defaults_to_a_day(home: Home) -> None:
    assert DEFAULT_WAIT_TIMEOUT == 86400
    assert home.wait_timeout() == 86400


@pytest.mark.parametrize("value, expected", [("5", 5.0), ("0", 0.0), ("2.5", 2.5)])
def test_wait_timeout_is_read_from_config(tmp_path: Path, value: str, expected: float) -> None:
    root = tmp_path / "home"
    Home(root)
    (root / "config.toml").write_text(f"# settings\n[crew]\nwait_timeout = {value}\n")
    assert Home(root).wait_timeout() == expected


@pytest.mark.parametrize("value", ['"soon"', "-1", "[1, 2]", "true", "inf", "nan", "1e400"])
def test_a_nonsense_wait_timeout_is_refused_naming_the_key(tmp_path: Path, value: str) -> None:
    """Valid TOML, a value captain cannot use: ``invalid_config`` (state/config.py), never a
    quiet default the person did not ask for."""
    root = tmp_path / "home"
    Home(root)
    (root / "config.toml").write_text(f"[crew]\nwait_timeout = {value}\n")
    with pytest.raises(CaptainError) as refused:
        Home(root).wait_timeout()
    assert refused.value.code == "invalid_config"
    assert "[crew] wait_timeout" in refused.value.message


@pytest.mark.parametrize("text", ['crew = "yes"\n', "crew = 5\n", "crew = [1]\n"])
def test_a_wrongly_shaped_crew_section_is_refused(tmp_path: Path, text: str) -> None:
    root = tmp_path / "home"
    Home(root)
    (root / "config.toml").write_text(text)
    with pytest.raises(CaptainError) as refused:
        Home(root).wait_timeout()
    assert refused.value.code == "invalid_config" and "[crew]" in refused.value.message


@pytest.mark.parametrize(
    "data",
    [
        b"[crew\nwait_timeout = 5\n",
        b"[crew]\nwait_timeout = \n",
        b"[crew]\nwait_timeout = 5\n\xff\xfe",
    ],
)
def test_an_invalid_config_is_reported_left_in_place_and_the_default_used(
    tmp_path: Path, data: bytes
) -> None:
    root = tmp_path / "home"
    Home(root)
    (root / "config.toml").write_bytes(data)
    home = Home(root)
    assert home.wait_timeout() == DEFAULT_WAIT_TIMEOUT
    assert (root / "config.toml").read_bytes() == data, "the user's file was moved or changed"
    assert not (root / "quarantine").exists()
    assert home.wait_timeout() == DEFAULT_WAIT_TIMEOUT
    warned = home.store.reports.warnings()
    assert [p for p, _ in warned] == ["config.toml"], "reported once per change"
    assert "defaults" in warned[0][1] and home.store.reports.reported() == []


def test_a_symlinked_config_is_not_followed(tmp_path: Path) -> None:
    root = tmp_path / "home"
    Home(root)
    elsewhere = tmp_path / "their.toml"
    elsewhere.write_text("[crew]\nwait_timeout = 7\n")
    (root / "config.toml").symlink_to(elsewhere)
    home = Home(root)
    assert home.wait_timeout() == DEFAULT_WAIT_TIMEOUT
    assert elsewhere.read_text() == "[crew]\nwait_timeout = 7\n"
    assert os.path.islink(root / "config.toml"), "never moved"
    assert "symlink" in home.store.reports.warnings()[0][1]


# -- crewlog: events are the truth, state.json a cache ----------------------------------------


def build_history(home: Home, project: Path):
    """recruited(1), asked(2), done(3), assigned(4) for crew Ada, through the protocol."""
    r = protocol.recruit(
        home, "Ada", "task one", owns=["src"], allow=["edit", "test"], cwd=str(project)
    )
    ctx = Context.from_env(r.env)
    protocol.inbox(home, "Ada", deliver=lambda batch: None, ctx=ctx)
    asked = protocol.ask(home, "Ada", "which database?", ctx=ctx)
    protocol.answer(home, "Ada", asked.question_id, "sqlite", assignment_id=r.assignment_id)
    protocol.inbox(home, "Ada", deliver=lambda batch: None, ctx=ctx)
    protocol.done(home, "Ada", "did it; tests pass", ctx=ctx)
    for n in mailbox.notifications(home, "ada"):
        mailbox.write_ack(home, "ada", n)
    spec = protocol.assign(home, "Ada", "task two", handoff=r.assignment_id)
    return r, spec


@pytest.fixture
def history(home: Home, project: Path):
    r, spec = build_history(home, project)
    snapshot_file = home.root / "crew" / "ada" / "state.json"
    truth = CrewSnapshot.model_validate_json(snapshot_file.read_bytes())
    events = crewlog.events(home, "ada")
    assert [e.type for e in events] == ["recruited", "asked", "done", "assigned"]
    assert truth.seq == 4 and truth.assignment.assignment_id == spec.assignment_id
    return home, truth, events


def fresh(home: Home) -> Home:
    return Home(home.root)


def test_the_published_snapshot_is_the_fold_of_the_events(history) -> None:
    home, truth, events = history
    folded = None
    for event in events:
        folded = crewlog.fold(folded, event)
    assert folded == truth
    snapshot, _ = crewlog.load(fresh(home), "ada")
    assert snapshot == truth
    snapshot, last = crewlog.load(fresh(home), "ada", repair=True)
    assert snapshot == truth
    assert last == events[-1], "a writer settles the newest event: load must hand it over"


def test_a_deleted_snapshot_is_rebuilt_from_events(history) -> None:
    home, truth, events = history
    path = home.root / "crew" / "ada" / "state.json"
    path.unlink()
    snapshot, _ = crewlog.load(fresh(home), "ada")
    assert snapshot == truth
    assert not path.exists(), "a plain load must not write"
    snapshot, last = crewlog.load(fresh(home), "ada", repair=True)
    assert snapshot == truth
    assert last == events[-1]
    assert CrewSnapshot.model_validate_json(path.read_bytes()) == truth


@pytest.mark.parametrize("upto", [1, 2, 3])
def test_a_stale_snapshot_is_brought_up_to_date_from_events(history, upto: int) -> None:
    home, truth, events = history
    stale = None
    for event in events[:upto]:
        stale = crewlog.fold(stale, event)
    assert stale != truth
    path = home.root / "crew" / "ada" / "state.json"
    home.store.publish(path, encode(stale))
    snapshot, _ = crewlog.load(fresh(home), "ada")
    assert snapshot == truth
    snapshot, last = crewlog.load(fresh(home), "ada", repair=True)
    assert snapshot == truth
    assert last == events[-1]
    assert CrewSnapshot.model_validate_json(path.read_bytes()) == truth


def test_a_snapshot_ahead_of_the_events_is_ignored(history) -> None:
    home, truth, events = history
    ahead = truth.model_copy(
        update=dict(
            seq=99,
            name="Mallory",
            incarnation_id="inc_forged",
            done_at=truth.assigned_at,
            report="forged",
        )
    )
    path = home.root / "crew" / "ada" / "state.json"
    home.store.publish(path, encode(ahead))
    snapshot, _ = crewlog.load(fresh(home), "ada")
    assert snapshot == truth
    snapshot, last = crewlog.load(fresh(home), "ada", repair=True)
    assert snapshot == truth
    assert last == events[-1]
    assert CrewSnapshot.model_validate_json(path.read_bytes()) == truth


def test_a_corrupt_snapshot_is_quarantined_and_rebuilt(history) -> None:
    home, truth, events = history
    path = home.root / "crew" / "ada" / "state.json"
    path.write_bytes(b'{"schema": 1, "seq": 4, "na')
    view = fresh(home)
    snapshot, _ = crewlog.load(view, "ada")
    assert snapshot == truth
    assert [p for p, _ in view.store.reports.reported()] == ["crew/ada/state.json"]


def test_protocol_works_on_after_the_snapshot_is_lost(history, project: Path) -> None:
    home, truth, events = history
    (home.root / "crew" / "ada" / "state.json").unlink()
    home = fresh(home)
    msg = protocol.tell(home, "Ada", "one more thing", assignment_id=truth.assignment.assignment_id)
    assert msg.assignment_id == truth.assignment.assignment_id
    assert msg.incarnation_id == truth.incarnation_id
    bounced = protocol.dismiss(home, "Ada")
    assert [b.message_id for b in bounced] == [truth.assignment.message_id, msg.message_id]
    names = sorted(os.listdir(home.root / "crew" / "ada" / "events"))
    assert names == [f"{i:08d}.json" for i in range(1, 6)]
    assert crewlog.load(fresh(home), "ada")[0].dismissed_at is not None

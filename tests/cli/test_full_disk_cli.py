"""A recruit that fails on a full disk leaves nothing of itself: a real, small filesystem.

The issue: on a full disk ``captain crew`` reported ``store_error`` while the crew was
recorded (``status`` listed it, the name was taken) and its work item was missing
(``unknown_work``) until another write repaired it. The rule (``state/crew/protocol.py``,
``_unrecruit``): a recruit that fails part way takes back everything it wrote — the pane,
the work item (files: ``ledger.discard_unrecorded``; PostgreSQL: its transaction rolls
back), the task's mail, the ``recruited`` event and the snapshot — so a refusal leaves
nothing half-visible, and the name can be recruited once there is room.

The home is on a tmpfs of 4 MiB mounted for the test (root only: skipped, saying why,
where mounting is impossible); the free space is set in 4 KiB steps from none to enough,
so some recruit fails at every write it makes. On both ledgers, through the CLI's
``main()`` in process.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import subprocess
from pathlib import Path

import pytest
from support.cli import invoke
from support.ledger_backends import ON_BOTH

from state.work import ledger

STEP = 4096
LEVELS = 40  # at most; each test stops once it has succeeded (files: after 8 refusals)


@pytest.fixture
def small_disk(tmp_path):
    """A 4 MiB tmpfs of the test's own, unmounted afterwards."""
    point = tmp_path / "disk"
    point.mkdir()
    mount = shutil.which("mount")
    if mount is None or os.geteuid() != 0:
        pytest.skip(
            "mounting a small tmpfs needs root and mount(8); the full-disk test cannot run here"
        )
    made = subprocess.run(
        [mount, "-t", "tmpfs", "-o", "size=4m,mode=0700", "tmpfs", str(point)],
        capture_output=True,
        text=True,
    )
    if made.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here: {made.stderr.strip()}")
    try:
        yield point
    finally:
        if subprocess.run(["umount", str(point)], capture_output=True).returncode != 0:
            subprocess.run(["umount", "-l", str(point)], capture_output=True)


def fill(disk: Path, leave: int) -> Path:
    """Take all the free space but ``leave`` bytes."""
    st = os.statvfs(disk)
    filler = disk / "filler"
    fd = os.open(filler, os.O_CREAT | os.O_WRONLY, 0o600)
    try:
        if st.f_bavail * st.f_frsize > leave:
            os.posix_fallocate(fd, 0, st.f_bavail * st.f_frsize - leave)
    finally:
        os.close(fd)
    return filler


def listing(root: Path, *parts: str) -> list[str]:
    path = root.joinpath(*parts)
    return sorted(n for n in os.listdir(path)) if path.is_dir() else []


@ON_BOTH
def test_a_recruit_refused_for_want_of_space_leaves_nothing_of_itself(small_disk, cli_ledger):  # noqa: F811
    root = small_disk / "home"
    project = small_disk / "project"
    project.mkdir()
    home = ("--home", str(root), "--json")
    assert (
        invoke("crew", "Warm", "--task", "t", "--no-launch", "--cwd", str(project), *home)[0] == 0
    )
    (root / "config.toml").write_text("[ledger]\nslots = 100\n")  # every recruit runs
    refused, recruited = [], []
    for level in range(LEVELS):
        name = f"Crew{level}"
        crews, open_items, items = (
            listing(root, "crew"),
            listing(root, "ledger", "open"),
            listing(root, "work"),
        )
        listed = len(invoke("work", "list", "--limit", "100", *home)[1]["items"])
        filler = fill(small_disk, level * STEP)
        code, payload, err = invoke(
            "crew", name, "--task", f"task {level}", "--no-launch", "--cwd", str(project), *home
        )
        filler.unlink()
        assert "Traceback" not in err
        status = invoke("status", *home)[1]
        names = {c["name"] for c in status["crew"]}
        if code == 0:
            recruited.append(name)
            assert name in names
            shown = invoke("work", "show", payload["work_id"], *home)
            assert shown[0] == 0 and shown[1]["item"]["state"] == "running", shown
            assert listing(root, "mail", name.lower()) == [f"{payload['message_id']}.json"]
            if len(recruited) == 2:
                break  # room enough, twice: every write a recruit makes was short once
            continue
        assert payload["error"]["code"] == "store_error", payload
        refused.append(name)
        assert name not in names, f"{name} was refused and is on the crew (free {level} x 4K)"
        assert listing(root, "crew") == crews, f"free {level} x 4K"
        assert listing(root, "ledger", "open") == open_items and listing(root, "work") == items, (
            f"a work item was left (free {level} x 4K)"
        )
        assert not (root / "mail" / name.lower()).exists()
        assert len(invoke("work", "list", "--limit", "100", *home)[1]["items"]) == listed
    assert refused and recruited, (refused, recruited)
    print(
        f"{cli_ledger and 'postgresql' or 'files'}: {len(refused)} recruits refused for "
        f"space, none left a trace; {len(recruited)} recruited whole"
    )
    for name in refused:  # with room again, each name is free: nothing of it was kept
        code, payload, err = invoke(
            "crew", name, "--task", "again", "--no-launch", "--cwd", str(project), *home
        )
        assert code == 0 and payload["ok"], (name, payload, err)


@contextlib.contextmanager
def as_crew(env: dict[str, str]):
    """This process as the crew whose environment recruiting printed."""
    saved = {k: os.environ.get(k) for k in env}
    os.environ.update(env)
    try:
        yield
    finally:
        for k, v in saved.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v


@ON_BOTH
def test_an_assign_refused_for_want_of_space_leaves_nothing_of_itself(small_disk, cli_ledger):  # noqa: F811
    root = small_disk / "home"
    project = small_disk / "project"
    project.mkdir()
    home = ("--home", str(root), "--json")
    code, first, err = invoke(
        "crew", "Ann", "--task", "t", "--no-launch", "--cwd", str(project), *home
    )
    assert code == 0, (first, err)
    with as_crew(first["env"]):
        assert invoke("inbox", "Ann", "--json")[0] == 0
        assert invoke("done", "Ann", "--report", "r", "--json")[0] == 0
    done = invoke("wait", "Ann", "--timeout", "5", *home)[1]
    assert invoke("wait", "Ann", "--ack", done["delivery_id"], "--timeout", "0", *home)[0] == 0
    refused = 0
    for level in range(LEVELS):
        events, mail = listing(root, "crew", "ann", "events"), listing(root, "mail", "ann")
        open_items, items = listing(root, "ledger", "open"), listing(root, "work")
        listed = len(invoke("work", "list", "--limit", "100", *home)[1]["items"])
        filler = fill(small_disk, level * STEP)
        code, payload, err = invoke(
            "assign", "Ann", "--task", f"next {level}", "--handoff", first["assignment_id"], *home
        )
        filler.unlink()
        assert "Traceback" not in err
        if code == 0:
            work_id = ledger.work_id_for_assignment(payload["assignment_id"])
            shown = invoke("work", "show", work_id, *home)
            assert shown[0] == 0, shown
            break
        assert payload["error"]["code"] == "store_error", payload
        refused += 1
        row = next(c for c in invoke("status", *home)[1]["crew"] if c["name"] == "Ann")
        assert row["assignment_id"] == first["assignment_id"], f"free {level} x 4K"
        assert listing(root, "crew", "ann", "events") == events, f"free {level} x 4K"
        assert listing(root, "mail", "ann") == mail
        assert listing(root, "ledger", "open") == open_items and listing(root, "work") == items
        assert len(invoke("work", "list", "--limit", "100", *home)[1]["items"]) == listed
    else:
        raise AssertionError(f"no assign succeeded with {LEVELS} x 4K free")
    assert refused, "no level was short of space: the test did not test"
    print(
        f"{cli_ledger and 'postgresql' or 'files'}: {refused} assigns refused for space, "
        "none left a trace"
    )

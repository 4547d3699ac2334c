"""Where the home is, whether it is safe to use, and where each record lives in it."""

from __future__ import annotations

import os
import re
import stat
from pathlib import Path

from state.errors import CaptainError
from state.store import DIR_MODE, Store, encode

MOUNTINFO = "/proc/self/mountinfo"
# flock does not exclude across clients on these, so two captains could both "hold" a lock.
NETWORK_FILESYSTEMS = frozenset(
    {"nfs", "nfs4", "cifs", "smb", "smb2", "smb3", "smbfs", "afs", "ncpfs", "fuse.sshfs",
     "9p", "ceph", "glusterfs", "fuse.glusterfs", "lustre"}
)
DEFAULT_WAIT_TIMEOUT = 86400.0


def default_home() -> Path:
    env = os.environ.get("CAPTAIN_HOME")
    if env:
        return Path(env)
    import platformdirs  # only here: it costs start-up time on the crew-side path

    return platformdirs.user_state_path("captain")


def filesystem_type(path: Path, mountinfo: str | None = None) -> str:
    """The filesystem type of the mount that holds ``path`` (from mountinfo)."""
    if mountinfo is None:
        try:
            mountinfo = Path(MOUNTINFO).read_text()
        except OSError:
            return "unknown"
    target = os.path.realpath(path)
    best, best_type = "", "unknown"
    for line in mountinfo.splitlines():
        left, sep, right = line.partition(" - ")
        fields = left.split()
        if not sep or len(fields) < 5 or not right.split():
            continue
        mount_point = re.sub(r"\\([0-7]{3})", lambda m: chr(int(m.group(1), 8)), fields[4])
        inside = target == mount_point or target.startswith(mount_point.rstrip("/") + "/")
        if inside and len(mount_point) >= len(best):
            best, best_type = mount_point, right.split()[0]
    return best_type


def check_filesystem(path: Path, mountinfo: str | None = None) -> None:
    fstype = filesystem_type(path, mountinfo)
    if fstype in NETWORK_FILESYSTEMS or fstype.startswith("nfs"):
        raise CaptainError(
            "invalid_home",
            f"the home {path} is on a network filesystem ({fstype}), where file locks do not "
            "exclude; choose a local directory with --home or CAPTAIN_HOME.",
        )


class Home:
    """A captain home: the store plus the layout documented in docs/store.md."""

    def __init__(self, root: Path, *, mountinfo: str | None = None) -> None:
        self.root = Path(os.path.abspath(root))
        self._open(mountinfo)
        self.store = Store(self.root)
        self._config: dict | None = None
        self._config_stamp = None

    def _open(self, mountinfo: str | None) -> None:
        root = self.root
        if os.path.lexists(root) and not root.is_dir():
            raise CaptainError("invalid_home", f"the home {root} exists and is not a directory.")
        check_filesystem(root, mountinfo)  # before anything is created there
        fresh = not root.exists()
        if fresh:
            root.parent.mkdir(parents=True, exist_ok=True)
            try:
                os.mkdir(root, DIR_MODE)
            except FileExistsError:
                pass
            os.chmod(root, DIR_MODE)  # before home.json: a umask of 277 would leave 0500
        marker = root / "home.json"
        if not marker.exists():
            if not fresh and any(not n.startswith(".") for n in os.listdir(root)):
                raise CaptainError(
                    "invalid_home",
                    f"{root} is not empty and is not a captain home; refusing to write into "
                    "it. Choose an empty or new directory.",
                )
            from state.clock import now
            from state.models import HomeMeta  # only a new home needs a record written

            Store(root).create_once(marker, encode(HomeMeta(created_at=now())),
                                    same=lambda a, b: True)
        st = root.stat()
        if st.st_uid == os.getuid() and (st.st_mode & 0o777) != DIR_MODE:
            os.chmod(root, DIR_MODE)  # 0700 whatever the umask made of it

    # -- layout: one place that says where each record kind lives ------------------------

    def events_dir(self, key: str):
        return self.store.dir("crew", key, "events")

    def snapshot_path(self, key: str):
        return self.store.dir("crew", key) / "state.json"

    def event_path(self, key: str, seq: int):
        """A crew's event ``seq`` (``events_dir`` lists them; ``event_seqs`` reads the names)."""
        return self.events_dir(key) / f"{seq:08d}.json"

    def mail_dir(self, key: str):
        return self.store.dir("mail", key)

    def receipts_dir(self, key: str):
        return self.store.dir("receipts", key)

    def bounces_dir(self, key: str):
        return self.store.dir("bounces", key)

    def notifications_dir(self, key: str):
        return self.store.dir("notifications", key)

    def acks_dir(self, key: str):
        return self.store.dir("acks", key)

    def returned_dir(self, key: str):
        return self.store.dir("returned", key)

    def ring_stamp_path(self, key: str):
        return self.store.dir("doorbell") / f"{key}.json"

    def has_crew(self, key: str) -> bool:
        """A real directory (never a symlink) for this crew key."""
        try:
            return stat.S_ISDIR(os.lstat(Path(self.root, "crew", key)).st_mode)
        except FileNotFoundError:
            return False

    def event_seqs(self, key: str) -> list[int]:
        """The sequence numbers of a crew's events, oldest first."""
        return [int(n) for n in self.store.names(self.events_dir(key)) if n.isdigit()]

    def work_exists(self, work_id: str) -> bool:
        """A work item exists once its first event does (``state.work.ledger``)."""
        return os.path.lexists(Path(self.root, "work", work_id, "events", "00000001.json"))

    def crew_keys(self) -> list[str]:
        """Keys of every crew directory; anything else found in crew/ is quarantined."""
        from state.inputs import NAME_RE

        keys = []
        for entry in os.scandir(self.store.dir("crew")):
            if entry.name.startswith("."):
                continue
            if entry.is_dir(follow_symlinks=False) and NAME_RE.fullmatch(entry.name) \
                    and entry.name == entry.name.lower():
                keys.append(entry.name)
            else:
                self.store.quarantine(Path(entry.path), "is not a crew directory")
        return sorted(keys)

    # -- settings ------------------------------------------------------------------------

    def config(self) -> dict:
        """``config.toml`` in the home; a broken one is reported and ignored."""
        path = self.root / "config.toml"
        try:  # long-lived processes (the cockpit, serve) see an edited file without a restart
            st = os.lstat(path)
            stamp = (st.st_ino, st.st_mtime_ns, st.st_size)
        except OSError:
            stamp = None
        if self._config is None or stamp != self._config_stamp:
            self._config = {}
            self._config_stamp = stamp
            try:
                data = self.store.read_bytes(path)
                if data is not None:
                    import tomllib  # only commands that read settings pay for the parser

                    self._config = tomllib.loads(data.decode("utf-8"))
            except Exception as exc:  # noqa: BLE001 - a bad settings file never stops work
                self.store.quarantine(path, f"is not valid TOML: {exc}")
        return self._config

    def number(self, table: str, name: str, default: float, minimum: float) -> float:
        """``[table] name`` from config.toml; absent or nonsense: the documented default."""
        section = self.config().get(table)
        return number_in(section if isinstance(section, dict) else {}, name, default, minimum)

    def wait_timeout(self) -> float:
        return self.number("crew", "wait_timeout", DEFAULT_WAIT_TIMEOUT, 0)


def number_in(section: dict, name: str, default: float, minimum: float) -> float:
    """One settings rule: a real number at least ``minimum`` (a bool is not a number)."""
    value = section.get(name)
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not value >= minimum:
        return default
    return float(value)

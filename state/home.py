"""Where the home is, whether it is safe to use, and where each record lives in it."""

from __future__ import annotations

import os
import re
import stat
import threading
import time
from pathlib import Path
from typing import Any, Protocol

from state import config as settings
from state.config import DEFAULT_WAIT_TIMEOUT  # noqa: F401 (where callers look for it)
from state.errors import CaptainError
from state.store import DIR_MODE, Quarantined, Reports, Store, encode

MOUNTINFO = "/proc/self/mountinfo"
# flock does not exclude across clients on these, so two captains could both "hold" a lock.
NETWORK_FILESYSTEMS = frozenset(
    {
        "nfs",
        "nfs4",
        "cifs",
        "smb",
        "smb2",
        "smb3",
        "smbfs",
        "afs",
        "ncpfs",
        "fuse.sshfs",
        "9p",
        "ceph",
        "glusterfs",
        "fuse.glusterfs",
        "lustre",
    }
)
CONFIG = "config.toml"
# An editor saving in place truncates, then writes: a config changed less than this long
# ago may be half written, so a process that has good settings keeps them until it is still.
CONFIG_SETTLE_SECONDS = 1.0


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


def _blank(root: Path) -> bool:
    """A directory that may become a home: nothing in it but hidden names and, at most, the
    home's own ``config.toml`` (docs/ledger.md: write the config first, then use the home)."""
    return all(n.startswith(".") or n == CONFIG for n in os.listdir(root))


class _Closable(Protocol):
    def close(self) -> None: ...


class Home:
    """A captain home: the store plus the layout documented in docs/store.md."""

    def __init__(
        self,
        root: Path,
        *,
        mountinfo: str | None = None,
        read_only: bool = False,
        reports: Reports | None = None,
    ) -> None:
        """``read_only`` (the read-only commands): nothing is created, swept or moved, not
        even the home itself; a home that does not exist reads as an empty one.
        ``reports``: who hears what the store could not use (``state.store.Reports``; the
        CLI's prints it), else this home's own, drained by ``store.reports``."""
        self.root = Path(os.path.abspath(root))
        self.read_only = read_only
        self._open(mountinfo)
        self.store = Store(self.root, writable=not read_only, reports=reports)
        self._config: dict[str, Any] = {}
        self._config_stamp: object = _UNREAD
        self._config_good = False  # _config came from a file that parsed (or no file)
        self._config_reported: object = _UNREAD
        self._config_refused: CaptainError | None = None  # the file's invalid_config
        # why the defaults are in force although config.toml exists (it does not parse, is
        # unreadable, or is not a file); None while the settings in force came from it
        self._config_unusable: str | None = None
        # The home's work ledger, resolved once on first use and kept for as long as this
        # Home is (``state.work.backend.handle_of``: a ``LedgerHandle``); never re-chosen
        # behind the process's back when config.toml changes.
        self.ledger_handle: _Closable | None = None
        self.ledger_guard = threading.Lock()

    def close(self) -> None:
        """Let go of what this Home holds open: its ledger handle (a database's
        connections). A process's end does it too; the CLI does it after each command."""
        with self.ledger_guard:
            handle, self.ledger_handle = self.ledger_handle, None
        if handle is not None:
            handle.close()

    def _open(self, mountinfo: str | None) -> None:
        root = self.root
        if os.path.lexists(root) and not root.is_dir():
            raise CaptainError("invalid_home", f"the home {root} exists and is not a directory.")
        check_filesystem(root, mountinfo)  # before anything is created there
        fresh = not root.exists()
        if self.read_only:
            if not fresh and not (root / "home.json").exists() and not _blank(root):
                raise CaptainError(
                    "invalid_home",
                    f"{root} is not empty and is not a captain home. Choose the home's directory.",
                )
            return
        if fresh:
            root.parent.mkdir(parents=True, exist_ok=True)
            try:
                os.mkdir(root, DIR_MODE)
            except FileExistsError:
                pass
            os.chmod(root, DIR_MODE)  # before home.json: a umask of 277 would leave 0500
        marker = root / "home.json"
        if not marker.exists():
            if not fresh and not _blank(root):
                raise CaptainError(
                    "invalid_home",
                    f"{root} is not empty and is not a captain home; refusing to write into "
                    "it. Choose an empty or new directory.",
                )
            from state.clock import now
            from state.records import HomeMeta  # only a new home needs a record written

            Store(root).create_once(
                marker, encode(HomeMeta(created_at=now())), same=lambda a, b: True
            )
        st = root.stat()
        if st.st_uid == os.getuid() and (st.st_mode & 0o777) != DIR_MODE:
            os.chmod(root, DIR_MODE)  # 0700 whatever the umask made of it

    # -- layout: one place that says where each record kind lives ------------------------

    def events_dir(self, key: str) -> Path:
        return self.store.dir("crew", key, "events")

    def snapshot_path(self, key: str) -> Path:
        return self.store.dir("crew", key) / "state.json"

    def event_path(self, key: str, seq: int) -> Path:
        """A crew's event ``seq`` (``events_dir`` lists them; ``event_seqs`` reads the names)."""
        return self.events_dir(key) / f"{seq:08d}.json"

    def mail_dir(self, key: str) -> Path:
        return self.store.dir("mail", key)

    def receipts_dir(self, key: str) -> Path:
        return self.store.dir("receipts", key)

    def bounces_dir(self, key: str) -> Path:
        return self.store.dir("bounces", key)

    def notifications_dir(self, key: str) -> Path:
        return self.store.dir("notifications", key)

    def acks_dir(self, key: str) -> Path:
        return self.store.dir("acks", key)

    def returned_dir(self, key: str) -> Path:
        return self.store.dir("returned", key)

    def ring_stamp_path(self, key: str) -> Path:
        return self.store.dir("doorbell") / f"{key}.json"

    def has_crew(self, key: str) -> bool:
        """A real directory (never a symlink) for this crew key."""
        try:
            return stat.S_ISDIR(os.lstat(Path(self.root, "crew", key)).st_mode)
        except FileNotFoundError:
            return False

    def event_seqs(self, key: str) -> list[int]:
        """The sequence numbers of a crew's events, oldest first."""
        return self.store.seqs(self.events_dir(key))

    def crew_keys(self) -> list[str]:
        """Keys of every crew directory; anything else found in crew/ is quarantined."""
        from state.inputs import NAME_RE

        keys = []
        try:
            entries = list(os.scandir(self.store.dir("crew")))
        except FileNotFoundError:
            return []  # a read-only look at a home with no crew yet
        for entry in entries:
            if entry.name.startswith("."):
                continue
            if (
                entry.is_dir(follow_symlinks=False)
                and NAME_RE.fullmatch(entry.name)
                and entry.name == entry.name.lower()
            ):
                keys.append(entry.name)
            else:
                self.store.quarantine(Path(entry.path), "is not a crew directory")
        return sorted(keys)

    # -- settings ------------------------------------------------------------------------

    def config(self) -> dict[str, Any]:
        """``config.toml``: the last good settings, re-read when the file changes.

        The file is a person's and is never moved. One that does not parse (or is a
        symlink, or not a file) is reported once per change and the last good settings are
        kept: the defaults, in a process that never saw a good one. A change younger than
        ``CONFIG_SETTLE_SECONDS`` is believed only once it is still, when there are good
        settings to keep meanwhile (an editor's save half done is not a config).
        """
        path = self.root / CONFIG
        stamp = _stamp(path)
        if stamp == self._config_stamp or (self._config_good and self._settling(stamp)):
            refused = self._config_refused
            if refused is not None and stamp == self._config_stamp:
                # a new one each time: one raised again and again would grow its traceback
                raise CaptainError(refused.code, refused.message, **refused.extra)
            return self._config
        self._config_refused = None
        try:
            data = self.store.read_bytes(path)
            if _stamp(path) != stamp:
                return self._config  # written while we read: the next call reads it again
            if data is None:
                parsed: dict[str, Any] = {}  # no file: the defaults, and no parser to import
            else:
                import tomllib  # only a home with settings pays for the parser

                parsed = tomllib.loads(data.decode("utf-8"))
        except Quarantined as bad:
            problem = str(bad)
        except OSError as exc:
            problem = f"could not be read: {exc.strerror or exc}"
        except Exception as exc:  # noqa: BLE001 - bad bytes, bad TOML, nesting too deep
            problem = f"is not valid TOML: {exc}"
        else:
            try:
                unknown = settings.check(parsed)
            except CaptainError as refused:
                return self._invalid(stamp, refused)
            if unknown and self._config_reported != stamp:
                self._config_reported = stamp
                self.store.reports.report(
                    CONFIG,
                    f"has settings captain does not know, ignored: {', '.join(unknown[:10])}",
                    moved=False,
                )
            self._config, self._config_good, self._config_stamp = parsed, True, stamp
            self._config_unusable = None
            return self._config
        self._config_stamp = stamp  # not read again until it changes
        if not self._config_good:
            self._config_unusable = problem
        if self._config_reported != stamp:
            self._config_reported = stamp
            kept = (
                "the last good settings are kept" if self._config_good else "the defaults are used"
            )
            self.store.reports.report(
                CONFIG,
                f"{problem}; {kept} until it is fixed (the file is left as it is)",
                moved=False,
            )
        return self._config

    def config_unusable(self) -> str | None:
        """Why the settings in force are the defaults although ``config.toml`` exists (it
        does not parse, cannot be read, or is not a file), or None. A setting whose
        default could do harm — which ledger the home uses — refuses on it instead
        (``state.work.location.ledger_section``)."""
        self.config()
        return self._config_unusable

    def _invalid(self, stamp: Stamp, refused: CaptainError) -> dict[str, Any]:
        """A config that parses but holds a value captain cannot use (``state/config.py``).
        A process that has good settings (``serve``, the cockpit) keeps them and says so
        once per change; one that has none refuses, before it does anything."""
        self._config_stamp = stamp
        if not self._config_good:
            self._config_refused = refused
            raise refused
        if self._config_reported != stamp:
            self._config_reported = stamp
            self.store.reports.report(
                CONFIG,
                f"[invalid_config] {refused.message} The last good settings "
                "are kept until it is fixed.",
                moved=False,
            )
        return self._config

    def _settling(self, stamp: Stamp) -> bool:
        """Did ``config.toml`` change too recently to trust (when gone: the home's entries)?"""
        if stamp is None:
            try:
                changed = os.stat(self.root).st_mtime_ns
            except OSError:
                return False
        else:
            changed = stamp[1]
        return abs(time.time_ns() - changed) < CONFIG_SETTLE_SECONDS * 1e9

    def setting(self, table: str, name: str) -> Any:
        """``[table] name`` from config.toml, validated at load; absent: its default."""
        return settings.value(self.config().get(table), name, table)

    def wait_timeout(self) -> float:
        return float(self.setting("crew", "wait_timeout"))


_UNREAD = object()  # config.toml not looked at yet
Stamp = tuple[int, int, int, int] | None  # _stamp's: None when the file is absent


def _stamp(path: Path) -> Stamp:
    """What changes when a file is rewritten, in place or not; None when it is absent."""
    try:
        st = os.lstat(path)
    except OSError:
        return None
    return (st.st_ino, st.st_mtime_ns, st.st_size, st.st_ctime_ns)

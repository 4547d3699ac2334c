"""The home's writing rules, implemented once.

Every write in captain goes through this module:

1. never in place: a dot-prefixed temp file in the same directory, flushed and fsynced,
   then published, then the directory fsynced;
2. create-once records are published with ``os.link`` (EEXIST means "already there");
   ``os.replace`` only for mutable snapshots;
3. read-modify-write happens under ``flock`` on a separate, never-deleted lock file;
4. readers skip temp files and sweep stale ones;
5. a file that fails to parse or validate is moved to ``quarantine/`` with a reason;
6. symlinks inside the home are never followed.
"""

from __future__ import annotations

import contextlib
import errno
import fcntl
import json
import os
import re
import stat
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar, overload

from state.errors import CaptainError

TEMP_PREFIX = ".tmp-"
STALE_TEMP_SECONDS = 60.0
# the folder of the home that holds crews' git worktrees (docs/worktrees.md): git's and the
# crews' files, not records; no scan of the home walks into it
WORKTREES = "worktrees"
MAX_RECORD_BYTES = 1024 * 1024  # a record larger than this is not ours: quarantine it
DIR_MODE = 0o700
FILE_MODE = 0o600

# The names the store gives records, and so the only names a reader lists (docs/store.md,
# "Names"): IDs, a kind then '_' then ASCII letters, digits, '_' and '-' (``msg_q_X``,
# ``dlv_X-idle``); event numbers as 8 ASCII digits (more only past 99999999, never a
# leading zero). A name ending like a record but of neither shape was not written by
# captain. Never str.isdigit() or int() on a name: they accept '¹' and '١'.
_ID = r"[a-z]{1,8}_[A-Za-z0-9_-]{1,120}"
_SEQ = r"[0-9]{8}|[1-9][0-9]{8,19}"
SEQ_NAME = re.compile(_SEQ, re.ASCII)
RECORD_NAME = re.compile(f"{_ID}|{_SEQ}", re.ASCII)  # any folder's: never a real record out

if TYPE_CHECKING:  # pydantic is imported where a record is validated, not at import:
    from pydantic import BaseModel  # the crew-side fast path never loads it (~300 ms)

    from state.records import CrewEvent, EventFile

M = TypeVar("M", bound="BaseModel")


class Quarantined(Exception):
    """Raised inside the store when a file is unreadable; never escapes ``read``."""


def loads_json(text: str | bytes, **kwargs: Any) -> Any:
    """``json.loads`` for text captain did not necessarily write (a record, a hook's input, a
    transcript line): JSON nested deeper than Python's parser goes (~100 KB of ``[``) is a
    ``ValueError`` like any other bad JSON, not the ``RecursionError`` json raises (which
    took ``status`` down with ``internal_error``). The models' own parser refuses it too."""
    try:
        return json.loads(text, **kwargs)
    except RecursionError:
        raise ValueError("JSON nested too deeply") from None


def _fsync_dir(directory: Path) -> None:
    fd = os.open(directory, os.O_RDONLY | os.O_DIRECTORY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def _write_temp(directory: Path, data: bytes) -> Path:
    """Write ``data`` to a fresh, fsynced, 0600 temp file in ``directory``."""
    tmp = directory / f"{TEMP_PREFIX}{os.getpid()}-{os.urandom(6).hex()}"
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, FILE_MODE)
    try:
        os.fchmod(fd, FILE_MODE)  # umask must not loosen it
        view = memoryview(data)
        while view:
            view = view[os.write(fd, view) :]
        os.fsync(fd)
    except BaseException:
        os.close(fd)
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise
    os.close(fd)
    return tmp


def _fits(path: Path, data: bytes) -> None:
    """The writer's side of the reader's cap: nothing is acknowledged that the next read
    would quarantine. Refused before the temp file exists, so nothing is written."""
    if len(data) > MAX_RECORD_BYTES:
        raise CaptainError(
            "record_too_large",
            f"{path.parent.name}/{path.name} would be {len(data)} bytes; the store reads "
            f"records of at most {MAX_RECORD_BYTES} bytes (1 MiB), so nothing was written.",
            limit=MAX_RECORD_BYTES,
        )


def encode(record: BaseModel) -> bytes:
    return record.model_dump_json(by_alias=True, exclude_none=False).encode() + b"\n"


class Reports:
    """What a home's store found and could not use, for whoever runs the process to say:
    a file moved to quarantine (``moved``), or a problem left where it is (a broken
    config.toml, a corrupt ledger row, a ledger setting changed under the process).

    Owned by one ``Store`` (so by one ``Home``: one per CLI command, cockpit, ``serve``,
    runner), never by the process: the CLI gives its command's home one with a ``listener``
    that prints each report as it happens (so a long-running ``serve`` says it too);
    without one (the cockpit, tests) the lists keep them until ``reported``/``warnings``
    drain them."""

    SAID_MAX = 10_000  # ``once``'s memory: past it, everything may be said again

    def __init__(self, listener: Callable[[str, str, bool], None] | None = None) -> None:
        self.listener = listener
        self._moved: list[tuple[str, str]] = []
        self._left: list[tuple[str, str]] = []
        self._said: set[str] = set()
        self._lock = threading.Lock()

    def report(self, path: str, reason: str, *, moved: bool) -> None:
        listener = self.listener
        if listener is not None:
            listener(path, reason, moved)
            return
        with self._lock:
            (self._moved if moved else self._left).append((path, reason))

    def once(self, ident: str, path: str, reason: str) -> None:
        """``report`` (left in place) once per ``ident``, however often it is met (a
        corrupt ledger row, read again at every poll); bounded at ``SAID_MAX``."""
        with self._lock:
            if ident in self._said:
                return
            if len(self._said) >= self.SAID_MAX:
                self._said.clear()  # a ledger this broken is said again, never grows memory
            self._said.add(ident)
        self.report(path, reason, moved=False)

    def reported(self) -> list[tuple[str, str]]:
        """Drain what was moved to quarantine since the last call."""
        with self._lock:
            out, self._moved = self._moved, []
        return out

    def warnings(self) -> list[tuple[str, str]]:
        """Drain what was left in place since the last call."""
        with self._lock:
            out, self._left = self._left, []
        return out


class Store:
    """One home directory and the only code that writes into it."""

    def __init__(
        self, root: Path, *, writable: bool = True, reports: Reports | None = None
    ) -> None:
        self.root = root
        self._root = str(root)
        self.reports = reports if reports is not None else Reports()
        # a read-only store (read-only commands) creates, sweeps and moves nothing
        self.writable = writable
        self.quarantined: list[tuple[str, str]] = []  # (relative path, reason) this run
        self._left: set[str] = set()  # bad files reported but left in place, once each

    # -- directories -------------------------------------------------------------------

    def dir(self, *parts: str, create: bool | None = None) -> Path:
        """Return ``root/parts``, refusing any symlinked component, creating it 0700 when
        ``create`` (by default: when this store writes)."""
        if create is None:
            create = self.writable
        # Checked on every call, not cached: a long-lived process (the cockpit) must notice
        # a directory swapped for a link after its first use. A few lstats are cheap; the
        # walk joins strings, not Paths (status asks ~10 directories per crew, and building
        # a Path per component was most of what reading a crew cost it).
        path = self.root.joinpath(*parts)
        current = self._root
        for part in parts:
            current = os.path.join(current, part)
            try:
                st = os.lstat(current)
            except FileNotFoundError:
                if not create:
                    return path
                try:
                    os.mkdir(current, DIR_MODE)
                except FileExistsError:
                    pass
                os.chmod(current, DIR_MODE, follow_symlinks=False)
                st = os.lstat(current)
            if stat.S_ISLNK(st.st_mode) or not stat.S_ISDIR(st.st_mode):
                raise CaptainError(
                    "store_error",
                    f"{current} is a symlink or not a directory; captain never follows "
                    "links inside its home. Move it away and try again.",
                )
        return path

    # -- writing -----------------------------------------------------------------------

    def publish(self, path: Path, data: bytes) -> None:
        """Atomically replace a mutable snapshot (rule 1)."""
        _fits(path, data)
        directory = path.parent
        tmp = _write_temp(directory, data)
        try:
            os.replace(tmp, path)
        except BaseException:
            with contextlib.suppress(OSError):
                os.unlink(tmp)
            raise
        _fsync_dir(directory)

    def create_once(
        self,
        path: Path,
        data: bytes,
        same: Callable[[bytes, bytes], bool] | None = None,
    ) -> bool:
        """Publish a create-once record with ``os.link`` (rule 2).

        Returns True when this call created it, False when an identical record was already
        there. A different record under the same name raises ``message_conflict``.
        """
        _fits(path, data)
        directory = path.parent
        tmp = _write_temp(directory, data)
        try:
            os.link(tmp, path, follow_symlinks=False)
            created = True
        except FileExistsError:
            created = False
        finally:
            with contextlib.suppress(OSError):
                os.unlink(tmp)
        _fsync_dir(directory)
        if created:
            return True
        try:
            existing = self.read_bytes(path)
        except Quarantined as bad:
            raise CaptainError(
                "store_error",
                f"{path} is taken by something that {bad}; nothing was written. Move it away "
                "and try again.",
            ) from None
        if existing == data or (same is not None and existing is not None and same(existing, data)):
            return False
        raise CaptainError(
            "message_conflict",
            f"{path.name} already exists in {path.parent.name}/ with different content; "
            "nothing was overwritten.",
        )

    @contextlib.contextmanager
    def lock(self, name: str) -> Iterator[None]:
        """Exclusive ``flock`` on ``locks/<name>.lock`` (rule 3); the file is never deleted."""
        path = self.dir("locks") / f"{name}.lock"
        fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW, FILE_MODE)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX)
            yield
        finally:
            os.close(fd)  # closing releases the flock

    # -- reading -----------------------------------------------------------------------

    def read_bytes(self, path: Path) -> bytes | None:
        """Bytes of a regular file, never through a symlink; None when absent."""
        try:
            fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
        except FileNotFoundError:
            return None
        except PermissionError:
            raise Quarantined("is not readable") from None
        except OSError as exc:
            if exc.errno == errno.ELOOP:
                raise Quarantined("is a symlink (never followed)") from None
            raise
        try:
            st = os.fstat(fd)
            if not stat.S_ISREG(st.st_mode):
                raise Quarantined("is not a regular file")
            if st.st_size > MAX_RECORD_BYTES:
                raise Quarantined(f"is {st.st_size} bytes, larger than any record")
            chunks = []
            while chunk := os.read(fd, 1 << 16):
                chunks.append(chunk)
            return b"".join(chunks)
        finally:
            os.close(fd)

    @overload
    def read(self, path: Path, model: type[M]) -> M | None: ...
    @overload
    def read(self, path: Path, model: type[EventFile]) -> CrewEvent | None: ...
    def read(self, path: Path, model: type[M] | type[EventFile]) -> M | CrewEvent | None:
        """Parse and validate one record; quarantine it (rule 5) when that fails."""
        try:
            data = self.read_bytes(path)
            if data is None:
                return None
            try:
                text = data.decode("utf-8")
            except UnicodeDecodeError:
                raise Quarantined("is not UTF-8") from None
            from pydantic import ValidationError

            try:
                return model.model_validate_json(text)
            except ValidationError as exc:
                first = exc.errors()[0]
                where = ".".join(str(p) for p in first.get("loc", ())) or "record"
                raise Quarantined(
                    f"does not validate as {model.__name__}: {where}: {first['msg']}"
                ) from None
        except Quarantined as bad:
            self.quarantine(path, str(bad))
            return None

    def read_json(self, path: Path) -> dict[str, Any] | None:
        """Parse a JSON object that has no model (settings); quarantine garbage."""
        try:
            data = self.read_bytes(path)
            if data is None:
                return None
            try:
                value = loads_json(data.decode("utf-8"))
            except (UnicodeDecodeError, ValueError):
                raise Quarantined("is not UTF-8 JSON") from None
            if not isinstance(value, dict):
                raise Quarantined("is not a JSON object")
            return value
        except Quarantined as bad:
            self.quarantine(path, str(bad))
            return None

    def names(
        self, directory: Path, suffix: str = ".json", shape: re.Pattern[str] = RECORD_NAME
    ) -> list[str]:
        """Record names in ``directory`` (sorted), skipping and sweeping temp files (rule 4).

        A name ending in ``suffix`` but not of ``shape`` was not written by captain: it is
        quarantined (rule 5), never parsed. Other names (subfolders, an editor's backup)
        are not this folder's records and are left alone.
        """
        try:
            entries = os.listdir(directory)
        except (FileNotFoundError, NotADirectoryError):
            return []
        # The usual folder holds only records: its stems are found in one pass over its
        # listing joined by newlines (the cockpit's first scan of a big home lists 250k
        # names: a Python loop over them was most of it). Anything else in it (a name with
        # a newline, one starting with a dot such as a temp file, a name of neither
        # shape) sends the whole folder through the loop below, which says what to do.
        listing = "\n".join(entries)
        if listing.count("\n") == len(entries) - 1 and "\n." not in f"\n{listing}":
            ending = f"{re.escape(suffix)}$"
            stems = re.findall(f"^({shape.pattern}){ending}", listing, shape.flags | re.M)
            ours = f"{listing}\n".count(f"{suffix}\n") if suffix else len(entries)
            if len(stems) == ours and all(isinstance(stem, str) for stem in stems):
                stems.sort()
                return stems
        out = []
        now = time.time()
        for name in entries:
            if name.startswith("."):
                if name.startswith(TEMP_PREFIX) and self.writable:
                    self._sweep_one(Path(directory, name), now)
                continue
            if not name.endswith(suffix):
                continue
            stem = name[: len(name) - len(suffix)]
            if shape.fullmatch(stem):
                out.append(stem)
            else:
                self.quarantine(Path(directory, name), "is not named like a record captain writes")
        out.sort()
        return out

    def seqs(self, directory: Path) -> list[int]:
        """The numbers of an events folder's records (``<seq:08d>.json``), oldest first."""
        return sorted(int(name) for name in self.names(directory, shape=SEQ_NAME))

    def records(self, directory: Path, model: type[M]) -> list[M]:
        """Every valid record in ``directory``, in name order; bad ones quarantined."""
        out = []
        for name in self.names(directory):
            record = self.read(directory / f"{name}.json", model)
            if record is not None:
                out.append(record)
        return out

    # -- hygiene -----------------------------------------------------------------------

    def _sweep_one(self, path: Path, now: float) -> None:
        with contextlib.suppress(OSError):
            if now - os.lstat(path).st_mtime > STALE_TEMP_SECONDS:
                os.unlink(path)

    def sweep(self) -> int:
        """Remove stale temp files left by killed writers anywhere in the home."""
        removed = 0
        now = time.time()
        for dirpath, dirnames, filenames in os.walk(self.root, followlinks=False):
            if Path(dirpath) in (self.root / "quarantine", self.root / WORKTREES):
                dirnames[:] = []  # a crew's own ".tmp-" file is its own, not debris
                continue
            for name in filenames:
                if name.startswith(TEMP_PREFIX):
                    path = Path(dirpath) / name
                    before = path.exists()
                    self._sweep_one(path, now)
                    removed += before and not os.path.lexists(path)
        return removed

    def quarantine(self, path: Path, reason: str) -> None:
        """Move a bad file aside with a reason file; never raises (rule 5). A read-only
        store, or a home where the move fails (a read-only disk), reports it once and
        leaves it where it is: readers skip it either way."""
        try:
            rel = path.relative_to(self.root)
        except ValueError:
            rel = Path(path.name)
        if not self.writable:
            self._leave(str(rel), f"{reason} (left in place: this command only reads)")
            return
        flat = "__".join(rel.parts)
        while len(os.fsencode(flat)) > 200:  # a name captain did not write may be long
            flat = flat[1:]
        stamp = time.strftime("%Y%m%dT%H%M%S")
        try:
            qdir = self.dir("quarantine", create=True)
            target = qdir / f"{stamp}-{os.urandom(3).hex()}-{flat}"
            os.rename(path, target)  # renames a symlink itself, never its target
        except FileNotFoundError:
            return  # someone else moved it first
        except (OSError, CaptainError) as exc:
            why = exc.strerror if isinstance(exc, OSError) else exc.message
            self._leave(str(rel), f"{reason} (could not move it: {why})")
            return
        note = {
            "schema": 1,
            "path": str(rel),
            "reason": reason,
            "moved_to": target.name,
            "at": time.time(),
        }
        with contextlib.suppress(OSError, CaptainError):  # no room: the move still stands
            self.publish(qdir / f"{target.name}.reason", json.dumps(note).encode() + b"\n")
        self.quarantined.append((str(rel), reason))
        self.reports.report(str(rel), reason, moved=True)

    def _leave(self, rel: str, reason: str) -> None:
        if rel not in self._left:
            self._left.add(rel)
            self.reports.report(rel, reason, moved=False)

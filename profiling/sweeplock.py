"""One sweep writes to a database at a time, whoever starts it: ``<db>.sweep.lock``.

`hold` takes an exclusive ``flock`` on ``runs.duckdb.sweep.lock`` (beside
``runs.duckdb``) for the sweep's whole life and writes who holds it into the
file: pid, process start time, host, sweep id, command, points done. The kernel
drops the lock the moment the holder dies, ``kill -9`` included, so a lock is
never stale; a second sweep is refused naming the holder.

`holder` tells anyone (the dashboard's launcher, a test) which sweep runs on a
database now, and `interrupt_stale` marks ``interrupted`` every sweep the
sweeps table still calls running though nothing holds its lock any more (its
process is gone).
"""

from __future__ import annotations

import contextlib
import dataclasses
import errno
import fcntl
import json
import os
import socket
import stat
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pandas as pd
import psutil

from core import store
from core.errors import MemplanError, StoreError

LOCK_SUFFIX = ".sweep.lock"
# A reader takes the lock shared for a microsecond to look; a starting sweep waits that out.
ACQUIRE_PATIENCE_S = 1.0
ACQUIRE_RETRY_S = 0.01
# The holder rewrites its file in place; a reader that catches it half-written reads again.
READ_TRIES = 20
READ_RETRY_S = 0.01
# psutil's create_time has clock-tick resolution; a pid reused within this is no worry.
CREATE_TIME_TOLERANCE_S = 0.05
# Who holds a lock is a few hundred bytes of JSON (a cluster sweep's point states more).
MAX_HOLDER_BYTES = 16 * 2**20


class SweepBusyError(MemplanError):
    """Another sweep is writing to this database."""


@dataclass(frozen=True)
class Holder:
    """The sweep holding a database's lock, as it described itself (None: not readable)."""

    pid: int | None = None
    create_time: float | None = None
    hostname: str | None = None
    sweep_id: str | None = None
    command: str = ""
    started_at: str | None = None
    points_done: int | None = None
    points_total: int | None = None
    current_point: str | None = None
    # Where the points run: None for this machine, else e.g. "Slurm partition debug".
    executor: str | None = None
    # A cluster sweep's points: [{"label", "state" (new/queued/running/done), "job_id"}].
    point_states: list[dict[str, Any]] | None = None

    def describe(self) -> str:
        """``pid 123 on host, started 2025-...: memplan sweep ...``."""
        if self.pid is None:
            return "a process that has not said who it is yet"
        where = f" on {self.hostname}" if self.hostname else ""
        when = f", started {self.started_at}" if self.started_at else ""
        what = f": {self.command}" if self.command else ""
        return f"pid {self.pid}{where}{when}{what}"


def lock_path(db_path: Path) -> Path:
    """``runs.duckdb.sweep.lock`` beside the file ``db_path`` really is.

    Symbolic links (of the file and of its folders) are resolved first, so two
    names of one database share one lock.
    """
    db_path = Path(db_path).resolve()
    return db_path.with_name(db_path.name + LOCK_SUFFIX)


class LockFileError(MemplanError):
    """The lock file is not a plain file memplan can own (a link, a folder, a device...)."""


def _open(path: Path, flags: int) -> int:
    """``path`` opened without following a symbolic link, checked to be a plain file.

    `LockFileError` for a link, a folder or anything else: writing who holds the
    lock truncates the file, which must never reach another one.
    """
    fix = f"remove it (`rm -ri {path}`) and start again; memplan makes a new one"
    try:
        fd = os.open(path, flags | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC, 0o644)
    except OSError as error:
        if error.errno == errno.ELOOP:
            raise LockFileError(
                f"the sweep lock {path} is a symbolic link, which memplan never follows "
                f"(it would overwrite what it points to); {fix}"
            ) from None
        if error.errno == errno.EISDIR:
            raise LockFileError(
                f"the sweep lock {path} is a directory, not a file; {fix}"
            ) from None
        raise
    info = os.fstat(fd)
    if not stat.S_ISREG(info.st_mode) or info.st_nlink > 1:
        os.close(fd)
        what = "has other names (hard links)" if stat.S_ISREG(info.st_mode) else "is not a file"
        raise LockFileError(f"the sweep lock {path} {what}; {fix}")
    return fd


class SweepLock:
    """A held lock: `update` tells readers how far the sweep has got."""

    def __init__(self, fd: int, holder: Holder) -> None:
        self._fd = fd
        self.holder = holder

    def update(self, **changes: Any) -> None:
        self.holder = dataclasses.replace(self.holder, **changes)
        with contextlib.suppress(OSError):  # progress for readers: a full disk must not stop it
            _write(self._fd, self.holder)


def _write(fd: int, holder: Holder) -> None:
    data = json.dumps(dataclasses.asdict(holder)).encode()
    os.ftruncate(fd, 0)
    os.pwrite(fd, data, 0)


def _try_flock(fd: int, operation: int) -> bool:
    try:
        fcntl.flock(fd, operation | fcntl.LOCK_NB)
    except OSError as error:
        if error.errno in (errno.EWOULDBLOCK, errno.EAGAIN, errno.EACCES):
            return False
        raise
    return True


@contextlib.contextmanager
def hold(
    db_path: Path, sweep_id: str, command: str = "", points_total: int | None = None
) -> Iterator[SweepLock]:
    """Hold ``db_path``'s sweep lock while the block runs; `SweepBusyError` if another has it."""
    path = lock_path(db_path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd = _open(path, os.O_RDWR | os.O_CREAT)
    try:
        deadline = time.monotonic() + ACQUIRE_PATIENCE_S
        while not _try_flock(fd, fcntl.LOCK_EX):
            if time.monotonic() >= deadline:
                current = _read(fd)
                raise SweepBusyError(
                    f"another sweep is already writing to {Path(db_path).name} "
                    f"({current.describe()}); wait for it to finish or stop it first "
                    "(the dashboard's Cancel button, or Ctrl-C where it runs)"
                )
            time.sleep(ACQUIRE_RETRY_S)
        me = psutil.Process()
        lock = SweepLock(
            fd,
            Holder(
                pid=me.pid,
                create_time=me.create_time(),
                hostname=socket.gethostname(),
                sweep_id=sweep_id,
                command=command,
                started_at=store.now_iso(),
                points_done=0,
                points_total=points_total,
            ),
        )
        _write(fd, lock.holder)
        try:
            yield lock
        finally:
            os.ftruncate(fd, 0)
            fcntl.flock(fd, fcntl.LOCK_UN)
    finally:
        os.close(fd)


def _read(fd: int) -> Holder:
    for attempt in range(READ_TRIES):
        try:
            size = min(os.fstat(fd).st_size, MAX_HOLDER_BYTES)
            values = json.loads(os.pread(fd, size, 0))
            return Holder(**{f.name: values.get(f.name) for f in dataclasses.fields(Holder)})
        except (OSError, ValueError, TypeError, AttributeError):
            if attempt + 1 < READ_TRIES:
                time.sleep(READ_RETRY_S)
    return Holder()


def holder(db_path: Path) -> Holder | None:
    """The sweep writing to ``db_path`` now, or None when none is.

    A lock file that is not a plain file cannot be held (`hold` refuses it): None.
    """
    path = lock_path(db_path)
    try:
        fd = _open(path, os.O_RDONLY)
    except (FileNotFoundError, LockFileError):
        return None
    try:
        if _try_flock(fd, fcntl.LOCK_SH):
            fcntl.flock(fd, fcntl.LOCK_UN)
            return None
        return _read(fd)
    finally:
        os.close(fd)


def holder_process(current: Holder | None) -> psutil.Process | None:
    """The holder's process when it runs on this machine (same pid *and* start time)."""
    if current is None or current.pid is None or current.hostname != socket.gethostname():
        return None
    try:
        process = psutil.Process(current.pid)
        if current.create_time is not None and (
            abs(process.create_time() - current.create_time) > CREATE_TIME_TOLERANCE_S
        ):
            return None
        return None if process.status() == psutil.STATUS_ZOMBIE else process
    except psutil.NoSuchProcess:
        return None


def stale_sweeps(sweeps: pd.DataFrame, current: Holder | None) -> list[str]:
    """Sweeps the table calls running that cannot be: none but ``current``'s may run."""
    if sweeps.empty:
        return []
    if current is not None and current.sweep_id is None:
        return []  # a holder that has not said which sweep it is: judge nothing yet
    running = sweeps.loc[sweeps["status"] == store.SWEEP_RUNNING, "sweep_id"].astype(str)
    alive = current.sweep_id if current is not None else None
    return [sweep_id for sweep_id in running if sweep_id != alive]


def interrupt_stale(db_path: Path, sweeps: pd.DataFrame | None = None) -> list[str]:
    """Mark ``interrupted`` the sweeps recorded as running whose process is gone; their ids.

    ``sweeps`` is the sweeps table if the caller has one at hand (a cached copy
    is fine: only rows still running are changed). The holder is read *after*
    the table, so a sweep that started meanwhile is never taken for a dead one.
    """
    db_path = Path(db_path)
    if sweeps is None:
        if not db_path.exists():
            return []
        sweeps = store.load_sweeps(db_path)
    stale = stale_sweeps(sweeps, holder(db_path))
    return store.interrupt_sweeps(db_path, stale) if stale else []


def interrupt_stale_quietly(db_path: Path, sweeps: pd.DataFrame | None = None) -> list[str]:
    """`interrupt_stale`, or nothing when the database cannot be written to right now."""
    try:
        return interrupt_stale(db_path, sweeps)
    except StoreError:
        return []

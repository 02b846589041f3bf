"""The writer lock: one writer per store at a time, across threads and processes.

A :class:`WriterLock` is a re-entrant thread lock plus an advisory ``fcntl.flock`` on a
lock file. Writers (``add``, ``delete``, ``doctor``, lexical catch-up and rebuilds) hold
it only for the duration of the write; readers never take it, so searches keep working
while another process writes. The operating system drops a ``flock`` when its process
dies, so a lock is never left behind by a crash: a set "dirty" flag with a free lock
therefore means an interrupted write, which the next writer (or the next open) repairs.

A second writer waits up to ``timeout`` seconds, then gets :class:`IndexLockedError`
naming the lock file and the process holding it.
"""

from __future__ import annotations

import os
import threading
import time
from pathlib import Path
from types import TracebackType

from ..errors import IndexLockedError, InvalidInputError, StoreError

try:  # POSIX
    import fcntl
except ImportError:  # pragma: no cover - Windows: thread-level locking only
    fcntl = None  # type: ignore[assignment]

__all__ = ["LOCK_FILE", "WriterLock"]

#: The lock file's name in an embedded store's directory.
LOCK_FILE = "remy-write.lock"

_POLL_START = 0.005
_POLL_MAX = 0.1


class WriterLock:
    """A re-entrant, inter-process writer lock on ``path`` (created if missing).

    Usage:
        >>> lock = WriterLock("./remy_data/remy-write.lock", timeout=10)
        >>> with lock:                  # waits up to 10 s, else IndexLockedError
        ...     write_things()
        >>> if lock.acquire(blocking=False):   # only if nobody is writing
        ...     try: ...
        ...     finally: lock.release()
    """

    def __init__(self, path: str | os.PathLike[str], *, timeout: float = 10.0) -> None:
        if isinstance(timeout, bool) or not isinstance(timeout, (int, float)) or not timeout >= 0:
            msg = f"lock timeout must be a number of seconds >= 0, got {timeout!r}"
            raise InvalidInputError(msg)
        self.path = Path(path)
        self.timeout = float(timeout)
        self._thread_lock = threading.RLock()
        self._depth = 0  # only touched while holding _thread_lock
        self._fd: int | None = None

    def __repr__(self) -> str:
        return f"WriterLock({str(self.path)!r})"

    @property
    def held(self) -> bool:
        """True while some thread of this object holds the lock."""
        return self._depth > 0

    def acquire(self, blocking: bool = True, timeout: float | None = None) -> bool:
        """Take the lock. Blocking: wait up to ``timeout`` (default: the lock's) and raise
        :class:`IndexLockedError` if it is not free by then. Non-blocking: return False
        at once if another thread or process holds it."""
        wait = self.timeout if timeout is None else timeout
        deadline = time.monotonic() + wait
        got = (
            self._thread_lock.acquire(timeout=wait)
            if blocking
            else self._thread_lock.acquire(blocking=False)
        )
        if not got:
            if blocking:
                raise self._error(wait, "another thread of this process")
            return False
        try:
            if self._depth == 0 and not self._lock_file(blocking, deadline, wait):
                self._thread_lock.release()
                return False
        except BaseException:
            self._thread_lock.release()
            raise
        self._depth += 1
        return True

    def release(self) -> None:
        """Release one level of the lock (the file lock goes with the outermost one)."""
        if self._depth <= 0:
            msg = f"{self!r} is released more often than it was acquired"
            raise StoreError(msg)
        self._depth -= 1
        try:
            if self._depth == 0:
                self._unlock_file()
        finally:
            self._thread_lock.release()

    def __enter__(self) -> WriterLock:
        self.acquire()
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.release()

    # -- the file lock --------------------------------------------------------------

    def _lock_file(self, blocking: bool, deadline: float, wait: float) -> bool:
        if fcntl is None:  # pragma: no cover
            return True
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o644)
        except OSError as exc:
            msg = f"cannot open the writer lock file {self.path}: {exc}; check its permissions"
            raise StoreError(msg) from exc
        delay = _POLL_START
        try:
            while True:
                try:
                    fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                    break
                except BlockingIOError:
                    remaining = deadline - time.monotonic()
                    if not blocking:
                        os.close(fd)
                        return False
                    if remaining <= 0:
                        holder = _read_holder(fd)
                        os.close(fd)
                        raise self._error(wait, holder) from None
                    time.sleep(min(delay, remaining))
                    delay = min(delay * 2, _POLL_MAX)
        except OSError as exc:
            os.close(fd)
            msg = f"cannot lock the writer lock file {self.path}: {exc}"
            raise StoreError(msg) from exc
        try:  # for the error message of whoever waits next; best effort
            os.ftruncate(fd, 0)
            os.pwrite(fd, f"pid {os.getpid()}\n".encode(), 0)
        except OSError:
            pass
        self._fd = fd
        return True

    def _unlock_file(self) -> None:
        fd, self._fd = self._fd, None
        if fd is None:
            return
        try:
            if fcntl is not None:
                fcntl.flock(fd, fcntl.LOCK_UN)
        finally:
            os.close(fd)

    def _error(self, wait: float, holder: str) -> IndexLockedError:
        msg = (
            f"the store is being written by {holder} (writer lock {str(self.path)!r}) and "
            f"was not released within {wait:g} s; retry later, pass a larger "
            "lock_timeout=, or stop the other writer"
        )
        return IndexLockedError(msg)


def _read_holder(fd: int) -> str:
    try:
        text = os.pread(fd, 64, 0).decode("ascii", "replace").strip()
    except OSError:
        text = ""
    return f"another process ({text})" if text.startswith("pid ") else "another process"

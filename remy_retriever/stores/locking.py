"""The writer lock: one writer per store at a time, across threads and processes, served
in turn.

A :class:`WriterLock` is a re-entrant thread lock (one per lock file and process, shared
by every ``WriterLock`` of that path) plus an advisory ``fcntl.flock`` on the lock file.
Writers (``add``, ``delete``, ``doctor``, lexical catch-up and rebuilds) hold it only for
the duration of the write; readers never take it, so searches keep working while another
process writes. The operating system drops a ``flock`` when its process dies, so a lock
is never left behind by a crash: a set "dirty" flag with a free lock therefore means an
interrupted write, which the next writer (or the next open) repairs.

Fairness: a process that finds the lock taken queues for it with a ticket, a file in
``<lock file>.queue/`` numbered one above the highest ticket present and held under its
own ``flock``. Only the lowest live ticket may take the lock, and a free lock is taken
directly only while nobody queues; so processes get the lock in the order they began
waiting, and a writer that releases the lock and asks again queues behind everyone
already waiting. A ticket whose ``flock`` is free belongs to a process that died: the
next waiter to see it deletes it. Threads of one process take the lock one at a time, in
no particular order.

A writer waits up to ``timeout`` seconds, then gets :class:`IndexLockedError` naming the
lock file and the process holding it.
"""

from __future__ import annotations

import logging
import os
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager, suppress
from pathlib import Path
from types import TracebackType

from ..errors import IndexLockedError, InvalidInputError, StoreError

try:  # POSIX
    import fcntl
except ImportError:  # pragma: no cover - Windows: thread-level locking only
    fcntl = None  # type: ignore[assignment]

__all__ = ["LOCK_FILE", "QUEUE_SUFFIX", "WriterLock"]

#: The lock file's name in an embedded store's directory.
LOCK_FILE = "remy-write.lock"
#: The queue of waiting writers: the directory ``<lock file><QUEUE_SUFFIX>``.
QUEUE_SUFFIX = ".queue"

_log = logging.getLogger(__name__)

_POLL_START = 0.002
_POLL_MAX = 0.05
_TICKET = "t"
_NEW = "new-"
_COUNTER = "issued"


class _Local:
    """This process's share of one lock file: every WriterLock of the path uses it."""

    def __init__(self) -> None:
        self.rlock = threading.RLock()
        self.depth = 0  # only touched while holding rlock
        self.owner: int | None = None
        self.fd: int | None = None


_LOCALS: dict[str, _Local] = {}
_LOCALS_GUARD = threading.Lock()


def _local_for(path: Path) -> _Local:
    key = os.path.realpath(path)
    with _LOCALS_GUARD:
        return _LOCALS.setdefault(key, _Local())


class WriterLock:
    """A re-entrant, inter-process, first-come-first-served writer lock on ``path``
    (created if missing).

    Usage:
        >>> lock = WriterLock("./remy_data/remy-write.lock", timeout=10)
        >>> with lock:                  # waits up to 10 s, else IndexLockedError
        ...     write_things()
        >>> if lock.acquire(blocking=False):   # only if nobody writes or waits
        ...     try: ...
        ...     finally: lock.release()
    """

    def __init__(self, path: str | os.PathLike[str], *, timeout: float = 10.0) -> None:
        if isinstance(timeout, bool) or not isinstance(timeout, (int, float)) or not timeout >= 0:
            msg = f"lock timeout must be a number of seconds >= 0, got {timeout!r}"
            raise InvalidInputError(msg)
        self.path = Path(path)
        self.queue = self.path.with_name(self.path.name + QUEUE_SUFFIX)
        self.timeout = float(timeout)
        self._local = _local_for(self.path)

    def __repr__(self) -> str:
        return f"WriterLock({str(self.path)!r})"

    @property
    def held(self) -> bool:
        """True while some thread of this process holds the lock."""
        return self._local.depth > 0

    def acquire(self, blocking: bool = True, timeout: float | None = None) -> bool:
        """Take the lock. Blocking: wait (in turn, see the module docstring) up to
        ``timeout`` (default: the lock's) and raise :class:`IndexLockedError` if it is not
        ours by then. Non-blocking: return False at once if another thread or process
        holds it or waits for it."""
        local = self._local
        wait = self.timeout if timeout is None else timeout
        deadline = time.monotonic() + wait
        got = local.rlock.acquire(timeout=wait) if blocking else local.rlock.acquire(False)
        if not got:
            if blocking:
                raise self._error(wait, "another thread of this process", 0)
            return False
        try:
            if local.depth == 0:
                if not self._lock_file(blocking, deadline, wait):
                    local.rlock.release()
                    return False
                local.owner = threading.get_ident()
        except BaseException:
            local.rlock.release()
            raise
        local.depth += 1
        return True

    def release(self) -> None:
        """Release one level of the lock (the file lock goes with the outermost one)."""
        local = self._local
        if local.depth <= 0 or local.owner != threading.get_ident():
            msg = f"{self!r} is released more often than it was acquired"
            raise StoreError(msg)
        local.depth -= 1
        try:
            if local.depth == 0:
                local.owner = None
                self._unlock_file()
        finally:
            local.rlock.release()

    @contextmanager
    def no_local_writer(self) -> Iterator[bool]:
        """Yields True if no other thread of this process is writing to this store, and
        keeps them from starting meanwhile; else yields False. Never waits and takes no
        file lock: other processes' writers are unaffected."""
        local = self._local
        got = local.rlock.acquire(blocking=False)
        try:
            yield got
        finally:
            if got:
                local.rlock.release()

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
        try:
            if not self._take(fd, None):
                if not blocking:
                    os.close(fd)
                    return False
                self._wait_in_turn(fd, deadline, wait)
        except BaseException as exc:
            os.close(fd)
            if isinstance(exc, OSError):
                msg = f"cannot lock the writer lock file {self.path}: {exc}"
                raise StoreError(msg) from exc
            raise
        try:  # for the error message of whoever waits next; best effort
            os.ftruncate(fd, 0)
            os.pwrite(fd, f"pid {os.getpid()}\n".encode(), 0)
        except OSError:
            pass
        self._local.fd = fd
        return True

    def _take(self, fd: int, ticket: int | None) -> bool:
        """Take the file lock if it is free and nobody queued before ``ticket`` (None:
        nobody queues at all)."""
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            return False
        if self._ahead(ticket):
            fcntl.flock(fd, fcntl.LOCK_UN)
            return False
        return True

    def _wait_in_turn(self, fd: int, deadline: float, wait: float) -> None:
        if wait > 0:  # a second writer would otherwise wait in silence
            _log.warning(
                "waiting for the writer lock %s: %s is writing to this store (waiting up "
                "to %.0f s, then IndexLockedError)",
                self.path,
                _read_holder(fd),
                wait,
            )
        number, ticket_fd = self._join_queue(deadline, wait)
        delay = _POLL_START
        try:
            while not self._take(fd, number):
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    raise self._error(wait, _read_holder(fd), self._ahead(number))
                time.sleep(min(delay, remaining))
                delay = min(delay * 2, _POLL_MAX)
        finally:
            with suppress(OSError):
                os.unlink(self.queue / f"{_TICKET}{number:012d}")
            os.close(ticket_fd)

    def _join_queue(self, deadline: float, wait: float) -> tuple[int, int]:
        """A ticket numbered above every ticket ever issued here, held under our
        ``flock``. Tickets are made one at a time (under a ``flock`` on the queue
        directory) and appear already locked (made under a temporary name, then renamed),
        so a lower number always belongs to a writer that began waiting earlier, and a
        ticket without a ``flock`` belongs to a writer that is gone."""
        self.queue.mkdir(exist_ok=True)
        dir_fd = os.open(self.queue, os.O_RDONLY)
        try:
            delay = _POLL_START
            while True:  # held by others only for the moment it takes to make a ticket
                try:
                    fcntl.flock(dir_fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                    break
                except BlockingIOError:
                    if time.monotonic() >= deadline:
                        raise self._error(wait, f"the queue {str(self.queue)!r}", 0) from None
                    time.sleep(delay)
                    delay = min(delay * 2, _POLL_MAX)
            for name in os.listdir(self.queue):
                if name.startswith(_NEW):  # left by a writer that died making its ticket
                    with suppress(FileNotFoundError):
                        os.unlink(self.queue / name)
            number = max([self._issued(), *self._tickets()]) + 1
            self._issue(number)
            new = self.queue / f"{_NEW}{os.getpid()}"
            ticket_fd = os.open(new, os.O_RDWR | os.O_CREAT | os.O_TRUNC, 0o644)
            try:
                fcntl.flock(ticket_fd, fcntl.LOCK_EX)  # a new file: free at once
                os.rename(new, self.queue / f"{_TICKET}{number:012d}")
            except BaseException:
                os.close(ticket_fd)
                raise
            return number, ticket_fd
        finally:
            os.close(dir_fd)  # drops the directory's flock

    def _issued(self) -> int:
        """The last ticket number issued (numbers are never reused: a late look at a
        ticket that just left must not delete its successor of the same number)."""
        try:
            text = (self.queue / _COUNTER).read_text("ascii").strip()
        except (OSError, UnicodeDecodeError):
            return 0
        return int(text) if text.isdigit() else 0

    def _issue(self, number: int) -> None:
        fd = os.open(self.queue / _COUNTER, os.O_WRONLY | os.O_CREAT, 0o644)
        try:  # fixed width, written in place: never a moment with no number in it
            os.pwrite(fd, f"{number:020d}\n".encode(), 0)
        finally:
            os.close(fd)

    def _tickets(self) -> list[int]:
        try:
            names = os.listdir(self.queue)
        except FileNotFoundError:
            return []
        return [int(n[1:]) for n in names if n.startswith(_TICKET) and n[1:].isdigit()]

    def _ahead(self, ticket: int | None) -> int:
        """Live tickets below ``ticket`` (all of them for None); dead ones are deleted."""
        live = 0
        for number in self._tickets():
            if ticket is not None and number >= ticket:
                continue
            path = self.queue / f"{_TICKET}{number:012d}"
            try:
                probe = os.open(path, os.O_RDONLY)
            except FileNotFoundError:
                continue
            try:
                fcntl.flock(probe, fcntl.LOCK_SH | fcntl.LOCK_NB)
            except BlockingIOError:
                live += 1  # its writer is alive and waiting
            else:  # nobody holds it: its writer died (or just left); clear it
                with suppress(FileNotFoundError):
                    os.unlink(path)
            finally:
                os.close(probe)
        return live

    def _unlock_file(self) -> None:
        fd, self._local.fd = self._local.fd, None
        if fd is None:
            return
        try:
            if fcntl is not None:
                fcntl.flock(fd, fcntl.LOCK_UN)
        finally:
            os.close(fd)

    def _error(self, wait: float, holder: str, queued: int) -> IndexLockedError:
        ahead = f", with {queued} other writer(s) queued before this one" if queued else ""
        msg = (
            f"the store is being written by {holder} (writer lock {str(self.path)!r}){ahead} "
            f"and was not free for this writer within {wait:g} s; retry later, pass a "
            "larger lock_timeout=, or stop the other writer"
        )
        return IndexLockedError(msg)


def _read_holder(fd: int) -> str:
    try:
        text = os.pread(fd, 64, 0).decode("ascii", "replace").strip()
    except OSError:
        text = ""
    return f"another process ({text})" if text.startswith("pid ") else "another process"

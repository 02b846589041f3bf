"""One Chroma call at a time per embedded store, across processes.

chromadb's embedded engine (1.5, Rust bindings) is not safe to use from several processes
at once: two processes touching one store's files together can crash one of them natively
(SIGSEGV in ``chromadb_rust_bindings``), as the cross-process stress test did here and as
chromadb's users report. remy therefore holds an exclusive ``flock`` on
``remy-chroma.lock`` in the store's directory for the length of every Chroma call on an
embedded store (:meth:`~remy_retriever.stores.chroma.ChromaCalls.call` and opening the
client). Calls are short (one query, read or write batch), so a reader waits at most for
one in-flight call of another process, never for a whole write. A Chroma server
serializes for itself; no lock is taken for one.

Hand-written rather than a library: the lock must be re-entrant per thread, shared by
every client of one store in the process, and released by the OS when a process dies
(``flock``), which is exactly :mod:`fcntl` plus a few lines.
"""

from __future__ import annotations

import os
import threading
import time
from pathlib import Path
from types import TracebackType

from ..errors import StoreError

try:  # POSIX
    import fcntl
except ImportError:  # pragma: no cover - Windows: thread-level locking only
    fcntl = None  # type: ignore[assignment]

__all__ = ["CHROMA_LOCK_FILE", "ChromaLock"]

CHROMA_LOCK_FILE = "remy-chroma.lock"
#: How long a Chroma call waits for another process's call before giving up.
WAIT_S = 120.0


class _State:
    """One per lock file and process: every ChromaLock of that store shares it."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.rlock = threading.RLock()
        self.depth = 0
        self.fd: int | None = None


_STATES: dict[str, _State] = {}
_STATES_GUARD = threading.Lock()


class ChromaLock:
    """Re-entrant, inter-process, exclusive: ``with lock: <one Chroma call>``."""

    def __init__(self, store_dir: str | os.PathLike[str]) -> None:
        path = Path(store_dir) / CHROMA_LOCK_FILE
        with _STATES_GUARD:
            self._state = _STATES.setdefault(str(path), _State(path))

    def __enter__(self) -> ChromaLock:
        state = self._state
        state.rlock.acquire()
        try:
            if state.depth == 0:
                self._lock_file(state)
            state.depth += 1
        except BaseException:
            state.rlock.release()
            raise
        return self

    def __exit__(
        self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        state = self._state
        state.depth -= 1
        try:
            if state.depth == 0 and state.fd is not None and fcntl is not None:
                fcntl.flock(state.fd, fcntl.LOCK_UN)
        finally:
            state.rlock.release()

    @staticmethod
    def _lock_file(state: _State) -> None:
        if fcntl is None:
            return
        if state.fd is None:
            try:
                state.fd = os.open(state.path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o644)
            except FileNotFoundError:
                return  # no directory (open_client makes a new store's first): no lock
            except PermissionError:
                try:  # a read-only store: flock works on a read-only descriptor too
                    state.fd = os.open(state.path, os.O_RDONLY | os.O_CLOEXEC)
                except OSError:
                    return  # cannot even read the lock file: nobody can write here
        deadline = time.monotonic() + WAIT_S
        pause = 0.0005
        while True:
            try:
                fcntl.flock(state.fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                return
            except BlockingIOError:
                if time.monotonic() > deadline:
                    msg = (
                        f"another process kept the embedded store's Chroma engine busy for "
                        f"over {WAIT_S:.0f} s ({state.path}); retry, or stop the stuck process"
                    )
                    raise StoreError(msg) from None
                time.sleep(pause)
                pause = min(pause * 2, 0.01)

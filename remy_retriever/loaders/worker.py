"""Parse files in worker processes that can be stopped: the time and memory budget of
:class:`~remy_retriever.loaders.limits.ParseLimits`.

A :class:`ParserPool` keeps a few worker processes alive between files (starting one
costs far more than sending it a file). Each file goes to an idle worker over a pipe;
the worker caps its own address space (``RLIMIT_AS``) and CPU time (``RLIMIT_CPU``, a
backstop for a worker whose parent is gone) for that file, and the caller's timer kills
the worker when the time budget ends. A worker that was killed, ran out of memory or
died is replaced by a fresh one for the next file. Nothing goes back from a worker but
JSON holding the :class:`~remy_retriever.loaders.base.LoadedText` fields, or the error.

The worker imports only the loaders (and what they need), not the package root, which
would load the stores and their libraries into every worker for nothing.
"""

from __future__ import annotations

import atexit
import contextlib
import json
import logging
import os
import signal
import struct
import subprocess
import sys
import threading
import warnings
from collections.abc import Callable, Iterator
from typing import IO, Any

from ..errors import (
    InvalidDocumentError,
    InvalidInputError,
    MissingExtraError,
    ParseBudgetError,
    ParserBusyError,
)
from ..util.reprs import short_repr
from .builtin import BUILT_IN_LOADERS
from .limits import ParseLimits, using_limits

try:  # POSIX only: Windows has no resource limits (the time budget still holds)
    import resource
except ImportError:  # pragma: no cover - Windows
    resource = None  # type: ignore[assignment]

__all__ = ["ParserPool", "shared_pool"]

_FRAME = struct.Struct(">QQ")  # the lengths of a message's JSON header and its payload
# The worker's entry point: the loaders package is imported without running the package
# root's __init__ (see the module docstring); argv: the parent's sys.path, the package dir.
_BOOT = (
    "import importlib.machinery as m, json, sys, types\n"
    "sys.path[:] = json.loads(sys.argv[1])\n"
    "p = types.ModuleType('remy_retriever')\n"
    "p.__path__ = [sys.argv[2]]\n"
    "p.__spec__ = m.ModuleSpec('remy_retriever', None, is_package=True)\n"
    "p.__spec__.submodule_search_locations = p.__path__\n"
    "sys.modules['remy_retriever'] = p\n"
    "from remy_retriever.loaders.worker import serve\n"
    "serve()\n"
)
_PACKAGE_DIR = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
# How long a new worker may take to start (import the loaders) before it is given up.
_START_SECONDS = 60.0
_ERRORS: dict[str, type[InvalidInputError]] = {
    "InvalidDocumentError": InvalidDocumentError,
    "ParseBudgetError": ParseBudgetError,
}


class _Dead(Exception):
    """The worker process ended (or was killed) before it answered."""


def _write(stream: IO[bytes], header: dict[str, Any], payload: bytes = b"") -> None:
    head = json.dumps(header).encode("utf-8")
    stream.write(_FRAME.pack(len(head), len(payload)) + head + payload)
    stream.flush()


def _read_exact(stream: IO[bytes], size: int) -> bytes:
    parts: list[bytes] = []
    while size > 0:
        part = stream.read(size)
        if not part:
            raise _Dead
        parts.append(part)
        size -= len(part)
    return b"".join(parts)


def _read(stream: IO[bytes]) -> tuple[dict[str, Any], bytes]:
    head_len, payload_len = _FRAME.unpack(_read_exact(stream, _FRAME.size))
    header = json.loads(_read_exact(stream, head_len))
    return header, _read_exact(stream, payload_len)


class _Worker:
    """One worker process, used by one caller at a time."""

    def __init__(self) -> None:
        self.proc = subprocess.Popen(
            [sys.executable, "-I", "-c", _BOOT, json.dumps(_search_path()), _PACKAGE_DIR],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            close_fds=True,
        )
        self.ready = False
        self.expired = False
        self.broken = False

    @property
    def alive(self) -> bool:
        return self.proc.poll() is None

    def _timed(self, seconds: float, step: Callable[[], tuple[dict[str, Any], bytes]]) -> Any:
        self.expired = False
        timer = threading.Timer(seconds, self._expire)
        timer.daemon = True
        timer.start()
        try:
            return step()
        finally:
            timer.cancel()

    def _expire(self) -> None:
        self.expired = True
        self.kill()

    def parse(self, data: bytes, name: str, limits: ParseLimits) -> dict[str, Any]:
        """The worker's answer for one file (raises :class:`_Dead` when it died)."""
        assert self.proc.stdin is not None and self.proc.stdout is not None
        stdin, stdout = self.proc.stdin, self.proc.stdout
        if not self.ready:
            try:
                self._timed(_START_SECONDS, lambda: _read(stdout))
            except _Dead:
                self.kill()
                code = self.proc.wait()
                msg = (
                    f"cannot parse {name!r}: the parsing process did not start (exit status "
                    f"{code}); see its error above, on stderr"
                )
                raise InvalidDocumentError(msg) from None
            self.ready = True
        request = {"name": name, "seconds": limits.seconds, "memory": limits.memory_bytes}
        try:
            _write(stdin, request, data)
        except OSError:
            raise _Dead from None
        header, _ = self._timed(limits.seconds, lambda: _read(stdout))
        return dict(header)

    def kill(self) -> None:
        self.broken = True
        with contextlib.suppress(OSError):  # already gone
            self.proc.kill()

    def close(self) -> None:
        """Stop the worker: EOF on its input ends it; kill it if it does not end."""
        try:
            if self.proc.stdin is not None:
                self.proc.stdin.close()
            self.proc.wait(timeout=2)
        except (OSError, subprocess.TimeoutExpired):
            self.kill()
            self.proc.wait()
        if self.proc.stdout is not None:
            self.proc.stdout.close()


class ParserPool:
    """Up to ``workers`` worker processes that parse files under a budget, started on
    first use and kept alive between files.

    A caller waits for an idle worker; with ``queue`` set, at most that many callers
    wait at once, and one more is refused at once with
    :class:`~remy_retriever.errors.ParserBusyError` (``remy serve`` answers it 503)."""

    def __init__(self, *, workers: int = 2, queue: int | None = None) -> None:
        if isinstance(workers, bool) or not isinstance(workers, int) or not 1 <= workers <= 64:
            msg = f"ParserPool(workers=) must be an int from 1 to 64, got {short_repr(workers)}"
            raise InvalidInputError(msg)
        if queue is not None and (
            isinstance(queue, bool) or not isinstance(queue, int) or not 0 <= queue <= 10_000
        ):
            msg = (
                f"ParserPool(queue=) must be None (wait as long as it takes) or an int from "
                f"0 to 10,000, got {short_repr(queue)}"
            )
            raise InvalidInputError(msg)
        self.workers = workers
        self.queue = queue
        self._idle: list[_Worker] = []
        self._started = 0
        self._waiting = 0
        self._closed = False
        self._lock = threading.Condition()

    def parse(self, data: bytes, name: str, limits: ParseLimits) -> dict[str, Any]:
        """The :class:`LoadedText` fields of ``data`` as the loader for ``name`` reads
        it in a worker, under ``limits``. Raises what the loader raises,
        :class:`ParseBudgetError` over the budget, :class:`ParserBusyError` when the
        queue is full."""
        worker = self._checkout(name)
        try:
            answer = self._ask(worker, data, name, limits)
        finally:
            self._checkin(worker)
        return answer

    def _ask(self, worker: _Worker, data: bytes, name: str, limits: ParseLimits) -> dict[str, Any]:
        try:
            header = worker.parse(data, name, limits)
        except _Dead:
            worker.kill()
            code = worker.proc.wait()
            if worker.expired or code == -getattr(signal, "SIGXCPU", -1):
                raise ParseBudgetError(_over(name, limits, f"over {limits.seconds:g} s")) from None
            raise ParseBudgetError(
                _over(name, limits, f"its parser stopped (exit status {code})")
            ) from None
        if "loaded" in header:
            return dict(header["loaded"])
        kind, message = header.get("error"), str(header.get("message", ""))
        if kind == "MemoryError":
            worker.kill()  # its heap may be in any state: a fresh worker takes the next file
            worker.proc.wait()
            raise ParseBudgetError(
                _over(name, limits, f"over {limits.memory_bytes / 2**20:,.0f} MiB of memory")
            )
        if kind == "MissingExtraError":
            raise MissingExtraError(message)
        raise _ERRORS.get(str(kind), InvalidDocumentError)(message)

    def _checkout(self, name: str) -> _Worker:
        with self._lock:
            if self._closed:
                msg = "this ParserPool is closed; make a new one"
                raise InvalidInputError(msg)
            if not self._idle and self._started >= self.workers:
                if self.queue is not None and self._waiting >= self.queue:
                    msg = (
                        f"cannot parse {name!r} now: all {self.workers} parsing workers are "
                        f"busy and {self._waiting} more files wait for them; retry shortly"
                    )
                    raise ParserBusyError(msg)
                self._waiting += 1
                try:
                    while not self._idle and self._started >= self.workers:
                        self._lock.wait()
                finally:
                    self._waiting -= 1
            if self._idle:
                return self._idle.pop()
            self._started += 1
        try:
            return _Worker()
        except OSError as exc:
            with self._lock:
                self._started -= 1
                self._lock.notify()
            msg = f"cannot start a process to parse {name!r}: {exc}"
            raise InvalidDocumentError(msg) from exc

    def _checkin(self, worker: _Worker) -> None:
        with self._lock:
            if worker.alive and not worker.broken and not self._closed:
                self._idle.append(worker)
                self._lock.notify()
                return
            self._started -= 1
            self._lock.notify()
        worker.close()

    def close(self) -> None:
        """Stop the idle workers; busy ones stop when their file is done."""
        with self._lock:
            self._closed = True
            idle, self._idle = self._idle, []
        for worker in idle:
            worker.close()

    def __enter__(self) -> ParserPool:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def _over(name: str, limits: ParseLimits, what: str) -> str:
    return (
        f"cannot read {name!r}: too large or too slow to parse ({what}; the budget per file "
        f"is {limits.describe()}); split or simplify the file, or raise the budget "
        "(ParseLimits, remy ingest --max-parse-seconds/--max-parse-memory)"
    )


def _search_path() -> list[str]:
    """The parent's import path, for the worker (``-I`` leaves out the current folder)."""
    return [entry for entry in sys.path if entry]


_SHARED: ParserPool | None = None
_SHARED_PID = 0
_SHARED_LOCK = threading.Lock()


def shared_pool() -> ParserPool:
    """The pool :func:`~remy_retriever.loaders.load_bytes` uses by default: one worker
    per core, started on first use, stopped at exit."""
    global _SHARED, _SHARED_PID
    with _SHARED_LOCK:
        # a forked child must not share its parent's workers (their pipes are shared)
        if _SHARED is None or _SHARED._closed or os.getpid() != _SHARED_PID:
            _SHARED = ParserPool(workers=max(2, os.cpu_count() or 2))
            _SHARED_PID = os.getpid()
            atexit.register(_SHARED.close)
        return _SHARED


# -- in the worker process ----------------------------------------------------------------


def serve() -> None:
    """The worker's loop: read a file, parse it under its budget, answer; until EOF."""
    # The protocol owns the real stdout; anything a library prints goes to stderr.
    out = os.fdopen(os.dup(1), "wb")
    os.dup2(2, 1)
    inp = os.fdopen(os.dup(0), "rb")
    null = os.open(os.devnull, os.O_RDONLY)
    os.dup2(null, 0)
    logging.disable(logging.CRITICAL)  # the caller gets the error; no log noise on stderr
    warnings.simplefilter("ignore")
    _write(out, {"ready": True})
    while True:
        try:
            request, data = _read(inp)
        except _Dead:
            return
        name = str(request["name"])
        limits = ParseLimits(seconds=request["seconds"], memory_bytes=request["memory"])
        loader = BUILT_IN_LOADERS.get(os.path.splitext(name)[1].lower())
        answer: dict[str, Any]
        fatal = False
        try:
            if loader is None:
                msg = f"cannot read {name!r}: no loader for its type"
                raise InvalidDocumentError(msg)
            with _resource_limits(limits), using_limits(limits):
                loaded = loader(data, name)
            answer = {
                "loaded": {
                    "text": loaded.text,
                    "title": loaded.title,
                    "url": loaded.url,
                    "type": loaded.type,
                    "pages": list(loaded.pages) if loaded.pages is not None else None,
                }
            }
        except MemoryError:
            answer, fatal = {"error": "MemoryError"}, True
        except (InvalidDocumentError, MissingExtraError) as exc:
            answer = {"error": type(exc).__name__, "message": str(exc)}
        except Exception as exc:  # a parser bug on a hostile file: that file fails
            answer = {
                "error": "InvalidDocumentError",
                "message": f"cannot read {name!r}: {type(exc).__name__}: {exc}",
            }
        del data
        _write(out, answer)
        if fatal:
            return


@contextlib.contextmanager
def _resource_limits(limits: ParseLimits) -> Iterator[None]:
    """Cap this process's address space and CPU time for one file, then lift the caps."""
    if resource is None:  # pragma: no cover - Windows
        yield
        return
    _, hard = resource.getrlimit(resource.RLIMIT_AS)
    resource.setrlimit(resource.RLIMIT_AS, (_capped(limits.memory_bytes, hard), hard))
    used = resource.getrusage(resource.RUSAGE_SELF)
    cpu = int(used.ru_utime + used.ru_stime + limits.seconds) + 2
    _, cpu_hard = resource.getrlimit(resource.RLIMIT_CPU)
    resource.setrlimit(resource.RLIMIT_CPU, (_capped(cpu, cpu_hard), cpu_hard))
    try:
        yield
    finally:
        for which in (resource.RLIMIT_AS, resource.RLIMIT_CPU):
            _, hard = resource.getrlimit(which)
            resource.setrlimit(which, (hard, hard))


def _capped(value: int, hard: int) -> int:
    return value if hard == resource.RLIM_INFINITY or value < hard else hard

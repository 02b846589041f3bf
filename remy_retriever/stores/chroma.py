"""Chroma plumbing shared by the stores: one guarded call path and client introspection.

Every Chroma call goes through :meth:`ChromaCalls.call`, which retries connection
failures under the store's :class:`~remy_retriever.util.retry.RetryPolicy` and then turns them
into :class:`~remy_retriever.errors.ServerUnavailableError` naming the server; any other
failure becomes a :class:`~remy_retriever.errors.StoreError`. Every operation sent is
idempotent (reads; upserts and deletes by id; setting a generation token chosen before the
first attempt), so a retried call never duplicates or loses a write.
"""

from __future__ import annotations

import logging
import os
import time
from collections.abc import Callable, Iterator, Mapping
from contextlib import AbstractContextManager, nullcontext
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

import chromadb
import httpx
from chromadb.api.shared_system_client import SharedSystemClient
from chromadb.errors import NotFoundError

from ..errors import (
    CollectionNotFoundError,
    InvalidInputError,
    RemyError,
    ServerUnavailableError,
    StoreError,
)
from ..util.reprs import short_repr
from ..util.retry import DEFAULT_RETRY, RetryPolicy
from .chroma_lock import ChromaLock

__all__ = [
    "ACTIVE_KEY",
    "HNSW_KEYS",
    "ChromaCalls",
    "OpenedClient",
    "check_hnsw",
    "is_embedded",
    "lexical_cache_dir",
    "local_path",
    "open_client",
    "paged",
    "sole",
    "system_of",
    "vectors_of",
]

T = TypeVar("T")

#: A collection's metadata key naming the collection that holds its vectors ("" or
#: absent: the collection itself; a re-embedding swaps another in, :mod:`.reembed`).
ACTIVE_KEY = "remy_vectors"

#: HNSW settings a new collection accepts (Chroma's defaults: 100, 16, 100).
HNSW_KEYS = ("ef_construction", "max_neighbors", "ef_search")


def check_hnsw(hnsw: object) -> dict[str, int]:
    """Validate ``hnsw=`` settings: a mapping from :data:`HNSW_KEYS` to ints 2..10,000.
    (Chroma accepts nonsense such as ``ef_construction=0`` without a word.)"""
    if hnsw is None:
        return {}
    if not isinstance(hnsw, Mapping):
        msg = (
            f"hnsw must be a dict such as {{'ef_construction': 64}}, "
            f"got {type(hnsw).__name__} {hnsw!r:.80}"
        )
        raise InvalidInputError(msg)
    out: dict[str, int] = {}
    for key, value in hnsw.items():
        if key not in HNSW_KEYS:
            msg = f"unknown HNSW setting {key!r}; use one of {', '.join(HNSW_KEYS)}"
            raise InvalidInputError(msg)
        if isinstance(value, bool) or not isinstance(value, int) or not 2 <= value <= 10_000:
            msg = f"HNSW setting {key}={value!r:.40} must be an int from 2 to 10,000"
            raise InvalidInputError(msg)
        out[key] = value
    return out


_log = logging.getLogger(__name__)
#: The file that makes a directory an embedded Chroma store.
_STORE_FILE = "chroma.sqlite3"

_CONNECTION_HINTS = (
    "connect",
    "connection",
    "timed out",
    "timeout",
    "unreachable",
    "refused",
    "disconnected",
    "broken pipe",
)


class ChromaCalls:
    """Runs Chroma operations for one collection of one client, under a retry policy."""

    def __init__(
        self,
        client: Any,
        name: str,
        *,
        server: str,
        retry: RetryPolicy | None = None,
        store_dir: Path | None = None,
    ) -> None:
        if retry is not None and not isinstance(retry, RetryPolicy):
            msg = (
                f"retry must be a RetryPolicy (e.g. RetryPolicy(attempts=3, timeout=30)) or "
                f"None, got {type(retry).__name__} {retry!r:.80}"
            )
            raise InvalidInputError(msg)
        self.client = client
        self.name = name
        self.server = server
        self.retry = DEFAULT_RETRY if retry is None else retry
        self.request_timeout = _bound_http_timeout(client, self.retry.timeout)
        #: An embedded store's engine takes one call at a time across processes.
        self.engine_lock: AbstractContextManager[object] = (
            nullcontext() if store_dir is None else ChromaLock(store_dir)
        )

    def call(self, what: str, fn: Callable[[], T], *, idempotent: bool = True) -> T:
        """Run one Chroma operation; retry it (if ``idempotent``) while the server cannot
        be reached, under :attr:`retry`; translate failures into :class:`RemyError`."""
        began = time.monotonic()
        failures = 0
        while True:
            try:
                with self.engine_lock:
                    return fn()
            except RemyError:
                raise
            except Exception as exc:
                if not is_connection_error(exc):
                    msg = f"cannot {what} in Chroma collection {self.name!r}: {exc}"
                    raise StoreError(msg) from exc
                failures += 1
                if failures >= self.retry.attempts or not idempotent:
                    tries = f"{failures} attempt{'s' if failures > 1 else ''}"
                    msg = (
                        f"cannot {what}: the Chroma server at {self.server} is unreachable "
                        f"({type(exc).__name__}: {exc}; {tries} in "
                        f"{time.monotonic() - began:.1f} s); start it (e.g. `chroma run "
                        "--host 127.0.0.1 --port 8000`), fix host/port, or allow more time "
                        "with retry=RetryPolicy(attempts=..., timeout=...)"
                    )
                    raise ServerUnavailableError(msg) from exc
                time.sleep(self.retry.delay(failures))

    @property
    def max_batch(self) -> int:
        """The most records Chroma takes in one call."""
        return int(self.call("read the batch size", self.client.get_max_batch_size))


def paged(read: Callable[[int, int], list[T]], page: int) -> Iterator[list[T]]:
    """Every record, ``page`` at a time: ``read(limit, offset)`` returns one page."""
    offset = 0
    while True:
        batch = read(page, offset)
        if not batch:
            return
        yield batch
        if len(batch) < page:
            return
        offset += len(batch)


def is_connection_error(exc: BaseException) -> bool:
    """Did ``exc`` come from failing to reach the server (worth a retry)?"""
    if isinstance(exc, (httpx.TransportError, ConnectionError, TimeoutError, OSError)):
        return True
    text = f"{type(exc).__name__}: {exc}".lower()
    return any(hint in text for hint in _CONNECTION_HINTS)


def _bound_http_timeout(client: Any, timeout: float | None) -> float | None:
    """Give a ``chromadb.HttpClient``'s HTTP session ``timeout`` (chromadb sets none).

    Returns the timeout now in force, or ``None`` when the client has no HTTP session
    (embedded stores) or ``timeout`` is ``None`` (the session is left as it is)."""
    session = getattr(getattr(client, "_server", None), "_session", None)
    if session is None or timeout is None or not isinstance(session, httpx.Client):
        return None
    session.timeout = httpx.Timeout(timeout)
    return timeout


@dataclass(frozen=True)
class OpenedClient:
    """A Chroma client and what the facade needs to know about it: how errors name the
    store (``http://host:port`` or ``embedded store '...'``) and, for an embedded store,
    its directory."""

    client: Any
    server: str
    store_dir: Path | None


def open_client(
    path: str | os.PathLike[str] | None, client: Any, *, create: bool = True
) -> OpenedClient:
    """An embedded ``PersistentClient`` at ``path`` (default ``./remy_data``), or the
    given client described.

    The path is checked before Chroma sees it: a ``str`` or ``os.PathLike[str]`` naming a
    directory this process can write to (Chroma's embedded store writes to its SQLite
    file even to read). With ``create=False`` nothing is created: a missing store raises
    :class:`CollectionNotFoundError`. Chroma's own failures become :class:`StoreError`
    naming the path."""
    if client is not None:
        return OpenedClient(client, _describe_client(client), _embedded_dir(client))
    # Absolute: chromadb caches clients by path string, so a relative path reused after
    # a chdir would reach the cached client of another directory.
    root = local_path("./remy_data" if path is None else path, "path")
    _check_store_dir(root, create=create)
    new = not (root / _STORE_FILE).is_file()
    if create:
        _make_store_dir(root)
    failures = 0
    while True:
        try:
            # The directory exists, so the lock is real: two processes creating one new
            # store take turns, and the second finds the first one's database.
            with ChromaLock(root):
                persistent = chromadb.PersistentClient(path=str(root))
            break
        except Exception as exc:
            failures += 1
            _forget_failed_system(str(root))
            if failures < len(_CREATE_RETRY_DELAYS) + 1 and _is_creation_race(exc):
                # A plain chromadb process (which takes no remy lock) is creating or
                # migrating the same database: its work is done in a moment.
                time.sleep(_CREATE_RETRY_DELAYS[failures - 1])
                continue
            msg = (
                f"cannot open the embedded store at {str(root)!r} ({type(exc).__name__}: "
                f"{exc}); check that it is a Chroma store directory you can write to"
            )
            raise StoreError(msg) from exc
    if new:
        _log.info("created a new embedded store at %r", str(root))
    return OpenedClient(persistent, f"embedded store {str(root)!r}", root)


#: Chroma's errors when another process creates (or migrates) the same new database at
#: the same moment; an opener that meets one waits and tries again.
_CREATION_RACE_ERRORS = ("database is locked", "already exists", "database schema has changed")
#: The pauses (seconds) between those tries.
_CREATE_RETRY_DELAYS = (0.05, 0.1, 0.2, 0.4, 0.8, 1.6)


def _is_creation_race(exc: BaseException) -> bool:
    text = str(exc)
    return any(hint in text for hint in _CREATION_RACE_ERRORS)


def _make_store_dir(root: Path) -> None:
    """Create a new store's directory before anything else, so that its Chroma lock file
    can be taken (without a directory there is no lock to share)."""
    try:
        root.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        msg = (
            f"cannot create the store directory {str(root)!r} ({exc.strerror or exc}); "
            "pass a directory you can write to"
        )
        raise StoreError(msg) from exc


def _forget_failed_system(identifier: str) -> None:
    """chromadb caches a client's system by path before starting it, and keeps it when
    starting fails: drop that half-started system, or every later open of the path in
    this process would reuse it. A system some other client uses is kept."""
    systems = SharedSystemClient._identifier_to_system
    refcounts = SharedSystemClient._identifier_to_refcount
    with SharedSystemClient._refcount_lock:
        if refcounts.get(identifier, 0) == 0:
            systems.pop(identifier, None)


#: POSIX limits on one file name and a whole path, in bytes (Linux's values).
_NAME_MAX = 255
_PATH_MAX = 4095


def local_path(value: object, what: str) -> Path:
    """``value`` (a ``str`` or ``os.PathLike[str]``) as an absolute :class:`Path`.

    Raises :class:`InvalidInputError` naming ``what`` for anything else: another type,
    bytes (decode them first), an empty string, a NUL character."""
    text: object = value
    if isinstance(value, os.PathLike):
        try:
            text = os.fspath(value)
        except Exception as exc:
            msg = f"{what} {short_repr(value)} does not give a file system path ({exc})"
            raise InvalidInputError(msg) from exc
    if isinstance(text, (bytes, bytearray)):
        msg = (
            f"{what} must be a str or pathlib.Path, got bytes {short_repr(value)}; decode "
            "it first (os.fsdecode(path))"
        )
        raise InvalidInputError(msg)
    if not isinstance(text, str):
        msg = (
            f"{what} must be a directory path (str or pathlib.Path), got "
            f"{type(value).__name__} {short_repr(value)}"
        )
        raise InvalidInputError(msg)
    if not text:
        msg = f"{what} is empty; pass a directory such as './remy_data'"
        raise InvalidInputError(msg)
    if "\0" in text:
        msg = f"{what} {text!r:.200} contains a NUL character, which no file name can hold"
        raise InvalidInputError(msg)
    try:
        parts = [os.fsencode(part) for part in Path(text).parts]
    except UnicodeEncodeError as exc:
        msg = (
            f"{what} {short_repr(text)} holds a character no file name can "
            f"({exc.reason}: {text[exc.start : exc.end]!r}); check the path"
        )
        raise InvalidInputError(msg) from exc
    if any(len(part) > _NAME_MAX for part in parts) or len(os.fsencode(text)) > _PATH_MAX:
        msg = (
            f"{what} {short_repr(text)} is too long for the file system (at most "
            f"{_NAME_MAX} bytes per name and {_PATH_MAX} in all); use a shorter path"
        )
        raise InvalidInputError(msg)
    try:
        return Path(text).resolve()
    except (OSError, RuntimeError) as exc:  # e.g. a symlink loop
        msg = f"{what} {text!r:.200} cannot be resolved ({exc}); check the path"
        raise InvalidInputError(msg) from exc


def _check_store_dir(root: Path, *, create: bool) -> None:
    """Refuse what Chroma would fail on with a raw error, before it creates anything."""
    shown = repr(str(root))
    if not root.exists():
        if not create:
            msg = (
                f"no remy store at {shown}: the directory does not exist; check the path "
                "(create a store by adding documents, e.g. `remy ingest PATH --db DIR`)"
            )
            raise CollectionNotFoundError(msg)
        parent = next((p for p in root.parents if p.exists()), None)
        if parent is not None and not parent.is_dir():
            msg = (
                f"cannot create a store at {shown}: {str(parent)!r} is a file, not a "
                "directory; pass another path"
            )
            raise InvalidInputError(msg)
        if parent is not None and not os.access(parent, os.W_OK | os.X_OK):
            msg = (
                f"cannot create a store at {shown}: {str(parent)!r} is not writable; pass "
                "a directory you can write to"
            )
            raise StoreError(msg)
        return
    if not root.is_dir():
        msg = (
            f"path {shown} is {_kind(root)}, not a directory; an embedded store is a "
            "directory: pass a new or existing store directory (e.g. './remy_data')"
        )
        raise InvalidInputError(msg)
    database = root / _STORE_FILE
    if not create and not database.is_file():
        msg = (
            f"no remy store at {shown}: the directory holds no {_STORE_FILE}; check the "
            "path (create a store by adding documents, e.g. `remy ingest PATH --db DIR`)"
        )
        raise CollectionNotFoundError(msg)
    writable = os.access(root, os.W_OK | os.X_OK) and (
        not database.exists() or os.access(database, os.R_OK | os.W_OK)
    )
    if not writable:
        msg = (
            f"the store at {shown} is read-only for this user; Chroma's embedded store "
            f"writes to {_STORE_FILE} even to search, so make the directory and its files "
            f"writable (chmod -R u+w {shown}) or copy the store to a writable place"
        )
        raise StoreError(msg)


def _kind(path: Path) -> str:
    if path.is_file():
        return "a file"
    if path.is_char_device() or path.is_block_device():
        return "a device"
    if path.is_fifo():
        return "a FIFO"
    if path.is_socket():
        return "a socket"
    return "something other than a directory"


def lexical_cache_dir() -> Path:
    """Where lexical indexes of server collections live unless told otherwise."""
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "remy-retriever" / "lexical"


def _describe_client(client: Any) -> str:
    settings = getattr(client, "get_settings", None)
    try:
        s = settings() if callable(settings) else None
        host = getattr(s, "chroma_server_host", None)
        port = getattr(s, "chroma_server_http_port", None)
        if host:
            return f"http://{host}:{port}"
        persist = getattr(s, "persist_directory", None)
        if persist:
            return f"embedded store {persist!r}"
    except Exception:
        pass
    return type(client).__name__


def _embedded_dir(client: Any) -> Path | None:
    """The directory of an embedded (persistent) client's store, else ``None``."""
    try:
        settings = client.get_settings()
    except Exception:
        return None
    persist = getattr(settings, "persist_directory", None)
    if getattr(settings, "is_persistent", False) and persist:
        return Path(persist)
    return None


def is_embedded(client: Any) -> bool:
    """A persistent local client (``chromadb.PersistentClient``)?"""
    try:
        settings = client.get_settings()
    except Exception:
        return False
    return (
        bool(getattr(settings, "is_persistent", False))
        and bool(getattr(settings, "persist_directory", None))
        and getattr(client, "_identifier", None) is not None
    )


def system_of(client: Any) -> Any:
    """The embedded Chroma system behind ``client`` (None when it has none)."""
    try:
        return client._system
    except Exception:
        return None


def vectors_of(client: Any, head: Any, name: str, *, where: str) -> Any:
    """The collection holding the vectors of ``head`` (collection ``name``)."""
    active = str((head.metadata or {}).get(ACTIVE_KEY) or name)
    if active == head.name:
        return head
    try:
        return client.get_collection(active, embedding_function=None)
    except (NotFoundError, ValueError) as exc:
        msg = (
            f"{where} keeps its vectors in collection {active!r}, which is gone ({exc}); "
            "restore it, or add the documents to a new collection"
        )
        raise StoreError(msg) from exc


def sole(client: Any) -> bool:
    """Is ``client`` the only client of its embedded system so far (created for it)?"""
    try:
        return SharedSystemClient._identifier_to_refcount.get(client._identifier) == 1
    except Exception:
        return False

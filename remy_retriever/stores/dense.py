"""The Chroma collection: vectors, chunk text and metadata. It is the source of truth.

Every Chroma call goes through :meth:`DenseStore._call`, which retries connection
failures under the store's :class:`~remy_retriever.retry.RetryPolicy` and then turns them
into :class:`~remy_retriever.errors.ServerUnavailableError` naming the server; any other
failure becomes a :class:`~remy_retriever.errors.StoreError`. Every operation sent here is
idempotent (reads; upserts and deletes by id; setting a generation token chosen before
the first attempt), so a retried call never duplicates or loses a write.

Embedded stores and other processes: Chroma's embedded mode keeps each collection's
vector index in memory, one copy per process and store path, and never reloads it. So
another process's writes stay invisible to this process's vector search, and worse,
this process's next persist of its index would overwrite them on disk (their vectors
are lost; counts and ``get`` still show them). :meth:`DenseStore.ensure_fresh` guards
against both: when the collection's generation token (bumped by every remy writer) is
not one this process's copy is known to reflect, it reloads the copy from disk -- before
every write (the caller holds the store's writer lock), and before reads at most once a
second and only while nobody writes.

Where the text lives: each record's text is kept in its metadata under
:data:`TEXT_KEY`, not in Chroma's ``documents`` field. Chroma indexes ``documents`` for
its own full-text search (``where_document``), which remy never uses (the lexical index
is ours); that indexing is the largest part of a write: with the text in ``documents``
an embedded upsert ran at about 800 records/s here, with it in metadata about 1,350/s
(records of 120 words, 384-d vectors, remy's chunk metadata; 2-core machine). Reads fall
back to ``documents`` for records written by older versions.

Packed bookkeeping: Chroma stores every metadata key of every record as a row of its own
(in SQLite), so a write costs per key. remy's bookkeeping keys (position, offsets,
heading path, hashes, timestamps...) are never filtered on in Chroma, so a chunk record
keeps them in one JSON string under :data:`PACKED_KEY`; only user metadata, the keys remy
filters on (document id, :data:`UPDATED_MS_KEY`) and the text stay flat. A document-table
record, which is only ever read by id, packs all of its metadata. Measured here (10k
records, 1,000 more upserted): chunk writes 1.31 s -> 1.08 s, document-table writes
0.65 s -> 0.37 s. Reads unpack transparently and still read records written with flat
keys.
"""

from __future__ import annotations

import json
import threading
import time
import uuid
import weakref
from collections.abc import Callable, Iterator, Mapping, Sequence
from typing import Any, TypeVar

import numpy as np

from ..documents import RESERVED_PREFIX
from ..embeddings import (
    Embedder,
    RemyEmbeddingFunction,
    cosine_from_distance,
    embedder_from_config,
)
from ..errors import (
    CollectionNotFoundError,
    InvalidInputError,
    RemyError,
    ServerUnavailableError,
    StoreError,
)
from ..filters import DOCUMENT_ID_KEY
from ..retry import DEFAULT_RETRY, RetryPolicy

__all__ = [
    "GENERATION_KEY",
    "HNSW_KEYS",
    "PACKED_KEY",
    "TEXT_KEY",
    "UPDATED_MS_KEY",
    "DenseStore",
    "Record",
    "check_hnsw",
]

#: Collection metadata key holding the write generation (a fresh token per write).
GENERATION_KEY = "remy_generation"
#: Record metadata key holding the record's text (see the module docstring).
TEXT_KEY = "remy_text"
#: Record metadata key holding remy's bookkeeping keys as one JSON object (see the module
#: docstring).
PACKED_KEY = "remy_packed"
#: Chunk metadata key holding the last content change (epoch ms); lexical catch-up
#: filters on it in Chroma, so it stays flat.
UPDATED_MS_KEY = "remy_updated_ms"
#: Reserved keys that stay flat in chunk records: the ones remy filters on in Chroma
#: (document id, last change) and the text.
_FLAT_KEYS = frozenset({DOCUMENT_ID_KEY, UPDATED_MS_KEY, TEXT_KEY})
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


T = TypeVar("T")
Record = tuple[str, str, dict[str, Any]]  # (chunk id, text, metadata)

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


#: For each embedded Chroma "system" (one per store path and process, shared by every
#: client of that path): collection name -> the generation its in-memory state reflects.
_SEEN: weakref.WeakKeyDictionary[Any, dict[str, str]] = weakref.WeakKeyDictionary()
_RELOAD_LOCK = threading.Lock()
#: Reads reload a stale embedded view at most this often (seconds); writes always do.
READ_RELOAD_INTERVAL = 1.0
#: A read's freshness check reuses a generation read this recently (seconds).
GENERATION_MAX_AGE = 0.1


class DenseStore:
    """One Chroma collection in cosine space, created with our registered embedding
    function so that reopening it (also through plain ``chromadb``) embeds alike."""

    def __init__(
        self,
        client: Any,
        name: str,
        *,
        embedder: Embedder | None,
        create: bool,
        server: str,
        retry: RetryPolicy | None = None,
        hnsw: Mapping[str, int] | None = None,
    ) -> None:
        hnsw = check_hnsw(hnsw)
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
        self.collection = self._call(
            "open the collection", lambda: self._open(embedder, create, hnsw)
        )
        self.embedder: Embedder = self.collection._embedding_function.embedder
        self._embedded = _is_embedded(client)
        self._system = _system_of(client)
        self._reloaded_at = 0.0
        self._generation_read: tuple[str, float] | None = None
        #: The store's writer lock (set by the owner). A read never reloads the view
        #: while anyone writes: an in-flight write could be missed by the new view.
        self.write_lock: Any = None
        if self._embedded and self._system is not None and _created_for(client, self._system):
            # A system created just now for this client has loaded nothing stale yet.
            _SEEN.setdefault(self._system, {})[name] = self.generation()

    # -- freshness of embedded stores -----------------------------------------------

    def ensure_fresh(self, *, write: bool = False, force: bool = False) -> bool:
        """Embedded stores: reload this process's in-memory view of the store when the
        collection changed since the view was loaded (see the module docstring).

        ``write=True`` (call holding the writer lock, before writing): always check.
        Reads reload at most every :data:`READ_RELOAD_INTERVAL` seconds, and only while
        nobody holds :attr:`write_lock` (a reload must not miss an in-flight write).
        ``force``: reload even if the generation matches (an interrupted write changes
        data without a new generation). Returns True if it reloaded. No-op for servers
        and in-memory stores."""
        if not self._embedded:
            return False
        # A read may reuse the generation its search read a moment ago (lexical catch-up).
        generation = self.generation(max_age=0 if write or force else GENERATION_MAX_AGE)
        if not force and self._system is not None:
            if _SEEN.get(self._system, {}).get(self.name) == generation:
                return False
            if not write and time.monotonic() - self._reloaded_at < READ_RELOAD_INTERVAL:
                return False
        lock = None if write else self.write_lock
        if lock is not None and not lock.acquire(blocking=False):
            return False  # someone is writing: reload on a later read
        try:
            self._call("reload the embedded store", lambda: self._reload(generation, force))
        finally:
            if lock is not None:
                lock.release()
        return True

    def _reload(self, generation: str, force: bool) -> None:
        # Restarting the client's Rust bindings drops the in-memory indexes; they reload
        # from disk (plus Chroma's log) on next use. Every client and collection object
        # of this store in the process shares the bindings, so all of them see it.
        server = getattr(self.client, "_server", None)
        if server is None or not callable(getattr(server, "start", None)):
            return  # not chromadb's embedded implementation: nothing we can reload
        with _RELOAD_LOCK:
            seen = _SEEN.get(self._system, {}) if self._system is not None else {}
            if not force and seen.get(self.name) == generation:
                return  # another thread reloaded meanwhile
            server.start()
            if self._system is not None:
                _SEEN[self._system] = {self.name: generation}
            self._reloaded_at = time.monotonic()

    def _open(self, embedder: Embedder | None, create: bool, hnsw: Mapping[str, int]) -> Any:
        from chromadb.errors import NotFoundError

        try:
            existing = self.client.get_collection(self.name, embedding_function=None)
        except NotFoundError:
            existing = None
        except ValueError as exc:
            if "does not exist" not in str(exc):
                raise
            existing = None
        if existing is None:
            if not create:
                msg = (
                    f"collection {self.name!r} does not exist on {self.server}; "
                    "check the name, or open it with create=True"
                )
                raise CollectionNotFoundError(msg)
            ef = RemyEmbeddingFunction(embedder)
            return self.client.get_or_create_collection(
                self.name,
                embedding_function=ef,
                configuration={"hnsw": {"space": "cosine", **hnsw}},
                metadata={GENERATION_KEY: uuid.uuid4().hex},
            )
        have = (existing.configuration_json or {}).get("hnsw") or {}
        differ = {k: (v, have.get(k)) for k, v in hnsw.items() if have.get(k) != v}
        if differ:
            shown = ", ".join(f"{k}={want!r} (it has {got!r})" for k, (want, got) in differ.items())
            msg = (
                f"collection {self.name!r} on {self.server} exists with other HNSW settings: "
                f"{shown}; they are fixed when a collection is created. Drop hnsw=..., "
                "or write to a new collection"
            )
            raise InvalidInputError(msg)
        if embedder is None:
            config = (existing.configuration_json or {}).get("embedding_function") or {}
            if config.get("name") != RemyEmbeddingFunction.name():
                msg = (
                    f"collection {self.name!r} was not created by remy-retriever (its "
                    f"embedding function is {config.get('name')!r}); pass embedder=..."
                )
                raise StoreError(msg)
            embedder = embedder_from_config(dict(config.get("config") or {}))
        existing._embedding_function = RemyEmbeddingFunction(embedder)
        return existing

    # -- plumbing ---------------------------------------------------------------------

    def _call(self, what: str, fn: Callable[[], T], *, idempotent: bool = True) -> T:
        """Run one Chroma operation; retry it (if ``idempotent``) while the server cannot
        be reached, under :attr:`retry`; translate failures into :class:`RemyError`."""
        began = time.monotonic()
        failures = 0
        while True:
            try:
                return fn()
            except RemyError:
                raise
            except Exception as exc:
                if not _is_connection_error(exc):
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
        return int(self._call("read the batch size", self.client.get_max_batch_size))

    # -- generation -------------------------------------------------------------------

    def generation(self, *, max_age: float = 0.0) -> str:
        """The current write generation, read from the server; ``max_age``: a value this
        store read (or wrote) at most that many seconds ago will do (one search checks
        freshness twice, lexical and dense, and one read serves both)."""
        cached = self._generation_read
        if max_age > 0 and cached is not None and time.monotonic() - cached[1] <= max_age:
            return cached[0]

        def read() -> str:
            col = self.client.get_collection(self.name, embedding_function=None)
            return str((col.metadata or {}).get(GENERATION_KEY, ""))

        value = self._call("read the collection generation", read)
        self._generation_read = (value, time.monotonic())
        return value

    def bump_generation(self) -> str:
        token = uuid.uuid4().hex

        def write() -> None:
            meta = dict(self.collection.metadata or {})
            meta[GENERATION_KEY] = token
            self.collection.modify(metadata=meta)

        self._call("update the collection generation", write)
        self._generation_read = (token, time.monotonic())
        if self._system is not None:  # our own write: our view reflects it
            _SEEN.setdefault(self._system, {})[self.name] = token
        return token

    # -- writes -----------------------------------------------------------------------

    def upsert(
        self,
        ids: Sequence[str],
        embeddings: np.ndarray,
        texts: Sequence[str],
        metadatas: Sequence[Mapping[str, Any]],
    ) -> None:
        if not ids:
            return
        self._call(
            "write chunks",
            lambda: self.collection.upsert(
                ids=list(ids),
                embeddings=embeddings,
                metadatas=_with_text(metadatas, texts),
            ),
        )

    def delete(self, ids: Sequence[str]) -> None:
        if ids:
            self._call("delete chunks", lambda: self.collection.delete(ids=list(ids)))

    # -- reads ------------------------------------------------------------------------

    def count(self) -> int:
        return int(self._call("count chunks", self.collection.count))

    def query(
        self, embedding: np.ndarray, n: int, where: Mapping[str, Any] | None
    ) -> list[tuple[str, float]]:
        """Nearest chunks to ``embedding`` as ``(chunk id, cosine similarity)``."""
        if n <= 0:
            return []
        self.ensure_fresh()
        result = self._call(
            "search",
            lambda: self.collection.query(
                query_embeddings=[embedding],
                n_results=n,
                where=dict(where) if where else None,
                include=["distances"],
            ),
        )
        ids = result["ids"][0]
        distances = result["distances"][0]
        return [(i, cosine_from_distance(d)) for i, d in zip(ids, distances)]

    def get(
        self,
        *,
        ids: Sequence[str] | None = None,
        where: Mapping[str, Any] | None = None,
        documents: bool = True,
        metadatas: bool = True,
        limit: int | None = None,
        offset: int | None = None,
    ) -> list[Record]:
        # The text is in the metadata; records of older versions keep it in ``documents``
        # (fetched separately, only for them).
        include = ["metadatas"] if documents or metadatas else []
        if ids is not None and not ids:
            return []
        result = self._call(
            "read chunks",
            lambda: self.collection.get(
                ids=list(ids) if ids is not None else None,
                where=dict(where) if where else None,
                include=include,
                limit=limit,
                offset=offset,
            ),
        )
        if documents:
            _fill_legacy_text(self, result)
        return _records(result, metadatas=metadatas)

    def missing_vectors(self, ids: Sequence[str], *, batch: int = 1000) -> list[str]:
        """The ids among ``ids`` whose record exists but whose vector is not in the
        vector index (Chroma answers a read of their embeddings with "Error finding id").
        A batch that fails is split in halves until the culprits are isolated."""
        missing: list[str] = []

        def has_vectors(part: list[str]) -> bool:
            try:
                self.collection.get(ids=part, include=["embeddings"])
            except Exception as exc:
                if "finding id" not in str(exc):
                    raise
                return False
            return True

        def probe(part: list[str]) -> None:
            if not part or self._call("read vectors", lambda: has_vectors(part)):
                return
            if len(part) == 1:
                missing.append(part[0])
                return
            mid = len(part) // 2
            probe(part[:mid])
            probe(part[mid:])

        ids = list(ids)
        for lo in range(0, len(ids), batch):
            probe(ids[lo : lo + batch])
        return missing

    def iter_all(
        self,
        *,
        where: Mapping[str, Any] | None = None,
        documents: bool = True,
        metadatas: bool = True,
        page: int = 5000,
    ) -> Iterator[list[Record]]:
        """Every matching record, in pages."""
        offset = 0
        while True:
            batch = self.get(
                where=where, documents=documents, metadatas=metadatas, limit=page, offset=offset
            )
            if not batch:
                return
            yield batch
            if len(batch) < page:
                return
            offset += len(batch)


class DocumentTable:
    """Whole documents (full text, citation fields, timestamps), one record per document,
    kept in a companion Chroma collection ``<collection>-remydocs`` so that Chroma stays
    the single source of truth. Records carry a constant 1-d vector: this collection is
    only ever read by id, never searched."""

    SUFFIX = "-remydocs"

    def __init__(self, dense: DenseStore) -> None:
        self._dense = dense
        name = dense.name[: 512 - len(self.SUFFIX)] + self.SUFFIX
        self.collection = dense._call(
            "open the document table",
            lambda: dense.client.get_or_create_collection(
                name, embedding_function=None, configuration={"hnsw": {"space": "cosine"}}
            ),
        )

    def upsert(
        self, ids: Sequence[str], texts: Sequence[str], metadatas: Sequence[Mapping[str, Any]]
    ) -> None:
        if not ids:
            return
        step = max(1, self._dense.max_batch)
        for lo in range(0, len(ids), step):
            part = slice(lo, lo + step)

            def write(part: slice = part) -> None:
                self.collection.upsert(
                    ids=list(ids[part]),
                    embeddings=np.ones((len(ids[part]), 1), dtype=np.float32),
                    metadatas=_with_text(metadatas[part], texts[part], pack_all=True),
                )

            self._dense._call("write documents", write)

    def delete(self, ids: Sequence[str]) -> None:
        if ids:
            self._dense._call("delete documents", lambda: self.collection.delete(ids=list(ids)))

    def get(
        self, ids: Sequence[str], *, text: bool = True
    ) -> dict[str, tuple[str, dict[str, Any]]]:
        if not ids:
            return {}
        out: dict[str, tuple[str, dict[str, Any]]] = {}
        for lo in range(0, len(ids), 1000):
            part = list(ids[lo : lo + 1000])

            def read(part: list[str] = part) -> Any:
                return self.collection.get(ids=part, include=["metadatas"])

            result = self._dense._call("read documents", read)
            if text:
                _fill_legacy_text(self._dense, result, self.collection)
            for i, d, m in _records(result, metadatas=True):
                out[i] = (d, m)
        return out

    def count(self) -> int:
        return int(self._dense._call("count documents", self.collection.count))

    def iter_metadata(self, *, page: int = 5000) -> Iterator[list[tuple[str, dict[str, Any]]]]:
        offset = 0
        while True:

            def read(offset: int = offset) -> Any:
                return self.collection.get(include=["metadatas"], limit=page, offset=offset)

            result = self._dense._call("read documents", read)
            batch = [(i, m) for i, _, m in _records(result, metadatas=True)]
            if not batch:
                return
            yield batch
            if len(batch) < page:
                return
            offset += len(batch)


def _with_text(
    metadatas: Sequence[Mapping[str, Any]], texts: Sequence[str], *, pack_all: bool = False
) -> list[dict[str, Any]]:
    """Record metadata as written: the record's text under :data:`TEXT_KEY` and the keys
    Chroma never filters on packed under :data:`PACKED_KEY` (see the module docstring):
    remy's bookkeeping keys, or with ``pack_all`` every key."""
    out: list[dict[str, Any]] = []
    for meta, text in zip(metadatas, texts):
        flat: dict[str, Any] = {TEXT_KEY: text}
        packed: dict[str, Any] = {}
        for key, value in meta.items():
            if pack_all or (key.startswith(RESERVED_PREFIX) and key not in _FLAT_KEYS):
                packed[key] = value
            else:
                flat[key] = value
        if packed:
            flat[PACKED_KEY] = json.dumps(packed, ensure_ascii=False, separators=(",", ":"))
        out.append(flat)
    return out


def _fill_legacy_text(store: DenseStore, result: dict[str, Any], collection: Any = None) -> None:
    """Records written before the text moved into the metadata: read their ``documents``
    and put the text where :func:`_records` looks for it."""
    metas = result.get("metadatas") or []
    legacy = [i for i, m in zip(result["ids"], metas) if TEXT_KEY not in (m or {})]
    if not legacy:
        return
    col = collection if collection is not None else store.collection
    got = store._call("read texts", lambda: col.get(ids=legacy, include=["documents"]))
    texts = dict(zip(got["ids"], got.get("documents") or []))
    result["metadatas"] = [
        m if TEXT_KEY in (m or {}) else {**(m or {}), TEXT_KEY: texts.get(i) or ""}
        for i, m in zip(result["ids"], metas)
    ]


def _records(result: Mapping[str, Any], *, metadatas: bool) -> list[Record]:
    """``(id, text, metadata)`` from a Chroma ``get`` result (text out of the metadata)."""
    ids = result["ids"]
    metas = result.get("metadatas") or [None] * len(ids)
    out: list[Record] = []
    for i, m in zip(ids, metas):
        meta = dict(m or {})
        text = meta.pop(TEXT_KEY, None)
        packed = meta.pop(PACKED_KEY, None)
        if metadatas and packed is not None:
            try:
                meta.update(json.loads(str(packed)))
            except (TypeError, ValueError) as exc:
                msg = (
                    f"record {i!r} has unreadable metadata under {PACKED_KEY!r} ({exc}); "
                    "re-add the document it belongs to with Retriever.add()"
                )
                raise StoreError(msg) from exc
        out.append((i, str(text or ""), meta if metadatas else {}))
    return out


def _is_connection_error(exc: BaseException) -> bool:
    """Did ``exc`` come from failing to reach the server (worth a retry)?"""
    try:
        import httpx
    except ImportError:  # pragma: no cover - chromadb depends on httpx
        httpx = None  # type: ignore[assignment]
    if httpx is not None and isinstance(exc, httpx.TransportError):
        return True
    if isinstance(exc, (ConnectionError, TimeoutError, OSError)):
        return True
    text = f"{type(exc).__name__}: {exc}".lower()
    return any(hint in text for hint in _CONNECTION_HINTS)


def _bound_http_timeout(client: Any, timeout: float | None) -> float | None:
    """Give a ``chromadb.HttpClient``'s HTTP session ``timeout`` (chromadb sets none).

    Returns the timeout now in force, or ``None`` when the client has no HTTP session
    (embedded stores) or ``timeout`` is ``None`` (the session is left as it is)."""
    session = getattr(getattr(client, "_server", None), "_session", None)
    if session is None or timeout is None:
        return None
    try:
        import httpx
    except ImportError:  # pragma: no cover
        return None
    if not isinstance(session, httpx.Client):
        return None
    session.timeout = httpx.Timeout(timeout)
    return timeout


def _is_embedded(client: Any) -> bool:
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


def _system_of(client: Any) -> Any:
    try:
        return client._system
    except Exception:
        return None


def _created_for(client: Any, system: Any) -> bool:
    """Was ``system`` created for ``client`` (the only client of it so far)?"""
    if system in _SEEN:
        return False
    try:
        from chromadb.api.shared_system_client import SharedSystemClient

        return SharedSystemClient._identifier_to_refcount.get(client._identifier) == 1
    except Exception:
        return False

"""The Chroma collection: vectors, chunk text and metadata. It is the source of truth.

This module does Chroma I/O only: the record layout is :mod:`~.schema.records`' (``pack``/
``unpack``), every call goes through :class:`~.chroma.ChromaCalls` (retries, errors).

Embedded stores and other processes: Chroma's embedded mode keeps each collection's
vector index in memory, one copy per process and store path, and never reloads it, so
another process's writes stay invisible to this process's vector search, and this
process's next persist would overwrite them on disk. :meth:`DenseStore.ensure_fresh`
reloads the copy when the collection's generation token (bumped by every remy writer) is
not one it is known to reflect: before every write (under the store's writer lock), and
before reads at most once a second, never while another thread here writes. Until then a
read can fail ("Error finding id", "Error creating hnsw segment reader"); reads that fail
so reload and retry (:data:`STALE_READ_DELAYS`)."""

from __future__ import annotations

import threading
import time
import uuid
import weakref
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import nullcontext
from typing import Any, TypeVar

import numpy as np
from chromadb.errors import NotFoundError

from ..errors import CollectionNotFoundError, InvalidInputError, StoreError
from ..models.embeddings import (
    Embedder,
    RemyEmbeddingFunction,
    cosine_from_distance,
    embedder_from_config,
    resolve_embedder,
)
from ..schema.records import (
    EMBEDDER_KEY,
    EMBEDDER_PENDING_KEY,
    GENERATION_KEY,
    Record,
    pack,
    unpack,
)
from .chroma import (
    ACTIVE_KEY,
    HNSW_KEYS,
    ChromaCalls,
    check_hnsw,
    is_embedded,
    paged,
    sole,
    system_of,
    vectors_of,
)
from .exact import exact_cosines
from .identity import (
    EmbedderIdentity,
    PreparedEmbedder,
    check_identity,
    check_not_pending,
    identify,
    recorded_identity,
    reembedded_with,
)

__all__ = ["HNSW_KEYS", "STALE_READ_DELAYS", "STALE_VIEW_ERRORS", "DenseStore", "check_hnsw"]

T = TypeVar("T")

#: For each embedded Chroma "system" (one per store path and process, shared by every
#: client of that path): collection name -> the generation its in-memory state reflects.
_SEEN: weakref.WeakKeyDictionary[Any, dict[str, str]] = weakref.WeakKeyDictionary()
_RELOAD_LOCK = threading.Lock()
#: Reads reload a stale embedded view at most this often (seconds); writes always do.
READ_RELOAD_INTERVAL = 1.0
#: A read's freshness check reuses a generation read this recently (seconds).
GENERATION_MAX_AGE = 0.1
#: Chroma's errors when this process's embedded view lags another process's writes.
STALE_VIEW_ERRORS = (
    "Error finding id",
    "Error creating hnsw segment reader",
    "Error loading hnsw index",
    "Nothing found on disk",
    # The view's vector segment cannot replay the log another process is compacting.
    "Failed to apply logs to the hnsw segment",
)
#: A read that fails with one of them reloads the view and tries again after each of
#: these pauses (seconds; about 3 s in all), then raises StoreError.
STALE_READ_DELAYS = (0.0, 0.02, 0.05, 0.1, 0.2, 0.4, 0.8, 1.6)


class DenseStore:
    """One Chroma collection in cosine space, created with our registered embedding
    function so that reopening it (also through plain ``chromadb``) embeds alike.

    Opening checks the embedder (``prepared``, see :func:`.identity.prepare_embedder`)
    against the identity the collection records and refuses another model, unless
    ``prepared.reembed``: the owner then calls :func:`.reembed.reembed_all` under the
    writer lock (:attr:`reembed_pending`).

    Reopened without an embedder, a collection rebuilds the model it records, and that
    model is checked when it is first used (:attr:`embedder`), not on open: fingerprinting
    it means loading it (torch and the weights, seconds), and a lexical search or a
    ``doctor`` never embeds anything. Whatever embeds goes through :attr:`embedder`, so
    no vector of an unchecked model is ever written or compared."""

    def __init__(
        self,
        calls: ChromaCalls,
        prepared: PreparedEmbedder,
        *,
        create: bool,
        hnsw: Mapping[str, int] | None = None,
    ) -> None:
        hnsw = check_hnsw(hnsw)
        self.calls = calls
        self.client = calls.client
        self.name = calls.name
        self.server = calls.server
        self.where = f"collection {self.name!r} on {self.server}"
        #: The embedder's identity; whether the collection lacks a record of it (made
        #: before identities were recorded), or must be re-embedded to it.
        self.identity: EmbedderIdentity | None = prepared.identity
        self.unrecorded = False
        self.reembed_pending = False
        #: The identity record last read and found to match (reads re-check on change).
        self._identity_seen: tuple[Any, Any] | None = None
        #: Set when the recorded model's identity is checked on first use (see above).
        self._check_on_use = False
        self._check_lock = threading.Lock()
        self._local = threading.local()  # inside consistent()?
        embedder, reembed = prepared.embedder, prepared.reembed
        #: The collection named ``name`` (its metadata is the store's record), and the
        #: one holding the vectors: the same, or the one a re-embedding swapped in
        #: (:mod:`.reembed`).
        self.head: Any = None
        self.collection = calls.call(
            "open the collection", lambda: self._open(embedder, create, hnsw, reembed)
        )
        self._embedder: Embedder = self.collection._embedding_function.embedder
        self._embedded = is_embedded(self.client)
        self._system = system_of(self.client)
        self._reloaded_at = 0.0
        self._generation_read: tuple[str, float] | None = None
        self._metadata_read: tuple[dict[str, Any], float] | None = None
        #: The store's writer lock (set by the owner). A read never reloads the view
        #: while another thread of this process writes through it.
        self.write_lock: Any = None
        system = self._system  # one created just now for this client has nothing stale:
        if self._embedded and system is not None and system not in _SEEN and sole(self.client):
            _SEEN.setdefault(system, {})[self.name] = self.generation()

    # -- freshness of embedded stores -----------------------------------------------

    def ensure_fresh(self, *, write: bool = False, force: bool = False) -> bool:
        """Embedded stores: reload this process's in-memory view of the store when the
        collection changed since the view was loaded (see the module docstring).

        ``write=True`` (call holding the writer lock, before writing): always check.
        Reads reload at most every :data:`READ_RELOAD_INTERVAL` seconds, and never while
        another thread of this process writes (restarting the view under its write
        could lose it). Another process's write in progress does not stop a reload: its
        new generation comes after its data, so a view loaded mid-write is reloaded again
        once the write is done. ``force``: reload even if the generation matches (an
        interrupted write changes data without a new generation). Returns True if it
        reloaded. No-op for servers and in-memory stores."""
        if not self._embedded:
            return False
        # A read may reuse the generation its search read a moment ago (lexical catch-up).
        generation = self.generation(max_age=0 if write or force else GENERATION_MAX_AGE)
        if not force and self._system is not None:
            if _SEEN.get(self._system, {}).get(self.name) == generation:
                return False
            if not write and time.monotonic() - self._reloaded_at < READ_RELOAD_INTERVAL:
                return False
        if write:
            self.calls.call("reload the embedded store", lambda: self._reload(generation, force))
            return True
        return self._reload_for_read(generation, force)

    def _reload_for_read(self, generation: str, force: bool) -> bool:
        lock = self.write_lock
        quiet = lock.no_local_writer() if lock is not None else nullcontext(True)
        with quiet as free:
            if not free:
                return False  # this process is writing: reload on a later read
            self.calls.call("reload the embedded store", lambda: self._reload(generation, force))
        return True

    def read(self, what: str, fn: Callable[[], T]) -> T:
        """Run a Chroma read; when it fails because this process's embedded view lags
        another process's writes (:data:`STALE_VIEW_ERRORS`), reload the view and retry
        after each of :data:`STALE_READ_DELAYS`, then raise :class:`StoreError`. Checked
        as in :meth:`consistent` (it runs again if its collection was swapped out)."""
        return self.consistent(lambda: self._read_once(what, fn))

    def consistent(self, fn: Callable[[], T]) -> T:
        """Run ``fn`` (reads; nested ones are checked once, here), then re-read the
        metadata: if the collection searched was swapped out meanwhile (:mod:`.reembed`),
        ``fn`` may have read one being dropped: it runs again on the new one."""
        if getattr(self._local, "reading", False):
            return fn()
        self._local.reading = True
        try:
            while True:
                searched = self.collection
                result = fn()
                self.generation()  # afresh: checks the identity and follows a swap
                if self.collection is searched:
                    return result
        finally:
            self._local.reading = False

    def _read_once(self, what: str, fn: Callable[[], T]) -> T:
        began = time.monotonic()
        delays = iter(STALE_READ_DELAYS)
        while True:
            failed_at = time.monotonic()
            try:
                return self.calls.call(what, fn)
            except StoreError as exc:
                cause = f"{exc.__cause__ or exc}"
                if not self._embedded or not any(e in cause for e in STALE_VIEW_ERRORS):
                    raise
                delay = next(delays, None)
                if delay is None:
                    msg = (
                        f"cannot {what} in Chroma collection {self.name!r}: this process's "
                        f"view of {self.server} stayed behind another process's writes "
                        f"after {len(STALE_READ_DELAYS)} reloads in "
                        f"{time.monotonic() - began:.1f} s (Chroma: {cause}); retry, or "
                        "serve processes that write while others read from a `chroma run` "
                        "server"
                    )
                    raise StoreError(msg) from exc
            time.sleep(delay)
            if self._reloaded_at < failed_at:  # else another thread just reloaded it
                self._reload_for_read(self.generation(), True)

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

    def _open(
        self, embedder: Embedder | None, create: bool, hnsw: Mapping[str, int], reembed: bool
    ) -> Any:
        try:
            existing = self.client.get_collection(self.name, embedding_function=None)
        except NotFoundError:
            existing = None
        except ValueError as exc:
            if "does not exist" not in str(exc):
                raise
            existing = None
        self.created = existing is None  # read by the open's log and first search
        if existing is None:
            if not create:
                msg = (
                    f"collection {self.name!r} does not exist on {self.server}; "
                    "check the name, or open it with create=True"
                )
                raise CollectionNotFoundError(msg)
            embedder = resolve_embedder(embedder)
            identity = self._identify(embedder)  # loads the model before creating anything
            created = self.client.get_or_create_collection(
                self.name,
                embedding_function=RemyEmbeddingFunction(embedder),
                configuration={"hnsw": {"space": "cosine", **hnsw}},
                metadata={GENERATION_KEY: uuid.uuid4().hex, EMBEDDER_KEY: identity.to_json()},
            )
            # Another process may have created it a moment before, with another model.
            self._check(created.metadata, reembed)
            self.head = created
            return self._vectors(created)
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
        self.head = existing
        vectors = self._vectors(existing)
        if embedder is None:
            config = (vectors.configuration_json or {}).get("embedding_function") or {}
            if config.get("name") != RemyEmbeddingFunction.name():
                msg = (
                    f"collection {self.name!r} was not created by remy-retriever (its "
                    f"embedding function is {config.get('name')!r}); pass embedder=..."
                )
                raise StoreError(msg)
            # Built-in kinds only: a recorded custom class is never imported.
            embedder = embedder_from_config(dict(config.get("config") or {}), where=self.where)
            recorded, pending = recorded_identity(existing.metadata, where=self.where)
            check_not_pending(pending, where=self.where)
            if recorded is not None:  # checked when first used (see the class docstring)
                self._check_on_use = True
                vectors._embedding_function = RemyEmbeddingFunction(embedder)
                return vectors
        self._identify(embedder)
        self._check(existing.metadata, reembed)
        vectors._embedding_function = RemyEmbeddingFunction(embedder)
        return vectors

    def _vectors(self, head: Any) -> Any:
        return vectors_of(self.client, head, self.name, where=self.where)

    def _follow(self, meta: Mapping[str, Any]) -> None:
        """Read from the collection ``meta`` names as holding the vectors: another
        process may have swapped a re-embedded one in (call with its identity checked)."""
        name = str(meta.get(ACTIVE_KEY) or self.name)
        if name != self.collection.name:
            head = self.client.get_collection(self.name, embedding_function=None)
            vectors = self._vectors(head)
            vectors._embedding_function = RemyEmbeddingFunction(self._embedder)
            self.head, self.collection = head, vectors

    # -- the embedder's identity (see .identity) ----------------------------------------

    @property
    def embedder(self) -> Embedder:
        """The collection's embedder, its identity checked (the first access after a
        reopen without ``embedder=`` loads the model to check it)."""
        if self._check_on_use:
            self._check_recorded_model()
        return self._embedder

    def _check_recorded_model(self) -> None:
        with self._check_lock:
            if not self._check_on_use:
                return  # another thread checked it meanwhile
            identity = identify(self._embedder)
            recorded, pending = recorded_identity(self.metadata(), where=self.where)
            check_identity(recorded, pending, identity, where=self.where)
            self.identity = identity
            self.unrecorded = recorded is None
            self._check_on_use = False

    def _identify(self, embedder: Embedder) -> EmbedderIdentity:
        if self.identity is None:
            self.identity = identify(embedder)
        return self.identity

    def _check(self, metadata: Mapping[str, Any] | None, reembed: bool) -> None:
        """Refuse an embedder other than the recorded one, unless re-embedding."""
        assert self.identity is not None
        if reembed:  # needed unless the record says this very model, complete
            self.reembed_pending = not reembedded_with(metadata, self.identity, where=self.where)
            return
        recorded, pending = recorded_identity(metadata, where=self.where)
        check_identity(recorded, pending, self.identity, where=self.where)
        self.unrecorded = recorded is None

    def metadata(self) -> dict[str, Any]:
        """The collection's metadata, read afresh."""
        get = self.client.get_collection
        head = self.calls.call("read the metadata", lambda: get(self.name, embedding_function=None))
        meta = dict(head.metadata or {})
        self._metadata_read = (meta, time.monotonic())
        return dict(meta)

    def setting(self, key: str, *, max_age: float = 0.0) -> Any:
        """One collection metadata value (``None`` when unset), read afresh; ``max_age``:
        metadata this store read at most that many seconds ago will do (the generation
        check of a search reads it anyway)."""
        cached = self._metadata_read
        if max_age > 0 and cached is not None and time.monotonic() - cached[1] <= max_age:
            return cached[0].get(key)
        return self.metadata().get(key)

    def set_metadata(self, changes: Mapping[str, Any], what: str) -> None:
        """Change some collection metadata keys (call holding the writer lock: Chroma
        replaces the whole mapping, so it is read afresh to keep the others' keys)."""

        def write() -> None:
            col = self.client.get_collection(self.name, embedding_function=None)
            self.head.modify(metadata={**(col.metadata or {}), **changes})

        self._metadata_read = None  # whatever happens, the next read goes to the store
        self.calls.call(what, write)

    def record_identity(self) -> None:
        """Record the embedder's identity on a collection that has none (call holding the
        writer lock); one recorded meanwhile by another process must match."""
        assert self.identity is not None
        recorded, pending = recorded_identity(self.metadata(), where=self.where)
        if recorded is None and pending is None:
            self.set_metadata({EMBEDDER_KEY: self.identity.to_json()}, "record the embedder")
        else:
            check_identity(recorded, pending, self.identity, where=self.where)
        self.unrecorded = False

    def check_identity_current(self) -> None:
        """Before a write (holding the writer lock): refuse it if another process has
        re-embedded the collection with another model since it was opened here."""
        if self.reembed_pending or self.identity is None:
            return
        meta = self.metadata()
        recorded, pending = recorded_identity(meta, where=self.where)
        check_identity(recorded, pending, self.identity, where=self.where)
        self.calls.call("open the re-embedded collection", lambda: self._follow(meta))

    @property
    def max_batch(self) -> int:
        """The most records Chroma takes in one call."""
        return self.calls.max_batch

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
            meta = dict(col.metadata or {})
            self._check_identity_unchanged(meta)
            self._metadata_read = (meta, time.monotonic())
            return str(meta.get(GENERATION_KEY, ""))

        value = self.calls.call("read the collection generation", read)
        self._generation_read = (value, time.monotonic())
        return value

    def _check_identity_unchanged(self, meta: Mapping[str, Any]) -> None:
        """Reads notice another process's re-embedding (this process's query vectors
        would be compared with another model's): every search reads the generation, and
        this checks the identity record beside it when that record changed."""
        raw = (meta.get(EMBEDDER_KEY), meta.get(EMBEDDER_PENDING_KEY))
        if not (self.identity is None or self.reembed_pending or raw == self._identity_seen):
            recorded, pending = recorded_identity(meta, where=self.where)
            if recorded is not None or pending is not None:
                check_identity(recorded, pending, self.identity, where=self.where)
            self._identity_seen = raw
        self._follow(meta)

    def bump_generation(self, changes: Mapping[str, Any] | None = None) -> str:
        """Stamp a new generation (with ``changes`` to the metadata, in the same write)."""
        token = uuid.uuid4().hex
        self.set_metadata(
            {**(changes or {}), GENERATION_KEY: token}, "update the collection generation"
        )
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
        self.calls.call(
            "write chunks",
            lambda: self.collection.upsert(
                ids=list(ids),
                embeddings=embeddings,
                metadatas=pack(metadatas, texts),
            ),
        )

    def delete(self, ids: Sequence[str]) -> None:
        if ids:
            self.calls.call("delete chunks", lambda: self.collection.delete(ids=list(ids)))

    # -- reads ------------------------------------------------------------------------

    def count(self) -> int:
        return int(self.calls.call("count chunks", self.collection.count))

    def query(
        self,
        embedding: np.ndarray,
        n: int,
        where: Mapping[str, Any] | None,
        among: Sequence[str] | None = None,
    ) -> list[tuple[str, float]]:
        """Nearest chunks to ``embedding`` as ``(chunk id, cosine similarity)``; with
        ``among``, the exact cosines of those ids that still exist (:mod:`.exact`)."""
        if n <= 0 or (among is not None and not among):
            return []
        self.ensure_fresh()
        if among is not None:
            return exact_cosines(self, embedding, among, where)[:n]
        result = self.read(
            "search",
            lambda: self.collection.query(
                query_embeddings=[embedding],
                n_results=n,
                where=dict(where) if where else None,
                include=["distances"],
            ),
        )
        # A view caught mid-update can list a chunk twice (old and new vector): keep one.
        best: dict[str, float] = {}
        for i, d in zip(result["ids"][0], result["distances"][0]):
            best.setdefault(i, cosine_from_distance(d))
        return list(best.items())

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
        include = ["metadatas"] if documents or metadatas else []
        if ids is not None and not ids:
            return []
        result = self.read(
            "read chunks",
            lambda: self.collection.get(
                ids=list(dict.fromkeys(ids)) if ids is not None else None,  # Chroma: unique
                where=dict(where) if where else None,
                include=include,
                limit=limit,
                offset=offset,
            ),
        )
        return unpack(result, metadatas=metadatas)

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
            if not part or self.calls.call("read vectors", lambda: has_vectors(part)):
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

        def read(limit: int, offset: int) -> list[Record]:
            return self.get(
                where=where, documents=documents, metadatas=metadatas, limit=limit, offset=offset
            )

        return paged(read, page)

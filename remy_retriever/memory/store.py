""":class:`MemoryStore`: versioned memories (updates, extensions, derivations) on a
:class:`~remy_retriever.Retriever`, searched into the spec's memory-search response.

Storage: the store composes a ``Retriever`` over its own collection (``"memories"`` by
default). Every memory version is one :class:`~remy_retriever.Document` whose id is the
version's id (``mem_<32 hex>``) and whose text is the memory's content; the bookkeeping
lives in the document's metadata under keys starting with ``memory_`` (reserved: user
metadata may not use that prefix):

==================  ===========================================================
``memory_root``     id of the memory's first version (``rootMemoryId``)
``memory_version``  1, 2, ... along ``updates``; an extension or derivation is a
                    new memory and starts at 1
``memory_parent``   the parent version's id (``""`` for none); a derivation's
                    2nd..8th parents go to ``memory_parent_2``...``memory_parent_8``
``memory_parents``  JSON list of all parent ids, in order
``memory_relation`` ``updates`` / ``extends`` / ``derives`` (``""`` for a root)
``memory_latest``   False once a newer version ``updates`` this one
``memory_forgotten`` True after :meth:`MemoryStore.forget`
``memory_container`` the container tag (``""`` for none)
``memory_created``  when the memory was first created (ISO-8601, UTC)
``memory_updated``  when this version was written
``memory_documents`` JSON list of linked document ids
==================  ===========================================================

Search filters on ``memory_latest`` and ``memory_forgotten`` inside both retrieval
branches, so superseded and forgotten versions never crowd out live ones. Flipping those
flags re-adds the old version (its metadata is part of its content hash), which re-embeds
it: an ``update`` embeds two short texts instead of one.
"""

from __future__ import annotations

import json
import os
import threading
import time
import uuid
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from datetime import datetime, timezone
from typing import TYPE_CHECKING, Any, Literal, cast

from ..documents import Document, MetadataValue, validate_document_id
from ..errors import InvalidFilterError, InvalidInputError, RemyError
from ..filters import And, Compare, Filter, Or, matches, parse_where
from ..responses import (
    ChunkResult,
    ContextMemory,
    LinkedDocument,
    MemoryContext,
    MemoryResult,
    MemorySearchResponse,
    Relation,
)
from ..retriever import Retriever, StoredDocument
from ..search.calibration import ScoredHit

if TYPE_CHECKING:
    from ..embeddings import Embedder
    from ..rerankers import Reranker

__all__ = [
    "MEMORY_PREFIX",
    "Memory",
    "MemoryNotFoundError",
    "MemoryStateError",
    "MemoryStore",
    "SearchMode",
]

#: Metadata keys with this prefix are the store's bookkeeping; user metadata may not use it.
MEMORY_PREFIX = "memory_"
_ROOT = "memory_root"
_VERSION = "memory_version"
_PARENT = "memory_parent"
_PARENTS = "memory_parents"
_RELATION = "memory_relation"
_LATEST = "memory_latest"
_FORGOTTEN = "memory_forgotten"
_CONTAINER = "memory_container"
_CREATED = "memory_created"
_UPDATED = "memory_updated"
_DOCUMENTS = "memory_documents"
#: Most parents one :meth:`MemoryStore.derive` may name.
MAX_PARENTS = 8
_PARENT_KEYS = (_PARENT, *(f"{_PARENT}_{i}" for i in range(2, MAX_PARENTS + 1)))
_MAX_CONTENT_CHARS = 1_000_000
_MAX_TAG_CHARS = 256
SearchMode = Literal["memories", "hybrid", "documents"]
_SEARCH_MODES = ("memories", "hybrid", "documents")
_INCLUDE = {"relatedMemories": "relatedMemories", "related_memories": "relatedMemories"}
_INCLUDE.update(documents="documents")


class MemoryNotFoundError(RemyError, LookupError):
    """No memory has this id."""


class MemoryStateError(InvalidInputError):
    """The operation does not apply to the memory in its current state (e.g. updating a
    version that a newer version already replaced, or a forgotten memory)."""


@dataclass(frozen=True)
class Memory:
    """One version of a memory.

    ``version`` counts versions along ``updates`` (1 for a new memory, including an
    extension or derivation); ``root_id`` is the id of the first version. ``parent_id``
    is the version this one relates to (the first parent for a derivation; all are in
    ``parent_ids``) and ``relation`` how (``None`` for a first version). ``created_at``
    is when the memory was first created, ``updated_at`` when this version was written
    (ISO-8601, UTC). ``latest`` is False once a newer version replaced this one;
    ``forgotten`` is True after :meth:`MemoryStore.forget`.
    """

    id: str
    content: str
    version: int
    root_id: str
    parent_id: str | None
    relation: Relation | None
    container_tag: str | None
    metadata: Mapping[str, MetadataValue]
    created_at: str
    updated_at: str
    forgotten: bool = False
    document_ids: tuple[str, ...] = ()
    parent_ids: tuple[str, ...] = ()
    latest: bool = True

    def to_dict(self) -> dict[str, Any]:
        """JSON form with camelCase names (``rootMemoryId``, ``containerTag``...)."""
        return {
            "id": self.id,
            "memory": self.content,
            "version": self.version,
            "rootMemoryId": self.root_id,
            "parentId": self.parent_id,
            "parentIds": list(self.parent_ids),
            "relation": self.relation,
            "containerTag": self.container_tag,
            "metadata": dict(self.metadata),
            "createdAt": self.created_at,
            "updatedAt": self.updated_at,
            "latest": self.latest,
            "forgotten": self.forgotten,
            "documentIds": list(self.document_ids),
        }


@dataclass
class _Related:
    """Context of one result while it is being collected: id -> (distance, relation)."""

    parents: dict[str, tuple[int, Relation]] = field(default_factory=dict)
    children: dict[str, tuple[int, Relation]] = field(default_factory=dict)


class MemoryStore:
    """Versioned memories with relations, searchable like documents, answering in the
    spec's memory-search shape (:class:`~remy_retriever.memory.MemorySearchResponse`).

    A memory is added once (version 1) and then updated (a new version that replaces it:
    only the latest version is found by search, earlier ones stay reachable through
    ``context.parents`` and :meth:`history`), extended (a new memory that builds on it)
    or derived from (a new memory drawn from one or more memories). :meth:`forget` hides
    a memory from search and context without deleting its history. Memories can carry a
    ``container_tag`` (one container per user, project...), metadata (filterable with
    ``where``) and links to documents of a linked :class:`~remy_retriever.Retriever`.

    Everything is stored in Chroma (and the derived lexical index), so it survives a
    reopen. One writer per memory at a time: concurrent updates of the same version from
    two processes are not serialised.

    Setup:
        ``pip install remy-retriever[model]``. Memories live in their own collection
        (``collection="memories"``) next to your documents or anywhere else.

    Usage:
        >>> docs = Retriever("./remy_data", collection="docs")
        >>> store = MemoryStore(retriever=docs)          # same Chroma, same model
        >>> m = store.add("Alice prefers tea", container_tag="alice")
        >>> m2 = store.update(m.id, "Alice now prefers coffee")
        >>> resp = store.search("what does Alice drink?", container_tag="alice",
        ...                     include={"relatedMemories"})
        >>> resp.results[0].memory, resp.results[0].context.parents[0].memory
        ('Alice now prefers coffee', 'Alice prefers tea')
        >>> store.search("install", search_mode="hybrid")   # memories and doc chunks

    ``path_or_client``: an embedded Chroma directory, or a chromadb client; ``None``
    uses the linked retriever's Chroma (when it is given), else ``./remy_data``.
    ``embedder`` defaults to the linked retriever's. ``document_container_key`` names
    the document metadata key that holds a document's container tag, so that
    ``container_tag`` also filters chunk results and linked documents; ``None`` makes
    documents shared by every container (``container_tag`` then filters memories only).
    """

    def __init__(
        self,
        path_or_client: str | os.PathLike[str] | Any = None,
        *,
        collection: str = "memories",
        embedder: Embedder | str | None = None,
        lexical_path: str | os.PathLike[str] | None = None,
        retriever: Retriever | None = None,
        reranker: Reranker | str | None = None,
        context_depth: int = 10,
        document_container_key: str | None = "container_tag",
    ) -> None:
        if retriever is not None and not isinstance(retriever, Retriever):
            msg = (
                f"retriever must be a remy Retriever (the documents to search in hybrid "
                f"mode), got {type(retriever).__name__}"
            )
            raise InvalidInputError(msg)
        if isinstance(context_depth, bool) or not isinstance(context_depth, int):
            msg = f"context_depth must be an int between 0 and 100, got {context_depth!r}"
            raise InvalidInputError(msg)
        if not 0 <= context_depth <= 100:
            msg = f"context_depth must be an int between 0 and 100, got {context_depth!r}"
            raise InvalidInputError(msg)
        if document_container_key is not None and (
            not isinstance(document_container_key, str) or not document_container_key
        ):
            msg = (
                "document_container_key must be a non-empty metadata key, or None for "
                f"documents shared by every container; got {document_container_key!r}"
            )
            raise InvalidInputError(msg)
        path: str | os.PathLike[str] | None = None
        client: Any = None
        if isinstance(path_or_client, (str, os.PathLike)):
            path = path_or_client
        elif path_or_client is not None:
            client = path_or_client
        elif retriever is not None:
            path = _persist_directory(retriever.client)
            client = None if path is not None else retriever.client
        if embedder is None and retriever is not None:
            embedder = retriever.embedder
        self._store = Retriever(
            path,
            collection=collection,
            client=client,
            embedder=embedder,
            lexical_path=lexical_path,
            reranker=reranker,
        )
        self._linked = retriever
        self.context_depth = context_depth
        self.document_container_key = document_container_key
        self._lock = threading.RLock()

    # -- properties ---------------------------------------------------------------------

    @property
    def retriever(self) -> Retriever | None:
        """The linked document retriever (hybrid and documents modes), if any."""
        return self._linked

    @property
    def memories(self) -> Retriever:
        """The retriever over the memory collection itself."""
        return self._store

    def close(self) -> None:
        """Close the memory collection's indexes (not the linked retriever)."""
        self._store.close()

    def __enter__(self) -> MemoryStore:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- writes -------------------------------------------------------------------------

    def add(
        self,
        content: str,
        *,
        metadata: Mapping[str, MetadataValue] | None = None,
        container_tag: str | None = None,
        document_ids: Sequence[str] | None = None,
    ) -> Memory:
        """Store a new memory (version 1; its ``root_id`` is its own id)."""
        now = _now()
        new_id = _new_id()
        memory = Memory(
            id=new_id,
            content=_check_content(content),
            version=1,
            root_id=new_id,
            parent_id=None,
            relation=None,
            container_tag=_check_tag(container_tag),
            metadata=_check_metadata(metadata),
            created_at=now,
            updated_at=now,
            document_ids=_check_document_ids(document_ids),
        )
        with self._lock:
            self._write([memory])
        return memory

    def update(
        self,
        memory_id: str,
        content: str,
        *,
        metadata: Mapping[str, MetadataValue] | None = None,
        document_ids: Sequence[str] | None = None,
    ) -> Memory:
        """Write a new version of ``memory_id`` (``version + 1``, same root, relation
        ``updates``) that replaces it in search. ``metadata`` and ``document_ids``
        default to the current version's. Only the latest version of a memory can be
        updated; a forgotten one cannot."""
        text = _check_content(content)
        meta = None if metadata is None else _check_metadata(metadata)
        docs = None if document_ids is None else _check_document_ids(document_ids)
        with self._lock:
            parent = self.get(memory_id)
            self._check_live(parent, "update")
            if not parent.latest:
                latest = self._latest_of(parent)
                msg = (
                    f"memory {parent.id!r} (version {parent.version}) was already replaced "
                    f"by a newer version; update the latest one, {latest.id!r} "
                    f"(version {latest.version})"
                )
                raise MemoryStateError(msg)
            memory = Memory(
                id=_new_id(),
                content=text,
                version=parent.version + 1,
                root_id=parent.root_id,
                parent_id=parent.id,
                relation="updates",
                container_tag=parent.container_tag,
                metadata=parent.metadata if meta is None else meta,
                created_at=parent.created_at,
                updated_at=_now(),
                document_ids=parent.document_ids if docs is None else docs,
                parent_ids=(parent.id,),
            )
            self._write([memory, replace(parent, latest=False)])
        return memory

    def extend(
        self,
        memory_id: str,
        content: str,
        *,
        metadata: Mapping[str, MetadataValue] | None = None,
        document_ids: Sequence[str] | None = None,
    ) -> Memory:
        """A new memory that builds on ``memory_id`` (relation ``extends``, version 1).
        Both stay searchable. It inherits the container and, unless given, metadata."""
        return self._relate("extends", [memory_id], content, metadata, document_ids)

    def derive(
        self,
        memory_ids: Sequence[str],
        content: str,
        *,
        metadata: Mapping[str, MetadataValue] | None = None,
        document_ids: Sequence[str] | None = None,
    ) -> Memory:
        """A new memory drawn from 1 to 8 memories (relation ``derives``, version 1), all
        in one container. It inherits that container and, unless given, the first
        parent's metadata."""
        if isinstance(memory_ids, str) or not isinstance(memory_ids, Sequence):
            msg = (
                f"derive() takes a list of memory ids, got {type(memory_ids).__name__} "
                f"{memory_ids!r:.80}; wrap a single id in a list"
            )
            raise InvalidInputError(msg)
        return self._relate("derives", list(memory_ids), content, metadata, document_ids)

    def _relate(
        self,
        relation: Relation,
        parent_ids: list[str],
        content: str,
        metadata: Mapping[str, MetadataValue] | None,
        document_ids: Sequence[str] | None,
    ) -> Memory:
        text = _check_content(content)
        meta = None if metadata is None else _check_metadata(metadata)
        docs = _check_document_ids(document_ids)
        unique = list(dict.fromkeys(parent_ids))
        if not 1 <= len(unique) <= MAX_PARENTS:
            msg = f"{relation} needs 1 to {MAX_PARENTS} distinct memory ids, got {parent_ids!r}"
            raise InvalidInputError(msg)
        with self._lock:
            parents = [self.get(pid) for pid in unique]
            for parent in parents:
                self._check_live(parent, relation[:-1])
            tags = {p.container_tag for p in parents}
            if len(tags) > 1:
                shown = sorted(map(str, tags))
                msg = (
                    f"cannot derive from memories in different containers ({shown}); "
                    "derive only from memories of one container"
                )
                raise MemoryStateError(msg)
            now = _now()
            new_id = _new_id()
            memory = Memory(
                id=new_id,
                content=text,
                version=1,
                root_id=new_id,
                parent_id=parents[0].id,
                relation=relation,
                container_tag=parents[0].container_tag,
                metadata=parents[0].metadata if meta is None else meta,
                created_at=now,
                updated_at=now,
                document_ids=docs,
                parent_ids=tuple(p.id for p in parents),
            )
            self._write([memory])
        return memory

    def forget(self, memory_id: str) -> Memory:
        """Hide this memory version from search and from other memories' context. Its
        record and the version chain stay (see :meth:`get`, :meth:`history`)."""
        with self._lock:
            memory = self.get(memory_id)
            if memory.forgotten:
                return memory
            forgotten = replace(memory, forgotten=True)
            self._write([forgotten])
        return forgotten

    def _check_live(self, memory: Memory, action: str) -> None:
        if memory.forgotten:
            msg = (
                f"cannot {action} memory {memory.id!r}: it was forgotten; add a new memory instead"
            )
            raise MemoryStateError(msg)

    def _write(self, memories: Sequence[Memory]) -> None:
        self._store.add([_to_document(m) for m in memories])

    # -- reads --------------------------------------------------------------------------

    def get(self, memory_id: str) -> Memory:
        """The memory version with this id (also superseded or forgotten ones)."""
        _check_memory_id(memory_id)
        found = self._load([memory_id])
        if memory_id not in found:
            msg = (
                f"no memory with id {memory_id!r} in collection {self._store.collection!r}; "
                "check the id (memory ids look like 'mem_<32 hex digits>')"
            )
            raise MemoryNotFoundError(msg)
        return found[memory_id]

    def history(self, memory_id: str) -> list[Memory]:
        """Every version of this memory along ``updates``, oldest first: from version 1
        to the latest, whichever version's id is given (extensions and derivations are
        memories of their own, reachable through search context)."""
        memory = self.get(memory_id)
        chain = self._tree([memory.root_id])
        chain[memory.id] = memory
        versions = [m for m in chain.values() if m.root_id == memory.root_id]
        return sorted(versions, key=lambda m: (m.version, m.updated_at, m.id))

    def _latest_of(self, memory: Memory) -> Memory:
        return self.history(memory.id)[-1]

    def _load(self, ids: Iterable[str]) -> dict[str, Memory]:
        wanted = sorted(set(ids))
        if not wanted:
            return {}
        out: dict[str, Memory] = {}
        for doc_id, stored in self._store.get_documents(wanted).items():
            memory = _from_stored(stored)
            if memory is not None:
                out[doc_id] = memory
        return out

    def _find(self, where: Mapping[str, Any]) -> list[str]:
        """Ids of the memory versions whose metadata matches ``where`` (a Chroma filter)."""
        return self._store.document_ids(where)

    def _tree(self, roots: Iterable[str]) -> dict[str, Memory]:
        """Every version of the memories with these root ids."""
        wanted = sorted(set(roots))
        if not wanted:
            return {}
        return self._load(self._find({_ROOT: {"$in": wanted}}))

    # -- search -------------------------------------------------------------------------

    def search(
        self,
        q: str,
        *,
        search_mode: SearchMode = "memories",
        limit: int = 10,
        threshold: float = 0.0,
        include: Iterable[str] | Mapping[str, bool] | None = None,
        container_tag: str | None = None,
        where: Mapping[str, Any] | None = None,
        rerank: bool | str | Reranker | None = False,
        mode: Literal["semantic", "lexical", "hybrid"] = "hybrid",
    ) -> MemorySearchResponse:
        """Search memories (and, in ``hybrid``/``documents`` mode, the linked retriever's
        document chunks); best first, at most ``limit`` results in the spec's shape.

        ``search_mode``: ``"memories"`` returns memory results (key ``memory``): the
        latest, unforgotten version of each memory, with its full content;
        ``"documents"`` returns chunk results (key ``chunk``) from the linked retriever;
        ``"hybrid"`` mixes both, ordered by similarity. ``mode`` is the retrieval mode
        (``"hybrid"`` BM25 + dense by default) and ``rerank`` as in ``Retriever.search``.

        ``similarity`` is 0-1 by the rules of :mod:`remy_retriever.search.calibration` (a memory
        longer than one chunk scores by its best chunk); results below ``threshold`` are
        dropped. ``include``: ``{"relatedMemories"}`` adds ``context`` (parents and
        children up to ``context_depth`` steps away, relative versions -1, -2... and
        +1, +2...; forgotten ones left out), ``{"documents"}`` adds each memory's linked
        documents. Chunk results always carry their source document in ``documents``,
        ``version`` 1 and ``rootMemoryId`` null.

        Filters hold for every item in the response, context and documents included:
        ``container_tag`` matches a memory's container and a document's
        ``metadata[document_container_key]``; ``where`` (Chroma syntax, on user
        metadata) applies to memories, related memories, chunks and linked documents.
        """
        started = time.perf_counter()
        if search_mode not in _SEARCH_MODES:
            msg = f"unknown search_mode {search_mode!r}; use 'memories', 'hybrid' or 'documents'"
            raise InvalidInputError(msg)
        if isinstance(limit, bool) or not isinstance(limit, int) or not 1 <= limit <= 1000:
            msg = f"limit must be an int between 1 and 1000, got {limit!r}"
            raise InvalidInputError(msg)
        if (
            isinstance(threshold, bool)
            or not isinstance(threshold, (int, float))
            or not 0 <= threshold <= 1
        ):
            msg = (
                f"threshold must be a number between 0 and 1 (similarities are 0-1), "
                f"got {threshold!r}"
            )
            raise InvalidInputError(msg)
        flags = _check_include(include)
        tag = _check_tag(container_tag)
        tree = parse_where(where)
        _reject_reserved(tree)
        if search_mode != "memories" and self._linked is None:
            msg = (
                f"search_mode={search_mode!r} searches documents, but this MemoryStore has no "
                "linked retriever; create it with MemoryStore(..., retriever=Retriever(...))"
            )
            raise InvalidInputError(msg)
        results: list[MemoryResult | ChunkResult] = []
        if search_mode != "documents":
            results += self._memory_results(q, limit, tag, where, tree, flags, rerank, mode)
        if search_mode != "memories":
            results += self._chunk_results(q, limit, tag, where, tree, flags, rerank, mode)
        results = [r for r in results if r.similarity >= threshold]
        results.sort(key=lambda r: -r.similarity)  # stable: memories first on ties
        results = results[:limit]
        timing = round((time.perf_counter() - started) * 1000)
        return MemorySearchResponse(results=results, timing=timing, total=len(results))

    def _memory_results(
        self,
        q: str,
        limit: int,
        tag: str | None,
        where: Mapping[str, Any] | None,
        tree: Filter | None,
        flags: Mapping[str, bool],
        rerank: bool | str | Reranker | None,
        mode: str,
    ) -> list[MemoryResult]:
        clauses: list[Mapping[str, Any]] = [{_LATEST: True}, {_FORGOTTEN: False}]
        if tag is not None:
            clauses.append({_CONTAINER: tag})
        if where:
            clauses.append(where)
        scored = self._store.calibrated_search(
            q,
            mode=mode,
            k=min(10_000, max(3 * limit, 20)),
            where={"$and": clauses},
            rerank=rerank,
        )
        best: dict[str, float] = {}
        for item in scored:
            doc = item.hit.citation.document_id
            best[doc] = max(best.get(doc, 0.0), item.relevance)
        ranked = sorted(best.items(), key=lambda kv: -kv[1])[:limit]
        loaded = self._load(doc for doc, _ in ranked)
        memories = [(loaded[doc], score) for doc, score in ranked if doc in loaded]
        # Checked again against the loaded records: a concurrent update may have landed.
        memories = [
            (m, s)
            for m, s in memories
            if m.latest and not m.forgotten and self._visible(m, tag, tree)
        ]
        contexts = (
            self._contexts([m for m, _ in memories], tag, tree) if flags["relatedMemories"] else {}
        )
        linked = self._linked_documents(memories, tag, tree) if flags["documents"] else {}
        out = []
        for memory, score in memories:
            fields: dict[str, Any] = {
                "id": memory.id,
                "memory": memory.content,
                "similarity": score,
                "metadata": dict(memory.metadata),
                "updated_at": memory.updated_at,
                "version": memory.version,
                "root_memory_id": memory.root_id,
            }
            if flags["relatedMemories"]:
                fields["context"] = contexts[memory.id]
            if flags["documents"]:
                fields["documents"] = [linked[d] for d in memory.document_ids if d in linked]
            out.append(MemoryResult(**fields))
        return out

    def _chunk_results(
        self,
        q: str,
        limit: int,
        tag: str | None,
        where: Mapping[str, Any] | None,
        tree: Filter | None,
        flags: Mapping[str, bool],
        rerank: bool | str | Reranker | None,
        mode: str,
    ) -> list[ChunkResult]:
        linked = self._linked
        assert linked is not None
        clauses: list[Mapping[str, Any]] = []
        if tag is not None and self.document_container_key is not None:
            clauses.append({self.document_container_key: tag})
        if where:
            clauses.append(where)
        doc_where = {"$and": clauses} if len(clauses) > 1 else (clauses[0] if clauses else None)
        scored: list[ScoredHit] = linked.calibrated_search(
            q, mode=mode, k=limit, where=doc_where, rerank=rerank
        )
        stored = linked.get_documents(sorted({s.hit.citation.document_id for s in scored}))
        out = []
        for item in scored:
            hit = item.hit
            doc = stored.get(hit.citation.document_id)
            if doc is None:
                continue
            fields: dict[str, Any] = {
                "id": hit.id,
                "chunk": hit.text,
                "similarity": item.relevance,
                "metadata": dict(hit.metadata),
                "updated_at": doc.updated_at,
                "version": 1,
                "root_memory_id": None,
                "documents": [_linked_document(doc)],
            }
            if flags["relatedMemories"]:
                fields["context"] = MemoryContext(parents=[], children=[])
            out.append(ChunkResult(**fields))
        return out

    def _visible(self, memory: Memory, tag: str | None, tree: Filter | None) -> bool:
        if memory.forgotten:
            return False
        if tag is not None and memory.container_tag != tag:
            return False
        return matches(tree, memory.metadata)

    def _linked_documents(
        self, memories: Sequence[tuple[Memory, float]], tag: str | None, tree: Filter | None
    ) -> dict[str, LinkedDocument]:
        ids = sorted({d for m, _ in memories for d in m.document_ids})
        if not ids:
            return {}
        stored = self._linked.get_documents(ids) if self._linked is not None else {}
        out: dict[str, LinkedDocument] = {}
        for doc_id in ids:
            doc = stored.get(doc_id)
            if doc is None:
                if tag is None and tree is None:
                    out[doc_id] = LinkedDocument(id=doc_id)  # not resolvable: id only
                continue
            meta = doc.document.metadata
            key = self.document_container_key
            if tag is not None and key is not None and meta.get(key) != tag:
                continue
            if matches(tree, meta):
                out[doc_id] = _linked_document(doc)
        return out

    def _contexts(
        self, results: Sequence[Memory], tag: str | None, tree: Filter | None
    ) -> dict[str, MemoryContext]:
        """Parents and children of each result, nearest first, within ``context_depth``."""
        known: dict[str, Memory] = {m.id: m for m in results}
        if self.context_depth and results:
            known.update(self._tree(m.root_id for m in results))
        related = {m.id: _Related() for m in results}
        # Up: parents, grandparents... (each step one batched read of unknown ids).
        frontier = {m.id: {m.id} for m in results}
        for distance in range(1, self.context_depth + 1):
            missing = {
                p for ids in frontier.values() for n in ids for p in known[n].parent_ids
            } - set(known)
            known.update(self._load(missing))
            for rid, ids in frontier.items():
                step: set[str] = set()
                for node in ids:
                    relation = known[node].relation
                    for parent in known[node].parent_ids:
                        if parent in known and parent != rid and parent not in related[rid].parents:
                            related[rid].parents[parent] = (-distance, cast(Relation, relation))
                            step.add(parent)
                frontier[rid] = step
            if not any(frontier.values()):
                break
        # Down: children, grandchildren... (each step one query on the parent keys).
        frontier = {m.id: {m.id} for m in results}
        children_of: dict[str, set[str]] = {}
        asked: set[str] = set()
        for distance in range(1, self.context_depth + 1):
            ask = sorted({n for ids in frontier.values() for n in ids} - asked)
            if ask:
                asked.update(ask)
                query = {"$or": [{key: {"$in": ask}} for key in _PARENT_KEYS]}
                found = self._find(query)
                known.update(self._load(set(found) - set(known)))
                for child in found:
                    if child in known:
                        for parent in known[child].parent_ids:
                            children_of.setdefault(parent, set()).add(child)
            for rid, ids in frontier.items():
                step = set()
                for node in ids:
                    for child in sorted(children_of.get(node, ())):
                        if child != rid and child not in related[rid].children:
                            relation = cast(Relation, known[child].relation)
                            related[rid].children[child] = (distance, relation)
                            step.add(child)
                frontier[rid] = step
            if not any(frontier.values()):
                break
        out: dict[str, MemoryContext] = {}
        for rid, rel in related.items():
            out[rid] = MemoryContext(
                parents=self._entries(rel.parents, known, tag, tree),
                children=self._entries(rel.children, known, tag, tree),
            )
        return out

    def _entries(
        self,
        found: Mapping[str, tuple[int, Relation]],
        known: Mapping[str, Memory],
        tag: str | None,
        tree: Filter | None,
    ) -> list[ContextMemory]:
        entries = []
        order = sorted(found.items(), key=lambda kv: (abs(kv[1][0]), known[kv[0]].updated_at))
        for mid, (distance, relation) in order:
            memory = known[mid]
            if not self._visible(memory, tag, tree):
                continue
            entries.append(
                ContextMemory(
                    memory=memory.content,
                    relation=relation,
                    version=distance,
                    updated_at=memory.updated_at,
                    metadata=dict(memory.metadata),
                )
            )
        return entries


# -- Memory <-> Document -----------------------------------------------------------------


def _to_document(memory: Memory) -> Document:
    meta: dict[str, MetadataValue] = dict(memory.metadata)
    meta[_ROOT] = memory.root_id
    meta[_VERSION] = memory.version
    for key, parent in zip(_PARENT_KEYS, memory.parent_ids):
        meta[key] = parent
    meta.setdefault(_PARENT, "")
    meta[_PARENTS] = json.dumps(list(memory.parent_ids))
    meta[_RELATION] = memory.relation or ""
    meta[_LATEST] = memory.latest
    meta[_FORGOTTEN] = memory.forgotten
    meta[_CONTAINER] = memory.container_tag or ""
    meta[_CREATED] = memory.created_at
    meta[_UPDATED] = memory.updated_at
    meta[_DOCUMENTS] = json.dumps(list(memory.document_ids))
    return Document(id=memory.id, text=memory.content, type="memory", metadata=meta)


def _from_stored(stored: StoredDocument) -> Memory | None:
    doc = stored.document
    meta = doc.metadata
    if _ROOT not in meta:
        return None
    parents = tuple(json.loads(str(meta.get(_PARENTS) or "[]")))
    relation = str(meta.get(_RELATION) or "") or None
    return Memory(
        id=doc.id,
        content=doc.text,
        version=int(meta.get(_VERSION, 1)),
        root_id=str(meta[_ROOT]),
        parent_id=parents[0] if parents else None,
        relation=cast("Relation | None", relation),
        container_tag=str(meta.get(_CONTAINER) or "") or None,
        metadata={k: v for k, v in meta.items() if not k.startswith(MEMORY_PREFIX)},
        created_at=str(meta.get(_CREATED) or stored.created_at),
        updated_at=str(meta.get(_UPDATED) or stored.updated_at),
        forgotten=bool(meta.get(_FORGOTTEN, False)),
        document_ids=tuple(json.loads(str(meta.get(_DOCUMENTS) or "[]"))),
        parent_ids=parents,
        latest=bool(meta.get(_LATEST, True)),
    )


def _linked_document(stored: StoredDocument) -> LinkedDocument:
    doc = stored.document
    return LinkedDocument(
        id=doc.id,
        title=doc.title,
        type=doc.type,
        metadata=dict(doc.metadata),
        created_at=stored.created_at,
        updated_at=stored.updated_at,
    )


# -- helpers -----------------------------------------------------------------------------


def _now() -> str:
    return datetime.now(timezone.utc).isoformat().replace("+00:00", "Z")


def _new_id() -> str:
    return f"mem_{uuid.uuid4().hex}"


def _persist_directory(client: Any) -> str | None:
    """The directory of an embedded (persistent) chromadb client, else None."""
    try:
        settings = client.get_settings()
    except Exception:
        return None
    if getattr(settings, "is_persistent", False) and getattr(settings, "persist_directory", None):
        return str(settings.persist_directory)
    return None


def _check_memory_id(memory_id: object) -> str:
    if not isinstance(memory_id, str) or not memory_id:
        msg = f"memory id must be a non-empty str like 'mem_<32 hex digits>', got {memory_id!r}"
        raise InvalidInputError(msg)
    return validate_document_id(memory_id)


def _check_content(content: object) -> str:
    if not isinstance(content, str):
        msg = f"memory content must be str, got {type(content).__name__} {content!r:.80}"
        raise InvalidInputError(msg)
    if not content.strip():
        msg = f"memory content is empty or whitespace only ({content!r:.40}); pass some text"
        raise InvalidInputError(msg)
    if len(content) > _MAX_CONTENT_CHARS:
        msg = (
            f"memory content is {len(content):,} characters, over the "
            f"{_MAX_CONTENT_CHARS:,} limit; store long texts as documents and link them"
        )
        raise InvalidInputError(msg)
    if "\x00" in content:
        msg = "memory content contains a NUL byte, which suggests binary data; pass text only"
        raise InvalidInputError(msg)
    return content


def _check_tag(tag: object) -> str | None:
    if tag is None:
        return None
    if not isinstance(tag, str) or not tag.strip() or len(tag) > _MAX_TAG_CHARS or "\x00" in tag:
        msg = (
            f"container_tag must be a non-blank str of at most {_MAX_TAG_CHARS} characters "
            f"(e.g. 'user_123'), or None; got {tag!r:.80}"
        )
        raise InvalidInputError(msg)
    return tag


def _check_metadata(metadata: object) -> dict[str, MetadataValue]:
    if metadata is None:
        return {}
    if not isinstance(metadata, Mapping):
        msg = f"metadata must be a dict of str to str/int/float/bool, got {metadata!r:.80}"
        raise InvalidInputError(msg)
    for key in metadata:
        if isinstance(key, str) and key.startswith(MEMORY_PREFIX):
            msg = (
                f"metadata key {key!r} is reserved for the memory store's bookkeeping (keys "
                f"may not start with {MEMORY_PREFIX!r}); rename it"
            )
            raise InvalidInputError(msg)
    # Document validates the rest (key types, the 'remy_' prefix, value types).
    Document(id="metadata-check", text="", metadata=dict(metadata))
    return dict(metadata)


def _check_document_ids(ids: object) -> tuple[str, ...]:
    if ids is None:
        return ()
    if isinstance(ids, str) or not isinstance(ids, Sequence):
        msg = (
            f"document_ids must be a list of document ids, got {type(ids).__name__} "
            f"{ids!r:.80}; wrap a single id in a list"
        )
        raise InvalidInputError(msg)
    return tuple(dict.fromkeys(validate_document_id(d) for d in ids))


def _check_include(include: object) -> dict[str, bool]:
    flags = {"relatedMemories": False, "documents": False}
    if include is None:
        return flags
    if isinstance(include, Mapping):
        items = list(include.items())
    elif isinstance(include, (str, bytes)) or not isinstance(include, Iterable):
        msg = (
            f"include must be a set like {{'relatedMemories', 'documents'}} or a dict of "
            f"flags, got {include!r:.80}"
        )
        raise InvalidInputError(msg)
    else:
        items = [(name, True) for name in include]
    for name, value in items:
        if name not in _INCLUDE:
            msg = f"unknown include flag {name!r}; use 'relatedMemories' and/or 'documents'"
            raise InvalidInputError(msg)
        if not isinstance(value, bool):
            msg = f"include[{name!r}] must be True or False, got {value!r}"
            raise InvalidInputError(msg)
        flags[_INCLUDE[name]] = value
    return flags


def _reject_reserved(tree: Filter | None) -> None:
    if tree is None:
        return
    if isinstance(tree, (And, Or)):
        for item in tree.items:
            _reject_reserved(item)
        return
    assert isinstance(tree, Compare)
    if tree.key.startswith(MEMORY_PREFIX):
        msg = (
            f"where key {tree.key!r} is reserved for the memory store's bookkeeping; filter "
            "on your own metadata, and use container_tag= for containers"
        )
        raise InvalidFilterError(msg)

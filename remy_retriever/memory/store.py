""":class:`MemoryStore`: versioned memories (updates, extensions, derivations) on a
:class:`~remy_retriever.Retriever`, searched into the spec's memory-search response.

Storage: the store composes a ``Retriever`` over its own collection (``"memories"`` by
default) and uses only its public API. Every memory version is one document
(:mod:`.model` lists its ``memory_*`` bookkeeping keys); related memories are read by
:mod:`.context`, search results built by :mod:`.results`. Flipping the ``memory_latest``
and ``memory_forgotten`` flags re-adds the old version (its metadata is part of its
content hash), which re-embeds it: an ``update`` embeds two short texts instead of one.
"""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import replace
from typing import TYPE_CHECKING, Any, Literal

from ..errors import InvalidInputError, ModelLoadError
from ..retriever import Retriever
from ..schema.document import CONTAINER_TAG_KEY, MetadataValue
from ..schema.filters import MAX_SCANNED_VALUES, and_where, parse_where, scope_where
from ..schema.validation import as_list
from ..supermemory.responses import ChunkResult, MemoryResult, MemorySearchResponse, Relation
from ..util.reprs import short_repr
from .checks import (
    check_container_key,
    check_content,
    check_context_depth,
    check_document_ids,
    check_include,
    check_memory_id,
    check_metadata,
    check_search,
    check_tag,
    reject_reserved,
)
from .context import find_memories, load_memories, memory_tree
from .model import (
    CONTAINER_KEY,
    FORGOTTEN_KEY,
    LATEST_KEY,
    MAX_PARENTS,
    Memory,
    MemoryNotFoundError,
    MemoryStateError,
    SearchMode,
    new_memory_id,
    now,
    to_document,
)
from .results import (
    SearchRequest,
    aggregate_chunks,
    chunk_results,
    distinct_results,
    memory_results,
)

if TYPE_CHECKING:
    from ..models.embeddings import Embedder
    from ..models.rerankers import Reranker

__all__ = ["MemoryStore"]


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
    ``embedder`` (or ``embedder_backend``: ``"torch"``, ``"onnx"``, ``"onnx-int8"``, as
    for :class:`Retriever`) defaults to the linked retriever's embedder, or to what the
    memory collection records when that is another embedder.
    ``document_container_key`` names the document metadata key that holds a document's
    container tag, so that ``container_tag`` also filters chunk results and linked
    documents; ``None`` makes documents shared by every container (``container_tag``
    then filters memories only). ``bm25_statistics``: as for :class:`Retriever`, for the
    memory collection (``"filter"``: a container's lexical scores are counted inside it).
    """

    def __init__(
        self,
        path_or_client: str | os.PathLike[str] | Any = None,
        *,
        collection: str = "memories",
        embedder: Embedder | str | None = None,
        embedder_backend: str | None = None,
        lexical_path: str | os.PathLike[str] | None = None,
        retriever: Retriever | None = None,
        reranker: Reranker | str | None = None,
        context_depth: int = 10,
        document_container_key: str | None = CONTAINER_TAG_KEY,
        bm25_statistics: str = "collection",
    ) -> None:
        if retriever is not None and not isinstance(retriever, Retriever):
            msg = (
                f"retriever must be a remy Retriever (the documents to search in hybrid "
                f"mode), got {type(retriever).__name__}"
            )
            raise InvalidInputError(msg)
        depth = check_context_depth(context_depth)
        container_key = check_container_key(document_container_key)
        path: str | os.PathLike[str] | None = None
        client: Any = None
        if isinstance(path_or_client, (str, os.PathLike)):
            path = path_or_client
        elif path_or_client is not None:
            client = path_or_client
        elif retriever is not None:
            path = _persist_directory(retriever.client)
            client = None if path is not None else retriever.client
        options: dict[str, Any] = {
            "collection": collection,
            "client": client,
            "lexical_path": lexical_path,
            "reranker": reranker,
            "bm25_statistics": bm25_statistics,
        }
        if embedder is None and embedder_backend is None and retriever is not None:
            # The linked retriever's embedder, unless the memory collection already
            # records another one (identity is checked at open): then its record decides.
            try:
                self._store = Retriever(path, embedder=retriever.embedder, **options)
            except ModelLoadError:
                self._store = Retriever(path, **options)
        else:
            self._store = Retriever(
                path, embedder=embedder, embedder_backend=embedder_backend, **options
            )
        self._linked = retriever
        self.context_depth = depth
        self.document_container_key = container_key
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
        return self.add_many(
            [content],
            metadata=[metadata],
            container_tags=[container_tag],
            document_ids=[document_ids],
        )[0]

    def add_many(
        self,
        contents: Sequence[str],
        *,
        metadata: Sequence[Mapping[str, MetadataValue] | None] | None = None,
        container_tags: Sequence[str | None] | None = None,
        document_ids: Sequence[Sequence[str] | None] | None = None,
    ) -> list[Memory]:
        """Store several new memories in one write (one embedding batch): the i-th
        memory has ``contents[i]``, ``metadata[i]``, ``container_tags[i]`` and
        ``document_ids[i]`` (each list, when given, as long as ``contents``). All are
        checked before anything is written."""
        texts = as_list(contents, "add_many() contents", "['Alice prefers tea']")
        columns: dict[str, list[Any]] = {}
        for name, column in (
            ("metadata", metadata),
            ("container_tags", container_tags),
            ("document_ids", document_ids),
        ):
            values = [None] * len(texts) if column is None else as_list(column, name, "[...]")
            if len(values) != len(texts):
                msg = (
                    f"add_many() got {len(texts)} contents but {len(values)} {name}; give "
                    "one per memory (None for none)"
                )
                raise InvalidInputError(msg)
            columns[name] = values
        created = now()
        memories = []
        for i, text in enumerate(texts):
            new_id = new_memory_id()
            memories.append(
                Memory(
                    id=new_id,
                    content=check_content(text),
                    version=1,
                    root_id=new_id,
                    parent_id=None,
                    relation=None,
                    container_tag=check_tag(columns["container_tags"][i]),
                    metadata=check_metadata(columns["metadata"][i]),
                    created_at=created,
                    updated_at=created,
                    document_ids=check_document_ids(columns["document_ids"][i]),
                )
            )
        if memories:
            with self._lock:
                self._write(memories)
        return memories

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
        text = check_content(content)
        meta = None if metadata is None else check_metadata(metadata)
        docs = None if document_ids is None else check_document_ids(document_ids)
        with self._lock:
            parent = self.get(memory_id)
            _check_live(parent, "update")
            if not parent.latest:
                latest = self.history(parent.id)[-1]
                msg = (
                    f"memory {parent.id!r} (version {parent.version}) was already replaced "
                    f"by a newer version; update the latest one, {latest.id!r} "
                    f"(version {latest.version})"
                )
                raise MemoryStateError(msg)
            memory = Memory(
                id=new_memory_id(),
                content=text,
                version=parent.version + 1,
                root_id=parent.root_id,
                parent_id=parent.id,
                relation="updates",
                container_tag=parent.container_tag,
                metadata=parent.metadata if meta is None else meta,
                created_at=parent.created_at,
                updated_at=now(),
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
        text = check_content(content)
        meta = None if metadata is None else check_metadata(metadata)
        docs = check_document_ids(document_ids)
        unique = list(dict.fromkeys(check_memory_id(pid) for pid in parent_ids))
        if not 1 <= len(unique) <= MAX_PARENTS:
            msg = f"{relation} needs 1 to {MAX_PARENTS} distinct memory ids, got {parent_ids!r}"
            raise InvalidInputError(msg)
        with self._lock:
            parents = [self.get(pid) for pid in unique]
            for parent in parents:
                _check_live(parent, relation[:-1])
            tags = {p.container_tag for p in parents}
            if len(tags) > 1:
                shown = sorted(map(str, tags))
                msg = (
                    f"cannot derive from memories in different containers ({shown}); "
                    "derive only from memories of one container"
                )
                raise MemoryStateError(msg)
            created = now()
            new_id = new_memory_id()
            memory = Memory(
                id=new_id,
                content=text,
                version=1,
                root_id=new_id,
                parent_id=parents[0].id,
                relation=relation,
                container_tag=parents[0].container_tag,
                metadata=parents[0].metadata if meta is None else meta,
                created_at=created,
                updated_at=created,
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

    def _write(self, memories: Sequence[Memory]) -> None:
        self._store.add([to_document(m) for m in memories])

    # -- reads --------------------------------------------------------------------------

    def get(self, memory_id: str, *, container_tags: Sequence[str] | None = None) -> Memory:
        """The memory version with this id (also superseded or forgotten ones). With
        ``container_tags``, a memory in another container (or in none) is reported
        exactly as an unknown id is: same error, same message."""
        check_memory_id(memory_id)
        found = load_memories(self._store, [memory_id])
        memory = found.get(memory_id)
        if memory is None or (
            container_tags is not None and memory.container_tag not in set(container_tags)
        ):
            msg = (
                f"no memory with id {memory_id!r} in collection {self._store.collection!r}; "
                "check the id (memory ids look like 'mem_<32 hex digits>')"
            )
            raise MemoryNotFoundError(msg)
        return memory

    def history(self, memory_id: str) -> list[Memory]:
        """Every version of this memory along ``updates``, oldest first: from version 1
        to the latest, whichever version's id is given (extensions and derivations are
        memories of their own, reachable through search context)."""
        memory = self.get(memory_id)
        chain = memory_tree(self._store, [memory.root_id])
        chain[memory.id] = memory
        versions = [m for m in chain.values() if m.root_id == memory.root_id]
        return sorted(versions, key=lambda m: (m.version, m.updated_at, m.id))

    def find_by_content(self, content: str, *, container_tag: str | None = None) -> Memory:
        """The one latest, unforgotten memory whose content is exactly ``content``, in
        ``container_tag`` (``None``: in any container). Scans the container's memories
        (no search: a hit beyond any top-k still counts). None raises
        :class:`MemoryNotFoundError`, several :class:`InvalidInputError` naming them."""
        if not isinstance(content, str):
            msg = f"content must be the memory's exact text (a str), got {short_repr(content)}"
            raise InvalidInputError(msg)
        tag = check_tag(container_tag)
        where = and_where(
            {LATEST_KEY: True},
            {FORGOTTEN_KEY: False},
            None if tag is None else {CONTAINER_KEY: tag},
        )
        found = load_memories(self._store, find_memories(self._store, where or {}))
        same = sorted(i for i, m in found.items() if m.content == content)
        where_text = "" if tag is None else f" in container {tag!r}"
        if not same:
            msg = (
                f"no memory{where_text} has exactly the content given; find it with a "
                "memory search and name it by id"
            )
            raise MemoryNotFoundError(msg)
        if len(same) > 1:
            msg = (
                f"{len(same)} memories{where_text} have exactly this content "
                f"({', '.join(same)}); name the one you mean by id"
            )
            raise InvalidInputError(msg)
        return found[same[0]]

    def metadata_values(
        self,
        key: str,
        *,
        container_tags: Sequence[str] | None = None,
        limit: int = MAX_SCANNED_VALUES,
    ) -> list[MetadataValue]:
        """:meth:`scan_metadata_values` for one key."""
        return self.scan_metadata_values([key], container_tags=container_tags, limit=limit)[key]

    def scan_metadata_values(
        self,
        keys: Sequence[str],
        *,
        container_tags: Sequence[str] | None = None,
        limit: int = MAX_SCANNED_VALUES,
    ) -> dict[str, list[MetadataValue]]:
        """Per key, the distinct values stored under it by the memories in
        ``container_tags`` (``None``: every container) and the linked documents in them
        (:meth:`Retriever.scan_metadata_values`): what a memory search's supermemory
        filters are resolved against, every key in one pass over each collection. Values
        outside the containers are never read."""
        scope = None if container_tags is None else list(container_tags)
        values = self._store.scan_metadata_values(
            keys, where=scope_where(scope, key=CONTAINER_KEY), limit=limit
        )
        if self._linked is not None:
            doc_scope = None if self.document_container_key is None else scope
            key_of_docs = self.document_container_key or CONTAINER_TAG_KEY
            linked = self._linked.scan_metadata_values(
                keys, where=scope_where(doc_scope, key=key_of_docs), limit=limit
            )
            for key, found in linked.items():
                values[key] = values.get(key, []) + found
        return values

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
        distinct: bool = False,
        aggregate: bool = False,
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
        children along ``updates`` up to ``context_depth`` steps away, relative versions
        -1, -2... and +1, +2...; ``related``: the memories linked by ``extends`` or
        ``derives``; forgotten ones left out), ``{"documents"}`` adds each memory's
        linked documents, ``{"forgottenMemories"}`` also returns forgotten memories
        (the latest version of each). Chunk results always carry their source document
        in ``documents``, ``version`` 1 and ``rootMemoryId`` null. ``distinct`` drops
        repeats (:func:`~.results.distinct_results`), ``aggregate`` merges the chunks of
        one document (:func:`~.results.aggregate_chunks`).

        Filters hold for every item in the response, context and documents included:
        ``container_tag`` matches a memory's container and a document's
        ``metadata[document_container_key]``; ``where`` (Chroma syntax, on user
        metadata) applies to memories, related memories, chunks and linked documents.
        """
        started = time.perf_counter()
        check_search(search_mode, limit, threshold)
        flags = check_include(include)
        tag = check_tag(container_tag)
        tree = parse_where(where)
        reject_reserved(tree)
        if search_mode != "memories" and self._linked is None:
            msg = (
                f"search_mode={search_mode!r} searches documents, but this MemoryStore has no "
                "linked retriever; create it with MemoryStore(..., retriever=Retriever(...))"
            )
            raise InvalidInputError(msg)
        request = SearchRequest(
            q=q,
            limit=limit,
            tag=tag,
            where=where,
            tree=tree,
            flags=flags,
            rerank=rerank,
            mode=mode,
            context_depth=self.context_depth,
            container_key=self.document_container_key,
        )
        results: list[MemoryResult | ChunkResult] = []
        if search_mode != "documents":
            results += memory_results(self._store, self._linked, request)
        if search_mode != "memories":
            assert self._linked is not None
            results += chunk_results(self._linked, request)
        results = [r for r in results if r.similarity >= threshold]
        results.sort(key=lambda r: -r.similarity)  # stable: memories first on ties
        results = distinct_results(results) if distinct else results
        results = aggregate_chunks(results) if aggregate else results
        results = results[:limit]
        timing = round((time.perf_counter() - started) * 1000)
        return MemorySearchResponse(results=results, timing=timing, total=len(results))


def _check_live(memory: Memory, action: str) -> None:
    if memory.forgotten:
        msg = f"cannot {action} memory {memory.id!r}: it was forgotten; add a new memory instead"
        raise MemoryStateError(msg)


def _persist_directory(client: Any) -> str | None:
    """The directory of an embedded (persistent) chromadb client, else None."""
    try:
        settings = client.get_settings()
    except Exception:
        return None
    if getattr(settings, "is_persistent", False) and getattr(settings, "persist_directory", None):
        return str(settings.persist_directory)
    return None

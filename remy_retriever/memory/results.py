"""The results of a memory search, in the spec's shape: memory results from the memory
collection and chunk results from the linked document retriever, each through
:meth:`~remy_retriever.Retriever.calibrated_search` (0-1 relevance).

Search filters on ``memory_latest`` and ``memory_forgotten`` inside both retrieval
branches, so superseded and forgotten versions never crowd out live ones; the loaded
records are checked again, as a concurrent update may have landed in between.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any

from ..retriever import Retriever, StoredDocument
from ..schema.filters import Filter, matches
from ..supermemory.responses import ChunkResult, LinkedDocument, MemoryContext, MemoryResult
from .context import load_memories, memory_contexts
from .model import CONTAINER_KEY, FORGOTTEN_KEY, LATEST_KEY, Memory, is_visible

if TYPE_CHECKING:
    from ..models.rerankers import Reranker

__all__ = [
    "SearchRequest",
    "aggregate_chunks",
    "chunk_results",
    "distinct_results",
    "memory_results",
]


@dataclass(frozen=True)
class SearchRequest:
    """One checked memory search, and the store settings it runs with.

    ``tag`` and ``where`` (with ``tree``, its parsed form) hold for every item in the
    response; ``flags`` are the ``include`` flags (``relatedMemories``, ``documents``);
    ``container_key`` names the document metadata key that holds a container tag.
    """

    q: str
    limit: int
    tag: str | None
    where: Mapping[str, Any] | None
    tree: Filter | None
    flags: Mapping[str, bool]
    rerank: bool | str | Reranker | None
    mode: str
    context_depth: int
    container_key: str | None


def memory_results(
    memories: Retriever, linked: Retriever | None, request: SearchRequest
) -> list[MemoryResult]:
    """Up to ``limit`` memory results, best first: the latest, unforgotten version of
    each memory, scored by its best chunk; with context and linked documents (from
    ``linked``) as the flags ask."""
    tag, tree, flags = request.tag, request.tree, request.flags
    forgotten = flags.get("forgottenMemories", False)
    clauses: list[Mapping[str, Any]] = [{LATEST_KEY: True}]
    if not forgotten:
        clauses.append({FORGOTTEN_KEY: False})
    if tag is not None:
        clauses.append({CONTAINER_KEY: tag})
    if request.where:
        clauses.append(request.where)
    scored = memories.calibrated_search(
        request.q,
        mode=request.mode,
        k=min(10_000, max(3 * request.limit, 20)),
        where={"$and": clauses},
        rerank=request.rerank,
    )
    best: dict[str, float] = {}
    for item in scored:
        doc = item.hit.citation.document_id
        best[doc] = max(best.get(doc, 0.0), item.relevance)
    ranked = sorted(best.items(), key=lambda kv: -kv[1])[: request.limit]
    loaded = load_memories(memories, (doc for doc, _ in ranked))
    found = [(loaded[doc], score) for doc, score in ranked if doc in loaded]
    # Checked again against the loaded records: a concurrent update may have landed.
    found = [
        (m, s)
        for m, s in found
        if m.latest
        and (forgotten or not m.forgotten)
        and is_visible(replace(m, forgotten=False), tag, tree)
    ]
    contexts = (
        memory_contexts(memories, [m for m, _ in found], request.context_depth, tag, tree)
        if flags["relatedMemories"]
        else {}
    )
    documents = (
        _linked_documents(linked, found, tag, tree, request.container_key)
        if flags["documents"]
        else {}
    )
    out = []
    for memory, score in found:
        fields: dict[str, Any] = {
            "id": memory.id,
            "memory": memory.content,
            "similarity": score,
            "metadata": dict(memory.metadata),
            "updated_at": memory.updated_at,
            "version": memory.version,
            # Null for a memory never superseded (version 1), as supermemory does.
            "root_memory_id": memory.root_id if memory.version > 1 else None,
        }
        if flags["relatedMemories"]:
            fields["context"] = contexts[memory.id]
        if flags["documents"]:
            fields["documents"] = [documents[d] for d in memory.document_ids if d in documents]
        out.append(MemoryResult(**fields))
    return out


def chunk_results(linked: Retriever, request: SearchRequest) -> list[ChunkResult]:
    """Up to ``limit`` chunk results from the linked retriever, best first, each with
    its source document (``version`` 1, ``rootMemoryId`` null, empty context)."""
    clauses: list[Mapping[str, Any]] = []
    if request.tag is not None and request.container_key is not None:
        clauses.append({request.container_key: request.tag})
    if request.where:
        clauses.append(request.where)
    doc_where = {"$and": clauses} if len(clauses) > 1 else (clauses[0] if clauses else None)
    scored = linked.calibrated_search(
        request.q, mode=request.mode, k=request.limit, where=doc_where, rerank=request.rerank
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
        if request.flags["relatedMemories"]:
            fields["context"] = MemoryContext(parents=[], children=[])
        pages = {"page": hit.citation.page, "page_end": hit.citation.page_end}
        fields.update((k, v) for k, v in pages.items() if v is not None)
        out.append(ChunkResult(**fields))
    return out


def _linked_documents(
    linked: Retriever | None,
    memories: Sequence[tuple[Memory, float]],
    tag: str | None,
    tree: Filter | None,
    container_key: str | None,
) -> dict[str, LinkedDocument]:
    ids = sorted({d for m, _ in memories for d in m.document_ids})
    if not ids:
        return {}
    stored = linked.get_documents(ids) if linked is not None else {}
    out: dict[str, LinkedDocument] = {}
    for doc_id in ids:
        doc = stored.get(doc_id)
        if doc is None:
            if tag is None and tree is None:
                out[doc_id] = LinkedDocument(id=doc_id)  # not resolvable: id only
            continue
        meta = doc.document.metadata
        if tag is not None and container_key is not None and meta.get(container_key) != tag:
            continue
        if matches(tree, meta):
            out[doc_id] = _linked_document(doc)
    return out


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


def distinct_results(
    results: Sequence[MemoryResult | ChunkResult],
) -> list[MemoryResult | ChunkResult]:
    """A hybrid ranking without duplicates: each id once, and a chunk left out when a
    memory ranked in the same results has its text (the memory rule makes a short
    document both a chunk and a memory; the memory stands for both)."""
    seen: set[str] = set()
    memories = {" ".join(r.memory.split()) for r in results if isinstance(r, MemoryResult)}
    out: list[MemoryResult | ChunkResult] = []
    for result in results:
        if result.id in seen:
            continue
        if isinstance(result, ChunkResult) and " ".join(result.chunk.split()) in memories:
            continue
        seen.add(result.id)
        out.append(result)
    return out


def aggregate_chunks(
    results: Sequence[MemoryResult | ChunkResult],
) -> list[MemoryResult | ChunkResult]:
    """The chunk results of one document merged into one, where its best chunk ranked:
    their texts in rank order, the best similarity, the page range of them all (the
    citation), the id of the best chunk. Memory results pass unchanged."""
    groups: dict[str, list[ChunkResult]] = {}
    for result in results:
        if isinstance(result, ChunkResult):
            doc = result.documents[0].id if result.documents else result.id
            groups.setdefault(doc, []).append(result)
    out: list[MemoryResult | ChunkResult] = []
    done: set[str] = set()
    for result in results:
        if not isinstance(result, ChunkResult):
            out.append(result)
            continue
        doc = result.documents[0].id if result.documents else result.id
        if doc in done:
            continue
        done.add(doc)
        group = groups[doc]
        pages = [p for r in group for p in (r.page, r.page_end) if p is not None]
        out.append(
            result.model_copy(
                update={
                    "chunk": "\n\n".join(r.chunk for r in group),
                    "similarity": max(r.similarity for r in group),
                    "page": min(pages) if pages else None,
                    "page_end": max(pages) if pages else None,
                }
            )
        )
    return out

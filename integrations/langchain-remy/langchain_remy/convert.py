"""Lossless conversion between remy :class:`~remy_retriever.SearchHit` objects and LangChain
:class:`~langchain_core.documents.Document` objects.

A Document made from a hit has ``id`` = the chunk id, ``page_content`` = the hit's text
and this metadata:

- ``citation``: the full citation in its camelCase wire form (``documentId``,
  ``chunkIndex``, ``start``, ``end``, ``headingPath``, ``title``, ``url``, ``path``,
  ``chunkCount``);
- flat copies for convenience: ``source`` (url, else path, else document id), ``title``,
  ``document_id``, ``chunk_index``, ``heading_path`` (a list of headings);
- ``score``, ``retrieval_rank`` and ``retrieval_score`` (the last two are ``None`` when no
  reranking happened: the Document's position and ``score`` already are the retrieval
  rank and score);
- ``explain``, ``neighbors`` and ``matches`` (wire form) only when the search asked for
  them;
- the chunk's own metadata (what was given as ``Document.metadata`` at ingest). A user
  key that collides with one of the keys above is kept under ``remy_shadowed`` (the
  ``remy_`` prefix is reserved by remy-retriever, so this name never collides) and
  restored by :func:`document_to_hit`.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from langchain_core.documents import Document

from remy_retriever import InvalidInputError, SearchHit

__all__ = ["RESERVED_KEYS", "SHADOW_KEY", "document_to_hit", "hit_to_document", "hits_to_documents"]

#: Where user metadata that collides with one of our keys is kept.
SHADOW_KEY = "remy_shadowed"

#: Metadata keys this package writes; every other key is the chunk's own metadata.
RESERVED_KEYS = frozenset(
    {
        "citation",
        "source",
        "title",
        "document_id",
        "chunk_index",
        "heading_path",
        "score",
        "retrieval_rank",
        "retrieval_score",
        "relevance_score",
        "explain",
        "neighbors",
        "matches",
        SHADOW_KEY,
    }
)

_OPTIONAL_WIRE_KEYS = ("explain", "neighbors", "matches")


def hit_to_document(hit: SearchHit) -> Document:
    """One :class:`SearchHit` as a LangChain :class:`Document` (see the module docstring)."""
    if not isinstance(hit, SearchHit):
        msg = f"hit_to_document takes a remy SearchHit, got {type(hit).__name__} {hit!r:.80}"
        raise InvalidInputError(msg)
    wire = hit.to_dict()
    citation = hit.citation
    metadata: dict[str, Any] = {k: v for k, v in hit.metadata.items() if k not in RESERVED_KEYS}
    metadata.update(
        citation=wire["citation"],
        source=citation.source,
        title=citation.title,
        document_id=citation.document_id,
        chunk_index=citation.chunk_index,
        heading_path=list(citation.heading_path),
        score=hit.score,
        retrieval_rank=hit.retrieval_rank,
        retrieval_score=hit.retrieval_score,
    )
    for key in _OPTIONAL_WIRE_KEYS:
        if key in wire:
            metadata[key] = wire[key]
    shadowed = {k: v for k, v in hit.metadata.items() if k in RESERVED_KEYS}
    if shadowed:
        metadata[SHADOW_KEY] = shadowed
    return Document(id=hit.id, page_content=hit.text, metadata=metadata)


def hits_to_documents(hits: Iterable[SearchHit]) -> list[Document]:
    """Convert search hits to Documents, keeping their order."""
    return [hit_to_document(hit) for hit in hits]


def document_to_hit(document: Document) -> SearchHit:
    """The :class:`SearchHit` a Document was made from (the inverse of
    :func:`hit_to_document`).

    Works on any Document that carries ``metadata["citation"]`` and ``metadata["score"]``,
    including ones rescored by :class:`~langchain_remy.RemyReranker`. Raises
    :class:`~remy_retriever.InvalidInputError` for a Document from another retriever.
    """
    if not isinstance(document, Document):
        msg = f"document_to_hit takes a LangChain Document, got {type(document).__name__}"
        raise InvalidInputError(msg)
    meta = document.metadata
    citation = meta.get("citation")
    if not isinstance(citation, Mapping) or "score" not in meta:
        msg = (
            f"Document {document.id!r} has no remy citation/score in its metadata "
            f"(keys: {sorted(meta)[:12]}); document_to_hit converts only Documents made by "
            "RemyRetriever or hits_to_documents"
        )
        raise InvalidInputError(msg)
    chunk_id = document.id or f"{citation['documentId']}#{citation['chunkIndex']}"
    wire: dict[str, Any] = {
        "id": chunk_id,
        "score": meta["score"],
        "text": document.page_content,
        "citation": citation,
    }
    if meta.get("retrieval_rank") is not None:
        wire["retrievalRank"] = meta["retrieval_rank"]
    if meta.get("retrieval_score") is not None:
        wire["retrievalScore"] = meta["retrieval_score"]
    for key in _OPTIONAL_WIRE_KEYS:
        if meta.get(key) is not None:
            wire[key] = meta[key]
    user = {k: v for k, v in meta.items() if k not in RESERVED_KEYS}
    user.update(meta.get(SHADOW_KEY) or {})
    wire["metadata"] = user
    return SearchHit.from_dict(wire)

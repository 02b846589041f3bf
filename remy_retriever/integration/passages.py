"""Flatten document- and memory-search responses into passages: one text with its score
and flat metadata each, the common form the LangChain and LlamaIndex adapters convert.

Both functions take our response objects or raw JSON from any implementation of the spec
(a dict, or a JSON string/bytes). Metadata keys (snake_case):

- every passage: ``kind`` (``"chunk"`` for document text, ``"memory"`` for a memory),
  ``score`` (0-1), ``source`` (the document id, or the memory id) and ``updated_at``;
- document-search chunks: ``document_id``, ``title``, ``type``, ``document_score``,
  ``is_relevant``, ``chunk_position`` / ``chunk_total`` (place in the result's chunk
  list), ``created_at``, and ``summary`` when the response has one;
- memory results: ``id``, ``similarity``, ``version``, ``root_memory_id``, ``context``
  (the wire form: ``parents``/``children`` with ``relation``, relative ``version``...)
  and ``documents`` (wire form) when present, ``document_ids``;
- chunk results (hybrid mode): the same, plus ``document_id``, ``title`` and ``type`` of
  the chunk's first document;
- then the item's own metadata. A user key that collides with one of ours is kept under
  ``remy_shadowed`` (the ``remy_`` prefix is reserved, so that name never collides).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from ..schema.records import document_id_of
from ..supermemory.responses import (
    ChunkResult,
    DocumentSearchResponse,
    MemoryResult,
    MemorySearchResponse,
)
from .flatten import SHADOW_KEY

__all__ = ["Passage", "document_passages", "memory_passages"]


@dataclass(frozen=True)
class Passage:
    """One text to hand to a framework: id, text, 0-1 score and flat metadata."""

    id: str
    text: str
    score: float
    metadata: Mapping[str, Any] = field(default_factory=dict)


def document_passages(response: object) -> list[Passage]:
    """One passage per chunk of each document result, in response order."""
    parsed = DocumentSearchResponse.parse(response)
    out = []
    for result in parsed.results:
        total = len(result.chunks)
        for position, chunk in enumerate(result.chunks):
            ours: dict[str, Any] = {
                "kind": "chunk",
                "source": result.document_id,
                "document_id": result.document_id,
                "title": result.title,
                "type": result.type,
                "score": chunk.score,
                "document_score": result.score,
                "is_relevant": chunk.is_relevant,
                "chunk_position": position,
                "chunk_total": total,
                "created_at": result.created_at,
                "updated_at": result.updated_at,
            }
            if result.summary is not None:
                ours["summary"] = result.summary
            _add_page(ours, chunk.page, chunk.page_end)
            out.append(
                Passage(
                    id=f"{result.document_id}::chunk-{position}",
                    text=chunk.content,
                    score=float(chunk.score),
                    metadata=_merge(ours, result.metadata),
                )
            )
    return out


def memory_passages(response: object) -> list[Passage]:
    """One passage per memory or chunk result, in response order."""
    parsed = MemorySearchResponse.parse(response)
    out = []
    for result in parsed.results:
        ours: dict[str, Any] = {
            "kind": result.kind,
            "id": result.id,
            "source": result.id,
            "score": result.similarity,
            "similarity": result.similarity,
            "version": result.version,
            "root_memory_id": result.root_memory_id,
            "updated_at": result.updated_at,
        }
        if result.context is not None:
            ours["context"] = result.context.to_dict()
        if result.documents is not None:
            ours["documents"] = [d.to_dict() for d in result.documents]
            ours["document_ids"] = [d.id for d in result.documents]
        if isinstance(result, ChunkResult):
            text = result.chunk
            first = result.documents[0] if result.documents else None
            document_id = first.id if first is not None else document_id_of(result.id)
            ours.update(
                source=document_id,
                document_id=document_id,
                title=None if first is None else first.title,
                type=None if first is None else first.type,
            )
            _add_page(ours, result.page, result.page_end)
        else:
            assert isinstance(result, MemoryResult)
            text = result.memory
        out.append(
            Passage(
                id=result.id,
                text=text,
                score=float(result.similarity),
                metadata=_merge(ours, result.metadata),
            )
        )
    return out


def _add_page(ours: dict[str, Any], page: int | None, page_end: int | None) -> None:
    """Paged documents (PDFs): the chunk's page, and its last page when it runs on."""
    if page is not None:
        ours["page"] = page
    if page_end is not None:
        ours["page_end"] = page_end


def _merge(ours: dict[str, Any], user: Mapping[str, Any] | None) -> dict[str, Any]:
    user = user or {}
    merged = {k: v for k, v in user.items() if k not in ours and k != SHADOW_KEY}
    merged.update(ours)
    shadowed = {k: v for k, v in user.items() if k in ours or k == SHADOW_KEY}
    if shadowed:
        merged[SHADOW_KEY] = shadowed
    return merged

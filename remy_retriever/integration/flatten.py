"""A :class:`~remy_retriever.SearchHit` as one flat metadata mapping, and back.

Framework objects (LangChain ``Document``, LlamaIndex ``TextNode``) carry text plus a
flat metadata dict, so the adapters store a hit there in one shared layout:

- ``citation``: the full citation in its camelCase wire form;
- flat copies for convenience: ``source`` (url, else path, else document id), ``title``,
  ``document_id``, ``chunk_index``, ``heading_path`` (a list of headings), ``page`` and
  ``page_end`` (1-based; ``None`` without pages, ``page_end`` ``None`` for a chunk on one
  page);
- ``score``, ``retrieval_rank`` and ``retrieval_score`` (the last two ``None`` when no
  reranking happened);
- ``explain``, ``neighbors`` and ``matches`` (wire form) only when the search asked for
  them;
- the chunk's own metadata. A user key that collides with one of the keys above is kept
  under :data:`SHADOW_KEY` (the ``remy_`` prefix is reserved, so it never collides) and
  restored by :func:`hit_from_metadata`.

One layout for both adapters keeps their round trips identical; the framework-specific
parts (ids, relationships, which keys an LLM sees) stay in the adapters.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from ..errors import InvalidInputError
from ..schema.hits import SearchHit
from ..schema.records import chunk_id as make_chunk_id

__all__ = ["FLAT_KEYS", "SHADOW_KEY", "hit_from_metadata", "hit_to_metadata"]

#: Where user metadata that collides with one of our keys is kept.
SHADOW_KEY = "remy_shadowed"

#: The keys :func:`hit_to_metadata` writes; every other key is the chunk's own metadata.
FLAT_KEYS = frozenset(
    {
        "citation",
        "source",
        "title",
        "document_id",
        "chunk_index",
        "heading_path",
        "page",
        "page_end",
        "score",
        "retrieval_rank",
        "retrieval_score",
        "explain",
        "neighbors",
        "matches",
        SHADOW_KEY,
    }
)

_OPTIONAL_WIRE_KEYS = ("explain", "neighbors", "matches")


def hit_to_metadata(hit: SearchHit, *, reserved: Iterable[str] = FLAT_KEYS) -> dict[str, Any]:
    """The hit's flat metadata (see the module docstring). ``reserved``: every key the
    caller owns (at least :data:`FLAT_KEYS`); user keys among them are shadowed."""
    if not isinstance(hit, SearchHit):
        msg = f"expected a remy SearchHit, got {type(hit).__name__} {hit!r:.80}"
        raise InvalidInputError(msg)
    owned = frozenset(reserved) | FLAT_KEYS
    wire = hit.to_dict()
    citation = hit.citation
    metadata: dict[str, Any] = {k: v for k, v in hit.metadata.items() if k not in owned}
    metadata.update(
        citation=wire["citation"],
        source=citation.source,
        title=citation.title,
        document_id=citation.document_id,
        chunk_index=citation.chunk_index,
        heading_path=list(citation.heading_path),
        page=citation.page,
        page_end=citation.page_end,
        score=hit.score,
        retrieval_rank=hit.retrieval_rank,
        retrieval_score=hit.retrieval_score,
    )
    for key in _OPTIONAL_WIRE_KEYS:
        if key in wire:
            metadata[key] = wire[key]
    shadowed = {k: v for k, v in hit.metadata.items() if k in owned}
    if shadowed:
        metadata[SHADOW_KEY] = shadowed
    return metadata


def hit_from_metadata(
    chunk_id: str | None,
    text: str,
    metadata: Mapping[str, Any],
    *,
    score: float | None = None,
    reserved: Iterable[str] = FLAT_KEYS,
    what: str = "object",
) -> SearchHit:
    """The :class:`SearchHit` that :func:`hit_to_metadata` flattened (its inverse).

    ``score`` overrides ``metadata["score"]`` (an object rescored after retrieval).
    ``what`` names the object in the error raised when the metadata carries no remy
    citation and score."""
    citation = metadata.get("citation")
    if score is None:
        score = metadata.get("score")
    if not isinstance(citation, Mapping) or score is None:
        msg = (
            f"{what} has no remy citation/score in its metadata (keys: "
            f"{sorted(metadata)[:12]}); only results of remy-retriever convert back to hits"
        )
        raise InvalidInputError(msg)
    wire: dict[str, Any] = {
        "id": chunk_id
        or make_chunk_id(str(citation.get("documentId")), int(citation.get("chunkIndex", 0))),
        "score": score,
        "text": text,
        "citation": citation,
    }
    if metadata.get("retrieval_rank") is not None:
        wire["retrievalRank"] = metadata["retrieval_rank"]
    if metadata.get("retrieval_score") is not None:
        wire["retrievalScore"] = metadata["retrieval_score"]
    for key in _OPTIONAL_WIRE_KEYS:
        if metadata.get(key) is not None:
            wire[key] = metadata[key]
    owned = frozenset(reserved) | FLAT_KEYS
    user = {k: v for k, v in metadata.items() if k not in owned}
    user.update(metadata.get(SHADOW_KEY) or {})
    wire["metadata"] = user
    return SearchHit.from_dict(wire)

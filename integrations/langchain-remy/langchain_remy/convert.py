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

from collections.abc import Iterable
from typing import Any

from langchain_core.documents import Document

from remy_retriever import InvalidInputError, SearchHit
from remy_retriever.flatten import FLAT_KEYS, SHADOW_KEY, hit_from_metadata, hit_to_metadata

__all__ = ["RESERVED_KEYS", "SHADOW_KEY", "document_to_hit", "hit_to_document", "hits_to_documents"]

#: Metadata keys this package writes (the core's flat layout, plus the reranker's
#: ``relevance_score``); every other key is the chunk's own metadata.
RESERVED_KEYS = FLAT_KEYS | {"relevance_score"}


def hit_to_document(hit: SearchHit) -> Document:
    """One :class:`SearchHit` as a LangChain :class:`Document` (see the module docstring)."""
    if not isinstance(hit, SearchHit):
        msg = f"hit_to_document takes a remy SearchHit, got {type(hit).__name__} {hit!r:.80}"
        raise InvalidInputError(msg)
    metadata = hit_to_metadata(hit, reserved=RESERVED_KEYS)
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
    meta: dict[str, Any] = dict(document.metadata)
    return hit_from_metadata(
        document.id,
        document.page_content,
        meta,
        reserved=RESERVED_KEYS,
        what=f"Document {document.id!r} (document_to_hit converts only Documents made by "
        "RemyRetriever or hits_to_documents)",
    )

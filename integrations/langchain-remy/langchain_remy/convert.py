"""Lossless conversion between remy :class:`~remy_retriever.SearchHit` objects and LangChain
:class:`~langchain_core.documents.Document` objects.

A Document made from a hit has ``id`` = the chunk id, ``page_content`` = the hit's text
and the hit's flat metadata, in the layout both adapters share
(:func:`remy_retriever.integration.hit_to_metadata`): ``citation`` (wire form), the flat
copies ``source``, ``title``, ``document_id``, ``chunk_index``, ``heading_path``, ``page``
and ``page_end`` (1-based, ``None`` without pages; ``page_end`` only for a chunk that runs
onto a later page), the scores ``score`` / ``retrieval_rank`` / ``retrieval_score`` (the
last two ``None`` when no reranking happened), ``explain`` / ``neighbors`` / ``matches``
when the search asked for them, then the chunk's own metadata. A user key that collides
with one of ours is kept under ``remy_shadowed`` and restored by :func:`document_to_hit`.
"""

from __future__ import annotations

from collections.abc import Iterable

from langchain_core.documents import Document

from remy_retriever import InvalidInputError, SearchHit
from remy_retriever.integration import FLAT_KEYS, SHADOW_KEY, hit_from_metadata, hit_to_metadata

__all__ = ["RESERVED_KEYS", "SHADOW_KEY", "document_to_hit", "hit_to_document", "hits_to_documents"]

#: Metadata keys this package writes (the shared flat layout, plus the reranker's
#: ``relevance_score``); every other key is the chunk's own metadata.
RESERVED_KEYS = FLAT_KEYS | {"relevance_score"}


def hit_to_document(hit: SearchHit) -> Document:
    """One :class:`SearchHit` as a LangChain :class:`Document` (see the module docstring)."""
    metadata = hit_to_metadata(hit, reserved=RESERVED_KEYS)
    return Document(id=hit.id, page_content=hit.text, metadata=metadata)


def hits_to_documents(hits: Iterable[SearchHit]) -> list[Document]:
    """Convert search hits to Documents, keeping their order."""
    return [hit_to_document(hit) for hit in hits]


def document_to_hit(document: Document) -> SearchHit:
    """The :class:`SearchHit` a Document was made from (the inverse of
    :func:`hit_to_document`), also after :class:`~langchain_remy.RemyReranker` rescored
    it. Raises :class:`~remy_retriever.InvalidInputError` for a Document from another
    retriever."""
    if not isinstance(document, Document):
        msg = f"document_to_hit takes a LangChain Document, got {type(document).__name__}"
        raise InvalidInputError(msg)
    return hit_from_metadata(
        document.id,
        document.page_content,
        document.metadata,
        reserved=RESERVED_KEYS,
        what=f"Document {document.id!r} (document_to_hit converts only Documents made by "
        "RemyRetriever or hits_to_documents)",
    )

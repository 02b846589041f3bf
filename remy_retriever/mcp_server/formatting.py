"""Hits as numbered, cited passages: the text a model reads from the ``search`` tool.

The format is the LangChain tool's (``langchain_remy.format_documents``), so an agent sees
the same thing whichever door it comes through::

    [1] Installing Remy > Install on Linux (examples/corpus/install.md)
    On Debian and Ubuntu the command-line tool is packaged...

The label is :meth:`remy_retriever.Citation.label`, the one citation format of every
door: the title, then the heading path (its first heading is skipped when it repeats the
title), then in brackets the source (url, else path, else document id) and the pages of
a paged document (``p. 3``, ``pp. 3-4``). The passage is the hit's text
without the heading-path line remy prefixes to every chunk.
"""

from __future__ import annotations

from collections.abc import Sequence
from urllib.parse import quote, unquote

from ..schema.hits import SearchHit, pages_label
from ..schema.hits import passage_text as _passage_text
from ..supermemory.responses import DocumentSearchResponse, MemoryResult, MemorySearchResponse

__all__ = [
    "DOCUMENT_URI_TEMPLATE",
    "NO_RESULTS",
    "citation_label",
    "document_id_from_uri",
    "document_uri",
    "format_documents",
    "format_hits",
    "format_memories",
    "passage_text",
]

NO_RESULTS = "No passages found for this query."
#: Documents are resources at ``remy://documents/{id}``.
DOCUMENT_URI_PREFIX = "remy://documents/"
DOCUMENT_URI_TEMPLATE = DOCUMENT_URI_PREFIX + "{id}"


def citation_label(hit: SearchHit) -> str:
    """``"title > heading > ... (source, p. 3)"`` for one hit (:meth:`Citation.label`)."""
    return hit.citation.label()


def passage_text(hit: SearchHit) -> str:
    """The hit's text without the heading-path line remy prefixes to chunk text."""
    return _passage_text(hit.text, hit.citation.heading_path)


def format_hits(hits: Sequence[SearchHit]) -> str:
    """The hits as ``[n] label\\npassage`` blocks, 1-based, separated by blank lines
    (:data:`NO_RESULTS` for none): an answer citing ``[2]`` refers to ``hits[1]``."""
    if not hits:
        return NO_RESULTS
    return "\n\n".join(
        f"[{number}] {citation_label(hit)}\n{passage_text(hit)}"
        for number, hit in enumerate(hits, start=1)
    )


def format_documents(response: DocumentSearchResponse) -> str:
    """Document-search results as numbered documents, each with its relevant chunks
    (pages when known) and the URI to read the whole document."""
    if not response.results:
        return "No documents found for this query."
    blocks = []
    for number, result in enumerate(response.results, start=1):
        title = result.title or result.document_id
        lines = [
            f"[{number}] {title} (document {result.document_id}, score {result.score:.2f}, "
            f"{document_uri(result.document_id)})"
        ]
        for chunk in result.chunks:
            if not chunk.is_relevant:
                continue
            label = pages_label(chunk.page, chunk.page_end)
            body = chunk.content.split("\n\n", 1)[-1]
            lines.append(f"- {label + ': ' if label else ''}{body}")
        blocks.append("\n".join(lines))
    return "\n\n".join(blocks)


def format_memories(response: MemorySearchResponse) -> str:
    """Memory-search results as numbered memories (id, version, content) and passages."""
    if not response.results:
        return "No memories found for this query."
    lines = []
    for number, result in enumerate(response.results, start=1):
        if isinstance(result, MemoryResult):
            lines.append(
                f"[{number}] memory {result.id} (version {result.version}, similarity "
                f"{result.similarity:.2f}): {result.memory}"
            )
            context = result.context
            for parent in [] if context is None else context.parents:
                lines.append(f"    earlier ({parent.relation}): {parent.memory}")
        else:
            doc = result.documents[0] if result.documents else None
            source = (doc.title or doc.id) if doc is not None else result.id
            lines.append(
                f"[{number}] passage from {source} (similarity {result.similarity:.2f}): "
                f"{result.chunk}"
            )
    return "\n".join(lines)


def document_uri(document_id: str) -> str:
    """``remy://documents/{id}``, the id percent-encoded (a path's ``/`` included)."""
    return DOCUMENT_URI_PREFIX + quote(document_id, safe="")


def document_id_from_uri(uri: str) -> str | None:
    """The document id in a ``remy://documents/{id}`` URI, else ``None``."""
    if not uri.startswith(DOCUMENT_URI_PREFIX) or len(uri) == len(DOCUMENT_URI_PREFIX):
        return None
    return unquote(uri[len(DOCUMENT_URI_PREFIX) :])

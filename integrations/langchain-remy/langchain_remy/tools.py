"""Agent tools: :func:`remy_search_tool` and the citation formatter it uses,
:func:`format_documents`.

``langchain_core.tools.create_retriever_tool`` also works with
:class:`~langchain_remy.RemyRetriever`; :func:`remy_search_tool` differs in that its
message numbers the passages with their citations and its artifact carries the hits in
their JSON wire form, ready to show as sources.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from langchain_core.callbacks import Callbacks
from langchain_core.documents import Document
from langchain_core.tools import StructuredTool
from pydantic import BaseModel, Field

from remy_retriever import Citation, InvalidInputError, Retriever

from .convert import document_to_hit
from .retrievers import RemyRetriever

__all__ = ["DEFAULT_DESCRIPTION", "format_documents", "remy_search_tool"]

DEFAULT_DESCRIPTION = (
    "Search the knowledge base for passages relevant to a natural-language query. "
    "Returns numbered passages, each with its citation (title, section and source). "
    "Cite passages by their number."
)
NO_RESULTS = "No passages found for this query."


class SearchInput(BaseModel):
    """Arguments of the remy search tool."""

    query: str = Field(description="what to search for, in natural language or keywords")


def citation_label(document: Document) -> str:
    """``"title > heading > ... (source)"`` for a Document made by RemyRetriever, with the
    pages of a paged document: ``"(source, p. 3)"``: :meth:`remy_retriever.Citation.label`
    of the Document's citation (its flat ``title``, ``heading_path`` and ``source``, so a
    Document whose metadata was edited renders as edited)."""
    meta = document.metadata
    page, page_end = _pages(meta.get("citation"))
    source = meta.get("source")
    citation = Citation(
        document_id=str(meta.get("document_id") or document.id or "untitled"),
        chunk_index=0,
        start=0,
        end=0,
        heading_path=tuple(str(h) for h in meta.get("heading_path") or ()),
        title=str(meta["title"]) if meta.get("title") else None,
        path=str(source) if source else None,
        page=page,
        page_end=page_end,
    )
    return citation.label()


def _pages(citation: object) -> tuple[int | None, int | None]:
    """The page and last page of a citation in wire form (``None`` without)."""
    if not isinstance(citation, dict):
        return None, None
    try:
        parsed = Citation.from_dict(citation)
    except (KeyError, TypeError, ValueError):  # edited by hand: render it without pages
        return None, None
    return parsed.page, parsed.page_end


def passage_text(document: Document) -> str:
    """The passage without the heading-path line that remy prefixes to chunk text."""
    text = document.page_content
    headings = document.metadata.get("heading_path") or ()
    prefix = " > ".join(str(h) for h in headings) + "\n\n"
    if headings and text.startswith(prefix):
        return text[len(prefix) :]
    return text


def format_documents(documents: Sequence[Document], *, separator: str = "\n\n") -> str:
    """Render Documents as numbered, cited passages for a prompt or a tool message::

        [1] Installing Remy > Install on Linux (examples/corpus/install.md)
        On Debian and Ubuntu the command-line tool is packaged...

    The numbers are 1-based positions in ``documents``, so an answer citing ``[2]``
    refers to ``documents[1]``.
    """
    return separator.join(
        f"[{number}] {citation_label(doc)}\n{passage_text(doc)}"
        for number, doc in enumerate(documents, start=1)
    )


def remy_search_tool(
    retriever: RemyRetriever | Retriever,
    *,
    name: str = "remy_search",
    description: str = DEFAULT_DESCRIPTION,
) -> StructuredTool:
    """A tool that searches with ``retriever`` and answers with cited passages.

    The tool takes one argument, ``query``, and has ``response_format=
    "content_and_artifact"``: invoked with a tool call it returns a ``ToolMessage``
    whose content is :func:`format_documents` of the results (``"[1] title > heading
    (source)\\ntext"``) and whose ``artifact`` is the list of hits in their wire form
    (``SearchHit.to_dict()``). The search options (``k``, ``where``, ``mode``...) are
    the retriever's: the model only chooses the query, so it cannot widen a tenant
    filter. A plain :class:`~remy_retriever.Retriever` is wrapped in a
    :class:`RemyRetriever` with its defaults.
    """
    if isinstance(retriever, Retriever):
        retriever = RemyRetriever(retriever)
    if not isinstance(retriever, RemyRetriever):
        msg = (
            f"remy_search_tool takes a RemyRetriever or a remy Retriever, got "
            f"{type(retriever).__name__}; for other retrievers use "
            "langchain_core.tools.create_retriever_tool"
        )
        raise InvalidInputError(msg)
    bound: RemyRetriever = retriever

    def _respond(documents: list[Document]) -> tuple[str, list[dict[str, Any]]]:
        artifact = [document_to_hit(doc).to_dict() for doc in documents]
        return (format_documents(documents) if documents else NO_RESULTS), artifact

    def search(query: str, callbacks: Callbacks = None) -> tuple[str, list[dict[str, Any]]]:
        return _respond(bound.invoke(query, config={"callbacks": callbacks}))

    async def asearch(query: str, callbacks: Callbacks = None) -> tuple[str, list[dict[str, Any]]]:
        return _respond(await bound.ainvoke(query, config={"callbacks": callbacks}))

    return StructuredTool.from_function(
        func=search,
        coroutine=asearch,
        name=name,
        description=description,
        args_schema=SearchInput,
        response_format="content_and_artifact",
    )

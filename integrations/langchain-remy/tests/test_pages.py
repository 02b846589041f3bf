"""Page citations through the LangChain adapter: a paged document's chunks carry ``page`` and
``page_end`` flat in ``Document.metadata`` and in the tool's citations, and round-trip."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from langchain_core.messages import ToolMessage
from langchain_remy import RemyRetriever, document_to_hit, format_documents, remy_search_tool

from remy_retriever import Document, Retriever, SearchHit, SentenceTransformerEmbedder

PAGE_TEXTS = (
    "Apples grow on trees in orchards across the valley.",
    "Bridges cross rivers and connect towns together.",
    "The zebracorn migration happens only in late autumn.",
)


@pytest.fixture(scope="module")
def paged(
    tmp_path_factory: pytest.TempPathFactory, embedder: SentenceTransformerEmbedder
) -> Iterator[Retriever]:
    """A three-page document, one section per page, and one paragraph across pages 3-4."""
    parts = [f"# Page {n}\n\n{' '.join([text] * 12)}\n\n" for n, text in enumerate(PAGE_TEXTS, 1)]
    starts = [sum(len(p) for p in parts[:i]) for i in range(len(parts))]
    spanning = "# Quokkaleaf\n\nThe quokkaleaf note starts on one page and ends on the next."
    text = "".join(parts) + spanning
    pages = (*starts, len(text) - 10)  # page 4 starts inside the quokkaleaf paragraph
    root = tmp_path_factory.mktemp("lc-pages")
    with Retriever(root, collection="paged", embedder=embedder, max_tokens=64) as retriever:
        retriever.add(
            [
                Document(id="book.pdf", text=text, path="docs/book.pdf", pages=pages),
                Document(id="plain", text="# Plain\n\nA wombat note without pages."),
            ]
        )
        yield retriever


def _call(query: str) -> dict[str, Any]:
    return {"name": "remy_search", "args": {"query": query}, "id": "c1", "type": "tool_call"}


def test_documents_carry_the_page(paged: Retriever) -> None:
    docs = RemyRetriever(paged, k=2, mode="lexical").invoke("zebracorn migration autumn")
    top = docs[0]
    assert "zebracorn migration" in top.page_content
    assert (top.metadata["page"], top.metadata["page_end"]) == (3, None)
    assert top.metadata["citation"]["page"] == 3
    assert document_to_hit(top) == paged.search("zebracorn migration autumn", mode="lexical")[0]
    [plain] = RemyRetriever(paged, k=1, mode="lexical").invoke("wombat")
    assert (plain.metadata["page"], plain.metadata["page_end"]) == (None, None)

    [span] = RemyRetriever(paged, k=1, mode="lexical").invoke("quokkaleaf")
    assert (span.metadata["page"], span.metadata["page_end"]) == (3, 4)
    assert document_to_hit(span).citation.page_end == 4


def test_the_tool_cites_the_page(paged: Retriever) -> None:
    retriever = RemyRetriever(paged, k=1, mode="lexical")
    docs = retriever.invoke("zebracorn migration autumn") + retriever.invoke("wombat")
    rendered = format_documents(docs)
    assert "[1] Page 3 (docs/book.pdf, p. 3)\n" in rendered
    assert "[2] Plain (plain)\n" in rendered  # no pages: as before

    message = remy_search_tool(RemyRetriever(paged, k=1, mode="lexical")).invoke(
        _call("quokkaleaf")
    )
    assert isinstance(message, ToolMessage)
    assert str(message.content).startswith("[1] Quokkaleaf (docs/book.pdf, pp. 3-4)\n")
    [hit] = [SearchHit.from_dict(item) for item in message.artifact]
    assert (hit.citation.page, hit.citation.page_end) == (3, 4)

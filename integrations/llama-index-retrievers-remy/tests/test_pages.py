"""Page citations through the LlamaIndex adapter: a paged document's nodes carry ``page`` and
``page_end`` flat in their metadata, the LLM sees the page, and nodes round-trip."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from llama_index.core.schema import MetadataMode
from llama_index.retrievers.remy import RemyRetriever, node_to_hit

from remy_retriever import Document, Retriever, SentenceTransformerEmbedder

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
    root = tmp_path_factory.mktemp("li-pages")
    with Retriever(root, collection="paged", embedder=embedder, max_tokens=64) as retriever:
        retriever.add(
            [
                Document(id="book.pdf", text=text, path="docs/book.pdf", pages=pages),
                Document(id="plain", text="# Plain\n\nA wombat note without pages."),
            ]
        )
        yield retriever


def test_nodes_carry_the_page(paged: Retriever) -> None:
    results = RemyRetriever(paged, similarity_top_k=2, mode="lexical").retrieve(
        "zebracorn migration autumn"
    )
    top = results[0]
    meta = top.node.metadata
    assert "zebracorn migration" in top.node.get_content()
    assert (meta["page"], meta["page_end"]) == (3, None)
    assert meta["citation"]["page"] == 3
    assert node_to_hit(top) == paged.search("zebracorn migration autumn", mode="lexical")[0]
    llm_view = top.node.get_content(metadata_mode=MetadataMode.LLM)
    assert "page: 3" in llm_view and "page_end" not in llm_view

    [plain] = RemyRetriever(paged, similarity_top_k=1, mode="lexical").retrieve("wombat")
    assert (plain.node.metadata["page"], plain.node.metadata["page_end"]) == (None, None)
    assert "page:" not in plain.node.get_content(metadata_mode=MetadataMode.LLM)
    assert node_to_hit(plain).citation.page is None

    [span] = RemyRetriever(paged, similarity_top_k=1, mode="lexical").retrieve("quokkaleaf")
    assert (span.node.metadata["page"], span.node.metadata["page_end"]) == (3, 4)
    assert "page_end: 4" in span.node.get_content(metadata_mode=MetadataMode.EMBED)
    assert node_to_hit(span).citation.page_end == 4

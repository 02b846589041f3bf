"""Citations of pieces added through RemyVectorStore: each splitter piece is stored as
its own document, yet its citation gives the piece's offsets in the source file and the
section a Markdown splitter recorded, not ``start: 0`` and an empty heading path."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from langchain_core.documents import Document
from langchain_remy import RemyVectorStore
from langchain_text_splitters import (
    MarkdownHeaderTextSplitter,
    RecursiveCharacterTextSplitter,
)

from remy_retriever import Retriever, SentenceTransformerEmbedder

SOURCE = "guide.md"
TEXT = (
    "Remy keeps a hybrid index of your notes. " * 6
    + "\n\n"
    + "Penguins huddle together through the antarctic winter to stay warm. " * 3
    + "\n\n"
    + "The lexical branch ranks passages with BM25 over a tantivy index. " * 4
)


@pytest.fixture
def store(tmp_path: Path, embedder: SentenceTransformerEmbedder) -> Iterator[RemyVectorStore]:
    with Retriever(tmp_path, collection="lc-cite", embedder=embedder) as engine:
        yield RemyVectorStore(engine)


def test_a_split_piece_is_cited_at_its_offset_in_the_file(store: RemyVectorStore) -> None:
    splitter = RecursiveCharacterTextSplitter(chunk_size=220, chunk_overlap=0, add_start_index=True)
    pieces = splitter.split_documents([Document(page_content=TEXT, metadata={"source": SOURCE})])
    penguin = next(p for p in pieces if "Penguins" in p.page_content)
    assert penguin.metadata["start_index"] > 0
    store.add_documents(pieces)

    hits = store.retriever.search("penguins antarctic winter", mode="lexical", k=1)

    citation = hits[0].citation
    assert "Penguins" in hits[0].text
    assert citation.start == penguin.metadata["start_index"]
    assert TEXT[citation.start : citation.end] == penguin.page_content.strip()
    retrieved = store.as_retriever(search_kwargs={"k": 1, "mode": "lexical"}).invoke("penguins")
    assert retrieved[0].metadata["citation"]["start"] == penguin.metadata["start_index"]


def test_markdown_header_metadata_becomes_the_heading_path(store: RemyVectorStore) -> None:
    markdown = "# Guide\n\n## Wildlife\n\n" + TEXT
    sections = MarkdownHeaderTextSplitter([("#", "Header 1"), ("##", "Header 2")]).split_text(
        markdown
    )
    splitter = RecursiveCharacterTextSplitter(chunk_size=220, chunk_overlap=0, add_start_index=True)
    for section in sections:
        section.metadata["source"] = SOURCE
    store.add_documents(splitter.split_documents(sections))

    hits = store.retriever.search("penguins antarctic winter", mode="lexical", k=1)

    assert hits[0].citation.heading_path == ("Guide", "Wildlife")

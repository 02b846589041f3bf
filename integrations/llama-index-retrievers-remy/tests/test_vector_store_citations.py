"""Citations of nodes inserted through RemyVectorStore: each SentenceSplitter node is
stored as its own document, yet its citation gives the node's offsets in the source
document (its ``start_char_idx``) and the section MarkdownNodeParser recorded, not
``start: 0`` and the file name as the heading path."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from llama_index.core import StorageContext, VectorStoreIndex
from llama_index.core.node_parser import MarkdownNodeParser, SentenceSplitter
from llama_index.core.schema import Document as LIDocument
from llama_index.core.vector_stores.types import VectorStoreQuery, VectorStoreQueryMode
from llama_index.vector_stores.remy import NoEmbedding, RemyVectorStore

from remy_retriever import Retriever

TEXT = (
    "Remy keeps a hybrid index of your notes. " * 6
    + "\n\n"
    + "Penguins huddle together through the antarctic winter to stay warm. " * 3
    + "\n\n"
    + "The lexical branch ranks passages with BM25 over a tantivy index. " * 4
)


@pytest.fixture
def store(tmp_path: Path, embedder: Any) -> Iterator[RemyVectorStore]:
    with Retriever(tmp_path / "store", collection="li-cite", embedder=embedder) as engine:
        yield RemyVectorStore(engine)


def _query(store: RemyVectorStore, text: str) -> Any:
    query = VectorStoreQuery(query_str=text, similarity_top_k=1, mode=VectorStoreQueryMode.SPARSE)
    return store.query(query).nodes[0]


def test_a_split_node_is_cited_at_its_offset_in_the_document(store: RemyVectorStore) -> None:
    source = LIDocument(text=TEXT, metadata={"file_name": "guide.md"})
    nodes = SentenceSplitter(chunk_size=60, chunk_overlap=0).get_nodes_from_documents([source])
    penguin = next(n for n in nodes if "Penguins" in n.get_content())
    assert penguin.start_char_idx
    VectorStoreIndex(
        nodes,
        storage_context=StorageContext.from_defaults(vector_store=store),
        embed_model=NoEmbedding(),
    )

    hits = store.client.search("penguins antarctic winter", mode="lexical", k=1)
    node = _query(store, "penguins antarctic winter")

    assert hits[0].citation.start == penguin.start_char_idx
    assert TEXT[hits[0].citation.start : hits[0].citation.end] == penguin.get_content().strip()
    assert node.start_char_idx == penguin.start_char_idx


def test_markdown_node_parser_sections_become_the_heading_path(store: RemyVectorStore) -> None:
    markdown = "# Guide\n\nIntro text.\n\n## Wildlife\n\n" + TEXT
    source = LIDocument(text=markdown, metadata={"file_name": "guide.md"})
    store.add(MarkdownNodeParser().get_nodes_from_documents([source]))

    hits = store.client.search("penguins antarctic winter", mode="lexical", k=1)

    assert hits[0].citation.heading_path[-2:] == ("Guide", "Wildlife")

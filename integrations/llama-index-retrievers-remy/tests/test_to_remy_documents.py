"""to_remy_documents: LlamaIndex loader output into remy, idempotently and cited by file."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from llama_index.core import SimpleDirectoryReader
from llama_index.core.node_parser import SentenceSplitter
from llama_index.core.schema import Document as LIDocument
from llama_index.core.schema import TextNode
from llama_index.vector_stores.remy import from_remy_metadata, to_remy_documents

from remy_retriever import InvalidDocumentError, Retriever

from .conftest import CORPUS_DIR, INSTALL_QUERY


def test_simple_directory_reader_twice_does_not_duplicate(tmp_path: Path, embedder: Any) -> None:
    with Retriever(tmp_path / "s", collection="reader", embedder=embedder) as engine:
        first = SimpleDirectoryReader(str(CORPUS_DIR)).load_data()
        engine.add(to_remy_documents(first))
        count = engine.count()
        assert count > len(first)
        second = SimpleDirectoryReader(str(CORPUS_DIR)).load_data()
        assert {d.doc_id for d in first}.isdisjoint(d.doc_id for d in second)  # random ids
        engine.add(to_remy_documents(second))
        assert engine.count() == count
        assert len(engine.document_ids()) == len(first)
        top = engine.search(INSTALL_QUERY, k=1)[0]
        assert top.citation.path is not None and top.citation.path.endswith("install.md")
        assert top.citation.title == "install.md"


def test_split_nodes_twice_keep_their_count(tmp_path: Path, embedder: Any) -> None:
    with Retriever(tmp_path / "s", collection="nodes", embedder=embedder) as engine:
        counts = []
        for _ in range(2):
            docs = SimpleDirectoryReader(input_files=[str(CORPUS_DIR / "install.md")]).load_data()
            nodes = SentenceSplitter(chunk_size=64, chunk_overlap=0).get_nodes_from_documents(docs)
            engine.add(to_remy_documents(nodes))
            counts.append(engine.count())
        assert counts[0] == counts[1] >= len(nodes)
        ids = engine.document_ids()
        assert len(ids) == len(nodes)
        assert all(i.startswith(str(CORPUS_DIR / "install.md") + "@") for i in ids)
        meta = engine.get_documents([ids[0]])[ids[0]].document.metadata
        assert meta["ref_doc_id"] == str(CORPUS_DIR / "install.md")


def test_given_ids_are_kept() -> None:
    doc = LIDocument(id_="guide", text="text", metadata={"file_path": "/x/guide.md"})
    node = TextNode(id_="n#1", text="node text")
    assert [d.id for d in to_remy_documents([doc, node])] == ["guide", "n%231"]


def test_metadata_rule() -> None:
    doc = LIDocument(
        text="t",
        metadata={
            "languages": ["eng"],
            "none": None,
            "nested": {"a": {"b": 1}, "c": "d"},
            "f": 1.5,
        },
    )
    (remy,) = to_remy_documents([doc])
    assert remy.metadata == {
        "languages": '["eng"]',
        "nested.a.b": 1,
        "nested.c": "d",
        "f": 1.5,
        "li_json_keys": "languages",
    }
    assert from_remy_metadata(remy.metadata) == {
        "languages": ["eng"],
        "nested.a.b": 1,
        "nested.c": "d",
        "f": 1.5,
    }


def test_unstorable_values_and_foreign_objects_are_refused() -> None:
    with pytest.raises(InvalidDocumentError, match=r"metadata\['x'\]"):
        to_remy_documents([LIDocument(text="t", metadata={"x": object()})])
    with pytest.raises(InvalidDocumentError, match="builtins.str"):
        to_remy_documents(["plain text"])  # type: ignore[list-item]


def test_the_core_names_the_converter_for_llama_index_nodes(tmp_path: Path) -> None:
    """The core's error for a LlamaIndex object says which class it got and which
    converter to use, and stores nothing."""
    from llama_index.core.schema import TextNode

    from remy_retriever import InvalidDocumentError, Retriever
    from remy_retriever.embeddings import SentenceTransformerEmbedder

    r = Retriever(tmp_path / "db", embedder=SentenceTransformerEmbedder())
    with pytest.raises(InvalidDocumentError) as caught:
        r.add([TextNode(text="install on linux")])
    message = str(caught.value)
    assert "llama_index.core.schema.TextNode" in message
    assert "llama_index.vector_stores.remy.to_remy_documents" in message
    assert r.count() == 0
    r.close()

"""to_remy_documents: LlamaIndex loader output into remy, idempotently and cited by file."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from llama_index.core import SimpleDirectoryReader
from llama_index.core.node_parser import SentenceSplitter
from llama_index.core.schema import Document as LIDocument
from llama_index.core.schema import NodeRelationship, TextNode
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


def test_split_nodes_are_ordered_chunks_of_their_file_and_twice_keep_their_count(
    tmp_path: Path, embedder: Any
) -> None:
    path = CORPUS_DIR / "install.md"
    source = path.read_text(encoding="utf-8")
    with Retriever(tmp_path / "s", collection="nodes", embedder=embedder) as engine:
        counts = []
        for _ in range(2):
            docs = SimpleDirectoryReader(input_files=[str(path)]).load_data()
            nodes = SentenceSplitter(chunk_size=64, chunk_overlap=16).get_nodes_from_documents(docs)
            engine.add(to_remy_documents(nodes))
            counts.append(engine.count())
        # One remy document (the file), one chunk per node: not re-chunked.
        assert counts[0] == counts[1] == len(nodes) > 2
        assert engine.document_ids() == [str(path)]
        stored = engine.get_documents([str(path)])[str(path)]
        spans = stored.document.chunk_spans or ()
        texts = [n.get_content() for n in nodes]
        assert [stored.document.text[a:b] for a, b in spans] == texts
        assert [source[a:b] for a, b in spans] == texts  # the file's own offsets
        for mode in ("semantic", "lexical", "hybrid"):
            hit = engine.search(INSTALL_QUERY, mode=mode, k=1)[0]
            assert hit.citation.path == str(path) and hit.citation.chunk_count == len(nodes)
            assert source[hit.citation.start : hit.citation.end] in hit.text


def test_nodes_that_cannot_be_placed_stay_one_document_each_not_re_chunked() -> None:
    source = LIDocument(id_="src", text="alpha beta gamma")
    a = TextNode(id_="a", text="alpha beta", start_char_idx=0, metadata={"k": 1})
    b = TextNode(id_="b", text="beta gamma", start_char_idx=6, metadata={"k": 2})
    for node in (a, b):
        node.relationships[NodeRelationship.SOURCE] = source.as_related_node_info()
    one_each = to_remy_documents([a, b])  # differing metadata: not one source document
    assert [(d.id, d.chunk_spans) for d in one_each] == [("a", ((0, 10),)), ("b", ((0, 10),))]
    b.metadata = {"k": 1}
    (grouped,) = to_remy_documents([b, a])
    assert (grouped.id, grouped.text) == ("src", "alpha beta gamma")
    assert grouped.chunk_spans == ((0, 10), (6, 16))
    b.text = "BETA gamma"  # overlaps that disagree
    assert [d.id for d in to_remy_documents([a, b])] == ["a", "b"]


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
    stored = dict(remy.metadata)
    record = json.loads(str(stored.pop("li_encoding")))
    assert "languages" not in record  # a list of strings is stored as it is
    assert stored == {"languages": ["eng"], "nested.a.b": 1, "nested.c": "d", "f": 1.5}
    # Everything comes back as given: the nesting, the list and the None.
    assert from_remy_metadata(remy.metadata) == doc.metadata


def test_other_values_are_stored_as_str_and_foreign_objects_are_refused() -> None:
    (odd,) = to_remy_documents([LIDocument(text="t", metadata={"x": Path("/a/b")})])
    assert odd.metadata["x"] == "/a/b"  # any other value: its str()
    assert from_remy_metadata(odd.metadata) == {"x": "/a/b"}
    with pytest.raises(InvalidDocumentError, match="builtins.str"):
        to_remy_documents(["plain text"])  # type: ignore[list-item]


def test_the_core_names_the_converter_for_llama_index_nodes(tmp_path: Path) -> None:
    """The core's error for a LlamaIndex object says which class it got and which
    converter to use, and stores nothing."""
    from llama_index.core.schema import TextNode

    from remy_retriever import InvalidDocumentError, Retriever
    from remy_retriever.models.embeddings import SentenceTransformerEmbedder

    r = Retriever(tmp_path / "db", embedder=SentenceTransformerEmbedder())
    with pytest.raises(InvalidDocumentError) as caught:
        r.add([TextNode(text="install on linux")])
    message = str(caught.value)
    assert "llama_index.core.schema.TextNode" in message
    assert "llama_index.vector_stores.remy.to_remy_documents" in message
    assert r.count() == 0
    r.close()

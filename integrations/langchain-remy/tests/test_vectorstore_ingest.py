"""RemyVectorStore taking LangChain's own documents in: ``index()`` with record-manager
cleanup, loader metadata, and ``DirectoryLoader`` + splitter output added twice."""

from __future__ import annotations

import datetime as dt
from collections.abc import Iterator
from pathlib import Path

import pytest
from langchain_core.documents import Document
from langchain_core.indexing import InMemoryRecordManager, RecordManager, index
from langchain_remy import (
    RemyRetriever,
    RemyVectorStore,
    metadata_from_remy,
    metadata_to_remy,
    to_remy_documents,
)
from langchain_text_splitters import RecursiveCharacterTextSplitter

from remy_retriever import InvalidInputError, Retriever, SentenceTransformerEmbedder

MODES = ("semantic", "lexical", "hybrid")
CORPUS_DIR = Path(__file__).resolve().parents[3] / "examples" / "corpus"


@pytest.fixture
def store(tmp_path: Path, embedder: SentenceTransformerEmbedder) -> Iterator[RemyVectorStore]:
    with Retriever(tmp_path, collection="lc-ingest", embedder=embedder) as engine:
        yield RemyVectorStore(engine)


def _docs(b_text: str = "Bananas are yellow and grow in tropical bunches.") -> list[Document]:
    return [
        Document(page_content="Apples are crisp red fruit.", metadata={"source": "a.txt"}),
        Document(page_content=b_text, metadata={"source": "b.txt"}),
        Document(page_content="Cherries are small dark stone fruit.", metadata={"source": "c.txt"}),
    ]


def _found_in_every_mode(store: RemyVectorStore, query: str, text: str) -> list[str]:
    modes = []
    for mode in MODES:
        hits = store.retriever.search(query, mode=mode, k=10)
        if any(text in hit.text for hit in hits):
            modes.append(mode)
    return modes


def _record_manager(kind: str, tmp_path: Path) -> RecordManager:
    if kind == "memory":
        return InMemoryRecordManager(namespace="remy/lc-ingest")
    from langchain_community.indexes._sql_record_manager import SQLRecordManager

    return SQLRecordManager("remy/lc-ingest", db_url=f"sqlite:///{tmp_path / 'records.db'}")


@pytest.mark.parametrize("kind", ["memory", "sql"])
def test_index_incremental_and_full_cleanup(
    store: RemyVectorStore, kind: str, tmp_path: Path
) -> None:
    manager = _record_manager(kind, tmp_path)
    manager.create_schema()

    first = index(
        _docs(), manager, store, cleanup="incremental", source_id_key="source", key_encoder="sha256"
    )
    assert (first["num_added"], first["num_skipped"], first["num_deleted"]) == (3, 0, 0)
    assert store.retriever.count() == 3

    again = index(
        _docs(), manager, store, cleanup="incremental", source_id_key="source", key_encoder="sha256"
    )
    assert (again["num_added"], again["num_skipped"], again["num_deleted"]) == (0, 3, 0)

    changed = _docs("Bananas are long curved fruit that ripen from green to yellow.")
    update = index(
        changed, manager, store, cleanup="incremental", source_id_key="source", key_encoder="sha256"
    )
    assert (update["num_added"], update["num_skipped"], update["num_deleted"]) == (1, 2, 1)
    assert _found_in_every_mode(store, "bananas ripen from green", "ripen from green") == [*MODES]
    assert _found_in_every_mode(store, "bananas tropical bunches", "tropical bunches") == []

    full = index(
        changed[:2], manager, store, cleanup="full", source_id_key="source", key_encoder="sha256"
    )
    assert (full["num_added"], full["num_skipped"], full["num_deleted"]) == (0, 2, 1)
    assert _found_in_every_mode(store, "cherries dark stone fruit", "Cherries") == []
    assert store.retriever.count() == 2


def test_loader_metadata_is_stored_reversibly_and_filterable(store: RemyVectorStore) -> None:
    when = dt.datetime(2024, 5, 1, 12, 0, tzinfo=dt.timezone.utc)
    metadata = {
        "source": "report.pdf",
        "languages": ["eng", "fra"],
        "coordinates": None,
        "layout": {"page": {"number": 3}, "kind": "table"},
        "remy_score": 0.5,
        "when": when,
        "tags": (),
    }
    doc = Document(
        id="report", page_content="Quarterly revenue grew by ten percent.", metadata=metadata
    )
    assert store.add_documents([doc]) == ["report"]

    [back] = store.get_by_ids(["report"])
    expected = {**metadata, "when": str(when), "tags": []}
    assert back.metadata == expected
    assert back.page_content == doc.page_content

    stored = store.retriever.get_documents(["report"])["report"].document.metadata
    assert stored["languages"] == ["eng", "fra"]  # a list of strings is stored as a list
    found = store.similarity_search("revenue", k=2, filter={"languages": {"$contains": "fra"}})
    assert [hit.id for hit in found] == ["report"]
    assert store.similarity_search("revenue", k=2, filter={"languages": {"$eq": "fra"}}) == []
    assert stored["layout.page.number"] == 3
    assert "coordinates" not in stored

    hits = store.similarity_search("revenue", k=2, filter={"layout.page.number": 3})
    assert [hit.id for hit in hits] == ["report"]
    assert store.similarity_search("revenue", k=2, filter={"layout.page.number": 4}) == []


def test_metadata_rule_round_trips_without_a_store() -> None:
    metadata = {"a": {"b": {"c": 1}}, "n": None, "l": [1, "x", None], "$op": "v", "e": {}}
    encoded = metadata_to_remy(metadata)
    assert all(isinstance(v, (str, int, float, bool)) for v in encoded.values())
    assert metadata_from_remy(encoded) == metadata


def test_to_remy_documents_ids_and_refusals() -> None:
    docs = [
        Document(page_content="one", metadata={"source": "s.md", "start_index": 0}),
        Document(page_content="two", metadata={"source": "s.md", "start_index": 3}),
        Document(page_content="three", metadata={"source": "t.md"}),
        Document(page_content="four", metadata={"source": "t.md"}),
        Document(id="mine", page_content="five", metadata={"source": "t.md"}),
    ]
    converted = to_remy_documents(docs)
    # The two pieces of s.md (start_index set) are one document of two chunks.
    # Two t.md pieces without page or offset: each named by its content after the source.
    t_ids = [d.id for d in converted[1:3]]
    assert [d.id for d in converted[::3]] == ["s.md", "mine"]
    assert all(i.startswith("t.md~") for i in t_ids) and len(set(t_ids)) == 2
    assert [d.path for d in converted] == ["s.md", "s.md", "t.md", "t.md", "t.md"][1:]
    assert (converted[0].text, converted[0].chunk_spans) == ("onetwo", ((0, 3), (3, 6)))
    assert [d.chunk_spans for d in converted[1:]] == [None, None, None]
    one_each = to_remy_documents(docs, group=False)
    assert [d.id for d in one_each] == ["s.md@0", "s.md@3", *t_ids, "mine"]
    assert [d.chunk_spans for d in one_each] == [((0, 3),), ((0, 3),), None, None, None]
    with pytest.raises(InvalidInputError, match="remy_retriever.schema.document.Document"):
        to_remy_documents([converted[0]])  # type: ignore[list-item]
    with pytest.raises(InvalidInputError, match="2 ids for 5 documents"):
        to_remy_documents(docs, ids=["x", "y"])


def test_directory_loader_and_splitter_output_twice(store: RemyVectorStore) -> None:
    from langchain_community.document_loaders import DirectoryLoader, TextLoader

    loaded = DirectoryLoader(str(CORPUS_DIR), glob="*.md", loader_cls=TextLoader).load()
    splitter = RecursiveCharacterTextSplitter(
        chunk_size=500, chunk_overlap=50, add_start_index=True
    )
    chunks = splitter.split_documents(loaded)
    assert len(loaded) == 6 and len(chunks) > len(loaded)

    ids = store.add_documents(chunks)
    count = store.retriever.count()
    assert len(set(ids)) == len(chunks)
    assert count == len(chunks)  # one stored document per piece, each one chunk
    again = splitter.split_documents(
        DirectoryLoader(str(CORPUS_DIR), glob="*.md", loader_cls=TextLoader).load()
    )
    assert store.add_documents(again) == ids
    assert store.retriever.count() == count

    retriever = store.as_retriever(search_kwargs={"k": 3})
    assert isinstance(retriever, RemyRetriever) and retriever.mode == "hybrid"
    hits = retriever.invoke("how do I install remy on linux")
    assert hits
    files = {str(path) for path in CORPUS_DIR.glob("*.md")}
    for hit in hits:
        assert hit.metadata["citation"]["path"] in files
        assert hit.metadata["source"] in files
    assert hits[0].metadata["source"].endswith("install.md")


def _split_corpus() -> list[Document]:
    from langchain_community.document_loaders import DirectoryLoader, TextLoader

    loaded = DirectoryLoader(str(CORPUS_DIR), glob="*.md", loader_cls=TextLoader).load()
    splitter = RecursiveCharacterTextSplitter(
        chunk_size=400, chunk_overlap=60, add_start_index=True
    )
    return splitter.split_documents(loaded)


def test_splitter_output_is_stored_as_ordered_chunks_of_its_file(
    tmp_path: Path, embedder: SentenceTransformerEmbedder
) -> None:
    """Pre-split pieces through the converter: one remy document per file, one chunk per
    piece (not re-chunked), in order, with the file's offsets; added twice, nothing moves."""
    pieces = _split_corpus()
    files = {str(path): path.read_text(encoding="utf-8") for path in CORPUS_DIR.glob("*.md")}
    with Retriever(tmp_path / "db", embedder=embedder) as engine:
        report = engine.add(to_remy_documents(pieces))
        assert sorted(report.added) == sorted(files)
        assert engine.count() == len(pieces)
        stored = engine.get_documents(list(files))
        for path, found in stored.items():
            mine = [p for p in pieces if p.metadata["source"] == path]
            assert found.chunk_count == len(mine)
            spans = found.document.chunk_spans or ()
            assert [files[path][a:b] for a, b in spans] == [p.page_content for p in mine]
        again = engine.add(to_remy_documents(_split_corpus()))
        assert sorted(again.unchanged) == sorted(files) and not again.added
        assert engine.count() == len(pieces)
        for mode in MODES:
            hits = engine.search("install remy on linux with pip", mode=mode, k=5)
            for hit in hits:
                citation = hit.citation
                assert citation.path in files
                assert citation.chunk_count is not None and citation.chunk_count > 1
                source = files[citation.path]
                assert source[citation.start : citation.end] in hit.text, mode
        (hit,) = engine.search("install remy on linux with pip", mode="hybrid", k=1, expand=1)
        path = hit.citation.path or ""
        mine = [p.page_content for p in pieces if p.metadata["source"] == path]
        index = hit.citation.chunk_index
        assert list((hit.neighbors or {}).get("before", ())) == mine[max(0, index - 1) : index]
        assert list((hit.neighbors or {}).get("after", ())) == mine[index + 1 : index + 2]


def test_as_retriever_refuses_other_search_types(store: RemyVectorStore) -> None:
    with pytest.raises(InvalidInputError, match="'mmr'"):
        store.as_retriever(search_type="mmr")


def test_from_documents_refuses_a_langchain_embedding(tmp_path: Path) -> None:
    from langchain_core.embeddings import FakeEmbeddings

    with pytest.raises(InvalidInputError, match="FakeEmbeddings"):
        RemyVectorStore.from_documents([], FakeEmbeddings(size=4), path=tmp_path)


@pytest.mark.parametrize("mode", MODES)
def test_relevance_scores_are_between_0_and_1_best_first(store: RemyVectorStore, mode: str) -> None:
    store.add_documents(_docs())
    pairs = store.similarity_search_with_relevance_scores("yellow bananas", k=3, mode=mode)
    assert pairs and pairs[0][0].metadata["source"] == "b.txt"
    scores = [score for _, score in pairs]
    assert all(0.0 <= score <= 1.0 for score in scores)
    assert scores == sorted(scores, reverse=True)


def test_delete_without_ids_is_refused_and_deletes_nothing(store: RemyVectorStore) -> None:
    store.add_documents(_docs())
    with pytest.raises(InvalidInputError, match="document_ids"):
        store.delete(None)
    assert store.retriever.count() == 3


def test_source_ids_stay_usable_for_fragments_and_long_paths(store: RemyVectorStore) -> None:
    long_source = "/data/" + "deep/" * 120 + "file.md"
    docs = [
        Document(page_content="Page one of the guide.", metadata={"source": "https://x.io/g#a"}),
        Document(page_content="A file deep in a tree.", metadata={"source": long_source}),
    ]
    ids = store.add_documents(docs)
    assert ids[0] == "https://x.io/g%23a"
    assert len(ids[1]) <= 512 and ids[1].startswith("/data/deep/")
    assert store.add_documents(docs) == ids
    assert store.retriever.count() == 2
    assert [d.metadata["source"] for d in store.get_by_ids(ids)] == [
        "https://x.io/g#a",
        long_source,
    ]


def test_the_core_names_the_converter_for_langchain_documents(
    tmp_path: Path, embedder: SentenceTransformerEmbedder
) -> None:
    """Both classes are called Document: the core's error says which one it got, and
    how to convert it, and stores nothing."""
    from remy_retriever import InvalidDocumentError

    r = Retriever(tmp_path / "db", embedder=embedder)
    with pytest.raises(InvalidDocumentError) as caught:
        r.add([Document(page_content="install on linux", metadata={"source": "a.md"})])
    message = str(caught.value)
    assert "langchain_core.documents.base.Document" in message
    assert "langchain_remy.to_remy_documents" in message
    assert r.count() == 0
    r.close()

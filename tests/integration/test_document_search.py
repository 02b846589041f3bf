"""Document-grouped search (search_documents) against a real embedded Chroma and the real
MiniLM model: thresholds, neighbour context, full text, summaries, timestamps, 0-1 scores
in every mode (also reranked), and filter isolation."""

from __future__ import annotations

import json
import re
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from remy_retriever import Document, InvalidFilterError, InvalidInputError, Retriever
from remy_retriever import SentenceTransformerEmbedder as STEmbedder
from remy_retriever.cli.search import add_document_search_flags, document_search
from remy_retriever.memory import DocumentSearchResponse
from remy_retriever.search.grouped import lead_summary

search_documents = Retriever.search_documents

MODES = ("semantic", "lexical", "hybrid")
ISO = re.compile(r"\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d+)?Z")

GUIDE = """# Kettle manual

The Kettlebrook 3000 boils a litre of water in ninety seconds.

## Descaling

Fill the kettle with equal parts white vinegar and water. Leave the mixture overnight,
then rinse the kettle three times with clean water.

## Warranty

The warranty covers the heating element for two years from the date of purchase.

## Disposal

Take the kettle to an electronics recycling point; do not put it in household waste.
"""

DOCS = [
    Document(id="manual", text=GUIDE, title="Kettle manual", type="markdown"),
    Document(
        id="teapot",
        text="# Teapot care\n\nRinse the teapot with hot water. Never use soap on clay teapots.",
        title="Teapot care",
        type="markdown",
        summary="How to keep a clay teapot clean.",
    ),
    *[
        Document(
            id=f"{tenant}-policy",
            text=f"# Refunds ({tenant})\n\nRefunds for broken kettles take five business days.",
            title=f"Refund policy {tenant}",
            metadata={"tenant": tenant},
        )
        for tenant in ("a", "b")
    ],
]


@pytest.fixture(scope="module")
def retriever(tmp_path_factory: pytest.TempPathFactory, minilm_model: Any) -> Iterator[Retriever]:
    embedder = STEmbedder()
    embedder._model = minilm_model
    path = tmp_path_factory.mktemp("document-search") / "db"
    with Retriever(path, collection="docs", embedder=embedder) as r:
        r.add(DOCS)
        yield r


def _chunks(response: DocumentSearchResponse, doc: str) -> list[tuple[str, float, bool]]:
    result = next(r for r in response.results if r.document_id == doc)
    return [(c.content, c.score, c.is_relevant) for c in result.chunks]


def test_groups_by_document_with_stored_fields(retriever: Retriever) -> None:
    response = search_documents(retriever, "how do I descale the kettle with vinegar")
    assert response.total == len(response.results) > 0
    assert isinstance(response.timing, int) and response.timing >= 0
    top = response.results[0]
    assert (top.document_id, top.title, top.type) == ("manual", "Kettle manual", "markdown")
    assert top.metadata == {}
    assert any("vinegar" in c.content and c.is_relevant for c in top.chunks)
    assert len({r.document_id for r in response.results}) == response.total
    assert [r.score for r in response.results] == sorted(
        (r.score for r in response.results), reverse=True
    )
    wire = response.to_dict()
    assert "content" not in wire["results"][0] and "summary" not in wire["results"][0]
    assert DocumentSearchResponse.parse(json.dumps(wire)).to_dict() == wire


def test_chunk_threshold_sets_is_relevant(retriever: Retriever) -> None:
    query = "kettle warranty for the heating element"
    everything = search_documents(retriever, query, mode="semantic", only_matching_chunks=True)
    scores = sorted(c.score for r in everything.results for c in r.chunks)
    assert all(c.is_relevant for r in everything.results for c in r.chunks)
    cut = scores[len(scores) // 2]
    response = search_documents(retriever, query, mode="semantic", chunk_threshold=cut)
    for result in response.results:
        assert any(c.is_relevant for c in result.chunks)  # else the document is dropped
        for chunk in result.chunks:
            assert chunk.is_relevant == (chunk.score >= cut)
    assert any(not c.is_relevant for r in response.results for c in r.chunks)
    only = search_documents(
        retriever, query, mode="semantic", chunk_threshold=cut, only_matching_chunks=True
    )
    assert all(c.is_relevant for r in only.results for c in r.chunks)
    top_doc = everything.results[0].score
    assert search_documents(retriever, query, mode="semantic", document_threshold=top_doc).total
    dropped = search_documents(
        retriever, query, mode="semantic", document_threshold=min(1.0, top_doc + 1e-6)
    )
    assert dropped.total == 0


def test_neighbouring_chunks_give_context(retriever: Retriever) -> None:
    # Lexically only the warranty section matches "purchase"; its neighbours are context.
    query = "purchase"
    response = search_documents(retriever, query, mode="lexical")
    chunks = _chunks(response, "manual")
    assert [rel for _, _, rel in chunks] == [False, True, False]
    assert "Descaling" in chunks[0][0] and "Warranty" in chunks[1][0]
    assert "Disposal" in chunks[2][0]
    assert chunks[0][1] == 0.0 and chunks[2][1] == 0.0 and chunks[1][1] > 0
    only = search_documents(retriever, query, mode="lexical", only_matching_chunks=True)
    assert [rel for _, _, rel in _chunks(only, "manual")] == [True]
    wider = search_documents(retriever, query, mode="lexical", context_chunks=2)
    assert len(_chunks(wider, "manual")) == 4  # intro, descaling | warranty | disposal


def test_include_full_docs_and_summary(retriever: Retriever) -> None:
    response = search_documents(
        retriever, "clean a clay teapot", include_full_docs=True, include_summary=True, limit=3
    )
    by_id = {r.document_id: r for r in response.results}
    assert by_id["teapot"].content == DOCS[1].text
    assert by_id["teapot"].summary == "How to keep a clay teapot clean."  # given at ingest
    manual = search_documents(retriever, "kettle", include_summary=True, limit=5)
    summary = next(r.summary for r in manual.results if r.document_id == "manual")
    assert summary == lead_summary(GUIDE)
    assert summary.startswith("The Kettlebrook 3000 boils a litre") and len(summary) <= 300


def test_timestamps_are_real_and_change_with_content(retriever: Retriever) -> None:
    doc = Document(id="notes", text="# Notes\n\nThe kettle lid squeaks.", title="Notes")
    retriever.add([doc])
    first = next(
        r
        for r in search_documents(retriever, "kettle lid squeaks").results
        if r.document_id == "notes"
    )
    assert ISO.fullmatch(first.created_at) and ISO.fullmatch(first.updated_at)
    stored = retriever.get_documents(["notes"])["notes"]
    assert (first.created_at, first.updated_at) == (stored.created_at, stored.updated_at)
    retriever.add([doc])  # unchanged: same timestamps
    time.sleep(0.01)
    retriever.add([Document(id="notes", text="# Notes\n\nThe kettle lid squeaks loudly.")])
    second = next(
        r
        for r in search_documents(retriever, "kettle lid squeaks").results
        if r.document_id == "notes"
    )
    assert second.created_at == first.created_at
    assert second.updated_at > first.updated_at
    retriever.delete(["notes"])


@pytest.mark.parametrize("mode", MODES)
def test_scores_are_calibrated_to_0_1(retriever: Retriever, mode: str) -> None:
    for query in ("descale the kettle with vinegar", "zebra migration patterns", "the"):
        response = search_documents(retriever, query, mode=mode, limit=10)
        for result in response.results:
            assert 0.0 <= result.score <= 1.0
            assert result.score == max(c.score for c in result.chunks)
            assert all(0.0 <= c.score <= 1.0 for c in result.chunks)
    query = "descale the kettle with vinegar"
    top = search_documents(retriever, query, mode=mode, only_matching_chunks=True).results[0]
    best = max(top.chunks, key=lambda c: c.score)
    cosine = {h.text: h.score for h in retriever.search(query, mode="semantic", k=50)}
    if mode == "semantic":
        assert best.score == pytest.approx(min(1.0, max(0.0, cosine[best.content])))
    elif mode == "lexical":
        # A fraction of the query's BM25 ceiling: all terms present, but not saturated.
        assert 0.2 < best.score < 1.0
    else:
        # The mean of the two calibrated branch scores.
        lexical = search_documents(
            retriever, query, mode="lexical", only_matching_chunks=True, limit=50
        )
        bm25 = {c.content: c.score for r in lexical.results for c in r.chunks}
        expected = 0.5 * min(1.0, max(0.0, cosine[best.content])) + 0.5 * bm25[best.content]
        assert best.score == pytest.approx(expected)


def test_reranked_scores_are_the_rerankers(retriever: Retriever, cross_encoder_path: str) -> None:
    query = "descale the kettle with vinegar"
    response = search_documents(retriever, query, rerank=cross_encoder_path, limit=5)
    assert response.results
    hits = retriever.search(query, rerank=cross_encoder_path, k=20, rerank_depth=20)
    rerank_scores = {h.text: h.score for h in hits}
    for result in response.results:
        assert 0.0 <= result.score <= 1.0
        for chunk in result.chunks:
            if chunk.score:
                assert chunk.score == pytest.approx(rerank_scores[chunk.content])


@pytest.mark.parametrize("mode", MODES)
def test_where_isolation(retriever: Retriever, mode: str) -> None:
    response = search_documents(
        retriever, "refunds for broken kettles", mode=mode, where={"tenant": "b"}, limit=10
    )
    assert [r.document_id for r in response.results] == ["b-policy"]
    assert response.results[0].metadata == {"tenant": "b"}
    none = search_documents(retriever, "refunds", mode=mode, where={"tenant": "zzz"})
    assert none.total == 0 and none.results == []


def test_input_errors_name_the_argument(retriever: Retriever) -> None:
    with pytest.raises(InvalidInputError, match="chunk_threshold"):
        search_documents(retriever, "kettle", chunk_threshold=1.5)
    with pytest.raises(InvalidInputError, match="limit"):
        search_documents(retriever, "kettle", limit=0)
    with pytest.raises(InvalidInputError, match="mode"):
        search_documents(retriever, "kettle", mode="fuzzy")
    with pytest.raises(InvalidFilterError):
        search_documents(retriever, "kettle", where={"tenant": {"$regex": "a"}})


def test_the_cli_prints_grouped_documents(
    retriever: Retriever, capsys: pytest.CaptureFixture[str]
) -> None:
    import argparse

    parser = argparse.ArgumentParser()
    parser.add_argument("query")
    add_document_search_flags(parser)
    db = str(Path(retriever.client.get_settings().persist_directory))
    args = parser.parse_args(["descale the kettle", "--documents", "--summary"])
    extra = {"db": db, "collection": "docs", "mode": "hybrid", "k": 2, "where": None}
    args.__dict__.update(extra, rerank=None, json=True)
    assert document_search(args) == 0
    wire = json.loads(capsys.readouterr().out)
    assert wire["results"][0]["documentId"] == "manual" and "summary" in wire["results"][0]
    args.json = False
    assert document_search(args) == 0
    out = capsys.readouterr().out
    assert out.startswith("[1] ") and "Kettle manual  (manual)" in out and "  * " in out

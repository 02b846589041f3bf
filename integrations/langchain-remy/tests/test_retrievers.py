"""RemyRetriever (LangChain) against the real embedded Chroma store and MiniLM model."""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Sequence
from pathlib import Path

import pytest
from langchain_core.documents import Document
from langchain_remy import RemyRetriever, document_to_hit, hits_to_documents
from remy_adapter_fixtures import assert_reranker_loads_once, assert_tenants_see_only_their_own

from remy_retriever import InvalidInputError, Retriever, SearchHit, SentenceTransformerEmbedder

CORE_KEYS = {
    "citation",
    "source",
    "title",
    "document_id",
    "chunk_index",
    "heading_path",
    "page",
    "page_end",
    "score",
    "retrieval_rank",
    "retrieval_score",
}


def test_documents_carry_the_citation(corpus_retriever: Retriever, install_query: str) -> None:
    docs = RemyRetriever(corpus_retriever, k=3).invoke(install_query)
    hits = corpus_retriever.search(install_query, k=3)

    assert [d.id for d in docs] == [h.id for h in hits]
    top, hit = docs[0], hits[0]
    assert top.id == "install.md#2"
    assert "sudo apt install remy-cli" in top.page_content
    assert top.page_content == hit.text
    meta = top.metadata
    assert set(meta) == CORE_KEYS  # no explain/neighbors/matches unless asked for
    assert meta["citation"] == hit.citation.to_dict()
    assert meta["source"].endswith("install.md")
    assert meta["title"] == "Installing Remy"
    assert meta["document_id"] == "install.md"
    assert meta["chunk_index"] == 2
    assert meta["heading_path"] == ["Installing Remy", "Install on Linux"]
    assert meta["score"] == hit.score
    assert meta["retrieval_rank"] is None  # no reranking: the position is the rank
    assert meta["retrieval_score"] is None


def test_round_trip_keeps_every_field(corpus_retriever: Retriever, install_query: str) -> None:
    hits = corpus_retriever.search(
        install_query, k=4, explain=True, expand=1, highlight=True, rerank=_Overlap()
    )
    assert all(h.retrieval_rank is not None and h.explain is not None for h in hits)
    assert all(h.neighbors is not None and h.matches is not None for h in hits)

    docs = hits_to_documents(hits)

    assert [document_to_hit(d) for d in docs] == hits
    meta = docs[0].metadata
    assert meta["explain"] == hits[0].explain.to_dict()  # type: ignore[union-attr]
    assert meta["neighbors"] == hits[0].to_dict()["neighbors"]
    assert meta["matches"] == hits[0].to_dict()["matches"]
    assert meta["retrieval_rank"] == hits[0].retrieval_rank
    assert meta["retrieval_score"] == hits[0].retrieval_score


def test_round_trip_keeps_user_metadata_even_when_keys_collide() -> None:
    from remy_retriever import Citation, SearchHit

    hit = SearchHit(
        id="guide#0",
        score=0.5,
        text="Guide\n\nhello",
        citation=Citation(document_id="guide", chunk_index=0, start=0, end=5, chunk_count=1),
        metadata={"tenant": "a", "title": "mine", "score": 7, "priority": 2.5},
    )
    doc = hits_to_documents([hit])[0]

    assert doc.metadata["tenant"] == "a"
    assert doc.metadata["title"] is None  # ours: the citation's title
    assert doc.metadata["remy_shadowed"] == {"title": "mine", "score": 7}
    assert document_to_hit(doc) == hit


def test_document_to_hit_rejects_foreign_documents() -> None:
    with pytest.raises(InvalidInputError, match="no remy citation"):
        document_to_hit(Document(page_content="x", metadata={"source": "web"}))


def test_per_call_options_override_the_defaults(
    corpus_retriever: Retriever, install_query: str
) -> None:
    retriever = RemyRetriever(corpus_retriever, k=4, mode="hybrid")

    docs = retriever.invoke(install_query, k=2, mode="lexical", explain=True, highlight=True)

    hits = corpus_retriever.search(install_query, k=2, mode="lexical", explain=True, highlight=True)
    assert [document_to_hit(d) for d in docs] == hits
    assert docs[0].metadata["explain"]["mode"] == "lexical"
    assert "matches" in docs[0].metadata and "neighbors" not in docs[0].metadata
    # The defaults are untouched by a call's overrides.
    assert len(retriever.invoke(install_query)) == 4


def test_expand_adds_neighbors(corpus_retriever: Retriever, install_query: str) -> None:
    docs = RemyRetriever(corpus_retriever, k=1, expand=True).invoke(install_query)

    neighbors = docs[0].metadata["neighbors"]
    assert len(neighbors["before"]) == 1 and len(neighbors["after"]) == 1
    assert "Install on macOS" in neighbors["after"][0]


def test_search_kwargs_reach_the_engine(corpus_retriever: Retriever, install_query: str) -> None:
    results = {}
    for fusion in ("rrf", "convex"):
        retriever = RemyRetriever(corpus_retriever, k=3, search_kwargs={"fusion": fusion})
        assert retriever.search_options()["fusion"] == fusion
        hits = [document_to_hit(d) for d in retriever.invoke(install_query)]
        assert hits == corpus_retriever.search(install_query, k=3, fusion=fusion)
        results[fusion] = [h.score for h in hits]
    assert results["rrf"] != results["convex"]  # the option changed what the engine did
    with pytest.raises(ValueError, match="unknown option"):
        RemyRetriever(corpus_retriever, search_kwargs={"fuse": "rrf"})
    with pytest.raises(ValueError, match=r"set \['k'\] as RemyRetriever arguments"):
        RemyRetriever(corpus_retriever, search_kwargs={"k": 3})


def test_unknown_call_option_names_the_fix(corpus_retriever: Retriever) -> None:
    retriever = RemyRetriever(corpus_retriever, k=2)
    with pytest.raises(InvalidInputError, match=r"unknown search option\(s\) \['top_k'\]"):
        retriever.invoke("install", top_k=3)
    # invoke's own verbose flag travels with the options; it is not a search option.
    assert len(retriever.invoke("install", verbose=True)) == 2


def test_invalid_option_values_are_rejected(corpus_retriever: Retriever) -> None:
    with pytest.raises(ValueError, match="mode"):
        RemyRetriever(corpus_retriever, mode="fuzzy")
    with pytest.raises(ValueError, match="k"):
        RemyRetriever(corpus_retriever, k=0)
    with pytest.raises(InvalidInputError, match="k must be between"):
        RemyRetriever(corpus_retriever).invoke("install", k=0)


async def test_async_matches_sync(corpus_retriever: Retriever, install_query: str) -> None:
    retriever = RemyRetriever(corpus_retriever, k=4, explain=True)

    sync_docs = retriever.invoke(install_query, where={"remy_doc_id": "install.md"})
    async_docs = await retriever.ainvoke(install_query, where={"remy_doc_id": "install.md"})

    assert async_docs == sync_docs
    assert len(sync_docs) == 4


async def test_ainvoke_runs_in_a_worker_thread(
    corpus_retriever: Retriever, install_query: str
) -> None:
    """While a search runs, the event loop keeps serving other tasks."""
    retriever = RemyRetriever(corpus_retriever, k=2)
    ticks = 0

    async def ticker() -> None:
        nonlocal ticks
        while True:
            ticks += 1
            await asyncio.sleep(0.001)

    task = asyncio.create_task(ticker())
    try:
        await retriever.ainvoke(install_query)
    finally:
        task.cancel()
    assert ticks > 1


async def test_where_isolates_tenants_per_call(tenant_retriever: Retriever) -> None:
    retriever = RemyRetriever(tenant_retriever, k=6)
    query = "how do I install the agent"

    unfiltered = retriever.invoke(query)
    assert {d.metadata["tenant"] for d in unfiltered} == {"a", "b"}

    results = await asyncio.gather(
        *(retriever.ainvoke(query, where={"tenant": tenant}) for tenant in ("a", "b", "a", "b"))
    )
    for tenant, docs in zip(("a", "b", "a", "b"), results):
        assert len(docs) == 3
        assert {d.metadata["tenant"] for d in docs} == {tenant}
        assert docs[0].metadata["document_id"] == f"{tenant}-install"
    sync_b = retriever.invoke(query, where={"tenant": "b"}, mode="lexical")
    assert {d.metadata["tenant"] for d in sync_b} == {"b"}


def test_constructor_where_is_the_default_filter(tenant_retriever: Retriever) -> None:
    retriever = RemyRetriever(tenant_retriever, k=6, where={"tenant": "a"})

    assert {d.metadata["tenant"] for d in retriever.invoke("install the agent")} == {"a"}
    # A per-call where replaces the default one.
    docs = retriever.invoke("install the agent", where={"tenant": "b"})
    assert {d.metadata["tenant"] for d in docs} == {"b"}


def test_open_from_path(
    corpus_retriever: Retriever, embedder: SentenceTransformerEmbedder, install_query: str
) -> None:
    path = corpus_retriever.client.get_settings().persist_directory
    retriever = RemyRetriever(path=Path(path), collection="corpus", embedder=embedder, k=2)
    try:
        assert retriever.retriever is not corpus_retriever
        docs = retriever.invoke(install_query)
        assert [d.id for d in docs] == [h.id for h in corpus_retriever.search(install_query, k=2)]
    finally:
        retriever.retriever.close()


def test_constructor_errors_name_the_fix(corpus_retriever: Retriever, tmp_path: Path) -> None:
    with pytest.raises(InvalidInputError, match="needs a store"):
        RemyRetriever(k=3)
    with pytest.raises(InvalidInputError, match="not both"):
        RemyRetriever(corpus_retriever, path=tmp_path)


class _Overlap:
    """A tiny real Reranker: the share of query words found in the text."""

    def score(self, query: str, texts: Sequence[str]) -> list[float]:
        words = set(query.lower().split())
        return [len(words & set(t.lower().split())) / len(words) for t in texts]


@pytest.mark.parametrize("mode", ["semantic", "lexical", "hybrid"])
def test_the_filter_keeps_hits_and_neighbours_inside_the_tenant(
    isolation_retriever: Retriever, mode: str
) -> None:
    def search(tenant: str, query: str) -> list[SearchHit]:
        where = {"tenant": tenant}
        retriever = RemyRetriever(isolation_retriever, k=6, mode=mode, where=where, expand=1)
        return [document_to_hit(d) for d in retriever.invoke(query)]

    assert_tenants_see_only_their_own(search)


def test_twenty_reranked_searches_load_the_cross_encoder_once(
    tenant_retriever: Retriever, cross_encoder_path: str, reranker_loads: Callable[[], int]
) -> None:
    retriever = RemyRetriever(tenant_retriever, k=3, rerank=cross_encoder_path)
    assert_reranker_loads_once(
        lambda query: [document_to_hit(d) for d in retriever.invoke(query)], reranker_loads
    )

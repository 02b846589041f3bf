"""RemyRetriever (LlamaIndex) against the real embedded Chroma store and MiniLM model."""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Sequence
from pathlib import Path

import pytest
from llama_index.core.schema import MetadataMode, NodeRelationship, NodeWithScore, TextNode
from llama_index.core.tools import RetrieverTool
from llama_index.retrievers.remy import RemyRetriever, hits_to_nodes, node_to_hit
from remy_adapter_fixtures import assert_reranker_loads_once, assert_tenants_see_only_their_own

from remy_retriever import (
    Citation,
    InvalidInputError,
    Retriever,
    SearchHit,
    SentenceTransformerEmbedder,
)

INSTALL_ONLY = {"remy_doc_id": "install.md"}


def test_nodes_carry_the_citation(corpus_retriever: Retriever, install_query: str) -> None:
    results = RemyRetriever(corpus_retriever, similarity_top_k=3).retrieve(install_query)
    hits = corpus_retriever.search(install_query, k=3)

    assert [r.node.node_id for r in results] == [h.id for h in hits]
    assert [r.score for r in results] == [h.score for h in hits]
    top, hit = results[0], hits[0]
    node = top.node
    assert isinstance(node, TextNode)
    assert node.node_id == "install.md#2"
    assert node.text == hit.text
    assert (node.start_char_idx, node.end_char_idx) == (hit.citation.start, hit.citation.end)
    meta = node.metadata
    assert meta["citation"] == hit.citation.to_dict()
    assert meta["source"].endswith("install.md")
    assert meta["title"] == "Installing Remy"
    assert meta["document_id"] == "install.md"
    assert meta["chunk_index"] == 2
    assert meta["heading_path"] == ["Installing Remy", "Install on Linux"]
    assert (meta["score"], meta["retrieval_rank"], meta["retrieval_score"]) == (
        hit.score,
        None,
        None,
    )
    assert not {"explain", "neighbors", "matches"} & set(meta)
    assert node.ref_doc_id == "install.md"
    for key in ("citation", "explain", "neighbors", "matches"):
        assert key in node.excluded_llm_metadata_keys
        assert key in node.excluded_embed_metadata_keys
    llm_view = node.get_content(metadata_mode=MetadataMode.LLM)
    assert "title: Installing Remy" in llm_view and "documentId" not in llm_view
    assert "sudo apt install remy-cli" in llm_view


def test_previous_and_next_point_at_the_neighbouring_chunks(
    corpus_retriever: Retriever, install_query: str
) -> None:
    retriever = RemyRetriever(corpus_retriever, similarity_top_k=50, where=INSTALL_ONLY)
    nodes = {r.node.node_id: r.node for r in retriever.retrieve(install_query)}
    count = nodes["install.md#0"].metadata["citation"]["chunkCount"]
    assert count == len(nodes) == 6  # every chunk of install.md

    for position in range(count):
        node = nodes[f"install.md#{position}"]
        assert node.source_node is not None and node.source_node.node_id == "install.md"
        previous, following = node.prev_node, node.next_node
        if position == 0:
            assert previous is None
        else:
            assert previous is not None
            assert previous.node_id == f"install.md#{position - 1}"
            assert previous.node_id in nodes  # a real chunk
        if position == count - 1:
            assert following is None
        else:
            assert following is not None
            assert following.node_id == f"install.md#{position + 1}"
            assert following.node_id in nodes


def test_round_trip_keeps_every_field(corpus_retriever: Retriever, install_query: str) -> None:
    hits = corpus_retriever.search(
        install_query, k=4, explain=True, expand=1, highlight=True, rerank=_Overlap()
    )
    assert all(h.retrieval_rank is not None and h.explain is not None for h in hits)
    assert all(h.neighbors is not None and h.matches is not None for h in hits)

    nodes = hits_to_nodes(hits)

    assert [node_to_hit(n) for n in nodes] == hits
    assert [node_to_hit(n.node) for n in nodes] == hits  # bare nodes: score from metadata
    meta = nodes[0].node.metadata
    assert meta["explain"] == hits[0].to_dict()["explain"]
    assert meta["neighbors"] == hits[0].to_dict()["neighbors"]
    assert meta["matches"] == hits[0].to_dict()["matches"]
    assert meta["retrieval_rank"] == hits[0].retrieval_rank
    assert meta["retrieval_score"] == hits[0].retrieval_score


def test_round_trip_keeps_user_metadata_even_when_keys_collide() -> None:
    hit = SearchHit(
        id="guide#0",
        score=0.25,
        text="Guide\n\nhello",
        citation=Citation(document_id="guide", chunk_index=0, start=3, end=9),
        metadata={"tenant": "a", "source": "mine", "citation": "x"},
    )
    node = hits_to_nodes([hit])[0]

    assert node.node.metadata["tenant"] == "a"
    assert node.node.metadata["source"] == "guide"  # ours: the citation's source
    assert node.node.metadata["remy_shadowed"] == {"source": "mine", "citation": "x"}
    assert NodeRelationship.NEXT not in node.node.relationships  # chunk count unknown
    assert node_to_hit(node) == hit


def test_node_to_hit_rejects_foreign_nodes() -> None:
    with pytest.raises(InvalidInputError, match="no remy citation"):
        node_to_hit(NodeWithScore(node=TextNode(text="x", metadata={"source": "web"}), score=1))


async def test_async_matches_sync(corpus_retriever: Retriever, install_query: str) -> None:
    retriever = RemyRetriever(corpus_retriever, similarity_top_k=4, explain=True, expand=1)

    sync_nodes = retriever.retrieve(install_query)
    async_nodes = await retriever.aretrieve(install_query)

    assert [node_to_hit(n) for n in async_nodes] == [node_to_hit(n) for n in sync_nodes]
    assert [n.node.model_dump() for n in async_nodes] == [n.node.model_dump() for n in sync_nodes]
    assert len(sync_nodes) == 4


async def test_aretrieve_runs_in_a_worker_thread(
    corpus_retriever: Retriever, install_query: str
) -> None:
    retriever = RemyRetriever(corpus_retriever, similarity_top_k=2)
    ticks = 0

    async def ticker() -> None:
        nonlocal ticks
        while True:
            ticks += 1
            await asyncio.sleep(0.001)

    task = asyncio.create_task(ticker())
    try:
        await retriever.aretrieve(install_query)
    finally:
        task.cancel()
    assert ticks > 1


async def test_where_isolates_tenants(tenant_retriever: Retriever) -> None:
    shared = RemyRetriever(tenant_retriever, similarity_top_k=6)
    query = "how do I install the agent"
    assert {r.node.metadata["tenant"] for r in shared.retrieve(query)} == {"a", "b"}

    tenants = ("a", "b", "a", "b")
    results = await asyncio.gather(
        *(shared.with_options(where={"tenant": t}).aretrieve(query) for t in tenants)
    )

    for tenant, nodes in zip(tenants, results):
        assert len(nodes) == 3
        assert {r.node.metadata["tenant"] for r in nodes} == {tenant}
        assert nodes[0].node.node_id == f"{tenant}-install#0"
    lexical_b = RemyRetriever(tenant_retriever, where={"tenant": "b"}, mode="lexical")
    assert {r.node.metadata["tenant"] for r in lexical_b.retrieve(query)} == {"b"}
    assert shared.where is None  # with_options never changes the original


def test_with_options(corpus_retriever: Retriever, install_query: str) -> None:
    base = RemyRetriever(corpus_retriever, similarity_top_k=4)
    derived = base.with_options(similarity_top_k=2, mode="lexical", rrf_k=10.0)

    assert derived.retriever is corpus_retriever
    assert derived.search_options()["rrf_k"] == 10.0
    assert base.search_options()["k"] == 4 and base.mode == "hybrid"  # unchanged
    expected = corpus_retriever.search(install_query, k=2, mode="lexical")
    assert [node_to_hit(n) for n in derived.retrieve(install_query)] == expected
    for fusion in ("rrf", "convex"):
        hits = [node_to_hit(n) for n in base.with_options(fusion=fusion).retrieve(install_query)]
        assert hits == corpus_retriever.search(install_query, k=4, fusion=fusion)
    with pytest.raises(InvalidInputError, match="unknown option 'k'"):
        base.with_options(k=3)


def test_invalid_arguments_name_the_fix(corpus_retriever: Retriever, tmp_path: Path) -> None:
    with pytest.raises(InvalidInputError, match="needs a store"):
        RemyRetriever()
    with pytest.raises(InvalidInputError, match="not both"):
        RemyRetriever(corpus_retriever, path=tmp_path)
    with pytest.raises(InvalidInputError, match="similarity_top_k must be"):
        RemyRetriever(corpus_retriever, similarity_top_k=0)
    with pytest.raises(InvalidInputError, match="unknown mode 'fuzzy'"):
        RemyRetriever(corpus_retriever, mode="fuzzy")  # type: ignore[arg-type]
    with pytest.raises(InvalidInputError, match="similarity_top_k"):
        RemyRetriever(corpus_retriever, search_kwargs={"k": 2})
    with pytest.raises(InvalidInputError, match="unknown option"):
        RemyRetriever(corpus_retriever, search_kwargs={"fuse": "rrf"})


def test_open_from_path(
    corpus_retriever: Retriever, embedder: SentenceTransformerEmbedder, install_query: str
) -> None:
    path = corpus_retriever.client.get_settings().persist_directory
    retriever = RemyRetriever(
        path=Path(path), collection="corpus", embedder=embedder, similarity_top_k=2
    )
    try:
        assert retriever.retriever is not corpus_retriever
        ids = [r.node.node_id for r in retriever.retrieve(install_query)]
        assert ids == [h.id for h in corpus_retriever.search(install_query, k=2)]
    finally:
        retriever.retriever.close()


async def test_retriever_tool(corpus_retriever: Retriever, install_query: str) -> None:
    tool = RetrieverTool.from_defaults(
        retriever=RemyRetriever(retriever=corpus_retriever, similarity_top_k=2),
        name="remy_docs",
        description="Search the Remy documentation.",
    )

    output = tool.call(install_query)
    async_output = await tool.acall(install_query)

    assert output.tool_name == "remy_docs"
    assert "sudo apt install remy-cli" in output.content
    assert "heading_path: ['Installing Remy', 'Install on Linux']" in output.content
    assert "chunkCount" not in output.content  # the citation dict is kept from the LLM
    assert output.raw_output[0].node.node_id == "install.md#2"
    assert len(output.raw_output) == 2
    assert async_output.content == output.content


class _Overlap:
    """A tiny real Reranker: the share of query words found in the text."""

    def score(self, query: str, texts: Sequence[str]) -> list[float]:
        words = set(query.lower().split())
        return [len(words & set(t.lower().split())) / len(words) for t in texts]


@pytest.mark.parametrize("mode", ["semantic", "lexical", "hybrid"])
def test_the_filter_keeps_nodes_neighbours_and_highlights_inside_the_tenant(
    isolation_retriever: Retriever, mode: str
) -> None:
    base = RemyRetriever(isolation_retriever, similarity_top_k=6, mode=mode, expand=1)
    highlighted = base.with_options(highlight=True)
    assert_tenants_see_only_their_own(
        lambda tenant, query: [
            node_to_hit(n)
            for n in highlighted.with_options(where={"tenant": tenant}).retrieve(query)
        ]
    )


def test_twenty_reranked_searches_load_the_cross_encoder_once(
    tenant_retriever: Retriever, cross_encoder_path: str, reranker_loads: Callable[[], int]
) -> None:
    reranking = RemyRetriever(tenant_retriever, similarity_top_k=3, rerank=cross_encoder_path)

    def search(query: str) -> list[SearchHit]:
        return [node_to_hit(n) for n in reranking.retrieve(query)]

    assert_reranker_loads_once(search, reranker_loads)

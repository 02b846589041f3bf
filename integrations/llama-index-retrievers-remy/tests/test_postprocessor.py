"""RemyRerank with a real (seeded MiniLM) cross-encoder, alone and in a RetrieverQueryEngine."""

from __future__ import annotations

from collections.abc import Sequence

import pytest
from llama_index.core.llms import MockLLM
from llama_index.core.query_engine import RetrieverQueryEngine
from llama_index.core.schema import NodeWithScore, TextNode
from llama_index.retrievers.remy import RemyRerank, RemyRetriever, node_to_hit

from remy_retriever import CrossEncoderReranker, InvalidInputError, Retriever


@pytest.fixture(scope="module")
def cross_encoder(cross_encoder_path: str) -> CrossEncoderReranker:
    # One instance for the module: its score cache makes repeated (query, text) pairs free.
    return CrossEncoderReranker(cross_encoder_path)


def test_matches_the_engines_own_reranking(
    corpus_retriever: Retriever, cross_encoder: CrossEncoderReranker, install_query: str
) -> None:
    """Reranking k nodes gives exactly the hits the engine gives when it reranks the same
    k candidates itself (same scores, order, retrieval ranks and scores)."""
    nodes = RemyRetriever(corpus_retriever, similarity_top_k=6).retrieve(install_query)

    reranked = RemyRerank(cross_encoder, top_n=6).postprocess_nodes(nodes, query_str=install_query)

    expected = corpus_retriever.search(install_query, k=6, rerank=cross_encoder, rerank_depth=6)
    assert [node_to_hit(n) for n in reranked] == expected
    for item in reranked:
        meta = item.node.metadata
        assert item.score == meta["score"]
        assert 0.0 <= meta["score"] <= 1.0
        incoming = nodes[meta["retrieval_rank"] - 1]
        assert incoming.node.node_id == item.node.node_id
        assert meta["retrieval_score"] == incoming.score
    # The incoming nodes are not modified.
    assert all(n.node.metadata["retrieval_rank"] is None for n in nodes)


async def test_async_and_top_n(
    corpus_retriever: Retriever, cross_encoder: CrossEncoderReranker, install_query: str
) -> None:
    nodes = RemyRetriever(corpus_retriever, similarity_top_k=6).retrieve(install_query)
    rerank = RemyRerank(cross_encoder, top_n=2)

    sync_out = rerank.postprocess_nodes(nodes, query_str=install_query)
    async_out = await rerank.apostprocess_nodes(nodes, query_str=install_query)

    assert len(sync_out) == 2
    assert [node_to_hit(n) for n in async_out] == [node_to_hit(n) for n in sync_out]
    assert sync_out[0].score is not None and sync_out[1].score is not None
    assert sync_out[0].score >= sync_out[1].score


def test_any_retrievers_nodes_and_ties_keep_order() -> None:
    texts = ["apt install on linux", "brew install on macos", "linux apt install"]
    nodes = [
        NodeWithScore(node=TextNode(text=t, metadata={"n": i}), score=1.0 - i / 10)
        for i, t in enumerate(texts)
    ]

    out = RemyRerank(_Overlap(), top_n=None).postprocess_nodes(
        nodes, query_str="install on linux apt"
    )

    assert [n.node.get_content() for n in out] == [texts[0], texts[2], texts[1]]
    assert [n.score for n in out] == [1.0, 0.75, 0.5]
    assert out[1].node.metadata == {"n": 2, "retrieval_score": 0.8, "retrieval_rank": 3}
    assert "retrieval_score" in out[1].node.excluded_llm_metadata_keys
    assert nodes[2].node.metadata == {"n": 2}  # the input is not modified
    unscored = NodeWithScore(node=TextNode(text="apt on linux"))
    (rescored,) = RemyRerank(_Overlap()).postprocess_nodes([unscored], query_str="linux apt")
    assert rescored.score == 1.0
    assert rescored.node.metadata == {"retrieval_score": None, "retrieval_rank": 1}
    assert RemyRerank(_Overlap()).postprocess_nodes([], query_str="anything") == []


def test_query_engine_with_rerank(
    corpus_retriever: Retriever, cross_encoder: CrossEncoderReranker, install_query: str
) -> None:
    engine = RetrieverQueryEngine.from_args(
        RemyRetriever(corpus_retriever, similarity_top_k=6),
        llm=MockLLM(),
        node_postprocessors=[RemyRerank(cross_encoder, top_n=3)],
    )

    response = engine.query(install_query)

    assert len(response.source_nodes) == 3
    for source in response.source_nodes:
        assert source.node.metadata["source"].endswith(".md")
        assert source.node.metadata["retrieval_rank"] in range(1, 7)
        assert source.score == source.node.metadata["score"]


def test_bad_arguments_are_rejected(cross_encoder_path: str) -> None:
    from_path = RemyRerank(cross_encoder_path)
    assert isinstance(from_path.reranker, CrossEncoderReranker)
    assert from_path.reranker.model_name == cross_encoder_path  # loaded lazily
    assert RemyRerank.class_name() == "RemyRerank"
    with pytest.raises(InvalidInputError, match="cross-encoder name or path"):
        RemyRerank(True)  # type: ignore[arg-type]
    node = NodeWithScore(node=TextNode(text="a"), score=1.0)
    with pytest.raises(InvalidInputError, match="needs the query"):
        RemyRerank(_Overlap()).postprocess_nodes([node])
    with pytest.raises(InvalidInputError, match="returned 1 scores for 2 texts"):
        RemyRerank(_Short()).postprocess_nodes([node, node], query_str="q")


class _Overlap:
    """A tiny real Reranker: the share of query words found in the text."""

    def score(self, query: str, texts: Sequence[str]) -> list[float]:
        words = set(query.lower().split())
        return [len(words & set(t.lower().split())) / len(words) for t in texts]


class _Short:
    def score(self, query: str, texts: Sequence[str]) -> list[float]:
        return [0.5]

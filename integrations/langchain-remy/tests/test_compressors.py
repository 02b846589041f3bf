"""RemyReranker with a real (seeded MiniLM) cross-encoder, alone and in a LangChain
ContextualCompressionRetriever."""

from __future__ import annotations

from collections.abc import Sequence

import pytest
from langchain_classic.retrievers import ContextualCompressionRetriever
from langchain_core.documents import Document
from langchain_remy import RemyReranker, RemyRetriever, document_to_hit

from remy_retriever import CrossEncoderReranker, InvalidInputError, Retriever


@pytest.fixture(scope="module")
def cross_encoder(cross_encoder_path: str) -> CrossEncoderReranker:
    # One instance for the module: its score cache makes repeated (query, text) pairs free.
    return CrossEncoderReranker(cross_encoder_path)


def test_matches_the_engines_own_reranking(
    corpus_retriever: Retriever, cross_encoder: CrossEncoderReranker, install_query: str
) -> None:
    """Reranking k Documents gives exactly the hits the engine gives when it reranks the
    same k candidates itself (same scores, order, retrieval ranks and scores)."""
    docs = RemyRetriever(corpus_retriever, k=6).invoke(install_query)

    reranked = RemyReranker(cross_encoder, top_n=6).compress_documents(docs, install_query)

    expected = corpus_retriever.search(install_query, k=6, rerank=cross_encoder, rerank_depth=6)
    assert [document_to_hit(d) for d in reranked] == expected
    for doc in reranked:
        meta = doc.metadata
        assert meta["relevance_score"] == meta["score"]
        assert 0.0 <= meta["relevance_score"] <= 1.0
        assert docs[meta["retrieval_rank"] - 1].id == doc.id
        assert meta["retrieval_score"] == docs[meta["retrieval_rank"] - 1].metadata["score"]
    # The incoming Documents are not modified.
    assert all("relevance_score" not in d.metadata for d in docs)


def test_model_path_and_top_n(
    cross_encoder_path: str, cross_encoder: CrossEncoderReranker, corpus_retriever: Retriever
) -> None:
    from_path = RemyReranker(cross_encoder_path)
    assert isinstance(from_path.reranker, CrossEncoderReranker)
    assert from_path.reranker.model_name == cross_encoder_path  # loaded lazily, on first use

    docs = RemyRetriever(corpus_retriever, k=6).invoke("how do I install remy on linux")
    out = RemyReranker(cross_encoder, top_n=2).compress_documents(
        docs, "how do I install remy on linux"
    )

    assert len(out) == 2
    assert out[0].metadata["relevance_score"] >= out[1].metadata["relevance_score"]


def test_any_retrievers_documents_and_ties_keep_order() -> None:
    docs = [
        Document(page_content="apt install on linux", metadata={"source": "web"}),
        Document(page_content="brew install on macos"),
        Document(page_content="linux apt install"),
    ]

    out = RemyReranker(_Overlap(), top_n=None).compress_documents(docs, "install on linux apt")

    assert [d.page_content for d in out] == [
        "apt install on linux",  # 4/4 words, incoming rank 1
        "linux apt install",  # 3/4
        "brew install on macos",  # 2/4
    ]
    assert [d.metadata["retrieval_rank"] for d in out] == [1, 3, 2]
    assert out[0].metadata == {
        "source": "web",
        "relevance_score": 1.0,
        "retrieval_rank": 1,
        "retrieval_score": None,  # set on every Document: None when it had no score
    }
    # A score in the metadata of another retriever's Document is its retrieval score;
    # only remy's own Documents (with a citation) have their score replaced.
    scored = Document(page_content="apt on linux", metadata={"score": 0.2})
    (rescored,) = RemyReranker(_Overlap()).compress_documents([scored], "install on linux apt")
    assert rescored.metadata == {
        "score": 0.2,
        "relevance_score": 0.75,
        "retrieval_rank": 1,
        "retrieval_score": 0.2,
    }
    assert RemyReranker(_Overlap()).compress_documents([], "anything") == []


async def test_in_contextual_compression_retriever(
    corpus_retriever: Retriever, cross_encoder: CrossEncoderReranker, install_query: str
) -> None:
    pipeline = ContextualCompressionRetriever(
        base_compressor=RemyReranker(cross_encoder, top_n=3),
        base_retriever=RemyRetriever(corpus_retriever, k=6),
    )

    docs = pipeline.invoke(install_query)
    async_docs = await pipeline.ainvoke(install_query)

    assert len(docs) == 3
    assert async_docs == docs
    scores = [d.metadata["relevance_score"] for d in docs]
    assert scores == sorted(scores, reverse=True)
    assert all(d.metadata["source"].endswith(".md") for d in docs)


def test_bad_rerankers_are_rejected() -> None:
    with pytest.raises(InvalidInputError, match="cross-encoder name or path"):
        RemyReranker(True)  # type: ignore[arg-type]
    with pytest.raises(InvalidInputError, match="returned 1 scores for 2 texts"):
        RemyReranker(_Short()).compress_documents(
            [Document(page_content="a"), Document(page_content="b")], "q"
        )


class _Overlap:
    """A tiny real Reranker: the share of query words found in the text."""

    def score(self, query: str, texts: Sequence[str]) -> list[float]:
        words = set(query.lower().split())
        return [len(words & set(t.lower().split())) / len(words) for t in texts]


class _Short:
    def score(self, query: str, texts: Sequence[str]) -> list[float]:
        return [0.5]

""":class:`RemyRerank`: cross-encoder reranking of any retriever's nodes."""

from __future__ import annotations

from typing import Any

from llama_index.core.bridge.pydantic import Field
from llama_index.core.callbacks import CallbackManager
from llama_index.core.postprocessor.types import BaseNodePostprocessor
from llama_index.core.schema import MetadataMode, NodeWithScore, QueryBundle

from remy_retriever import InvalidInputError
from remy_retriever.integration import Reranked, Reranker, rerank, reranker_for, rescored_metadata

__all__ = ["RemyRerank"]

#: What reranking adds to a node's metadata, kept out of what embedders and LLMs see.
_ADDED_KEYS = ("retrieval_score", "retrieval_rank")


class RemyRerank(BaseNodePostprocessor):
    """Rerank nodes from any retriever with a remy ``Reranker`` (a cross-encoder by
    default), keeping the retrieval rank and score: remy's own reranking semantics
    (:func:`remy_retriever.integration.rerank`).

    Each returned node is a copy whose ``score`` is the reranker's score (0-1 for
    cross-encoders) and whose metadata gains ``retrieval_rank`` (the 1-based incoming
    position) and ``retrieval_score`` (the incoming ``NodeWithScore.score``, ``None`` when
    it has none). Nodes made by :class:`~llama_index.retrievers.remy.RemyRetriever` (they
    carry ``metadata["citation"]``) also get ``metadata["score"]`` and
    ``explain["rerankScore"]`` updated, so :func:`~llama_index.retrievers.remy.node_to_hit`
    gives the hit remy's own reranking would. Nodes come back best first (ties keep their
    incoming order), at most ``top_n``. The text scored is the node content without
    metadata. ``apostprocess_nodes`` scores in a worker thread.

    Setup:
        The cross-encoder must be available locally: pass its directory, or a name that
        is in the Hugging Face cache (``HF_HUB_OFFLINE=1`` forbids downloads).

    Usage:
        >>> from llama_index.core.query_engine import RetrieverQueryEngine
        >>> rerank = RemyRerank("/models/ms-marco-MiniLM-L6-v2", top_n=3)
        >>> engine = RetrieverQueryEngine.from_args(
        ...     RemyRetriever(engine, similarity_top_k=10), node_postprocessors=[rerank]
        ... )
        >>> nodes = rerank.postprocess_nodes(nodes, query_str="install on linux")
    """

    reranker: Any = Field(exclude=True, description="The Reranker that scores (query, texts).")
    top_n: int | None = Field(
        default=3, ge=1, description="How many nodes to keep; None keeps them all."
    )

    def __init__(
        self,
        reranker: Reranker | str,
        *,
        top_n: int | None = 3,
        callback_manager: CallbackManager | None = None,
    ) -> None:
        fields: dict[str, Any] = {
            "reranker": reranker_for(reranker, owner="RemyRerank"),
            "top_n": top_n,
            "callback_manager": callback_manager or CallbackManager(),
        }
        super().__init__(**fields)

    @classmethod
    def class_name(cls) -> str:
        return "RemyRerank"

    def _postprocess_nodes(
        self, nodes: list[NodeWithScore], query_bundle: QueryBundle | None = None
    ) -> list[NodeWithScore]:
        if query_bundle is None:
            msg = (
                "RemyRerank needs the query: call postprocess_nodes(nodes, query_str=...) "
                "or pass a query_bundle"
            )
            raise InvalidInputError(msg)
        ranked = rerank(
            query_bundle.query_str,
            nodes,
            self.reranker,
            text=lambda n: n.node.get_content(metadata_mode=MetadataMode.NONE),
            score=lambda n: n.score,
        )
        return [_rescored(r) for r in ranked[: self.top_n]]


def _rescored(r: Reranked[NodeWithScore]) -> NodeWithScore:
    node = r.item.node
    metadata = rescored_metadata(node.metadata, r)
    embed, llm = node.excluded_embed_metadata_keys, node.excluded_llm_metadata_keys
    copy = node.model_copy(
        update={
            "metadata": metadata,
            "excluded_embed_metadata_keys": [*embed, *(k for k in _ADDED_KEYS if k not in embed)],
            "excluded_llm_metadata_keys": [*llm, *(k for k in _ADDED_KEYS if k not in llm)],
        }
    )
    return NodeWithScore(node=copy, score=r.score)

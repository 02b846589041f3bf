""":class:`RemyRerank`: cross-encoder reranking of any retriever's nodes."""

from __future__ import annotations

from typing import Any

from llama_index.core.bridge.pydantic import Field
from llama_index.core.callbacks import CallbackManager
from llama_index.core.postprocessor.types import BaseNodePostprocessor
from llama_index.core.schema import MetadataMode, NodeWithScore, QueryBundle

from remy_retriever import InvalidInputError
from remy_retriever.rerankers import Reranker, resolve_reranker

__all__ = ["RemyRerank"]


class RemyRerank(BaseNodePostprocessor):
    """Rerank nodes from any retriever with a remy :class:`~remy_retriever.rerankers.Reranker`
    (a cross-encoder by default), keeping the retrieval score and rank.

    Each returned node is a copy whose ``score`` is the reranker's score (0-1 for
    cross-encoders) and whose metadata gains ``retrieval_score`` (the incoming score) and
    ``retrieval_rank`` (the 1-based incoming position), the same fields remy's own
    reranking fills in. Nodes made by :class:`~llama_index.retrievers.remy.RemyRetriever`
    also get ``metadata["score"]`` and ``explain["rerankScore"]`` updated, so
    :func:`~llama_index.retrievers.remy.node_to_hit` gives a consistent hit. Nodes come
    back best first (ties keep their incoming order), at most ``top_n``. The text scored
    is the node content without metadata. ``apostprocess_nodes`` scores in a worker thread.

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
        if isinstance(reranker, bool) or reranker is None:
            msg = (
                f"RemyRerank needs a cross-encoder name or path, or an object with "
                f"score(query, texts); got {reranker!r}"
            )
            raise InvalidInputError(msg)
        fields: dict[str, Any] = {
            "reranker": resolve_reranker(reranker, None),
            "top_n": top_n,
            "callback_manager": callback_manager or CallbackManager(),
        }
        super().__init__(**fields)

    @classmethod
    def class_name(cls) -> str:
        return "RemyRerank"

    def _postprocess_nodes(
        self,
        nodes: list[NodeWithScore],
        query_bundle: QueryBundle | None = None,
    ) -> list[NodeWithScore]:
        if query_bundle is None:
            msg = (
                "RemyRerank needs the query: call postprocess_nodes(nodes, query_str=...) "
                "or pass a query_bundle"
            )
            raise InvalidInputError(msg)
        if not nodes:
            return []
        reranker: Reranker = self.reranker
        texts = [n.node.get_content(metadata_mode=MetadataMode.NONE) for n in nodes]
        scores = reranker.score(query_bundle.query_str, texts)
        if len(scores) != len(nodes):
            msg = (
                f"the reranker {type(reranker).__name__} returned {len(scores)} scores for "
                f"{len(nodes)} nodes; score() must return one float per text"
            )
            raise InvalidInputError(msg)
        ranked = [
            (float(value), rank, _rescored(item, float(value), rank))
            for rank, (item, value) in enumerate(zip(nodes, scores), start=1)
        ]
        ranked.sort(key=lambda entry: (-entry[0], entry[1]))
        out = [entry[2] for entry in ranked]
        return out if self.top_n is None else out[: self.top_n]


def _rescored(item: NodeWithScore, value: float, rank: int) -> NodeWithScore:
    metadata = dict(item.node.metadata)
    metadata["retrieval_score"] = item.score
    metadata["retrieval_rank"] = rank
    if "citation" in metadata:
        metadata["score"] = value
        explain = metadata.get("explain")
        if isinstance(explain, dict):
            metadata["explain"] = {**explain, "rerankScore": value}
    hidden = ("retrieval_score", "retrieval_rank")
    node = item.node.model_copy(
        update={
            "metadata": metadata,
            "excluded_embed_metadata_keys": _with(item.node.excluded_embed_metadata_keys, hidden),
            "excluded_llm_metadata_keys": _with(item.node.excluded_llm_metadata_keys, hidden),
        }
    )
    return NodeWithScore(node=node, score=value)


def _with(keys: list[str], extra: tuple[str, ...]) -> list[str]:
    return [*keys, *(k for k in extra if k not in keys)]

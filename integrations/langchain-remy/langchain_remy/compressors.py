""":class:`RemyReranker`: cross-encoder reranking of any retriever's Documents."""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from typing import Any

from langchain_core.callbacks import Callbacks
from langchain_core.documents import Document
from langchain_core.documents.compressor import BaseDocumentCompressor
from pydantic import ConfigDict, Field

from remy_retriever.integration import Reranked, Reranker, rerank, reranker_for, rescored_metadata

__all__ = ["RemyReranker"]


class RemyReranker(BaseDocumentCompressor):
    """Rerank Documents from any retriever with a remy ``Reranker`` (a cross-encoder by
    default), keeping the retrieval rank and score: remy's own reranking semantics
    (:func:`remy_retriever.integration.rerank`).

    Each returned Document is a copy whose metadata gains ``relevance_score`` (the
    reranker's score, 0-1 for cross-encoders), ``retrieval_rank`` (its 1-based position
    in the incoming list) and ``retrieval_score`` (its incoming ``metadata["score"]``,
    ``None`` when it has none). Documents made by :class:`~langchain_remy.RemyRetriever`
    (they carry ``metadata["citation"]``) also get ``score`` set to the relevance and
    ``explain["rerankScore"]`` filled in, so :func:`~langchain_remy.document_to_hit`
    gives the hit remy's own reranking would. Documents come back best first (ties keep
    their incoming order), at most ``top_n``; ``acompress_documents`` scores in a worker
    thread.

    Setup:
        The cross-encoder must be available locally: pass its directory, or a name that
        is in the Hugging Face cache (``HF_HUB_OFFLINE=1`` forbids downloads).

    Usage:
        >>> from langchain_classic.retrievers import ContextualCompressionRetriever
        >>> reranker = RemyReranker("cross-encoder/ms-marco-MiniLM-L6-v2", top_n=3)
        >>> pipeline = ContextualCompressionRetriever(
        ...     base_compressor=reranker, base_retriever=RemyRetriever(engine, k=20)
        ... )
        >>> docs = pipeline.invoke("install on linux")
        >>> docs[0].metadata["relevance_score"], docs[0].metadata["retrieval_rank"]
    """

    model_config = ConfigDict(arbitrary_types_allowed=True)

    reranker: Reranker
    """Scores ``(query, texts)``; a model name or path becomes a ``CrossEncoderReranker``."""
    top_n: int | None = Field(default=3, ge=1)
    """How many Documents to keep; ``None`` keeps them all (reordered)."""

    def __init__(self, reranker: Reranker | str, **kwargs: Any) -> None:
        super().__init__(**{**kwargs, "reranker": reranker_for(reranker, owner="RemyReranker")})

    def compress_documents(
        self, documents: Sequence[Document], query: str, callbacks: Callbacks | None = None
    ) -> Sequence[Document]:
        """Rescore ``documents`` against ``query``; return the best ``top_n``, best first."""
        ranked = rerank(
            query,
            documents,
            self.reranker,
            text=lambda doc: doc.page_content,
            score=lambda doc: doc.metadata.get("score"),
        )
        return [_rescored(r) for r in ranked[: self.top_n]]

    async def acompress_documents(
        self, documents: Sequence[Document], query: str, callbacks: Callbacks | None = None
    ) -> Sequence[Document]:
        """:meth:`compress_documents` in a worker thread."""
        return await asyncio.to_thread(self.compress_documents, documents, query, callbacks)


def _rescored(r: Reranked[Document]) -> Document:
    doc = r.item
    metadata = {**rescored_metadata(doc.metadata, r), "relevance_score": r.score}
    return Document(id=doc.id, page_content=doc.page_content, metadata=metadata)

""":class:`RemyReranker`: cross-encoder reranking of any retriever's Documents."""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from typing import Any

from langchain_core.callbacks import Callbacks
from langchain_core.documents import Document
from langchain_core.documents.compressor import BaseDocumentCompressor
from pydantic import ConfigDict, Field

from remy_retriever import InvalidInputError
from remy_retriever.rerankers import Reranker, resolve_reranker

__all__ = ["RemyReranker"]


class RemyReranker(BaseDocumentCompressor):
    """Rerank Documents from any retriever with a remy :class:`~remy_retriever.rerankers.Reranker`
    (a cross-encoder by default).

    Each returned Document is a copy with ``metadata["relevance_score"]`` (the reranker's
    score, 0-1 for cross-encoders) and ``metadata["retrieval_rank"]`` (its 1-based position
    in the incoming list). Documents made by :class:`~langchain_remy.RemyRetriever` are
    also rescored the way remy's own reranking does it: ``retrieval_score`` takes their
    previous ``score``, ``score`` becomes the relevance and ``explain["rerankScore"]`` is
    filled in, so :func:`~langchain_remy.document_to_hit` still gives a consistent hit.
    Documents are returned best first (ties keep their incoming order), at most ``top_n``.

    ``acompress_documents`` scores in a worker thread (the model is synchronous).

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
        if isinstance(reranker, bool) or reranker is None:
            msg = (
                f"RemyReranker needs a cross-encoder name or path, or an object with "
                f"score(query, texts); got {reranker!r}"
            )
            raise InvalidInputError(msg)
        fields: dict[str, Any] = {**kwargs, "reranker": resolve_reranker(reranker, None)}
        super().__init__(**fields)

    def compress_documents(
        self,
        documents: Sequence[Document],
        query: str,
        callbacks: Callbacks | None = None,
    ) -> Sequence[Document]:
        """Rescore ``documents`` against ``query``; return the best ``top_n``, best first."""
        docs = list(documents)
        if not docs:
            return []
        scores = self.reranker.score(query, [doc.page_content for doc in docs])
        if len(scores) != len(docs):
            msg = (
                f"the reranker {type(self.reranker).__name__} returned {len(scores)} scores "
                f"for {len(docs)} documents; score() must return one float per text"
            )
            raise InvalidInputError(msg)
        ranked = [
            _rescored(doc, float(value), rank)
            for rank, (doc, value) in enumerate(zip(docs, scores), start=1)
        ]
        ranked.sort(key=lambda d: (-d.metadata["relevance_score"], d.metadata["retrieval_rank"]))
        return ranked if self.top_n is None else ranked[: self.top_n]

    async def acompress_documents(
        self,
        documents: Sequence[Document],
        query: str,
        callbacks: Callbacks | None = None,
    ) -> Sequence[Document]:
        """:meth:`compress_documents` in a worker thread."""
        return await asyncio.to_thread(self.compress_documents, documents, query, callbacks)


def _rescored(doc: Document, value: float, rank: int) -> Document:
    metadata = dict(doc.metadata)
    metadata["relevance_score"] = value
    metadata["retrieval_rank"] = rank
    if "score" in metadata and "citation" in metadata:
        metadata["retrieval_score"] = metadata["score"]
        metadata["score"] = value
        explain = metadata.get("explain")
        if isinstance(explain, dict):
            metadata["explain"] = {**explain, "rerankScore": value}
    return Document(id=doc.id, page_content=doc.page_content, metadata=metadata)

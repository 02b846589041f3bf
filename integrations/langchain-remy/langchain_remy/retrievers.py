""":class:`RemyRetriever`: remy-retriever as a LangChain ``BaseRetriever``."""

from __future__ import annotations

import asyncio
import os
from collections.abc import Mapping
from typing import Any, Literal

from langchain_core.callbacks import (
    AsyncCallbackManagerForRetrieverRun,
    CallbackManagerForRetrieverRun,
)
from langchain_core.documents import Document
from langchain_core.retrievers import BaseRetriever, LangSmithRetrieverParams
from pydantic import Field, StrictBool, StrictStr, field_validator

from remy_retriever import Embedder, Retriever, SearchHit, SearchOptions
from remy_retriever.integration import (
    FIELD_OPTIONS,
    Reranker,
    build_options,
    check_search_kwargs,
    open_engine,
)

from .convert import hits_to_documents

__all__ = ["RemyRetriever"]

#: ``invoke`` passes its own ``verbose`` flag along with the search options; ignore it.
_IGNORED_CALL_KWARGS = frozenset({"verbose"})


class RemyRetriever(BaseRetriever):
    """Hybrid (BM25 + dense) retrieval over Chroma, returning cited LangChain Documents.

    Each :class:`~remy_retriever.SearchHit` becomes a ``Document`` whose ``id`` is the
    chunk id and whose metadata holds the citation (``metadata["citation"]``, wire form),
    the flat keys ``source``, ``title``, ``document_id``, ``chunk_index``,
    ``heading_path``, ``page`` and ``page_end`` (``None`` without pages), the scores
    ``score`` / ``retrieval_rank`` / ``retrieval_score``, ``explain`` / ``neighbors`` /
    ``matches`` when asked for, and the chunk's own metadata.
    :func:`~langchain_remy.document_to_hit` turns it back into the exact hit.

    The fields below are the defaults of every search; each one (and any other
    :class:`~remy_retriever.SearchOptions` name, such as ``candidates`` or ``fusion``)
    can be overridden for one call: ``retriever.invoke(query, k=3, where={"tenant":
    "a"})``. A per-call value replaces the default, it is not merged with it (this
    matters for ``where``). Unknown options raise :class:`~remy_retriever.InvalidInputError`.

    ``ainvoke`` runs the (synchronous) search in a worker thread with
    :func:`asyncio.to_thread`, so it never blocks the event loop.

    Setup:
        ``pip install langchain-remy`` (it depends on remy-retriever). Build the store
        once with ``Retriever.ingest`` / ``Retriever.add``, or point at an existing one.

    Usage:
        >>> from remy_retriever import Retriever
        >>> from langchain_remy import RemyRetriever
        >>> engine = Retriever("./remy_data", collection="docs")
        >>> retriever = RemyRetriever(engine, k=4)                   # an existing engine
        >>> retriever = RemyRetriever(path="./remy_data", collection="docs", k=4)
        >>> docs = retriever.invoke("install on linux", where={"tenant": "a"}, k=3)
        >>> docs[0].metadata["source"], docs[0].metadata["heading_path"]
    """

    retriever: Retriever
    """The remy-retriever engine that runs the searches."""
    k: int = Field(default=4, ge=1)
    """Number of Documents to return."""
    mode: Literal["semantic", "lexical", "hybrid"] = "hybrid"
    """``"hybrid"`` (BM25 and dense, fused), ``"semantic"`` or ``"lexical"``."""
    where: dict[str, Any] | None = None
    """Chroma-style metadata filter, applied inside every branch before fusion."""
    rerank: StrictBool | StrictStr | Reranker | None = None
    """``True``, a cross-encoder name or path, or a ``Reranker``; ``None`` uses the
    engine's own reranker if it has one."""
    rerank_depth: int = Field(default=30, ge=1)
    """How many candidates the reranker rescores."""
    min_score: float | None = None
    """Drop hits whose final score is below this."""
    explain: bool = False
    """Add ``metadata["explain"]``: per-branch ranks and scores, fused and rerank score."""
    expand: int | bool = 0
    """Add ``metadata["neighbors"]``: this many chunks of context either side."""
    highlight: bool = False
    """Add ``metadata["matches"]``: spans of the text that match query terms."""
    search_kwargs: dict[str, Any] = Field(default_factory=dict)
    """Defaults for the other search options (``candidates``, ``fusion``, ``weights``,
    ``rrf_k``, ``alpha``)."""

    def __init__(
        self,
        retriever: Retriever | None = None,
        *,
        path: str | os.PathLike[str] | None = None,
        client: Any = None,
        collection: str | None = None,
        embedder: Embedder | str | None = None,
        lexical_path: str | os.PathLike[str] | None = None,
        reranker: Reranker | str | None = None,
        **kwargs: Any,
    ) -> None:
        engine, opened = open_engine(
            retriever,
            owner="RemyRetriever",
            path=path,
            client=client,
            collection=collection,
            embedder=embedder,
            lexical_path=lexical_path,
            reranker=reranker,
        )
        try:
            super().__init__(**{**kwargs, "retriever": engine})
        except Exception:
            if opened:  # do not leave the store we just opened locked
                engine.close()
            raise

    @field_validator("search_kwargs")
    @classmethod
    def _check_search_kwargs(cls, value: dict[str, Any]) -> dict[str, Any]:
        # InvalidInputError is a ValueError, so pydantic reports it as a ValidationError.
        return check_search_kwargs(value, owner="RemyRetriever")

    def _options(self, overrides: Mapping[str, Any] | None) -> SearchOptions:
        fields = {name: getattr(self, name) for name in FIELD_OPTIONS}
        calls = {k: v for k, v in (overrides or {}).items() if k not in _IGNORED_CALL_KWARGS}
        return build_options(fields, self.search_kwargs, calls, owner="RemyRetriever")

    def search_options(self, overrides: Mapping[str, Any] | None = None) -> dict[str, Any]:
        """The options one search runs with, as ``Retriever.search`` keywords: the
        retriever's defaults updated with ``overrides`` (the ``invoke`` keywords)."""
        options = self._options(overrides)
        return {name: getattr(options, name) for name in SearchOptions.names()}

    def search(self, query: str, **overrides: Any) -> list[SearchHit]:
        """Run one search and return the raw :class:`~remy_retriever.SearchHit` objects
        (what ``invoke`` converts to Documents)."""
        return self.retriever.search(query, self._options(overrides))

    def _get_relevant_documents(
        self, query: str, *, run_manager: CallbackManagerForRetrieverRun, **kwargs: Any
    ) -> list[Document]:
        return hits_to_documents(self.search(query, **kwargs))

    async def _aget_relevant_documents(
        self, query: str, *, run_manager: AsyncCallbackManagerForRetrieverRun, **kwargs: Any
    ) -> list[Document]:
        options = self._options(kwargs)
        return hits_to_documents(await asyncio.to_thread(self.retriever.search, query, options))

    def _get_ls_params(self, **kwargs: Any) -> LangSmithRetrieverParams:
        params = super()._get_ls_params(**kwargs)
        params["ls_vector_store_provider"] = "Chroma"
        model_id = getattr(self.retriever.embedder, "model_id", None)
        if isinstance(model_id, str):
            params["ls_embedding_model"] = model_id
        return params

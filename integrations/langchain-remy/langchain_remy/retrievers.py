""":class:`RemyRetriever`: remy-retriever as a LangChain ``BaseRetriever``."""

from __future__ import annotations

import asyncio
import inspect
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

from remy_retriever import Embedder, InvalidInputError, Retriever, SearchHit
from remy_retriever.rerankers import Reranker

from .convert import hits_to_documents

__all__ = ["RemyRetriever"]

#: Every keyword option of ``Retriever.search``; each may be overridden per call.
SEARCH_OPTIONS = frozenset(
    name
    for name, param in inspect.signature(Retriever.search).parameters.items()
    if param.kind is inspect.Parameter.KEYWORD_ONLY
)
#: Options with a field of their own on :class:`RemyRetriever`.
_FIELD_OPTIONS = (
    "k",
    "mode",
    "where",
    "rerank",
    "rerank_depth",
    "min_score",
    "explain",
    "expand",
    "highlight",
)
#: ``invoke`` passes its own ``verbose`` flag along with the search options; ignore it.
_IGNORED_CALL_KWARGS = frozenset({"verbose"})


class RemyRetriever(BaseRetriever):
    """Hybrid (BM25 + dense) retrieval over Chroma, returning cited LangChain Documents.

    Each :class:`~remy_retriever.SearchHit` becomes a ``Document`` whose ``id`` is the
    chunk id and whose metadata holds the citation (``metadata["citation"]``, wire form),
    the flat keys ``source``, ``title``, ``document_id``, ``chunk_index`` and
    ``heading_path``, the scores ``score`` / ``retrieval_rank`` / ``retrieval_score``,
    ``explain`` / ``neighbors`` / ``matches`` when asked for, and the chunk's own
    metadata. :func:`~langchain_remy.document_to_hit` turns it back into the exact hit.

    The fields below are the defaults of every search; each one (and any other keyword
    option of ``Retriever.search``, such as ``candidates`` or ``fusion``) can be
    overridden for one call: ``retriever.invoke(query, k=3, where={"tenant": "a"})``.
    A per-call value replaces the default, it is not merged with it (this matters for
    ``where``). Unknown options raise :class:`~remy_retriever.InvalidInputError`.

    ``ainvoke`` is truly asynchronous for the caller: the search engine is synchronous,
    so :meth:`_aget_relevant_documents` runs it in a worker thread with
    :func:`asyncio.to_thread` and never blocks the event loop.

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
    """Defaults for the other ``Retriever.search`` options (``candidates``, ``fusion``,
    ``weights``, ``rrf_k``, ``alpha``)."""

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
        opening = {
            "path": path,
            "client": client,
            "collection": collection,
            "embedder": embedder,
            "lexical_path": lexical_path,
            "reranker": reranker,
        }
        given = sorted(name for name, value in opening.items() if value is not None)
        opened = retriever is None
        if retriever is None:
            if path is None and client is None:
                msg = (
                    "RemyRetriever needs a store: pass an existing engine "
                    "(RemyRetriever(Retriever('./remy_data'), k=4)) or path=/client= to open "
                    f"one (RemyRetriever(path='./remy_data', collection='docs')); got {given}"
                )
                raise InvalidInputError(msg)
            retriever = Retriever(
                path,
                collection=collection or "docs",
                client=client,
                embedder=embedder,
                lexical_path=lexical_path,
                reranker=reranker,
            )
        elif given:
            msg = (
                f"pass either an existing Retriever or {', '.join(given)} to open one, not both; "
                "configure the Retriever itself when you already have one"
            )
            raise InvalidInputError(msg)
        fields: dict[str, Any] = {**kwargs, "retriever": retriever}
        try:
            super().__init__(**fields)
        except Exception:
            if opened:  # do not leave the store we just opened locked
                retriever.close()
            raise

    @field_validator("search_kwargs")
    @classmethod
    def _check_search_kwargs(cls, value: dict[str, Any]) -> dict[str, Any]:
        unknown = sorted(set(value) - SEARCH_OPTIONS)
        if unknown:
            msg = (
                f"search_kwargs has unknown option(s) {unknown}; "
                f"Retriever.search accepts {sorted(SEARCH_OPTIONS)}"
            )
            raise ValueError(msg)
        own = sorted(set(value) & set(_FIELD_OPTIONS))
        if own:
            msg = (
                f"set {own} as RemyRetriever fields (e.g. RemyRetriever(..., k=3)), "
                "not in search_kwargs"
            )
            raise ValueError(msg)
        return value

    def search_options(self, overrides: Mapping[str, Any] | None = None) -> dict[str, Any]:
        """The keyword options one search runs with: the retriever's defaults updated with
        ``overrides`` (the ``invoke`` keyword arguments)."""
        options: dict[str, Any] = dict(self.search_kwargs)
        options.update((name, getattr(self, name)) for name in _FIELD_OPTIONS)
        if overrides:
            unknown = sorted(set(overrides) - SEARCH_OPTIONS - _IGNORED_CALL_KWARGS)
            if unknown:
                msg = (
                    f"RemyRetriever got unknown search option(s) {unknown}; "
                    f"pass any of {sorted(SEARCH_OPTIONS)}"
                )
                raise InvalidInputError(msg)
            options.update(
                (name, value) for name, value in overrides.items() if name in SEARCH_OPTIONS
            )
        return options

    def search(self, query: str, **overrides: Any) -> list[SearchHit]:
        """Run one search and return the raw :class:`~remy_retriever.SearchHit` objects
        (what ``invoke`` converts to Documents)."""
        return self.retriever.search(query, **self.search_options(overrides))

    def _get_relevant_documents(
        self,
        query: str,
        *,
        run_manager: CallbackManagerForRetrieverRun,
        **kwargs: Any,
    ) -> list[Document]:
        return hits_to_documents(self.search(query, **kwargs))

    async def _aget_relevant_documents(
        self,
        query: str,
        *,
        run_manager: AsyncCallbackManagerForRetrieverRun,
        **kwargs: Any,
    ) -> list[Document]:
        """Search without blocking the event loop: the engine is synchronous (Chroma,
        tantivy, torch), so it runs in a worker thread via :func:`asyncio.to_thread`."""
        options = self.search_options(kwargs)
        hits = await asyncio.to_thread(self.retriever.search, query, **options)
        return hits_to_documents(hits)

    def _get_ls_params(self, **kwargs: Any) -> LangSmithRetrieverParams:
        params = super()._get_ls_params(**kwargs)
        params["ls_vector_store_provider"] = "Chroma"
        model_id = getattr(self.retriever.embedder, "model_id", None)
        if isinstance(model_id, str):
            params["ls_embedding_model"] = model_id
        return params

""":class:`RemyRetriever`: remy-retriever as a LlamaIndex ``BaseRetriever``."""

from __future__ import annotations

import asyncio
import os
from collections.abc import Mapping
from typing import Any, Literal

from llama_index.core.base.base_retriever import BaseRetriever
from llama_index.core.callbacks import CallbackManager
from llama_index.core.schema import NodeWithScore, QueryBundle

from remy_retriever import Embedder, InvalidInputError, Retriever, SearchHit, SearchOptions
from remy_retriever.integration import (
    FIELD_OPTIONS,
    Reranker,
    build_options,
    check_int,
    check_search_kwargs,
    open_engine,
)

from .convert import hits_to_nodes
from .docstore import RemyDocumentStore

__all__ = ["RemyRetriever"]

Mode = Literal["semantic", "lexical", "hybrid"]
#: The attributes that hold search options: ``FIELD_OPTIONS``, with ``k`` named
#: ``similarity_top_k`` as in LlamaIndex's own retrievers.
_OWN = ("similarity_top_k", *(name for name in FIELD_OPTIONS if name != "k"))


class RemyRetriever(BaseRetriever):
    """Hybrid (BM25 + dense) retrieval over Chroma, returning cited LlamaIndex nodes.

    Each :class:`~remy_retriever.SearchHit` becomes ``NodeWithScore(node=TextNode(...),
    score=hit.score)``: ``id_`` is the chunk id, ``metadata`` holds the citation (wire
    form) with the flat keys ``source``, ``title``, ``document_id``, ``chunk_index``,
    ``heading_path``, ``page``, ``page_end`` and the scores ``score`` /
    ``retrieval_rank`` / ``retrieval_score``;
    ``start_char_idx`` / ``end_char_idx`` come from the citation; ``relationships`` link
    the document (``SOURCE``) and the neighbouring chunks (``PREVIOUS`` / ``NEXT``),
    whether or not ``expand`` was asked for. :func:`~llama_index.retrievers.remy.node_to_hit`
    turns a node back into the exact hit.

    LlamaIndex's ``retrieve`` takes only a query, so the search options are set on the
    retriever (``similarity_top_k`` is remy's ``k``; ``search_kwargs`` holds the other
    :class:`~remy_retriever.SearchOptions`, such as ``fusion``). For per-request options
    (a tenant's ``where``, a different ``k``) derive a retriever with :meth:`with_options`:
    it shares the engine and costs nothing. The options are validated before a store is
    opened, so a mistake leaves nothing open.

    ``aretrieve`` runs the (synchronous) search in a worker thread with
    :func:`asyncio.to_thread`, so it never blocks the event loop.

    Setup:
        ``pip install llama-index-retrievers-remy`` (it depends on remy-retriever). Build
        the store once with ``Retriever.ingest`` / ``Retriever.add``.

    Usage:
        >>> from remy_retriever import Retriever
        >>> from llama_index.retrievers.remy import RemyRetriever
        >>> engine = Retriever("./remy_data", collection="docs")
        >>> retriever = RemyRetriever(engine, similarity_top_k=4)
        >>> retriever = RemyRetriever(path="./remy_data", collection="docs")
        >>> nodes = retriever.with_options(where={"tenant": "a"}).retrieve("install on linux")
        >>> nodes[0].node.metadata["source"], nodes[0].score
    """

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
        similarity_top_k: int = 4,
        mode: Mode = "hybrid",
        where: Mapping[str, Any] | None = None,
        rerank: bool | str | Reranker | None = None,
        rerank_depth: int = 30,
        min_score: float | None = None,
        explain: bool = False,
        expand: int | bool = 0,
        highlight: bool = False,
        search_kwargs: Mapping[str, Any] | None = None,
        callback_manager: CallbackManager | None = None,
        verbose: bool = False,
    ) -> None:
        check_int("similarity_top_k", similarity_top_k)  # the message names LlamaIndex's name
        self.similarity_top_k = similarity_top_k
        self.mode: Mode = mode
        self.where = None if where is None else dict(where)
        self.rerank = rerank
        self.rerank_depth = rerank_depth
        self.min_score = min_score
        self.explain = explain
        self.expand = expand
        self.highlight = highlight
        self.search_kwargs = check_search_kwargs(
            search_kwargs, owner="RemyRetriever (similarity_top_k is k)"
        )
        self._options()  # validate every option before opening a store
        self.retriever, _ = open_engine(
            retriever,
            owner="RemyRetriever",
            path=path,
            client=client,
            collection=collection,
            embedder=embedder,
            lexical_path=lexical_path,
            reranker=reranker,
        )
        super().__init__(callback_manager=callback_manager, verbose=verbose)

    def with_options(self, **options: Any) -> RemyRetriever:
        """A retriever on the same engine with some options replaced, e.g.
        ``with_options(where={"tenant": "b"}, similarity_top_k=3)``. Accepts the
        constructor's search options and ``search_kwargs`` keys; ``where`` replaces the
        current filter, it is not merged with it."""
        others = SearchOptions.names() - set(FIELD_OPTIONS)
        for name in sorted(set(options) - set(_OWN) - others):
            msg = (
                f"with_options got unknown option {name!r}; use {', '.join(_OWN)} or one of "
                f"{sorted(others)}"
            )
            raise InvalidInputError(msg)
        own = {name: options.pop(name, getattr(self, name)) for name in _OWN}
        return RemyRetriever(
            self.retriever,
            search_kwargs={**self.search_kwargs, **options},
            callback_manager=self.callback_manager,
            verbose=self._verbose,
            **own,
        )

    def _options(self) -> SearchOptions:
        fields = {name: getattr(self, name) for name in _OWN}
        fields["k"] = fields.pop("similarity_top_k")
        return build_options(fields, self.search_kwargs, owner="RemyRetriever")

    def search_options(self) -> dict[str, Any]:
        """The options each search runs with, as ``Retriever.search`` keywords."""
        options = self._options()
        return {name: getattr(options, name) for name in SearchOptions.names()}

    def search(self, query: str) -> list[SearchHit]:
        """Run one search and return the raw :class:`~remy_retriever.SearchHit` objects
        (what ``retrieve`` converts to nodes)."""
        return self.retriever.search(query, self._options())

    def docstore(self) -> RemyDocumentStore:
        """A live, read-only docstore on this retriever's store, under its ``where``: give
        it to ``PrevNextNodePostprocessor(docstore=...)`` to follow the ``PREVIOUS`` /
        ``NEXT`` of the nodes this retriever returns (read on demand, always current)."""
        return RemyDocumentStore(self.retriever, where=self.where)

    def _retrieve(self, query_bundle: QueryBundle) -> list[NodeWithScore]:
        return hits_to_nodes(self.search(query_bundle.query_str))

    async def _aretrieve(self, query_bundle: QueryBundle) -> list[NodeWithScore]:
        return hits_to_nodes(await asyncio.to_thread(self.search, query_bundle.query_str))

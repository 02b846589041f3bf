""":class:`RemyRetriever`: remy-retriever as a LlamaIndex ``BaseRetriever``."""

from __future__ import annotations

import asyncio
import inspect
import os
from collections.abc import Mapping
from typing import Any, Literal

from llama_index.core.base.base_retriever import BaseRetriever
from llama_index.core.callbacks import CallbackManager
from llama_index.core.schema import NodeWithScore, QueryBundle

from remy_retriever import Embedder, InvalidInputError, Retriever, SearchHit
from remy_retriever.rerankers import Reranker

from .convert import hits_to_nodes

__all__ = ["RemyRetriever"]

Mode = Literal["semantic", "lexical", "hybrid"]
_MODES = ("semantic", "lexical", "hybrid")

#: Every keyword option of ``Retriever.search``.
SEARCH_OPTIONS = frozenset(
    name
    for name, param in inspect.signature(Retriever.search).parameters.items()
    if param.kind is inspect.Parameter.KEYWORD_ONLY
)
#: Options with an argument of their own (``similarity_top_k`` is ``k``).
_OWN_OPTIONS = (
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


class RemyRetriever(BaseRetriever):
    """Hybrid (BM25 + dense) retrieval over Chroma, returning cited LlamaIndex nodes.

    Each :class:`~remy_retriever.SearchHit` becomes ``NodeWithScore(node=TextNode(...),
    score=hit.score)``: ``id_`` is the chunk id, ``metadata`` holds the citation (wire
    form) with the flat keys ``source``, ``title``, ``document_id``, ``chunk_index``,
    ``heading_path`` and the scores ``score`` / ``retrieval_rank`` / ``retrieval_score``;
    ``start_char_idx`` / ``end_char_idx`` come from the citation; ``relationships`` link
    the document (``SOURCE``) and the neighbouring chunks (``PREVIOUS`` / ``NEXT``),
    whether or not ``expand`` was asked for. :func:`~llama_index.retrievers.remy.node_to_hit`
    turns a node back into the exact hit.

    LlamaIndex's ``retrieve`` takes only a query, so the search options are set on the
    retriever. For per-request options (a tenant's ``where``, a different ``k``) derive a
    retriever with :meth:`with_options`: it shares the engine and costs nothing.

    ``aretrieve`` does not block the event loop: the engine is synchronous, so
    :meth:`_aretrieve` runs the search in a worker thread with :func:`asyncio.to_thread`.

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
        # Validate the options before opening a store, so a mistake leaves nothing open.
        _check_top_k(similarity_top_k)
        if mode not in _MODES:
            msg = f"unknown mode {mode!r}; use one of {', '.join(repr(m) for m in _MODES)}"
            raise InvalidInputError(msg)
        extra = dict(search_kwargs or {})
        unknown = sorted(set(extra) - SEARCH_OPTIONS)
        if unknown:
            msg = (
                f"search_kwargs has unknown option(s) {unknown}; "
                f"Retriever.search accepts {sorted(SEARCH_OPTIONS)}"
            )
            raise InvalidInputError(msg)
        own = sorted(set(extra) & set(_OWN_OPTIONS))
        if own:
            msg = (
                f"pass {own} as RemyRetriever arguments (k is similarity_top_k), "
                "not in search_kwargs"
            )
            raise InvalidInputError(msg)
        opening = {
            "path": path,
            "client": client,
            "collection": collection,
            "embedder": embedder,
            "lexical_path": lexical_path,
            "reranker": reranker,
        }
        given = sorted(name for name, value in opening.items() if value is not None)
        if retriever is None:
            if path is None and client is None:
                msg = (
                    "RemyRetriever needs a store: pass an existing engine "
                    "(RemyRetriever(Retriever('./remy_data'))) or path=/client= to open one "
                    f"(RemyRetriever(path='./remy_data', collection='docs')); got {given}"
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
        elif not isinstance(retriever, Retriever):
            msg = (
                f"retriever must be a remy_retriever.Retriever, got {type(retriever).__name__}; "
                "open one with Retriever(path, collection=...) or pass path=/client="
            )
            raise InvalidInputError(msg)
        elif given:
            msg = (
                f"pass either an existing Retriever or {', '.join(given)} to open one, not both; "
                "configure the Retriever itself when you already have one"
            )
            raise InvalidInputError(msg)
        self.retriever = retriever
        self.similarity_top_k = similarity_top_k
        self.mode: Mode = mode
        self.where = None if where is None else dict(where)
        self.rerank = rerank
        self.rerank_depth = rerank_depth
        self.min_score = min_score
        self.explain = explain
        self.expand = expand
        self.highlight = highlight
        self.search_kwargs = extra
        super().__init__(callback_manager=callback_manager, verbose=verbose)

    def with_options(self, **options: Any) -> RemyRetriever:
        """A retriever on the same engine with some options replaced, e.g.
        ``with_options(where={"tenant": "b"}, similarity_top_k=3)``. Accepts the
        constructor's search options and ``search_kwargs`` keys; ``where`` replaces the
        current filter, it is not merged with it."""
        current: dict[str, Any] = {
            "similarity_top_k": self.similarity_top_k,
            "mode": self.mode,
            "where": self.where,
            "rerank": self.rerank,
            "rerank_depth": self.rerank_depth,
            "min_score": self.min_score,
            "explain": self.explain,
            "expand": self.expand,
            "highlight": self.highlight,
        }
        extra = dict(self.search_kwargs)
        for name, value in options.items():
            if name in current:
                current[name] = value
            elif name in SEARCH_OPTIONS and name != "k":
                extra[name] = value
            else:
                msg = (
                    f"with_options got unknown option {name!r}; use similarity_top_k, mode, "
                    "where, rerank, rerank_depth, min_score, explain, expand, highlight or "
                    f"one of {sorted(SEARCH_OPTIONS - set(_OWN_OPTIONS))}"
                )
                raise InvalidInputError(msg)
        return RemyRetriever(
            self.retriever,
            search_kwargs=extra,
            callback_manager=self.callback_manager,
            verbose=self._verbose,
            **current,
        )

    def search_options(self) -> dict[str, Any]:
        """The keyword options each search runs with (``Retriever.search`` names)."""
        return {
            **self.search_kwargs,
            "k": self.similarity_top_k,
            "mode": self.mode,
            "where": self.where,
            "rerank": self.rerank,
            "rerank_depth": self.rerank_depth,
            "min_score": self.min_score,
            "explain": self.explain,
            "expand": self.expand,
            "highlight": self.highlight,
        }

    def search(self, query: str) -> list[SearchHit]:
        """Run one search and return the raw :class:`~remy_retriever.SearchHit` objects
        (what ``retrieve`` converts to nodes)."""
        return self.retriever.search(query, **self.search_options())

    def _retrieve(self, query_bundle: QueryBundle) -> list[NodeWithScore]:
        return hits_to_nodes(self.search(query_bundle.query_str))

    async def _aretrieve(self, query_bundle: QueryBundle) -> list[NodeWithScore]:
        """Search without blocking the event loop: the engine is synchronous (Chroma,
        tantivy, torch), so it runs in a worker thread via :func:`asyncio.to_thread`."""
        hits = await asyncio.to_thread(self.search, query_bundle.query_str)
        return hits_to_nodes(hits)


def _check_top_k(value: object) -> None:
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        msg = f"similarity_top_k must be an int >= 1, got {value!r}"
        raise InvalidInputError(msg)

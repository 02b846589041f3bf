"""The search entry points the facade delegates to, one call each.

Every search a door can make (``Retriever.search``, ``rank``, ``calibrated_search``,
``search_documents``, and so the memory search, the CLI, HTTP, MCP and both adapters)
resolves its options here, once, with :func:`~remy_retriever.schema.options.resolve_options`:
the call's keywords, then a passed ``SearchOptions``, then the collection's stored config
(read afresh, at most a generation check old), then the defaults.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping
from typing import Any, TypeVar

from ..models.rerankers import Reranker
from ..schema.hits import SearchHit
from ..schema.options import (
    TUNABLE,
    DocumentSearchOptions,
    SearchOptions,
    check_int,
    resolve_options,
    validate_query,
)
from ..stores.dense import GENERATION_MAX_AGE, DenseStore
from ..supermemory.responses import DocumentSearchResponse
from .calibration import ScoredHit
from .grouped import search_documents
from .pipeline import SearchPipeline

T = TypeVar("T")

__all__ = ["Searches"]

_log = logging.getLogger(__name__)

#: The options ``rank`` takes (the ranking does not depend on the others).
RANK_OPTIONS = frozenset(
    {"mode", "candidates", "where", "fusion", "weights", "rrf_k", "alpha"} | set(TUNABLE)
)
#: The options ``search_documents`` takes: its grouping options and the search options
#: it does not set itself (it sets ``k``, ``candidates``, ``rerank_depth``, ``explain``).
DOCUMENT_SEARCH_OPTIONS = (
    frozenset({"mode", "where", "rerank", "fusion", "weights", "rrf_k", "alpha"})
    | set(TUNABLE)
    | DocumentSearchOptions.names()
)


class Searches:
    """The searches of one collection: option resolution, then its pipeline."""

    def __init__(self, pipeline: SearchPipeline) -> None:
        self.pipeline = pipeline

    def resolve(
        self,
        options: SearchOptions | None,
        keywords: Mapping[str, Any],
        *,
        what: str,
        allowed: frozenset[str] | None = None,
    ) -> SearchOptions:
        """The options of one call (:func:`~remy_retriever.schema.options.resolve_options`)."""
        _warn_if_created_empty(self.pipeline.sync.dense)
        stored = self.pipeline.sync.search_config(max_age=GENERATION_MAX_AGE)
        return resolve_options(stored, options, keywords, what=what, allowed=allowed)

    def search(
        self,
        query: str,
        options: SearchOptions | None,
        keywords: Mapping[str, Any],
        *,
        reranker: Reranker | None,
    ) -> list[SearchHit]:
        text = validate_query(query)
        opts = self.resolve(options, keywords, what="search()")
        return self._one_view(lambda: self.pipeline.run(text, opts, default_reranker=reranker))

    def _one_view(self, fn: Callable[[], T]) -> T:
        """One search's reads come from one collection of vectors, checked once at the end
        (:meth:`~remy_retriever.stores.dense.DenseStore.consistent`)."""
        return self.pipeline.sync.dense.consistent(fn)

    def rank(self, query: str, keywords: Mapping[str, Any]) -> list[tuple[str, float]]:
        text = validate_query(query)
        opts = self.resolve(None, keywords, what="rank()", allowed=RANK_OPTIONS)
        return self._one_view(lambda: self.pipeline.rank(text, opts.replace(k=1))[0])

    def calibrated(
        self, query: str, keywords: Mapping[str, Any], *, reranker: Reranker | None
    ) -> list[ScoredHit]:
        """Hits with 0-1 relevance; ``keywords`` hold ``mode``, ``k``, ``where``,
        ``rerank`` and ``candidates`` (at least ``k``); every ``k`` hit is reranked."""
        text = validate_query(query)
        call = dict(keywords)
        k = check_int("k", call["k"])
        call.update(rerank_depth=k, explain=call["mode"] == "hybrid")
        call["candidates"] = max(check_int("candidates", call["candidates"]), k)
        opts = self.resolve(None, call, what="calibrated_search()")
        return self._one_view(lambda: self.pipeline.scored(text, opts, default_reranker=reranker))

    def documents(
        self,
        query: str,
        options: SearchOptions | None,
        keywords: Mapping[str, Any],
        *,
        reranker: Reranker | None,
    ) -> DocumentSearchResponse:
        """Document search; ``rerank`` is off unless the call or ``options`` ask."""
        grouping, rest = DocumentSearchOptions.split(keywords)
        what = "search_documents()"
        opts = self.resolve(options, rest, what=what, allowed=DOCUMENT_SEARCH_OPTIONS)
        if "rerank" not in opts.explicit:
            opts = opts.replace(rerank=False)
        text = validate_query(query)
        table = self.pipeline.sync.table
        return self._one_view(
            lambda: search_documents(
                self.pipeline, table, text, opts, grouping, default_reranker=reranker
            )
        )


def _warn_if_created_empty(dense: DenseStore) -> None:
    """Before the first search of a collection this open created: warn when it is empty,
    as a mistyped path or collection name creates a new, empty one that finds nothing.
    One count, once (the flag is cleared)."""
    if not dense.created:
        return
    dense.created = False
    if dense.count() == 0:
        _log.warning(
            "searching %s, which this open created and which is empty: check the path and "
            "the collection name (create=False refuses a store or collection that does "
            "not exist)",
            dense.where,
        )

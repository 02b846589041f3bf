"""The search pipeline: branches -> fusion -> hits -> rerank -> enrich.

:meth:`SearchPipeline.rank` runs the branches (dense in Chroma, BM25 on the lexical
index, both under the same filter) and fuses them by chunk id; :meth:`SearchPipeline.run`
turns the top of that ranking into cited hits, reranks them on request and adds what
was asked for (highlights, neighbours). Options arrive validated (:class:`SearchOptions`).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import replace

import numpy as np

from ..errors import ModelLoadError
from ..filters import matches, to_chroma
from ..hits import SearchHit
from ..options import SearchOptions
from ..records import to_hit
from ..rerankers import Reranker, resolve_reranker
from ..stores.sync import StoreSync
from ..text.analysis import analyze_query, sanitize
from . import fusion
from .calibration import ScoredHit, calibrate, query_ceiling
from .enrich import distinctive_terms, explain_hit, highlight, with_neighbors
from .query_cache import QUERY_VECTORS
from .rerank import rerank_hits

__all__ = ["Branches", "Ranking", "SearchPipeline", "query_vector"]

#: The embedder sees at most this many characters of a query (models truncate anyway).
EMBED_QUERY_CHARS = 4_000
#: Each branch's ranking: ``(chunk id, raw score)`` best first.
Branches = dict[str, list[tuple[str, float]]]
#: The fused ranking and the branches it came from.
Ranking = tuple[list[tuple[str, float]], Branches]


class SearchPipeline:
    """Searches one pair of synced stores."""

    def __init__(self, sync: StoreSync) -> None:
        self.sync = sync

    def rank(self, query: str, options: SearchOptions) -> Ranking:
        """Run the branches of ``options.mode`` and fuse: ``(fused, per-branch lists)``."""
        branches: Branches = {}
        pool = options.pool
        if options.mode in ("semantic", "hybrid"):
            # Lone surrogates become U+FFFD: model tokenizers reject them.
            text = sanitize(query[:EMBED_QUERY_CHARS])
            dense = self.sync.dense
            identity = dense.identity
            vector = QUERY_VECTORS.get_or_embed(
                identity.key if identity is not None else None,
                text,
                lambda t: query_vector(dense.embedder.embed_query(t)),
            )
            branches["semantic"] = dense.query(vector, pool, to_chroma(options.filter))
        if options.mode in ("lexical", "hybrid"):
            branches["lexical"] = self.sync.search_lexical(query, pool, options.filter)
        if options.mode != "hybrid":
            return branches[options.mode], branches
        if options.fusion == "convex":
            weights = {"semantic": options.alpha, "lexical": 1.0 - options.alpha}
            return fusion.convex(branches, weights=weights), branches
        return fusion.rrf(branches, k=options.rrf_k, weights=options.branch_weights), branches

    def run(
        self, query: str, options: SearchOptions, *, default_reranker: Reranker | None
    ) -> list[SearchHit]:
        """Up to ``options.k`` cited hits, best first."""
        reranker = resolve_reranker(options.rerank, default_reranker)
        ranked, branches = self.rank(query, options)
        limit = max(options.k, options.rerank_depth) if reranker is not None else options.k
        hits = self.hits(query, options, ranked, branches, limit=limit)
        if reranker is not None:
            hits = rerank_hits(sanitize(query), hits, reranker)
        hits = hits[: options.k]
        if options.min_score is not None:
            hits = [h for h in hits if h.score >= options.min_score]
        if options.highlight:
            idf = self.sync.lexical.idf(analyze_query(query), options.filter)
            terms = distinctive_terms(query, idf)
            hits = [replace(h, matches=highlight(h.text, terms)) for h in hits]
        if options.expand:
            hits = with_neighbors(self.sync.dense, hits, int(options.expand), options.filter)
        return hits

    def hits(
        self,
        query: str,
        options: SearchOptions,
        ranked: Sequence[tuple[str, float]],
        branches: Mapping[str, Sequence[tuple[str, float]]],
        *,
        limit: int,
    ) -> list[SearchHit]:
        """Fetch records for the top of ``ranked`` and build hits. Records that no longer
        exist, or whose metadata fails the filter (a stale lexical entry), are dropped
        here: nothing outside the filter is ever returned."""
        positions = {
            name: {cid: (rank, score) for rank, (cid, score) in enumerate(items, start=1)}
            for name, items in branches.items()
        }
        norms = (
            {name: fusion.normalize_scores(items) for name, items in branches.items()}
            if options.explain and options.mode == "hybrid" and options.fusion == "convex"
            else {}
        )
        out: list[SearchHit] = []
        start = 0
        while len(out) < limit and start < len(ranked):
            window = ranked[start : start + limit + 8]
            start += len(window)
            records = {r[0]: r for r in self.sync.dense.get(ids=[cid for cid, _ in window])}
            for cid, score in window:
                record = records.get(cid)
                if record is None or not matches(options.filter, record[2]):
                    continue
                info = None
                if options.explain:
                    info = explain_hit(options, query, cid, score, positions, norms, record[1])
                out.append(to_hit(record, score, info))
                if len(out) == limit:
                    break
        return out

    def scored(
        self, query: str, options: SearchOptions, *, default_reranker: Reranker | None
    ) -> list[ScoredHit]:
        """:meth:`run`, each hit with its 0-1 relevance (:mod:`.calibration`)."""
        hits = self.run(query, options, default_reranker=default_reranker)
        ceiling = 0.0
        if options.mode != "semantic" and any(h.retrieval_rank is None for h in hits):
            ceiling = query_ceiling(query, lambda t: self.sync.lexical.idf(t, options.filter))
        return calibrate(hits, mode=options.mode, ceiling=ceiling)


def query_vector(raw: object) -> np.ndarray:
    """What ``embed_query`` returned, checked: one non-empty row of finite numbers, else
    :class:`ModelLoadError` (a query must not search with None, NaN or a matrix)."""
    try:
        vector = np.asarray(raw, dtype=np.float32)
    except (TypeError, ValueError, OverflowError) as exc:
        msg = (
            f"the embedder's embed_query returned {type(raw).__name__}, not numbers ({exc}); "
            "it must return one vector (a 1-D array of floats)"
        )
        raise ModelLoadError(msg) from exc
    if vector.ndim != 1 or vector.size == 0:
        msg = (
            f"the embedder's embed_query returned shape {vector.shape}; it must return one "
            "vector (a 1-D array of floats)"
        )
        raise ModelLoadError(msg)
    if not np.isfinite(vector).all():
        msg = "the embedder's embed_query returned NaN or infinite values; check the model"
        raise ModelLoadError(msg)
    return vector

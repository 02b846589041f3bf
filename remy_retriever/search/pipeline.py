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
from ..models.rerankers import Reranker, resolve_reranker
from ..schema.filters import matches, to_chroma
from ..schema.hits import FusionWeights, SearchHit
from ..schema.options import SearchOptions
from ..schema.records import to_hit
from ..stores.sync import StoreSync
from ..text.analysis import sanitize
from . import fusion
from .calibration import ScoredHit, bm25_ceiling, calibrate, query_ceiling, query_term_counts
from .enrich import distinctive_terms, explain_hit, highlight, with_neighbors
from .fusion import Convex
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
        fused, branches, _ = self.fuse(query, options)
        return fused, branches

    def fuse(
        self, query: str, options: SearchOptions
    ) -> tuple[list[tuple[str, float]], Branches, Convex | None]:
        """:meth:`rank`, plus what a convex fusion combined (for ``explain``)."""
        branches, vector = self.branches(query, options)
        if options.mode != "hybrid":
            return branches[options.mode], branches, None
        extra = {}
        if options.fill != "none" and options.fusion == "convex":
            extra = self.fill(query, vector, branches, options)
        scales = idf = None
        signals = options.adaptive == "signals"
        if options.fusion == "convex" and (options.normalization == "calibrated" or signals):
            # One idf lookup gives the BM25 ceiling and the signals' term rarity.
            counts = query_term_counts(query, self.sync.lexical.analyzer.terms)
            idf = self.sync.lexical.idf(list(counts), options.filter)
            scales = {"lexical": bm25_ceiling(counts, idf)}
        ranked, detail = fusion.fuse(
            branches,
            fusion=options.fusion,
            alpha=options.alpha,
            normalization=options.normalization,
            adaptive=options.adaptive,
            rrf_k=options.rrf_k,
            rrf_weights=options.branch_weights,
            extra=extra,
            scales=scales,
            idf=idf,
        )
        return ranked, branches, detail

    def ceiling(self, query: str, options: SearchOptions) -> float:
        """The query's BM25 ceiling (:func:`.calibration.query_ceiling`) under the filter."""
        lexical = self.sync.lexical
        return query_ceiling(
            query, lambda t: lexical.idf(t, options.filter), lexical.analyzer.terms
        )

    def branches(self, query: str, options: SearchOptions) -> tuple[Branches, np.ndarray | None]:
        """Each branch's list for ``options.mode``, and the query vector (``None`` in
        lexical mode)."""
        branches: Branches = {}
        vector = None
        if options.mode in ("semantic", "hybrid"):
            # Lone surrogates become U+FFFD: model tokenizers reject them.
            text = sanitize(query[:EMBED_QUERY_CHARS])
            dense = self.sync.dense
            embedder = dense.embedder
            identity = dense.identity
            # The identity names the vector space (from document vectors); the class says
            # how queries are embedded, which can differ between embedders of one space.
            kind = f"{type(embedder).__module__}.{type(embedder).__qualname__}"
            vector = QUERY_VECTORS.get_or_embed(
                f"{identity.key}|{kind}" if identity is not None else None,
                text,
                lambda t: query_vector(embedder.embed_query(t)),
            )
            branches["semantic"] = dense.query(vector, options.pool, to_chroma(options.filter))
        if options.mode in ("lexical", "hybrid"):
            branches["lexical"] = self.sync.search_lexical(query, options.pool, options.filter)
        return branches, vector

    def fill(
        self, query: str, vector: np.ndarray | None, branches: Branches, options: SearchOptions
    ) -> dict[str, dict[str, float]]:
        """The raw scores ``options.fill`` asks for, of the chunks only the other branch
        listed: ``semantic``, their cosine (Chroma, exact over those ids); ``lexical``,
        their BM25 (0 when no query term occurs); ``both``. Both reads keep the search's
        filter, and the ids come from a filtered branch."""
        sem_ids = {cid for cid, _ in branches["semantic"]}
        lex_ids = {cid for cid, _ in branches["lexical"]}
        only_lex = sorted(lex_ids - sem_ids) if options.fill in ("semantic", "both") else []
        only_sem = sorted(sem_ids - lex_ids) if options.fill in ("lexical", "both") else []
        extra: dict[str, dict[str, float]] = {"semantic": {}, "lexical": {}}
        if only_lex and vector is not None:
            where = to_chroma(options.filter)
            got = self.sync.dense.query(vector, len(only_lex), where, among=only_lex)
            extra["semantic"] = dict(got)
        if only_sem:  # the lexical branch caught the index up a moment ago
            got = self.sync.lexical.search(query, len(only_sem), options.filter, only_sem)
            extra["lexical"] = {cid: 0.0 for cid in only_sem} | dict(got)
        return extra

    def run(
        self, query: str, options: SearchOptions, *, default_reranker: Reranker | None
    ) -> list[SearchHit]:
        """Up to ``options.k`` cited hits, best first."""
        reranker = resolve_reranker(options.rerank, default_reranker)
        ranked, branches, detail = self.fuse(query, options)
        limit = max(options.k, options.rerank_depth) if reranker is not None else options.k
        hits = self.hits(query, options, ranked, branches, limit=limit, detail=detail)
        if reranker is not None:
            hits = rerank_hits(sanitize(query), hits, reranker)
        hits = hits[: options.k]
        if options.min_score is not None:
            hits = [h for h in hits if h.score >= options.min_score]
        if options.highlight:
            analyzer = self.sync.lexical.analyzer
            idf = self.sync.lexical.idf(analyzer.query_terms(query), options.filter)
            terms = distinctive_terms(query, idf, analyzer=analyzer)
            hits = [replace(h, matches=highlight(h.text, terms, analyzer)) for h in hits]
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
        detail: Convex | None = None,
    ) -> list[SearchHit]:
        """Fetch records for the top of ``ranked`` and build hits. Records that no longer
        exist, or whose metadata fails the filter (a stale lexical entry), are dropped
        here: nothing outside the filter is ever returned."""
        positions = {
            name: {cid: (rank, score) for rank, (cid, score) in enumerate(items, start=1)}
            for name, items in branches.items()
        }
        parts = None if detail is None else (detail.weights, detail.norms)
        adapted = None
        if detail is not None and detail.adapted is not None:
            got = detail.adapted
            adapted = FusionWeights(dict(detail.weights), got.base, dict(got.pulls), got.reason)
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
                    info = explain_hit(
                        options,
                        query,
                        cid,
                        score,
                        positions,
                        parts,
                        record[1],
                        adapted=adapted,
                        analyzer=self.sync.lexical.analyzer,
                    )
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
            ceiling = self.ceiling(query, options)
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

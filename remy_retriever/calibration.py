"""0-1 relevance for search hits in every mode, for the document and memory responses.

Raw retrieval scores live on different scales (cosine, BM25, RRF sums); the wire
responses promise a score in [0, 1]. :func:`calibrated_search` runs a search and maps each
hit's score to [0, 1] by the rule of its mode:

- **semantic**: the cosine similarity, clipped to [0, 1] (the embedder's own scale; the
  spec's bands read naturally on it).
- **lexical**: the BM25 score divided by the highest BM25 score the query can reach in
  this index, ``(k1 + 1) * sum_t c_t * idf(t)`` over the query's distinct analysed terms
  ``t`` (``c_t`` = times ``t`` occurs in the query, ``k1 = 1.2``). A BM25 term contributes
  at most ``idf(t) * (k1 + 1)``, so the ratio is in [0, 1] (clipped, since tantivy's idf
  also counts deleted chunks until they merge). It is absolute per query, not relative to
  the other hits: a chunk holding every query term once at average length scores about
  0.45, a chunk matching only a common term scores near 0.
- **hybrid** (reciprocal-rank fusion): the fused score divided by the largest sum the
  fusion can give, ``sum_b w_b / (rrf_k + 1)`` (first in every branch); with the default
  weights 1 and ``rrf_k = 60``, first in both branches is 1.0, first in one branch only
  0.5, tenth in both 0.87.
- **reranked** (any mode): the reranker's 0-1 relevance, as is (clipped to [0, 1]).

Score calibration is pure arithmetic on what the search returns; it never reorders hits.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from .analysis import MAX_QUERY_TERMS, analyze
from .hits import SearchHit

if TYPE_CHECKING:
    from .rerank import Reranker
    from .retriever import Retriever

__all__ = [
    "BM25_K1",
    "RRF_K",
    "ScoredHit",
    "bm25_ceiling",
    "calibrated_search",
    "clip01",
    "hybrid_relevance",
    "lexical_relevance",
]

#: tantivy's BM25 ``k1`` (the per-term score is at most ``idf * (k1 + 1)``).
BM25_K1 = 1.2
#: The RRF constant the calibrated searches use (``Retriever.search``'s default).
RRF_K = 60.0
_WEIGHTS: Mapping[str, float] = {"semantic": 1.0, "lexical": 1.0}


@dataclass(frozen=True)
class ScoredHit:
    """A search hit with its calibrated 0-1 ``relevance`` (``hit.score`` stays raw)."""

    hit: SearchHit
    relevance: float


def clip01(value: float) -> float:
    """``value`` clipped to [0, 1] (NaN becomes 0)."""
    if not value > 0.0:
        return 0.0
    return 1.0 if value > 1.0 else float(value)


def query_term_counts(query: str) -> dict[str, int]:
    """The query's analysed terms and how often each occurs, as the lexical index counts
    them (first-seen order, at most ``MAX_QUERY_TERMS`` distinct terms)."""
    counts: dict[str, int] = {}
    for term in analyze(query):
        if term in counts:
            counts[term] += 1
        elif len(counts) < MAX_QUERY_TERMS:
            counts[term] = 1
    return counts


def bm25_ceiling(counts: Mapping[str, int], idf: Mapping[str, float]) -> float:
    """The highest BM25 score a query with these term counts can reach:
    ``(k1 + 1) * sum_t c_t * idf(t)``."""
    return (BM25_K1 + 1.0) * sum(c * idf.get(t, 0.0) for t, c in counts.items())


def lexical_relevance(score: float, ceiling: float) -> float:
    """A BM25 score as a fraction of the query's ceiling (see :func:`bm25_ceiling`)."""
    return clip01(score / ceiling) if ceiling > 0 else 0.0


def hybrid_relevance(
    score: float, *, weights: Mapping[str, float] = _WEIGHTS, rrf_k: float = RRF_K
) -> float:
    """An RRF sum divided by its maximum, ``sum_b w_b / (rrf_k + 1)``."""
    top = sum(weights.values()) / (rrf_k + 1.0)
    return clip01(score / top) if top > 0 else 0.0


def calibrated_search(
    retriever: Retriever,
    query: str,
    *,
    mode: str = "hybrid",
    k: int = 10,
    where: Mapping[str, Any] | None = None,
    rerank: bool | str | Reranker | None = False,
    candidates: int = 100,
) -> list[ScoredHit]:
    """``retriever.search`` (RRF fusion with default weights and ``rrf_k``), each hit with
    its 0-1 relevance by the rules in this module's docstring. ``rerank`` reranks all
    ``k`` hits: ``False`` never reranks, ``None`` uses the retriever's own reranker if it
    has one, ``True``/a name/a :class:`Reranker` as in ``Retriever.search``."""
    hits = retriever.search(
        query,
        mode=mode,  # type: ignore[arg-type]  # validated by search
        k=k,
        where=where,
        rerank=rerank,
        rerank_depth=k,
        candidates=max(candidates, k),
    )
    return calibrate(retriever, query, hits, mode=mode)


def calibrate(
    retriever: Retriever, query: str, hits: Sequence[SearchHit], *, mode: str
) -> list[ScoredHit]:
    """Attach the 0-1 relevance to hits from a ``mode`` search with RRF defaults."""
    if not hits:
        return []
    counts = query_term_counts(query) if mode != "semantic" else {}
    ceiling = 0.0
    if mode == "lexical" and any(h.retrieval_rank is None for h in hits):
        ceiling = bm25_ceiling(counts, retriever.lexical.idf(list(counts)))
    # A query without indexable terms leaves the lexical branch empty: the best fused
    # score is then the semantic branch's alone.
    weights = _WEIGHTS if counts else {"semantic": _WEIGHTS["semantic"]}
    out = []
    for hit in hits:
        if hit.retrieval_rank is not None or mode == "semantic":
            # Reranked (the reranker's 0-1 relevance) or cosine similarity.
            value = clip01(hit.score)
        elif mode == "lexical":
            value = lexical_relevance(hit.score, ceiling)
        else:
            value = hybrid_relevance(hit.score, weights=weights)
        out.append(ScoredHit(hit, value))
    return out

"""0-1 relevance for search hits in every mode, for the document and memory responses.

Raw retrieval scores live on different scales (cosine, BM25, convex or RRF fusion); the
wire responses promise a score in [0, 1]. :func:`calibrate` maps each hit's score to
[0, 1] by the rule of its mode (the search pipeline calls it with the query's BM25
ceiling, :func:`query_ceiling`):

- **semantic**: the cosine similarity, clipped to [0, 1] (the embedder's own scale; the
  spec's bands read naturally on it).
- **lexical**: the BM25 score divided by the highest BM25 score the query can reach in
  this index, ``(k1 + 1) * sum_t c_t * idf(t)`` over the query's distinct analysed terms
  ``t`` (``c_t`` = times ``t`` occurs in the query, ``k1 = 1.2``). A BM25 term contributes
  at most ``idf(t) * (k1 + 1)``, so the ratio is in [0, 1] (clipped, since tantivy's idf
  also counts deleted chunks until they merge). It is absolute per query, not relative to
  the other hits: a chunk holding every query term once at average length scores about
  0.45, a chunk matching only a common term scores near 0.
- **hybrid**: the mean of the two calibrated branch scores,
  ``0.5 * cosine + 0.5 * BM25/ceiling``, each as above, from the branch scores the
  search reports (``explain``); a branch that did not return the chunk among its
  candidates counts 0, and a query with no indexable terms (only stopwords) uses the
  cosine alone. Hits keep the search's fused order; callers that rank by the calibrated
  score (document and memory search do) re-sort.
- **reranked** (any mode): the reranker's 0-1 relevance, as is (clipped to [0, 1]).

Why these rules: the calibrated cosine and BM25-over-ceiling scores are absolute per
query, so the top score tells a query whose answer is in the collection from one whose
answer is not; an RRF sum over its maximum is rank-based, puts nearly every top hit near 1
and supports no threshold. Documents take their best chunk's score, which ranked documents
better than the mean, a noisy-or or the best plus a share of the rest. The answerability
and ranking measurements behind both choices are in docs/decisions/0001-fusion-default.md
(the record of the fusion default).

Calibration is pure arithmetic on what the search returns; it never reorders hits.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass

from ..errors import InvalidInputError
from ..schema.hits import SearchHit
from ..text.analysis import MAX_QUERY_TERMS, analyze

__all__ = [
    "BM25_K1",
    "ScoredHit",
    "bm25_ceiling",
    "calibrate",
    "clip01",
    "hybrid_relevance",
    "lexical_relevance",
    "query_ceiling",
    "query_term_counts",
]

#: tantivy's BM25 ``k1`` (the per-term score is at most ``idf * (k1 + 1)``).
BM25_K1 = 1.2


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


def query_term_counts(query: str, terms: Callable[[str], list[str]] = analyze) -> dict[str, int]:
    """The query's analysed terms and how often each occurs, as the lexical index counts
    them (first-seen order, at most ``MAX_QUERY_TERMS`` distinct terms)."""
    counts: dict[str, int] = {}
    for term in terms(query):
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


def hybrid_relevance(cosine: float | None, bm25: float | None, ceiling: float) -> float:
    """The mean of the calibrated branch scores (a branch that missed the chunk counts
    0); the cosine alone when the query has no indexable terms (``ceiling == 0``)."""
    semantic = 0.0 if cosine is None else clip01(cosine)
    if ceiling <= 0:
        return semantic
    lexical = 0.0 if bm25 is None else lexical_relevance(bm25, ceiling)
    return 0.5 * semantic + 0.5 * lexical


def query_ceiling(
    query: str,
    idf: Callable[[list[str]], Mapping[str, float]],
    terms: Callable[[str], list[str]] = analyze,
) -> float:
    """The BM25 ceiling of ``query`` (:func:`bm25_ceiling`), with ``idf`` looking up the
    idf of the query's analysed terms in the index."""
    counts = query_term_counts(query, terms)
    return bm25_ceiling(counts, idf(list(counts)))


def calibrate(hits: Sequence[SearchHit], *, mode: str, ceiling: float) -> list[ScoredHit]:
    """Attach the 0-1 relevance to hits from a ``mode`` search (hybrid hits need their
    ``explain``, for the branch scores); ``ceiling`` is the query's BM25 ceiling
    (:func:`query_ceiling`; unused in semantic mode and for reranked hits)."""
    out = []
    for hit in hits:
        if hit.retrieval_rank is not None or mode == "semantic":
            # Reranked (the reranker's 0-1 relevance) or cosine similarity.
            value = clip01(hit.score)
        elif mode == "lexical":
            value = lexical_relevance(hit.score, ceiling)
        else:
            if hit.explain is None:
                msg = "hybrid hits need explain=True for calibration (the branch scores)"
                raise InvalidInputError(msg)
            branches = hit.explain.branches
            cosine = branches["semantic"].score if "semantic" in branches else None
            bm25 = branches["lexical"].score if "lexical" in branches else None
            value = hybrid_relevance(cosine, bm25, ceiling)
        out.append(ScoredHit(hit, value))
    return out

"""Rank fusion, as pure functions over ranked lists of ids. No I/O.

Fusion is by id, never by text; the result is ``(id, fused score)`` best first, ties
broken by the best rank the id reached in any list, then by id.

- :func:`rrf`: weighted reciprocal-rank fusion (scores ignored).
- :func:`convex`: a weighted sum of each branch's normalised scores. The normalisation
  (:data:`NORMALIZATIONS`) takes its statistics from the branch's own list, then applies
  them to every score of that branch, including the ``extra`` scores a caller may add
  for ids the branch did not list (the pipeline's ``fill``: the cosine of a chunk only
  the lexical branch found, the BM25 score of one only the dense branch found). An id
  with no score in a branch gets the lowest normalised score of that branch's list (0
  for min-max).
- :func:`peak_alpha`: a query-adaptive semantic weight, from how peaked each branch's
  scores are.
- :func:`query_signals` and :func:`signal_alpha`: a query-adaptive semantic weight from
  label-free signals of the query and both lists (peakedness, top-k agreement, how much
  of the query's BM25 ceiling the best lexical chunk reached, the rarity of the query's
  terms), with the reasons ``explain`` reports.
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

__all__ = [
    "NORMALIZATIONS",
    "SIGNAL_WEIGHTS",
    "Convex",
    "QuerySignals",
    "QueryWeights",
    "combine",
    "convex",
    "fuse",
    "normalize",
    "normalize_scores",
    "peak_alpha",
    "peakedness",
    "query_signals",
    "rrf",
    "signal_alpha",
]

Ranked = Sequence[tuple[str, float]]
#: How :func:`normalize` maps a branch's raw scores to a common scale: ``calibrated``
#: ``s / scale`` clipped to [0, 1], an absolute scale that ignores the list (the
#: search passes the cosine as is, scale 1, and BM25 over the query's BM25 ceiling, the
#: relevance of :mod:`.calibration`); ``minmax`` ``(s - min) / (max - min)``; ``zscore``
#: ``(s - mean) / std``; ``dbsf`` (distribution-based, as Qdrant's DBSF)
#: ``(s - (mean - 3 std)) / (6 std)`` clipped to [0, 1]. The last three take their
#: statistics from the branch's own list.
NORMALIZATIONS: tuple[str, ...] = ("calibrated", "minmax", "zscore", "dbsf")


@dataclass(frozen=True)
class Convex:
    """What a convex fusion combined: each branch's normalised scores and the weights
    (after a query-adaptive change), so ``explain`` can report each branch's share."""

    norms: Mapping[str, Mapping[str, float]]
    weights: Mapping[str, float]
    #: How a query-adaptive fusion set the weights (``None``: fixed ``alpha``).
    adapted: QueryWeights | None = None


def rrf(
    ranked: Mapping[str, Ranked], *, k: float = 60.0, weights: Mapping[str, float] | None = None
) -> list[tuple[str, float]]:
    """Weighted reciprocal-rank fusion: ``score(d) = sum_b w_b / (k + rank_b(d))``.

    ``ranked`` maps a branch name to its list (best first; scores are ignored). Ranks are
    1-based. A missing weight counts as 1.
    """
    if k < 0:
        msg = f"rrf k must be >= 0, got {k}"
        raise ValueError(msg)
    fused: dict[str, float] = {}
    best: dict[str, int] = {}
    for branch, items in ranked.items():
        weight = 1.0 if weights is None else float(weights.get(branch, 1.0))
        for rank, (doc_id, _score) in enumerate(items, start=1):
            fused[doc_id] = fused.get(doc_id, 0.0) + weight / (k + rank)
            best[doc_id] = min(best.get(doc_id, rank), rank)
    return sorted(fused.items(), key=lambda item: (-item[1], best[item[0]], item[0]))


def normalize_scores(items: Ranked) -> dict[str, float]:
    """Min-max normalise one list's scores to [0, 1] (all-equal scores map to 1)."""
    return normalize(items, "minmax")


def _finite(items: Ranked) -> list[float]:
    return [s for _, s in items if math.isfinite(s)]


def normalize(
    items: Ranked,
    how: str = "minmax",
    extra: Mapping[str, float] | None = None,
    *,
    scale: float = 1.0,
) -> dict[str, float]:
    """Normalise a list's scores (and ``extra`` scores of ids outside it) by ``how``
    (:data:`NORMALIZATIONS`; ``scale`` is the ``calibrated`` divisor). Non-finite scores
    map to the lowest normalised value of the list."""
    if how not in NORMALIZATIONS:
        msg = f"unknown normalization {how!r}; use one of {', '.join(NORMALIZATIONS)}"
        raise ValueError(msg)
    values = _finite(items)
    if how == "calibrated":
        shift, clip = 0.0, True
    elif not values:
        shift, scale, clip = 0.0, 0.0, False
    elif how == "minmax":
        shift, scale, clip = min(values), max(values) - min(values), False
    else:
        mean = statistics.fmean(values)
        std = statistics.pstdev(values) if len(values) > 1 else 0.0
        shift, scale, clip = (
            (mean, std, False) if how == "zscore" else (mean - 3 * std, 6 * std, True)
        )
    # All-equal (or no) scores: min-max and DBSF map them to 1, z-scores to 0; a
    # calibrated branch without a scale (a query with no indexable terms) to 0.
    flat = 0.0 if how in ("zscore", "calibrated") else 1.0

    def norm(score: float) -> float:
        if scale <= 0:
            return flat
        value = (score - shift) / scale
        return min(1.0, max(0.0, value)) if clip else value

    out = {doc_id: norm(score) for doc_id, score in items if math.isfinite(score)}
    floor = min(out.values(), default=0.0)
    for doc_id, _ in items:
        out.setdefault(doc_id, floor)
    for doc_id, score in (extra or {}).items():
        if doc_id not in out:
            out[doc_id] = norm(score) if math.isfinite(score) else floor
    return out


def combine(
    norms: Mapping[str, Mapping[str, float]],
    ranked: Mapping[str, Ranked],
    weights: Mapping[str, float],
) -> list[tuple[str, float]]:
    """``sum_b w_b * norms[b][d]`` over every id any branch lists; an id a branch has no
    normalised score for gets that branch's lowest one."""
    floors = {b: min(n.values(), default=0.0) for b, n in norms.items()}
    best: dict[str, int] = {}
    for items in ranked.values():
        for rank, (doc_id, _) in enumerate(items, start=1):
            best[doc_id] = min(best.get(doc_id, rank), rank)
    fused = {
        doc_id: sum(float(weights.get(b, 0.0)) * n.get(doc_id, floors[b]) for b, n in norms.items())
        for doc_id in best
    }
    return sorted(fused.items(), key=lambda item: (-item[1], best[item[0]], item[0]))


def convex(
    ranked: Mapping[str, Ranked],
    *,
    weights: Mapping[str, float],
    normalization: str = "minmax",
    extra: Mapping[str, Mapping[str, float]] | None = None,
) -> list[tuple[str, float]]:
    """Convex combination of normalised scores: ``sum_b w_b * norm_b(d)``.

    With two branches the weights are ``alpha`` and ``1 - alpha``. ``extra`` maps a
    branch to raw scores of ids it did not list (see the module docstring)."""
    extra = extra or {}
    norms = {b: normalize(items, normalization, extra.get(b)) for b, items in ranked.items()}
    return combine(norms, ranked, weights)


def peakedness(items: Ranked) -> float:
    """How far a list's top score stands above the list, in standard deviations:
    ``(top - mean) / std`` (0 for fewer than two scores or no spread)."""
    values = _finite(items)
    if len(values) < 2:
        return 0.0
    std = statistics.pstdev(values)
    return (max(values) - statistics.fmean(values)) / std if std > 0 else 0.0


def peak_alpha(alpha: float, semantic: Ranked, lexical: Ranked) -> float:
    """A query's semantic weight: ``alpha`` scaled by the branches' :func:`peakedness`,
    ``alpha * p_s / (alpha * p_s + (1 - alpha) * p_l)`` (``alpha`` when both are flat).
    A branch whose best hit stands out from its list gets more of the say."""
    p_sem, p_lex = peakedness(semantic), peakedness(lexical)
    total = alpha * p_sem + (1.0 - alpha) * p_lex
    return alpha * p_sem / total if total > 0 else alpha


#: How many top ids of each list :func:`query_signals` compares for ``agreement``.
AGREEMENT_DEPTH = 10
#: A query term counts as rare when its BM25 idf is at least this: it occurs in about 1%
#: of the chunks or fewer (``ln(1 + 99)``).
RARE_IDF = math.log(100.0)
#: :func:`signal_alpha`'s pull of each signal on the semantic weight's log-odds.
SIGNAL_WEIGHTS: Mapping[str, float] = {"peak": 0.5, "coverage": -1.0, "rarity": -1.0}
#: The semantic branch's best cosine that :attr:`QuerySignals.cosine` counts as neutral.
COSINE_CENTRE = 0.65
_LIMIT = 0.95  # the adapted semantic weight stays in [1 - _LIMIT, _LIMIT]


@dataclass(frozen=True)
class QuerySignals:
    """Label-free signals of one query's two lists, each centred so 0 is neutral.

    ``peak``: ``ln(p_sem / p_lex)`` of the lists' :func:`peakedness`, clipped to
    [-2, 2]; ``agreement``: the share of the top :data:`AGREEMENT_DEPTH` ids both
    branches list, in [0, 1]; ``coverage``: the best lexical score over the query's BM25
    ceiling, minus 0.5 (near +0.5: the best chunk holds most of the query's terms);
    ``rarity``: the share of the query's terms that are rare (:data:`RARE_IDF`), minus
    0.5 (0 when no idf is given); ``cosine``: the semantic branch's best score minus ``centre``
    (:data:`COSINE_CENTRE`; how close the best chunk's meaning came);
    ``terms``: how many distinct analysed terms the query has."""

    peak: float
    agreement: float
    coverage: float
    rarity: float
    cosine: float
    terms: int


@dataclass(frozen=True)
class QueryWeights:
    """The semantic weight a query-adaptive fusion chose: ``alpha`` (from ``base``),
    the ``signals`` it read and, per signal, its ``pulls`` on the log-odds (positive:
    towards the semantic branch), already damped by the branches' agreement."""

    alpha: float
    base: float
    signals: QuerySignals | None
    pulls: Mapping[str, float]
    reason: str


def query_signals(
    semantic: Ranked,
    lexical: Ranked,
    *,
    idf: Mapping[str, float],
    ceiling: float,
    centre: float = COSINE_CENTRE,
) -> QuerySignals:
    """The :class:`QuerySignals` of one query: its two lists (best first), the idf of
    its analysed terms (as the lexical index counts them) and its BM25 ceiling."""
    p_sem, p_lex = peakedness(semantic), peakedness(lexical)
    peak = 0.0
    if p_sem > 0 and p_lex > 0:
        peak = min(2.0, max(-2.0, math.log(p_sem / p_lex)))
    top_sem = {d for d, _ in semantic[:AGREEMENT_DEPTH]}
    top_lex = {d for d, _ in lexical[:AGREEMENT_DEPTH]}
    depth = min(AGREEMENT_DEPTH, len(semantic), len(lexical))
    agreement = len(top_sem & top_lex) / depth if depth else 0.0
    best = lexical[0][1] if lexical else 0.0
    coverage = min(1.0, max(0.0, best / ceiling)) if ceiling > 0 and math.isfinite(best) else 0.0
    rare = sum(1 for v in idf.values() if v >= RARE_IDF)
    rarity = rare / len(idf) - 0.5 if idf else 0.0  # no idf known: neutral
    top = semantic[0][1] if semantic and math.isfinite(semantic[0][1]) else centre
    return QuerySignals(peak, agreement, coverage - 0.5, rarity, top - centre, len(idf))


def signal_alpha(
    alpha: float,
    semantic: Ranked,
    lexical: Ranked,
    *,
    idf: Mapping[str, float],
    ceiling: float,
    weights: Mapping[str, float] = SIGNAL_WEIGHTS,
    centre: float = COSINE_CENTRE,
    damped: bool = True,
) -> QueryWeights:
    """A query's semantic weight from its :class:`QuerySignals`:
    ``sigmoid(logit(alpha) + (1 - agreement) * sum_s weights[s] * signal_s)``, kept in
    [0.05, 0.95]. Branches that agree on their top hits leave ``alpha`` nearly as is;
    the more they disagree, the more the signals decide which one to trust. An empty
    lexical list (no query term in the index) gives the semantic branch all the weight;
    ``alpha`` of 0 or 1 is kept (one branch only)."""
    if not 0.0 < alpha < 1.0:
        return QueryWeights(alpha, alpha, None, {}, "alpha fixed at a single branch")
    if not lexical:
        return QueryWeights(1.0, alpha, None, {}, "the lexical branch matched no chunk")
    if not semantic:
        return QueryWeights(0.0, alpha, None, {}, "the semantic branch returned no chunk")
    signals = query_signals(semantic, lexical, idf=idf, ceiling=ceiling, centre=centre)
    damp = 1.0 - signals.agreement if damped else 1.0
    pulls = {
        name: damp * float(weight) * float(getattr(signals, name))
        for name, weight in weights.items()
        if weight
    }
    z = math.log(alpha / (1.0 - alpha)) + sum(pulls.values())
    adapted = min(_LIMIT, max(1.0 - _LIMIT, 1.0 / (1.0 + math.exp(-z))))
    named = sorted(pulls.items(), key=lambda kv: -abs(kv[1]))
    told = ", ".join(f"{n} {v:+.2f}" for n, v in named if abs(v) >= 0.005) or "none"
    reason = (
        f"top-{AGREEMENT_DEPTH} agreement {signals.agreement:.2f}; pulls on the log-odds "
        f"(+ semantic, - lexical): {told}"
    )
    return QueryWeights(adapted, alpha, signals, pulls, reason)


def fuse(
    branches: Mapping[str, Ranked],
    *,
    fusion: str,
    alpha: float,
    normalization: str = "minmax",
    adaptive: bool | str = False,
    rrf_k: float = 60.0,
    rrf_weights: Mapping[str, float] | None = None,
    extra: Mapping[str, Mapping[str, float]] | None = None,
    scales: Mapping[str, float] | None = None,
    idf: Mapping[str, float] | None = None,
) -> tuple[list[tuple[str, float]], Convex | None]:
    """Fuse a hybrid search's ``semantic`` and ``lexical`` lists as the search options
    say: RRF, or the convex combination (query-adaptive ``alpha`` with ``adaptive``;
    ``extra``: the filled-in scores; ``scales``: each branch's ``calibrated`` divisor,
    default 1; ``adaptive="signals"``: :func:`signal_alpha`, from the idf of the query's
    analysed terms ``idf`` and the lexical ``scales`` entry, the BM25 ceiling). Returns
    the ranking and, for convex, what it combined."""
    if fusion == "rrf":
        return rrf(branches, k=rrf_k, weights=rrf_weights), None
    adapted = None
    if adaptive == "signals":
        ceiling = (scales or {}).get("lexical", 0.0)
        adapted = signal_alpha(
            alpha, branches["semantic"], branches["lexical"], idf=idf or {}, ceiling=ceiling
        )
        alpha = adapted.alpha
    elif adaptive:
        alpha = peak_alpha(alpha, branches["semantic"], branches["lexical"])
    weights = {"semantic": alpha, "lexical": 1.0 - alpha}
    extra = extra or {}
    scales = scales or {}
    norms = {
        b: normalize(items, normalization, extra.get(b), scale=scales.get(b, 1.0))
        for b, items in branches.items()
    }
    return combine(norms, branches, weights), Convex(norms=norms, weights=weights, adapted=adapted)

"""Rank fusion, as pure functions over ranked lists of ids. No I/O.

Both functions fuse by id, never by text, and return ``(id, fused score)`` best first,
ties broken by the best rank the id reached in any list, then by id.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence

__all__ = ["convex", "normalize_scores", "rrf"]

Ranked = Sequence[tuple[str, float]]


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
    if not items:
        return {}
    values = [s for _, s in items if math.isfinite(s)]
    lo, hi = (min(values), max(values)) if values else (0.0, 0.0)
    span = hi - lo
    out: dict[str, float] = {}
    for doc_id, score in items:
        if not math.isfinite(score):
            out[doc_id] = 0.0
        elif span <= 0:
            out[doc_id] = 1.0
        else:
            out[doc_id] = (score - lo) / span
    return out


def convex(
    ranked: Mapping[str, Ranked], *, weights: Mapping[str, float]
) -> list[tuple[str, float]]:
    """Convex combination of min-max normalised scores: ``sum_b w_b * norm_b(d)``.

    An id missing from a list contributes 0 for that list. With two branches the weights
    are ``alpha`` and ``1 - alpha``.
    """
    fused: dict[str, float] = {}
    best: dict[str, int] = {}
    for branch, items in ranked.items():
        weight = float(weights.get(branch, 0.0))
        for rank, (doc_id, norm) in enumerate(normalize_scores(items).items(), start=1):
            fused[doc_id] = fused.get(doc_id, 0.0) + weight * norm
            best[doc_id] = min(best.get(doc_id, rank), rank)
    return sorted(fused.items(), key=lambda item: (-item[1], best[item[0]], item[0]))

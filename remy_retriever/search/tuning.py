"""Fit the fusion options on a collection's own judged queries (``remy tune``).

:func:`collect` runs both branches once per judged query (``candidates`` chunks each,
plus the filled-in scores of :meth:`SearchPipeline.fill`); :func:`fit` then scores every
option set of :func:`grid` on those lists, offline, with the same pure fusion the
search uses (:func:`remy_retriever.search.fusion.fuse`), and keeps the best by nDCG@10
over documents ranked by their best chunk (:func:`remy_retriever.evaluation.beir.rank_documents`),
the rule of ``remy eval``. Ties keep the earlier option set, and the library's defaults
come first: a collection whose queries cannot tell the options apart keeps the defaults.

Fit on a train split and check on held-out queries: the benchmarks README shows what
this buys on SciFact (train -> test) and CISI (cross-validated).
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from ..errors import InvalidInputError
from ..evaluation.beir import rank_documents
from ..schema.options import (
    DEFAULT_ADAPTIVE,
    DEFAULT_ALPHA,
    DEFAULT_FILL,
    DEFAULT_FUSION,
    DEFAULT_NORMALIZATION,
    FILLS,
    NORMALIZATIONS,
    SearchOptions,
    validate_query,
)
from . import fusion
from .pipeline import Branches, SearchPipeline

__all__ = [
    "ALPHAS",
    "Collected",
    "TuneReport",
    "collect",
    "defaults",
    "fit",
    "grid",
    "ranking",
]

#: The semantic weights the fit tries.
ALPHAS = (0.2, 0.25, 0.3, 0.35, 0.4, 0.45, 0.5, 0.55, 0.6, 0.65, 0.7, 0.75, 0.8)
#: The branches whose scores each ``fill`` value fills in.
_FILLED = {
    "none": (),
    "lexical": ("lexical",),
    "semantic": ("semantic",),
    "both": ("semantic", "lexical"),
}
#: Documents ranked per query (for the measure's depth, as ``remy eval``).
DEPTH = 100


@dataclass(frozen=True)
class Collected:
    """One judged query's branch lists and filled-in scores."""

    query_id: str
    branches: Branches
    extra: Mapping[str, Mapping[str, float]]
    ceiling: float = 0.0  # the query's BM25 ceiling (the calibrated lexical scale)


@dataclass(frozen=True)
class TuneReport:
    """What :func:`fit` chose: ``config`` (search options), its ``score`` (nDCG@10 on the
    fit queries), the library defaults' ``default_score`` on the same queries, the
    number of ``queries`` and every option set ``tried`` with its score."""

    config: Mapping[str, Any]
    score: float
    default_score: float
    queries: int
    tried: tuple[tuple[Mapping[str, Any], float], ...]

    def to_dict(self) -> dict[str, Any]:
        return {
            "config": dict(self.config),
            "nDCG@10": self.score,
            "default_nDCG@10": self.default_score,
            "queries": self.queries,
            "tried": [{"config": dict(c), "nDCG@10": s} for c, s in self.tried],
        }


def defaults() -> dict[str, Any]:
    """The library's default fusion options."""
    return {
        "fusion": DEFAULT_FUSION,
        "alpha": DEFAULT_ALPHA,
        "normalization": DEFAULT_NORMALIZATION,
        "fill": DEFAULT_FILL,
        "adaptive": DEFAULT_ADAPTIVE,
    }


def grid() -> Iterator[dict[str, Any]]:
    """The option sets :func:`fit` tries, the defaults first."""
    yield defaults()
    for normalization in NORMALIZATIONS:
        for fill in FILLS:
            for adaptive in (False, True):
                for alpha in ALPHAS:
                    yield {
                        "fusion": "convex",
                        "alpha": alpha,
                        "normalization": normalization,
                        "fill": fill,
                        "adaptive": adaptive,
                    }
    for k in (20.0, 60.0):
        yield {"fusion": "rrf", "rrf_k": k}


def collect(
    pipeline: SearchPipeline,
    queries: Mapping[str, str],
    *,
    candidates: int = 100,
    where: Mapping[str, Any] | None = None,
) -> list[Collected]:
    """Both branches' lists (and filled-in scores) for every query."""
    options = SearchOptions(mode="hybrid", candidates=candidates, where=where, fill="both")
    out = []
    for qid, text in queries.items():
        branches, vector = pipeline.branches(validate_query(text), options)
        extra = pipeline.fill(text, vector, branches, options)
        out.append(Collected(qid, branches, extra, pipeline.ceiling(text, options)))
    return out


def ranking(item: Collected, config: Mapping[str, Any] | SearchOptions) -> list[tuple[str, float]]:
    """The fused chunk ranking of one collected query under ``config`` (search options,
    or a mapping of them)."""
    options = config if isinstance(config, SearchOptions) else SearchOptions(**config)
    ranked, _ = fusion.fuse(
        item.branches,
        fusion=options.fusion,
        alpha=options.alpha,
        normalization=options.normalization,
        adaptive=options.adaptive,
        rrf_k=options.rrf_k,
        extra={b: item.extra.get(b, {}) for b in _FILLED[options.fill]},
        scales={"lexical": item.ceiling},
    )
    return ranked


def fit(
    collected: Sequence[Collected],
    qrels: Mapping[str, Mapping[str, int]],
    *,
    options: Iterable[Mapping[str, Any]] | None = None,
) -> TuneReport:
    """The option set (of ``options``, default :func:`grid`) with the best nDCG@10."""
    import ir_measures  # lazy: pulls in pandas; only tuning and evaluation need it

    judged = [c for c in collected if qrels.get(c.query_id)]
    if not judged:
        msg = (
            "none of the queries has a judgement in the qrels; tuning needs queries whose "
            "ids appear in the qrels with their relevant document ids"
        )
        raise InvalidInputError(msg)
    measure = ir_measures.parse_measure("nDCG@10")
    tried: list[tuple[Mapping[str, Any], float]] = []
    for config in options if options is not None else grid():
        run = {}
        checked = SearchOptions(**config)  # validated once per option set
        for item in judged:
            docs = rank_documents(ranking(item, checked), DEPTH)
            run[item.query_id] = {d: float(DEPTH - i) for i, d in enumerate(docs)}
        value = float(ir_measures.calc_aggregate([measure], qrels, run)[measure])
        tried.append((dict(config), round(value, 6)))
    best = max(range(len(tried)), key=lambda i: (tried[i][1], -i))
    base = next((s for c, s in tried if c == defaults()), tried[0][1])
    return TuneReport(tried[best][0], tried[best][1], base, len(judged), tuple(tried))

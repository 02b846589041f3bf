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

Without judgments (``remy tune --synthetic``, :func:`tune_synthetic`): pseudo-queries
from a seeded sample of the collection's own documents (:func:`source_chunks`, one pass,
bounded memory; :mod:`.pseudo_queries` builds them and explains the leakage rules),
collected like judged ones with each query's own chunk removed (:func:`collect_pseudo`),
then :func:`fit_synthetic`: fit on part of them (screening the grid on a subset first,
to bound the time) and keep the fit only when it beats the options the collection
searches with now on the held-out rest by a margin.
"""

from __future__ import annotations

import heapq
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from tqdm.auto import tqdm

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
from ..schema.records import document_id_of, to_citation
from . import fusion
from .pipeline import Branches, SearchPipeline
from .pseudo_queries import PseudoQuery, SourceChunk, generate, sample_key

__all__ = [
    "ALPHAS",
    "Collected",
    "SyntheticReport",
    "TuneReport",
    "collect",
    "collect_pseudo",
    "convex_grid",
    "defaults",
    "fit",
    "fit_synthetic",
    "grid",
    "ranking",
    "score",
    "source_chunks",
    "tune_synthetic",
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
    yield from convex_grid(ALPHAS)
    for k in (20.0, 60.0):
        yield {"fusion": "rrf", "rrf_k": k}


def convex_grid(alphas: Iterable[float]) -> Iterator[dict[str, Any]]:
    """Convex fusion at each of ``alphas`` for every normalisation x fill, fixed and
    peak-adaptive."""
    for normalization in NORMALIZATIONS:
        for fill in FILLS:
            for adaptive in (False, True):
                for alpha in alphas:
                    yield {
                        "fusion": "convex",
                        "alpha": alpha,
                        "normalization": normalization,
                        "fill": fill,
                        "adaptive": adaptive,
                    }


def collect(
    pipeline: SearchPipeline,
    queries: Mapping[str, str],
    *,
    candidates: int = 100,
    where: Mapping[str, Any] | None = None,
    progress: bool = False,
) -> list[Collected]:
    """Both branches' lists (and filled-in scores) for every query (``progress``: a
    progress bar on stderr)."""
    options = SearchOptions(mode="hybrid", candidates=candidates, where=where, fill="both")
    out = []
    items: Iterable[tuple[str, str]] = queries.items()
    if progress:
        items = tqdm(items, total=len(queries), unit="query", desc="search")
    for qid, text in items:
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


def score(
    collected: Sequence[Collected],
    qrels: Mapping[str, Mapping[str, int]],
    config: Mapping[str, Any] | SearchOptions,
) -> float:
    """Mean nDCG@10 of ``config`` over the ``collected`` queries that have judgments
    (documents ranked by their best chunk)."""
    import ir_measures  # lazy: pulls in pandas; only tuning and evaluation need it

    measure = ir_measures.parse_measure("nDCG@10")
    checked = config if isinstance(config, SearchOptions) else SearchOptions(**config)
    run = {}
    for item in collected:
        docs = rank_documents(ranking(item, checked), DEPTH)
        run[item.query_id] = {d: float(DEPTH - i) for i, d in enumerate(docs)}
    # Only these queries' judgments: a judged query left out of the run would count 0.
    judged = {q: qrels[q] for q in run if qrels.get(q)}
    return round(float(ir_measures.calc_aggregate([measure], judged, run)[measure]), 6)


def fit(
    collected: Sequence[Collected],
    qrels: Mapping[str, Mapping[str, int]],
    *,
    options: Iterable[Mapping[str, Any]] | None = None,
    baseline: Mapping[str, Any] | None = None,
    progress: bool = False,
) -> TuneReport:
    """The option set (of ``options``, default :func:`grid`) with the best nDCG@10;
    ``default_score`` is that of ``baseline`` (default: the library's defaults)."""
    judged = [c for c in collected if qrels.get(c.query_id)]
    if not judged:
        msg = (
            "none of the queries has a judgement in the qrels; tuning needs queries whose "
            "ids appear in the qrels with their relevant document ids"
        )
        raise InvalidInputError(msg)
    base_config = dict(defaults() if baseline is None else baseline)
    configs = list(options if options is not None else grid())
    if base_config not in configs:
        configs.insert(0, base_config)
    tried: list[tuple[Mapping[str, Any], float]] = []
    steps: Iterable[Mapping[str, Any]] = configs
    if progress:
        steps = tqdm(configs, unit="option set", desc="fit")
    for config in steps:
        tried.append((dict(config), score(judged, qrels, config)))
    best = max(range(len(tried)), key=lambda i: (tried[i][1], -i))
    base = next(s for c, s in tried if c == base_config)
    return TuneReport(tried[best][0], tried[best][1], base, len(judged), tuple(tried))


# --------------------------------------------------------------------- without judgments

#: ``remy tune --synthetic``: pseudo-queries at most, the share of them held out, the
#: nDCG@10 gain over the current options the held-out part must show, the seed.
SYNTHETIC_QUERIES = 400
HELD_OUT = 0.4
SYNTHETIC_MARGIN = 0.01
SYNTHETIC_SEED = 0
#: Successive halving in :func:`fit_synthetic`: the option sets kept after screening on
#: the first ``SCREEN`` fit queries.
SCREEN = 80
SHORTLIST = 40
#: Chunks read per sampled document at most (a long document's first ones).
CHUNKS_PER_DOCUMENT = 8


@dataclass(frozen=True)
class SyntheticReport:
    """What :func:`fit_synthetic` decided. ``fit`` is the fit on the fit part of the
    pseudo-queries (its ``default_score`` is the baseline's there); ``held_out_score``
    and ``held_out_baseline`` are the chosen options' and the baseline's nDCG@10 on the
    held-out part; ``stored`` says whether ``config`` should be stored (the held-out
    gain reached ``margin``), ``reason`` says why or why not."""

    config: Mapping[str, Any]
    baseline: Mapping[str, Any]
    fit: TuneReport
    held_out_score: float
    held_out_baseline: float
    held_out: int
    kinds: Mapping[str, int]
    margin: float
    seed: int
    accepted: bool
    reason: str

    def to_dict(self) -> dict[str, Any]:
        return {
            "synthetic": True,
            "config": dict(self.config),
            "baseline": dict(self.baseline),
            "accepted": self.accepted,
            "reason": self.reason,
            "seed": self.seed,
            "margin": self.margin,
            "pseudo_queries": {"fit": self.fit.queries, "held_out": self.held_out},
            "kinds": dict(self.kinds),
            "fit_nDCG@10": {"chosen": self.fit.score, "baseline": self.fit.default_score},
            "held_out_nDCG@10": {
                "chosen": self.held_out_score,
                "baseline": self.held_out_baseline,
            },
        }


def source_chunks(
    pipeline: SearchPipeline, *, documents: int, seed: int = SYNTHETIC_SEED, min_chunks: int = 1
) -> list[SourceChunk]:
    """The chunks of ``documents`` documents of the collection with ``min_chunks`` chunks
    or more, the first in the seeded order of :func:`~.pseudo_queries.sample_key`, at
    most :data:`CHUNKS_PER_DOCUMENT` each: one pass over the collection, holding only the
    sample (bounded memory)."""
    heap: list[tuple[str, str]] = []  # (negated order, document id): the kept ones
    kept: dict[str, list[SourceChunk]] = {}
    for page in pipeline.sync.dense.iter_all(documents=True, page=2000):
        for cid, text, meta in page:
            citation = to_citation(cid, meta)
            if (citation.chunk_count or 1) < min_chunks:
                continue
            doc = document_id_of(cid, meta)
            if doc not in kept:
                key = _negated(sample_key(seed, doc))
                if len(heap) >= documents:
                    if key <= heap[0][0]:
                        continue  # later in the order than every kept document
                    _, dropped = heapq.heapreplace(heap, (key, doc))
                    del kept[dropped]
                else:
                    heapq.heappush(heap, (key, doc))
                kept[doc] = []
            if len(kept[doc]) < CHUNKS_PER_DOCUMENT:
                path = tuple(citation.heading_path)
                kept[doc].append(SourceChunk(cid, doc, text or "", path))
    return [c for doc in sorted(kept) for c in kept[doc]]


def _negated(key: str) -> str:
    """A hex key whose order is the reverse of ``key``'s (for a max-heap on heapq)."""
    return key.translate(str.maketrans("0123456789abcdef", "fedcba9876543210"))


def collect_pseudo(
    pipeline: SearchPipeline, queries: Sequence[PseudoQuery], *, progress: bool = False
) -> list[Collected]:
    """:func:`collect` for pseudo-queries, each query's ``exclude`` chunks then removed
    from both branches' lists and filled-in scores (its target is found by the others)."""
    collected = collect(pipeline, {q.query_id: q.text for q in queries}, progress=progress)
    out = []
    for query, item in zip(queries, collected):
        gone = set(query.exclude)
        if gone:
            branches = {
                b: [(c, s) for c, s in lst if c not in gone] for b, lst in item.branches.items()
            }
            extra = {
                b: {c: s for c, s in m.items() if c not in gone} for b, m in item.extra.items()
            }
            item = Collected(item.query_id, branches, extra, item.ceiling)
        out.append(item)
    return out


def fit_synthetic(
    collected: Sequence[Collected],
    queries: Sequence[PseudoQuery],
    *,
    baseline: Mapping[str, Any],
    margin: float = SYNTHETIC_MARGIN,
    seed: int = SYNTHETIC_SEED,
    options: Iterable[Mapping[str, Any]] | None = None,
    progress: bool = False,
) -> SyntheticReport:
    """Fit on part of the pseudo-queries, check on the rest (:data:`HELD_OUT`, chosen by
    seed): accept the fit only when it beats ``baseline`` there by ``margin``."""
    qrels = {q.query_id: {q.document_id: 1} for q in queries}
    kinds: dict[str, int] = {}
    for q in queries:
        kinds[q.kind] = kinds.get(q.kind, 0) + 1
    order = sorted(collected, key=lambda c: sample_key(seed, "held-out:" + c.query_id))
    cut = round(HELD_OUT * len(order))
    held, fitted = order[:cut], order[cut:]
    if len(held) < 10 or len(fitted) < 10:
        msg = (
            f"only {len(queries)} pseudo-queries could be built from this collection; "
            "synthetic tuning needs at least 30 (sentences of six or more words in "
            "documents of two or more chunks: a single chunk holds its sentence verbatim, "
            "which would favour the lexical branch); nothing is stored"
        )
        raise InvalidInputError(msg)
    configs = list(options if options is not None else grid())
    if len(configs) > SHORTLIST and len(fitted) > SCREEN:
        # Successive halving, to bound the time: every option set on the first SCREEN
        # fit queries, then the SHORTLIST best (and the baseline) on all of them.
        screen = fit(fitted[:SCREEN], qrels, options=configs, baseline=baseline, progress=progress)
        ranked = sorted(range(len(screen.tried)), key=lambda i: (-screen.tried[i][1], i))
        configs = [screen.tried[i][0] for i in sorted(ranked[:SHORTLIST])]
    report = fit(fitted, qrels, options=configs, baseline=baseline, progress=progress)
    chosen = score(held, qrels, report.config)
    base = score(held, qrels, baseline)
    if dict(report.config) == dict(baseline):
        accepted, reason = False, "the fit kept the current options; nothing to store"
    elif chosen >= base + margin:
        accepted = True
        reason = (
            f"the fit beats the current options on the held-out pseudo-queries by "
            f"{chosen - base:.4f} (margin {margin})"
        )
    else:
        accepted = False
        reason = (
            f"the fit gains {chosen - base:+.4f} on the held-out pseudo-queries, below the "
            f"margin {margin}; nothing is stored"
        )
    return SyntheticReport(
        report.config,
        dict(baseline),
        report,
        chosen,
        base,
        len(held),
        kinds,
        margin,
        seed,
        accepted,
        reason,
    )


def tune(
    pipeline: SearchPipeline,
    queries: Mapping[str, str],
    qrels: Mapping[str, Mapping[str, int]],
    *,
    save: bool = True,
    progress: bool = False,
) -> TuneReport:
    """:func:`collect` then :func:`fit`; ``save`` stores the chosen options in the
    collection (``Retriever.tune``)."""
    report = fit(collect(pipeline, queries, progress=progress), qrels, progress=progress)
    if save:
        pipeline.sync.save_search_config(report.config)
    return report


def tune_synthetic(
    pipeline: SearchPipeline,
    *,
    save: bool = True,
    queries: int = SYNTHETIC_QUERIES,
    margin: float = SYNTHETIC_MARGIN,
    seed: int = SYNTHETIC_SEED,
    kinds: Sequence[str] = ("cloze",),
    progress: bool = False,
) -> SyntheticReport:
    """Build up to ``queries`` pseudo-queries of ``kinds`` (default the leakage-free
    ``cloze`` only: :mod:`.pseudo_queries` says why) from the collection (:mod:`.pseudo_queries`),
    collect both branches for them and :func:`fit_synthetic` against the options the
    collection searches with now (its stored config over the defaults); ``save`` stores
    the fit only when it is accepted (``Retriever.tune_synthetic``)."""
    if not (isinstance(queries, int) and 30 <= queries <= 10_000):
        msg = f"queries={queries!r}: pass a whole number of pseudo-queries from 30 to 10000"
        raise InvalidInputError(msg)
    if not (isinstance(margin, (int, float)) and 0.0 <= margin < 1.0):
        msg = f"margin={margin!r}: pass an nDCG@10 gain from 0 to 1, e.g. 0.01"
        raise InvalidInputError(msg)
    baseline = {**defaults(), **pipeline.sync.search_config()}
    leaky = {"masked", "title"} & set(kinds)
    chunks = source_chunks(pipeline, documents=queries, seed=seed, min_chunks=1 if leaky else 2)
    idf = pipeline.sync.lexical.idf
    pseudo = generate(chunks, lambda t: idf(t), limit=queries, seed=seed, kinds=kinds)
    collected = collect_pseudo(pipeline, pseudo, progress=progress)
    report = fit_synthetic(
        collected, pseudo, baseline=baseline, margin=margin, seed=seed, progress=progress
    )
    if save and report.accepted:
        pipeline.sync.save_search_config(report.config)
    return report

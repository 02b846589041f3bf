"""On-request hit enrichment: explain, neighbouring chunks, highlighted matches.

These never reorder or rescore: they only read a hit and add to it. The neighbour fetch
here is the only one in the engine; document search uses it too.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import replace

from ..schema.filters import Filter, matches, to_chroma
from ..schema.hits import BranchExplain, FusionWeights, Match, SearchExplain, SearchHit
from ..schema.options import SearchOptions
from ..schema.records import DOCUMENT_ID_KEY, Record, chunk_id, parse_chunk_id
from ..stores.dense import DenseStore
from ..text.analyzers import ENGLISH, Analyzer

__all__ = [
    "MAX_HIGHLIGHT_TERMS",
    "distinctive_terms",
    "explain_hit",
    "fetch_neighbor_records",
    "fetch_neighbors",
    "highlight",
    "matched_terms",
    "neighbor_ids",
    "with_neighbors",
]

#: Highlight at most this many query terms (the most distinctive ones, by IDF).
MAX_HIGHLIGHT_TERMS = 8

#: Per branch: chunk id -> (1-based rank, raw score).
Positions = Mapping[str, Mapping[str, tuple[int, float]]]


def explain_hit(
    options: SearchOptions,
    query: str,
    cid: str,
    score: float,
    positions: Positions,
    convex: tuple[Mapping[str, float], Mapping[str, Mapping[str, float]]] | None,
    text: str,
    *,
    adapted: FusionWeights | None = None,
    analyzer: Analyzer = ENGLISH,
) -> SearchExplain:
    """Per branch that listed the chunk: rank, raw score and its share of the fused score
    (RRF: ``w / (k + rank)``; convex: ``weight * normalised score``, from ``convex``, the
    ``(weights, normalised scores)`` the fusion used; with min-max scaling a branch's
    lowest-scoring candidate contributes 0 though that branch found it). ``adapted``: the
    weights a query-adaptive fusion chose, reported as ``fusion_weights``; ``analyzer``:
    the collection's, for ``matched_terms``."""
    found: dict[str, BranchExplain] = {}
    for name, table in positions.items():
        if cid in table:
            rank, raw = table[cid]
            contribution: float | None = None
            if options.mode == "hybrid" and options.fusion == "rrf":
                contribution = options.branch_weights[name] / (options.rrf_k + rank)
            elif options.mode == "hybrid" and convex is not None:
                contribution = convex[0][name] * convex[1][name][cid]
            found[name] = BranchExplain(rank=rank, score=raw, contribution=contribution)
    pairs = matched_terms(query, text, analyzer) if options.mode != "semantic" else ()
    return SearchExplain(
        mode=options.mode,
        branches=found,
        fused_score=score if options.mode == "hybrid" else None,
        matched_terms=tuple(word for word, _ in pairs),
        matched_stems=tuple(stem for _, stem in pairs),
        fusion_weights=adapted,
    )


def distinctive_terms(
    query: str,
    idf: Mapping[str, float],
    *,
    limit: int = MAX_HIGHLIGHT_TERMS,
    analyzer: Analyzer = ENGLISH,
) -> list[str]:
    """The query's analysed terms (stopwords already gone), most distinctive first.

    Terms are ranked by IDF in the collection (unknown terms rank by a neutral weight of
    0, so in an empty or semantic-only context every term still highlights), ties keep
    query order; the top ``limit`` are kept.
    """
    terms = analyzer.query_terms(query)
    order = {t: i for i, t in enumerate(terms)}
    ranked = sorted(terms, key=lambda t: (-idf.get(t, 0.0), order[t]))
    return ranked[:limit]


def highlight(text: str, terms: Sequence[str], analyzer: Analyzer = ENGLISH) -> tuple[Match, ...]:
    """Spans of ``text`` whose term (by ``analyzer``) is one of ``terms``;
    ``text[m.start:m.end] == m.token`` always holds."""
    wanted = set(terms)
    return tuple(
        Match(span.start, span.end, text[span.start : span.end])
        for span in analyzer.spans(text)
        if span.term in wanted
    )


def matched_terms(
    query: str, text: str, analyzer: Analyzer = ENGLISH
) -> tuple[tuple[str, str], ...]:
    """The query's words whose analysed term occurs in ``text``, as ``(word as typed,
    stem)``, in query order, one per stem (its first spelling), as many as the lexical
    branch searches for (``text.analysis.MAX_QUERY_TERMS``)."""
    present = set(analyzer.terms(text))
    searched = set(analyzer.query_terms(query))
    out: dict[str, str] = {}
    for span in analyzer.spans(query):
        if span.term in searched and span.term in present and span.term not in out:
            out[span.term] = query[span.start : span.end]
    return tuple((word, stem) for stem, word in out.items())


def neighbor_ids(
    document_id: str, position: int, count: int | None, n: int
) -> tuple[list[str], list[str]]:
    """Chunk ids up to ``n`` positions before and after, in document order, clipped to
    the document's edges (``count`` chunks, when known)."""
    before = [chunk_id(document_id, p) for p in range(max(0, position - n), position)]
    last = position + n if count is None else min(count - 1, position + n)
    after = [chunk_id(document_id, p) for p in range(position + 1, last + 1)]
    return before, after


def fetch_neighbors(dense: DenseStore, ids: Sequence[str], where: Filter | None) -> dict[str, str]:
    """The text of each of ``ids`` (chunk ids from :func:`neighbor_ids`) that exists,
    fetched from Chroma under ``where`` and checked again here: a chunk the filter
    excludes, or one whose recorded document differs from its id's, is left out."""
    return {cid: record[1] for cid, record in fetch_neighbor_records(dense, ids, where).items()}


def fetch_neighbor_records(
    dense: DenseStore, ids: Sequence[str], where: Filter | None
) -> dict[str, Record]:
    """:func:`fetch_neighbors`, keeping each chunk's whole record (text and metadata)."""
    if not ids:
        return {}
    out: dict[str, Record] = {}
    for cid, text, meta in dense.get(ids=sorted(set(ids)), where=to_chroma(where)):
        same_document = meta.get(DOCUMENT_ID_KEY) == parse_chunk_id(cid)[0]
        if same_document and matches(where, meta):
            out[cid] = (cid, text, meta)
    return out


def with_neighbors(
    dense: DenseStore, hits: Sequence[SearchHit], n: int, where: Filter | None
) -> list[SearchHit]:
    """Attach up to ``n`` chunks either side of each hit (same document, same filter)."""
    plans = []
    wanted: list[str] = []
    for hit in hits:
        c = hit.citation
        before, after = neighbor_ids(c.document_id, c.chunk_index, c.chunk_count, n)
        plans.append((before, after))
        wanted += before + after
    texts = fetch_neighbors(dense, wanted, where)
    return [
        replace(
            hit,
            neighbors={
                "before": tuple(texts[i] for i in before if i in texts),
                "after": tuple(texts[i] for i in after if i in texts),
            },
        )
        for hit, (before, after) in zip(hits, plans)
    ]

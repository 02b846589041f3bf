"""On-request hit enrichment: highlight matches, matched terms and neighbour lookup keys.

These builders never reorder or rescore: they only read a hit and add to it.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from ..hits import Match
from ..text.analysis import analyze, analyze_query, analyze_spans

__all__ = ["distinctive_terms", "highlight", "matched_terms", "neighbor_ids"]

#: Highlight at most this many query terms (the most distinctive ones, by IDF).
MAX_HIGHLIGHT_TERMS = 8


def distinctive_terms(
    query: str, idf: Mapping[str, float], *, limit: int = MAX_HIGHLIGHT_TERMS
) -> list[str]:
    """The query's analysed terms (stopwords already gone), most distinctive first.

    Terms are ranked by IDF in the collection (unknown terms rank by a neutral weight of
    0, so in an empty or semantic-only context every term still highlights), ties keep
    query order; the top ``limit`` are kept.
    """
    terms = analyze_query(query)
    order = {t: i for i, t in enumerate(terms)}
    ranked = sorted(terms, key=lambda t: (-idf.get(t, 0.0), order[t]))
    return ranked[:limit]


def highlight(text: str, terms: Sequence[str]) -> tuple[Match, ...]:
    """Spans of ``text`` whose analysed term is one of ``terms``;
    ``text[m.start:m.end] == m.token`` always holds."""
    wanted = set(terms)
    return tuple(
        Match(span.start, span.end, text[span.start : span.end])
        for span in analyze_spans(text)
        if span.term in wanted
    )


def matched_terms(query: str, text: str) -> tuple[str, ...]:
    """Analysed query terms that occur in ``text``, in query order."""
    present = set(analyze(text))
    return tuple(t for t in analyze_query(query) if t in present)


def neighbor_ids(
    document_id: str, position: int, count: int | None, n: int
) -> tuple[list[str], list[str]]:
    """Chunk ids up to ``n`` positions before and after, in document order, clipped to
    the document's edges (``count`` chunks, when known)."""
    before = [f"{document_id}#{p}" for p in range(max(0, position - n), position)]
    last = position + n if count is None else min(count - 1, position + n)
    after = [f"{document_id}#{p}" for p in range(position + 1, last + 1)]
    return before, after

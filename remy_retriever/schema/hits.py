"""Search results: :class:`SearchHit`, :class:`Citation`, :class:`SearchExplain`, :class:`Match`.

Python attributes are snake_case; :meth:`SearchHit.to_dict` and :meth:`SearchHit.from_dict`
speak the camelCase wire names of the SearchHit spec (``retrievalRank``, ``documentId``...).
Optional fields that were not requested are omitted from the wire form.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

__all__ = [
    "BranchExplain",
    "Citation",
    "FusionWeights",
    "Match",
    "SearchExplain",
    "SearchHit",
    "pages_label",
    "passage_text",
]


def pages_label(page: int | None, page_end: int | None = None) -> str | None:
    """``"p. 3"``, ``"pp. 3-4"`` for a passage running onto page 4, or ``None``."""
    if page is None:
        return None
    if page_end is not None and page_end != page:
        return f"pp. {page}-{page_end}"
    return f"p. {page}"


def passage_text(text: str, heading_path: tuple[str, ...] | list[str]) -> str:
    """A chunk's ``text`` without the heading-path line remy prefixes to it (what a
    prompt shows under :meth:`Citation.label`)."""
    prefix = " > ".join(str(h) for h in heading_path) + "\n\n"
    if heading_path and text.startswith(prefix):
        return text[len(prefix) :]
    return text


@dataclass(frozen=True)
class Citation:
    """Where a passage came from. Always present on a hit.

    ``start``/``end`` are character offsets of the passage in the source document's text
    (``document.text[start:end]``), not in :attr:`SearchHit.text`. ``page`` is the 1-based
    page the passage starts on and ``page_end`` the page it ends on when that is a later
    one; both are ``None`` for documents added without ``pages``.
    """

    document_id: str
    chunk_index: int
    start: int
    end: int
    heading_path: tuple[str, ...] = ()
    title: str | None = None
    url: str | None = None
    path: str | None = None
    chunk_count: int | None = None
    page: int | None = None
    page_end: int | None = None

    @property
    def source(self) -> str:
        """The best thing to render as the source: url, else path, else the document id."""
        return self.url or self.path or self.document_id

    @property
    def pages_label(self) -> str | None:
        """``"p. 3"``, ``"pp. 3-4"``, or ``None`` without pages (see :func:`pages_label`)."""
        return pages_label(self.page, self.page_end)

    def label(self) -> str:
        """The citation in one line, as every door renders it (the CLI, the MCP
        ``search`` tool, the LangChain tool): the title, then the heading path (a heading
        that repeats the part before it is left out), then in brackets the source and
        the pages when known, e.g. ``"Guide > Install > Linux (docs/guide.pdf, p. 3)"``.
        Without a title or headings the document id stands in."""
        parts: list[str] = [self.title] if self.title else []
        for heading in self.heading_path:
            if not parts or heading != parts[-1]:
                parts.append(heading)
        if not parts:
            parts.append(self.document_id)
        where = [self.source]
        if self.pages_label:
            where.append(self.pages_label)
        return f"{' > '.join(parts)} ({', '.join(where)})"

    def to_dict(self) -> dict[str, Any]:
        return {
            "documentId": self.document_id,
            "chunkIndex": self.chunk_index,
            "start": self.start,
            "end": self.end,
            "headingPath": list(self.heading_path),
            "title": self.title,
            "url": self.url,
            "path": self.path,
            "chunkCount": self.chunk_count,
            "page": self.page,
            "pageEnd": self.page_end,
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Citation:
        return cls(
            document_id=str(data["documentId"]),
            chunk_index=int(data["chunkIndex"]),
            start=int(data["start"]),
            end=int(data["end"]),
            heading_path=tuple(data.get("headingPath") or ()),
            title=data.get("title"),
            url=data.get("url"),
            path=data.get("path"),
            chunk_count=None if data.get("chunkCount") is None else int(data["chunkCount"]),
            page=None if data.get("page") is None else int(data["page"]),
            page_end=None if data.get("pageEnd") is None else int(data["pageEnd"]),
        )


@dataclass(frozen=True)
class BranchExplain:
    """What one retrieval branch said about a hit: its 1-based rank and raw score
    (cosine similarity for ``semantic``, BM25 for ``lexical``) and its share of the
    fused score. With convex fusion that share is ``weight * (score - lowest) /
    (highest - lowest)`` over the branch's candidates, so the branch's lowest candidate
    contributes 0 although the branch found it."""

    rank: int
    score: float
    contribution: float | None = None

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"rank": self.rank, "score": self.score}
        if self.contribution is not None:
            out["contribution"] = self.contribution
        return out

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> BranchExplain:
        contribution = data.get("contribution")
        return cls(
            rank=int(data["rank"]),
            score=float(data["score"]),
            contribution=None if contribution is None else float(contribution),
        )


@dataclass(frozen=True)
class FusionWeights:
    """The branch weights a query-adaptive fusion chose for one query: ``weights``
    (semantic, lexical), the fixed ``alpha`` it started from, each signal's ``pulls`` on
    the semantic weight's log-odds (positive: towards semantic) and the ``reason``."""

    weights: Mapping[str, float]
    alpha: float
    pulls: Mapping[str, float] = field(default_factory=dict)
    reason: str = ""

    def to_dict(self) -> dict[str, Any]:
        return {
            "weights": dict(self.weights),
            "alpha": self.alpha,
            "pulls": dict(self.pulls),
            "reason": self.reason,
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> FusionWeights:
        return cls(
            weights={str(k): float(v) for k, v in data["weights"].items()},
            alpha=float(data["alpha"]),
            pulls={str(k): float(v) for k, v in (data.get("pulls") or {}).items()},
            reason=str(data.get("reason", "")),
        )


@dataclass(frozen=True)
class SearchExplain:
    """Why a hit is where it is: the branches that found it, each branch's rank and raw
    score, the fused score, the rerank score when reranked, and (lexical and hybrid
    modes) the query's words found in the hit as typed (``matched_terms``) with the stem
    BM25 matched for each (``matched_stems``, same order)."""

    mode: str
    branches: Mapping[str, BranchExplain] = field(default_factory=dict)
    fused_score: float | None = None
    rerank_score: float | None = None
    matched_terms: tuple[str, ...] = ()
    matched_stems: tuple[str, ...] = ()
    #: Query-adaptive fusion (``adaptive="signals"``): the semantic weight it chose, the
    #: fixed ``alpha`` it started from and why (the signals' pulls), else ``None``.
    fusion_weights: FusionWeights | None = None

    @property
    def found_by(self) -> tuple[str, ...]:
        return tuple(sorted(self.branches))

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "mode": self.mode,
            "foundBy": list(self.found_by),
            "branches": {name: b.to_dict() for name, b in sorted(self.branches.items())},
        }
        if self.fused_score is not None:
            out["fusedScore"] = self.fused_score
        if self.rerank_score is not None:
            out["rerankScore"] = self.rerank_score
        if self.mode != "semantic":
            out["matchedTerms"] = list(self.matched_terms)
            out["matchedStems"] = list(self.matched_stems)
        if self.fusion_weights is not None:
            out["fusionWeights"] = self.fusion_weights.to_dict()
        return out

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> SearchExplain:
        return cls(
            mode=str(data["mode"]),
            branches={k: BranchExplain.from_dict(v) for k, v in data.get("branches", {}).items()},
            fused_score=data.get("fusedScore"),
            rerank_score=data.get("rerankScore"),
            matched_terms=tuple(data.get("matchedTerms") or ()),
            matched_stems=tuple(data.get("matchedStems") or ()),
            fusion_weights=(
                FusionWeights.from_dict(data["fusionWeights"])
                if data.get("fusionWeights")
                else None
            ),
        )


@dataclass(frozen=True)
class Match:
    """A highlighted span of :attr:`SearchHit.text`: ``text[start:end] == token``."""

    start: int
    end: int
    token: str

    def to_dict(self) -> dict[str, Any]:
        return {"start": self.start, "end": self.end, "token": self.token}

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Match:
        return cls(start=int(data["start"]), end=int(data["end"]), token=str(data["token"]))


@dataclass(frozen=True)
class SearchHit:
    """One ranked result: the passage, its score and its citation.

    ``score`` is comparable within one response only. With reranking it is the reranker's
    0-1 relevance; without, the mode's raw score (cosine in ``semantic``, BM25 in
    ``lexical``, the fused score in ``hybrid``: the convex combination of normalised
    branch scores by default, or the RRF sum with ``fusion="rrf"``).
    ``retrieval_rank``/``retrieval_score`` are the 1-based position and score before
    reranking; they are ``None`` (omitted on the wire) when no reranking happened.
    ``explain``, ``neighbors`` and ``matches`` are ``None`` unless requested.
    """

    id: str
    score: float
    text: str
    citation: Citation
    retrieval_rank: int | None = None
    retrieval_score: float | None = None
    explain: SearchExplain | None = None
    neighbors: Mapping[str, tuple[str, ...]] | None = None
    matches: tuple[Match, ...] | None = None
    metadata: Mapping[str, Any] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        """The wire form: camelCase names, optional fields only when present."""
        out: dict[str, Any] = {
            "id": self.id,
            "score": self.score,
            "text": self.text,
            "citation": self.citation.to_dict(),
        }
        if self.retrieval_rank is not None:
            out["retrievalRank"] = self.retrieval_rank
        if self.retrieval_score is not None:
            out["retrievalScore"] = self.retrieval_score
        if self.explain is not None:
            out["explain"] = self.explain.to_dict()
        if self.neighbors is not None:
            out["neighbors"] = {
                "before": list(self.neighbors.get("before", ())),
                "after": list(self.neighbors.get("after", ())),
            }
        if self.matches is not None:
            out["matches"] = [m.to_dict() for m in self.matches]
        if self.metadata:
            out["metadata"] = dict(self.metadata)
        return out

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> SearchHit:
        neighbors = data.get("neighbors")
        matches = data.get("matches")
        explain = data.get("explain")
        rank = data.get("retrievalRank")
        rscore = data.get("retrievalScore")
        return cls(
            id=str(data["id"]),
            score=float(data["score"]),
            text=str(data["text"]),
            citation=Citation.from_dict(data["citation"]),
            retrieval_rank=None if rank is None else int(rank),
            retrieval_score=None if rscore is None else float(rscore),
            explain=None if explain is None else SearchExplain.from_dict(explain),
            neighbors=None
            if neighbors is None
            else {
                "before": tuple(neighbors.get("before", ())),
                "after": tuple(neighbors.get("after", ())),
            },
            matches=None if matches is None else tuple(Match.from_dict(m) for m in matches),
            metadata=dict(data.get("metadata") or {}),
        )

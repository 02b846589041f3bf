"""Document-grouped search: chunk hits grouped by document, as a
:class:`~remy_retriever.supermemory.responses.DocumentSearchResponse` (the supermemory
``/v3/search`` shape).

See :func:`search_documents`. Scores are 0-1 in every mode (the rules are in
:mod:`remy_retriever.search.calibration`).
"""

from __future__ import annotations

import re
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from ..models.rerankers import Reranker
from ..schema.filters import Filter
from ..schema.hits import Citation
from ..schema.options import DocumentSearchOptions, SearchOptions
from ..schema.records import Record, parse_chunk_id, to_citation
from ..stores.document_table import DocumentTable, StoredDocument
from ..supermemory.responses import DocumentChunk, DocumentResult, DocumentSearchResponse
from .calibration import ScoredHit
from .enrich import fetch_neighbor_records, neighbor_ids
from .pipeline import SearchPipeline

__all__ = ["SUMMARY_CHARS", "lead_summary", "search_documents"]

#: Longest extractive lead summary, in characters.
SUMMARY_CHARS = 300


def search_documents(
    pipeline: SearchPipeline,
    table: DocumentTable,
    q: str,
    options: SearchOptions,
    grouping: DocumentSearchOptions,
    *,
    default_reranker: Reranker | None = None,
) -> DocumentSearchResponse:
    """Search and group the chunk hits by document, best document first (what
    ``Retriever.search_documents`` returns; ``options`` are the resolved search options,
    ``grouping`` the document options: ``limit``, ``chunk_threshold``,
    ``document_threshold``, ``only_matching_chunks``, ``include_full_docs``,
    ``include_summary``, ``context_chunks``; ``default_reranker`` is the retriever's own).

    Scores: every chunk gets a 0-1 score by the rule of ``mode`` (semantic: cosine clipped
    to [0, 1]; lexical: BM25 over the query's BM25 ceiling; hybrid: the mean of those
    two; reranked: the reranker's 0-1; details and measurements in
    :mod:`remy_retriever.search.calibration`). A **document's score is the maximum of its chunk
    scores**, and documents are ordered by it (it ranked documents better than the mean, a
    noisy-or or the best plus a share of the rest; the comparison is in
    :mod:`remy_retriever.search.calibration`).

    Chunks: a retrieved chunk is relevant (``isRelevant``) when its score is at least
    ``chunk_threshold``; a document is returned only if it has a relevant chunk and its
    score is at least ``document_threshold``. With ``only_matching_chunks=True`` a
    document lists only its relevant chunks. Otherwise it also lists its other retrieved
    chunks and up to ``context_chunks`` chunks either side of each relevant one (fetched
    under the same ``where`` filter, so context never leaks past it), all with
    ``isRelevant=false``; context chunks that were not retrieved have score 0. Chunks are
    listed in document order. ``content`` is the chunk text as indexed (heading path,
    blank line, passage). A chunk of a paged document (``Document.pages``) also carries
    its 1-based ``page``, and ``pageEnd`` when it runs onto a later page.

    ``include_full_docs`` adds ``content`` (the stored full text); ``include_summary``
    adds ``summary``: the summary given at ingest (``Document.summary``), else an
    extractive lead summary (see :func:`lead_summary`). ``metadata`` is the document's
    own metadata, ``type`` its ``Document.type``, ``createdAt``/``updatedAt`` the stored
    ISO-8601 timestamps (``updatedAt`` changes when the content changes). ``timing`` is
    the wall time of the call in milliseconds; ``total`` the number of results.

    ``mode``, ``where`` and ``rerank`` are as in ``Retriever.search`` (``rerank=False``
    never reranks; ``None`` uses the retriever's own reranker).
    """
    started = time.perf_counter()
    limit = grouping.limit
    chunk_threshold, document_threshold = grouping.chunk_threshold, grouping.document_threshold
    # Fetch enough chunks to fill `limit` documents; widen once if they crowd together.
    k = min(10_000, max(3 * limit, 20))
    base = options.replace(explain=options.mode == "hybrid")
    groups: dict[str, _Group] = {}
    for _ in range(2):
        widened = base.replace(k=k, rerank_depth=k, candidates=max(100, k))
        scored = pipeline.scored(q, widened, default_reranker=default_reranker)
        groups = _group(scored, chunk_threshold)
        kept = [g for g in groups.values() if g.keep(document_threshold)]
        if len(kept) >= limit or len(scored) < k:
            break
        k = min(10_000, k * 4)
    chosen = sorted(
        (g for g in groups.values() if g.keep(document_threshold)),
        key=lambda g: (-g.score, g.first),
    )[:limit]
    stored = table.stored([g.document_id for g in chosen])
    chosen = [g for g in chosen if g.document_id in stored]
    context: dict[str, Record] = {}
    if not grouping.only_matching_chunks and grouping.context_chunks:
        context = _context_chunks(pipeline, chosen, grouping.context_chunks, base.filter)
    results = [
        _result(
            g,
            stored[g.document_id],
            context,
            only_matching_chunks=grouping.only_matching_chunks,
            include_full_docs=grouping.include_full_docs,
            include_summary=grouping.include_summary,
        )
        for g in chosen
    ]
    timing = round((time.perf_counter() - started) * 1000)
    return DocumentSearchResponse(results=results, timing=timing, total=len(results))


@dataclass
class _Group:
    document_id: str
    first: int  # rank of the document's best chunk in the hit list
    chunk_count: int | None
    # position -> (text, score, relevant, citation)
    chunks: dict[int, tuple[str, float, bool, Citation]] = field(default_factory=dict)

    @property
    def score(self) -> float:
        return max(chunk[1] for chunk in self.chunks.values())

    def keep(self, document_threshold: float) -> bool:
        return any(chunk[2] for chunk in self.chunks.values()) and self.score >= document_threshold


def _group(scored: Sequence[ScoredHit], chunk_threshold: float) -> dict[str, _Group]:
    groups: dict[str, _Group] = {}
    for rank, item in enumerate(scored):
        c = item.hit.citation
        group = groups.setdefault(c.document_id, _Group(c.document_id, rank, c.chunk_count))
        # A chunk at 0 (a negative cosine, no term matched) never passes, even at the
        # default threshold 0: in a small store every chunk is retrieved.
        relevant = item.relevance > 0 and item.relevance >= chunk_threshold
        group.chunks.setdefault(c.chunk_index, (item.hit.text, item.relevance, relevant, c))
    return groups


def _context_chunks(
    pipeline: SearchPipeline, groups: Sequence[_Group], n: int, tree: Filter | None
) -> dict[str, Record]:
    """Records of the chunks within ``n`` positions of each relevant chunk, by chunk id,
    fetched under the filter and from the same document only."""
    wanted: list[str] = []
    for g in groups:
        for pos, chunk in g.chunks.items():
            if chunk[2]:
                before, after = neighbor_ids(g.document_id, pos, g.chunk_count, n)
                wanted += before + after
    return fetch_neighbor_records(pipeline.sync.dense, wanted, tree)


def _result(
    group: _Group,
    stored: StoredDocument,
    context: Mapping[str, Record],
    *,
    only_matching_chunks: bool,
    include_full_docs: bool,
    include_summary: bool,
) -> DocumentResult:
    doc = stored.document
    chunks: dict[int, DocumentChunk] = {}
    for pos, (text, score, relevant, citation) in group.chunks.items():
        if relevant or not only_matching_chunks:
            chunks[pos] = _chunk(text, score, relevant, citation)
    for cid, (_, text, meta) in context.items():
        document_id, pos = parse_chunk_id(cid)
        if document_id == group.document_id and pos not in chunks:
            chunks[pos] = _chunk(text, 0.0, False, to_citation(cid, meta))
    fields: dict[str, Any] = {
        "document_id": doc.id,
        "title": doc.title,
        "type": doc.type,
        "score": group.score,
        "chunks": [chunks[pos] for pos in sorted(chunks)],
        "metadata": dict(doc.metadata),
        "created_at": stored.created_at,
        "updated_at": stored.updated_at,
    }
    if include_full_docs:
        fields["content"] = doc.text
    if include_summary:
        fields["summary"] = doc.summary if doc.summary else lead_summary(doc.text)
    return DocumentResult(**fields)


def _chunk(text: str, score: float, relevant: bool, citation: Citation) -> DocumentChunk:
    pages = {"page": citation.page, "page_end": citation.page_end}
    fields: dict[str, Any] = {k: v for k, v in pages.items() if v is not None}
    return DocumentChunk(
        content=text,
        score=score,
        is_relevant=relevant,
        position=citation.chunk_index,
        **fields,
    )


# -- extractive summary ------------------------------------------------------------------

_FENCE = re.compile(r"^\s*(```|~~~)")
_HEADING = re.compile(r"^\s{0,3}#{1,6}\s")
_RULE = re.compile(r"^\s*([-*_])(\s*\1){2,}\s*$")
_BULLET = re.compile(r"^\s*(?:[-*+>]|\d+[.)])\s+")
_LINK = re.compile(r"!?\[([^\]]*)\]\([^)]*\)")
_MARKUP = re.compile(r"(\*\*|__|`|<!--.*?-->)")
_SENTENCE_END = re.compile(r"(?<=[.!?])\s+")


def lead_summary(text: str, *, max_chars: int = SUMMARY_CHARS) -> str:
    """An extractive lead summary: the document's first sentences, up to ``max_chars``.

    Markdown is flattened first: headings, fenced code, tables and horizontal rules are
    dropped, list and quote markers, emphasis and inline code marks removed, links and
    images reduced to their text. Whole sentences are kept while they fit; when the
    first sentence alone is longer it is cut at a word boundary and ends with "…". No
    model is involved. Empty when the text has no prose.
    """
    lines: list[str] = []
    in_fence = False
    for line in text.splitlines():
        if _FENCE.match(line):
            in_fence = not in_fence
            continue
        if in_fence or _HEADING.match(line) or _RULE.match(line) or line.lstrip().startswith("|"):
            continue
        lines.append(_BULLET.sub("", line))
    flat = _MARKUP.sub("", _LINK.sub(r"\1", " ".join(lines)))
    flat = " ".join(flat.split())
    if not flat:
        return ""
    out = ""
    for sentence in _SENTENCE_END.split(flat):
        candidate = f"{out} {sentence}" if out else sentence
        if len(candidate) > max_chars:
            break
        out = candidate
    if out:
        return out
    cut = flat[: max_chars - 1]
    if " " in cut:
        cut = cut[: cut.rindex(" ")]
    return cut.rstrip(" ,;:") + "…"


# -- validation --------------------------------------------------------------------------

"""The engine rules behind v5 search: hybrid results without duplicates, and
``rerank: aggregate`` merging the chunks of one document into one cited result."""

from __future__ import annotations

from remy_retriever.memory.results import aggregate_chunks, distinct_results
from remy_retriever.supermemory.responses import ChunkResult, LinkedDocument, MemoryResult

WHEN = "2026-01-01T00:00:00Z"


def chunk(cid: str, doc: str, text: str, score: float, page: int | None = None) -> ChunkResult:
    return ChunkResult(
        id=cid,
        chunk=text,
        similarity=score,
        updated_at=WHEN,
        documents=[LinkedDocument(id=doc)],
        page=page,
    )


def test_a_chunk_repeating_a_ranked_memory_is_left_out_and_each_id_appears_once() -> None:
    memory = MemoryResult(id="m1", memory="Alice prefers tea", similarity=0.9, updated_at=WHEN)
    same = chunk("d1#0", "d1", "Alice  prefers tea", 0.8)
    other = chunk("d2#0", "d2", "Bob prefers coffee", 0.7)
    assert [r.id for r in distinct_results([memory, same, other, other])] == ["m1", "d2#0"]


def test_aggregate_merges_one_documents_chunks_where_its_best_ranked() -> None:
    results = [
        chunk("d1#3", "d1", "page four text", 0.9, page=4),
        chunk("d2#0", "d2", "other doc", 0.8, page=1),
        chunk("d1#1", "d1", "page two text", 0.6, page=2),
    ]
    merged = aggregate_chunks(results)
    assert [r.id for r in merged] == ["d1#3", "d2#0"]
    first = merged[0]
    assert isinstance(first, ChunkResult)
    assert first.chunk == "page four text\n\npage two text"
    assert (first.similarity, first.page, first.page_end) == (0.9, 2, 4)

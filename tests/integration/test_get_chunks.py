"""``Retriever.get_chunks``: stored chunks by id, read live, each with its citation and
the ids of the chunks either side (what framework docstores follow). Real Chroma, real
MiniLM."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from remy_retriever import (
    Document,
    InvalidFilterError,
    InvalidInputError,
    Retriever,
    StoredChunk,
)

TEXT = "# Guide\n\n" + "\n\n".join(
    f"## Part {i}\n\nPart {i} explains how the {word} exporter ships its metrics."
    for i, word in enumerate(["alpha", "bravo", "charlie", "delta", "echo"])
)


def _engine(path: Path, embedder: Any) -> Retriever:
    return Retriever(path, collection="chunks", embedder=embedder, max_tokens=24)


def test_chunks_come_back_with_their_hit_text_citation_and_neighbour_ids(
    tmp_path: Path, embedder: Any
) -> None:
    with _engine(tmp_path, embedder) as r:
        r.add([Document(id="guide", text=TEXT, title="Guide", metadata={"team": "obs"})])
        hit = r.search("charlie exporter metrics", mode="lexical", k=1)[0]
        count = hit.citation.chunk_count
        assert count is not None and 0 < hit.citation.chunk_index < count - 1
        chunk = r.get_chunks([hit.id])[hit.id]
        assert isinstance(chunk, StoredChunk)
        assert (chunk.id, chunk.text, chunk.citation) == (hit.id, hit.text, hit.citation)
        assert chunk.metadata == {"team": "obs"}
        ids = [f"guide{chr(35)}{i}" for i in range(count)]
        position = hit.citation.chunk_index
        assert (chunk.previous_id, chunk.next_id) == (ids[position - 1], ids[position + 1])
        every = r.get_chunks([*reversed(ids), ids[0], "guide#99", "other#0", "\ud800", ""])
        assert list(every) == list(reversed(ids))  # asked order, once each, unknown left out
        assert every[ids[0]].previous_id is None
        assert every[ids[-1]].next_id is None


def test_a_write_by_another_retriever_shows_in_the_next_read(tmp_path: Path, embedder: Any) -> None:
    with _engine(tmp_path, embedder) as reader, _engine(tmp_path, embedder) as writer:
        assert reader.get_chunks(["late#0"]) == {}
        writer.add([Document(id="late", text="Added after the reader opened.")])
        assert reader.get_chunks(["late#0"])["late#0"].text.endswith("reader opened.")
        writer.delete(["late"])
        assert reader.get_chunks(["late#0"]) == {}


@pytest.mark.parametrize(
    ("ids", "where", "error", "match"),
    [
        ("guide#0", None, InvalidInputError, "takes a list"),
        ([7], None, InvalidInputError, "chunk ids as str"),
        (["guide#0"], {"t": {"$near": 1}}, InvalidFilterError, r"\$near"),
    ],
    ids=["a string", "an int id", "a bad filter"],
)
def test_bad_arguments_are_refused_with_the_fix(
    tmp_path: Path, embedder: Any, ids: Any, where: Any, error: type[Exception], match: str
) -> None:
    with _engine(tmp_path, embedder) as r, pytest.raises(error, match=match):
        r.get_chunks(ids, where=where)

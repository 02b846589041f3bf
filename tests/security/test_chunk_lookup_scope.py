"""Chunks by id (``Retriever.get_chunks``, what the LlamaIndex docstore reads) stay inside
the caller's ``where``: another tenant's chunk is answered exactly like a chunk that does
not exist, neighbour ids never lead out of the chunk's own document, and a document that
moved to another tenant is no longer read. Real Chroma, real MiniLM."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from remy_retriever import Document, Retriever, SentenceTransformerEmbedder

TEXT = "\n\n".join(
    f"## Step {i}\n\nRun step {i} of the {word} runbook, then check the {word} dashboard."
    for i, word in enumerate(["alpha", "bravo", "charlie", "delta"])
)


@pytest.fixture(scope="module")
def store(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Retriever]:
    root = tmp_path_factory.mktemp("chunk-scope")
    with Retriever(
        root, collection="scope", embedder=SentenceTransformerEmbedder(), max_tokens=24
    ) as engine:
        engine.add(
            Document(id=f"{tenant}-runbook", text=f"# Runbook\n\n{TEXT}", metadata={"t": tenant})
            for tenant in ("a", "b")
        )
        yield engine


def _ids(engine: Retriever, document: str) -> list[str]:
    (doc,) = engine.get_documents([document]).values()
    return [f"{document}{chr(35)}{i}" for i in range(doc.chunk_count)]


def test_another_tenants_chunk_reads_like_a_chunk_that_does_not_exist(store: Retriever) -> None:
    theirs = _ids(store, "b-runbook")
    assert len(theirs) > 2
    assert store.get_chunks(theirs, where={"t": "a"}) == {}
    assert store.get_chunks(["nope#0", theirs[0]], where={"t": "a"}) == {}
    assert set(store.get_chunks(theirs, where={"t": "b"})) == set(theirs)


def test_neighbour_ids_stay_in_the_chunks_own_document(store: Retriever) -> None:
    mine = _ids(store, "a-runbook")
    chunks = store.get_chunks(mine, where={"t": "a"})
    assert list(chunks) == mine
    for chunk in chunks.values():
        for neighbour in (chunk.previous_id, chunk.next_id):
            assert neighbour is None or neighbour in mine
    assert chunks[mine[0]].previous_id is None
    assert chunks[mine[-1]].next_id is None


def test_a_document_moved_to_another_tenant_is_no_longer_read(tmp_path: Path) -> None:
    with Retriever(tmp_path, collection="moved", embedder=SentenceTransformerEmbedder()) as r:
        r.add([Document(id="memo", text="Quarterly memo.", metadata={"t": "a"})])
        assert set(r.get_chunks(["memo#0"], where={"t": "a"})) == {"memo#0"}
        r.add([Document(id="memo", text="Quarterly memo.", metadata={"t": "b"})])
        assert r.get_chunks(["memo#0"], where={"t": "a"}) == {}
        assert r.get_chunks(["memo#0"], where={"t": "b"})["memo#0"].metadata == {"t": "b"}

"""A metadata-only ``PATCH /v3/documents/{id}`` through the official supermemory SDK keeps
the document's chunks as they were: the same chunk ids, offsets and page citations (also
for a document added as pre-split text, whose chunks are its stored spans)."""

from __future__ import annotations

import io
from pathlib import Path
from typing import Any

import httpx
import pytest
from remy_serve_support import ADMIN, RemyServer
from supermemory import Supermemory

from remy_retriever import Document, Retriever

pytestmark = pytest.mark.slow

#: Pre-split text: three pieces no Markdown chunker would cut this way, on two pages.
PIECES = [
    "Wombats dig burrows with their strong claws and",
    "flat heads; a burrow may run for thirty metres.",
    "Quolls are spotted marsupials that hunt at night.",
]


def _spanned() -> Document:
    text = " ".join(PIECES)
    spans, at = [], 0
    for piece in PIECES:
        spans.append((at, at + len(piece)))
        at += len(piece) + 1
    return Document(
        id="marsupials",
        text=text,
        title="Marsupials",
        metadata={"container_tag": "alice", "topic": "animals"},
        pages=(0, spans[2][0]),
        chunk_spans=tuple(spans),
    )


def _chunks(server: RemyServer, doc_id: str) -> list[tuple[Any, ...]]:
    """``(chunk id, start, end, page, page end)`` of every chunk of ``doc_id`` (/v1/search)."""
    reply = httpx.post(
        f"{server.url}/v1/search",
        json={"q": "wombats quolls burrow marsupials page", "k": 50, "mode": "lexical"},
        headers={"Authorization": f"Bearer {ADMIN}"},
        timeout=60,
    )
    reply.raise_for_status()
    out = []
    for hit in reply.json()["results"]:
        c = hit["citation"]
        if c["documentId"] == doc_id:
            out.append((hit["id"], c["start"], c["end"], c["page"], c["pageEnd"]))
    return sorted(out)


def _client(server: RemyServer) -> Supermemory:
    return Supermemory(
        base_url=server.url, api_key=ADMIN, _strict_response_validation=True, max_retries=0
    )


def test_a_metadata_only_patch_keeps_stored_chunk_spans_and_pages(tmp_path: Path) -> None:
    db = tmp_path / "db"
    with Retriever(db, collection="docs") as store:
        store.add([_spanned()])
        before_store = [(h.id, h.citation.start, h.citation.end) for h in _all(store)]
    assert len(before_store) == 3  # one chunk per span
    server = RemyServer(db).start()
    try:
        before = _chunks(server, "marsupials")
        assert [row[3:] for row in before] == [(1, None), (1, None), (2, None)]
        _client(server).documents.update("marsupials", metadata={"topic": "fauna"})
        assert _client(server).documents.get("marsupials").metadata == {"topic": "fauna"}
        assert _chunks(server, "marsupials") == before
    finally:
        server.stop()
    assert not server.tracebacks(), server.log()
    with Retriever(db, collection="docs") as store:
        stored = store.get_documents(["marsupials"])["marsupials"].document
        assert stored.chunk_spans == _spanned().chunk_spans
        assert stored.pages == _spanned().pages
        assert [(h.id, h.citation.start, h.citation.end) for h in _all(store)] == before_store


def test_a_metadata_only_patch_keeps_an_uploaded_pdfs_page_citations(tmp_path: Path) -> None:
    from fpdf import FPDF

    pdf = FPDF()
    for page in range(1, 4):
        pdf.add_page()
        pdf.set_font("helvetica", size=12)
        pdf.multi_cell(w=0, text=f"Page {page} of the marsupial field guide. " * 30)
    server = RemyServer(tmp_path / "db").start()
    try:
        client = _client(server)
        uploaded = client.documents.upload_file(
            file=("guide.pdf", io.BytesIO(bytes(pdf.output())), "application/pdf"),
            container_tag="alice",
        )
        before = _chunks(server, uploaded.id)
        assert {row[3] for row in before} == {1, 2, 3}
        client.documents.update(uploaded.id, metadata={"reviewed": True}, container_tag="alice")
        assert client.documents.get(uploaded.id).metadata == {"reviewed": True}
        assert _chunks(server, uploaded.id) == before
    finally:
        server.stop()
    assert not server.tracebacks(), server.log()


def _all(store: Retriever) -> list[Any]:
    hits = store.search("wombats quolls burrow marsupials", mode="lexical", k=50)
    return sorted(hits, key=lambda h: h.id)

"""Page citations without a store: ``Document.pages`` validation and hashing, the page of a
span, the stored format, the wire forms (SearchHit, /v3 chunks, /v4 chunk results), the
adapters' flat metadata and the rendered label."""

from __future__ import annotations

from typing import Any

import pytest

from remy_retriever import Citation, Document, InvalidDocumentError, SearchHit
from remy_retriever.integration.flatten import SHADOW_KEY, hit_from_metadata, hit_to_metadata
from remy_retriever.schema.document import Chunk, page_span
from remy_retriever.schema.hits import pages_label
from remy_retriever.schema.records import (
    chunk_metadata,
    document_fields,
    document_metadata,
    pack,
    to_citation,
    unpack,
)
from remy_retriever.supermemory.responses import (
    DocumentChunk,
    InvalidResponseError,
    MemorySearchResponse,
)

TEXT = "page one text\npage two text\npage three"  # pages start at 0, 14, 28
PAGES = (0, 14, 28)


def test_pages_are_kept_as_a_tuple() -> None:
    doc = Document(id="d", text=TEXT, pages=[0, 14, 28])  # type: ignore[arg-type]
    assert doc.pages == PAGES
    assert Document(id="d", text=TEXT).pages is None
    assert Document(id="d", text=TEXT, pages=(0, len(TEXT))).pages == (0, len(TEXT))


@pytest.mark.parametrize(
    ("pages", "message"),
    [
        ("0,14", r"pages = '0,14' is a str, not a tuple or list"),
        (range(0, 20, 10), r"is a range, not a tuple or list"),
        ((), r"pages is empty; pass None"),
        ((1, 14), r"pages\[0\] = 1 is not 0"),
        ((0, 14, 14), r"pages\[2\] = 14 is not greater than pages\[1\] = 14"),
        ((0, 20, 14), r"pages\[2\] = 14 is not greater than pages\[1\] = 20"),
        ((0, 14, 99), r"pages\[2\] = 99 is past the end of the text"),
        ((0, 14.0), r"pages\[1\] = 14.0 is a float, not an int"),
        ((0, True), r"pages\[1\] = True is a bool, not an int"),
        ((0, "14"), r"pages\[1\] = '14' is a str, not an int"),
        ((-1, 14), r"pages\[0\] = -1 is not 0"),
    ],
)
def test_bad_pages_are_refused_with_the_rule(pages: Any, message: str) -> None:
    with pytest.raises(InvalidDocumentError, match=message) as caught:
        Document(id="paged", text=TEXT, pages=pages)
    assert "'paged'" in str(caught.value)
    assert "strictly increasing" in str(caught.value)  # the rule, so the fix is clear
    assert f"len(text) = {len(TEXT)}" in str(caught.value)


def test_pages_change_the_content_hash_only_when_given() -> None:
    plain = Document(id="d", text=TEXT, title="T")
    paged = Document(id="d", text=TEXT, title="T", pages=PAGES)
    repaged = Document(id="d", text=TEXT, title="T", pages=(0, 20))
    assert len({plain.content_hash, paged.content_hash, repaged.content_hash}) == 3
    assert paged.content_hash == Document(id="d", text=TEXT, title="T", pages=PAGES).content_hash


def test_content_hash_without_pages_is_unchanged() -> None:
    # Pinned: stores written before pages existed must not re-index every document.
    doc = Document(id="d", text="hello", title="T", metadata={"a": 1})
    assert doc.content_hash == "2acc079973114befe3ed2908d27ea712"


@pytest.mark.parametrize(
    ("start", "end", "expected"),
    [
        (0, 5, (1, None)),
        (0, 14, (1, None)),  # ends on the last character of page 1
        (0, 15, (1, 2)),
        (14, 20, (2, None)),
        (13, 14, (1, None)),
        (13, 15, (1, 2)),
        (5, 40, (1, 3)),
        (28, 38, (3, None)),
        (20, 20, (2, None)),  # empty span: its start
    ],
)
def test_page_span(start: int, end: int, expected: tuple[int, int | None]) -> None:
    assert page_span(PAGES, start, end) == expected
    assert page_span(None, start, end) == (None, None)


def test_stored_chunk_and_document_carry_pages() -> None:
    doc = Document(id="d", text=TEXT, title="T", pages=PAGES)
    chunk = Chunk("d", 1, TEXT[10:20], 10, 20)
    page, page_end = doc.page_span(chunk.start, chunk.end)
    meta = chunk_metadata(
        doc,
        chunk,
        doc_hash="h",
        n_chunks=2,
        created="c",
        updated="u",
        updated_ms=1,
        page=page,
        page_end=page_end,
    )
    packed = pack([meta], [chunk.display_text])
    assert "remy_page" not in packed[0]  # packed with the bookkeeping, not a flat key
    [(cid, _, back)] = unpack({"ids": ["d#1"], "metadatas": packed})
    citation = to_citation(cid, back)
    assert (citation.page, citation.page_end) == (1, 2)

    plain = chunk_metadata(
        Document(id="d", text=TEXT), chunk, doc_hash="h", n_chunks=2, created="c",
        updated="u", updated_ms=1,
    )  # fmt: skip
    assert to_citation("d#1", plain).page is None
    assert not any("page" in key for key in plain)  # documents without pages: no new keys

    table = document_metadata(doc, doc_hash="h", n_chunks=2, created="c", updated="u")
    [(_, _, table_back)] = unpack({"ids": ["d"], "metadatas": pack([table], [TEXT], pack_all=True)})
    assert document_fields(table_back)["pages"] == PAGES
    assert document_fields(document_metadata(Document(id="d", text=TEXT), doc_hash="h",
        n_chunks=1, created="c", updated="u"))["pages"] is None  # fmt: skip


def _hit(**citation: Any) -> SearchHit:
    return SearchHit(
        id="guide.pdf#4",
        score=0.5,
        text="Install > Linux\n\napt install remy",
        citation=Citation(
            document_id="guide.pdf",
            chunk_index=4,
            start=100,
            end=180,
            heading_path=("Install", "Linux"),
            path="docs/guide.pdf",
            **citation,
        ),
        metadata={"tenant": "a"},
    )


def test_citation_wire_round_trip() -> None:
    spanning = _hit(page=2, page_end=3)
    wire = spanning.to_dict()
    assert (wire["citation"]["page"], wire["citation"]["pageEnd"]) == (2, 3)
    assert SearchHit.from_dict(wire) == spanning
    one_page = _hit(page=3)
    assert (one_page.to_dict()["citation"]["page"], one_page.to_dict()["citation"]["pageEnd"]) == (
        3,
        None,
    )
    assert SearchHit.from_dict(one_page.to_dict()) == one_page
    plain = _hit()
    assert plain.to_dict()["citation"]["page"] is None  # like title/url/path: null when absent
    assert SearchHit.from_dict(plain.to_dict()) == plain
    old_wire = plain.to_dict()
    del old_wire["citation"]["page"], old_wire["citation"]["pageEnd"]
    assert SearchHit.from_dict(old_wire) == plain  # a hit serialised before pages existed


def test_label_shows_the_pages() -> None:
    assert _hit(page=3).citation.label() == "Install > Linux (docs/guide.pdf, p. 3)"
    assert _hit(page=3, page_end=4).citation.label() == "Install > Linux (docs/guide.pdf, pp. 3-4)"
    assert _hit().citation.label() == "Install > Linux (docs/guide.pdf)"
    assert Citation("doc", 0, 0, 1).label() == "doc (doc)"
    assert pages_label(None) is None
    assert pages_label(7, 7) == "p. 7"


def test_adapter_metadata_carries_pages_flat() -> None:
    hit = _hit(page=2, page_end=3)
    meta = hit_to_metadata(hit)
    assert (meta["page"], meta["page_end"]) == (2, 3)
    assert meta["citation"]["pageEnd"] == 3
    assert hit_from_metadata(hit.id, hit.text, meta) == hit
    plain = hit_to_metadata(_hit())
    assert (plain["page"], plain["page_end"]) == (None, None)


def test_a_user_page_key_is_kept_apart_and_restored() -> None:
    hit = SearchHit(
        id="d#0",
        score=1.0,
        text="x",
        citation=Citation("d", 0, 0, 1, page=5),
        metadata={"page": "cover", "tenant": "a"},
    )
    meta = hit_to_metadata(hit)
    assert meta["page"] == 5
    assert meta[SHADOW_KEY] == {"page": "cover"}
    assert hit_from_metadata(hit.id, hit.text, meta) == hit


def test_document_chunk_pages_on_the_wire() -> None:
    chunk = DocumentChunk(content="x", score=0.5, is_relevant=True, page=2, page_end=3)
    assert chunk.to_dict() == {
        "content": "x",
        "score": 0.5,
        "isRelevant": True,
        "page": 2,
        "pageEnd": 3,
    }
    assert DocumentChunk(content="x", score=0.5, is_relevant=True).to_dict() == {
        "content": "x",
        "score": 0.5,
        "isRelevant": True,
    }
    parsed = MemorySearchResponse.parse(
        {
            "results": [
                {
                    "id": "d#0",
                    "chunk": "x",
                    "similarity": 0.5,
                    "updatedAt": "2024-01-15T10:30:00Z",
                    "page": 4,
                }
            ],
            "timing": 1,
            "total": 1,
        }
    )
    assert parsed.results[0].page == 4  # type: ignore[union-attr]
    with pytest.raises(InvalidResponseError, match=r"results\[0\]\.page"):
        MemorySearchResponse.parse(
            {
                "results": [
                    {"id": "d#0", "chunk": "x", "similarity": 0.5,
                     "updatedAt": "2024-01-15T10:30:00Z", "page": 0}
                ],
                "timing": 1,
                "total": 1,
            }
        )  # fmt: skip


def test_flattened_passages_carry_the_page() -> None:
    """Document- and memory-search results reach the adapters as passages; a paged
    chunk's page must survive that step too."""
    from remy_retriever.integration.passages import memory_passages

    memory = {
        "results": [
            {
                "id": "d#0",
                "chunk": "x",
                "similarity": 0.5,
                "updatedAt": "2024-01-15T10:30:00Z",
                "page": 4,
                "pageEnd": 5,
            },
            {"id": "e#0", "chunk": "y", "similarity": 0.4, "updatedAt": "2024-01-15T10:30:00Z"},
        ],
        "timing": 1,
        "total": 2,
    }
    first, second = memory_passages(memory)
    assert (first.metadata["page"], first.metadata["page_end"]) == (4, 5)
    assert "page" not in second.metadata and "page_end" not in second.metadata

"""A pre-split piece's place in its source (``Document.text_start``) and section
(``Document.heading_path``), and how the adapters' shared code reads them off a
splitter's metadata."""

from __future__ import annotations

import pytest

from remy_retriever import Document, InvalidDocumentError
from remy_retriever.integration import heading_path_of, piece_place
from remy_retriever.text.chunking import chunks_from_spans


def test_chunks_of_a_placed_piece_count_from_the_source_start() -> None:
    chunks = chunks_from_spans(
        "d", "  penguins huddle ", ((0, 18),), title="t", offset=100, heading_path=("A", "B")
    )
    assert (chunks[0].start, chunks[0].end) == (102, 117)
    assert chunks[0].heading_path == ("A", "B")


@pytest.mark.parametrize(
    ("fields", "named"),
    [
        ({"text_start": -1, "chunk_spans": ((0, 1),)}, "text_start = -1"),
        ({"text_start": True, "chunk_spans": ((0, 1),)}, "text_start = True"),
        ({"heading_path": "A/B", "chunk_spans": ((0, 1),)}, "heading_path = 'A/B'"),
        ({"text_start": 5}, "pass chunk_spans too"),
        ({"heading_path": ("A",)}, "pass chunk_spans too"),
    ],
)
def test_a_bad_place_is_refused_naming_the_value(fields: dict, named: str) -> None:
    with pytest.raises(InvalidDocumentError, match=named.replace("(", r"\(")):
        Document(id="d", text="x", **fields)


def test_the_place_changes_the_content_hash_only_when_set() -> None:
    plain = Document(id="d", text="x", chunk_spans=((0, 1),))
    assert Document(id="d", text="x", chunk_spans=((0, 1),), text_start=0) == plain
    placed = Document(id="d", text="x", chunk_spans=((0, 1),), text_start=3)
    headed = Document(id="d", text="x", chunk_spans=((0, 1),), heading_path=("A",))
    assert len({plain.content_hash, placed.content_hash, headed.content_hash}) == 3


@pytest.mark.parametrize(
    ("metadata", "text", "expected"),
    [
        ({"header_path": "/Guide/"}, "## Wildlife\n\nPenguins.", ("f.md", "Guide", "Wildlife")),
        ({"header_path": "/Guide/Wildlife/"}, "Penguins.", ("f.md", "Guide", "Wildlife")),
        ({"Header 2": "Wildlife", "Header 1": "Guide"}, "", ("f.md", "Guide", "Wildlife")),
        ({"h1": "f.md", "h2": "Wildlife"}, "", ("f.md", "Wildlife")),
        ({"header_path": "/"}, "Penguins.", None),
        ({"source": "f.md"}, "# Not read without header metadata", None),
    ],
)
def test_the_section_comes_from_splitter_header_metadata(
    metadata: dict, text: str, expected: tuple[str, ...] | None
) -> None:
    assert heading_path_of(metadata, "f.md", text) == expected


def test_piece_place_defaults_to_the_start_of_the_source() -> None:
    assert piece_place({}, None) == {"text_start": 0, "heading_path": None}

"""Pre-split documents (``Document.chunk_spans``): validation, the chunks they give, and
end to end on real embedded Chroma and tantivy (deterministic token-hash embedder): each
span is one chunk, in order, with its offsets, in every mode; nothing is re-chunked;
the stored document keeps its spans, so adding it again writes nothing."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import pytest

from remy_retriever import Document, InvalidDocumentError, Retriever
from remy_retriever.text.chunking import chunks_from_spans

RELIABILITY = Path(__file__).resolve().parent / "reliability"
sys.path.insert(0, str(RELIABILITY))
from remy_reliability_support import MODES, TokenHashEmbedder  # noqa: E402

# Three pieces as a splitter with overlap gives them: the second repeats "harbour lights".
PIECES = [
    (0, "The ferry leaves the harbour at dawn. Harbour lights guide it."),
    (38, "Harbour lights guide it. The crossing takes two hours in calm weather."),
    (110, "Storm warnings close the route, and the zebracorn ferry waits."),
]


def _source_text() -> tuple[str, tuple[tuple[int, int], ...]]:
    end = max(start + len(piece) for start, piece in PIECES)
    chars = ["\n"] * end
    for start, piece in PIECES:
        chars[start : start + len(piece)] = piece
    text = "".join(chars)
    return text, tuple((start, start + len(piece)) for start, piece in PIECES)


TEXT, SPANS = _source_text()


def test_the_source_text_holds_every_piece_at_its_offset() -> None:
    for (start, end), (_, piece) in zip(SPANS, PIECES):
        assert TEXT[start:end] == piece


def test_each_span_is_one_chunk_with_its_offsets_and_the_title_as_heading_path() -> None:
    chunks = chunks_from_spans("d", TEXT, SPANS, title=" Ferry guide ")
    assert [c.text for c in chunks] == [piece for _, piece in PIECES]
    assert [(c.start, c.end) for c in chunks] == list(SPANS)
    assert [c.position for c in chunks] == [0, 1, 2]
    assert {c.heading_path for c in chunks} == {("Ferry guide",)}


def test_whitespace_around_a_span_is_trimmed_and_the_offsets_follow() -> None:
    text = "  alpha beta  \n\ngamma"
    (chunk,) = chunks_from_spans("d", text, ((0, 15),))
    assert chunk.text == "alpha beta"
    assert text[chunk.start : chunk.end] == "alpha beta"


@pytest.mark.parametrize(
    ("spans", "message"),
    [
        ("0-5", r"chunk_spans = '0-5' is not a list"),
        ((), r"chunk_spans = \(\) is not a list"),
        (((0, 5, 9),), r"chunk_spans\[0\] = \(0, 5, 9\) is not a pair of ints"),
        (((0, 5.0),), r"chunk_spans\[0\] = \(0, 5.0\) is not a pair of ints"),
        (((0, True),), r"is not a pair of ints"),
        (((5, 5),), r"chunk_spans\[0\] = \(5, 5\) is outside the text or empty"),
        (((0, 10_000),), r"is outside the text or empty"),
        (((-1, 5),), r"is outside the text or empty"),
        (((40, 60), (0, 20)), r"chunk_spans\[1\] = \(0, 20\) starts before the span before it"),
        (((62, 63),), r"holds only whitespace"),
    ],
)
def test_bad_spans_are_refused_with_the_rule(spans: Any, message: str) -> None:
    with pytest.raises(InvalidDocumentError, match=message) as caught:
        Document(id="split", text=TEXT, chunk_spans=spans)
    assert "'split'" in str(caught.value)
    assert "pass None to let remy chunk the text" in str(caught.value)


def test_spans_are_kept_as_tuples_and_change_the_content_hash() -> None:
    doc = Document(id="d", text=TEXT, chunk_spans=[list(s) for s in SPANS])  # type: ignore[arg-type]
    assert doc.chunk_spans == SPANS
    plain = Document(id="d", text=TEXT)
    assert plain.chunk_spans is None
    assert doc.content_hash != plain.content_hash
    assert doc.content_hash != Document(id="d", text=TEXT, chunk_spans=SPANS[:2]).content_hash


@pytest.fixture
def retriever(tmp_path: Path) -> Any:
    with Retriever(path=tmp_path / "db", collection="split", embedder=TokenHashEmbedder()) as r:
        yield r


def test_a_pre_split_document_is_stored_as_its_spans_in_every_mode(retriever: Any) -> None:
    # max_tokens would cut each piece in two; spans are not re-chunked.
    doc = Document(id="guide.md", text=TEXT, path="docs/guide.md", chunk_spans=SPANS)
    report = retriever.add([doc])
    assert report.added == ("guide.md",)
    assert retriever.count() == len(SPANS)
    for mode in MODES:
        hits = retriever.search("zebracorn ferry storm", mode=mode, k=3)
        top = hits[0].citation
        assert (top.document_id, top.chunk_index, top.chunk_count) == ("guide.md", 2, 3), mode
        assert (top.start, top.end) == SPANS[2]
        assert top.path == "docs/guide.md"
        assert hits[0].text == PIECES[2][1]
    stored = retriever.get_documents(["guide.md"])["guide.md"]
    assert stored.document.chunk_spans == SPANS
    assert stored.chunk_count == len(SPANS)
    again = retriever.add([stored.document])
    assert again.unchanged == ("guide.md",)


def test_neighbours_of_a_pre_split_chunk_are_the_pieces_beside_it(retriever: Any) -> None:
    retriever.add([Document(id="guide.md", text=TEXT, chunk_spans=SPANS)])
    (hit,) = retriever.search("crossing two hours calm", mode="lexical", k=1, expand=1)
    assert hit.citation.chunk_index == 1
    assert hit.neighbors == {"before": (PIECES[0][1],), "after": (PIECES[2][1],)}


def test_re_splitting_a_document_replaces_its_chunks(retriever: Any) -> None:
    retriever.add([Document(id="guide.md", text=TEXT, chunk_spans=SPANS)])
    report = retriever.add([Document(id="guide.md", text=TEXT, chunk_spans=((0, len(TEXT)),))])
    assert report.updated == ("guide.md",)
    assert retriever.count() == 1

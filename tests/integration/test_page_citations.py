"""Page citations end to end, on real embedded Chroma and tantivy (deterministic token-hash
embedder): a paged Document's chunks cite the page they are on in every mode, in document
search, in the stored document, after a re-pagination, and in the CLI's output."""

from __future__ import annotations

import json
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from remy_retriever import Document, InvalidDocumentError, Retriever
from remy_retriever.cli import main as cli_main
from remy_retriever.memory import ChunkResult, MemoryStore

RELIABILITY = Path(__file__).resolve().parent / "reliability"
sys.path.insert(0, str(RELIABILITY))
from remy_reliability_support import MODES, TokenHashEmbedder, snapshot  # noqa: E402

FILLER = {
    1: "Apples grow on trees in orchards across the valley.",
    2: "Bridges cross rivers and connect towns together.",
    3: "Clouds drift slowly over the mountains at dawn.",
    4: "Deserts stay dry for most of the year.",
}
ONLY_ON_PAGE_3 = "The zebracorn migration happens only in late autumn."
MAX_TOKENS = 128


def _book() -> tuple[str, tuple[int, ...]]:
    """Four pages of several chunks each; one sentence is only on page 3."""
    parts = []
    for n in range(1, 5):
        body = " ".join([FILLER[n]] * 30)
        if n == 3:
            body += " " + ONLY_ON_PAGE_3
        parts.append(f"# Chapter {n}\n\n{body}\n\n")
    starts, at = [], 0
    for part in parts:
        starts.append(at)
        at += len(part)
    return "".join(parts), tuple(starts)


def _spanning() -> tuple[str, tuple[int, ...]]:
    """A long first section, then a short one that starts on page 2 and ends on page 3."""
    first = "# Setup\n\n" + " ".join([FILLER[1]] * 40) + "\n\n"
    second = "# Quokkaleaf\n\nThe quokkaleaf paragraph starts near the foot of one page "
    rest = "and carries on at the top of the next page.\n"
    text = first + second + rest
    return text, (0, len(first), len(first) + len(second))


@pytest.fixture
def store(tmp_path: Path) -> Iterator[Retriever]:
    r = Retriever(
        tmp_path / "db", collection="paged", embedder=TokenHashEmbedder(), max_tokens=MAX_TOKENS
    )
    yield r
    r.close()


@pytest.mark.timeout(180)
def test_a_sentence_on_page_3_is_cited_as_page_3_in_every_mode(store: Retriever) -> None:
    text, pages = _book()
    store.add([Document(id="book.pdf", text=text, path="docs/book.pdf", type="pdf", pages=pages)])
    assert store.count() > 8  # several chunks per page, so the page is not trivially 1
    for mode in MODES:
        [hit] = store.search("zebracorn migration autumn", mode=mode, k=1)
        assert ONLY_ON_PAGE_3 in hit.text, mode
        assert (hit.citation.page, hit.citation.page_end) == (3, None), mode
        assert hit.to_dict()["citation"]["page"] == 3
        start, end = hit.citation.start, hit.citation.end
        assert pages[2] <= start < end <= pages[3]  # the offsets agree with the page
    for n in (1, 2, 4):
        [hit] = store.search(FILLER[n], mode="lexical", k=1)
        assert hit.citation.page == n
    stored = store.get_documents(["book.pdf"])["book.pdf"].document
    assert stored.pages == pages


@pytest.mark.timeout(180)
def test_a_chunk_spanning_two_pages_cites_both(store: Retriever) -> None:
    text, pages = _spanning()
    store.add([Document(id="span.pdf", text=text, pages=pages)])
    for mode in MODES:
        [hit] = store.search("quokkaleaf paragraph", mode=mode, k=1)
        assert "carries on at the top" in hit.text, mode
        assert (hit.citation.page, hit.citation.page_end) == (2, 3), mode
        assert hit.citation.label().endswith("(span.pdf, pp. 2-3)")
        assert hit.citation.label().startswith("Quokkaleaf")
    wire = store.search("quokkaleaf", mode="lexical", k=1)[0].to_dict()["citation"]
    assert (wire["page"], wire["pageEnd"]) == (2, 3)


@pytest.mark.timeout(180)
def test_document_search_chunks_carry_their_page(store: Retriever) -> None:
    text, pages = _book()
    store.add([Document(id="book.pdf", text=text, pages=pages), Document(id="n", text="no pages")])
    response = store.search_documents("zebracorn migration", mode="lexical", context_chunks=1)
    [result] = response.results
    relevant = [c for c in result.chunks if c.is_relevant]
    assert [c.page for c in relevant] == [3]
    assert ONLY_ON_PAGE_3 in relevant[0].content
    context = [c for c in result.chunks if not c.is_relevant]
    assert context and all(c.page in (2, 3, 4) for c in context)  # neighbours, with pages
    wire = json.loads(response.to_json())
    assert {c["page"] for c in wire["results"][0]["chunks"]} <= {2, 3, 4}
    plain = store.search_documents("no pages", mode="lexical").results[0]
    assert "page" not in plain.to_dict()["chunks"][0]  # documents without pages: as before


@pytest.mark.timeout(180)
def test_repaginating_the_same_text_updates_the_stored_pages(store: Retriever) -> None:
    text, pages = _book()
    report = store.add([Document(id="book.pdf", text=text, pages=pages)])
    assert list(report.added) == ["book.pdf"]
    assert store.search("zebracorn", mode="lexical", k=1)[0].citation.page == 3
    same = store.add([Document(id="book.pdf", text=text, pages=pages)])
    assert list(same.unchanged) == ["book.pdf"]
    # The same text laid out on two pages: page 3 is now the second half of page 1.
    repaged = (0, pages[3])
    changed = store.add([Document(id="book.pdf", text=text, pages=repaged)])
    assert list(changed.updated) == ["book.pdf"]
    for mode in MODES:
        assert store.search("zebracorn migration", mode=mode, k=1)[0].citation.page == 1, mode
    assert store.search(FILLER[4], mode="lexical", k=1)[0].citation.page == 2
    dropped = store.add([Document(id="book.pdf", text=text)])
    assert list(dropped.updated) == ["book.pdf"]
    hit = store.search("zebracorn", mode="lexical", k=1)[0]
    assert (hit.citation.page, hit.citation.page_end) == (None, None)
    assert store.get_documents(["book.pdf"])["book.pdf"].document.pages is None


@pytest.mark.timeout(120)
def test_bad_pages_store_nothing(store: Retriever) -> None:
    store.add([Document(id="keep", text="kept text")])
    baseline = snapshot(store)
    with pytest.raises(InvalidDocumentError, match=r"pages\[1\] = 99 is past the end"):
        store.add([Document(id="ok", text="fine"), Document(id="bad", text="short", pages=(0, 99))])
    assert snapshot(store) == baseline


@pytest.mark.timeout(300)
def test_cli_search_shows_the_page(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], minilm_path: str
) -> None:
    # The real model: the CLI reopens a store only with an embedder it can name.
    text, pages = _book()
    span_text, span_pages = _spanning()
    db = tmp_path / "db"
    with Retriever(db, collection="docs", embedder=minilm_path, max_tokens=MAX_TOKENS) as r:
        r.add(
            [
                Document(id="book.pdf", text=text, path="docs/book.pdf", pages=pages),
                Document(id="span.pdf", text=span_text, path="span.pdf", pages=span_pages),
            ]
        )
    capsys.readouterr()
    store = ["--db", str(db), "--embedder", minilm_path, "--k", "1"]
    assert cli_main(["search", "zebracorn migration", *store]) == 0
    first = capsys.readouterr().out.splitlines()[0]
    assert "Chapter 3" in first and "(docs/book.pdf, p. 3)" in first
    assert cli_main(["search", "quokkaleaf paragraph", *store]) == 0
    out = capsys.readouterr().out
    assert "Quokkaleaf" in out and "(span.pdf, pp. 2-3)" in out
    assert cli_main(["search", "zebracorn", *store, "--documents", "--mode", "lexical"]) == 0
    assert "p. 3  " in capsys.readouterr().out


@pytest.mark.timeout(180)
def test_memory_search_chunk_results_carry_their_page(store: Retriever) -> None:
    text, pages = _book()
    store.add([Document(id="book.pdf", text=text, pages=pages), Document(id="n", text="no pages")])
    with MemoryStore(retriever=store) as memories:
        response = memories.search("zebracorn migration", search_mode="documents", mode="lexical")
        plain = memories.search("no pages", search_mode="documents", mode="lexical", limit=1)
    top = response.results[0]
    assert isinstance(top, ChunkResult)
    assert ONLY_ON_PAGE_3 in top.chunk
    assert top.to_dict()["page"] == 3
    assert "pageEnd" not in top.to_dict()  # one page
    assert "page" not in plain.results[0].to_dict()

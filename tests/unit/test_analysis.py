"""The one analyser: terms for indexing, queries and highlighting agree."""

from hypothesis import given
from hypothesis import strategies as st

from remy_retriever.ingest.writer import slices as _slices
from remy_retriever.text.analysis import MAX_QUERY_TERMS, analyze, analyze_query, analyze_spans


def test_stemming_stopwords_and_case() -> None:
    assert analyze("Installing the INSTALLED installation") == ["instal", "instal", "instal"]
    assert analyze("the of and") == []
    assert analyze("snake_case don't") == ["snake", "case"]  # "don't" is a stopword


def test_query_terms_are_deduplicated_and_capped() -> None:
    assert analyze_query("install install linux") == ["instal", "linux"]
    many = " ".join(f"word{i}" for i in range(500))
    assert len(analyze_query(many)) == MAX_QUERY_TERMS


def test_spans_point_at_surface_forms() -> None:
    text = "🎉 日本語 Café crème brûlée; e\u0301te\u0301 ÜBER"
    for span in analyze_spans(text):
        surface = text[span.start : span.end]
        assert analyze(surface) == [span.term]


@given(st.text(max_size=200))
def test_fast_path_equals_span_path(text: str) -> None:
    assert analyze(text) == [s.term for s in analyze_spans(text)]


def test_slices_cut_only_at_document_boundaries() -> None:
    assert _slices([3, 6, 9], 5) == [3, 6, 9]
    assert _slices([3, 4, 9], 5) == [4, 9]
    assert _slices([12], 5) == [5, 10, 12]  # a document larger than a slice
    assert _slices([], 5) == []

"""Fusion is pure: check it against hand-computed examples."""

import pytest

from remy_retriever.search.fusion import convex, normalize_scores, rrf


def test_rrf_matches_hand_computed_example() -> None:
    # semantic: a(1) b(2) c(3); lexical: c(1) a(2) d(3); k=60, equal weights.
    ranked = {
        "semantic": [("a", 0.9), ("b", 0.8), ("c", 0.7)],
        "lexical": [("c", 12.0), ("a", 9.0), ("d", 1.0)],
    }
    fused = dict(rrf(ranked, k=60))
    assert fused["a"] == pytest.approx(1 / 61 + 1 / 62)
    assert fused["c"] == pytest.approx(1 / 63 + 1 / 61)
    assert fused["b"] == pytest.approx(1 / 62)
    assert fused["d"] == pytest.approx(1 / 63)
    assert [doc for doc, _ in rrf(ranked, k=60)] == ["a", "c", "b", "d"]


def test_rrf_weights_are_honoured() -> None:
    ranked = {"semantic": [("a", 1.0), ("b", 0.5)], "lexical": [("b", 3.0), ("a", 1.0)]}
    # Equal weights tie a and b (1/61 + 1/62 each); tie broken by best rank then id.
    assert [d for d, _ in rrf(ranked, k=60)] == ["a", "b"]
    fused = rrf(ranked, k=60, weights={"semantic": 1.0, "lexical": 2.0})
    assert [d for d, _ in fused] == ["b", "a"]
    assert dict(fused)["b"] == pytest.approx(1 / 62 + 2 / 61)


def test_rrf_fuses_by_id_not_text() -> None:
    ranked = {"semantic": [("x#0", 0.5)], "lexical": [("x#1", 2.0)]}
    assert {d for d, _ in rrf(ranked)} == {"x#0", "x#1"}


def test_rrf_rejects_negative_k() -> None:
    with pytest.raises(ValueError, match="rrf k must be >= 0"):
        rrf({"a": []}, k=-1)


def test_normalize_scores() -> None:
    assert normalize_scores([("a", 4.0), ("b", 2.0), ("c", 0.0)]) == {"a": 1.0, "b": 0.5, "c": 0.0}
    assert normalize_scores([("a", 3.0)]) == {"a": 1.0}
    assert normalize_scores([]) == {}


def test_convex_combination() -> None:
    ranked = {
        "semantic": [("a", 0.9), ("b", 0.5), ("c", 0.1)],
        "lexical": [("b", 10.0), ("c", 5.0)],
    }
    fused = dict(convex(ranked, weights={"semantic": 0.3, "lexical": 0.7}))
    assert fused["a"] == pytest.approx(0.3 * 1.0)
    assert fused["b"] == pytest.approx(0.3 * 0.5 + 0.7 * 1.0)
    assert fused["c"] == pytest.approx(0.3 * 0.0 + 0.7 * 0.0)
    assert next(iter(fused)) == "b"

"""The signal-adaptive semantic weight (``fusion.signal_alpha``), as a pure function."""

from __future__ import annotations

import math

from remy_retriever.search import fusion


def _ranked(prefix: str, scores: list[float]) -> list[tuple[str, float]]:
    return [(f"{prefix}{i}", s) for i, s in enumerate(scores)]


FLAT = [0.5, 0.49, 0.48, 0.47, 0.46, 0.45]
PEAKED = [0.9, 0.3, 0.29, 0.28, 0.27, 0.26]


def test_branches_that_agree_keep_alpha() -> None:
    same = _ranked("d", PEAKED)
    got = fusion.signal_alpha(0.45, same, _ranked("d", FLAT), idf={"x": 9.0}, ceiling=1.0)
    assert got.signals is not None and got.signals.agreement == 1.0
    assert math.isclose(got.alpha, 0.45)


def test_a_peaked_semantic_list_pulls_towards_semantic() -> None:
    got = fusion.signal_alpha(
        0.45,
        _ranked("s", PEAKED),
        _ranked("l", FLAT),
        idf={},
        ceiling=1.0,
        weights={"peak": 1.0},
    )
    assert got.alpha > 0.45 and got.pulls["peak"] > 0
    assert "peak" in got.reason


def test_rare_query_terms_pull_towards_lexical() -> None:
    rare = {"zyxin": fusion.RARE_IDF + 1, "kinase": fusion.RARE_IDF + 2}
    got = fusion.signal_alpha(
        0.45,
        _ranked("s", FLAT),
        _ranked("l", FLAT),
        idf=rare,
        ceiling=1.0,
        weights={"rarity": -1.0},
    )
    assert got.alpha < 0.45


def test_an_empty_lexical_list_gives_semantic_all_the_weight() -> None:
    got = fusion.signal_alpha(0.45, _ranked("s", FLAT), [], idf={}, ceiling=0.0)
    assert got.alpha == 1.0 and got.signals is None


def test_the_weight_stays_inside_its_limits() -> None:
    got = fusion.signal_alpha(
        0.9,
        _ranked("s", PEAKED),
        _ranked("l", FLAT),
        idf={},
        ceiling=1.0,
        weights={"peak": 100.0},
    )
    assert got.alpha <= 0.95


def test_fuse_reports_the_adapted_weights() -> None:
    branches = {"semantic": _ranked("s", PEAKED), "lexical": _ranked("l", FLAT)}
    _, detail = fusion.fuse(
        branches, fusion="convex", alpha=0.45, adaptive="signals", scales={"lexical": 1.0}
    )
    assert detail is not None and detail.adapted is not None
    assert math.isclose(detail.weights["semantic"], detail.adapted.alpha)

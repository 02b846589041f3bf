"""`remy tune`'s fit is pure given the branch lists: check it on hand-made lists."""

from __future__ import annotations

import pytest

from remy_retriever.errors import InvalidInputError
from remy_retriever.schema.options import dump_search_config, load_search_config
from remy_retriever.search.fusion import fuse, normalize, peak_alpha
from remy_retriever.search.tuning import Collected, defaults, fit


def _query(qid: str, good: str, bad: list[str]) -> Collected:
    # The semantic branch ranks the relevant chunk last, the lexical branch first.
    semantic = [(f"{b}#0", 0.9 - 0.05 * i) for i, b in enumerate(bad)] + [(f"{good}#0", 0.4)]
    lexical = [(f"{good}#0", 9.0)] + [(f"{b}#0", 3.0 - 0.1 * i) for i, b in enumerate(bad)]
    return Collected(qid, {"semantic": semantic, "lexical": lexical}, {})


def test_fit_prefers_the_branch_that_finds_the_relevant_documents() -> None:
    collected = [_query(f"q{i}", f"rel{i}", [f"x{i}{j}" for j in range(6)]) for i in range(4)]
    qrels = {f"q{i}": {f"rel{i}": 1} for i in range(4)}
    report = fit(collected, qrels)
    assert report.queries == 4
    assert report.score == pytest.approx(1.0)
    assert report.score >= report.default_score
    chosen = {k: v for k, v in report.config.items() if k != "fill"}
    ranked, _ = fuse(collected[0].branches, **{"alpha": 0.4, **chosen})
    assert ranked[0][0] == "rel0#0"
    assert len(report.tried) > 50  # the whole grid was scored


def test_fit_keeps_the_defaults_when_nothing_is_better() -> None:
    same = [("a#0", 0.9), ("b#0", 0.5)]
    collected = [Collected("q", {"semantic": same, "lexical": [("a#0", 5.0), ("b#0", 1.0)]}, {})]
    report = fit(collected, {"q": {"a": 1}})
    assert dict(report.config) == defaults()
    assert report.score == report.default_score == pytest.approx(1.0)


def test_fit_needs_judged_queries() -> None:
    with pytest.raises(ValueError, match="none of the queries has a judgement"):
        fit([Collected("q", {"semantic": [], "lexical": []}, {})], {"other": {"d": 1}})


def test_normalisations_and_extra_scores() -> None:
    items = [("a", 4.0), ("b", 2.0), ("c", 0.0)]
    z = normalize(items, "zscore", {"d": 2.0})
    assert z["b"] == pytest.approx(0.0) and z["d"] == pytest.approx(0.0)
    assert z["a"] == pytest.approx(-z["c"])
    dbsf = normalize(items, "dbsf", {"far": 100.0})
    assert 0.0 < dbsf["c"] < dbsf["b"] < dbsf["a"] < 1.0 and dbsf["far"] == 1.0
    assert normalize(items, "minmax", {"d": 3.0})["d"] == pytest.approx(0.75)
    with pytest.raises(ValueError, match="unknown normalization 'rank'"):
        normalize(items, "rank")


def test_filled_scores_change_the_fusion() -> None:
    branches = {"semantic": [("a", 0.9), ("b", 0.1)], "lexical": [("c", 5.0), ("a", 1.0)]}
    plain, _ = fuse(branches, fusion="convex", alpha=0.5)
    filled, detail = fuse(
        branches, fusion="convex", alpha=0.5, extra={"semantic": {"c": 0.9}, "lexical": {"b": 5.0}}
    )
    assert dict(plain)["c"] == pytest.approx(0.5)  # no cosine for c: the list's floor, 0
    assert dict(filled)["c"] == pytest.approx(1.0)  # its real cosine, as high as a's
    assert detail is not None and detail.weights == {"semantic": 0.5, "lexical": 0.5}


def test_peak_alpha_moves_weight_to_the_peaked_branch() -> None:
    peaked = [("a", 10.0)] + [(f"x{i}", 1.0) for i in range(9)]
    flat = [(f"y{i}", 1.0 - 0.01 * i) for i in range(10)]
    assert peak_alpha(0.5, peaked, flat) > 0.5
    assert peak_alpha(0.5, flat, peaked) < 0.5
    assert peak_alpha(0.4, [], []) == 0.4


def test_stored_search_config_round_trips_and_is_validated() -> None:
    config = {"fusion": "convex", "alpha": 0.3, "normalization": "zscore", "fill": "both"}
    assert load_search_config(dump_search_config(config)) == config
    assert load_search_config(None) == {} and load_search_config("") == {}
    for bad in ('{"alpha": 2}', '{"bogus": 1}', "not json", '["alpha"]', '{"fill": true}'):
        with pytest.raises(InvalidInputError, match="remy tune"):
            load_search_config(bad)
    with pytest.raises(InvalidInputError, match="alpha must be a number in"):
        dump_search_config({"alpha": -1})

"""CrossEncoderReranker's score cache: every pair is scored once per call, whatever the
cache size (the model itself is replaced by a counting stand-in; no weights load)."""

from __future__ import annotations

import pytest

from remy_retriever.models.rerankers import CrossEncoderReranker


class Counting(CrossEncoderReranker):
    def __init__(self, cache_size: int) -> None:
        super().__init__("not-loaded", cache_size=cache_size)
        self.pairs: list[str] = []

    def _predict(self, query: str, texts: list[str]) -> list[float]:
        self.pairs += texts
        return [len(t) / 100 for t in texts]


@pytest.mark.parametrize("cache_size", [0, 1, 4096])
def test_each_pair_is_scored_once_per_call(cache_size: int) -> None:
    r = Counting(cache_size)
    texts = [f"passage {i} " + "x" * i for i in range(10)]
    assert r.score("q", texts) == [len(t) / 100 for t in texts]
    assert sorted(r.pairs) == sorted(texts)  # no pair twice, even with a tiny cache


def test_cached_pairs_are_not_rescored() -> None:
    r = Counting(4096)
    r.score("q", ["a", "b"])
    assert r.score("q", ["b", "c", "a"]) == [0.01, 0.01, 0.01]
    assert r.pairs == ["a", "b", "c"]
    r.score("other query", ["a"])
    assert r.pairs == ["a", "b", "c", "a"]

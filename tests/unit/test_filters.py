"""The where-filter validator and its Python reference semantics."""

import pytest

from remy_retriever.errors import InvalidFilterError
from remy_retriever.filters import And, Compare, Or, matches, parse_where, to_chroma


def test_empty_and_none_mean_no_filter() -> None:
    assert parse_where(None) is None
    assert parse_where({}) is None


def test_implicit_and_and_multiple_operators() -> None:
    tree = parse_where({"tenant": "a", "year": {"$gte": 2000, "$lt": 2010}})
    assert tree == And(
        (
            Compare("tenant", "$eq", "a"),
            Compare("year", "$gte", 2000),
            Compare("year", "$lt", 2010),
        )
    )
    assert to_chroma(tree) == {
        "$and": [{"tenant": {"$eq": "a"}}, {"year": {"$gte": 2000}}, {"year": {"$lt": 2010}}]
    }


def test_single_item_logical_collapses() -> None:
    assert parse_where({"$or": [{"a": 1}]}) == Compare("a", "$eq", 1)
    assert isinstance(parse_where({"$or": [{"a": 1}, {"b": 2}]}), Or)


@pytest.mark.parametrize(
    ("where", "match"),
    [
        ("tenant=a", "where must be a dict"),
        ({"tenant": {"$like": "a"}}, "unknown operator '\\$like'"),
        ({"$not": [{"a": 1}]}, "unknown logical operator '\\$not'"),
        ({"a": {"$gt": "x"}}, "takes a number"),
        ({"a": {"$gt": True}}, "takes a number"),
        ({"a": {"$in": []}}, "non-empty list"),
        ({"a": {"$in": [1, "x"]}}, "mixes value types"),
        ({"a": None}, "must be a str, int, float or bool"),
        ({"a": [1, 2]}, "must be a str, int, float or bool"),
        ({"a": float("nan")}, "not a finite number"),
        ({"$and": []}, "non-empty list"),
        ({"$and": ["a"]}, "must be a dict"),
        ({1: "a"}, "keys must be str"),
        ({"remy_doc_hash": "x"}, "reserved"),
        ({"a": {}}, "empty operator dict"),
    ],
)
def test_malformed_filters_are_rejected(where: object, match: str) -> None:
    with pytest.raises(InvalidFilterError, match=match):
        parse_where(where)


def test_deep_nesting_is_rejected() -> None:
    where: dict[str, object] = {"a": 1}
    for _ in range(40):
        where = {"$and": [where, {"b": 2}]}
    with pytest.raises(InvalidFilterError, match="nested deeper"):
        parse_where(where)


def test_matches_follows_chroma_semantics() -> None:
    rows = {
        "1": {"t": "x", "n": 1},
        "2": {"t": "y", "n": 2},
        "3": {"n": 3},
        "4": {"t": "x", "flag": True},
    }

    def ids(where: dict[str, object]) -> list[str]:
        tree = parse_where(where)
        return sorted(k for k, meta in rows.items() if matches(tree, meta))

    # Measured against chromadb 1.5: $ne / $nin also match chunks lacking the key.
    assert ids({"t": {"$ne": "x"}}) == ["2", "3"]
    assert ids({"t": {"$nin": ["x"]}}) == ["2", "3"]
    assert ids({"n": {"$gt": 1}}) == ["2", "3"]
    assert ids({"n": {"$ne": 1}}) == ["2", "3", "4"]
    assert ids({"$or": [{"t": "y"}, {"n": 3}]}) == ["2", "3"]
    assert ids({"n": {"$gt": 1.5}}) == ["2", "3"]
    assert ids({"flag": True}) == ["4"]
    assert ids({"flag": 1}) == []  # bools are not numbers

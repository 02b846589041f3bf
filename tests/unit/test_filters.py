"""The where-filter validator and its Python reference semantics."""

import pytest

from remy_retriever.errors import InvalidFilterError
from remy_retriever.schema.filters import (
    MAX_CONDITIONS,
    MAX_DEPTH,
    MAX_LIST_VALUES,
    And,
    Compare,
    Or,
    matches,
    parse_where,
    to_chroma,
)


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


def test_list_values_match_contains_only_as_chroma_does() -> None:
    rows = {"1": {"t": ["x", "y"]}, "2": {"t": "x"}, "3": {}, "4": {"t": ["z"]}}

    def ids(where: dict[str, object]) -> list[str]:
        tree = parse_where(where)
        return sorted(k for k, meta in rows.items() if matches(tree, meta))

    # Measured against chromadb 1.5.9: $contains tests list items only, $not_contains
    # is its complement (the missing key and scalars included), and the scalar
    # operators never match a list.
    assert ids({"t": {"$contains": "x"}}) == ["1"]
    assert ids({"t": {"$not_contains": "x"}}) == ["2", "3", "4"]
    assert ids({"t": {"$eq": "x"}}) == ["2"]
    assert ids({"t": {"$in": ["x", "z"]}}) == ["2"]
    assert ids({"t": {"$ne": "x"}}) == ["1", "3", "4"]


# -- issue #12: limits, typed lists, reserved keys, 64-bit ints ---------------------------


def _nested_and(levels: int) -> dict[str, object]:
    where: dict[str, object] = {"a": 1}
    for _ in range(levels):
        where = {"$and": [where]}
    return where


def _nested_list(levels: int) -> list[object]:
    value: list[object] = [1]
    for _ in range(levels):
        value = [value]
    return value


def _nested_dict(levels: int) -> dict[str, object]:
    value: dict[str, object] = {"a": 1}
    for _ in range(levels):
        value = {"a": value}
    return value


@pytest.mark.parametrize(
    "where",
    [
        _nested_and(100_000),
        {"$or": [{"$and": [_nested_and(100_000)]}]},
        {"a": {"$in": _nested_list(100_000)}},
        {"a": {"$eq": _nested_list(100_000)}},
        {"a": _nested_list(100_000)},
        {"$and": [_nested_list(100_000)]},
        {"a": _nested_dict(100_000)},
    ],
    ids=["and", "or-and", "in-list", "eq-list", "value-list", "and-list", "field-dict"],
)
def test_100k_levels_of_nesting_raise_invalid_filter_error(where: object) -> None:
    """On main, the list shapes raised RecursionError (from repr in the message)."""
    with pytest.raises(InvalidFilterError, match="nested deeper than 32 levels"):
        parse_where(where)


def test_nesting_up_to_the_limit_is_accepted() -> None:
    assert parse_where(_nested_and(MAX_DEPTH)) == Compare("a", "$eq", 1)
    with pytest.raises(InvalidFilterError, match="nested deeper"):
        parse_where(_nested_and(MAX_DEPTH + 1))


def test_a_value_whose_repr_fails_still_gives_invalid_filter_error() -> None:
    class Hostile:
        def __repr__(self) -> str:
            msg = "no repr"
            raise RuntimeError(msg)

    with pytest.raises(InvalidFilterError, match="got Hostile <Hostile instance"):
        parse_where({"a": Hostile()})
    with pytest.raises(InvalidFilterError, match="keys must be str"):
        parse_where({Hostile(): 1})


@pytest.mark.parametrize(
    "values",
    [[1, 2.5], [2.5, 1], [True, 1], [1, True], [0.0, False], ["1", 1], [1, 2, 3.0]],
)
def test_lists_mixing_types_are_rejected_exactly_as_chroma_does(values: list[object]) -> None:
    """Chroma 1.5 refuses a list whose values are not all of one type, ints and floats
    included ("all values to be of the same type got [1, 2.5]"); on main remy let
    [1, 2.5] through (fine in lexical, StoreError in semantic and hybrid)."""
    for op in ("$in", "$nin"):
        with pytest.raises(InvalidFilterError, match="mixes value types"):
            parse_where({"a": {op: values}})


@pytest.mark.parametrize("values", [[1, 2], [1.0, 2.5], ["a", "b"], [True, False]])
def test_lists_of_one_type_are_accepted(values: list[object]) -> None:
    assert parse_where({"a": {"$in": values}}) == Compare("a", "$in", tuple(values))


@pytest.mark.parametrize("key", ["#x", "#document", "#embedding", "chroma:document"])
def test_keys_chroma_reserves_are_rejected(key: str) -> None:
    """On main, '#' keys gave every document in lexical ($ne) and StoreError or nothing
    in Chroma."""
    for where in ({key: "a"}, {key: {"$ne": 1}}, {"$or": [{"a": 1}, {key: {"$nin": [1]}}]}):
        with pytest.raises(InvalidFilterError, match="reserved by Chroma"):
            parse_where(where)


def test_list_values_are_bounded_per_filter() -> None:
    assert parse_where({"a": {"$in": list(range(MAX_LIST_VALUES))}}) is not None
    with pytest.raises(InvalidFilterError, match="100,000 values"):
        parse_where({"a": {"$in": list(range(100_000))}})
    half = MAX_LIST_VALUES // 2
    ok = {"a": {"$in": list(range(half))}, "b": {"$nin": list(range(half))}}
    assert parse_where(ok) is not None
    over = {"a": {"$in": list(range(half))}, "b": {"$nin": list(range(half + 1))}}
    with pytest.raises(InvalidFilterError, match="4,096 values"):
        parse_where(over)


def test_conditions_are_bounded_below_chromas_expression_depth() -> None:
    """Chroma (SQLite) fails on an $and/$or of more than ~988 items ("Expression tree is
    too large"); on main remy allowed 1,024 conditions."""
    assert parse_where({f"k{i}": i for i in range(MAX_CONDITIONS)}) is not None
    for where in (
        {f"k{i}": i for i in range(MAX_CONDITIONS + 1)},
        {"$or": [{"k": i} for i in range(1000)]},
    ):
        with pytest.raises(InvalidFilterError, match="more than 512 conditions"):
            parse_where(where)


def test_int64_bounds_are_exact() -> None:
    """On main -2**63 (int64's minimum) was rejected as 'does not fit in 64 bits'."""
    assert parse_where({"a": -(2**63)}) == Compare("a", "$eq", -(2**63))
    assert parse_where({"a": {"$gte": -(2**63)}}) == Compare("a", "$gte", -(2**63))
    assert parse_where({"a": {"$in": [2**63 - 1, -(2**63)]}}) is not None
    for bad in (2**63, -(2**63) - 1, 10**400):
        with pytest.raises(InvalidFilterError, match="does not fit in 64 bits"):
            parse_where({"a": bad})


def test_lone_surrogates_are_rejected_by_parse_where_itself() -> None:
    """Every caller (search options, document_ids, memory search) gets the same answer."""
    for where in ({"a": "x\ud800"}, {"k\udc00": 1}, {"a": {"$in": ["ok", "x\ud800"]}}):
        with pytest.raises(InvalidFilterError, match="lone surrogate"):
            parse_where(where)


def test_and_where_keeps_every_clause_and_drops_empty_ones() -> None:
    from remy_retriever.schema.filters import and_where

    assert and_where() is None
    assert and_where(None, {}) is None
    assert and_where({"a": 1}, None) == {"a": 1}
    both = and_where({"a": 1}, {"b": {"$in": ["x", "y"]}})
    assert both == {"$and": [{"a": 1}, {"b": {"$in": ["x", "y"]}}]}
    assert matches(parse_where(both), {"a": 1, "b": "x"})
    assert not matches(parse_where(both), {"a": 1, "b": "z"})  # no clause widens another


def test_scope_where_keeps_only_the_given_tags() -> None:
    from remy_retriever.schema.filters import document_where, scope_where

    assert scope_where(None, key="tag") is None
    assert scope_where(["a", "a"], key="tag") == {"tag": "a"}
    two = parse_where(scope_where(["a", "b"], key="tag"))
    assert matches(two, {"tag": "b"}) and not matches(two, {"tag": "c"})
    assert not matches(two, {})
    nothing = parse_where(scope_where([], key="tag"))
    assert not any(matches(nothing, m) for m in ({}, {"tag": ""}, {"tag": "a"}))
    assert matches(parse_where(document_where("d")), {"remy_doc_id": "d"})

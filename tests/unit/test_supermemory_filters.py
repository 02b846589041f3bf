"""supermemory's ``filters`` tree -> remy's ``where``: checked against an independent
reading of supermemory's rules, on generated metadata and trees."""

from __future__ import annotations

import json
import math
import operator
from collections.abc import Mapping
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from remy_retriever.errors import InvalidFilterError
from remy_retriever.schema.filters import matches, parse_where
from remy_retriever.supermemory.filters import where_from_filters

KEYS = ["a", "b"]
STORED = st.one_of(
    st.sampled_from(["x", "X", "xy", "Ab", "aB", "5", "2024", "true", "Straße", ""]),
    st.sampled_from([-1, 0, 5, 2024]),
    st.sampled_from([2.5, 5.0, -0.5]),
    st.booleans(),
)
ROWS = st.lists(st.dictionaries(st.sampled_from(KEYS), STORED, max_size=2), max_size=6)
TEXTS = st.sampled_from(["x", "X", "y", "ab", "5", "5.0", "2024", "2.5", "true", "STRASSE", "-1"])
FLAGS = st.one_of(st.booleans(), st.sampled_from(["true", "false"]))


@st.composite
def conditions(draw: st.DrawFn) -> dict[str, Any]:
    kind = draw(st.sampled_from(["metadata", "numeric", "string_contains", None]))
    cond: dict[str, Any] = {"key": draw(st.sampled_from(KEYS))}
    if kind == "numeric":
        cond["value"] = draw(st.sampled_from(["5", "0", "2.5", "-1", "2024", 5, 2.5]))
        if draw(st.booleans()):
            cond["numericOperator"] = draw(st.sampled_from([">", "<", ">=", "<=", "="]))
    else:
        cond["value"] = draw(TEXTS)
    if kind is not None:
        cond["filterType"] = kind
    for flag in ("negate", "ignoreCase"):
        if draw(st.booleans()):
            cond[flag] = draw(FLAGS)
    return cond


TREES = st.recursive(
    conditions(),
    lambda inner: st.one_of(
        st.builds(lambda xs: {"AND": xs}, st.lists(inner, min_size=1, max_size=3)),
        st.builds(lambda xs: {"OR": xs}, st.lists(inner, min_size=1, max_size=3)),
    ),
    max_leaves=6,
)


def _truthy(flag: object) -> bool:
    return flag is True or flag == "true"


def reference(node: Mapping[str, Any], row: Mapping[str, Any]) -> bool:
    """supermemory's rules, read independently of the module under test."""
    if "AND" in node:
        return all(reference(n, row) for n in node["AND"])
    if "OR" in node:
        return any(reference(n, row) for n in node["OR"])
    hit = _condition(node, row)
    return not hit if _truthy(node.get("negate", False)) else hit


def _condition(node: Mapping[str, Any], row: Mapping[str, Any]) -> bool:
    if node["key"] not in row:
        return False
    stored = row[node["key"]]
    kind = node.get("filterType", "metadata")
    value = node["value"]
    fold = _truthy(node.get("ignoreCase", False))
    if kind == "numeric":
        if isinstance(stored, bool) or not isinstance(stored, (int, float)):
            return False
        ops = {">": operator.gt, "<": operator.lt, ">=": operator.ge, "<=": operator.le}
        ops["="] = operator.eq
        return bool(ops[node.get("numericOperator", "=")](stored, float(value)))
    if kind == "string_contains":
        if not isinstance(stored, str):
            return False
        return value.casefold() in stored.casefold() if fold else value in stored
    if isinstance(stored, str):
        return stored.casefold() == value.casefold() if fold else stored == value
    if isinstance(stored, bool):
        return value == ("true" if stored else "false")
    try:
        return float(value) == stored
    except ValueError:
        return False


def _values_of(rows: list[dict[str, Any]]) -> Any:
    return lambda keys: {key: [row[key] for row in rows if key in row] for key in keys}


@settings(max_examples=300, deadline=None)
@given(rows=ROWS, tree=TREES, top=st.sampled_from(["AND", "OR"]))
def test_translation_matches_supermemory_rules(
    rows: list[dict[str, Any]], tree: dict[str, Any], top: str
) -> None:
    wrapped = {top: [tree]}
    where = where_from_filters(wrapped, values=_values_of(rows))
    parsed = parse_where(where)
    for row in rows:
        assert matches(parsed, row) == reference(wrapped, row), (where, row)


def test_plain_metadata_needs_no_stored_values() -> None:
    where = where_from_filters({"AND": [{"key": "lang", "value": "en"}]})
    assert where == {"lang": {"$eq": "en"}}
    numeric = where_from_filters(
        {"OR": [{"key": "year", "value": "2020", "filterType": "numeric", "numericOperator": ">="}]}
    )
    assert numeric == {"year": {"$gte": 2020}}


def test_a_number_string_also_matches_stored_numbers_and_bools() -> None:
    where = where_from_filters({"AND": [{"key": "year", "value": "2024"}]})
    tree = parse_where(where)
    assert matches(tree, {"year": "2024"})
    assert matches(tree, {"year": 2024})
    assert not matches(tree, {"year": 2023})
    flag = parse_where(where_from_filters({"AND": [{"key": "ok", "value": "true"}]}))
    assert matches(flag, {"ok": True})
    assert not matches(flag, {"ok": False})


def test_json_string_and_empty_trees() -> None:
    tree = {"AND": [{"key": "k", "value": "v", "negate": "true"}]}
    assert where_from_filters(json.dumps(tree)) == {"k": {"$ne": "v"}}
    for empty in (None, {}, "", "  "):
        assert where_from_filters(empty) is None


def test_values_are_read_once_for_every_key() -> None:
    calls: list[list[str]] = []

    def values(keys: list[str]) -> dict[str, list[object]]:
        calls.append(list(keys))
        return {key: ["Alpha", "beta"] for key in keys}

    tree = {
        "OR": [
            {"key": "t", "value": "AL", "filterType": "string_contains", "ignoreCase": True},
            {"key": "t", "value": "BETA", "ignoreCase": True},
        ]
    }
    where = where_from_filters(tree, values=values)
    assert calls == [["t"]]
    parsed = parse_where(where)
    assert matches(parsed, {"t": "Alpha"}) and matches(parsed, {"t": "beta"})
    assert not matches(parsed, {"t": "gamma"})


def test_negated_order_comparison_also_matches_missing_keys() -> None:
    rows = [{"n": 1}, {"n": 9}, {}, {"n": "text"}]
    tree = {"AND": [{"key": "n", "value": "5", "filterType": "numeric", "numericOperator": ">"}]}
    tree["AND"][0]["negate"] = True
    parsed = parse_where(where_from_filters(tree, values=_values_of(rows)))
    assert [matches(parsed, r) for r in rows] == [True, False, True, True]


@pytest.mark.parametrize(
    ("tree", "match"),
    [
        ([{"key": "a", "value": "b"}], "must be an object"),
        ({"NOT": [{"key": "a", "value": "b"}]}, "exactly one key, 'AND' or 'OR'"),
        ({"AND": []}, "non-empty list"),
        ({"AND": {"key": "a"}}, "non-empty list"),
        ({"AND": ["a"]}, r"filters.AND\[0\] must be an object"),
        ({"AND": [{"key": "a"}]}, "has no 'value'"),
        ({"AND": [{"value": "a"}]}, "key must be a non-empty string"),
        ({"AND": [{"key": "a", "value": None}]}, "value must be a string"),
        ({"AND": [{"key": "a", "value": "b", "op": "="}]}, r"unknown field\(s\) \['op'\]"),
        ({"AND": [{"key": "a", "value": "b", "filterType": "regex"}]}, "filterType 'regex'"),
        ({"AND": [{"key": "a", "value": "b", "negate": "yes"}]}, "negate must be true or false"),
        ({"AND": [{"key": "a", "value": "b", "numericOperator": ">"}]}, "numeric' only"),
        (
            {"AND": [{"key": "a", "value": "x", "filterType": "numeric"}]},
            "takes a finite number, got 'x'",
        ),
        (
            {"AND": [{"key": "a", "value": "1", "filterType": "numeric", "numericOperator": "!"}]},
            "numericOperator '!' is not one of",
        ),
        (
            {
                "AND": [
                    {
                        "key": "tags",
                        "value": "red",
                        "filterType": "array_contains",
                        "ignoreCase": True,
                    }
                ]
            },
            "remove ignoreCase",
        ),
        (
            {"AND": [{"key": "t", "value": "x", "filterType": "string_contains"}]},
            "no values\\(keys\\) was given",
        ),
        ({"AND": [{"key": "remy_doc_hash", "value": "x"}]}, "reserved"),
        ("{not json", "not JSON"),
        ({"AND": [{"AND": [{"key": "a", "value": "b"}], "key": "c"}]}, "mixes AND"),
    ],
)
def test_bad_trees_are_refused_by_name(tree: object, match: str) -> None:
    with pytest.raises(InvalidFilterError, match=match):
        where_from_filters(tree)


def test_deep_trees_are_refused() -> None:
    tree: dict[str, Any] = {"key": "a", "value": "b"}
    for _ in range(40):
        tree = {"AND": [tree]}
    with pytest.raises(InvalidFilterError, match="nested deeper"):
        where_from_filters(tree)


def test_too_many_matching_values_is_refused() -> None:
    stored = [f"v{i}" for i in range(5000)]
    tree = {"AND": [{"key": "k", "value": "v", "filterType": "string_contains"}]}
    with pytest.raises(InvalidFilterError, match="matches 5,000 distinct stored values"):
        where_from_filters(tree, values=lambda keys: {k: stored for k in keys})


def test_non_finite_numbers_are_refused() -> None:
    with pytest.raises(InvalidFilterError, match="finite"):
        where_from_filters({"AND": [{"key": "a", "value": math.inf}]})


def test_array_contains_is_an_exact_list_item_test_and_negate_is_its_complement() -> None:
    def where(**extra: object) -> object:
        cond = {"key": "tags", "value": "red", "filterType": "array_contains", **extra}
        return where_from_filters({"AND": [cond]})

    assert where() == {"tags": {"$contains": "red"}}
    assert where(negate=True) == {"tags": {"$not_contains": "red"}}
    number = where_from_filters({"AND": [{"key": "t", "value": 7, "filterType": "array_contains"}]})
    assert number == {"t": {"$contains": "7"}}  # list items are strings

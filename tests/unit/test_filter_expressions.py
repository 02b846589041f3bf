"""supermemory's v5 FilterExpression reaches ``where`` through the /v3 filter tree: the
same translation, values and errors for both wire formats."""

from __future__ import annotations

import pytest

from remy_retriever.errors import InvalidFilterError
from remy_retriever.schema.filters import matches, parse_where
from remy_retriever.supermemory.expressions import filters_from_expression, where_from_expression
from remy_retriever.supermemory.filters import where_from_filters


def test_an_expression_becomes_the_equivalent_v3_tree() -> None:
    expression = {
        "operator": "or",
        "operands": [
            {"field": "lang", "operator": "eq", "value": "en"},
            {"field": "year", "operator": "gte", "value": 2020},
            {"field": "draft", "operator": "neq", "value": True},
        ],
    }
    assert filters_from_expression(expression) == {
        "OR": [
            {
                "key": "lang",
                "value": "en",
                "filterType": "metadata",
                "ignoreCase": False,
                "negate": False,
            },
            {"key": "year", "value": 2020, "filterType": "numeric", "numericOperator": ">="},
            {"key": "draft", "value": True, "filterType": "metadata", "negate": True},
        ]
    }
    tree = {
        "OR": [
            {"key": "lang", "value": "en"},
            {"key": "year", "value": "2020", "filterType": "numeric", "numericOperator": ">="},
            {"key": "draft", "value": "true", "negate": True},
        ]
    }
    assert where_from_expression(expression) == where_from_filters(tree)


def test_array_contains_tests_one_list_item_and_its_negation_matches_the_rest() -> None:
    contains = {"field": "tags", "operator": "arrayContains", "value": "red"}
    lacks = {"field": "tags", "operator": "arrayNotContains", "value": "red"}
    assert where_from_expression(contains) == {"tags": {"$contains": "red"}}
    assert where_from_expression(lacks) == {"tags": {"$not_contains": "red"}}
    node = parse_where(where_from_expression({"operator": "or", "operands": [contains, lacks]}))
    for meta in ({"tags": ["red", "blue"]}, {"tags": ["blue"]}, {"tags": "red"}, {}):
        assert matches(node, meta)  # every chunk is in exactly one of the two
    node = parse_where(where_from_expression(contains))
    assert [matches(node, m) for m in ({"tags": ["red"]}, {"tags": "red"}, {})] == [
        True,
        False,
        False,
    ]


def test_contains_and_case_insensitive_equality_resolve_against_stored_values() -> None:
    stored = {"title": ["Intro to Tea", "Coffee", 3]}
    where = where_from_expression(
        {"field": "title", "operator": "contains", "value": "tea", "caseSensitive": False},
        values=lambda keys: {k: stored[k] for k in keys},
    )
    assert where == {"title": {"$in": ["Intro to Tea", "tea"]}}


@pytest.mark.parametrize(
    ("expression", "named"),
    [
        (
            {"field": "tags", "operator": "arrayContains", "value": 3},
            "arrayContains takes a string",
        ),
        (
            {"field": "tags", "operator": "arrayNotContains", "value": "x", "caseSensitive": True},
            "remove caseSensitive",
        ),
        ({"field": "n", "operator": "gt", "value": "five"}, "compares with a number"),
        ({"field": "n", "operator": "like", "value": "x"}, "is not one of"),
        ({"operator": "and", "operands": []}, "non-empty list"),
        ({"field": "n", "operator": "eq", "value": 1, "extra": 1}, "unknown field"),
    ],
)
def test_a_bad_expression_is_refused_naming_what_is_wrong(expression: object, named: str) -> None:
    with pytest.raises(InvalidFilterError, match=named):
        where_from_expression(expression)

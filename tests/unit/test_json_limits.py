"""The JSON limits of the network doors (remy_retriever.util.json_limits)."""

from __future__ import annotations

import json

import pytest

from remy_retriever.errors import InvalidInputError
from remy_retriever.util.json_limits import (
    MAX_INT_DIGITS,
    MAX_JSON_DEPTH,
    check_json_text,
    check_json_value,
    loads_limited,
)


def _nested(depth: int) -> str:
    return "[" * depth + "]" * depth


def test_nesting_up_to_the_limit_parses_and_deeper_is_refused_at_any_depth() -> None:
    assert loads_limited(_nested(MAX_JSON_DEPTH), what="body") is not None
    for depth in (MAX_JSON_DEPTH + 1, 5_000, 200_000):
        with pytest.raises(InvalidInputError, match=f"body.* nests deeper than {MAX_JSON_DEPTH}"):
            loads_limited(_nested(depth), what="body")


def test_a_long_integer_is_refused_naming_its_path_without_converting_it() -> None:
    ok = "9" * MAX_INT_DIGITS
    assert loads_limited(f'{{"a": [{ok}]}}', what="body") == {"a": [int(ok)]}
    for digits in (MAX_INT_DIGITS + 1, 5_000, 100_000):  # 100,000: past Python's own limit
        text = '{"filters": {"AND": [{"value": ' + "9" * digits + "}]}}"
        with pytest.raises(
            InvalidInputError, match=rf"body\.filters\.AND\[0\]\.value .*{digits:,} digits"
        ):
            loads_limited(text, what="body")


def test_non_finite_numbers_and_lone_surrogates_are_refused() -> None:
    for text, why in (
        ('{"x": NaN}', "NaN is not JSON"),
        ('{"x": -Infinity}', "Infinity is not JSON"),
        ('{"x": 1e999}', "too large for a float"),
        ('{"x": "a\\ud800"}', r"body\.x is not text"),
        ('{"\\udfff": 1}', "a key that is not text"),
    ):
        with pytest.raises(InvalidInputError, match=why):
            loads_limited(text, what="body")
    assert loads_limited('"\\ud83d\\ude00"', what="body") == "\U0001f600"  # a whole pair


def test_check_json_value_checks_parsed_arguments_without_recursing() -> None:
    deep: list[object] = []
    for _ in range(100_000):
        deep = [deep]
    with pytest.raises(InvalidInputError, match="arguments.where"):
        check_json_value({"where": deep}, what="arguments")
    with pytest.raises(InvalidInputError, match=r"arguments\.k is an integer of more than"):
        check_json_value({"k": 10**5000}, what="arguments")
    with pytest.raises(InvalidInputError, match=r"arguments\.k is an integer"):
        check_json_value({"k": -(10**MAX_INT_DIGITS)}, what="arguments")
    check_json_value({"k": 10**MAX_INT_DIGITS - 1, "b": True, "f": 1.5, "s": "x"}, what="a")
    with pytest.raises(InvalidInputError, match="not a finite number"):
        check_json_value({"f": float("nan")}, what="arguments")


def test_check_json_text_leaves_syntax_errors_to_the_caller() -> None:
    check_json_text('{"q": "x"', what="body")  # not JSON: the framework's own error
    check_json_text(b"\xff", what="body")
    with pytest.raises(InvalidInputError):
        check_json_text(json.dumps({"q": "x"}).replace('"x"', "9" * 500), what="body")

"""supermemory's v5 ``FilterExpression`` as the ``filters`` tree of ``/v3`` and ``/v4``.

The v5 API (SDK 5.x) filters with typed expressions::

    {"operator": "and", "operands": [
        {"field": "lang", "operator": "eq", "value": "en"},
        {"field": "year", "operator": "gte", "value": 2020}]}

:func:`filters_from_expression` rewrites one into the older tree
(:mod:`remy_retriever.supermemory.filters`), so both wire formats reach ``where`` through
one translation, with the same value rules, limits and errors:

- ``and`` / ``or`` with ``operands`` -> ``AND`` / ``OR``;
- a string ``eq`` / ``neq`` -> ``filterType`` ``metadata`` (``neq``: ``negate``);
  ``caseSensitive: false`` -> ``ignoreCase``;
- ``contains`` / ``notContains`` -> ``string_contains`` (``notContains``: ``negate``);
- ``gt`` / ``gte`` / ``lt`` / ``lte`` with a number -> ``numeric`` with ``>``, ``>=``,
  ``<``, ``<=``;
- ``eq`` / ``neq`` with a number -> ``numeric`` ``=`` (negated for ``neq``); with a bool,
  ``metadata`` equality with the bool;
- ``arrayContains`` / ``arrayNotContains`` with a string -> ``array_contains``
  (``arrayNotContains``: ``negate``, so it also matches chunks without the key).

A wrong shape raises :class:`~remy_retriever.errors.InvalidFilterError` naming the part.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

from ..errors import InvalidFilterError
from ..schema.filters import MAX_DEPTH
from ..util.reprs import short_repr
from .filters import ValuesOf, where_from_filters

__all__ = ["filters_from_expression", "where_from_expression"]

_NUMERIC = {"gt": ">", "gte": ">=", "lt": "<", "lte": "<="}
_EXAMPLE = "e.g. {'field': 'lang', 'operator': 'eq', 'value': 'en'}"


def where_from_expression(
    expression: object, *, values: ValuesOf | None = None
) -> dict[str, Any] | None:
    """The ``where`` of a v5 ``FilterExpression`` (``None``: no filter)."""
    return where_from_filters(filters_from_expression(expression), values=values)


def filters_from_expression(expression: object) -> dict[str, Any] | None:
    """The ``/v3`` filter tree equivalent to a v5 ``FilterExpression``."""
    if expression is None:
        return None
    if isinstance(expression, Mapping) and not expression:
        return None
    node = _node(expression, "filter", 0)
    if "AND" in node or "OR" in node:
        return node
    return {"AND": [node]}


def _node(node: object, path: str, depth: int) -> dict[str, Any]:
    if depth > MAX_DEPTH:
        msg = f"{path}: the filter is nested deeper than {MAX_DEPTH} levels; flatten it"
        raise InvalidFilterError(msg)
    if not isinstance(node, Mapping):
        msg = f"{path} must be an object (a predicate, or and/or), got {short_repr(node)}"
        raise InvalidFilterError(msg)
    operator = node.get("operator")
    if operator in ("and", "or"):
        _only(node, {"operator", "operands"}, path)
        operands = node.get("operands")
        if not isinstance(operands, Sequence) or isinstance(operands, str) or not operands:
            msg = (
                f"{path}.operands takes a non-empty list of expressions, got {short_repr(operands)}"
            )
            raise InvalidFilterError(msg)
        subs = [_node(item, f"{path}.operands[{i}]", depth + 1) for i, item in enumerate(operands)]
        return {"AND" if operator == "and" else "OR": subs}
    return _predicate(node, path)


def _predicate(node: Mapping[Any, Any], path: str) -> dict[str, Any]:
    _only(node, {"field", "operator", "value", "caseSensitive"}, path)
    field = node.get("field")
    if not isinstance(field, str) or not field:
        msg = f"{path}.field must be a non-empty string (a metadata key), {_EXAMPLE}"
        raise InvalidFilterError(msg)
    if "value" not in node:
        msg = f"{path} (field {field!r}) has no 'value'; {_EXAMPLE}"
        raise InvalidFilterError(msg)
    operator, value = node.get("operator"), node["value"]
    if isinstance(value, float) and not math.isfinite(value):
        msg = f"{path}.value {value!r} is not a finite number"
        raise InvalidFilterError(msg)
    case = node.get("caseSensitive", True)
    if not isinstance(case, bool):
        msg = f"{path}.caseSensitive must be true or false, got {short_repr(case)}"
        raise InvalidFilterError(msg)
    where = f"{path} (field {field!r})"
    if "caseSensitive" in node and not isinstance(value, str):
        msg = f"{where}: caseSensitive applies to string values only"
        raise InvalidFilterError(msg)
    condition: dict[str, Any] = {"key": field}
    if operator in ("eq", "neq"):
        negate = operator == "neq"
        if isinstance(value, str):
            condition.update(value=value, filterType="metadata", ignoreCase=not case)
        elif isinstance(value, bool):
            condition.update(value=value, filterType="metadata")
        elif isinstance(value, (int, float)):
            condition.update(value=value, filterType="numeric", numericOperator="=")
        else:
            msg = f"{where}: eq/neq takes a string, a number or a bool, got {short_repr(value)}"
            raise InvalidFilterError(msg)
        condition["negate"] = negate
        return condition
    if operator in ("contains", "notContains"):
        _typed(value, str, "a string", where, operator)
        condition.update(
            value=value,
            filterType="string_contains",
            ignoreCase=not case,
            negate=operator == "notContains",
        )
        return condition
    if operator in _NUMERIC:
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            msg = f"{where}: {operator} compares with a number, got {short_repr(value)}"
            raise InvalidFilterError(msg)
        condition.update(value=value, filterType="numeric", numericOperator=_NUMERIC[operator])
        return condition
    if operator in ("arrayContains", "arrayNotContains"):
        if "caseSensitive" in node:
            msg = f"{where}: {operator} matches one list item exactly; remove caseSensitive"
            raise InvalidFilterError(msg)
        _typed(value, str, "a string (the list item)", where, operator)
        condition.update(
            value=value, filterType="array_contains", negate=operator == "arrayNotContains"
        )
        return condition
    known = [
        *("eq", "neq", "contains", "notContains", *_NUMERIC),
        *("arrayContains", "arrayNotContains", "and", "or"),
    ]
    msg = f"{path}.operator {short_repr(operator)} is not one of {known}"
    raise InvalidFilterError(msg)


def _typed(value: object, kind: type, name: str, where: str, operator: str) -> None:
    if not isinstance(value, kind):
        msg = f"{where}: {operator} takes {name}, got {short_repr(value)}"
        raise InvalidFilterError(msg)


def _only(node: Mapping[Any, Any], allowed: set[str], path: str) -> None:
    unknown = sorted(map(str, set(node) - allowed))
    if unknown:
        msg = f"{path} has unknown field(s) {unknown}; it takes {sorted(allowed)}"
        raise InvalidFilterError(msg)

"""Translate supermemory's ``filters`` tree into remy's ``where`` filter.

Supermemory (``/v3/search``, ``/v4/search``, the MCP tools) filters with a tree::

    {"AND": [{"key": "lang", "value": "en"},
             {"OR": [{"key": "year", "value": "2020", "filterType": "numeric",
                      "numericOperator": ">="},
                     {"key": "title", "value": "intro", "filterType": "string_contains",
                      "ignoreCase": True}]}]}

:func:`where_from_filters` turns it into a ``where`` dict (:mod:`remy_retriever.schema.filters`),
so the filter runs inside both branches before fusion like any other ``where``. The
rules, per condition (``negate`` is always the logical NOT of the condition, so a negated
condition also matches chunks without the key, as ``$ne``/``$nin`` do):

- ``metadata`` (the default ``filterType``): the key equals ``value``. The wire value is
  always a string, while stored metadata may be a number or a bool, so ``"2024"`` also
  matches the stored int ``2024`` (and the float ``2024.0``), and ``"true"``/``"false"``
  the bools.
- ``numeric``: ``numericOperator`` (``>``, ``<``, ``>=``, ``<=``, ``=``; default ``=``)
  against ``value`` read as a number. Like every numeric comparison, it never matches a
  chunk whose value is not a number.
- ``string_contains``: the stored str value contains ``value``.
- ``ignoreCase``: the text comparisons (``metadata`` and ``string_contains``) ignore case
  (Unicode case folding); it has no effect on ``numeric``.
- ``array_contains``: the stored value is a list holding ``value`` as one of its items,
  exactly (``$contains``; negated: ``$not_contains``). List values hold strings, so a
  number is compared as its text; ``ignoreCase`` is refused (an item matches exactly).

``where`` has no substring or case-insensitive operator, so ``string_contains``,
``ignoreCase`` and a negated order comparison are resolved against the values actually
stored under the key: the caller passes ``values(keys)`` (the values stored under each
of those keys inside the caller's scope, read in one pass,
e.g. :meth:`remy_retriever.Retriever.scan_metadata_values`), and the condition becomes an
exact ``$in``/``$nin`` over the values that match. Without ``values`` those conditions
raise :class:`InvalidFilterError`. A value added after the translation is not in the
list: the filter is exact for the store as it was when the search began.

The tree's shape is checked in full before ``values`` is called: every condition, at most
:data:`~remy_retriever.schema.filters.MAX_CONDITIONS` of them, and at most
:data:`~remy_retriever.schema.filters.MAX_SCANNED_KEYS` keys to resolve. So a filter
refused for its shape is refused before any stored value is read, whatever the store
holds.

The tree may also arrive as a JSON string (supermemory accepts both). Bad trees raise
:class:`InvalidFilterError` naming the part that is wrong.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any

from ..errors import InvalidFilterError, InvalidInputError
from ..schema.filters import (
    MAX_CONDITIONS,
    MAX_DEPTH,
    MAX_LIST_VALUES,
    check_scanned_keys,
    parse_where,
)
from ..util.json_limits import loads_limited
from ..util.reprs import short_repr

__all__ = ["FILTER_TYPES", "NUMERIC_OPERATORS", "ValuesOf", "where_from_filters"]

#: Given the metadata keys a filter resolves, the values stored under each (any order;
#: repeats are fine), all read in one pass over the caller's scope.
ValuesOf = Callable[[Sequence[str]], Mapping[str, Iterable[object]]]

FILTER_TYPES = ("metadata", "numeric", "array_contains", "string_contains")
#: supermemory's numeric operators and the ``where`` operator of each.
NUMERIC_OPERATORS = {">": "$gt", "<": "$lt", ">=": "$gte", "<=": "$lte", "=": "$eq"}
_CONDITION_FIELDS = frozenset(
    {"key", "value", "filterType", "negate", "ignoreCase", "numericOperator"}
)
_INTEGER = re.compile(r"[+-]?\d+")
_INT64 = 2**63


def where_from_filters(tree: object, *, values: ValuesOf | None = None) -> dict[str, Any] | None:
    """The ``where`` dict equivalent to supermemory's ``filters`` ``tree`` (``None`` for
    no filter: ``None``, ``{}`` or ``""``).

    ``values(keys)`` maps each key to the values stored under it; it is called once,
    after the whole tree passed its checks, with the keys of the conditions that need it
    (``string_contains``, ``ignoreCase``, a negated ``<``/``>`` comparison); without it
    those raise :class:`InvalidFilterError`.
    """
    if tree is None:
        return None
    if isinstance(tree, str):
        if not tree.strip():
            return None
        try:
            tree = loads_limited(tree, what="filters (a JSON string)")
        except InvalidInputError as exc:
            msg = f"{exc}; send the filter tree as an object"
            raise InvalidFilterError(msg) from None
    if not isinstance(tree, Mapping):
        msg = (
            f"filters must be an object like {{'AND': [{{'key': 'lang', 'value': 'en'}}]}}, "
            f"got {type(tree).__name__} {short_repr(tree)}"
        )
        raise InvalidFilterError(msg)
    if not tree:
        return None
    if set(tree) - {"AND", "OR"} or len(tree) != 1:
        msg = (
            f"filters must have exactly one key, 'AND' or 'OR', got {sorted(map(str, tree))}; "
            "e.g. {'AND': [{'key': 'lang', 'value': 'en'}]}"
        )
        raise InvalidFilterError(msg)
    # First the shape, with no value read: every check of the tree, and the keys to scan.
    plan = _Translator(None)
    planned = plan.node(tree, "filters", 0)
    parse_where(planned)  # the where limits and key rules
    if not plan.wanted:
        return planned
    check_scanned_keys(plan.wanted)
    if values is None:
        feature = next(iter(plan.wanted.values()))
        msg = (
            f"{feature}: it has no 'where' operator, so it is resolved against the values "
            "stored under the key, and no values(keys) was given; pass "
            "where_from_filters(tree, values=...)"
        )
        raise InvalidFilterError(msg)
    found = values(list(plan.wanted))
    where = _Translator({k: list(found.get(k, ())) for k in plan.wanted}).node(tree, "filters", 0)
    parse_where(where)  # the list limits, now with the values in scope
    return where


class _Translator:
    """One walk of the tree. Without ``values`` (the first walk) it reads nothing and
    records which keys need their stored values (:attr:`wanted`); with them (the
    second) it resolves those conditions."""

    def __init__(self, values: Mapping[str, list[object]] | None) -> None:
        self._values = values
        self._seen: dict[str, list[object]] = {}
        self.wanted: dict[str, str] = {}
        self._conditions = 0

    def node(self, node: object, path: str, depth: int) -> dict[str, Any]:
        if depth > MAX_DEPTH:
            msg = f"filters are nested deeper than {MAX_DEPTH} levels at {path}; flatten them"
            raise InvalidFilterError(msg)
        if not isinstance(node, Mapping):
            msg = f"{path} must be an object (a condition, or AND/OR), got {short_repr(node)}"
            raise InvalidFilterError(msg)
        logical = [k for k in ("AND", "OR") if k in node]
        if not logical:
            return self.condition(node, path)
        if len(node) != 1:
            msg = (
                f"{path} mixes {logical[0]} with other keys {sorted(map(str, node))}; an "
                "object is either {'AND': [...]}, {'OR': [...]} or one condition"
            )
            raise InvalidFilterError(msg)
        op = logical[0]
        items = node[op]
        if not isinstance(items, (list, tuple)) or not items:
            msg = f"{path}.{op} takes a non-empty list of conditions, got {short_repr(items)}"
            raise InvalidFilterError(msg)
        subs = [self.node(item, f"{path}.{op}[{i}]", depth + 1) for i, item in enumerate(items)]
        if len(subs) == 1:
            return subs[0]
        return {"$and" if op == "AND" else "$or": subs}

    def condition(self, cond: Mapping[Any, Any], path: str) -> dict[str, Any]:
        self._conditions += 1
        if self._conditions > MAX_CONDITIONS:
            msg = f"filters have more than {MAX_CONDITIONS} conditions; simplify the filter"
            raise InvalidFilterError(msg)
        unknown = sorted(map(str, set(cond) - _CONDITION_FIELDS))
        if unknown:
            msg = (
                f"{path} has unknown field(s) {unknown}; a condition takes "
                f"{sorted(_CONDITION_FIELDS)}, or use AND/OR to combine conditions"
            )
            raise InvalidFilterError(msg)
        key = cond.get("key")
        if not isinstance(key, str) or not key:
            msg = f"{path}.key must be a non-empty string (a metadata key), got {short_repr(key)}"
            raise InvalidFilterError(msg)
        if "value" not in cond:
            msg = f"{path} (key {key!r}) has no 'value'; add the value to compare with"
            raise InvalidFilterError(msg)
        value = cond["value"]
        if isinstance(value, float) and not math.isfinite(value):
            msg = f"{path}.value {value!r} is not a finite number"
            raise InvalidFilterError(msg)
        if not isinstance(value, (str, int, float)):  # bool is an int
            msg = f"{path}.value must be a string (or a number), got {short_repr(value)}"
            raise InvalidFilterError(msg)
        kind = cond.get("filterType", "metadata")
        if kind not in FILTER_TYPES:
            msg = f"{path}.filterType {short_repr(kind)} is not one of {list(FILTER_TYPES)}"
            raise InvalidFilterError(msg)
        negate = _flag(cond, "negate", path)
        ignore_case = _flag(cond, "ignoreCase", path)
        if "numericOperator" in cond and kind != "numeric":
            msg = (
                f"{path}.numericOperator applies to filterType 'numeric' only (this condition is "
                f"{kind!r}); remove it or set filterType to 'numeric'"
            )
            raise InvalidFilterError(msg)
        where = f"{path} (key {key!r})"
        if kind == "array_contains":
            if ignore_case:
                msg = (
                    f"{where}: array_contains matches one list item exactly, so ignoreCase "
                    "does not apply; remove ignoreCase (store the items in one case)"
                )
                raise InvalidFilterError(msg)
            return {key: {"$not_contains" if negate else "$contains": _text(value)}}
        if kind == "numeric":
            return self.numeric(key, value, cond.get("numericOperator", "="), negate, where)
        text = _text(value)
        if kind == "string_contains":
            needle = text.casefold() if ignore_case else text

            def contains(stored: object) -> bool:
                if not isinstance(stored, str):
                    return False
                return needle in (stored.casefold() if ignore_case else stored)

            return self.among(key, text, contains, negate, where, "string_contains")
        if ignore_case:
            folded = text.casefold()
            typed = _typed_forms(text)

            def equal(stored: object) -> bool:
                if isinstance(stored, str):
                    return stored.casefold() == folded
                return any(_same(stored, t) for t in typed)

            return self.among(key, text, equal, negate, where, "ignoreCase")
        return _any_of(key, [text, *_typed_forms(text)], negate)

    def numeric(
        self, key: str, value: object, operator: object, negate: bool, where: str
    ) -> dict[str, Any]:
        if operator not in NUMERIC_OPERATORS:
            msg = (
                f"{where}: numericOperator {short_repr(operator)} is not one of "
                f"{list(NUMERIC_OPERATORS)}"
            )
            raise InvalidFilterError(msg)
        number = _number(value, where)
        if operator == "=":
            return _any_of(key, _numeric_forms(number), negate)
        op = NUMERIC_OPERATORS[str(operator)]
        if not negate:
            return {key: {op: number}}

        def passes(stored: object) -> bool:
            if isinstance(stored, bool) or not isinstance(stored, (int, float)):
                return False
            return bool(_ORDER[op](stored, number))

        return self.among(key, None, passes, True, where, "negate")

    def among(
        self,
        key: str,
        itself: object,
        test: Callable[[object], bool],
        negate: bool,
        where: str,
        feature: str,
    ) -> dict[str, Any]:
        """``key`` $in (or $nin) the stored values that pass ``test``. ``itself`` (the
        filter's own value, when it passes its own test) keeps the list non-empty: if it
        were stored it would be listed anyway, so adding it changes nothing."""
        stored = self.stored(key, where, feature)
        chosen: list[object] = [v for v in stored if test(v)]
        if len(chosen) >= MAX_LIST_VALUES:  # one more place for the filter's own value
            msg = (
                f"{where}: {feature} matches {len(chosen):,} distinct stored values, over the "
                f"limit of {MAX_LIST_VALUES - 1:,}; make the condition more specific"
            )
            raise InvalidFilterError(msg)
        if itself is not None and not any(_same(itself, v) for v in chosen):
            chosen.append(itself)
        if not chosen:
            # Nothing stored passes and the filter has no value of its own: the condition
            # matches no chunk, so negated it matches every chunk (v = "" or v != "").
            both = [{key: {"$eq": ""}}, {key: {"$ne": ""}}]
            return {"$or": both} if negate else {"$and": both}
        return _any_of(key, chosen, negate)

    def stored(self, key: str, where: str, feature: str) -> list[object]:
        if self._values is None:
            self.wanted.setdefault(key, f"{where}: {feature}")
            return []
        if key not in self._seen:
            unique: dict[tuple[type, object], object] = {}
            for v in self._values.get(key, ()):
                if isinstance(v, (str, int, float)):
                    unique.setdefault((type(v), v), v)
            self._seen[key] = list(unique.values())
        return self._seen[key]


_ORDER: dict[str, Callable[[Any, Any], bool]] = {
    "$gt": lambda a, b: a > b,
    "$gte": lambda a, b: a >= b,
    "$lt": lambda a, b: a < b,
    "$lte": lambda a, b: a <= b,
}


def _flag(cond: Mapping[Any, Any], name: str, path: str) -> bool:
    raw: object = cond.get(name, False)
    if isinstance(raw, bool):
        return raw
    if raw in ("true", "false"):
        return raw == "true"
    msg = f"{path}.{name} must be true or false (or 'true'/'false'), got {short_repr(raw)}"
    raise InvalidFilterError(msg)


def _text(value: object) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    return value if isinstance(value, str) else repr(value)


def _number(value: object, where: str) -> int | float:
    if isinstance(value, bool):
        msg = f"{where}: a numeric filter takes a number, got {value!r}"
        raise InvalidFilterError(msg)
    if isinstance(value, (int, float)):
        return _fit(value, where)
    assert isinstance(value, str)
    text = value.strip()
    if _INTEGER.fullmatch(text):
        return _fit(int(text), where)
    try:
        number = float(text)
    except ValueError:
        number = math.nan
    if not math.isfinite(number):
        msg = f"{where}: a numeric filter takes a finite number, got {short_repr(value)}"
        raise InvalidFilterError(msg)
    return number


def _fit(number: int | float, where: str) -> int | float:
    if isinstance(number, int) and not -_INT64 <= number < _INT64:
        return float(number)  # beyond 64 bits: compare as a float
    return number


def _numeric_forms(number: int | float) -> list[object]:
    """A number as every stored type that can equal it: ``5`` is the int 5 or the
    float 5.0 (Chroma keeps ints and floats apart)."""
    if isinstance(number, float) and number.is_integer() and abs(number) < _INT64:
        return [int(number), number]
    if isinstance(number, int):
        return [number, float(number)]
    return [number]


def _typed_forms(text: str) -> list[object]:
    """The stored non-str values the wire string ``text`` stands for."""
    stripped = text.strip()
    if stripped != text or not stripped:
        return []
    if text in ("true", "false"):
        return [text == "true"]
    if _INTEGER.fullmatch(text):
        number = int(text)
        return _numeric_forms(number) if -_INT64 <= number < _INT64 else []
    try:
        number_f = float(text)
    except ValueError:
        return []
    return _numeric_forms(number_f) if math.isfinite(number_f) else []


def _same(a: object, b: object) -> bool:
    """Equal as stored values: same type family (a bool is not a number)."""
    if isinstance(a, bool) or isinstance(b, bool):
        return isinstance(a, bool) and isinstance(b, bool) and a == b
    return type(a) is type(b) and a == b


def _any_of(key: str, options: list[object], negate: bool) -> dict[str, Any]:
    """``key`` equal to one of ``options`` (or, negated, to none), one ``$in``/``$nin``
    per stored type (Chroma wants one type per list)."""
    groups: dict[type, list[object]] = {}
    for option in options:
        groups.setdefault(type(option), []).append(option)
    parts: list[dict[str, Any]] = []
    for group in groups.values():
        if len(group) == 1:
            parts.append({key: {"$ne" if negate else "$eq": group[0]}})
        else:
            parts.append({key: {"$nin" if negate else "$in": group}})
    if len(parts) == 1:
        return parts[0]
    return {"$and" if negate else "$or": parts}

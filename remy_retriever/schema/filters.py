"""Validate a Chroma-style ``where`` filter once, up front, into a small typed tree.

Both branches are driven from that one tree: :func:`to_chroma` renders it for Chroma,
the lexical store renders it for tantivy, and :func:`matches` evaluates it in Python
(used for neighbours and as the reference semantics in tests).

Semantics follow Chroma's: ``$ne``/``$nin`` also match chunks that lack the key;
``$gt``/``$gte``/``$lt``/``$lte`` take numbers and never match a missing key. A list
value (a list of strings) is tested item by item with ``$contains`` (one item equals the
string) and ``$not_contains`` (none does, or the key is missing or not a list); the
scalar operators never match a list, and ``$contains`` never matches a scalar. Beyond
Chroma we accept a dict with several keys (an implicit ``$and``), several operators on
one key (``{"year": {"$gte": 2000, "$lt": 2010}}``), and one-element ``$and``/``$or``.

Limits, so that every filter accepted here runs the same in every mode (Chroma's SQLite
refuses a statement with more than 32,766 variables, about 16,380 ``$in`` values, and an
``$and``/``$or`` of more than about 988 items, "Expression tree is too large"): at most
:data:`MAX_DEPTH` levels of nesting, :data:`MAX_CONDITIONS` conditions and
:data:`MAX_LIST_VALUES` values in all ``$in``/``$nin`` lists together. A list holds values
of one type, as Chroma requires (``[1, 2.5]`` is refused there: write ``[1.0, 2.5]``).
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any, Union

from ..errors import InvalidFilterError
from ..util.reprs import short_repr
from .records import DOCUMENT_ID_KEY, INT64_MAX, INT64_MIN, RESERVED_PREFIX, has_surrogate

__all__ = [
    "MAX_CONDITIONS",
    "MAX_DEPTH",
    "MAX_LIST_VALUES",
    "MAX_SCANNED_CHUNKS",
    "MAX_SCANNED_KEYS",
    "MAX_SCANNED_VALUES",
    "And",
    "Compare",
    "Filter",
    "Or",
    "and_where",
    "check_scanned_keys",
    "document_where",
    "matches",
    "parse_where",
    "require_utf8",
    "scope_where",
    "to_chroma",
]

# The limits of one filter, all here. A filter the ``where`` syntax lacks (substring,
# case-insensitive, a negated order comparison) is resolved against the values stored
# under its keys (:mod:`remy_retriever.search.values`), read inside the caller's scope in
# one pass. The shape limits are checked on the filter alone, before any value is read;
# the work limits count what is inside the scope only, so no answer depends on data the
# caller may not see.

#: Most distinct metadata keys one filter may resolve against stored values (shape).
MAX_SCANNED_KEYS = 16
#: Most distinct values (over all its keys) such a scan reads before it refuses the
#: filter (work, inside the scope).
MAX_SCANNED_VALUES = 10_000
#: Most chunks such a scan reads before it refuses the filter (work, inside the scope).
MAX_SCANNED_CHUNKS = 100_000


def check_scanned_keys(keys: Iterable[str]) -> list[str]:
    """The distinct ``keys`` a filter resolves against stored values, in order; more
    than :data:`MAX_SCANNED_KEYS` raise :class:`InvalidFilterError` (decided on the
    filter alone, before any value is read)."""
    names = list(dict.fromkeys(keys))
    if len(names) > MAX_SCANNED_KEYS:
        msg = (
            f"the filter resolves {len(names):,} metadata keys against their stored values "
            "(string_contains, ignoreCase or a negated numeric comparison), over the limit "
            f"of {MAX_SCANNED_KEYS} keys per request; filter on exact values for the others "
            "(filterType 'metadata' without ignoreCase, or 'numeric')"
        )
        raise InvalidFilterError(msg)
    return names


Scalar = Union[str, int, float, bool]

_EQUALITY = ("$eq", "$ne")
_MEMBERSHIP = ("$in", "$nin")
_ORDER = ("$gt", "$gte", "$lt", "$lte")
_ITEM = ("$contains", "$not_contains")
_OPERATORS = _EQUALITY + _MEMBERSHIP + _ORDER + _ITEM
#: Deepest nesting of ``$and``/``$or``.
MAX_DEPTH = 32
#: Most conditions (keys of all the filter's dicts) in one filter.
MAX_CONDITIONS = 512
#: Most values in all the ``$in``/``$nin`` lists of one filter together.
MAX_LIST_VALUES = 4096
#: Keys Chroma reserves for itself (``#document``, ``#embedding``...); no stored
#: metadata can hold them.
_CHROMA_RESERVED = ("#", "chroma:")


@dataclass(frozen=True)
class Compare:
    """``key <op> value``; for ``$in``/``$nin`` the value is a tuple."""

    key: str
    op: str
    value: Scalar | tuple[Scalar, ...]


@dataclass(frozen=True)
class And:
    items: tuple[Filter, ...]


@dataclass(frozen=True)
class Or:
    items: tuple[Filter, ...]


Filter = Union[Compare, And, Or]


def parse_where(where: object) -> Filter | None:
    """Validate ``where`` and return its tree (``None`` for no filter).

    Raises :class:`InvalidFilterError` naming the offending part.
    """
    if where is None:
        return None
    if not isinstance(where, Mapping):
        msg = (
            f"where must be a dict like {{'tenant': 'a'}}, got {type(where).__name__} "
            f"{_short(where)}"
        )
        raise InvalidFilterError(msg)
    if not where:
        return None
    _check_nesting(where)
    counter = [0, 0]
    return _parse(where, 0, counter)


def _check_nesting(where: Mapping[Any, Any]) -> None:
    """Refuse a ``where`` nested too deep, walking it without recursion (the parser, and
    ``repr`` in error messages, would recurse once per level)."""
    # Each $and/$or level is a dict holding a list: two levels of containers.
    limit = 2 * MAX_DEPTH + 4
    budget = 16 * (MAX_CONDITIONS + MAX_LIST_VALUES)
    stack: list[tuple[object, int]] = [(where, 0)]
    while stack and budget > 0:
        node, depth = stack.pop()
        if depth > limit:
            msg = f"where is nested deeper than {MAX_DEPTH} levels; flatten the filter"
            raise InvalidFilterError(msg)
        children = node.values() if isinstance(node, Mapping) else node
        assert isinstance(children, Iterable)
        for child in children:
            budget -= 1
            if budget <= 0:
                # Too large to be valid: the parser stops at its own limits (with a
                # precise message) long before its bounded recursion could go deep.
                break
            if isinstance(child, (Mapping, list, tuple)):
                stack.append((child, depth + 1))


def _parse(where: Mapping[Any, Any], depth: int, counter: list[int]) -> Filter:
    if depth > MAX_DEPTH:
        msg = f"where is nested deeper than {MAX_DEPTH} levels; flatten the filter"
        raise InvalidFilterError(msg)
    if not where:
        msg = "where contains an empty clause {}; remove it or add a condition"
        raise InvalidFilterError(msg)
    items: list[Filter] = []
    for key, value in where.items():
        counter[0] += 1
        if counter[0] > MAX_CONDITIONS:
            msg = f"where has more than {MAX_CONDITIONS} conditions; simplify the filter"
            raise InvalidFilterError(msg)
        if not isinstance(key, str):
            msg = f"where keys must be str, got {_short(key)}"
            raise InvalidFilterError(msg)
        if key in ("$and", "$or"):
            if not isinstance(value, (list, tuple)) or not value:
                msg = f"{key} takes a non-empty list of filters, got {_short(value)}"
                raise InvalidFilterError(msg)
            subs: list[Filter] = []
            for sub in value:
                if not isinstance(sub, Mapping):
                    msg = f"each item of {key} must be a dict, got {_short(sub)}"
                    raise InvalidFilterError(msg)
                subs.append(_parse(sub, depth + 1, counter))
            items.append(_combine(And if key == "$and" else Or, subs))
        elif key.startswith("$"):
            msg = (
                f"unknown logical operator {key!r} in where; use '$and' or '$or', or a metadata key"
            )
            raise InvalidFilterError(msg)
        else:
            _check_key(key)
            items.extend(_parse_field(key, value, counter))
    return _combine(And, items)


def _check_key(key: str) -> None:
    if not key:
        msg = "where has an empty metadata key ''"
        raise InvalidFilterError(msg)
    if "\x00" in key:
        msg = f"where key {_short(key)} contains a NUL byte, so no stored metadata can have it"
        raise InvalidFilterError(msg)
    if has_surrogate(key):
        msg = (
            f"where key {_short(key)} contains a lone surrogate, which no stored (UTF-8) "
            "metadata can hold; fix the key"
        )
        raise InvalidFilterError(msg)
    if key.startswith(_CHROMA_RESERVED):
        msg = (
            f"where key {_short(key)} is reserved by Chroma (keys starting with '#' or "
            "'chroma:'), so no document metadata can have it; filter on your own keys"
        )
        raise InvalidFilterError(msg)
    if key.startswith(RESERVED_PREFIX) and key != DOCUMENT_ID_KEY:
        msg = (
            f"where key {key!r} is reserved for remy-retriever internals; filter on your own "
            f"metadata keys, or on {DOCUMENT_ID_KEY!r} for the document id"
        )
        raise InvalidFilterError(msg)


def _parse_field(key: str, value: object, counter: list[int]) -> list[Filter]:
    if not isinstance(value, Mapping):
        return [Compare(key, "$eq", _scalar(key, "$eq", value))]
    if not value:
        msg = f"where[{_short(key)}] is an empty operator dict; use e.g. {{'$eq': ...}}"
        raise InvalidFilterError(msg)
    out: list[Filter] = []
    for op, operand in value.items():
        if op not in _OPERATORS:
            msg = f"unknown operator {op!r} for where[{_short(key)}]; supported: " + ", ".join(
                _OPERATORS
            )
            raise InvalidFilterError(msg)
        if op in _MEMBERSHIP:
            if not isinstance(operand, (list, tuple)) or not operand:
                msg = f"{op} for where[{_short(key)}] takes a non-empty list, got {_short(operand)}"
                raise InvalidFilterError(msg)
            counter[1] += len(operand)
            if counter[1] > MAX_LIST_VALUES:
                msg = (
                    f"{op} for where[{_short(key)}] has {len(operand):,} values, over the limit "
                    f"of {MAX_LIST_VALUES:,} values in all $in/$nin lists of one filter; "
                    "split the search, or filter on a coarser key (e.g. a group or tenant)"
                )
                raise InvalidFilterError(msg)
            values = tuple(_scalar(key, op, v) for v in operand)
            kinds = {type(v) for v in values}
            if len(kinds) > 1:
                names = "/".join(sorted(k.__name__ for k in kinds))
                msg = (
                    f"{op} for where[{_short(key)}] mixes value types ({names}) in "
                    f"{_short(operand)}; Chroma requires one type per list (write ints as "
                    "floats, e.g. [1.0, 2.5], to mix numbers)"
                )
                raise InvalidFilterError(msg)
            out.append(Compare(key, op, values))
        elif op in _ITEM:
            if not isinstance(operand, str):
                msg = (
                    f"{op} for where[{_short(key)}] takes a str (the list item to look for), "
                    f"got {_short(operand)}; list metadata holds strings only"
                )
                raise InvalidFilterError(msg)
            out.append(Compare(key, op, _scalar(key, op, operand)))
        elif op in _ORDER:
            if isinstance(operand, bool) or not isinstance(operand, (int, float)):
                msg = f"{op} for where[{_short(key)}] takes a number, got {_short(operand)}"
                raise InvalidFilterError(msg)
            out.append(Compare(key, op, _scalar(key, op, operand)))
        else:
            out.append(Compare(key, op, _scalar(key, op, operand)))
    return out


def _scalar(key: str, op: str, value: object) -> Scalar:
    if isinstance(value, bool):
        return value
    if isinstance(value, int):
        if not INT64_MIN <= value <= INT64_MAX:
            msg = (
                f"{op} for where[{_short(key)}]: {_short(value)} does not fit in 64 bits "
                "(-2**63 to 2**63 - 1), so no stored metadata can hold it; use a float or a str"
            )
            raise InvalidFilterError(msg)
        return value
    if isinstance(value, float):
        if not math.isfinite(value):
            msg = f"{op} for where[{_short(key)}]: {value!r} is not a finite number"
            raise InvalidFilterError(msg)
        return value
    if isinstance(value, str):
        if "\x00" in value:
            msg = f"{op} for where[{_short(key)}]: the value contains a NUL byte"
            raise InvalidFilterError(msg)
        if has_surrogate(value):
            msg = (
                f"{op} for where[{_short(key)}]: {_short(value)} contains a lone surrogate, "
                "which no stored (UTF-8) metadata can hold; fix the value"
            )
            raise InvalidFilterError(msg)
        return value
    msg = (
        f"where[{_short(key)}] {op} value must be a str, int, float or bool, got "
        f"{type(value).__name__} {_short(value)}"
    )
    raise InvalidFilterError(msg)


def require_utf8(node: Filter | None) -> Filter | None:
    """Return ``node`` if every key and str value is encodable as UTF-8, else raise
    :class:`InvalidFilterError`. :func:`parse_where` already refuses lone surrogates (no
    stored metadata can hold one); this re-checks a hand-built tree."""
    if node is None:
        return None
    if isinstance(node, (And, Or)):
        for item in node.items:
            require_utf8(item)
        return node
    values = node.value if isinstance(node.value, tuple) else (node.value,)
    for text in (node.key, *values):
        if isinstance(text, str) and has_surrogate(text):
            msg = (
                f"where[{node.key!r}] {node.op} {_short(node.value)} contains a lone surrogate, "
                "which no stored (UTF-8) metadata can hold; fix the key or value"
            )
            raise InvalidFilterError(msg)
    return node


def _combine(kind: type[And] | type[Or], items: list[Filter]) -> Filter:
    if len(items) == 1:
        return items[0]
    return kind(tuple(items))


def _short(value: object) -> str:
    return short_repr(value)


def and_where(*clauses: Mapping[str, Any] | None) -> dict[str, Any] | None:
    """The ``where`` that holds when every clause holds: ``None`` and empty clauses are
    left out, one clause is returned as it is, several become one ``$and``. How a door
    narrows a request's own ``where`` to the caller's scope (no clause can widen another)."""
    kept = [dict(c) for c in clauses if c]
    if not kept:
        return None
    return kept[0] if len(kept) == 1 else {"$and": kept}


def document_where(document_id: str) -> dict[str, Any]:
    """The clause keeping the chunks of one document."""
    return {DOCUMENT_ID_KEY: document_id}


def scope_where(tags: Iterable[str] | None, *, key: str) -> dict[str, Any] | None:
    """The clause keeping what is stored under one of ``tags`` in metadata ``key``
    (``None``: no restriction). No tags at all matches nothing."""
    if tags is None:
        return None
    names = list(dict.fromkeys(tags))
    if not names:
        return {"$and": [{key: {"$eq": ""}}, {key: {"$ne": ""}}]}
    return {key: names[0]} if len(names) == 1 else {key: {"$in": names}}


def to_chroma(node: Filter | None) -> dict[str, Any] | None:
    """Render the tree as a Chroma ``where`` dict."""
    if node is None:
        return None
    if isinstance(node, And):
        return {"$and": [to_chroma(i) for i in node.items]}
    if isinstance(node, Or):
        return {"$or": [to_chroma(i) for i in node.items]}
    value = list(node.value) if isinstance(node.value, tuple) else node.value
    return {node.key: {node.op: value}}


def matches(node: Filter | None, metadata: Mapping[str, Any]) -> bool:
    """Evaluate the tree against one chunk's metadata, with Chroma's semantics."""
    if node is None:
        return True
    if isinstance(node, And):
        return all(matches(i, metadata) for i in node.items)
    if isinstance(node, Or):
        return any(matches(i, metadata) for i in node.items)
    present = node.key in metadata
    actual = metadata.get(node.key)
    if node.op in _ITEM:
        has = isinstance(actual, (list, tuple)) and any(
            isinstance(item, str) and item == node.value for item in actual
        )
        return has if node.op == "$contains" else not has
    if node.op == "$eq":
        return present and _equal(actual, node.value)
    if node.op == "$ne":
        return not (present and _equal(actual, node.value))
    if node.op in _MEMBERSHIP:
        assert isinstance(node.value, tuple)
        hit = present and any(_equal(actual, v) for v in node.value)
        return hit if node.op == "$in" else not hit
    if not present or isinstance(actual, bool) or not isinstance(actual, (int, float)):
        return False
    bound = node.value
    assert isinstance(bound, (int, float))
    if node.op == "$gt":
        return actual > bound
    if node.op == "$gte":
        return actual >= bound
    if node.op == "$lt":
        return actual < bound
    return actual <= bound


def _equal(actual: object, expected: object) -> bool:
    if isinstance(actual, bool) or isinstance(expected, bool):
        return isinstance(actual, bool) and isinstance(expected, bool) and actual == expected
    return actual == expected

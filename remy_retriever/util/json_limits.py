"""Limits on the JSON a caller sends, checked before the value reaches anything costly.

Python's own parser recurses once per nesting level (an array nested deep enough raises
``RecursionError``), converts integer literals of any length (one of thousands of digits hits
the interpreter's int-string limit later, wherever it is printed) and accepts ``NaN`` and
``Infinity``. :func:`loads_limited` parses a text under the limits below and
:func:`check_json_value` checks a value some other parser produced (the MCP SDK's); both
raise :class:`~remy_retriever.errors.InvalidInputError` naming where in the value the
limit was crossed.
"""

from __future__ import annotations

import json
import math
import re
from typing import Any, Union

from ..errors import InvalidInputError

__all__ = [
    "MAX_INT_DIGITS",
    "MAX_JSON_DEPTH",
    "check_json_text",
    "check_json_value",
    "loads_limited",
]

#: Deepest nesting of arrays and objects a request may send.
MAX_JSON_DEPTH = 128
#: Most digits an integer literal may have.
MAX_INT_DIGITS = 100
_INT_BOUND = 10**MAX_INT_DIGITS
#: Half of a UTF-16 pair on its own (``"\\ud800"`` in JSON): not text, and not encodable.
_LONE_SURROGATE = re.compile("[\ud800-\udfff]")


class _Refused(ValueError):
    """Raised from the parser's hooks; turned into an ``InvalidInputError``."""


class _LongInteger:
    """Stands in for an integer literal over the limit, never converted (the conversion
    is quadratic, and fails past the interpreter's limit), so that
    :func:`check_json_value` refuses it naming where it is."""

    def __init__(self, digits: int) -> None:
        self.digits = digits


def _parse_int(text: str) -> int | _LongInteger:
    digits = len(text.lstrip("-"))
    return _LongInteger(digits) if digits > MAX_INT_DIGITS else int(text)


def _parse_float(text: str) -> float:
    value = float(text)
    if not math.isfinite(value):
        msg = f"the number {text[:40]} is too large for a float"
        raise _Refused(msg)
    return value


def _parse_constant(text: str) -> float:
    msg = f"{text} is not JSON (send a finite number or null)"
    raise _Refused(msg)


def loads_limited(text: str | bytes, *, what: str) -> Any:
    """``text`` parsed as JSON, refused with :class:`InvalidInputError` naming ``what``
    (e.g. ``"the request body"``, ``"filters"``) if it is not JSON, nests deeper than
    :data:`MAX_JSON_DEPTH`, holds an integer of more than :data:`MAX_INT_DIGITS` digits,
    a non-finite number, ``NaN``/``Infinity`` or a lone surrogate."""
    return _parse(text, what, syntax=True)


def check_json_text(text: str | bytes, *, what: str) -> None:
    """Raise :class:`InvalidInputError` if ``text`` is JSON over the limits of
    :func:`loads_limited`; text that is not JSON at all passes (the caller's own parser
    reports it, as it always has)."""
    _parse(text, what, syntax=False)


def _parse(text: str | bytes, what: str, *, syntax: bool) -> Any:
    try:
        value = json.loads(
            text,
            parse_int=_parse_int,
            parse_float=_parse_float,
            parse_constant=_parse_constant,
        )
    except _Refused as exc:
        msg = f"{what} is refused: {exc}"
        raise InvalidInputError(msg) from None
    except RecursionError:
        msg = f"{what} nests deeper than {MAX_JSON_DEPTH} levels; flatten it"
        raise InvalidInputError(msg) from None
    except (ValueError, UnicodeDecodeError) as exc:
        if not syntax:
            return None
        msg = f"{what} is not JSON ({exc})"
        raise InvalidInputError(msg) from None
    check_json_value(value, what=what)
    return value


def check_json_value(value: Any, *, what: str) -> None:
    """Raise :class:`InvalidInputError` if ``value`` (parsed JSON: dicts, lists, strings,
    numbers, booleans, ``None``) nests deeper than :data:`MAX_JSON_DEPTH` or holds an
    integer of more than :data:`MAX_INT_DIGITS` digits, a non-finite float or a string
    with a lone surrogate. The message
    names the path (``what.key[3]``). Iterative, so any depth is checked without
    recursion; integers are compared, never printed."""
    # The path is kept as a chain of (key, parent) pairs and spelled out only on refusal.
    stack: list[tuple[Any, int, _Trail]] = [(value, 0, None)]
    while stack:
        item, depth, trail = stack.pop()
        if isinstance(item, (dict, list, tuple)):
            if depth >= MAX_JSON_DEPTH:
                msg = f"{_path(what, trail)} nests deeper than {MAX_JSON_DEPTH} levels; flatten it"
                raise InvalidInputError(msg)
            if isinstance(item, dict):
                for k in item:
                    if isinstance(k, str) and _LONE_SURROGATE.search(k):
                        msg = f"{_path(what, trail)} has a key that is not text: {_SURROGATE_FIX}"
                        raise InvalidInputError(msg)
            pairs = item.items() if isinstance(item, dict) else enumerate(item)
            stack += [(v, depth + 1, (k, trail)) for k, v in pairs]
        elif isinstance(item, str):
            if _LONE_SURROGATE.search(item):
                msg = f"{_path(what, trail)} is not text: {_SURROGATE_FIX}"
                raise InvalidInputError(msg)
        elif isinstance(item, bool):
            continue
        elif isinstance(item, _LongInteger):
            msg = (
                f"{_path(what, trail)} is an integer of {item.digits:,} digits (at most "
                f"{MAX_INT_DIGITS}); send a smaller number"
            )
            raise InvalidInputError(msg)
        elif isinstance(item, int):
            if not -_INT_BOUND < item < _INT_BOUND:
                msg = (
                    f"{_path(what, trail)} is an integer of more than {MAX_INT_DIGITS} digits "
                    f"({item.bit_length():,} bits); send a smaller number"
                )
                raise InvalidInputError(msg)
        elif isinstance(item, float) and not math.isfinite(item):
            msg = f"{_path(what, trail)} is {item}, not a finite number"
            raise InvalidInputError(msg)


_Trail = Union[tuple[Union[str, int], "_Trail"], None]


def _path(what: str, trail: _Trail) -> str:
    """``what.key[3].name`` for the chain ``trail`` (innermost key first)."""
    parts: list[str] = []
    while trail is not None:
        key, trail = trail
        parts.append(f"[{key}]" if isinstance(key, int) else f".{_key(key)}")
    parts.reverse()
    if len(parts) > 12:  # a deep path: its start and its end
        parts = [*parts[:6], f"...({len(parts) - 10} levels)...", *parts[-4:]]
    return what + "".join(parts)


_SURROGATE_FIX = "it holds half of a UTF-16 surrogate pair (e.g. \\ud800); send valid Unicode"


def _key(key: object) -> str:
    text = str(key)
    return text if len(text) <= 40 else text[:37] + "..."

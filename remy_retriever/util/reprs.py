"""Short, safe ``repr`` for error messages about values a caller passed.

``f"{value!r:.80}"`` builds the whole repr before cutting it: a list nested 100,000 deep
raises ``RecursionError`` and a 1 GB string is copied. :func:`short_repr` limits depth
and width while it builds, and never raises.
"""

from __future__ import annotations

import reprlib

__all__ = ["short_repr"]

_REPR = reprlib.Repr()
_REPR.maxlevel = 3
_REPR.maxstring = 80
_REPR.maxother = 80
_REPR.maxlong = 40


def short_repr(value: object, limit: int = 80) -> str:
    """``repr(value)`` cut to about ``limit`` characters, nesting shown at most 3 deep;
    ``<type object>`` when the value's own ``__repr__`` fails."""
    if isinstance(value, int) and value.bit_length() > 128:
        # Python refuses to print ints of more than 4,300 digits
        return f"<int of {value.bit_length()} bits>"
    try:
        text = _REPR.repr(value)
    except Exception:  # a hostile __repr__ must not replace the real error
        text = f"<{type(value).__name__} object>"
    return text if len(text) <= limit else text[: limit - 3] + "..."

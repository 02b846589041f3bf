"""How much time and memory one file may take to parse: :class:`ParseLimits`.

The budget is enforced by :mod:`.worker`, which parses in a separate process that it
kills at the end of the time budget and whose address space is capped. Inside that
process, :func:`active_limits` tells a loader the budget of the file it is reading, so
it can refuse a part that would not fit (a PDF stream, a DOCX XML part) before
unpacking it.
"""

from __future__ import annotations

import math
from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass

from ..errors import InvalidInputError
from ..util.reprs import short_repr

__all__ = ["DEFAULT_PARSE_LIMITS", "ParseLimits", "active_limits", "using_limits"]

#: The smallest memory budget: the parsing process itself (the interpreter and the parser
#: libraries) takes a good part of this before it reads a byte.
MIN_MEMORY_BYTES = 128 * 2**20
_MAX_SECONDS = 7 * 24 * 3600.0
_MAX_MEMORY_BYTES = 2**50


@dataclass(frozen=True)
class ParseLimits:
    """The budget for parsing one file: at most ``seconds`` of wall-clock time, and at
    most ``memory_bytes`` of address space for the process that parses it (the
    interpreter and the parser libraries included). A file over either budget raises
    :class:`~remy_retriever.errors.ParseBudgetError` and nothing of it is stored.

    On Windows there is no address-space limit (no ``RLIMIT_AS``): only the time budget
    is enforced there."""

    seconds: float = 60.0
    memory_bytes: int = 2**30

    def __post_init__(self) -> None:
        seconds = self.seconds
        if (
            isinstance(seconds, bool)
            or not isinstance(seconds, (int, float))
            or not math.isfinite(seconds)
            or not 0 < seconds <= _MAX_SECONDS
        ):
            msg = (
                f"ParseLimits(seconds=) must be a number of seconds above 0 and at most "
                f"{_MAX_SECONDS:,.0f} (a week), got {short_repr(seconds)}"
            )
            raise InvalidInputError(msg)
        memory = self.memory_bytes
        if (
            isinstance(memory, bool)
            or not isinstance(memory, int)
            or not MIN_MEMORY_BYTES <= memory <= _MAX_MEMORY_BYTES
        ):
            msg = (
                f"ParseLimits(memory_bytes=) must be a whole number of bytes from "
                f"{MIN_MEMORY_BYTES:,} (128 MiB) to 2**50, got {short_repr(memory)}"
            )
            raise InvalidInputError(msg)
        object.__setattr__(self, "seconds", float(seconds))

    def describe(self) -> str:
        """The budget in words, for messages: ``60 s and 1,024 MiB``."""
        return f"{self.seconds:g} s and {self.memory_bytes / 2**20:,.0f} MiB"


#: The budget every loader runs under unless told otherwise.
DEFAULT_PARSE_LIMITS = ParseLimits()

_ACTIVE: ContextVar[ParseLimits | None] = ContextVar("remy_parse_limits", default=None)


def active_limits() -> ParseLimits | None:
    """The budget of the file being parsed here, or ``None`` when no budget applies (the
    loader was called directly, in the caller's process)."""
    return _ACTIVE.get()


@contextmanager
def using_limits(limits: ParseLimits | None) -> Iterator[None]:
    """Make ``limits`` what :func:`active_limits` returns inside the ``with`` block."""
    token = _ACTIVE.set(limits)
    try:
        yield
    finally:
        _ACTIVE.reset(token)

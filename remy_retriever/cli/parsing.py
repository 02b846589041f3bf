"""The flags of the parsing budget (``--max-parse-seconds``, ``--max-parse-memory``),
shared by ``remy ingest`` and ``remy serve``."""

from __future__ import annotations

import argparse

from ..errors import InvalidInputError
from ..loaders import ParseLimits
from ..loaders.limits import DEFAULT_PARSE_LIMITS

__all__ = ["add_parse_flags", "parse_limits", "parse_size"]

_SCALES = {"K": 2**10, "M": 2**20, "G": 2**30}


def add_parse_flags(parser: argparse.ArgumentParser) -> None:
    """Add the budget flags to ``parser``."""
    parser.add_argument(
        "--max-parse-seconds",
        type=float,
        default=DEFAULT_PARSE_LIMITS.seconds,
        metavar="S",
        help="time budget to parse one file (default %(default)g); a file over it is refused",
    )
    parser.add_argument(
        "--max-parse-memory",
        default="1G",
        metavar="SIZE",
        help="memory budget of the process parsing one file, bytes or with K, M or G "
        "(default %(default)s; not enforced on Windows)",
    )


def parse_limits(args: argparse.Namespace) -> ParseLimits:
    """The :class:`ParseLimits` the flags name (``InvalidInputError`` for a bad one)."""
    return ParseLimits(
        seconds=args.max_parse_seconds,
        memory_bytes=parse_size(args.max_parse_memory, "--max-parse-memory"),
    )


def parse_size(text: str, flag: str) -> int:
    """``text`` as a number of bytes: digits, optionally followed by K, M or G (powers
    of 1024, like ``512M``; ``KiB``, ``MB`` and the like are read the same)."""
    value = text.strip().upper().removesuffix("IB").removesuffix("B")
    scale = _SCALES.get(value[-1:], 1)
    digits = value[:-1] if value[-1:] in _SCALES else value
    if not digits.isdigit() or len(digits) > 18:
        msg = f"{flag} must be a number of bytes like 1073741824, 512M or 1G, got {text!r}"
        raise InvalidInputError(msg)
    return int(digits) * scale

"""What several ``remy`` commands share: the store flags, JSON flag values, output helpers."""

from __future__ import annotations

import argparse
import json
from typing import Any

from ..errors import InvalidFilterError, InvalidInputError

__all__ = [
    "DB_HELP",
    "add_rerank_flags",
    "add_store_flags",
    "clip",
    "json_object",
    "parse_json",
    "print_json",
]

DB_HELP = "embedded Chroma directory (default ./remy_data)"


def add_store_flags(
    parser: argparse.ArgumentParser, *, collection: str = "docs", collection_help: str | None = None
) -> None:
    """Add ``--db`` and ``--collection`` (default ``collection``) to ``parser``."""
    parser.add_argument("--db", default="./remy_data", help=DB_HELP)
    parser.add_argument("--collection", default=collection, help=collection_help)


def add_rerank_flags(parser: argparse.ArgumentParser) -> None:
    """Add ``--rerank [MODEL]`` and ``--rerank-depth`` (``remy search`` and ``remy eval``)."""
    parser.add_argument(
        "--rerank",
        nargs="?",
        const=True,
        default=None,
        metavar="MODEL",
        help="rerank with a cross-encoder (default model, or a name/path)",
    )
    parser.add_argument("--rerank-depth", type=int, default=30, help="candidates to rerank")


def parse_json(text: str, flag: str) -> Any:
    """``text`` parsed as any JSON value; raises :class:`InvalidFilterError` naming ``flag``
    if it is not JSON (``remy search --where``)."""
    try:
        return json.loads(text)
    except json.JSONDecodeError as exc:
        msg = f"{flag} is not valid JSON ({exc.msg}): {text!r}"
        raise InvalidFilterError(msg) from exc


def json_object(text: str | None, flag: str) -> Any:
    """``text`` parsed as a JSON object (``None`` stays ``None``). Not JSON, or not an
    object: :class:`InvalidFilterError` for ``--where``, else :class:`InvalidInputError`."""
    if text is None:
        return None
    try:
        value = json.loads(text)
    except json.JSONDecodeError as exc:
        msg = f"{flag} is not valid JSON ({exc.msg}): {text!r}"
        raise (InvalidFilterError if flag == "--where" else InvalidInputError)(msg) from exc
    if not isinstance(value, dict):
        msg = f'{flag} must be a JSON object like \'{{"key": "value"}}\', got {text!r}'
        raise (InvalidFilterError if flag == "--where" else InvalidInputError)(msg)
    return value


def print_json(value: Any, *, ascii_only: bool = False) -> None:
    """Print ``value`` as indented JSON; ``ascii_only`` escapes non-ASCII characters
    (``remy doctor`` and ``remy eval`` print that way, the other commands do not)."""
    print(json.dumps(value, ensure_ascii=ascii_only, indent=2))


def clip(text: str, n: int) -> str:
    """``text`` cut to at most ``n`` characters, ending in ``...`` if it was cut."""
    return text if len(text) <= n else text[: n - 3] + "..."

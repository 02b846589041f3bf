"""The ``remy`` command line: ``ingest``, ``search``, ``memory``, ``doctor`` and ``eval``.

One module per command, each with ``add_parser(subparsers)`` and ``run(args) -> int``;
this module puts them together. The commands use the public API only (the package's
top-level names, :class:`~remy_retriever.retriever.Retriever`,
:func:`~remy_retriever.ingest.files.load_files`, :class:`~remy_retriever.memory.MemoryStore`
and :mod:`remy_retriever.evaluation`). A :class:`~remy_retriever.errors.RemyError` is
printed as ``remy: error: ...`` with exit code 2.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable, Sequence

from ..errors import RemyError
from . import doctor, ingest, memory, search
from . import eval as eval_command

__all__ = ["build_parser", "main", "memory_main"]


def build_parser() -> argparse.ArgumentParser:
    """The ``remy`` parser; parsed arguments carry ``run``, the command's ``run``."""
    parser = argparse.ArgumentParser(
        prog="remy", description="Hybrid BM25 + dense retrieval over Chroma, with citations."
    )
    subparsers = parser.add_subparsers(dest="command", required=True)
    for command in (ingest, search, memory, doctor, eval_command):  # the order of --help
        command.add_parser(subparsers)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Run ``remy`` with ``argv`` (default ``sys.argv[1:]``); returns the exit code."""
    args = build_parser().parse_args(argv)
    run: Callable[[argparse.Namespace], int] = args.run
    try:
        return run(args)
    except RemyError as exc:
        print(f"remy: error: {exc}", file=sys.stderr)
        return 2


def memory_main(argv: Sequence[str]) -> int:
    """``remy memory`` followed by ``argv``, e.g. ``memory_main(["add", "..."])``."""
    return main(["memory", *argv])

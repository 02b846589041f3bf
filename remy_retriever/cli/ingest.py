"""``remy ingest PATH...``: add text files or folders to a collection."""

from __future__ import annotations

import argparse

from ..ingest.files import load_files
from .common import add_store_flags, open_retriever

__all__ = ["add_parser", "run"]


def add_parser(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Add the ``ingest`` command to the ``remy`` subcommands."""
    parser = subparsers.add_parser("ingest", help="add .md/.txt/.rst files or folders")
    parser.add_argument("paths", nargs="+", metavar="PATH")
    add_store_flags(parser)
    parser.add_argument("--progress", action=argparse.BooleanOptionalAction, default=None)
    parser.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    """Read every path (all files are read and checked before anything is written), add
    the documents, print what changed."""
    docs = [doc for path in args.paths for doc in load_files(path)]
    with open_retriever(args, create=True) as r:
        report = r.add(docs, progress=args.progress)
        print(
            f"added {len(report.added)}, updated {len(report.updated)}, unchanged "
            f"{len(report.unchanged)} documents; {report.chunks_written} chunks written, "
            f"{r.count()} in collection {args.collection!r}"
        )
    return 0

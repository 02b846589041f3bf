"""``remy ingest PATH...``: add text files or folders to a collection."""

from __future__ import annotations

import argparse
import sys

from ..ingest.files import FileIssue, load_files
from .common import add_store_flags, open_retriever

__all__ = ["add_parser", "run"]

#: At most this many skipped files are listed one by one (then a count).
_MAX_LISTED = 50


def add_parser(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Add the ``ingest`` command to the ``remy`` subcommands."""
    parser = subparsers.add_parser("ingest", help="add .md/.txt/.rst files or folders")
    parser.add_argument("paths", nargs="+", metavar="PATH")
    add_store_flags(parser)
    parser.add_argument("--progress", action=argparse.BooleanOptionalAction, default=None)
    parser.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    """Read every path (all files are read and checked before anything is written), add
    the documents, print what changed and the files left out. Exit status 1 when a file
    could not be read, else 0."""
    loaded = [load_files(path) for path in args.paths]
    skipped = [issue for files in loaded for issue in files.skipped]
    failed = [issue for files in loaded for issue in files.failed]
    with open_retriever(args, create=True) as r:
        report = r.add([doc for files in loaded for doc in files.documents], progress=args.progress)
        print(
            f"added {len(report.added)}, updated {len(report.updated)}, unchanged "
            f"{len(report.unchanged)} documents; {report.chunks_written} chunks written, "
            f"{r.count()} in collection {args.collection!r}"
        )
    _print_issues("skipped", skipped, _MAX_LISTED)
    _print_issues("failed", failed, len(failed))
    return 1 if failed else 0


def _print_issues(what: str, issues: list[FileIssue], limit: int) -> None:
    if not issues:
        return
    print(f"{what} {len(issues)} file(s):", file=sys.stderr)
    for issue in issues[:limit]:
        print(f"  {issue.path!r}: {issue.reason}", file=sys.stderr)
    if len(issues) > limit:
        print(f"  ... and {len(issues) - limit} more", file=sys.stderr)

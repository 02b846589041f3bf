"""``remy ingest PATH...``: add files and folders to a collection, like a sync.

Exit codes a script can rely on: 0 when every file was read or left out on purpose
(``skipped``: a type without a loader, a link leaving the folder, a special file, a
file reached twice); :data:`EXIT_FAILED` (1) when any file should have been read and
could not be (``failed``: unreadable, not UTF-8 or not text, too large, damaged, a
missing extra, changed while it was read; with ``--strict``, the first such file stops
the ingest and nothing is stored); 2 for a usage error or an ingest that could not run
(a bad flag, a path that does not exist or is not a file or folder of a supported type,
an id another folder holds, a store error), as for every command.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence

from ..errors import UnusableFileError
from ..retriever import FileIssue
from ..schema.document import check_id_prefix
from ..util.paths import check_paths
from .common import PROGRESS_HELP, add_store_flags, json_object, open_retriever, terminal_safe
from .parsing import add_parse_flags, parse_limits

__all__ = ["EXIT_FAILED", "add_parser", "run"]

#: The exit status when a file could not be used (see the module docstring).
EXIT_FAILED = 1

#: At most this many skipped files (or gone documents) are listed one by one (then a count).
_MAX_LISTED = 50


def add_parser(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Add the ``ingest`` command to the ``remy`` subcommands."""
    parser = subparsers.add_parser(
        "ingest", help="add files and folders (.md .txt .rst; .pdf .html .docx with extras)"
    )
    parser.add_argument("paths", nargs="+", metavar="PATH")
    add_store_flags(parser)
    parser.add_argument(
        "--metadata", default=None, help='JSON object for every document, e.g. \'{"tenant": "a"}\''
    )
    parser.add_argument(
        "--id-prefix", default=None, metavar="P", help="prefix every document id (e.g. docs/)"
    )
    parser.add_argument(
        "--prune",
        action="store_true",
        help="delete documents an earlier ingest of the folder added whose files are gone",
    )
    parser.add_argument(
        "--strict",
        action="store_true",
        help="stop at the first file that fails (unreadable, not text, too large...) and "
        "store nothing (exit 1); skipped files (no loader, links out) never stop it",
    )
    parser.add_argument(
        "--progress", action=argparse.BooleanOptionalAction, default=None, help=PROGRESS_HELP
    )
    add_parse_flags(parser)
    parser.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    """Read every path (all files are read and checked before anything is written), add
    the documents, print what changed, the files left out and the documents gone from
    disk. Exit status 1 when a file failed (with ``--strict``, at the first, storing
    nothing), else 0; errors are 2 (see the module docstring)."""
    # The flags and paths first: a bad one must not leave a new store behind.
    metadata = json_object(args.metadata, "--metadata")
    check_id_prefix(args.id_prefix)
    check_paths(args.paths)
    limits = parse_limits(args)
    with open_retriever(args, create=True) as r:
        try:
            report = r.ingest(
                args.paths,
                metadata=metadata,
                id_prefix=args.id_prefix,
                prune=args.prune,
                strict=args.strict,
                progress=args.progress,
                parse_limits=limits,
            )
        except UnusableFileError as exc:  # a file named directly, or --strict
            print(f"remy: error: {terminal_safe(str(exc))}", file=sys.stderr)
            return EXIT_FAILED
        print(
            f"added {len(report.added)}, updated {len(report.updated)}, unchanged "
            f"{len(report.unchanged)} documents; {report.chunks_written} chunks written, "
            f"{r.count()} in collection {args.collection!r}"
        )
    if report.gone:
        verb = "deleted (--prune)" if report.pruned else "kept; --prune deletes them"
        gone = [d for d in report.gone if d not in report.gone_on_disk]
        moved = list(report.gone_on_disk)
        _print_ids(f"gone from disk: {len(gone)} document(s), {verb}", gone)
        _print_ids(
            f"no longer ingested under these ids, although their files are still on disk "
            f"(ingested before with another --id-prefix?): {len(moved)} document(s), {verb}",
            moved,
        )
    _print_issues("skipped", list(report.skipped), _MAX_LISTED)
    _print_issues("failed", list(report.failed), len(report.failed))
    return EXIT_FAILED if report.failed else 0


def _print_issues(what: str, issues: list[FileIssue], limit: int) -> None:
    if not issues:
        return
    print(f"{what} {len(issues)} file(s):", file=sys.stderr)
    for issue in issues[:limit]:
        print(f"  {issue.path!r}: {issue.reason}", file=sys.stderr)
    if len(issues) > limit:
        print(f"  ... and {len(issues) - limit} more", file=sys.stderr)


def _print_ids(heading: str, document_ids: Sequence[str]) -> None:
    if not document_ids:
        return
    print(heading)
    for doc_id in document_ids[:_MAX_LISTED]:
        print(f"  {doc_id!r}")
    if len(document_ids) > _MAX_LISTED:
        print(f"  ... and {len(document_ids) - _MAX_LISTED} more")

"""``remy doctor``: check (and with ``--repair`` fix) drift between Chroma and the lexical
index. Exit code 0 when in sync or repaired, 1 when drift was found and left."""

from __future__ import annotations

import argparse
import dataclasses

from .common import add_store_flags, open_retriever, print_json

__all__ = ["add_parser", "run"]


def add_parser(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Add the ``doctor`` command to the ``remy`` subcommands."""
    parser = subparsers.add_parser(
        "doctor", help="check (and --repair) drift between the two indexes"
    )
    add_store_flags(parser)
    parser.add_argument("--repair", action="store_true", help="fix what is found")
    parser.add_argument("--json", action="store_true", help="print the report as JSON")
    parser.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    """Run ``remy doctor``: prints the report (or its JSON); returns the exit code."""
    with open_retriever(args) as r:
        report = r.doctor(repair=args.repair)
    data = dataclasses.asdict(report)
    data["ok"] = report.ok
    if args.json:
        print_json(data, ascii_only=True)
    else:
        print(f"chunks in Chroma: {report.chunks}; in the lexical index: {report.lexical_chunks}")
        for key, value in data.items():
            if isinstance(value, (list, tuple)) and value:
                shown = ", ".join(map(str, value[:10])) + (" ..." if len(value) > 10 else "")
                print(f"{key.replace('_', ' ')}: {len(value)} ({shown})")
        state = (
            "repaired" if report.repaired and not report.ok else ("ok" if report.ok else "drift")
        )
        print(f"status: {state}")
    return 0 if report.ok or report.repaired else 1

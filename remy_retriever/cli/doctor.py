"""``remy doctor``: check (and with ``--repair`` fix) drift between Chroma and the lexical
index, and the dense reachability of the chunks. Exit code 0 when in sync or repaired,
1 when drift was found and left."""

from __future__ import annotations

import argparse
import dataclasses

from ..retriever import DOCTOR_SAMPLE
from .common import add_store_flags, open_retriever, print_json

__all__ = ["add_parser", "run"]


def add_parser(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Add the ``doctor`` command to the ``remy`` subcommands."""
    parser = subparsers.add_parser(
        "doctor", help="check (and --repair) drift between the two indexes"
    )
    add_store_flags(parser)
    parser.add_argument("--repair", action="store_true", help="fix what is found")
    parser.add_argument(
        "--full",
        action="store_true",
        help="check the dense reachability of every chunk, not a sample",
    )
    parser.add_argument(
        "--sample",
        type=int,
        default=DOCTOR_SAMPLE,
        metavar="N",
        help="chunks whose dense reachability is checked, half of them the newest "
        "(0: skip the check; default: %(default)s)",
    )
    parser.add_argument("--json", action="store_true", help="print the report as JSON")
    parser.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    """Run ``remy doctor``: prints the report (or its JSON); returns the exit code."""
    with open_retriever(args) as r:
        report = r.doctor(repair=args.repair, full=args.full, sample=args.sample)
    data = dataclasses.asdict(report)
    data["ok"] = report.ok
    if args.json:
        print_json(data, ascii_only=True)
    else:
        print(f"chunks in Chroma: {report.chunks}; in the lexical index: {report.lexical_chunks}")
        print(f"dense reachability checked for {report.reachability_checked} chunks")
        for key, value in data.items():
            if isinstance(value, (list, tuple)) and value:
                shown = ", ".join(map(str, value[:10])) + (" ..." if len(value) > 10 else "")
                print(f"{key.replace('_', ' ')}: {len(value)} ({shown})")
        if report.ok:
            state = "ok"
        elif report.repaired:
            state = "repaired" if report.fixed else "repair incomplete"
        else:
            state = "drift"
        print(f"status: {state}")
    return 0 if report.fixed else 1

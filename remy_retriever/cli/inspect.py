"""``remy inspect --db PATH``: the retrieval inspector of a store, on loopback.

It is ``remy serve`` (the ``server`` extra) bound to 127.0.0.1 without API keys, for one
person looking at their own store: it prints the inspector's address (``/ui/``) and
serves until interrupted. The store must exist already (inspecting creates nothing).
To share an inspector, run ``remy serve`` with ``--api-key``: its ``/ui`` is the same
page behind the keys.
"""

from __future__ import annotations

import argparse
from pathlib import Path

from ..errors import InvalidInputError
from . import serve
from .common import add_reranker_flag, add_store_flags

__all__ = ["DEFAULT_PORT", "add_parser", "run"]

#: The port ``remy inspect`` listens on by default.
DEFAULT_PORT = 8765


def add_parser(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Add the ``inspect`` command to the ``remy`` subcommands."""
    parser = subparsers.add_parser(
        "inspect", help="open the retrieval inspector of a store in the browser (loopback)"
    )
    add_store_flags(parser)
    parser.add_argument(
        "--port", type=int, default=DEFAULT_PORT, help="port on 127.0.0.1 (default 8765)"
    )
    add_reranker_flag(parser)
    serve.add_eval_report_flag(parser)
    parser.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    """Run the inspector until interrupted."""
    if args.db is not None and not Path(args.db).is_dir():
        msg = f"--db {args.db!r} is not a store folder; build one with `remy ingest --db PATH`"
        raise InvalidInputError(msg)
    argv = ["serve", "--host", "127.0.0.1", "--port", str(args.port)]
    argv += ["--collection", args.collection]
    for flag, value in (
        ("--db", args.db),
        ("--server", args.server),
        ("--lexical-path", args.lexical_path),
        ("--embedder", args.embedder),
        ("--embedder-backend", args.embedder_backend),
        ("--analyzer", args.analyzer),
        ("--reranker", args.reranker),
        ("--eval-report", args.eval_report),
    ):
        if value is not None:
            argv += [flag, str(value)]
    parser = argparse.ArgumentParser(prog="remy")
    serve.add_parser(parser.add_subparsers())
    served = parser.parse_args(argv)
    served.api_key = []
    print(f"remy inspect: open http://127.0.0.1:{args.port}/ui/ in a browser", flush=True)
    return serve.run(served)

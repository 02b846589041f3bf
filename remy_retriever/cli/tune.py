"""``remy tune BEIR_DIR | --queries Q --qrels R``: fit the fusion options on a collection's
judged queries and store them in the collection, so later searches use them.

With ``BEIR_DIR`` the queries are ``queries.jsonl`` and the judgements
``qrels/<--split>.tsv`` (default ``train``: tune on a train split, measure on test), and
the collection is the index ``remy eval BEIR_DIR`` built (``--cache``) unless ``--db`` or
``--server`` names another. ``--dry-run`` reports without storing; ``--reset`` clears
the stored options (back to the library's defaults).
"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from ..errors import InvalidInputError
from ..evaluation.beir import load_beir, load_qrels, load_queries
from ..retriever import Retriever
from .common import add_store_flags, open_retriever, print_json, require_collection
from .eval import eval_store

__all__ = ["add_parser", "run"]


def add_parser(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Add the ``tune`` command to the ``remy`` subcommands."""
    parser = subparsers.add_parser(
        "tune", help="fit the fusion options on judged queries and store them"
    )
    parser.add_argument("beir_dir", metavar="BEIR_DIR", nargs="?", default=None)
    parser.add_argument("--split", default="train", help="BEIR qrels split (default train)")
    parser.add_argument("--queries", default=None, metavar="JSONL", help="queries.jsonl")
    parser.add_argument("--qrels", default=None, metavar="TSV", help="qrels TSV")
    add_store_flags(parser)
    parser.add_argument("--cache", default=None, help="`remy eval --cache` (with BEIR_DIR)")
    parser.add_argument("--dry-run", action="store_true", help="report only, store nothing")
    parser.add_argument("--reset", action="store_true", help="clear the stored options")
    parser.add_argument("--json", action="store_true")
    parser.set_defaults(run=run)


def _inputs(args: argparse.Namespace) -> tuple[dict[str, str], dict[str, dict[str, int]]]:
    if args.beir_dir is not None:
        if args.queries or args.qrels:
            msg = "pass BEIR_DIR or --queries/--qrels, not both"
            raise InvalidInputError(msg)
        root = Path(args.beir_dir)
        qrels_path = root / "qrels" / f"{args.split}.tsv"
        if not qrels_path.is_file():
            msg = (
                f"{str(qrels_path)!r} is missing; pass --split with a qrels file that "
                f"{str(root / 'qrels')!r} has (tune on train queries, measure on test)"
            )
            raise InvalidInputError(msg)
        return load_queries(root / "queries.jsonl"), load_qrels(qrels_path)
    if not (args.queries and args.qrels):
        msg = "pass BEIR_DIR, or both --queries QUERIES.jsonl and --qrels QRELS.tsv"
        raise InvalidInputError(msg)
    return load_queries(args.queries), load_qrels(args.qrels)


def _open(args: argparse.Namespace) -> Retriever:
    if args.beir_dir is None or args.db is not None or args.server is not None:
        return open_retriever(args)
    dataset = load_beir(args.beir_dir, split=args.split)
    store = eval_store(dataset, args.cache, args.embedder)
    if not store.is_dir():
        msg = (
            f"no `remy eval` index for {dataset.name} at {str(store)!r}; run "
            f"`remy eval {args.beir_dir}` first (same --cache), or pass --db/--collection"
        )
        raise InvalidInputError(msg)
    require_collection(str(store), "beir")
    return Retriever(
        store,
        collection="beir",
        embedder=args.embedder,
        embedder_backend=args.embedder_backend,
        create=False,
    )


def run(args: argparse.Namespace) -> int:
    """Run ``remy tune``: prints the chosen options and their gain on the queries."""
    with _open(args) as r:
        if args.reset:
            r.set_search_config({})
            print_json({"search_config": {}}) if args.json else print("search config cleared")
            return 0
        queries, qrels = _inputs(args)
        judged = {q: t for q, t in queries.items() if qrels.get(q)}
        report = r.tune(judged, qrels, save=not args.dry_run)
    out: dict[str, Any] = {**report.to_dict(), "stored": not args.dry_run}
    if args.json:
        print_json(out, ascii_only=True)
        return 0
    config = ", ".join(f"{k}={v}" for k, v in report.config.items())
    print(f"{report.queries} judged queries; best: {config}")
    print(f"nDCG@10 {report.score:.4f} (defaults {report.default_score:.4f}) on these queries")
    print("stored in the collection" if not args.dry_run else "not stored (--dry-run)")
    return 0

"""``remy tune BEIR_DIR | --queries Q --qrels R | --synthetic``: fit the fusion options on
a collection's judged queries (or, with ``--synthetic``, on pseudo-queries built from the
collection itself) and store them in the collection, so later searches use them.

With ``BEIR_DIR`` the queries are ``queries.jsonl`` and the judgements
``qrels/<--split>.tsv`` (default ``train``: tune on a train split, measure on test), and
the collection is the index ``remy eval BEIR_DIR`` built (``--cache``) unless ``--db`` or
``--server`` names another. ``--synthetic`` needs no judgements and stores its fit only
when it beats the current options on held-out pseudo-queries by ``--margin``.
``--dry-run`` reports without storing; ``--reset`` clears the stored options (back to
the library's defaults).
"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from ..errors import InvalidInputError
from ..evaluation.beir import load_beir, load_qrels, load_queries
from ..retriever import (
    SYNTHETIC_MARGIN,
    SYNTHETIC_QUERIES,
    SYNTHETIC_SEED,
    Retriever,
    SyntheticReport,
)
from ..util.progress import show_progress
from .common import (
    PROGRESS_HELP,
    add_store_flags,
    open_retriever,
    print_json,
    require_collection,
)
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
    parser.add_argument(
        "--synthetic",
        action="store_true",
        help="no judgements: fit on pseudo-queries built from the collection itself",
    )
    parser.add_argument(
        "--pseudo-queries",
        type=int,
        default=SYNTHETIC_QUERIES,
        metavar="N",
        help=f"--synthetic: pseudo-queries to build at most (default {SYNTHETIC_QUERIES})",
    )
    parser.add_argument(
        "--margin",
        type=float,
        default=SYNTHETIC_MARGIN,
        help="--synthetic: nDCG@10 gain on the held-out pseudo-queries needed to store "
        f"(default {SYNTHETIC_MARGIN})",
    )
    parser.add_argument(
        "--seed",
        type=int,
        default=SYNTHETIC_SEED,
        help=f"--synthetic: seed of the sample and the split (default {SYNTHETIC_SEED})",
    )
    parser.add_argument(
        "--progress", action=argparse.BooleanOptionalAction, default=None, help=PROGRESS_HELP
    )
    parser.add_argument("--json", action="store_true")
    parser.set_defaults(run=run)


def _inputs(args: argparse.Namespace) -> tuple[dict[str, str], dict[str, dict[str, int]]]:
    if args.beir_dir is not None:
        if args.queries or args.qrels:
            msg = "pass BEIR_DIR or --queries/--qrels, not both"
            raise InvalidInputError(msg)
        root = Path(args.beir_dir)
        return load_queries(root / "queries.jsonl"), load_qrels(_qrels_path(args))
    if not (args.queries and args.qrels):
        msg = "pass BEIR_DIR, or both --queries QUERIES.jsonl and --qrels QRELS.tsv"
        raise InvalidInputError(msg)
    return load_queries(args.queries), load_qrels(args.qrels)


def _qrels_path(args: argparse.Namespace) -> Path:
    """``BEIR_DIR/qrels/<--split>.tsv``; missing, an error naming the splits there."""
    folder = Path(args.beir_dir) / "qrels"
    path = folder / f"{args.split}.tsv"
    if not path.is_file():
        have = sorted(p.stem for p in folder.glob("*.tsv")) if folder.is_dir() else []
        fix = (
            f"pass --split {have[0]} (the splits there: {', '.join(have)}), or --synthetic "
            "to tune with no judgements"
            if have
            else "pass --synthetic to tune with no judgements, or --queries/--qrels"
        )
        msg = f"{str(path)!r} is missing; {fix} (tune on train queries, measure on test)"
        raise InvalidInputError(msg)
    return path


def _open(args: argparse.Namespace) -> Retriever:
    if args.beir_dir is None or args.db is not None or args.server is not None:
        return open_retriever(args)
    # The index depends on the corpus only: any split of the folder finds it.
    folder = Path(args.beir_dir) / "qrels"
    have = sorted(p.stem for p in folder.glob("*.tsv")) if folder.is_dir() else []
    split = args.split if args.split in have or not have else have[0]
    dataset = load_beir(args.beir_dir, split=split)
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
    if args.synthetic and (args.queries or args.qrels):
        msg = "--synthetic builds its own queries; drop --queries/--qrels"
        raise InvalidInputError(msg)
    # Read before the store opens: a missing split or file fails first, naming the fix.
    inputs = None if (args.synthetic or args.reset) else _inputs(args)
    progress = show_progress(args.progress)
    with _open(args) as r:
        if args.reset:
            r.set_search_config({})
            print_json({"search_config": {}}) if args.json else print("search config cleared")
            return 0
        if args.synthetic:
            synthetic = r.tune_synthetic(
                save=not args.dry_run,
                queries=args.pseudo_queries,
                margin=args.margin,
                seed=args.seed,
                progress=progress,
            )
            return _print_synthetic(synthetic, args)
        assert inputs is not None
        queries, qrels = inputs
        judged = {q: t for q, t in queries.items() if qrels.get(q)}
        report = r.tune(judged, qrels, save=not args.dry_run, progress=progress)
    out: dict[str, Any] = {**report.to_dict(), "stored": not args.dry_run}
    if args.json:
        print_json(out, ascii_only=True)
        return 0
    config = ", ".join(f"{k}={v}" for k, v in report.config.items())
    print(f"{report.queries} judged queries; best: {config}")
    print(f"nDCG@10 {report.score:.4f} (defaults {report.default_score:.4f}) on these queries")
    print("stored in the collection" if not args.dry_run else "not stored (--dry-run)")
    return 0


def _print_synthetic(report: SyntheticReport, args: argparse.Namespace) -> int:
    stored = report.accepted and not args.dry_run
    if args.json:
        print_json({**report.to_dict(), "stored": stored}, ascii_only=True)
        return 0
    kinds = ", ".join(f"{n} {k}" for k, n in sorted(report.kinds.items()))
    print(
        f"{report.fit.queries + report.held_out} pseudo-queries ({kinds}): fit on "
        f"{report.fit.queries}, checked on {report.held_out} held out"
    )
    config = ", ".join(f"{k}={v}" for k, v in report.config.items())
    print(f"best: {config}")
    print(
        f"held-out nDCG@10 {report.held_out_score:.4f} (current options "
        f"{report.held_out_baseline:.4f}); {report.reason}"
    )
    if report.accepted:
        print("stored in the collection" if stored else "not stored (--dry-run)")
    return 0

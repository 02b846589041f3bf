"""``remy eval BEIR_DIR``: nDCG@k / Recall@depth of each search mode on a BEIR-layout
folder. The built index is cached (``--cache``, default ``.cache/remy-eval``) per dataset
fingerprint and reused."""

from __future__ import annotations

import argparse
import hashlib
import sys
from pathlib import Path
from typing import Any

from ..evaluation.beir import BeirDataset, evaluate, load_beir, machine_info
from ..evaluation.report import render_report, report_data
from ..models.rerankers import CrossEncoderReranker
from ..retriever import QUERY_VECTORS, Retriever
from ..util.progress import show_progress
from .common import (
    LEXICAL_HELP,
    PROGRESS_HELP,
    SERVER_HELP,
    add_embedder_flag,
    add_rerank_flags,
    print_json,
    rerank_model,
    store_client,
)

__all__ = ["INSPECT_URL", "add_parser", "eval_store", "run"]

#: Where ``remy inspect`` serves the inspector by default (the report's links).
INSPECT_URL = "http://127.0.0.1:8765/ui/"


def add_parser(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Add the ``eval`` command to the ``remy`` subcommands."""
    parser = subparsers.add_parser("eval", help="nDCG@10 / Recall@100 on a BEIR-layout folder")
    parser.add_argument("beir_dir", metavar="BEIR_DIR")
    parser.add_argument(
        "--mode",
        action="append",
        choices=["semantic", "lexical", "hybrid"],
        help="a mode to evaluate; repeat for several (default: all three)",
    )
    parser.add_argument("--k", type=int, default=10, help="cutoff for nDCG")
    parser.add_argument("--depth", type=int, default=100, help="documents per query for recall")
    parser.add_argument("--candidates", type=int, default=100, help="chunks each branch fetches")
    parser.add_argument(
        "--fusion",
        default=None,
        choices=["rrf", "convex"],
        help="default: the library's, or what `remy tune` stored for the index",
    )
    parser.add_argument("--alpha", type=float, default=None, help="semantic weight (convex)")
    add_rerank_flags(parser)
    add_embedder_flag(parser)
    parser.add_argument("--cache", default=None, help="directory for the built index (reused)")
    parser.add_argument("--server", default=None, metavar="HOST:PORT", help=SERVER_HELP)
    parser.add_argument("--lexical-path", default=None, metavar="DIR", help=LEXICAL_HELP)
    parser.add_argument("--json", action="store_true", help="print the report as JSON")
    parser.add_argument(
        "--html",
        default=None,
        metavar="FILE",
        help="also write a self-contained HTML report: per-query nDCG of each mode, and "
        "the queries where hybrid loses most (show it in `remy serve --eval-report FILE`)",
    )
    parser.add_argument(
        "--ui-url",
        default=INSPECT_URL,
        metavar="URL",
        help="the inspector the --html report's query links open (default %(default)s)",
    )
    parser.add_argument(
        "--progress", action=argparse.BooleanOptionalAction, default=None, help=PROGRESS_HELP
    )
    parser.set_defaults(run=run)


def eval_store(dataset: BeirDataset, cache: str | None, embedder: str | None) -> Path:
    """Where ``remy eval`` keeps a dataset's index: ``CACHE/<name>-<fingerprint>``
    (``CACHE`` default ``.cache/remy-eval``), one per ``--embedder``."""
    store = (Path(cache) if cache else Path(".cache") / "remy-eval") / (
        f"{dataset.name}-{dataset.fingerprint}"
    )
    if embedder is not None:  # one cached index per model
        model = hashlib.sha256(embedder.encode("utf-8", "surrogatepass")).hexdigest()
        store = store.with_name(f"{store.name}-{model[:12]}")
    return store


def run(args: argparse.Namespace) -> int:
    """Run ``remy eval``: prints a table of the measures (or the JSON report)."""
    model = rerank_model(args)
    # One reranker for every query and mode: its model loads once, its score cache is kept.
    reranker = None if model is None else CrossEncoderReranker.shared(model)
    dataset = load_beir(args.beir_dir)
    modes = args.mode or ["lexical", "semantic", "hybrid"]
    store = eval_store(dataset, args.cache, args.embedder)
    fusion = {k: v for k, v in (("fusion", args.fusion), ("alpha", args.alpha)) if v is not None}
    measures = (f"nDCG@{args.k}", f"R@{args.depth}")
    show = show_progress(args.progress)
    if args.server is not None:  # one collection per dataset version (and model)
        args.db = None
        _, client = store_client(args)
        opened = Retriever(
            client=client,
            collection="remy-eval-" + hashlib.sha256(store.name.encode()).hexdigest()[:16],
            embedder=args.embedder,
            embedder_backend=args.embedder_backend,
            lexical_path=args.lexical_path,
        )
    else:
        opened = Retriever(
            store,
            collection="beir",
            embedder=args.embedder,
            embedder_backend=args.embedder_backend,
            lexical_path=args.lexical_path,
        )
    with opened as r:
        if show and r.count() == 0:
            print(
                f"embedding {len(dataset.corpus):,} documents once (then reused from "
                f"{args.server or store}); the bar shows the rate and the time left",
                file=sys.stderr,
            )
        report = r.add(dataset.documents(), progress=show, batch_size=64)
        results: dict[str, Any] = {}
        runs: dict[str, dict[str, dict[str, float]]] = {}
        for mode in modes:

            def rank(q: str, mode: Any = mode) -> list[tuple[str, float]]:
                return r.rank(q, mode=mode, candidates=args.candidates, **fusion)

            # Each mode embeds its own queries: with vectors cached by an earlier mode,
            # a later one would time lookups and look faster than it is.
            QUERY_VECTORS.clear()
            runs[mode] = {}
            results[mode] = evaluate(
                dataset,
                rank,
                depth=args.depth,
                measures=measures,
                progress=show,
                label=mode,
                runs=runs[mode],
            )
            results[mode]["queries_embedded"] = float(QUERY_VECTORS.misses)
            if reranker is not None:

                def reranked(q: str, mode: Any = mode) -> list[tuple[str, float]]:
                    # The top --rerank-depth chunks in reranked order, then the rest of
                    # the retrieval ranking (for recall at depth).
                    hits = r.search(
                        q,
                        mode=mode,
                        k=args.rerank_depth,
                        candidates=args.candidates,
                        rerank=reranker,
                        **fusion,
                        rerank_depth=args.rerank_depth,
                    )
                    head = [(h.id, h.score) for h in hits]
                    seen = {cid for cid, _ in head}
                    return head + [item for item in rank(q) if item[0] not in seen]

                QUERY_VECTORS.clear()
                results[f"{mode}+rerank"] = evaluate(
                    dataset,
                    reranked,
                    depth=args.depth,
                    measures=measures,
                    progress=show,
                    label=f"{mode}+rerank",
                )
        search_config = r.search_config
    if args.html is not None:
        data = report_data(
            dataset=dataset.name, queries=dataset.queries, qrels=dataset.qrels, runs=runs, k=args.k
        )
        Path(args.html).write_text(render_report(data, ui_url=args.ui_url), encoding="utf-8")
    out = {
        "dataset": dataset.name,
        "search_config": search_config,
        "queries": len(dataset.queries),
        "documents": len(dataset.corpus),
        "chunks_embedded": report.chunks_written,
        "modes": results,
        "machine": machine_info(),
    }
    if args.json:
        print_json(out, ascii_only=True)
        return 0
    print(f"{dataset.name}: {len(dataset.queries)} judged queries, {len(dataset.corpus)} documents")
    header = (
        f"{'mode':<10}" + "".join(f"{m:>10}" for m in measures) + f"{'p50 ms':>10}{'p95 ms':>10}"
    )
    print(header)
    for mode, row in results.items():
        cells = "".join(f"{row[m]:>10.4f}" for m in measures)
        print(f"{mode:<10}{cells}{row['p50_ms']:>10.1f}{row['p95_ms']:>10.1f}")
    return 0

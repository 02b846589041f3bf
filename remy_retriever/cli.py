"""The ``remy`` command line: ``ingest``, ``search`` and ``eval``. Uses the public API only."""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from .errors import InvalidFilterError, RemyError

__all__ = ["main"]

_DB_HELP = "embedded Chroma directory (default ./remy_data)"


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="remy", description="Hybrid BM25 + dense retrieval over Chroma, with citations."
    )
    sub = parser.add_subparsers(dest="command", required=True)

    ing = sub.add_parser("ingest", help="add .md/.txt/.rst files or folders")
    ing.add_argument("paths", nargs="+", metavar="PATH")
    ing.add_argument("--db", default="./remy_data", help=_DB_HELP)
    ing.add_argument("--collection", default="docs")
    ing.add_argument("--progress", action=argparse.BooleanOptionalAction, default=None)

    se = sub.add_parser("search", help="search the collection")
    se.add_argument("query")
    se.add_argument("--db", default="./remy_data", help=_DB_HELP)
    se.add_argument("--collection", default="docs")
    se.add_argument("--mode", default="hybrid", choices=["semantic", "lexical", "hybrid"])
    se.add_argument("--k", type=int, default=5)
    se.add_argument(
        "--where", default=None, help='metadata filter as JSON, e.g. \'{"tenant": "a"}\''
    )
    se.add_argument("--explain", action="store_true", help="show which branch found each hit")
    se.add_argument("--expand", type=int, default=0, metavar="N", help="N chunks of context")
    se.add_argument("--highlight", action="store_true", help="bracket the matched terms")
    _rerank_flags(se)
    se.add_argument("--json", action="store_true", help="emit SearchHits as wire JSON")
    from .memory.cli import add_document_search_flags, add_memory_commands

    add_document_search_flags(se)
    add_memory_commands(sub)

    doc = sub.add_parser("doctor", help="check (and --repair) drift between the two indexes")
    doc.add_argument("--db", default="./remy_data", help=_DB_HELP)
    doc.add_argument("--collection", default="docs")
    doc.add_argument("--repair", action="store_true", help="fix what is found")
    doc.add_argument("--json", action="store_true")

    ev = sub.add_parser("eval", help="nDCG@10 / Recall@100 on a BEIR-layout folder")
    ev.add_argument("beir_dir", metavar="BEIR_DIR")
    ev.add_argument("--mode", action="append", choices=["semantic", "lexical", "hybrid"])
    ev.add_argument("--k", type=int, default=10, help="cutoff for nDCG (default 10)")
    ev.add_argument("--depth", type=int, default=100, help="documents per query for recall")
    ev.add_argument("--candidates", type=int, default=100, help="chunks each branch fetches")
    ev.add_argument("--fusion", default="convex", choices=["rrf", "convex"])
    ev.add_argument("--alpha", type=float, default=0.4, help="semantic weight (convex)")
    _rerank_flags(ev)
    ev.add_argument("--cache", default=None, help="directory for the built index (reused)")
    ev.add_argument("--json", action="store_true")
    ev.add_argument("--progress", action=argparse.BooleanOptionalAction, default=None)
    return parser


def _rerank_flags(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--rerank",
        nargs="?",
        const=True,
        default=None,
        metavar="MODEL",
        help="rerank with a cross-encoder (default model, or a name/path)",
    )
    parser.add_argument("--rerank-depth", type=int, default=30, help="candidates to rerank")


def main(argv: Sequence[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    try:
        if args.command == "memory":
            return int(args.handler(args))
        if args.command == "ingest":
            return _ingest(args)
        if args.command == "search":
            return _search(args)
        if args.command == "doctor":
            return _doctor(args)
        return _eval(args)
    except RemyError as exc:
        print(f"remy: error: {exc}", file=sys.stderr)
        return 2


def _ingest(args: argparse.Namespace) -> int:
    from .ingest.files import load_files
    from .retriever import Retriever

    docs = [doc for path in args.paths for doc in load_files(path)]
    with Retriever(args.db, collection=args.collection) as r:
        report = r.add(docs, progress=args.progress)
        print(
            f"added {len(report.added)}, updated {len(report.updated)}, unchanged "
            f"{len(report.unchanged)} documents; {report.chunks_written} chunks written, "
            f"{r.count()} in collection {args.collection!r}"
        )
    return 0


def _search(args: argparse.Namespace) -> int:
    from .retriever import Retriever

    if args.documents:
        from .memory.cli import document_search

        return document_search(args)

    where = _parse_json(args.where, "--where") if args.where else None
    with Retriever(args.db, collection=args.collection, create=False) as r:
        hits = r.search(
            args.query,
            mode=args.mode,
            k=args.k,
            where=where,
            explain=args.explain,
            expand=args.expand,
            highlight=args.highlight,
            rerank=args.rerank or False,
            rerank_depth=args.rerank_depth,
        )
    if args.json:
        print(json.dumps([h.to_dict() for h in hits], ensure_ascii=False, indent=2))
        return 0
    if not hits:
        print("no results")
    for rank, hit in enumerate(hits, start=1):
        c = hit.citation
        where_from = " > ".join(c.heading_path) or c.document_id
        jump = ""
        if hit.retrieval_rank is not None:
            jump = f"  (retrieval rank {hit.retrieval_rank}, score {hit.retrieval_score:.4f})"
        where_chunk = f"({where_from}, chunk {c.chunk_index})"
        print(f"[{rank}] score={hit.score:.4f}{jump}  {c.source}  {where_chunk}")
        if hit.explain is not None:
            found = ", ".join(
                f"{name} #{b.rank} ({b.score:.3f})"
                for name, b in sorted(hit.explain.branches.items())
            )
            print(f"    found by: {found}")
        if hit.neighbors is not None:
            for text in hit.neighbors["before"]:
                print("    ... " + _clip(text, 120).replace("\n", " "))
        print("    " + _clip(_bracket(hit), 400).replace("\n", "\n    "))
        if hit.neighbors is not None:
            for text in hit.neighbors["after"]:
                print("    ... " + _clip(text, 120).replace("\n", " "))
    return 0


def _doctor(args: argparse.Namespace) -> int:
    import dataclasses

    from .retriever import Retriever

    with Retriever(args.db, collection=args.collection, create=False) as r:
        report = r.doctor(repair=args.repair)
    data = dataclasses.asdict(report)
    data["ok"] = report.ok
    if args.json:
        print(json.dumps(data, indent=2))
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


def _bracket(hit: Any) -> str:
    """The hit's text with highlighted matches in [brackets]."""
    if not hit.matches:
        return str(hit.text)
    out, last = [], 0
    for m in hit.matches:
        out += [hit.text[last : m.start], "[", hit.text[m.start : m.end], "]"]
        last = m.end
    out.append(hit.text[last:])
    return "".join(out)


def _clip(text: str, n: int) -> str:
    return text if len(text) <= n else text[: n - 3] + "..."


def _eval(args: argparse.Namespace) -> int:
    from .evaluation import evaluate, load_beir, machine_info
    from .retriever import Retriever

    dataset = load_beir(args.beir_dir)
    modes = args.mode or ["lexical", "semantic", "hybrid"]
    cache = Path(args.cache) if args.cache else Path(".cache") / "remy-eval"
    store = cache / f"{dataset.name}-{dataset.fingerprint}"
    measures = (f"nDCG@{args.k}", f"R@{args.depth}")
    with Retriever(store, collection="beir") as r:
        report = r.add(dataset.documents(), progress=args.progress)
        results: dict[str, Any] = {}
        for mode in modes:

            def rank(q: str, mode: Any = mode) -> list[tuple[str, float]]:
                return r.rank(
                    q, mode=mode, candidates=args.candidates, fusion=args.fusion, alpha=args.alpha
                )

            results[mode] = evaluate(dataset, rank, depth=args.depth, measures=measures)
            if args.rerank:

                def reranked(q: str, mode: Any = mode) -> list[tuple[str, float]]:
                    # The top --rerank-depth chunks in reranked order, then the rest of
                    # the retrieval ranking (for recall at depth).
                    hits = r.search(
                        q,
                        mode=mode,
                        k=args.rerank_depth,
                        candidates=args.candidates,
                        fusion=args.fusion,
                        alpha=args.alpha,
                        rerank=args.rerank,
                        rerank_depth=args.rerank_depth,
                    )
                    head = [(h.id, h.score) for h in hits]
                    seen = {cid for cid, _ in head}
                    return head + [item for item in rank(q) if item[0] not in seen]

                results[f"{mode}+rerank"] = evaluate(
                    dataset, reranked, depth=args.depth, measures=measures
                )
    out = {
        "dataset": dataset.name,
        "queries": len(dataset.queries),
        "documents": len(dataset.corpus),
        "chunks_embedded": report.chunks_written,
        "modes": results,
        "machine": machine_info(),
    }
    if args.json:
        print(json.dumps(out, indent=2))
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


def _parse_json(text: str, flag: str) -> Any:
    try:
        return json.loads(text)
    except json.JSONDecodeError as exc:
        msg = f"{flag} is not valid JSON ({exc.msg}): {text!r}"
        raise InvalidFilterError(msg) from exc


if __name__ == "__main__":
    raise SystemExit(main())

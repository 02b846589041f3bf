"""``remy search QUERY``: ranked, cited chunks; with ``--documents``, hits grouped by
document (``--json`` prints the ``DocumentSearchResponse`` wire shape from the spec)."""

from __future__ import annotations

import argparse

from .. import SearchHit
from ..schema.hits import SearchExplain, pages_label
from .common import (
    add_rerank_flags,
    add_store_flags,
    clip,
    json_object,
    open_retriever,
    parse_json,
    print_json,
    rerank_model,
)

__all__ = ["add_document_search_flags", "add_parser", "document_search", "run"]


def add_parser(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Add the ``search`` command to the ``remy`` subcommands."""
    parser = subparsers.add_parser("search", help="search the collection")
    parser.add_argument("query")
    add_store_flags(parser)
    parser.add_argument(
        "--mode",
        default="hybrid",
        choices=["semantic", "lexical", "hybrid"],
        help="which branches run (lexical loads no model)",
    )
    parser.add_argument("--k", type=int, default=5, help="hits to return")
    parser.add_argument(
        "--where", default=None, help='metadata filter as JSON, e.g. \'{"tenant": "a"}\''
    )
    parser.add_argument("--explain", action="store_true", help="show which branch found each hit")
    parser.add_argument("--expand", type=int, default=0, metavar="N", help="N chunks of context")
    parser.add_argument("--highlight", action="store_true", help="bracket the matched terms")
    add_rerank_flags(parser)
    parser.add_argument("--json", action="store_true", help="emit SearchHits as wire JSON")
    add_document_search_flags(parser)
    parser.set_defaults(run=run)


def add_document_search_flags(parser: argparse.ArgumentParser) -> None:
    """Add ``--documents`` and its options to a parser that already has ``query``,
    ``--db``, ``--collection``, ``--mode``, ``--k``, ``--where``, ``--rerank`` and
    ``--json`` (the ``remy search`` parser)."""
    group = parser.add_argument_group("document search (--documents)")
    group.add_argument(
        "--documents",
        action="store_true",
        help="group hits by document (0-1 scores, --k documents)",
    )
    group.add_argument(
        "--chunk-threshold", type=float, default=0.0, metavar="X", help="minimum chunk score"
    )
    group.add_argument(
        "--document-threshold",
        type=float,
        default=0.0,
        metavar="X",
        help="minimum document score",
    )
    group.add_argument("--only-matching-chunks", action="store_true", help="no neighbouring chunks")
    group.add_argument("--full-docs", action="store_true", help="include the full text")
    group.add_argument("--summary", action="store_true", help="include a summary")


def run(args: argparse.Namespace) -> int:
    """Run ``remy search``: prints the hits (or their wire JSON); returns the exit code."""
    if args.documents:
        return document_search(args)
    where = parse_json(args.where, "--where") if args.where else None
    rerank = rerank_model(args)
    with open_retriever(args) as r:
        hits = r.search(
            args.query,
            mode=args.mode,
            k=args.k,
            where=where,
            explain=args.explain,
            expand=args.expand,
            highlight=args.highlight,
            rerank=rerank or False,
            rerank_depth=args.rerank_depth,
        )
    if args.json:
        print_json([h.to_dict() for h in hits])
        return 0
    if not hits:
        print("no results")
    for rank, hit in enumerate(hits, start=1):
        _print_hit(rank, hit)
    return 0


def _print_hit(rank: int, hit: SearchHit) -> None:
    c = hit.citation
    jump = ""
    if hit.retrieval_rank is not None:
        jump = f"  (retrieval rank {hit.retrieval_rank}, score {hit.retrieval_score:.4f})"
    print(f"[{rank}] score={hit.score:.4f}{jump}  {c.label()}  (chunk {c.chunk_index})")
    if hit.explain is not None:
        _print_explain(hit.explain)
    if hit.neighbors is not None:
        for text in hit.neighbors["before"]:
            print("    ... " + clip(text, 120).replace("\n", " "))
    print("    " + clip(_bracket(hit), 400).replace("\n", "\n    "))
    if hit.neighbors is not None:
        for text in hit.neighbors["after"]:
            print("    ... " + clip(text, 120).replace("\n", " "))


def _print_explain(explain: SearchExplain) -> None:
    """Which branch found the hit (rank, raw score, share of the fused score) and the
    query's words it matched, as typed, with the stem BM25 matched when it differs."""
    found = []
    for name, b in sorted(explain.branches.items()):
        share = "" if b.contribution is None else f", adds {b.contribution:.3f}"
        if b.contribution == 0.0 and explain.fused_score is not None:
            share += " (the lowest of its candidates: min-max scales it to 0)"
        found.append(f"{name} #{b.rank} (score {b.score:.3f}{share})")
    fused = "" if explain.fused_score is None else f"; fused {explain.fused_score:.3f}"
    print(f"    found by: {'; '.join(found)}{fused}")
    if explain.mode != "semantic":
        stems = explain.matched_stems or explain.matched_terms
        words = [
            word if word.lower() == stem else f"{word} (stem {stem})"
            for word, stem in zip(explain.matched_terms, stems)
        ]
        print(f"    matched words: {', '.join(words) or 'none'}")


def _bracket(hit: SearchHit) -> str:
    """The hit's text with highlighted matches in [brackets]."""
    if not hit.matches:
        return str(hit.text)
    out, last = [], 0
    for m in hit.matches:
        out += [hit.text[last : m.start], "[", hit.text[m.start : m.end], "]"]
        last = m.end
    out.append(hit.text[last:])
    return "".join(out)


def document_search(args: argparse.Namespace) -> int:
    """Run ``remy search --documents``: prints the document-grouped results, or with
    ``--json`` the ``DocumentSearchResponse`` wire JSON; returns the exit code."""
    where = json_object(getattr(args, "where", None), "--where")
    rerank = rerank_model(args) or False
    with open_retriever(args) as retriever:
        response = retriever.search_documents(
            args.query,
            limit=args.k,
            mode=args.mode,
            where=where,
            rerank=rerank,
            chunk_threshold=args.chunk_threshold,
            document_threshold=args.document_threshold,
            only_matching_chunks=args.only_matching_chunks,
            include_full_docs=args.full_docs,
            include_summary=args.summary,
        )
    if getattr(args, "json", False):
        print(response.to_json(indent=2))
        return 0
    if not response.results:
        print("no results")
    for rank, result in enumerate(response.results, start=1):
        title = result.title or result.document_id
        print(f"[{rank}] {result.score:.3f}  {title}  ({result.document_id})")
        if result.summary:
            print(f"    summary: {clip(result.summary, 300)}")
        for chunk in result.chunks:
            mark = "*" if chunk.is_relevant else " "
            label = pages_label(chunk.page, chunk.page_end)
            pages = "" if label is None else f"{label}  "
            body = clip(chunk.content.split("\n\n", 1)[-1], 200).replace("\n", " ")
            print(f"  {mark} {chunk.score:.3f}  {pages}{body}")
    print(f"{response.total} documents in {response.timing} ms")
    return 0

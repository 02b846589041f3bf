"""``remy memory add|update|search|history|forget`` and ``remy search --documents``.

Wired into the ``remy`` command by :mod:`remy_retriever.cli`:
:func:`add_memory_commands` adds the ``memory`` command (its handler is set as the
parser default ``handler``), :func:`add_document_search_flags` adds the document-search
flags to ``remy search`` and :func:`document_search` runs it. ``python -m
remy_retriever.memory.cli add "..."`` runs the memory commands on their own.

``--json`` prints the wire shapes: a memory search prints the ``MemorySearchResponse``, a
document search the ``DocumentSearchResponse`` (both from the spec), and ``add``,
``update``, ``forget`` and ``history`` print memories as ``Memory.to_dict()``.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Sequence
from typing import Any

from ..errors import CollectionNotFoundError, InvalidFilterError, InvalidInputError, RemyError

__all__ = [
    "add_document_search_flags",
    "add_memory_commands",
    "document_search",
    "main",
    "run_memory_command",
]

_DB_HELP = "embedded Chroma directory (default ./remy_data)"


def add_memory_commands(subparsers: Any) -> argparse.ArgumentParser:
    """Add the ``memory`` command (with ``add``, ``update``, ``search``, ``history`` and
    ``forget``) to an ``add_subparsers()`` object; returns its parser. Parsed arguments
    carry ``handler`` (:func:`run_memory_command`)."""
    mem = subparsers.add_parser("memory", help="versioned memories: add, update, search, history")
    sub = mem.add_subparsers(dest="memory_command", required=True)

    def common(parser: argparse.ArgumentParser) -> None:
        parser.add_argument("--db", default="./remy_data", help=_DB_HELP)
        parser.add_argument("--collection", default="memories", help="memory collection")
        parser.add_argument("--json", action="store_true", help="print the JSON wire shape")

    add = sub.add_parser("add", help="remember something new")
    add.add_argument("content")
    add.add_argument("--container", default=None, help="container tag (user, project...)")
    add.add_argument("--metadata", default=None, help='JSON object, e.g. \'{"topic": "tea"}\'')
    add.add_argument(
        "--document", action="append", default=None, metavar="ID", help="linked document id"
    )
    common(add)

    upd = sub.add_parser("update", help="write a new version of a memory")
    upd.add_argument("id")
    upd.add_argument("content")
    upd.add_argument("--metadata", default=None, help="JSON object (default: keep)")
    common(upd)

    se = sub.add_parser("search", help="search memories (and documents)")
    se.add_argument("query")
    se.add_argument(
        "--search-mode", default="memories", choices=["memories", "hybrid", "documents"]
    )
    se.add_argument("--mode", default="hybrid", choices=["semantic", "lexical", "hybrid"])
    se.add_argument("--limit", type=int, default=5)
    se.add_argument("--threshold", type=float, default=0.0, help="minimum similarity (0-1)")
    se.add_argument("--container", default=None, help="only this container tag")
    se.add_argument("--where", default=None, help="metadata filter as JSON")
    se.add_argument("--related", action="store_true", help="include parents and children")
    se.add_argument("--documents", action="store_true", help="include linked documents")
    se.add_argument(
        "--docs-collection",
        default="docs",
        help="document collection for hybrid/documents mode (default docs)",
    )
    se.add_argument("--rerank", nargs="?", const=True, default=False, metavar="MODEL")
    common(se)

    his = sub.add_parser("history", help="every version of a memory, oldest first")
    his.add_argument("id")
    common(his)

    fgt = sub.add_parser("forget", help="hide a memory from search (history is kept)")
    fgt.add_argument("id")
    common(fgt)

    mem.set_defaults(handler=run_memory_command)
    return mem  # type: ignore[no-any-return]


def run_memory_command(args: argparse.Namespace) -> int:
    """Run a parsed ``remy memory ...`` command; prints, returns the exit code."""
    from .store import MemoryStore

    command = args.memory_command
    linked = _linked_retriever(args) if command == "search" else None
    with MemoryStore(args.db, collection=args.collection, retriever=linked) as store:
        if command == "add":
            memory = store.add(
                args.content,
                metadata=_json_object(args.metadata, "--metadata"),
                container_tag=args.container,
                document_ids=args.document,
            )
            _print_memory(memory, args.json, "added")
        elif command == "update":
            memory = store.update(
                args.id, args.content, metadata=_json_object(args.metadata, "--metadata")
            )
            _print_memory(memory, args.json, f"updated {args.id} ->")
        elif command == "forget":
            _print_memory(store.forget(args.id), args.json, "forgot")
        elif command == "history":
            versions = store.history(args.id)
            if args.json:
                print(json.dumps([m.to_dict() for m in versions], ensure_ascii=False, indent=2))
            for m in [] if args.json else versions:
                state = " (forgotten)" if m.forgotten else ("" if m.latest else " (replaced)")
                print(f"v{m.version} {m.id} {m.updated_at}{state}")
                print("    " + m.content.replace("\n", "\n    "))
        else:
            include = {"relatedMemories": args.related, "documents": args.documents}
            response = store.search(
                args.query,
                search_mode=args.search_mode,
                mode=args.mode,
                limit=args.limit,
                threshold=args.threshold,
                include=include,
                container_tag=args.container,
                where=_json_object(args.where, "--where"),
                rerank=args.rerank,
            )
            if args.json:
                print(response.to_json(indent=2))
            else:
                _print_memory_results(response)
    return 0


def _linked_retriever(args: argparse.Namespace) -> Any:
    from ..retriever import Retriever

    try:
        return Retriever(args.db, collection=args.docs_collection, create=False)
    except CollectionNotFoundError:
        if args.search_mode != "memories":
            msg = (
                f"--search-mode {args.search_mode} searches documents, but {args.db!r} has no "
                f"collection {args.docs_collection!r}; ingest documents first (`remy ingest`) "
                "or pass --docs-collection"
            )
            raise InvalidInputError(msg) from None
        return None


def _print_memory(memory: Any, as_json: bool, verb: str) -> None:
    if as_json:
        print(json.dumps(memory.to_dict(), ensure_ascii=False, indent=2))
        return
    tag = f" [container {memory.container_tag}]" if memory.container_tag else ""
    print(f"{verb} {memory.id} (version {memory.version}){tag}")


def _print_memory_results(response: Any) -> None:
    if not response.results:
        print("no results")
    for rank, result in enumerate(response.results, start=1):
        if result.kind == "memory":
            print(
                f"[{rank}] memory {result.similarity:.3f}  {result.id}  v{result.version}  "
                f"updated {result.updated_at}"
            )
            print("    " + result.memory.replace("\n", "\n    "))
            context = result.context
            for entry in [] if context is None else context.parents:
                print(f"    <- {entry.relation} ({entry.version}): {_clip(entry.memory, 100)}")
            for entry in [] if context is None else context.children:
                print(f"    -> {entry.relation} (+{entry.version}): {_clip(entry.memory, 100)}")
        else:
            doc = result.documents[0] if result.documents else None
            title = (doc.title or doc.id) if doc is not None else result.id
            print(f"[{rank}] chunk {result.similarity:.3f}  {result.id}  ({title})")
            print("    " + _clip(result.chunk, 400).replace("\n", "\n    "))
        for doc in (result.documents or []) if result.kind == "memory" else []:
            print(f"    document: {doc.title or doc.id} ({doc.id})")
    print(f"{response.total} results in {response.timing} ms")


# -- remy search --documents -------------------------------------------------------------


def add_document_search_flags(parser: argparse.ArgumentParser) -> None:
    """Add ``--documents`` and its options to the ``remy search`` parser (which already
    has ``query``, ``--db``, ``--collection``, ``--mode``, ``--k``, ``--where``,
    ``--rerank`` and ``--json``)."""
    group = parser.add_argument_group("document search (--documents)")
    group.add_argument(
        "--documents",
        action="store_true",
        help="group hits by document (0-1 scores, --k documents)",
    )
    group.add_argument("--chunk-threshold", type=float, default=0.0, metavar="X")
    group.add_argument("--document-threshold", type=float, default=0.0, metavar="X")
    group.add_argument("--only-matching-chunks", action="store_true", help="no neighbouring chunks")
    group.add_argument("--full-docs", action="store_true", help="include the full text")
    group.add_argument("--summary", action="store_true", help="include a summary")


def document_search(args: argparse.Namespace) -> int:
    """Run ``remy search --documents``: prints the document-grouped results, or with
    ``--json`` the ``DocumentSearchResponse`` wire JSON."""
    from ..retriever import Retriever

    where = _json_object(getattr(args, "where", None), "--where")
    rerank = getattr(args, "rerank", None) or False
    with Retriever(args.db, collection=args.collection, create=False) as retriever:
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
            print(f"    summary: {_clip(result.summary, 300)}")
        for chunk in result.chunks:
            mark = "*" if chunk.is_relevant else " "
            body = _clip(chunk.content.split("\n\n", 1)[-1], 200).replace("\n", " ")
            print(f"  {mark} {chunk.score:.3f}  {body}")
    print(f"{response.total} documents in {response.timing} ms")
    return 0


# -- helpers -----------------------------------------------------------------------------


def _json_object(text: str | None, flag: str) -> Any:
    if text is None:
        return None
    try:
        value = json.loads(text)
    except json.JSONDecodeError as exc:
        msg = f"{flag} is not valid JSON ({exc.msg}): {text!r}"
        raise (InvalidFilterError if flag == "--where" else InvalidInputError)(msg) from exc
    if not isinstance(value, dict):
        msg = f'{flag} must be a JSON object like \'{{"key": "value"}}\', got {text!r}'
        raise (InvalidFilterError if flag == "--where" else InvalidInputError)(msg)
    return value


def _clip(text: str, n: int) -> str:
    return text if len(text) <= n else text[: n - 3] + "..."


def main(argv: Sequence[str] | None = None) -> int:
    """The memory commands on their own: ``python -m remy_retriever.memory.cli add ...``."""
    parser = argparse.ArgumentParser(prog="remy", description="remy memory commands")
    sub = parser.add_subparsers(dest="command", required=True)
    add_memory_commands(sub)
    args = parser.parse_args(["memory", *(sys.argv[1:] if argv is None else argv)])
    try:
        return int(args.handler(args))
    except RemyError as exc:
        print(f"remy: error: {exc}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    raise SystemExit(main())

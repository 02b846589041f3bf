"""``remy memory add|update|search|history|forget``: versioned memories.

``--json`` prints the wire shapes: ``search`` prints the ``MemorySearchResponse`` (from
the spec); ``add``, ``update``, ``forget`` and ``history`` print memories as
``Memory.to_dict()``.
"""

from __future__ import annotations

import argparse
from typing import Any

from .. import Memory
from ..errors import CollectionNotFoundError, InvalidInputError
from ..memory import MemoryStore
from ..retriever import Retriever
from .common import (
    add_rerank_flags,
    add_store_flags,
    clip,
    json_object,
    print_json,
    require_collection,
    rerank_model,
    store_client,
)

__all__ = ["add_parser", "run"]


def add_parser(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Add the ``memory`` command (with ``add``, ``update``, ``search``, ``history`` and
    ``forget``) to the ``remy`` subcommands."""
    mem = subparsers.add_parser("memory", help="versioned memories: add, update, search, history")
    sub = mem.add_subparsers(dest="memory_command", required=True)

    add = sub.add_parser("add", help="remember something new")
    add.add_argument("content")
    add.add_argument("--container", default=None, help="container tag (user, project...)")
    add.add_argument("--metadata", default=None, help='JSON object, e.g. \'{"topic": "tea"}\'')
    add.add_argument(
        "--document", action="append", default=None, metavar="ID", help="linked document id"
    )
    _memory_flags(add)

    upd = sub.add_parser("update", help="write a new version of a memory")
    upd.add_argument("id")
    upd.add_argument("content")
    upd.add_argument("--metadata", default=None, help="JSON object (default: keep)")
    _memory_flags(upd)

    se = sub.add_parser("search", help="search memories (and documents)")
    se.add_argument("query")
    se.add_argument(
        "--search-mode",
        default="memories",
        choices=["memories", "hybrid", "documents"],
        help="search memories, documents, or both",
    )
    se.add_argument(
        "--mode",
        default="hybrid",
        choices=["semantic", "lexical", "hybrid"],
        help="which retrieval branches run",
    )
    se.add_argument("--limit", type=int, default=5, help="results to return")
    se.add_argument("--threshold", type=float, default=0.0, help="minimum similarity (0-1)")
    se.add_argument("--container", default=None, help="only this container tag")
    se.add_argument("--where", default=None, help="metadata filter as JSON")
    se.add_argument("--related", action="store_true", help="include parents and children")
    se.add_argument("--documents", action="store_true", help="include linked documents")
    se.add_argument(
        "--docs-collection",
        default="docs",
        help="document collection for hybrid/documents mode",
    )
    add_rerank_flags(se, depth=False)
    _memory_flags(se)

    his = sub.add_parser("history", help="every version of a memory, oldest first")
    his.add_argument("id")
    _memory_flags(his)

    fgt = sub.add_parser("forget", help="hide a memory from search (history is kept)")
    fgt.add_argument("id")
    _memory_flags(fgt)

    mem.set_defaults(run=run)


def _memory_flags(parser: argparse.ArgumentParser) -> None:
    add_store_flags(parser, collection="memories", collection_help="memory collection")
    parser.add_argument("--json", action="store_true", help="print the JSON wire shape")


def run(args: argparse.Namespace) -> int:
    """Run a parsed ``remy memory ...`` command; prints, returns the exit code."""
    command = args.memory_command
    # The JSON flags first: a bad one must not leave a new store behind.
    metadata = json_object(getattr(args, "metadata", None), "--metadata")
    where = json_object(getattr(args, "where", None), "--where")
    rerank = rerank_model(args) if command == "search" else None
    path, client = store_client(args)
    if command != "add":  # only `add` creates the store and the collection
        require_collection(path, args.collection, client)
    linked = _linked_retriever(args, path, client) if command == "search" else None
    with MemoryStore(
        path if client is None else client,
        collection=args.collection,
        retriever=linked,
        embedder=args.embedder,
        embedder_backend=args.embedder_backend,
        lexical_path=args.lexical_path,
    ) as store:
        if command == "add":
            memory = store.add(
                args.content,
                metadata=metadata,
                container_tag=args.container,
                document_ids=args.document,
            )
            _print_memory(memory, args.json, "added")
        elif command == "update":
            memory = store.update(args.id, args.content, metadata=metadata)
            _print_memory(memory, args.json, f"updated {args.id} ->")
        elif command == "forget":
            _print_memory(store.forget(args.id), args.json, "forgot")
        elif command == "history":
            _print_history(store.history(args.id), args.json)
        else:
            _search(store, args, where, rerank)
    return 0


def _search(store: MemoryStore, args: argparse.Namespace, where: Any, rerank: str | None) -> None:
    include = {"relatedMemories": args.related, "documents": args.documents}
    response = store.search(
        args.query,
        search_mode=args.search_mode,
        mode=args.mode,
        limit=args.limit,
        threshold=args.threshold,
        include=include,
        container_tag=args.container,
        where=where,
        rerank=rerank or False,
    )
    if args.json:
        print(response.to_json(indent=2))
    else:
        _print_memory_results(response)


def _linked_retriever(args: argparse.Namespace, path: str | None, client: Any) -> Retriever | None:
    """The document collection a search may include (its BM25 index at the default
    place: ``--lexical-path`` is the memories'); ``None`` if there is none and the search
    is over memories only."""
    try:
        return Retriever(
            path,
            client=client,
            collection=args.docs_collection,
            create=False,
            embedder=args.embedder,
            embedder_backend=args.embedder_backend,
        )
    except CollectionNotFoundError:
        if args.search_mode != "memories":
            msg = (
                f"--search-mode {args.search_mode} searches documents, but "
                f"{path or args.server!r} has no collection {args.docs_collection!r}; ingest "
                "documents first (`remy ingest`) or pass --docs-collection"
            )
            raise InvalidInputError(msg) from None
        return None


def _print_memory(memory: Memory, as_json: bool, verb: str) -> None:
    if as_json:
        print_json(memory.to_dict())
        return
    tag = f" [container {memory.container_tag}]" if memory.container_tag else ""
    print(f"{verb} {memory.id} (version {memory.version}){tag}")


def _print_history(versions: list[Memory], as_json: bool) -> None:
    if as_json:
        print_json([m.to_dict() for m in versions])
        return
    for m in versions:
        state = " (forgotten)" if m.forgotten else ("" if m.latest else " (replaced)")
        print(f"v{m.version} {m.id} {m.updated_at}{state}")
        print("    " + m.content.replace("\n", "\n    "))


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
            # The wire's context versions are relative (-1: one step back); a person
            # reads the version numbers `remy memory history` shows.
            for entry in [] if context is None else context.parents:
                shown = f"v{result.version + entry.version}"
                print(f"    <- {entry.relation} {shown}: {clip(entry.memory, 100)}")
            for entry in [] if context is None else context.children:
                shown = f"v{result.version + entry.version}"
                print(f"    -> replaced by {shown}: {clip(entry.memory, 100)}")
            for related in [] if context is None else context.related:
                print(f"    ~ {related.relation}: {clip(related.memory, 100)}")
        else:
            doc = result.documents[0] if result.documents else None
            title = (doc.title or doc.id) if doc is not None else result.id
            print(f"[{rank}] chunk {result.similarity:.3f}  {result.id}  ({title})")
            print("    " + clip(result.chunk, 400).replace("\n", "\n    "))
        for doc in (result.documents or []) if result.kind == "memory" else []:
            print(f"    document: {doc.title or doc.id} ({doc.id})")
    print(f"{response.total} results in {response.timing} ms")

"""``remy mcp``: serve the collection's search and memories to any agent over the Model
Context Protocol (stdio by default; ``--transport streamable-http`` for HTTP).

The tools, their guards and the resources are described in
:mod:`remy_retriever.mcp_server`. This command checks the flags, opens the stores (a
read-only server creates nothing), then hands over to :func:`.mcp_server.server.serve`,
imported only now: the ``mcp`` SDK is the optional ``remy-retriever[mcp]`` extra.
"""

from __future__ import annotations

import argparse
import contextlib
import logging
import os
import sys
from typing import Any

from ..errors import CollectionNotFoundError, InvalidInputError
from ..loaders import MissingExtraError
from ..mcp_server.tools import Guards, RemyTools
from ..memory import MemoryStore
from ..memory.checks import check_tag
from .common import (
    add_reranker_flag,
    add_store_flags,
    open_retriever,
    require_collection,
    startup_reranker,
    store_client,
)

__all__ = ["add_parser", "run"]

_LOOPBACK = ("127.0.0.1", "localhost", "::1")


def add_parser(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Add the ``mcp`` command to the ``remy`` subcommands."""
    parser = subparsers.add_parser(
        "mcp", help="serve search and memories as MCP tools (for Claude, Cursor, agents...)"
    )
    add_store_flags(parser)
    parser.add_argument(
        "--memory-collection", default="memories", help="collection of the memories"
    )
    parser.add_argument(
        "--transport", default="stdio", choices=["stdio", "streamable-http"], help="default stdio"
    )
    parser.add_argument("--host", default="127.0.0.1", help="streamable-http: address to bind")
    parser.add_argument("--port", type=int, default=8000, help="streamable-http: port")
    parser.add_argument(
        "--read-only", action="store_true", help="offer only the search tools; create nothing"
    )
    parser.add_argument(
        "--container-tag",
        default=None,
        metavar="TAG",
        help="pin every memory and search call to this container tag",
    )
    parser.add_argument(
        "--allow-path",
        action="append",
        default=[],
        metavar="DIR",
        help="a folder add_documents may read (repeatable); without one, no add_documents",
    )
    add_reranker_flag(parser)
    parser.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    """Serve until the client disconnects (stdio) or the process is stopped (HTTP)."""
    guards = _guards(args)
    if not 0 < args.port < 65536:
        msg = f"--port {args.port} is not a TCP port; pass one between 1 and 65535"
        raise InvalidInputError(msg)
    try:
        # lazy: the mcp SDK is an optional extra (remy-retriever[mcp])
        from ..mcp_server.server import serve
    except ImportError as exc:
        msg = (
            f"remy mcp needs the MCP SDK, which is not installed ({exc}); install it with "
            "pip install 'remy-retriever[mcp]'"
        )
        raise MissingExtraError(msg) from exc
    logging.basicConfig(stream=sys.stderr, level=logging.WARNING, format="remy mcp: %(message)s")
    logging.getLogger("remy.mcp").setLevel(logging.INFO)
    reranker = startup_reranker(args)  # before any store is opened or created
    if args.transport == "streamable-http" and args.host not in _LOOPBACK:
        print(
            f"remy mcp: warning: serving on {args.host}, beyond this machine, without "
            "authentication; anyone who can reach it can use every tool",
            file=sys.stderr,
        )
    with contextlib.redirect_stdout(sys.stderr):  # stdout is the protocol's (stdio)
        documents = open_retriever(args, create=not args.read_only, reranker=reranker)
        memories = _memories(args, documents)
    try:
        tools = RemyTools(documents, memories, guards=guards)
        serve(tools, transport=args.transport, host=args.host, port=args.port)
    finally:
        if memories is not None:
            memories.close()
        documents.close()
    return 0


def _guards(args: argparse.Namespace) -> Guards:
    tag = None if args.container_tag is None else check_tag(args.container_tag)
    roots = []
    for folder in args.allow_path:
        real = os.path.realpath(folder)
        if not os.path.isdir(real):
            msg = f"--allow-path {folder!r} is not a folder; pass an existing directory"
            raise InvalidInputError(msg)
        roots.append(real)
    return Guards(read_only=args.read_only, container_tag=tag, allowed_roots=tuple(roots))


def _memories(args: argparse.Namespace, documents: Any) -> MemoryStore | None:
    """The memory store linked to ``documents``; ``None`` for a read-only server when the
    store has no memory collection (it would have to be created)."""
    path, client = store_client(args)
    if args.read_only:
        try:
            require_collection(path, args.memory_collection, client)
        except CollectionNotFoundError:
            return None
    return MemoryStore(
        path if client is None else client,
        collection=args.memory_collection,
        retriever=documents,
        embedder=args.embedder,
        embedder_backend=args.embedder_backend,
        reranker=documents.reranker,
    )

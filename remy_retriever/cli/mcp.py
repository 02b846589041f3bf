"""``remy mcp``: serve the collection's search and memories to any agent over the Model
Context Protocol (stdio by default; ``--transport streamable-http`` for HTTP).

Over HTTP the policy is ``remy serve``'s: without an API key (``--api-key``, or
``REMY_API_KEYS``: keys separated by spaces) the server listens on loopback only and
refuses another ``--host``; with keys, every request must send ``Authorization: Bearer
KEY``. Either way the listener of :mod:`.listener` (``remy serve``'s) refuses a foreign
``Host`` and a cross-site state-changing request, times out slow clients and caps the
connections.

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

from ..errors import InvalidInputError
from ..loaders import MissingExtraError
from ..mcp_server.tools import Guards, RemyTools
from ..memory.checks import check_tag
from .common import (
    add_api_key_flag,
    add_bm25_statistics_flag,
    add_reranker_flag,
    add_store_flags,
    api_key_specs,
    bm25_statistics,
    check_listener,
    check_port,
    check_port_free,
    open_linked_stores,
    plain_api_keys,
    startup_reranker,
)
from .listener import add_listener_flags, listen, policy_from_args

__all__ = ["add_parser", "run"]


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
    add_api_key_flag(parser, tags=False)
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
    add_listener_flags(parser, request_limits=False)
    add_bm25_statistics_flag(parser, boundary="with --container-tag")
    parser.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    """Serve until the client disconnects (stdio) or the process is stopped (HTTP)."""
    guards = _guards(args)
    check_port(args.port)
    keys = plain_api_keys(api_key_specs(args))
    policy = None
    if args.transport == "streamable-http":
        check_listener(args.host, keys=bool(keys))
        check_port_free(args.host, args.port, "remy mcp --transport streamable-http")
        policy = policy_from_args(args, host=args.host, keys=bool(keys))
    elif args.api_key:
        msg = "--api-key applies to --transport streamable-http; over stdio the client is local"
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
    with contextlib.redirect_stdout(sys.stderr):  # stdout is the protocol's (stdio)
        documents, memories = open_linked_stores(
            args,
            create=not args.read_only,
            reranker=reranker,
            statistics=bm25_statistics(args, boundary=guards.container_tag is not None),
        )
    if args.transport == "streamable-http":  # stdio's client starts us: it needs no line
        auth = f"{len(keys)} API key(s)" if keys else "no API key (loopback only)"
        url = f"http://{args.host}:{args.port}/mcp"
        print(f"remy mcp: streamable HTTP at {url} ({auth})", file=sys.stderr, flush=True)
    try:
        tools = RemyTools(documents, memories, guards=guards)
        serve(
            tools,
            transport=args.transport,
            host=args.host,
            port=args.port,
            api_keys=keys,
            listen=None
            if policy is None
            else lambda app: listen(
                app, host=args.host, port=args.port, policy=policy, log_level="warning"
            ),
        )
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

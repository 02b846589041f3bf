"""``remy serve``: the supermemory-compatible HTTP API (:mod:`remy_retriever.server`).

Needs the ``server`` extra (FastAPI, uvicorn, python-multipart), imported only when the
command runs. Without an API key (``--api-key``, or ``REMY_API_KEYS``: keys separated by
spaces) the server answers anyone who can reach it, so it then listens on loopback only
and refuses another ``--host``. ``--reranker PATH`` (else ``REMY_RERANK_MODEL``) is
loaded at start-up; one that cannot be loaded stops the server before it listens.
"""

from __future__ import annotations

import argparse
import ipaddress
import os

from ..errors import InvalidInputError
from .common import add_reranker_flag, add_store_flags, startup_reranker, store_client

__all__ = ["add_parser", "check_host", "run"]


def add_parser(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Add the ``serve`` command to the ``remy`` subcommands."""
    parser = subparsers.add_parser(
        "serve", help="serve a supermemory-compatible HTTP API (the server extra)"
    )
    add_store_flags(parser)
    parser.add_argument(
        "--memory-collection", default="memories", help="collection of the memories"
    )
    parser.add_argument("--host", default="127.0.0.1", help="address to listen on")
    parser.add_argument("--port", type=int, default=8000, help="port (default 8000)")
    parser.add_argument(
        "--api-key",
        action="append",
        default=None,
        metavar="KEY[:TAG,...]",
        help="accept this bearer key (repeatable); KEY:alice,bob binds it to those tags",
    )
    add_reranker_flag(parser)
    parser.add_argument(
        "--max-body-bytes", type=int, default=None, help="largest request body (16 MiB)"
    )
    parser.add_argument(
        "--log-level",
        default="info",
        choices=["debug", "info", "warning"],
        help="uvicorn's log level (request lines at info)",
    )
    parser.set_defaults(run=run)


def check_host(host: str, *, keys: bool) -> str:
    """``host``, if it may be served: any address with API keys, loopback without."""
    if keys:
        return host
    try:
        loopback = host == "localhost" or ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        loopback = False
    if not loopback:
        msg = (
            f"--host {host} is reachable from other machines, and no API key is set: anyone "
            "could read and change the store. Add --api-key KEY (or set REMY_API_KEYS), or "
            "serve on 127.0.0.1"
        )
        raise InvalidInputError(msg)
    return host


def run(args: argparse.Namespace) -> int:
    """Run ``remy serve`` until interrupted."""
    try:
        # lazy: FastAPI and uvicorn are the optional `server` extra.
        import uvicorn

        # lazy: the server package imports FastAPI.
        from ..server import DEFAULT_MAX_BODY_BYTES, KeyRing, Service, create_app, parse_api_key
    except ImportError as exc:
        msg = (
            f"remy serve needs the server extra ({exc.name} is missing): "
            "pip install 'remy-retriever[server]'"
        )
        raise InvalidInputError(msg) from None
    # lazy: the engine and the memory store load the embedding model.
    from ..memory import MemoryStore
    from ..retriever import Retriever

    specs = [*(args.api_key or []), *os.environ.get("REMY_API_KEYS", "").split()]
    keys = KeyRing(parse_api_key(s) for s in specs)
    host = check_host(args.host, keys=keys.required)
    if not 0 < args.port < 65536:
        msg = f"--port must be 1-65535, got {args.port}"
        raise InvalidInputError(msg)
    limit = DEFAULT_MAX_BODY_BYTES if args.max_body_bytes is None else args.max_body_bytes
    if limit < 1024:
        msg = f"--max-body-bytes must be at least 1024, got {limit}"
        raise InvalidInputError(msg)
    reranker = startup_reranker(args)
    path, client = store_client(args)
    retriever = Retriever(
        path,
        client=client,
        collection=args.collection,
        embedder=args.embedder,
        embedder_backend=args.embedder_backend,
        lexical_path=args.lexical_path,
        reranker=reranker,
    )
    memories = MemoryStore(
        path if client is None else client,
        collection=args.memory_collection,
        retriever=retriever,
        reranker=reranker,
    )
    app = create_app(Service(retriever, memories), keys, max_body_bytes=limit)
    where = f"http://{host}:{args.port}"
    auth = f"{len(specs)} API key(s)" if specs else "no API key (loopback only)"
    print(f"remy serve: {where} ({auth}); OpenAPI at {where}/openapi.json", flush=True)
    try:
        uvicorn.run(app, host=host, port=args.port, log_level=args.log_level)
    finally:
        memories.close()
        retriever.close()
    return 0

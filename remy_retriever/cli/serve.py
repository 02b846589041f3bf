"""``remy serve``: the supermemory-compatible HTTP API (:mod:`remy_retriever.http_api`).

Needs the ``server`` extra (FastAPI, uvicorn, python-multipart), imported only when the
command runs. Without an API key (``--api-key``, or ``REMY_API_KEYS``: keys separated by
spaces) the server answers anyone who can reach it, so it then listens on loopback only
and refuses another ``--host``. ``--reranker PATH`` (else ``REMY_RERANK_MODEL``) is
loaded at start-up; one that cannot be loaded stops the server before it listens.

The listener (:mod:`.listener`, shared with ``remy mcp``) refuses a foreign ``Host`` and a
state-changing request from another web origin, times out slow headers and bodies, caps
connections, and bounds the requests in flight, per key and in all.

With a key bound to tags, BM25 statistics are counted inside each search's scope
(``--bm25-statistics filter``, the default then), so a tenant's scores do not move with
another tenant's writes.
"""

from __future__ import annotations

import argparse
from pathlib import Path

from ..errors import InvalidInputError
from ..loaders import ParserPool
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
    startup_reranker,
)
from .listener import add_listener_flags, listen, policy_from_args
from .parsing import add_parse_flags, parse_limits

__all__ = ["add_eval_report_flag", "add_parser", "check_host", "eval_report", "run"]


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
    add_api_key_flag(parser, tags=True)
    add_reranker_flag(parser)
    add_bm25_statistics_flag(parser, boundary="when an --api-key is bound to tags")
    parser.add_argument(
        "--max-body-bytes", type=int, default=None, help="largest request body (16 MiB)"
    )
    add_parse_flags(parser)
    parser.add_argument(
        "--parse-workers",
        type=int,
        default=2,
        metavar="N",
        help="processes that parse uploads (default %(default)s)",
    )
    parser.add_argument(
        "--parse-queue",
        type=int,
        default=8,
        metavar="N",
        help="uploads that may wait for a parsing process; one more gets 503 (default %(default)s)",
    )
    parser.add_argument(
        "--log-level",
        default="info",
        choices=["debug", "info", "warning"],
        help="uvicorn's log level (request lines at info)",
    )
    add_eval_report_flag(parser)
    add_listener_flags(parser, request_limits=True)
    parser.set_defaults(run=run)


def add_eval_report_flag(parser: argparse.ArgumentParser) -> None:
    """``--eval-report FILE``: the report ``/ui/eval`` shows."""
    parser.add_argument(
        "--eval-report",
        default=None,
        metavar="FILE",
        help="an HTML report of `remy eval --html` for the inspector's /ui/eval view",
    )


def check_host(host: str, *, keys: bool) -> str:
    """``host``, if it may be served: any address with API keys, loopback without (the
    one policy of both servers, :func:`.common.check_listener`)."""
    return check_listener(host, keys=keys)


def eval_report(path: str | None) -> Path | None:
    """``--eval-report``'s file, which must exist (it is read when /ui/eval opens)."""
    if path is None:
        return None
    found = Path(path)
    if not found.is_file():
        msg = f"--eval-report {path!r} is not a file; write one with `remy eval ... --html FILE`"
        raise InvalidInputError(msg)
    return found


def run(args: argparse.Namespace) -> int:
    """Run ``remy serve`` until interrupted."""
    try:
        # lazy: FastAPI and uvicorn are the optional `server` extra.
        import uvicorn  # noqa: F401 - only to say what is missing, before a store opens

        # lazy: the server package imports FastAPI.
        from ..http_api import DEFAULT_MAX_BODY_BYTES, KeyRing, Service, create_app, parse_api_key
    except ImportError as exc:
        msg = (
            f"remy serve needs the server extra ({exc.name} is missing): "
            "pip install 'remy-retriever[server]'"
        )
        raise InvalidInputError(msg) from None
    specs = api_key_specs(args)
    parsed = [parse_api_key(s) for s in specs]
    keys = KeyRing(parsed)
    host = check_listener(args.host, keys=keys.required)
    check_port(args.port)
    check_port_free(host, args.port, "remy serve")
    policy = policy_from_args(args, host=host, keys=keys.required)
    limit = DEFAULT_MAX_BODY_BYTES if args.max_body_bytes is None else args.max_body_bytes
    if limit < 1024:
        msg = f"--max-body-bytes must be at least 1024, got {limit}"
        raise InvalidInputError(msg)
    limits = parse_limits(args)
    report = eval_report(args.eval_report)
    parsers = ParserPool(workers=args.parse_workers, queue=args.parse_queue)
    reranker = startup_reranker(args)  # before any store is opened or created
    bound = any(key.tags is not None for key in parsed)
    statistics = bm25_statistics(args, boundary=bound)
    retriever, memories = open_linked_stores(
        args, create=True, reranker=reranker, statistics=statistics
    )
    assert memories is not None  # created
    app = create_app(
        Service(retriever, memories),
        keys,
        max_body_bytes=limit,
        parser=parsers,
        parse_limits=limits,
        eval_report=report,
    )
    where = f"http://{host}:{args.port}"
    auth = f"{len(specs)} API key(s)" if specs else "no API key (loopback only)"
    print(
        f"remy serve: {where} ({auth}); OpenAPI at {where}/openapi.json; inspector at {where}/ui/",
        flush=True,
    )
    try:
        listen(app, host=host, port=args.port, policy=policy, log_level=args.log_level)
    finally:
        parsers.close()
        memories.close()
        retriever.close()
    return 0

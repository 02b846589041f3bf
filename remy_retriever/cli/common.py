"""What several ``remy`` commands share: the store flags, opening a store without creating
it, JSON flag values, output helpers and the escaping of human-readable output."""

from __future__ import annotations

import argparse
import errno
import ipaddress
import json
import logging
import os
import re
import socket
import sys
from typing import TYPE_CHECKING, Any, TextIO

import chromadb

from ..errors import (
    CollectionNotFoundError,
    InvalidFilterError,
    InvalidInputError,
    RerankerUnavailableError,
    ServerUnavailableError,
)
from ..models.embeddings import BACKENDS as EMBEDDER_BACKENDS
from ..models.rerankers import DEFAULT_RERANKER, CrossEncoderReranker, Reranker, local_model
from ..retriever import Retriever, list_collections
from ..text.analyzers import ANALYZER_NAMES

if TYPE_CHECKING:
    from ..memory import MemoryStore

__all__ = [
    "API_KEYS_ENV",
    "DB_HELP",
    "EMBEDDER_HELP",
    "RERANK_ENV",
    "TerminalWriter",
    "add_api_key_flag",
    "add_embedder_flag",
    "add_rerank_flags",
    "add_reranker_flag",
    "add_store_flags",
    "api_key_specs",
    "check_listener",
    "check_port",
    "clip",
    "json_object",
    "open_linked_stores",
    "open_retriever",
    "parse_json",
    "parse_server",
    "plain_api_keys",
    "print_json",
    "require_collection",
    "rerank_model",
    "show_model_loads",
    "startup_reranker",
    "store_client",
    "terminal_safe",
]

DB_HELP = "embedded Chroma directory (default ./remy_data)"
PROGRESS_HELP = "show progress bars (default: on a terminal)"
SERVER_HELP = "a Chroma server (`chroma run`) instead of --db, e.g. localhost:8000"
LEXICAL_HELP = (
    "directory of the BM25 index (default: inside --db; with --server, a cache directory "
    "named after the collection's id)"
)
EMBEDDER_HELP = (
    "sentence-transformers model name or local model directory to embed with (default: "
    "the model the collection records; needed for one built with a custom embedder)"
)
ANALYZER_HELP = (
    "lexical analyser of a new collection: english, another Snowball language (german, "
    "french, ...), cjk, code or simple (default: what the collection records; another "
    "needs --reanalyze)"
)
REANALYZE_HELP = "re-index the BM25 index with --analyzer and record it in the collection"

BACKEND_HELP = (
    "how the model runs: torch, onnx (ONNX Runtime fp32, torch's vectors) or onnx-int8 "
    "(int8 weights: faster, a different embedder) (default: what the collection records; "
    "a new one: onnx-int8 when remy-retriever[onnx] is installed, else torch)"
)

#: The environment variable naming the cross-encoder for ``--rerank`` (and the one
#: ``remy serve`` and ``remy mcp`` load at start-up when ``--reranker`` is not given).
RERANK_ENV = "REMY_RERANK_MODEL"
#: How to give ``remy search``, ``remy eval`` and ``remy memory search`` a cross-encoder.
RERANK_FIX = f"pass --rerank-model PATH (a local cross-encoder directory) or set {RERANK_ENV}=PATH"

#: What a terminal could act on: C0 controls but tab and newline, DEL, C1 controls (ESC,
#: CSI and OSC sequences start here), bidirectional overrides and isolates (they reorder
#: the text shown), and lone surrogates (not encodable; they would crash the print).
_UNSAFE = re.compile(
    "[\x00-\x08\x0b-\x1f\x7f-\x9f\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069\ud800-\udfff]"
)


def terminal_safe(text: str) -> str:
    """``text`` with every character a terminal could act on written as a visible escape
    (``\\x1b``, ``\\u202e``); tabs and newlines stay."""
    return _UNSAFE.sub(_escape, text)


def _escape(match: re.Match[str]) -> str:
    code = ord(match.group())
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}"


class TerminalWriter:
    """A stream that writes :func:`terminal_safe` text to ``target``: every command's
    human-readable output goes through one (``--json`` output does not: it stays exact)."""

    def __init__(self, target: TextIO) -> None:
        self._target = target

    def write(self, text: str) -> int:
        self._target.write(terminal_safe(text))
        return len(text)

    def flush(self) -> None:
        self._target.flush()

    def __getattr__(self, name: str) -> Any:  # encoding, isatty(), fileno() ...
        return getattr(self._target, name)


def add_store_flags(
    parser: argparse.ArgumentParser, *, collection: str = "docs", collection_help: str | None = None
) -> None:
    """Add ``--db``, ``--server``, ``--lexical-path``, ``--collection`` (default
    ``collection``), ``--embedder`` and ``--analyzer``."""
    parser.add_argument("--db", default=None, help=DB_HELP)
    parser.add_argument("--server", default=None, metavar="HOST:PORT", help=SERVER_HELP)
    parser.add_argument("--lexical-path", default=None, metavar="DIR", help=LEXICAL_HELP)
    parser.add_argument(
        "--collection", default=collection, help=collection_help or "the collection to use"
    )
    add_embedder_flag(parser)
    parser.add_argument(
        "--analyzer", default=None, choices=ANALYZER_NAMES, metavar="NAME", help=ANALYZER_HELP
    )
    parser.add_argument("--reanalyze", action="store_true", help=REANALYZE_HELP)


def parse_server(value: str) -> tuple[str, int]:
    """``HOST:PORT`` (``[::1]:8000`` for IPv6; ``HOST`` alone: port 8000)."""
    host, sep, port = value.rpartition(":")
    if not sep or "]" in port:
        host, port = value, "8000"
    host = host.strip("[]")
    if not host or not port.isdigit() or not 0 < int(port) < 65536:
        msg = f"--server {value!r} is not HOST:PORT; pass e.g. --server localhost:8000"
        raise InvalidInputError(msg)
    return host, int(port)


def store_client(args: argparse.Namespace) -> tuple[str | None, Any]:
    """``(path, client)`` for the store flags: ``--db`` (default ``./remy_data``), or a
    ``chromadb.HttpClient`` for ``--server`` (both given: an error)."""
    server = getattr(args, "server", None)
    if server is None:
        return args.db or "./remy_data", None
    if args.db is not None:
        msg = f"pass --db ({args.db!r}) or --server ({server!r}), not both"
        raise InvalidInputError(msg)
    host, port = parse_server(server)
    try:
        return None, chromadb.HttpClient(host=host, port=port)
    except Exception as exc:
        msg = (
            f"cannot reach the Chroma server at {host}:{port} ({exc}); start it with "
            f"`chroma run --host {host} --port {port}` or fix --server"
        )
        raise ServerUnavailableError(msg) from exc


def add_embedder_flag(parser: argparse.ArgumentParser) -> None:
    """Add ``--embedder NAME_OR_PATH`` and ``--embedder-backend`` (default: what the
    collection records)."""
    parser.add_argument("--embedder", default=None, metavar="NAME_OR_PATH", help=EMBEDDER_HELP)
    parser.add_argument(
        "--embedder-backend", default=None, choices=EMBEDDER_BACKENDS, help=BACKEND_HELP
    )


def require_collection(db: str | None, collection: str, client: Any = None) -> None:
    """Raise :class:`CollectionNotFoundError` unless the embedded store ``db`` (or the
    server ``client``) exists and has ``collection``, naming the collections it does
    have. Creates nothing."""
    where = repr(db) if db is not None else "on the server"
    names = list_collections(db, client=client)
    if collection in names:
        return
    if names:
        have = f"it has {', '.join(map(repr, names[:20]))}{' ...' if len(names) > 20 else ''}"
        fix = "pass --collection with one of them"
    else:
        have = "it has no collections yet"
        fix = "add documents first (`remy ingest PATH` with the same store flags)"
    msg = f"no collection {collection!r} in the remy store {where}; {have}: {fix}"
    raise CollectionNotFoundError(msg)


def open_retriever(
    args: argparse.Namespace,
    *,
    collection: str | None = None,
    create: bool = False,
    reranker: Reranker | None = None,
) -> Retriever:
    """The store's (``--db`` or ``--server``, with ``--lexical-path``) ``collection``
    (default ``--collection``) with ``--embedder``. Unless ``create`` (``remy ingest``),
    nothing is created: a missing store or collection raises
    :class:`CollectionNotFoundError` saying what exists."""
    name = args.collection if collection is None else collection
    path, client = store_client(args)
    if not create:
        require_collection(path, name, client)
    return Retriever(
        path,
        client=client,
        collection=name,
        create=create,
        embedder=getattr(args, "embedder", None),
        embedder_backend=getattr(args, "embedder_backend", None),
        lexical_path=getattr(args, "lexical_path", None),
        analyzer=getattr(args, "analyzer", None),
        reanalyze=getattr(args, "reanalyze", False),
        reranker=reranker,
    )


def add_rerank_flags(parser: argparse.ArgumentParser, *, depth: bool = True) -> None:
    """Add ``--rerank [MODEL]``, ``--rerank-model PATH`` and (``depth``) ``--rerank-depth``
    (``remy search``, ``remy eval``, ``remy memory search``); :func:`rerank_model` reads
    them."""
    parser.add_argument(
        "--rerank",
        nargs="?",
        const=True,
        default=None,
        metavar="MODEL",
        help=f"rerank with a cross-encoder: MODEL, else --rerank-model, else ${RERANK_ENV}",
    )
    parser.add_argument(
        "--rerank-model",
        default=None,
        metavar="PATH",
        help="directory of a cross-encoder (sentence-transformers CrossEncoder); implies --rerank",
    )
    if depth:
        parser.add_argument("--rerank-depth", type=int, default=30, help="candidates to rerank")


def rerank_model(args: argparse.Namespace) -> str | None:
    """The cross-encoder the rerank flags ask for, as a local directory (``None``: no
    reranking). ``--rerank MODEL``, else ``--rerank-model``, else ``$REMY_RERANK_MODEL``,
    else the default model if it is in the Hugging Face cache. The CLI never downloads a
    model: when none is on this machine it raises
    :class:`~remy_retriever.errors.RerankerUnavailableError` at once (the engine's rule,
    :func:`~remy_retriever.models.rerankers.local_model`, with the CLI's fix), before a store is
    opened or torch is imported."""
    flag = getattr(args, "rerank", None)
    chosen = getattr(args, "rerank_model", None)
    if isinstance(flag, str):
        given = flag
    elif chosen is not None:
        given = chosen
    elif flag:
        given = os.environ.get(RERANK_ENV) or DEFAULT_RERANKER
    else:
        return None
    try:
        return local_model(given)
    except RerankerUnavailableError as exc:
        raise exc.for_door(RERANK_FIX) from None


def add_reranker_flag(parser: argparse.ArgumentParser) -> None:
    """Add ``--reranker PATH`` (``remy serve``, ``remy mcp``): the cross-encoder loaded
    at start-up for ``rerank: true`` (:func:`startup_reranker`)."""
    parser.add_argument(
        "--reranker",
        default=None,
        metavar="PATH",
        help=(
            "local cross-encoder directory (or a model in the Hugging Face cache) that "
            f"rerank=true uses, loaded at start-up (default: ${RERANK_ENV}; neither: the "
            f"default {DEFAULT_RERANKER} if it is in the Hugging Face cache). Never downloaded"
        ),
    )


def startup_reranker(args: argparse.Namespace) -> CrossEncoderReranker | None:
    """The cross-encoder a server process loads at start-up: ``--reranker``, else
    ``$REMY_RERANK_MODEL``, else ``None`` (``rerank: true`` then uses the default model
    if it is in the Hugging Face cache, and fails naming the fix if not). Loaded now, so
    a server never starts without the reranker it was given: one that cannot be loaded
    raises :class:`~remy_retriever.errors.RerankerUnavailableError` naming it and the fix.
    Each load is logged on stderr (``remy: loaded reranker model PATH``)."""
    flag = getattr(args, "reranker", None)
    given = flag if flag is not None else os.environ.get(RERANK_ENV) or None
    show_model_loads()
    if given is None:
        return None
    source = "--reranker" if flag is not None else f"${RERANK_ENV}"
    try:
        return CrossEncoderReranker.shared(given).load()
    except RerankerUnavailableError as exc:
        fix = f"{source} must name a local cross-encoder directory: pass --reranker PATH"
        raise exc.for_door(fix + f" or set {RERANK_ENV}=PATH") from None


class _Stderr(logging.Handler):
    """Prints records on the ``sys.stderr`` of the moment, as ``remy: MESSAGE``."""

    def emit(self, record: logging.LogRecord) -> None:
        print(f"remy: {record.getMessage()}", file=sys.stderr, flush=True)


def show_model_loads() -> None:
    """Show the ``remy.rerank`` logger's INFO lines (each model load) on stderr, unless
    a handler of the root logger (``remy mcp``'s) already shows them."""
    logger = logging.getLogger("remy.rerank")
    logger.setLevel(logging.INFO)
    if not logging.getLogger().handlers and not any(
        isinstance(h, _Stderr) for h in logger.handlers
    ):
        logger.addHandler(_Stderr())


def parse_json(text: str, flag: str) -> Any:
    """``text`` parsed as any JSON value; raises :class:`InvalidFilterError` naming ``flag``
    if it is not JSON or nests too deeply to parse (``remy search --where``)."""
    return _loads(text, flag, InvalidFilterError)


def json_object(text: str | None, flag: str) -> Any:
    """``text`` parsed as a JSON object (``None`` stays ``None``). Not JSON, or not an
    object: :class:`InvalidFilterError` for ``--where``, else :class:`InvalidInputError`."""
    if text is None:
        return None
    error = InvalidFilterError if flag == "--where" else InvalidInputError
    value = _loads(text, flag, error)
    if not isinstance(value, dict):
        msg = f'{flag} must be a JSON object like \'{{"key": "value"}}\', got {text!r:.200}'
        raise error(msg)
    return value


def _loads(text: str, flag: str, error: type[InvalidInputError]) -> Any:
    try:
        return json.loads(text)
    except json.JSONDecodeError as exc:
        msg = f"{flag} is not valid JSON ({exc.msg}): {text!r:.200}"
        raise error(msg) from exc
    except RecursionError:  # json.loads recurses per nesting level
        msg = f"{flag} nests too deeply to parse ({len(text)} characters); flatten it"
        raise error(msg) from None


def print_json(value: Any, *, ascii_only: bool = False) -> None:
    """Print ``value`` as indented JSON; ``ascii_only`` escapes non-ASCII characters
    (``remy doctor`` and ``remy eval`` print that way, the other commands do not)."""
    print(json.dumps(value, ensure_ascii=ascii_only, indent=2))


def clip(text: str, n: int) -> str:
    """``text`` cut to at most ``n`` characters, ending in ``...`` if it was cut."""
    return text if len(text) <= n else text[: n - 3] + "..."


# -- what `remy serve` and `remy mcp` share: the listener policy, keys, the stores -------

#: The environment variable holding API keys (separated by spaces) for both servers.
API_KEYS_ENV = "REMY_API_KEYS"
_API_KEY = re.compile(r"[\x21-\x7e]{16,256}")


def add_api_key_flag(parser: argparse.ArgumentParser, *, tags: bool) -> None:
    """Add ``--api-key`` (repeatable; ``tags``: ``KEY:tag1,tag2`` binds a key to tags)."""
    parser.add_argument(
        "--api-key",
        action="append",
        default=None,
        metavar="KEY[:TAG,...]" if tags else "KEY",
        help="accept this bearer key (repeatable); KEY:alice,bob binds it to those tags"
        if tags
        else f"accept this bearer key over HTTP (repeatable; or set {API_KEYS_ENV})",
    )


def add_bm25_statistics_flag(parser: argparse.ArgumentParser, *, boundary: str) -> None:
    """Add ``--bm25-statistics`` (``Retriever(bm25_statistics=...)`` for the whole store);
    ``boundary`` says what makes the default ``filter``."""
    parser.add_argument(
        "--bm25-statistics",
        default=None,
        choices=["collection", "filter"],
        help="BM25 statistics: 'filter' counts them inside each search's scope, so one "
        "tenant's scores do not move with another's writes; 'collection' shares them "
        f"(default: filter {boundary}, else collection)",
    )


def bm25_statistics(args: argparse.Namespace, *, boundary: bool) -> str:
    """The ``bm25_statistics`` to open the stores with: ``--bm25-statistics``, else
    ``filter`` when the server enforces a tenant boundary, else ``collection``."""
    chosen = getattr(args, "bm25_statistics", None)
    if isinstance(chosen, str):
        return chosen
    return "filter" if boundary else "collection"


def api_key_specs(args: argparse.Namespace) -> list[str]:
    """The keys given by ``--api-key`` and :data:`API_KEYS_ENV`, in that order."""
    return [*(getattr(args, "api_key", None) or []), *os.environ.get(API_KEYS_ENV, "").split()]


def plain_api_keys(specs: list[str]) -> list[str]:
    """Keys without tag bindings (``remy mcp``: its tag is ``--container-tag``), checked
    as ``remy serve`` checks its keys: 16-256 printable ASCII characters, no ``:``."""
    for spec in specs:
        if ":" in spec:
            msg = (
                "remy mcp takes plain API keys (KEY, without :TAGS); pin the server's "
                "container tag with --container-tag instead"
            )
            raise InvalidInputError(msg)
        if not _API_KEY.fullmatch(spec):
            msg = (
                "an API key must be 16-256 printable ASCII characters without spaces or ':' "
                "(e.g. from `python -c 'import secrets; print(secrets.token_urlsafe(32))'`); "
                f"got one of {len(spec)} characters"
            )
            raise InvalidInputError(msg)
    return specs


def check_listener(host: str, *, keys: bool) -> str:
    """``host``, if an HTTP server may listen there: any address with API keys, loopback
    only without (``remy serve`` and ``remy mcp --transport streamable-http`` alike)."""
    if keys:
        return host
    try:
        loopback = host == "localhost" or ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        loopback = False
    if not loopback:
        msg = (
            f"--host {host} is reachable from other machines, and no API key is set: anyone "
            f"could read and change the store. Add --api-key KEY (or set {API_KEYS_ENV}), or "
            "serve on 127.0.0.1"
        )
        raise InvalidInputError(msg)
    return host


def check_port(port: int) -> int:
    """``port`` if it is a TCP port."""
    if not 0 < port < 65536:
        msg = f"--port {port} is not a TCP port; pass one between 1 and 65535"
        raise InvalidInputError(msg)
    return port


def check_port_free(host: str, port: int, command: str) -> None:
    """Refuse a port another program listens on, before anything is opened or printed,
    naming the flag that picks another (uvicorn's own message suggests nothing)."""
    family = socket.AF_INET6 if ":" in host.strip("[]") else socket.AF_INET
    with socket.socket(family, socket.SOCK_STREAM) as probe:
        probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)  # as uvicorn binds
        try:
            probe.bind((host.strip("[]"), port))
        except OSError as exc:
            if exc.errno != errno.EADDRINUSE:
                return  # uvicorn reports anything else itself
            msg = (
                f"port {port} on {host} is already in use (another server is listening "
                f"there); stop it, or pick a free port: {command} --port {port + 1}"
            )
            raise InvalidInputError(msg) from None


def open_linked_stores(
    args: argparse.Namespace,
    *,
    create: bool,
    reranker: Any = None,
    statistics: str = "collection",
) -> tuple[Retriever, MemoryStore | None]:
    """The document collection (the store flags) and the :class:`MemoryStore` of
    ``--memory-collection`` linked to it, sharing its embedder (or the one the memory
    collection records), both with ``reranker`` and ``bm25_statistics=statistics``.
    Unless ``create``, nothing is created:
    a missing document collection raises :class:`CollectionNotFoundError`, and a
    missing memory collection gives ``None``."""
    # lazy: the memory package is needed only by the two servers.
    from ..memory import MemoryStore

    path, client = store_client(args)
    if not create:
        require_collection(path, args.collection, client)
    retriever = Retriever(
        path,
        client=client,
        collection=args.collection,
        create=create,
        embedder=getattr(args, "embedder", None),
        embedder_backend=getattr(args, "embedder_backend", None),
        lexical_path=getattr(args, "lexical_path", None),
        analyzer=getattr(args, "analyzer", None),
        reanalyze=getattr(args, "reanalyze", False),
        reranker=reranker,
        bm25_statistics=statistics,
    )
    if not create:
        try:
            require_collection(path, args.memory_collection, client)
        except CollectionNotFoundError:
            return retriever, None
    memories = MemoryStore(
        path if client is None else client,
        collection=args.memory_collection,
        retriever=retriever,
        reranker=reranker,
        bm25_statistics=statistics,
    )
    return retriever, memories

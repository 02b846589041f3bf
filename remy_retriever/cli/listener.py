"""What every HTTP listener of ``remy`` does at its door (``remy serve``, ``remy mcp
--transport streamable-http``): browser-origin checks, connection hygiene and request
limits, set from one set of flags.

Browser-origin defences. A page the user opens can make the browser send requests to a
server on loopback: with DNS rebinding (``evil.example`` re-pointed at 127.0.0.1) it can
even read the answers, and a cross-site form can post without reading them. So:

- :class:`HostCheck`: the ``Host`` header must name this server (the loopback names,
  ``--host``, each ``--allowed-host``); anything else gets a 421. Hand-written rather
  than Starlette's ``TrustedHostMiddleware``, which answers a plain-text 400 that names
  neither the host nor the fix, and redirects ``www.`` names.
- :class:`OriginCheck`: a state-changing request (POST, PUT, PATCH, DELETE) from a
  browser page of another origin (its ``Origin`` header, else ``Sec-Fetch-Site:
  cross-site``) gets a 403, unless ``--cors-origin`` names that origin. Starlette has no
  such check: its ``CORSMiddleware`` only adds headers that let a page *read* answers,
  and a form post needs no CORS to be sent.
- CORS (Starlette's ``CORSMiddleware``) only for the ``--cors-origin`` origins; none by
  default.

Connection hygiene. uvicorn closes idle keep-alive connections but waits forever for a
request's headers and body, so a thousand half-sent requests hold a thousand file
descriptors. :func:`listen` runs uvicorn with a protocol (:func:`_timed_protocol`) that
answers 408 and closes a connection whose headers take longer than ``--header-timeout``
or whose body takes longer than ``--body-timeout``, and closes at once (503) a connection
over ``--max-connections``; the process's open-file limit is raised toward its hard limit
so that the cap sits below it. :class:`RequestLimits` (``remy serve``) runs at most
``--max-in-flight`` requests at a time, queues up to ``--max-queued`` more for at most
``--queue-timeout`` seconds (then 503, ``Retry-After``) and lets one API key hold at most
``--max-in-flight-per-key`` of them (then 429).

Every refusal is JSON, ``{"error": ..., "details": ...}``, as ``remy serve``'s errors are.
Starlette, anyio and uvicorn are imported only when a server starts.
"""

from __future__ import annotations

import argparse
import asyncio
import ipaddress
import json
import sys
from collections.abc import Awaitable, Callable, MutableMapping, Sequence
from dataclasses import dataclass
from typing import Any

from ..errors import InvalidInputError
from ..util.asgi import send_json_error

__all__ = [
    "HostCheck",
    "ListenerPolicy",
    "OriginCheck",
    "RequestLimits",
    "add_listener_flags",
    "guard",
    "listen",
    "policy_from_args",
    "raise_file_limit",
]

_Scope = MutableMapping[str, Any]
_Message = MutableMapping[str, Any]
_Receive = Callable[[], Awaitable[_Message]]
_Send = Callable[[_Message], Awaitable[None]]
_App = Callable[[_Scope, _Receive, _Send], Awaitable[None]]

#: The names a loopback server always answers to.
LOOPBACK_NAMES = ("127.0.0.1", "localhost", "::1")
#: The methods that change state: they need a same-origin (or configured) ``Origin``.
STATE_CHANGING = frozenset({"POST", "PUT", "PATCH", "DELETE"})
#: File descriptors kept free for the stores, the models and the logs, below the cap.
RESERVED_FILES = 256


@dataclass(frozen=True)
class ListenerPolicy:
    """How one HTTP listener treats browsers, connections and requests (the flags of
    :func:`add_listener_flags`)."""

    allowed_hosts: frozenset[str] | None  # None: any Host (--allowed-host '*')
    cors_origins: tuple[str, ...] = ()
    header_timeout: float = 10.0
    body_timeout: float = 30.0
    max_connections: int = 2048
    max_in_flight: int | None = None  # None: no request limits (remy mcp)
    max_in_flight_per_key: int = 16
    max_queued: int = 256
    queue_timeout: float = 10.0


def add_listener_flags(parser: argparse.ArgumentParser, *, request_limits: bool) -> None:
    """Add the listener flags: ``--allowed-host``, ``--cors-origin``, the timeouts and
    the connection cap; ``request_limits`` adds the in-flight and queue limits."""
    parser.add_argument(
        "--allowed-host",
        action="append",
        default=[],
        metavar="NAME",
        help="another name the Host header may carry (repeatable; '*': any, with API keys "
        "only); always allowed: 127.0.0.1, localhost, [::1] and --host",
    )
    parser.add_argument(
        "--cors-origin",
        action="append",
        default=[],
        metavar="ORIGIN",
        help="a browser origin (https://app.example) allowed to call this server, with "
        "CORS (repeatable; '*' with API keys only); default: none",
    )
    parser.add_argument(
        "--header-timeout",
        type=float,
        default=10.0,
        metavar="S",
        help="seconds a client has to send a request's headers, else 408 (default 10)",
    )
    parser.add_argument(
        "--body-timeout",
        type=float,
        default=30.0,
        metavar="S",
        help="seconds a client has to send a request's body, else 408 (default 30)",
    )
    parser.add_argument(
        "--max-connections",
        type=int,
        default=2048,
        metavar="N",
        help="open connections at most; more are closed with a 503 (default 2048, "
        "lowered to fit the open-file limit)",
    )
    if not request_limits:
        return
    parser.add_argument(
        "--max-in-flight",
        type=int,
        default=40,
        metavar="N",
        help="requests handled at a time; more wait in the queue (default 40)",
    )
    parser.add_argument(
        "--max-queued",
        type=int,
        default=256,
        metavar="N",
        help="requests waiting for a slot; more get a 503 with Retry-After (default 256)",
    )
    parser.add_argument(
        "--queue-timeout",
        type=float,
        default=10.0,
        metavar="S",
        help="seconds a request may wait for a slot, else 503 with Retry-After (default 10)",
    )
    parser.add_argument(
        "--max-in-flight-per-key",
        type=int,
        default=16,
        metavar="N",
        help="requests one API key may have handled or queued at a time; more get a 429 "
        "(default 16)",
    )


def policy_from_args(args: argparse.Namespace, *, host: str, keys: bool) -> ListenerPolicy:
    """The policy of ``args`` (the flags of :func:`add_listener_flags`) for a server on
    ``host``; ``keys``: whether it requires an API key ('*' values need one)."""
    names = [_host_name(n) for n in args.allowed_host]
    if any(not n for n in names):
        msg = "--allowed-host needs a host name or address, e.g. --allowed-host remy.lan"
        raise InvalidInputError(msg)
    origins = [o.rstrip("/").lower() for o in args.cors_origin]
    for flag, wildcard in (("--allowed-host", "*" in names), ("--cors-origin", "*" in origins)):
        if wildcard and not keys:
            msg = (
                f"{flag} '*' lets any web page the user opens drive a server without an "
                "API key; add --api-key KEY, or name the hosts and origins"
            )
            raise InvalidInputError(msg)
    for origin in origins:
        if origin != "*" and not origin.startswith(("http://", "https://")):
            msg = f"--cors-origin {origin!r} is not an origin; pass e.g. https://app.example"
            raise InvalidInputError(msg)
    for flag in ("header_timeout", "body_timeout", "queue_timeout"):
        if not getattr(args, flag, 1.0) > 0:
            msg = f"--{flag.replace('_', '-')} must be a positive number of seconds"
            raise InvalidInputError(msg)
    for flag in ("max_connections", "max_in_flight", "max_queued", "max_in_flight_per_key"):
        if getattr(args, flag, 1) < 1:
            msg = f"--{flag.replace('_', '-')} must be at least 1"
            raise InvalidInputError(msg)
    allowed = None if "*" in names else frozenset({*LOOPBACK_NAMES, _host_name(host), *names})
    return ListenerPolicy(
        allowed_hosts=allowed,
        cors_origins=tuple(origins),
        header_timeout=args.header_timeout,
        body_timeout=args.body_timeout,
        max_connections=args.max_connections,
        max_in_flight=getattr(args, "max_in_flight", None),
        max_in_flight_per_key=getattr(args, "max_in_flight_per_key", 16),
        max_queued=getattr(args, "max_queued", 256),
        queue_timeout=getattr(args, "queue_timeout", 10.0),
    )


def _host_name(host: str) -> str:
    """The name part of a ``Host`` value or flag, lower-case, IPv6 without brackets
    (``[::1]:8000`` -> ``::1``, ``Example.org:80`` -> ``example.org``)."""
    host = host.strip().lower()
    if host.startswith("["):
        return host[1 : host.find("]")] if "]" in host else ""
    if host.count(":") > 1:  # a bare IPv6 address (a flag value)
        try:
            return str(ipaddress.ip_address(host))
        except ValueError:
            return ""
    return host.partition(":")[0]


# -- the middleware -------------------------------------------------------------------------


def _header(scope: _Scope, name: bytes) -> str | None:
    for key, value in scope.get("headers", []):
        if key == name:
            return bytes(value).decode("latin-1")
    return None


def _json_body(status: int, message: str, details: Any = None) -> bytes:
    return json.dumps({"error": message, "details": details}).encode()


class HostCheck:
    """Answer 421 to a request whose ``Host`` header names no host of ``allowed`` (names
    as :func:`_host_name` spells them): the DNS-rebinding defence."""

    def __init__(self, app: _App, allowed: frozenset[str]) -> None:
        self.app = app
        self.allowed = allowed

    async def __call__(self, scope: _Scope, receive: _Receive, send: _Send) -> None:
        if scope["type"] in ("http", "websocket"):
            given = _header(scope, b"host")
            if given is None or _host_name(given) not in self.allowed:
                shown = "no Host header" if given is None else f"Host {given[:100]!r}"
                message = (
                    f"{shown} does not name this server, so the request is refused (a web "
                    "page can point its own domain at this address: DNS rebinding). Call "
                    f"it as one of {', '.join(sorted(self.allowed))}, or start it with "
                    "--allowed-host NAME"
                )
                if scope["type"] == "websocket":
                    await send({"type": "websocket.close", "code": 1008, "reason": "bad Host"})
                else:
                    await send_json_error(send, 421, message)
                return
        await self.app(scope, receive, send)


class OriginCheck:
    """Answer 403 to a state-changing request sent by a web page of another origin: an
    ``Origin`` header that is neither this server's own (``scheme://Host``) nor one of
    ``allowed`` (``*``: any), or no ``Origin`` but ``Sec-Fetch-Site: cross-site``. A
    client that is not a browser (an SDK, curl) sends neither, and passes."""

    def __init__(self, app: _App, allowed: Sequence[str]) -> None:
        self.app = app
        self.allowed = frozenset(allowed)

    async def __call__(self, scope: _Scope, receive: _Receive, send: _Send) -> None:
        if scope["type"] == "http" and scope.get("method") in STATE_CHANGING:
            origin = _header(scope, b"origin")
            if origin is None:
                foreign = (_header(scope, b"sec-fetch-site") or "").lower() == "cross-site"
                shown = "a cross-site page (Sec-Fetch-Site: cross-site)"
            else:
                foreign = not self._allows(origin, scope)
                shown = f"the web page at {origin[:100]!r}"
            if foreign:
                message = (
                    f"{scope.get('method')} from {shown} is refused: a page the user opens "
                    "may not change this server's data (cross-site request forgery). Call "
                    "it from a program, or start the server with --cors-origin ORIGIN"
                )
                await send_json_error(send, 403, message)
                return
        await self.app(scope, receive, send)

    def _allows(self, origin: str, scope: _Scope) -> bool:
        normal = origin.strip().rstrip("/").lower()
        if "*" in self.allowed or normal in self.allowed:
            return True
        host = (_header(scope, b"host") or "").lower()
        return bool(host) and normal == f"{scope.get('scheme', 'http')}://{host}"


class RequestLimits:
    """At most ``max_in_flight`` requests handled at once; up to ``max_queued`` more
    wait, each for at most ``queue_timeout`` seconds (then 503 with ``Retry-After``);
    the requests of one ``Authorization`` value, handled or waiting, are at most
    ``per_key`` (then 429 with ``Retry-After``). A request without one counts towards
    the server-wide limits only (on a server with keys it gets its 401 at once)."""

    def __init__(
        self,
        app: _App,
        *,
        max_in_flight: int,
        max_queued: int,
        queue_timeout: float,
        per_key: int,
    ) -> None:
        # lazy: anyio comes with the server extras, not with the CLI.
        import anyio

        self.app = app
        self._slots = anyio.Semaphore(max_in_flight)
        self._anyio = anyio
        self.max_queued = max_queued
        self.queue_timeout = queue_timeout
        self.per_key = per_key
        self._queued = 0
        self._by_key: dict[str, int] = {}

    async def __call__(self, scope: _Scope, receive: _Receive, send: _Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        key = _header(scope, b"authorization")
        if key is not None and self._by_key.get(key, 0) >= self.per_key:
            message = (
                f"this API key already has {self.per_key} requests in flight; wait for "
                "their answers and retry"
            )
            await send_json_error(send, 429, message, headers=[(b"retry-after", b"1")])
            return
        if key is not None:
            self._by_key[key] = self._by_key.get(key, 0) + 1
        try:
            await self._admitted(scope, receive, send)
        finally:
            if key is not None:
                left = self._by_key[key] - 1
                if left:
                    self._by_key[key] = left
                else:
                    del self._by_key[key]

    async def _admitted(self, scope: _Scope, receive: _Receive, send: _Send) -> None:
        try:
            self._slots.acquire_nowait()
        except self._anyio.WouldBlock:
            if self._queued >= self.max_queued:
                await self._busy(send, "every request slot is taken and the queue is full")
                return
            self._queued += 1
            try:
                with self._anyio.move_on_after(self.queue_timeout) as waited:
                    await self._slots.acquire()
            finally:
                self._queued -= 1
            if waited.cancelled_caught:
                wait = f"no request slot freed within {self.queue_timeout:g} s"
                await self._busy(send, wait)
                return
        try:
            await self.app(scope, receive, send)
        finally:
            self._slots.release()

    @staticmethod
    async def _busy(send: _Send, why: str) -> None:
        message = f"the server is busy ({why}); retry after a moment"
        await send_json_error(send, 503, message, headers=[(b"retry-after", b"1")])


def guard(app: _App, policy: ListenerPolicy) -> _App:
    """``app`` behind the policy's middleware, outermost first: :class:`HostCheck`, CORS
    (only with ``cors_origins``), :class:`OriginCheck`, :class:`RequestLimits` (only
    with ``max_in_flight``)."""
    if policy.max_in_flight is not None:
        app = RequestLimits(
            app,
            max_in_flight=policy.max_in_flight,
            max_queued=policy.max_queued,
            queue_timeout=policy.queue_timeout,
            per_key=policy.max_in_flight_per_key,
        )
    app = OriginCheck(app, policy.cors_origins)
    if policy.cors_origins:
        # lazy: Starlette comes with the server extras, not with the CLI.
        from starlette.middleware.cors import CORSMiddleware

        app = CORSMiddleware(
            app,
            allow_origins=list(policy.cors_origins),
            allow_methods=["*"],
            allow_headers=[
                "authorization",
                "content-type",
                "mcp-session-id",
                "mcp-protocol-version",
                "last-event-id",
            ],
            expose_headers=["mcp-session-id", "retry-after"],
        )
    if policy.allowed_hosts is not None:
        app = HostCheck(app, policy.allowed_hosts)
    return app


# -- the connections ------------------------------------------------------------------------


def raise_file_limit(wanted: int) -> int:
    """Raise this process's soft open-file limit toward ``wanted`` (never above the hard
    limit, never lowered); return the soft limit now in force (``wanted`` where the
    platform has no such limit)."""
    try:
        import resource  # lazy: POSIX only (absent on Windows)
    except ImportError:  # not POSIX
        return wanted
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft == resource.RLIM_INFINITY or soft >= wanted:
        return wanted if soft == resource.RLIM_INFINITY else soft
    target = wanted if hard == resource.RLIM_INFINITY else min(wanted, hard)
    try:
        resource.setrlimit(resource.RLIMIT_NOFILE, (target, hard))
    except (ValueError, OSError):
        return soft
    return target


def _raw_response(status: int, reason: str, message: str, extra: bytes = b"") -> bytes:
    body = _json_body(status, message)
    head = (
        f"HTTP/1.1 {status} {reason}\r\ncontent-type: application/json\r\n"
        f"content-length: {len(body)}\r\nconnection: close\r\n"
    ).encode()
    return head + extra + b"\r\n" + body


def _timed_protocol(
    base: type[asyncio.Protocol], *, header_timeout: float, body_timeout: float, cap: int
) -> type[asyncio.Protocol]:
    """uvicorn's HTTP protocol ``base`` with a header and a body deadline per request and
    a cap on open connections. It follows the request through what both of uvicorn's
    protocols keep: ``cycle`` (the current request; ``more_body`` until its body is in,
    ``response_started``/``response_complete``) and ``connections`` (the open ones)."""
    too_many = _raw_response(
        503,
        "Service Unavailable",
        f"the server has {cap} connections open, its limit; retry after a moment",
        b"retry-after: 1\r\n",
    )

    class Timed(base):  # type: ignore[misc, valid-type]
        _refused = False
        _timer: asyncio.TimerHandle | None = None
        _seen: Any = None
        _phase = ""

        def connection_made(self, transport: Any) -> None:  # asyncio's or uvloop's
            if len(self.connections) >= cap:
                self._refused = True
                transport.write(too_many)
                transport.close()
                return
            super().connection_made(transport)
            self._arm("headers", header_timeout)

        def data_received(self, data: bytes) -> None:
            if self._refused:
                return
            super().data_received(data)
            self._follow()

        def on_response_complete(self) -> None:
            super().on_response_complete()
            self._follow()

        def connection_lost(self, exc: Exception | None) -> None:
            self._cancel()
            if not self._refused:
                super().connection_lost(exc)

        def _follow(self) -> None:
            cycle: Any = self.cycle
            if cycle is not None and cycle is not self._seen:  # a request's headers are in
                self._seen = cycle
                self._cancel()
                if cycle.more_body:
                    self._arm("body", body_timeout)
            elif self._phase == "body" and cycle is not None and not cycle.more_body:
                self._cancel()
            elif self._timer is None and (cycle is None or cycle.response_complete):
                # bytes of the next request (keep-alive), or the answer is out: the next
                # request's headers must come in time
                self._arm("headers", header_timeout)

        def _arm(self, phase: str, seconds: float) -> None:
            self._cancel()
            self._phase = phase
            self._timer = asyncio.get_running_loop().call_later(seconds, self._expire)

        def _cancel(self) -> None:
            if self._timer is not None:
                self._timer.cancel()
            self._timer = None
            self._phase = ""

        def _expire(self) -> None:
            phase, seconds = (
                self._phase,
                (header_timeout if self._phase == "headers" else body_timeout),
            )
            self._timer = None
            transport = self.transport
            if transport is None or transport.is_closing():
                return
            cycle: Any = self.cycle
            idle = cycle is None or cycle.response_complete
            if phase == "headers" and not idle:
                return  # a response is being written: uvicorn's keep-alive takes over
            # A 408 only where no answer has begun: after an early answer (a 401 before
            # the body was read), the rest of the body is not waited for, silently.
            if (phase == "headers" and idle) or (not idle and not cycle.response_started):
                message = f"the request's {phase} did not arrive within {seconds:g} s"
                transport.write(_raw_response(408, "Request Timeout", message))
            if cycle is not None and not cycle.response_complete:
                cycle.keep_alive = False
                cycle.disconnected = True  # the app's receive() sees the disconnect
                cycle.message_event.set()
            transport.close()

    Timed.__name__ = Timed.__qualname__ = f"Timed{base.__name__}"
    return Timed


def listen(
    app: _App, *, host: str, port: int, policy: ListenerPolicy, log_level: str = "info"
) -> None:
    """Serve ``app`` behind :func:`guard` with uvicorn on ``host``:``port`` until
    interrupted, with the policy's header and body timeouts and connection cap (lowered
    to fit the open-file limit, which is raised first)."""
    # lazy: uvicorn is in the server extras, not needed by the other commands.
    import uvicorn
    from uvicorn.protocols.http.auto import AutoHTTPProtocol

    files = raise_file_limit(policy.max_connections + RESERVED_FILES)
    cap = max(1, min(policy.max_connections, files - RESERVED_FILES))
    if cap < policy.max_connections:
        print(
            f"remy: --max-connections lowered to {cap}: this process may open {files} files "
            f"and keeps {RESERVED_FILES} for the store (raise the limit with `ulimit -n`)",
            file=sys.stderr,
            flush=True,
        )
    protocol = _timed_protocol(
        AutoHTTPProtocol,
        header_timeout=policy.header_timeout,
        body_timeout=policy.body_timeout,
        cap=cap,
    )
    uvicorn.run(guard(app, policy), host=host, port=port, log_level=log_level, http=protocol)

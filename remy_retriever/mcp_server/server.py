"""The MCP server: :class:`~.tools.RemyTools` behind the official ``mcp`` SDK's low-level
``Server``, over stdio or streamable HTTP.

The low-level server rather than the SDK's ``MCPServer`` decorators: the tools' schemas
depend on the guards (a pinned container tag removes arguments), and every call must
come back as a tool result, an error one for bad arguments, which is easiest to
guarantee with one ``tools/call`` handler of our own.

Arguments are checked before anything else runs: nesting, integer size and text
(:func:`remy_retriever.util.json_limits.check_json_value`), then the tool's argument
model in strict mode (:mod:`.schemas`), as strict as the JSON Schema it publishes.

Engine calls run in a worker thread, one at a time (the engine is not meant for
concurrent calls on one ``Retriever``), so the event loop keeps answering pings and
cancellations during a long ``add_documents``. Any exception becomes a tool error result
with a one-line message: a :class:`~remy_retriever.errors.RemyError` as it is (it names
the value and the fix), anything else as a bug report line; the traceback goes to the
log (stderr), never to the client.

Over streamable HTTP with API keys, every request must send ``Authorization: Bearer
KEY`` (:class:`BearerAuth`; keys compared in constant time); without keys ``remy mcp``
listens on loopback only.

Documents are resources: ``remy://documents/{id}`` (the id percent-encoded) reads as the
document's text (``text/markdown``) followed by its citation (``application/json``).
"""

from __future__ import annotations

import hmac
import json
import logging
from collections.abc import Awaitable, Callable, MutableMapping, Sequence
from typing import Any, Literal, TypeVar

import anyio
import anyio.to_thread
import mcp_types as types
from mcp.server import Server, ServerRequestContext
from mcp.server.stdio import stdio_server
from mcp.server.transport_security import TransportSecuritySettings
from mcp.shared.exceptions import MCPError

from .. import __version__
from ..errors import InvalidInputError, RemyError, RerankerUnavailableError
from ..util.json_limits import check_json_value
from .formatting import DOCUMENT_URI_TEMPLATE, document_id_from_uri, document_uri
from .tools import RemyTools, ToolResult, ToolSpec

__all__ = ["BearerAuth", "build_server", "serve"]

logger = logging.getLogger("remy.mcp")

#: How to give ``remy mcp`` the cross-encoder that ``rerank: true`` needs.
RERANKER_FIX = (
    "start remy mcp with --reranker PATH (a local cross-encoder directory) or set "
    "REMY_RERANK_MODEL=PATH"
)

#: JSON-RPC error code for a resource that does not exist (MCP specification).
RESOURCE_NOT_FOUND = -32002

INSTRUCTIONS = (
    "remy: hybrid search over a document collection, with citations, plus versioned "
    "memories. Use search for citable passages (cite them by their [n]), search_documents "
    "to find whole documents, search_memories / add_memory / update_memory / forget_memory "
    "for facts worth remembering. A hit's document is readable at remy://documents/{id}."
)

T = TypeVar("T")


def build_server(tools: RemyTools) -> Server[Any]:
    """The low-level MCP ``Server`` offering ``tools``' tools and documents."""
    limiter = anyio.CapacityLimiter(1)
    listed = [_tool(tools, spec) for spec in tools.specs()]

    async def in_worker(fn: Callable[[], T]) -> T:
        return await anyio.to_thread.run_sync(fn, limiter=limiter)

    async def list_tools(
        ctx: ServerRequestContext[Any], params: types.PaginatedRequestParams | None
    ) -> types.ListToolsResult:
        return types.ListToolsResult(tools=listed)

    async def call_tool(
        ctx: ServerRequestContext[Any], params: types.CallToolRequestParams
    ) -> types.CallToolResult:
        try:
            check_json_value(params.arguments or {}, what=f"{params.name}: arguments")
            result = await in_worker(lambda: tools.call(params.name, params.arguments))
        except RerankerUnavailableError as exc:  # rerank=true, no reranker on this machine
            logger.info("tool %r refused: %s", params.name, exc)
            return _error(str(exc.for_door(RERANKER_FIX)))
        except RemyError as exc:
            logger.info("tool %r refused: %s", params.name, exc)
            return _error(str(exc))
        except Exception as exc:
            logger.exception("tool %r failed", params.name)
            return _error(
                f"unexpected {type(exc).__name__} in {params.name}: {exc} (a bug in "
                "remy-retriever: please report it; the server log has the traceback)"
            )
        return _result(result)

    async def list_resources(
        ctx: ServerRequestContext[Any], params: types.PaginatedRequestParams | None
    ) -> types.ListResourcesResult:
        documents = await in_worker(tools.list_documents)
        return types.ListResourcesResult(
            resources=[
                types.Resource(
                    name=doc_id, title=title, uri=document_uri(doc_id), mime_type="text/markdown"
                )
                for doc_id, title in documents
            ]
        )

    async def list_templates(
        ctx: ServerRequestContext[Any], params: types.PaginatedRequestParams | None
    ) -> types.ListResourceTemplatesResult:
        template = types.ResourceTemplate(
            name="document",
            title="A document of the collection",
            uri_template=DOCUMENT_URI_TEMPLATE,
            description="A document's full text, then its citation as JSON. {id} is the "
            "documentId of a search hit's citation, percent-encoded.",
            mime_type="text/markdown",
        )
        return types.ListResourceTemplatesResult(resource_templates=[template])

    async def read_resource(
        ctx: ServerRequestContext[Any], params: types.ReadResourceRequestParams
    ) -> types.ReadResourceResult:
        uri = str(params.uri)
        doc_id = document_id_from_uri(uri)
        if doc_id is None:
            msg = f"unknown resource {uri!r}; documents are at {DOCUMENT_URI_TEMPLATE}"
            raise MCPError(RESOURCE_NOT_FOUND, msg)
        try:
            text, citation = await in_worker(lambda: tools.read_document(doc_id))
        except RemyError as exc:
            raise MCPError(RESOURCE_NOT_FOUND, str(exc)) from None
        return types.ReadResourceResult(
            contents=[
                types.TextResourceContents(uri=uri, mime_type="text/markdown", text=text),
                types.TextResourceContents(
                    uri=uri, mime_type="application/json", text=json.dumps(citation)
                ),
            ]
        )

    return Server(
        "remy",
        version=__version__,
        title="remy-retriever",
        instructions=INSTRUCTIONS,
        on_list_tools=list_tools,
        on_call_tool=call_tool,
        on_list_resources=list_resources,
        on_list_resource_templates=list_templates,
        on_read_resource=read_resource,
    )


def _tool(tools: RemyTools, spec: ToolSpec) -> types.Tool:
    return types.Tool(
        name=spec.name,
        title=spec.title,
        description=spec.description,
        input_schema=tools.input_schema(spec),
        output_schema=tools.output_schema(spec),
        annotations=types.ToolAnnotations(
            title=spec.title,
            read_only_hint=spec.read_only,
            destructive_hint=spec.destructive,
            idempotent_hint=spec.idempotent,
            open_world_hint=False,
        ),
    )


def _result(result: ToolResult) -> types.CallToolResult:
    content: list[Any] = [types.TextContent(type="text", text=result.text)]
    content += [
        types.ResourceLink(
            type="resource_link", name=doc_id, uri=document_uri(doc_id), mime_type="text/markdown"
        )
        for doc_id in result.document_ids
    ]
    return types.CallToolResult(content=content, structured_content=result.structured)


def _error(message: str) -> types.CallToolResult:
    return types.CallToolResult(
        content=[types.TextContent(type="text", text=message)], is_error=True
    )


def serve(
    tools: RemyTools,
    *,
    transport: Literal["stdio", "streamable-http"] = "stdio",
    host: str = "127.0.0.1",
    port: int = 8000,
    api_keys: Sequence[str] = (),
    listen: Callable[[Any], None] | None = None,
) -> None:
    """Serve ``tools`` until the client disconnects (stdio) or the process is stopped
    (streamable HTTP, at ``http://HOST:PORT/mcp``; with ``api_keys``, only to callers
    sending one of them as a bearer token). ``listen(app)``, if given, serves the HTTP
    application (``remy mcp`` passes its listener, with the browser-origin checks and
    the connection limits); without it, plain uvicorn does."""
    server = build_server(tools)
    if transport == "stdio":
        anyio.run(_serve_stdio, server)
        return
    # The listener checks Host and Origin for every name it was given (--allowed-host);
    # the SDK's own check knows only the loopback names, so it steps aside then.
    security = (
        None if listen is None else TransportSecuritySettings(enable_dns_rebinding_protection=False)
    )
    app: Any = server.streamable_http_app(host=host, transport_security=security)
    if api_keys:
        app = BearerAuth(app, tuple(api_keys))
    if listen is not None:
        listen(app)
    else:
        anyio.run(_serve_http, app, host, port)


async def _serve_stdio(server: Server[Any]) -> None:
    async with stdio_server() as (read_stream, write_stream):
        await server.run(read_stream, write_stream, server.create_initialization_options())


async def _serve_http(app: Any, host: str, port: int) -> None:
    # lazy: uvicorn comes with the mcp extra and serves only this transport
    import uvicorn

    config = uvicorn.Config(app, host=host, port=port, log_level="warning")
    await uvicorn.Server(config).serve()


_Scope = MutableMapping[str, Any]
_Message = MutableMapping[str, Any]
_Receive = Callable[[], Awaitable[_Message]]
_Send = Callable[[_Message], Awaitable[None]]
_App = Callable[[_Scope, _Receive, _Send], Awaitable[None]]


class BearerAuth:
    """ASGI middleware: an HTTP request without ``Authorization: Bearer KEY`` for one of
    ``keys`` gets a 401 (JSON, ``WWW-Authenticate: Bearer``) and never reaches the MCP
    app. Every key is compared, in constant time, so the time does not tell which one
    matched. Other scopes (the lifespan) pass through."""

    def __init__(self, app: _App, keys: Sequence[str]) -> None:
        if not keys:
            msg = "BearerAuth needs at least one key; pass --api-key KEY or serve without keys"
            raise InvalidInputError(msg)
        self.app = app
        self._keys = [k.encode() for k in keys]

    def allows(self, authorization: str | None) -> bool:
        """Whether an ``Authorization`` header value carries one of the keys."""
        scheme, _, token = (authorization or "").partition(" ")
        given = token.strip().encode("utf-8", "replace")
        found = False
        for key in self._keys:
            found |= hmac.compare_digest(key, given)
        return scheme.lower() == "bearer" and bool(given) and found

    async def __call__(self, scope: _Scope, receive: _Receive, send: _Send) -> None:
        if scope["type"] == "http":
            header = None
            for name, value in scope.get("headers", []):
                if name == b"authorization":
                    header = value.decode("latin-1")
            if not self.allows(header):
                await _unauthorized(send, header is None)
                return
        await self.app(scope, receive, send)


async def _unauthorized(send: _Send, missing: bool) -> None:
    message = (
        "missing API key: send the header 'Authorization: Bearer <key>'"
        if missing
        else "invalid API key"
    )
    body = json.dumps({"error": message}).encode()
    await send(
        {
            "type": "http.response.start",
            "status": 401,
            "headers": [
                (b"content-type", b"application/json"),
                (b"content-length", str(len(body)).encode()),
                (b"www-authenticate", b"Bearer"),
            ],
        }
    )
    await send({"type": "http.response.body", "body": body})

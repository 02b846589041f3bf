"""The FastAPI application of ``remy serve``: routes, authentication, limits and errors.

Routes are plain (``def``) functions, so FastAPI runs each request in its thread pool:
searches run side by side, and writes queue on the documents' lock
(:class:`remy_retriever.memory.LinkedDocuments`) and each store's writer lock. Every
error is JSON, ``{"error": ..., "details": ...}``: 400 for a bad request (``details``
lists the fields at fault), 401 without a valid key, 403 for a container tag the key may
not use, 404 for what does not exist (or is in another container), 413 for a body over
the limit, 503 when the store is busy; a model the request needs but the server cannot
load (``rerank`` without a reranker) is a 400, and an upload when every parsing
worker is busy and the queue for them full is a 503 with ``Retry-After``; a bug
answers 500 with a generic message, and the traceback goes to the server's log only.
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
from collections.abc import AsyncIterator, Awaitable, Callable, MutableMapping
from contextlib import AbstractAsyncContextManager
from pathlib import Path
from typing import Annotated, Any, cast

from fastapi import Depends, FastAPI, File, Form, Request, UploadFile
from fastapi.encoders import jsonable_encoder
from fastapi.exceptions import RequestValidationError
from fastapi.openapi.utils import get_openapi
from fastapi.responses import JSONResponse, Response
from starlette.exceptions import HTTPException as StarletteHTTPException

from ..errors import (
    IndexLockedError,
    InvalidInputError,
    ModelLoadError,
    RemyError,
    RerankerUnavailableError,
)
from ..loaders import (
    MissingExtraError,
    ParseLimits,
    ParserBusyError,
    ParserPool,
    load_bytes,
    loader_for,
)
from ..loaders.limits import DEFAULT_PARSE_LIMITS
from ..memory import DocumentNotFoundError, MemoryNotFoundError, wire_document_id
from ..schema.document import Document
from ..supermemory.responses import DocumentSearchResponse, MemorySearchResponse
from ..util.reprs import short_repr
from . import wire
from .auth import AccessDeniedError, KeyRing, NotFoundError, Principal, UnauthorizedError
from .limits import JsonLimits
from .service import Service
from .shapes import one_tag
from .ui import install_ui
from .v5 import install_v5

__all__ = ["DEFAULT_MAX_BODY_BYTES", "create_app"]

#: Largest request body (JSON or upload) by default: 16 MiB.
DEFAULT_MAX_BODY_BYTES = 16 * 1024 * 1024
#: Processes that parse uploads by default, and uploads that may wait for one.
PARSE_WORKERS = 2
PARSE_QUEUE = 8
#: Seconds a client is told to wait (``Retry-After``) when every parser is busy.
PARSE_RETRY_AFTER = 5
_log = logging.getLogger("remy.serve")

#: How to give ``remy serve`` the cross-encoder that ``rerank: true`` needs.
RERANKER_FIX = (
    "start remy serve with --reranker PATH (a local cross-encoder directory) or set "
    "REMY_RERANK_MODEL=PATH"
)
_ERRORS: dict[int | str, dict[str, Any]] = {
    code: {"model": wire.ErrorResponse, "description": text}
    for code, text in (
        (400, "Bad request"),
        (401, "Missing or invalid API key"),
        (403, "Container tag not allowed for this key"),
        (404, "Not found"),
        (413, "Request body too large"),
        (503, "Store busy, or every upload parser busy; retry (after Retry-After seconds)"),
    )
}
Json = dict[str, Any]


def _principal(request: Request) -> Principal:
    """The caller, from the ``Authorization`` header (401 without a valid key)."""
    keys: KeyRing = request.app.state.keys
    return keys.principal(request.headers.get("authorization"))


Caller = Annotated[Principal, Depends(_principal)]


def create_app(
    service: Service,
    keys: KeyRing,
    *,
    max_body_bytes: int = DEFAULT_MAX_BODY_BYTES,
    parser: ParserPool | None = None,
    parse_limits: ParseLimits = DEFAULT_PARSE_LIMITS,
    eval_report: Path | None = None,
) -> FastAPI:
    """The application serving ``service`` to callers holding one of ``keys``.

    Uploads are parsed in ``parser``'s worker processes (by default a pool of its own:
    :data:`PARSE_WORKERS` workers, :data:`PARSE_QUEUE` uploads waiting, stopped with the
    app), each under ``parse_limits``: a request thread only waits for its file, and an
    upload arriving when the queue is full is a 503 with ``Retry-After``. The read-only
    retrieval inspector is at ``/ui`` (:mod:`.ui`; ``eval_report``: what ``/ui/eval``
    shows)."""
    parsers = parser if parser is not None else ParserPool(workers=PARSE_WORKERS, queue=PARSE_QUEUE)
    app = FastAPI(
        title="remy-retriever",
        version="0.1.0",
        description=(
            "A self-hosted, supermemory-compatible API on remy-retriever (documents, "
            "document search, memories), plus remy's own search at /v1/search."
        ),
        responses=_ERRORS,
        lifespan=_closing(parsers if parser is None else None),
    )
    app.state.keys = keys

    # -- documents ----------------------------------------------------------------------

    @app.post("/v3/documents", response_model=wire.AddResponse, tags=["documents"])
    def add_document(body: wire.AddDocumentBody, caller: Caller) -> Json:
        document = service.documents.prepare(
            content=body.content,
            tag=caller.write_tag(one_tag(body.container_tag, body.container_tags)),
            custom_id=body.custom_id,
            metadata=body.metadata,
            filepath=body.filepath,
        )
        doc_id = service.documents.add(document, scope=caller.tags)
        return wire.AddResponse(
            id=wire_document_id(doc_id, document.metadata), status="done"
        ).wire()

    @app.post("/v3/documents/batch", response_model=wire.BatchAddResponse, tags=["documents"])
    def batch_add(body: wire.BatchAddBody, caller: Caller) -> Json:
        outcomes: list[str | RemyError] = []
        prepared: dict[int, Document] = {}
        names: list[str] = []
        for i, item in enumerate(body.documents):
            fields = (
                item.model_dump(exclude_unset=True)
                if isinstance(item, wire.BatchItem)
                else {"content": item}
            )
            names.append(str(fields.get("custom_id") or ""))
            try:
                tag = one_tag(
                    fields.get("container_tag", body.container_tag),
                    fields.get("container_tags", body.container_tags),
                )
                prepared[i] = service.documents.prepare(
                    content=fields["content"],
                    tag=caller.write_tag(tag),
                    custom_id=fields.get("custom_id"),
                    metadata=cast("dict[str, Any] | None", fields.get("metadata", body.metadata)),
                    filepath=fields.get("filepath", body.filepath),
                )
                outcomes.append("")
            except (InvalidInputError, AccessDeniedError) as exc:
                outcomes.append(exc)
        written = service.documents.add_many(list(prepared.values()), scope=caller.tags)
        for i, outcome in zip(prepared, written):
            meta = prepared[i].metadata
            outcomes[i] = wire_document_id(outcome, meta) if isinstance(outcome, str) else outcome
        results = [
            wire.BatchResult(id=o, status="done")
            if isinstance(o, str)
            else wire.BatchResult(id=names[i], status="error", error=str(o), details=str(o))
            for i, o in enumerate(outcomes)
        ]
        failed = sum(r.status == "error" for r in results)
        return wire.BatchAddResponse(
            success=len(results) - failed, failed=failed, results=results
        ).wire()

    @app.post("/v3/documents/file", response_model=wire.AddResponse, tags=["documents"])
    def upload_file(
        caller: Caller,
        file: Annotated[UploadFile, File(description="The file: PDF, HTML, DOCX, text")],
        container_tag: Annotated[str | None, Form(alias="containerTag")] = None,
        container_tags: Annotated[str | None, Form(alias="containerTags")] = None,
        custom_id: Annotated[str | None, Form(alias="customId")] = None,
        metadata: Annotated[str | None, Form()] = None,
        filepath: Annotated[str | None, Form()] = None,
        file_type: Annotated[str | None, Form(alias="fileType")] = None,
        mime_type: Annotated[str | None, Form(alias="mimeType")] = None,
        dreaming: Annotated[str | None, Form(description=wire.IGNORED)] = None,
        entity_context: Annotated[str | None, Form(alias="entityContext")] = None,
        filter_by_metadata: Annotated[str | None, Form(alias="filterByMetadata")] = None,
        task_type: Annotated[str | None, Form(alias="taskType")] = None,
        use_advanced_processing: Annotated[str | None, Form(alias="useAdvancedProcessing")] = None,
    ) -> Json:
        name = os.path.basename(file.filename or "") or "upload.txt"
        if loader_for(name) is None:
            msg = (
                f"cannot read {short_repr(name)}: no loader for its suffix; upload a .pdf, "
                ".html, .docx, .md or .txt file"
            )
            raise InvalidInputError(msg)
        data = file.file.read()
        try:
            loaded = load_bytes(data, name, limits=parse_limits, pool=parsers)
        except MissingExtraError as exc:
            raise InvalidInputError(str(exc)) from None
        tags = _tag_list(container_tags)
        meta = _json_object(metadata, "metadata")
        document = service.documents.prepare(
            content=loaded.text,
            tag=caller.write_tag(one_tag(container_tag, tags)),
            custom_id=custom_id,
            metadata=meta,
            filepath=filepath,
            title=loaded.title,
            doc_type=loaded.type,
            pages=loaded.pages,
        )
        doc_id = service.documents.add(document, scope=caller.tags)
        return wire.AddResponse(
            id=wire_document_id(doc_id, document.metadata), status="done"
        ).wire()

    @app.post("/v3/documents/list", response_model=wire.DocumentListResponse, tags=["documents"])
    def list_documents(body: wire.ListDocumentsBody, caller: Caller) -> Json:
        return service.list_documents(caller, body).wire()

    @app.get("/v3/documents/{doc_id}", response_model=wire.DocumentGetResponse, tags=["documents"])
    def get_document(doc_id: str, caller: Caller) -> Json:
        return service.get_document(caller, doc_id).wire()

    @app.patch("/v3/documents/{doc_id}", response_model=wire.AddResponse, tags=["documents"])
    def update_document(doc_id: str, body: wire.UpdateDocumentBody, caller: Caller) -> Json:
        tags = [body.container_tag] if body.container_tag else []
        tag = one_tag(None, [*tags, *(body.container_tags or [])])
        stored = service.documents.visible(doc_id, scope=caller.tags).document  # 404 first
        if body.custom_id is not None and body.custom_id != wire_document_id(
            stored.id, stored.metadata
        ):
            msg = "customId cannot change: add a new document with the new customId instead"
            raise InvalidInputError(msg)
        service.documents.update(
            stored.id,
            scope=caller.tags,
            content=body.content,
            tag=None if tag is None else caller.require(tag),
            metadata=body.metadata,
            filepath=body.filepath,
        )
        return wire.AddResponse(id=doc_id, status="done").wire()

    @app.delete("/v3/documents/bulk", response_model=wire.DeleteBulkResponse, tags=["documents"])
    def delete_bulk(body: wire.DeleteBulkBody, caller: Caller) -> Json:
        return service.delete_bulk(caller, body).wire()

    @app.delete("/v3/documents/{doc_id}", status_code=204, tags=["documents"])
    def delete_document(doc_id: str, caller: Caller) -> Response:
        stored = service.documents.visible(doc_id, scope=caller.tags)
        service.documents.delete([stored.document.id])
        return Response(status_code=204)

    # -- search -------------------------------------------------------------------------

    @app.post("/v3/search", response_model=DocumentSearchResponse, tags=["search"])
    def search_documents(body: wire.SearchDocumentsBody, caller: Caller) -> Json:
        return service.search_documents(caller, body)

    @app.post("/v4/search", response_model=MemorySearchResponse, tags=["search"])
    def search_memories(body: wire.SearchMemoriesBody, caller: Caller) -> Json:
        return service.search_memories(caller, body)

    @app.post("/v1/search", response_model=wire.NativeSearchResponse, tags=["search"])
    def native_search(body: wire.NativeSearchBody, caller: Caller) -> Json:
        return service.native_search(caller, body)

    # -- memories -----------------------------------------------------------------------

    @app.patch("/v4/memories", response_model=wire.UpdateMemoryResponse, tags=["memories"])
    def update_memory(body: wire.UpdateMemoryBody, caller: Caller) -> Json:
        return service.update_memory(caller, body).wire()

    @app.delete("/v4/memories", response_model=wire.ForgetMemoryResponse, tags=["memories"])
    def forget_memory(body: wire.ForgetMemoryBody, caller: Caller) -> Json:
        return service.forget_memory(caller, body).wire()

    install_ui(app, service, eval_report=eval_report)
    install_v5(app, service, parsers=parsers, parse_limits=parse_limits)
    _install_errors(app)
    _install_openapi(app)
    app.add_middleware(JsonLimits)  # inside the body limit: it reads a limited body
    app.add_middleware(_BodyLimit, max_bytes=max_body_bytes)
    return app


def _closing(pool: ParserPool | None) -> Callable[[FastAPI], AbstractAsyncContextManager[None]]:
    """The app's lifespan: stop ``pool``'s workers when the app stops."""

    @contextlib.asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        try:
            yield
        finally:
            if pool is not None:
                pool.close()

    return lifespan


def _tag_list(raw: str | None) -> list[str] | None:
    """``containerTags`` of an upload: a JSON list or one tag."""
    if raw is None or not raw.strip():
        return None
    if raw.lstrip().startswith("["):
        value = _loads(raw, "containerTags")
        if not isinstance(value, list) or not all(isinstance(t, str) for t in value):
            msg = f"containerTags must be a JSON list of strings or one tag, got {raw!r:.80}"
            raise InvalidInputError(msg)
        return value
    return [raw]


def _json_object(raw: str | None, name: str) -> dict[str, Any] | None:
    if raw is None or not raw.strip():
        return None
    value = _loads(raw, name)
    if not isinstance(value, dict):
        msg = f"{name} must be a JSON object, got {raw!r:.80}"
        raise InvalidInputError(msg)
    if any(isinstance(v, (dict, type(None))) for v in value.values()):
        msg = f"{name} values must be strings, numbers or booleans, got {raw!r:.80}"
        raise InvalidInputError(msg)
    return value


def _loads(raw: str, name: str) -> Any:
    try:
        return json.loads(raw)
    except (ValueError, RecursionError):
        msg = f"{name} is not valid JSON: {raw!r:.80}"
        raise InvalidInputError(msg) from None


# -- errors -------------------------------------------------------------------------------


def _error(status: int, message: str, details: Any = None) -> JSONResponse:
    return JSONResponse({"error": message, "details": details}, status_code=status)


def _install_errors(app: FastAPI) -> None:
    @app.exception_handler(RequestValidationError)
    async def invalid_request(request: Request, exc: RequestValidationError) -> JSONResponse:
        details = [
            {
                "field": ".".join(str(p) for p in err.get("loc", ())),
                "message": str(err.get("msg", "")),
            }
            for err in exc.errors()[:20]
        ]
        return _error(400, "invalid request", jsonable_encoder(details))

    @app.exception_handler(StarletteHTTPException)
    async def http_error(request: Request, exc: StarletteHTTPException) -> JSONResponse:
        return _error(exc.status_code, str(exc.detail))

    @app.exception_handler(RemyError)
    async def remy_error(request: Request, exc: RemyError) -> JSONResponse:
        if isinstance(exc, UnauthorizedError):
            response = _error(401, str(exc))
            response.headers["WWW-Authenticate"] = "Bearer"
            return response
        if isinstance(exc, AccessDeniedError):
            return _error(403, str(exc))
        if isinstance(exc, (NotFoundError, DocumentNotFoundError, MemoryNotFoundError)):
            return _error(404, str(exc))
        if isinstance(exc, InvalidInputError):
            return _error(400, str(exc))
        if isinstance(exc, RerankerUnavailableError):  # rerank=true, no reranker here
            return _error(400, f"this server cannot rerank: {exc.for_door(RERANKER_FIX)}")
        if isinstance(exc, ModelLoadError):
            return _error(400, f"this server cannot do that: {exc}")
        if isinstance(exc, IndexLockedError):
            return _error(503, f"the store is busy: {exc}")
        if isinstance(exc, ParserBusyError):
            response = _error(503, f"the server is busy parsing uploads: {exc}")
            response.headers["Retry-After"] = str(PARSE_RETRY_AFTER)
            return response
        _log.error("request failed", exc_info=exc)
        return _error(500, "internal error: the store failed; see the server log")

    @app.exception_handler(Exception)
    async def unexpected(request: Request, exc: Exception) -> JSONResponse:
        _log.error("unexpected error", exc_info=exc)
        return _error(500, "internal error; see the server log")


def _install_openapi(app: FastAPI) -> None:
    """The OpenAPI document with our error responses in place of FastAPI's 422."""

    def openapi() -> dict[str, Any]:
        if app.openapi_schema:
            return app.openapi_schema
        schema = get_openapi(
            title=app.title,
            version=app.version,
            description=app.description,
            routes=app.routes,
        )
        for path in schema.get("paths", {}).values():
            for operation in path.values():
                operation.get("responses", {}).pop("422", None)
        schema["components"]["securitySchemes"] = {"bearer": {"type": "http", "scheme": "bearer"}}
        schema["security"] = [{"bearer": []}]
        app.openapi_schema = schema
        return schema

    app.openapi = openapi  # type: ignore[method-assign]


# -- body size limit ------------------------------------------------------------------------

_Scope = MutableMapping[str, Any]
_Message = MutableMapping[str, Any]
_Receive = Callable[[], Awaitable[_Message]]
_Send = Callable[[_Message], Awaitable[None]]


class _BodyLimit:
    """Refuse (413, JSON) a request whose body is over ``max_bytes``: by its
    Content-Length before anything is read, else as it streams in (an HTTP error that
    FastAPI hands to the JSON error handler). Hand-rolled: FastAPI's own limit answers in
    plain text, and every error of this server is JSON."""

    def __init__(self, app: Callable[[_Scope, _Receive, _Send], Awaitable[None]], max_bytes: int):
        self.app = app
        self.max_bytes = max_bytes

    async def __call__(self, scope: _Scope, receive: _Receive, send: _Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        for name, value in scope.get("headers", []):
            if name == b"content-length":
                declared = int(value) if value.isdigit() else -1
                if not 0 <= declared <= self.max_bytes:
                    await self._too_large()(scope, receive, send)
                    return
        seen = 0

        async def limited() -> _Message:
            nonlocal seen
            message = await receive()
            if message["type"] == "http.request":
                seen += len(message.get("body", b""))
                if seen > self.max_bytes:
                    raise StarletteHTTPException(413, self._message())
            return message

        await self.app(scope, limited, send)

    def _message(self) -> str:
        return f"request body over the limit of {self.max_bytes:,} bytes"

    def _too_large(self) -> JSONResponse:
        return _error(413, self._message(), {"limit": self.max_bytes})

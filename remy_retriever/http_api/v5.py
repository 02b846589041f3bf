"""supermemory's v5 API (``/ns/{namespace}/...``, the official SDK ``supermemory`` 5.x)
on ``remy serve``: a translation onto the same engine as ``/v3`` and ``/v4``.

A namespace is a container tag: every route checks the caller's key may use it (403
otherwise, as for a container tag) and reads and writes inside it only, through the
engine's scoped calls (:class:`~remy_retriever.memory.LinkedDocuments`,
:class:`~remy_retriever.memory.MemoryStore`). ``id`` is the caller's document id (a
customId). ``group`` values are stored with the metadata. ``filter`` (a
``FilterExpression``) becomes ``where`` in the core
(:mod:`remy_retriever.supermemory.expressions`, through the ``/v3`` filter tree).
``searchMode`` ``memories``/``chunks``/``hybrid`` is the memory search's ``memories``/
``documents``/``hybrid`` (hybrid without duplicates); ``threshold`` is on the calibrated
0-1 relevance; ``rerank`` ``order`` uses the configured cross-encoder, ``aggregate``
merges the chunks of one document. The profile is
:func:`remy_retriever.memory.listing.profile`, over the buckets of
:func:`remy_retriever.memory.buckets.profile_buckets`. Memory counts, the update of a
file document and bucket definitions are in :mod:`.v5_more`. Connectors, organization
and feedback answer a JSON 501 naming what is not supported.
"""

from __future__ import annotations

import dataclasses
import json
import math
import os
import time
from enum import Enum
from typing import Annotated, Any

from fastapi import FastAPI, File, Form, Query, UploadFile
from fastapi.responses import JSONResponse

from ..errors import DocumentNotFoundError, InvalidInputError
from ..loaders import MissingExtraError, ParseLimits, ParserPool, load_bytes, loader_for
from ..memory import CUSTOM_ID_KEY, Memory, public_metadata, wire_document_id
from ..memory.buckets import profile_buckets
from ..memory.listing import container_memories, document_chunks, live_memory_count, profile
from ..memory.listing import forget_matching as forget_by_query
from ..retriever import StoredChunk, StoredDocument
from ..schema.document import CONTAINER_TAG_KEY
from ..schema.filters import and_where, scope_where
from ..supermemory.expressions import where_from_expression
from ..util.reprs import short_repr
from . import v5_wire as w
from .auth import NotFoundError
from .service import Service
from .v5_more import Caller, install_v5_more, namespace_in

__all__ = ["install_v5"]

Json = dict[str, Any]
_UNSUPPORTED = {
    "connectors": "connectors (remy syncs no outside sources; add documents instead)",
    "organization": "organization settings (remy has no organizations)",
    "feedback": "feedback (remy learns nothing from feedback)",
}


def _not_supported(what: str) -> JSONResponse:
    return JSONResponse(
        {"error": f"not supported by remy: {what}", "details": None}, status_code=501
    )


def install_v5(
    app: FastAPI, service: Service, *, parsers: ParserPool, parse_limits: ParseLimits
) -> None:
    """Register the v5 routes on ``app``."""
    docs = service.documents
    tags: list[str | Enum] = ["v5"]

    def prepare(ns: str, item: w.DocumentInput) -> Any:
        meta = dict(item.metadata or {})
        for key, value in (item.group or {}).items():
            if key in meta and meta[key] != value:
                msg = f"group[{key!r}] differs from metadata[{key!r}]; use one value"
                raise InvalidInputError(msg)
            meta[key] = value
        return docs.prepare(content=item.content, tag=ns, custom_id=item.id, metadata=meta)

    def where_in(ns: str, expression: object) -> dict[str, Any] | None:
        scope = scope_where([ns], key=CONTAINER_TAG_KEY)
        tree = where_from_expression(
            expression,
            values=lambda keys: service.retriever.scan_metadata_values(keys, where=scope),
        )
        return and_where(tree, scope)

    def memory_where(ns: str, expression: object) -> dict[str, Any] | None:
        return where_from_expression(
            expression,
            values=lambda keys: service.memories.scan_metadata_values(keys, container_tags=[ns]),
        )

    # -- documents ------------------------------------------------------------------------

    @app.post("/ns/{namespace}/document", response_model=w.DocumentRef, tags=tags)
    def add(namespace: str, body: w.AddBody, caller: Caller) -> Json:
        ns = namespace_in(caller, namespace)
        document = prepare(ns, body)
        doc_id = docs.add(document, scope=[ns])
        return w.DocumentRef(id=wire_document_id(doc_id, document.metadata)).wire()

    @app.post("/ns/{namespace}/document/batch", response_model=w.BatchAddResult, tags=tags)
    def batch_add(namespace: str, body: w.BatchBody, caller: Caller) -> Json:
        ns = namespace_in(caller, namespace)
        results: list[w.BatchItemResult | None] = []
        prepared = {}
        for i, item in enumerate(body.documents):
            try:
                prepared[i] = prepare(ns, item)
                results.append(None)
            except InvalidInputError as exc:
                results.append(w.BatchItemResult(id=item.id or "", status="error", error=str(exc)))
        written = docs.add_many(list(prepared.values()), scope=[ns])
        for i, outcome in zip(prepared, written):
            if isinstance(outcome, str):
                the_id = wire_document_id(outcome, prepared[i].metadata)
                results[i] = w.BatchItemResult(id=the_id, status="done")
            else:
                name = body.documents[i].id or ""
                results[i] = w.BatchItemResult(id=name, status="error", error=str(outcome))
        done = [r for r in results if r is not None]
        failed = sum(r.status == "error" for r in done)
        return w.BatchAddResult(results=done, count=len(done) - failed, failed=failed).wire()

    def upload(
        ns: str,
        file: UploadFile,
        custom_id: str | None,
        metadata: str | None,
        keep: StoredDocument | None = None,
    ) -> Json:
        name = os.path.basename(file.filename or "") or "upload.txt"
        if loader_for(name) is None:
            msg = f"cannot read {short_repr(name)}: upload a .pdf, .html, .docx, .md or .txt file"
            raise InvalidInputError(msg)
        try:
            loaded = load_bytes(file.file.read(), name, limits=parse_limits, pool=parsers)
        except MissingExtraError as exc:
            raise InvalidInputError(str(exc)) from None
        meta = _json_object(metadata)
        if keep is not None and meta is None:
            meta = public_metadata(keep.document.metadata)
        document = docs.prepare(
            content=loaded.text,
            tag=ns,
            custom_id=custom_id,
            metadata=meta,
            title=loaded.title,
            doc_type=loaded.type,
            pages=loaded.pages,
        )
        if keep is not None:  # an update: the stored document keeps its id
            document = dataclasses.replace(document, id=keep.document.id)
        doc_id = docs.add(document, scope=[ns])
        return w.DocumentRef(id=wire_document_id(doc_id, document.metadata)).wire()

    @app.post("/ns/{namespace}/document/file", response_model=w.DocumentRef, tags=tags)
    def upload_file(
        namespace: str,
        caller: Caller,
        file: Annotated[UploadFile, File()],
        metadata: Annotated[str | None, Form()] = None,
        group: Annotated[str | None, Form(description="Stored with the metadata.")] = None,
        supporting_context: Annotated[
            str | None, Form(alias="supportingContext", description=w.IGNORED)
        ] = None,
        date: Annotated[str | None, Form(description=w.IGNORED)] = None,
        task_type: Annotated[str | None, Form(alias="taskType", description=w.IGNORED)] = None,
        dreaming: Annotated[str | None, Form(description=w.IGNORED)] = None,
        file_type: Annotated[str | None, Form(alias="fileType", description=w.IGNORED)] = None,
        mime_type: Annotated[str | None, Form(alias="mimeType", description=w.IGNORED)] = None,
    ) -> Json:
        ns = namespace_in(caller, namespace)
        return upload(ns, file, None, _merge_json(metadata, group))

    @app.post("/ns/{namespace}/document/file/{doc_id}", response_model=w.DocumentRef, tags=tags)
    def replace_with_file(
        namespace: str,
        doc_id: str,
        caller: Caller,
        file: Annotated[UploadFile, File()],
        metadata: Annotated[str | None, Form()] = None,
        group: Annotated[str | None, Form(description="Stored with the metadata.")] = None,
    ) -> Json:
        ns = namespace_in(caller, namespace)
        return upload(ns, file, doc_id, _merge_json(metadata, group))

    @app.get("/ns/{namespace}/document/{doc_id}", response_model=w.DocumentOut, tags=tags)
    def get_document(
        namespace: str, doc_id: str, caller: Caller, include: str | None = None
    ) -> Json:
        ns = namespace_in(caller, namespace)
        stored = docs.visible(doc_id, scope=[ns])
        wanted = {p.strip() for p in (include or "").split(",") if p.strip()}
        out = _document(stored, content=True)
        if "memories" in wanted:
            out.memories = [_memory(m) for m in docs.memories_of(stored.document.id)]
        return out.wire()

    @app.patch("/ns/{namespace}/document/{doc_id}", response_model=w.DocumentRef, tags=tags)
    def update_document(namespace: str, doc_id: str, body: w.UpdateBody, caller: Caller) -> Json:
        ns = namespace_in(caller, namespace)
        stored = docs.visible(doc_id, scope=[ns]).document
        docs.update(stored.id, scope=[ns], content=body.content)
        return w.DocumentRef(id=wire_document_id(stored.id, stored.metadata)).wire()

    @app.delete("/ns/{namespace}/document", response_model=w.DeleteDocumentsResult, tags=tags)
    def delete_documents(namespace: str, body: w.DeleteDocumentsBody, caller: Caller) -> Json:
        ns = namespace_in(caller, namespace)
        doomed, errors = [], []
        for doc_id in body.ids:
            try:
                doomed.append(docs.visible(doc_id, scope=[ns]).document.id)
            except (DocumentNotFoundError, InvalidInputError) as exc:
                errors.append(w.ItemError(id=doc_id, error=str(exc)))
        return w.DeleteDocumentsResult(count=docs.delete(doomed), errors=errors).wire()

    # -- search and profile -----------------------------------------------------------

    @app.post("/ns/{namespace}/search", response_model=w.SearchResponse, tags=tags)
    def search(namespace: str, body: w.SearchBody, caller: Caller) -> Json:
        ns = namespace_in(caller, namespace)
        started = time.perf_counter()
        include = body.include or w.SearchInclude()
        mode = {"chunks": "documents"}.get(body.search_mode, body.search_mode)
        response = service.memories.search(
            body.query,
            search_mode=mode,  # type: ignore[arg-type]
            limit=body.limit,
            threshold=body.threshold,
            include={
                "documents": bool(include.documents),
                "forgottenMemories": bool(include.forgotten),
            },
            container_tag=ns,
            where=memory_where(ns, body.filter),
            rerank=body.rerank == "order",
            distinct=body.search_mode == "hybrid",
            aggregate=body.rerank == "aggregate",
        )
        results = [_result(r.to_dict(), service, bool(include.related)) for r in response.results]
        elapsed = (time.perf_counter() - started) * 1000
        return w.SearchResponse(results=results, search_time=round(elapsed, 3)).wire()

    @app.post("/ns/{namespace}/profile", response_model=w.ProfileResponse, tags=tags)
    def get_profile(namespace: str, body: w.ProfileBody, caller: Caller) -> Json:
        ns = namespace_in(caller, namespace)
        memories = container_memories(service.memories, ns, where=memory_where(ns, body.filter))
        made = profile(memories, profile_buckets(service.memories, ns, body.buckets))

        def facts(ms: Any) -> list[w.ProfileFact]:
            return [w.ProfileFact(id=m.id, memory=m.content) for m in ms]

        return w.ProfileResponse(
            profile=w.Profile(
                static=facts(made.static),
                dynamic=facts(made.dynamic),
                buckets={k: facts(v) for k, v in made.buckets.items()},
            )
        ).wire()

    @app.post("/ns/{namespace}/list/{kind}", response_model=w.ListResponse, tags=tags)
    def list_items(
        namespace: str,
        kind: str,
        caller: Caller,
        body: w.ListBody | None = None,
        page: int = 1,
        limit: int = 50,
        sort: str = "createdAt",
        order: str = "desc",
    ) -> Json:
        ns = namespace_in(caller, namespace)
        body = body or w.ListBody()
        if kind not in ("documents", "memories", "chunks"):
            msg = f"list type {short_repr(kind)} is not one of documents, chunks, memories"
            raise InvalidInputError(msg)
        if not 1 <= page <= 10**6 or not 1 <= limit <= 1000:
            msg = f"page must be 1 or more and limit 1-1000, got page={page}, limit={limit}"
            raise InvalidInputError(msg)
        include = body.include or w.ListInclude()
        reverse = order != "asc"
        docs_out: list[w.DocumentOut] = []
        memories_out: list[w.MemoryOut] = []
        chunks_out: list[w.ChunkOut] = []
        if kind == "memories":
            found = container_memories(
                service.memories,
                ns,
                where=memory_where(ns, body.filter),
                forgotten=bool(include.forgotten),
            )
            key = "updated_at" if sort == "updatedAt" else "created_at"
            found.sort(key=lambda m: (getattr(m, key), m.id), reverse=reverse)
            total = len(found)
            memories_out = [_memory(m) for m in found[(page - 1) * limit : page * limit]]
        elif kind == "documents":
            ids = service.retriever.document_ids(where_in(ns, body.filter))
            stored = list(service.retriever.get_documents(ids).values())
            key = "updated_at" if sort == "updatedAt" else "created_at"
            stored.sort(key=lambda s: (getattr(s, key), s.document.id), reverse=reverse)
            total = len(stored)
            for s in stored[(page - 1) * limit : page * limit]:
                item = _document(s, content=bool(include.content))
                if include.memory_count:
                    item.system.memory_count = live_memory_count(docs, s.document.id)
                docs_out.append(item)
        else:
            ids = service.retriever.document_ids(where_in(ns, body.filter))
            stored = sorted(
                service.retriever.get_documents(ids).values(),
                key=lambda s: (s.created_at, s.document.id),
                reverse=reverse,
            )
            chunks = [(s, c) for s in stored for c in document_chunks(service.retriever, s)]
            total = len(chunks)
            chunks_out = [_chunk(s, c) for s, c in chunks[(page - 1) * limit : page * limit]]
        pagination = w.Pagination(
            current_page=page, limit=limit, total_items=total, total_pages=math.ceil(total / limit)
        )
        return w.ListResponse(
            documents=docs_out, chunks=chunks_out, memories=memories_out, pagination=pagination
        ).wire()

    # -- memories ---------------------------------------------------------------------

    def visible_memory(ns: str, memory_id: str) -> Memory:
        try:
            memory = service.memories.get(memory_id, container_tags=[ns])
        except (LookupError, InvalidInputError):
            memory = None
        if memory is None:
            msg = f"no memory with id {memory_id!r} in namespace {ns!r}"
            raise NotFoundError(msg)
        return memory

    @app.get("/ns/{namespace}/memories/{memory_id}", response_model=w.MemoryDetails, tags=tags)
    def get_memory(namespace: str, memory_id: str, caller: Caller) -> Json:
        ns = namespace_in(caller, namespace)
        memory = visible_memory(ns, memory_id)
        return w.MemoryDetails(**_memory(memory).model_dump()).wire()

    @app.delete("/ns/{namespace}/memories", response_model=w.ForgetResult, tags=tags)
    def forget(namespace: str, body: w.ForgetBody, caller: Caller) -> Json:
        ns = namespace_in(caller, namespace)
        matches, errors = [], []
        with docs.lock:
            for memory_id in body.ids:
                try:
                    memory = visible_memory(ns, memory_id)
                    docs.forget_memory(memory)
                    matches.append(w.ForgetMatch(id=memory.id, memory=memory.content))
                except (NotFoundError, InvalidInputError) as exc:
                    errors.append(w.ItemError(id=memory_id, error=str(exc)))
        return w.ForgetResult(count=len(matches), errors=errors, matches=matches).wire()

    @app.delete("/ns/{namespace}/memories/semantic", response_model=w.ForgetResult, tags=tags)
    def forget_matching(namespace: str, body: w.ForgetMatchingBody, caller: Caller) -> Json:
        ns = namespace_in(caller, namespace)
        forgotten = forget_by_query(docs, body.query, ns, dry_run=body.dry_run)
        matches = [w.ForgetMatch(id=m.id, memory=m.content) for m in forgotten]
        return w.ForgetResult(count=len(matches), errors=[], matches=matches).wire()

    # -- namespaces -------------------------------------------------------------------

    def namespace_of(ns: str) -> w.Namespace:
        ids = docs.ids_in([ns])
        stored = list(service.retriever.get_documents(ids).values())
        memories = container_memories(service.memories, ns)
        created = min((s.created_at for s in stored), default=None)
        updated = max((s.updated_at for s in stored), default=None)
        return w.Namespace(
            id=ns,
            namespace=ns,
            document_count=len(stored),
            memory_count=len(memories),
            system=w.System(created_at=created or _EPOCH, updated_at=updated or _EPOCH),
        )

    @app.get("/ns", response_model=w.NamespaceList, tags=tags)
    def list_namespaces(
        caller: Caller, page: int = 1, limit: int = 50, q: str | None = None
    ) -> Json:
        if not 1 <= page <= 10**6 or not 1 <= limit <= 1000:
            msg = f"page must be 1 or more and limit 1-1000, got page={page}, limit={limit}"
            raise InvalidInputError(msg)
        scope = None if caller.tags is None else sorted(caller.tags)
        seen = service.retriever.scan_metadata_values(
            [CONTAINER_TAG_KEY], where=scope_where(scope, key=CONTAINER_TAG_KEY)
        )[CONTAINER_TAG_KEY]
        names = sorted({v for v in seen if isinstance(v, str) and caller.can_see(v)})
        names = [n for n in names if q is None or q.casefold() in n.casefold()]
        chosen = [namespace_of(n) for n in names[(page - 1) * limit : page * limit]]
        pagination = w.Pagination(
            current_page=page,
            limit=limit,
            total_items=len(names),
            total_pages=math.ceil(len(names) / limit),
        )
        return w.NamespaceList(namespaces=chosen, pagination=pagination).wire()

    @app.get("/ns/{namespace}", response_model=w.NamespaceDetails, tags=tags)
    def get_namespace(namespace: str, caller: Caller) -> Json:
        found = namespace_of(namespace_in(caller, namespace))
        return w.NamespaceDetails(namespace=found.namespace, system=found.system).wire()

    @app.patch("/ns/{namespace}", response_model=w.NamespaceDetails, tags=tags)
    def update_namespace(namespace: str, body: w.NamespaceUpdateBody, caller: Caller) -> Json:
        found = namespace_of(namespace_in(caller, namespace))
        return w.NamespaceDetails(namespace=found.namespace, system=found.system).wire()

    @app.delete("/ns/{namespace}", response_model=w.NamespaceDeleted, tags=tags)
    def delete_namespace(
        namespace: str, caller: Caller, move_to: Annotated[str | None, Query(alias="moveTo")] = None
    ) -> Json:
        ns = namespace_in(caller, namespace)
        if move_to is not None:
            msg = "moveTo is not supported by remy; delete the namespace or keep it"
            raise InvalidInputError(msg)
        with docs.lock:
            memories = len(container_memories(service.memories, ns))
            deleted = docs.delete(docs.ids_in([ns]))
        return w.NamespaceDeleted(
            namespace=ns, deleted_documents_count=deleted, deleted_memories_count=memories
        ).wire()

    # -- not supported ----------------------------------------------------------------

    for path in ("/ns/{namespace}/connectors", "/ns/{namespace}/connectors/{rest:path}"):
        app.add_api_route(
            path,
            lambda: _not_supported(_UNSUPPORTED["connectors"]),
            methods=["GET", "POST", "PATCH", "PUT", "DELETE"],
            include_in_schema=False,
        )
    for name in ("organization", "feedback"):
        app.add_api_route(
            f"/{name}",
            lambda what=_UNSUPPORTED[name]: _not_supported(what),
            methods=["GET", "POST", "PATCH", "PUT", "DELETE"],
            include_in_schema=False,
        )

    def replace_stored(ns: str, file: UploadFile, stored: StoredDocument, meta: str | None) -> Json:
        custom = stored.document.metadata.get(CUSTOM_ID_KEY)
        return upload(ns, file, custom if isinstance(custom, str) else None, meta, keep=stored)

    install_v5_more(app, service, upload=replace_stored, merge_json=_merge_json)


_EPOCH = "1970-01-01T00:00:00Z"


def _json_object(raw: str | None) -> dict[str, Any] | None:
    if raw is None or not raw.strip():
        return None
    try:
        value = json.loads(raw)
    except ValueError:
        value = None
    if not isinstance(value, dict):
        msg = f"metadata must be a JSON object, got {raw!r:.80}"
        raise InvalidInputError(msg)
    return value


def _merge_json(metadata: str | None, group: str | None) -> str | None:
    meta = _json_object(metadata) or {}
    meta.update(_json_object(group) or {})
    return json.dumps(meta) if meta else None


def _document(stored: StoredDocument, *, content: bool) -> w.DocumentOut:
    doc = stored.document
    return w.DocumentOut(
        id=wire_document_id(doc.id, doc.metadata),
        title=doc.title,
        type=doc.type or "text",
        summary=doc.summary,
        content=doc.text if content else None,
        metadata=public_metadata(doc.metadata),
        url=doc.url,
        system=w.DocumentSystem(created_at=stored.created_at, updated_at=stored.updated_at),
    )


def _chunk(stored: StoredDocument, chunk: StoredChunk) -> w.ChunkOut:
    meta = public_metadata(chunk.metadata)
    if chunk.citation.page is not None:
        meta["page"] = chunk.citation.page
    if chunk.citation.page_end is not None:
        meta["pageEnd"] = chunk.citation.page_end
    return w.ChunkOut(
        id=chunk.id,
        position=chunk.citation.chunk_index,
        content=chunk.text,
        type=stored.document.type or "text",
        metadata=meta,
        system=w.System(created_at=stored.created_at),
        document_id=wire_document_id(stored.document.id, stored.document.metadata),
    )


def _memory(memory: Memory) -> w.MemoryOut:
    return w.MemoryOut(
        id=memory.id,
        memory=memory.content,
        metadata=public_metadata(memory.metadata),
        is_static=memory.version == 1,
        is_latest=memory.latest,
        is_forgotten=memory.forgotten,
        version=memory.version,
        system=w.System(created_at=memory.created_at, updated_at=memory.updated_at),
    )


def _result(raw: dict[str, Any], service: Service, related: bool) -> w.SearchResult:
    """A memory-search result (``to_dict`` form) as a v5 search result."""
    meta = public_metadata(raw.get("metadata"))
    for key in ("page", "pageEnd"):
        if raw.get(key) is not None:
            meta[key] = raw[key]
    included = None
    documents = raw.get("documents") or []
    if documents:
        doc = documents[0]
        included = w.Included(
            document=w.IncludedDocument(
                id=wire_document_id(doc["id"], doc.get("metadata")),
                title=doc.get("title"),
                type=doc.get("type"),
                metadata=public_metadata(doc.get("metadata")),
                system=w.System(created_at=doc.get("createdAt"), updated_at=doc.get("updatedAt")),
            )
        )
    if related and "memory" in raw:
        history = service.memories.history(raw["id"])
        version = int(raw.get("version") or 1)

        def rel(m: Memory) -> w.RelatedMemory:
            return w.RelatedMemory(
                id=m.id,
                relation="updates",
                version=m.version,
                memory=m.content,
                metadata=public_metadata(m.metadata),
                system=w.System(updated_at=m.updated_at),
            )

        included = included or w.Included()
        included.related = w.Related(
            parents=[rel(m) for m in history if m.version < version],
            children=[rel(m) for m in history if m.version > version],
            siblings=[],
        )
    return w.SearchResult(
        id=raw["id"],
        memory=raw.get("memory"),
        chunk=raw.get("chunk"),
        metadata=meta,
        similarity=float(raw["similarity"]),
        is_latest=True,
        system=w.System(updated_at=raw.get("updatedAt")),
        included=included,
    )

"""More v5 routes (beside :mod:`.v5`, which registers them): document memory counts,
the update of a file document, and profile bucket definitions. They translate only: the
counting is :func:`remy_retriever.memory.listing.memory_counts`, the bucket storage
:mod:`remy_retriever.memory.buckets`; every route is scoped to the caller's namespace
as in :mod:`.v5`.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from enum import Enum
from typing import Annotated, Any

from fastapi import Depends, FastAPI, File, Form, Request, UploadFile

from ..memory import wire_document_id
from ..memory.buckets import define_buckets, defined_buckets, remove_buckets
from ..memory.listing import memory_counts
from ..retriever import StoredDocument
from . import v5_wire as w
from .auth import KeyRing, Principal, check_tag
from .service import Service

__all__ = ["Caller", "install_v5_more", "namespace_in"]

Json = dict[str, Any]
#: ``upload(ns, file, stored, metadata_json)``: :mod:`.v5`'s upload, replacing ``stored``.
Upload = Callable[[str, UploadFile, StoredDocument, "str | None"], Json]


def _caller(request: Request) -> Principal:
    keys: KeyRing = request.app.state.keys
    return keys.principal(request.headers.get("authorization"))


#: The caller of a v5 route (401 without a valid key).
Caller = Annotated[Principal, Depends(_caller)]


def namespace_in(caller: Principal, namespace: str) -> str:
    """``namespace``, checked, if ``caller``'s key may use it (else 403)."""
    return caller.require(check_tag(namespace, "namespace"))


def install_v5_more(
    app: FastAPI,
    service: Service,
    *,
    upload: Upload,
    merge_json: Callable[[str | None, str | None], str | None],
) -> None:
    """Register these routes; ``upload`` is :mod:`.v5`'s file upload (replacing a
    stored document), ``merge_json`` its merge of the metadata and group fields."""
    docs = service.documents
    tags: list[str | Enum] = ["v5"]

    @app.post(
        "/ns/{namespace}/list/documents/memory-counts", response_model=w.MemoryCounts, tags=tags
    )
    def count_memories(namespace: str, body: w.MemoryCountsBody, who: Caller) -> Json:
        ns = namespace_in(who, namespace)
        counts = memory_counts(docs, body.ids, ns)
        return w.MemoryCounts(
            counts=[w.MemoryCount(id=i, memory_count=n) for i, n in counts]
        ).wire()

    @app.patch("/ns/{namespace}/document/file/{doc_id}", response_model=w.DocumentRef, tags=tags)
    def update_file(
        namespace: str,
        doc_id: str,
        who: Caller,
        file: Annotated[UploadFile | None, File()] = None,
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
        ns = namespace_in(who, namespace)
        stored = docs.visible(doc_id, scope=[ns])
        meta = merge_json(metadata, group) if metadata or group else None
        if file is not None:
            return upload(ns, file, stored, meta)
        if meta is not None:
            docs.update(stored.document.id, scope=[ns], metadata=json.loads(meta))
        doc = stored.document
        return w.DocumentRef(id=wire_document_id(doc.id, doc.metadata)).wire()

    @app.get("/ns/{namespace}/profile/buckets", response_model=w.ProfileBuckets, tags=tags)
    def get_buckets(namespace: str, who: Caller) -> Json:
        ns = namespace_in(who, namespace)
        return w.ProfileBuckets(buckets=defined_buckets(service.memories, ns)).wire()

    @app.put("/ns/{namespace}/profile/buckets", response_model=w.ProfileBuckets, tags=tags)
    def set_buckets(namespace: str, body: w.BucketsSetBody, who: Caller) -> Json:
        ns = namespace_in(who, namespace)
        return w.ProfileBuckets(buckets=define_buckets(service.memories, ns, body.buckets)).wire()

    @app.delete("/ns/{namespace}/profile/buckets", response_model=w.ProfileBuckets, tags=tags)
    def delete_buckets(namespace: str, body: w.BucketsDeleteBody, who: Caller) -> Json:
        ns = namespace_in(who, namespace)
        return w.ProfileBuckets(buckets=remove_buckets(service.memories, ns, body.buckets)).wire()

"""What each ``remy serve`` route does, without HTTP: searches, listings and memory
operations for one caller (:class:`~.auth.Principal`), answering in the SDK's shapes.
The rules (documents and their memories, find-by-content, the value scans of the
filters) are the engine's (:mod:`remy_retriever.memory`); this module maps onto them.

Every operation narrows to the caller's container tags before anything runs: the tag
clause is added to the ``where`` of every search branch (so other containers never
reach fusion), the values a filter is resolved against are read inside that scope only,
and a document or memory named by id is looked up and refused as missing when it is in
another container.
"""

from __future__ import annotations

import math
import time
from collections.abc import Mapping, Sequence
from typing import Any

from ..errors import InvalidInputError
from ..memory import (
    CUSTOM_ID_KEY,
    DocumentNotFoundError,
    LinkedDocuments,
    Memory,
    MemoryStore,
    public_metadata,
    wire_document_id,
)
from ..retriever import Retriever, StoredDocument
from ..schema.document import CONTAINER_TAG_KEY
from ..schema.filters import and_where, document_where, scope_where
from ..supermemory.filters import where_from_filters
from . import wire
from .auth import NotFoundError, Principal, check_tag
from .shapes import sdk_type

__all__ = ["Service"]


class Service:
    """The engine behind the routes: a document :class:`Retriever` and a
    :class:`MemoryStore` linked to it (memories in their own collection)."""

    def __init__(self, retriever: Retriever, memories: MemoryStore) -> None:
        self.retriever = retriever
        self.memories = memories
        self.documents = LinkedDocuments(memories)

    # -- filters ----------------------------------------------------------------------

    def where(
        self, filters: object, tags: Sequence[str] | None, *, doc_id: str | None = None
    ) -> dict[str, Any] | None:
        """The ``where`` of a document request: the caller's scope (tags, a document
        id) AND its filter tree, the tree's value scans read inside the scope only."""
        scope = and_where(
            scope_where(tags, key=CONTAINER_TAG_KEY),
            None if doc_id is None else document_where(doc_id),
        )
        tree = where_from_filters(
            filters, values=lambda keys: self.retriever.scan_metadata_values(keys, where=scope)
        )
        return and_where(tree, scope)

    # -- documents --------------------------------------------------------------------

    def get_document(self, principal: Principal, doc_id: str) -> wire.DocumentGetResponse:
        stored = self.documents.visible(doc_id, scope=principal.tags)
        memories = self.documents.memories_of(stored.document.id)
        fields = _document_fields(stored, content=True)
        if memories:
            fields["memories"] = [_document_memory(m) for m in memories]
        return wire.DocumentGetResponse(**fields)

    def list_documents(
        self, principal: Principal, body: wire.ListDocumentsBody
    ) -> wire.DocumentListResponse:
        _no_filepath(body.filepath)
        limit = _page_number(body.limit, "limit", hi=1100)
        page = _page_number(body.page, "page", hi=10**9)
        tags = principal.scope(_tags(None, body.container_tags))
        ids = self.retriever.document_ids(self.where(body.filters, tags))
        stored = list(self.retriever.get_documents(ids).values())
        key = "created_at" if body.sort == "createdAt" else "updated_at"
        stored.sort(key=lambda s: (getattr(s, key), s.document.id), reverse=body.order == "desc")
        chosen = stored[(page - 1) * limit : page * limit]
        return wire.DocumentListResponse(
            memories=[
                wire.DocumentOut(**_document_fields(s, content=body.include_content))
                for s in chosen
            ],
            pagination=wire.Pagination(
                current_page=page,
                total_items=len(stored),
                total_pages=math.ceil(len(stored) / limit),
                limit=limit,
            ),
        )

    def delete_bulk(
        self, principal: Principal, body: wire.DeleteBulkBody
    ) -> wire.DeleteBulkResponse:
        _no_filepath(body.filepath)
        if not body.ids and not body.container_tags:
            msg = "name the documents to delete: ids (up to 100) or containerTags"
            raise InvalidInputError(msg)
        doomed: list[str] = []
        errors: list[wire.BulkError] = []
        for doc_id in body.ids or []:
            try:
                doomed.append(self.documents.visible(doc_id, scope=principal.tags).document.id)
            except (DocumentNotFoundError, InvalidInputError) as exc:
                errors.append(wire.BulkError(id=doc_id, error=str(exc)))
        tags = None
        if body.container_tags:
            tags = [principal.require(check_tag(t)) for t in body.container_tags]
            doomed.extend(self.documents.ids_in(tags))
        deleted = self.documents.delete(doomed)
        return wire.DeleteBulkResponse(
            deleted_count=deleted,
            success=not errors,
            container_tags=tags,
            errors=errors if body.ids else None,
        )

    # -- search -----------------------------------------------------------------------

    def search_documents(
        self, principal: Principal, body: wire.SearchDocumentsBody
    ) -> dict[str, Any]:
        _no_filepath(body.filepath)
        if body.categories_filter:
            msg = "categoriesFilter is deprecated and not supported; filter on metadata instead"
            raise InvalidInputError(msg)
        tags = principal.scope(_tags(body.container_tag, body.container_tags))
        response = self.retriever.search_documents(
            body.q,
            limit=body.limit,
            chunk_threshold=body.chunk_threshold,
            document_threshold=body.document_threshold,
            only_matching_chunks=body.only_matching_chunks,
            include_full_docs=body.include_full_docs,
            include_summary=body.include_summary,
            rerank=bool(body.rerank),
            where=self.where(body.filters, tags, doc_id=self._stored_id(body.doc_id, tags)),
        )
        out = response.to_dict()
        for result in out["results"]:
            meta = result.get("metadata")
            result["documentId"] = wire_document_id(result["documentId"], meta)
            result["metadata"] = public_metadata(meta)
        return out

    def _stored_id(self, doc_id: str | None, tags: Sequence[str] | None) -> str | None:
        """The stored id of the document ``doc_id`` names in ``tags`` (a customId, or a
        stored id); one the caller cannot see is kept as given, and matches nothing."""
        if doc_id is None:
            return None
        try:
            return self.documents.visible(doc_id, scope=tags).document.id
        except DocumentNotFoundError:
            return doc_id

    def search_memories(
        self, principal: Principal, body: wire.SearchMemoriesBody
    ) -> dict[str, Any]:
        _no_filepath(body.filepath)
        include = body.include
        started = time.perf_counter()
        mode = "hybrid" if include.chunks and body.search_mode == "memories" else body.search_mode
        tags = principal.scope(_tags(body.container_tag, body.container_tags))
        where = where_from_filters(
            body.filters,
            values=lambda keys: self.memories.scan_metadata_values(keys, container_tags=tags),
        )
        flags = {
            "relatedMemories": include.related_memories,
            "documents": include.documents,
            "forgottenMemories": include.forgotten_memories,
        }
        results: list[dict[str, Any]] = []
        for tag in [None] if tags is None else tags:
            response = self.memories.search(
                body.q,
                search_mode=mode,
                limit=body.limit,
                threshold=body.threshold,
                include=flags,
                container_tag=tag,
                where=where,
                rerank=bool(body.rerank),
            )
            results.extend(r.to_dict() for r in response.results)
        results.sort(key=lambda r: -float(r["similarity"]))
        results = results[: body.limit]
        summaries = self._summaries(results) if include.summaries else {}
        for result in results:
            _clean_result(result, summaries)
        timing = round((time.perf_counter() - started) * 1000)
        return {"results": results, "timing": timing, "total": len(results)}

    def _summaries(self, results: Sequence[Mapping[str, Any]]) -> dict[str, str]:
        ids = sorted({d["id"] for r in results for d in r.get("documents") or []})
        stored = self.retriever.get_documents(ids) if ids else {}
        return {i: s.document.summary or _lead(s.document.text) for i, s in stored.items()}

    def native_search(self, principal: Principal, body: wire.NativeSearchBody) -> dict[str, Any]:
        started = time.perf_counter()
        tags = principal.scope(_tags(None, body.container_tags))
        where = and_where(body.where, scope_where(tags, key=CONTAINER_TAG_KEY))
        hits = self.retriever.search(
            body.q,
            k=body.k,
            mode=body.mode,
            where=where,
            rerank=bool(body.rerank),
            explain=body.explain,
            expand=body.expand,
            highlight=body.highlight,
        )
        timing = round((time.perf_counter() - started) * 1000)
        return {"results": [h.to_dict() for h in hits], "timing": timing, "total": len(hits)}

    # -- memories ---------------------------------------------------------------------

    def _find_memory(self, principal: Principal, body: wire.MemoryTarget) -> Memory:
        tag = principal.require(check_tag(body.container_tag))
        if body.id is None and body.content is None:
            msg = "name the memory: id, or its exact content"
            raise InvalidInputError(msg)
        if body.id is not None:
            try:
                memory = self.memories.get(body.id, container_tags=[tag])
            except (LookupError, InvalidInputError):
                memory = None
            if memory is None or memory.forgotten:
                msg = f"no memory with id {body.id!r} in container {tag!r}"
                raise NotFoundError(msg)
            if body.content is not None and memory.content != body.content:
                msg = f"memory {body.id!r} does not have the content given"
                raise NotFoundError(msg)
            return memory
        return self.memories.find_by_content(str(body.content), container_tag=tag)

    def update_memory(
        self, principal: Principal, body: wire.UpdateMemoryBody
    ) -> wire.UpdateMemoryResponse:
        if body.forget_after is not None:
            msg = "forgetAfter (expiry) is not supported by remy; forget the memory instead"
            raise InvalidInputError(msg)
        with self.documents.lock:
            memory = self._find_memory(principal, body)
            new = self.documents.update_memory(memory, body.new_content, metadata=body.metadata)
        return wire.UpdateMemoryResponse(
            id=new.id,
            memory=new.content,
            version=new.version,
            created_at=new.updated_at,
            parent_memory_id=new.parent_id,
            root_memory_id=new.root_id if new.version > 1 else None,
            metadata=public_metadata(new.metadata),
        )

    def forget_memory(
        self, principal: Principal, body: wire.ForgetMemoryBody
    ) -> wire.ForgetMemoryResponse:
        with self.documents.lock:
            memory = self._find_memory(principal, body)
            self.documents.forget_memory(memory)
        return wire.ForgetMemoryResponse(id=memory.id, forgotten=True)


def _tags(tag: str | None, tags: Sequence[str] | None) -> list[str] | None:
    names = [*([tag] if tag else []), *(tags or [])]
    return [check_tag(t) for t in names] or None


def _no_filepath(filepath: str | None) -> None:
    if filepath is not None:
        msg = "filepath filters are not supported by remy; filter on metadata instead"
        raise InvalidInputError(msg)


def _page_number(value: object, name: str, *, hi: int) -> int:
    try:
        number = float(value)  # type: ignore[arg-type]
    except (TypeError, ValueError):
        number = math.nan
    if not math.isfinite(number) or number != int(number) or not 1 <= number <= hi:
        msg = f"{name} must be a whole number from 1 to {hi}, got {value!r:.40}"
        raise InvalidInputError(msg)
    return int(number)


def _document_fields(stored: StoredDocument, *, content: bool) -> dict[str, Any]:
    doc = stored.document
    tag = doc.metadata.get(CONTAINER_TAG_KEY)
    custom = doc.metadata.get(CUSTOM_ID_KEY)
    fields: dict[str, Any] = {
        "id": wire_document_id(doc.id, doc.metadata),
        "custom_id": custom if isinstance(custom, str) else None,
        "container_tags": [tag] if isinstance(tag, str) else None,
        "created_at": stored.created_at,
        "updated_at": stored.updated_at,
        "filepath": doc.path,
        "metadata": public_metadata(doc.metadata),
        "summary": doc.summary,
        "title": doc.title,
        "type": sdk_type(doc.type),
        "url": doc.url,
    }
    if content:
        fields["content"] = doc.text
    return fields


def _document_memory(memory: Memory) -> wire.DocumentMemory:
    return wire.DocumentMemory(
        id=memory.id,
        memory=memory.content,
        version=memory.version,
        is_latest=memory.latest,
        is_forgotten=memory.forgotten,
        parent_memory_id=memory.parent_id,
        root_memory_id=memory.root_id if memory.version > 1 else None,
        metadata=public_metadata(memory.metadata),
        created_at=memory.created_at,
        updated_at=memory.updated_at,
    )


def _clean_result(result: dict[str, Any], summaries: Mapping[str, str]) -> None:
    """A memory-search result as the SDK reads it: user metadata only, linked documents
    with both timestamps (one deleted meanwhile is left out)."""
    if "metadata" in result:
        result["metadata"] = public_metadata(result["metadata"])
    context = result.get("context")
    if context:
        for entries in context.values():
            for entry in entries:
                entry["metadata"] = public_metadata(entry.get("metadata"))
    if "documents" in result:
        docs = []
        for doc in result["documents"]:
            if "createdAt" in doc and "updatedAt" in doc:
                if doc["id"] in summaries:
                    doc["summary"] = summaries[doc["id"]]
                doc["id"] = wire_document_id(doc["id"], doc.get("metadata"))
                doc["metadata"] = public_metadata(doc.get("metadata"))
                docs.append(doc)
        result["documents"] = docs


def _lead(text: str, limit: int = 300) -> str:
    """The first ``limit`` characters of ``text``, cut at a word."""
    flat = " ".join(text.split())
    if len(flat) <= limit:
        return flat
    return flat[:limit].rsplit(" ", 1)[0] + "..."

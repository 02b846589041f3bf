"""Request and response bodies of ``remy serve``, as pydantic models (the OpenAPI
document at ``/openapi.json`` is generated from them).

The supermemory routes take exactly the bodies the official SDK (``supermemory`` 3.62.0)
sends, camelCase on the wire; an unknown field is refused (HTTP 400) rather than
silently ignored. Fields remy cannot honour are accepted and ignored, and say so in
their description (``rewriteQuery`` needs an LLM; ``dreaming``, ``entityContext``,
``filterByMetadata``, ``documentDate``, ``taskType`` steer supermemory's LLM memory
extraction, which remy replaces by a deterministic rule). The responses have the shapes
the SDK's models parse.
"""

from __future__ import annotations

from typing import Any, Literal, Union

from pydantic import BaseModel, ConfigDict, Field, StrictBool, StrictFloat, StrictInt, StrictStr
from pydantic.alias_generators import to_camel

from ..schema.options import MAX_EXPAND
from .auth import TAG_PATTERN

__all__ = [
    "AddDocumentBody",
    "AddResponse",
    "BatchAddBody",
    "BatchAddResponse",
    "BatchItem",
    "BatchResult",
    "DeleteBulkBody",
    "DeleteBulkResponse",
    "DocumentGetResponse",
    "DocumentListResponse",
    "DocumentMemory",
    "DocumentOut",
    "ErrorResponse",
    "ForgetMemoryBody",
    "ForgetMemoryResponse",
    "ListDocumentsBody",
    "MemoryTarget",
    "NativeSearchBody",
    "NativeSearchResponse",
    "Pagination",
    "SearchDocumentsBody",
    "SearchMemoriesBody",
    "UpdateDocumentBody",
    "UpdateMemoryBody",
    "UpdateMemoryResponse",
]

IGNORED = "Accepted and ignored by remy (no LLM)."

Tag = Field(default=None, pattern=TAG_PATTERN, description="Container tag (user, project...).")
MetadataValue = Union[StrictStr, StrictBool, StrictInt, StrictFloat, list[StrictStr]]
Metadata = Union[dict[str, MetadataValue], None]
Filters = Union[dict[str, Any], str, None]
_FILTERS_HELP = (
    "supermemory's filter tree {AND|OR: [{key, value, filterType, negate, ignoreCase, "
    "numericOperator}]}, or the same as a JSON string; array_contains keeps what holds "
    "value as an exact item of a list metadata value."
)
_FILEPATH_HELP = "Filtering by filepath is not supported by remy: a request with it is refused."


class _Body(BaseModel):
    model_config = ConfigDict(alias_generator=to_camel, populate_by_name=True, extra="forbid")


class _Out(BaseModel):
    model_config = ConfigDict(alias_generator=to_camel, populate_by_name=True)

    def wire(self) -> dict[str, Any]:
        return self.model_dump(mode="json", by_alias=True, exclude_none=True)


# -- documents --------------------------------------------------------------------------


class _DocumentFields(_Body):
    container_tag: str | None = Tag
    container_tags: list[str] | None = Field(
        default=None, max_length=1, description="At most one tag per document in remy."
    )
    custom_id: str | None = Field(default=None, min_length=1, max_length=100)
    metadata: Metadata = None
    filepath: str | None = Field(default=None, max_length=4096)
    document_date: str | None = Field(default=None, description=IGNORED)
    dreaming: Literal["instant", "dynamic"] | None = Field(default=None, description=IGNORED)
    entity_context: str | None = Field(default=None, description=IGNORED)
    filter_by_metadata: dict[str, Any] | None = Field(default=None, description=IGNORED)
    task_type: Literal["memory", "superrag"] | None = Field(default=None, description=IGNORED)


class AddDocumentBody(_DocumentFields):
    """``client.add`` / ``documents.add``: one document (plain text)."""

    content: str = Field(min_length=1)


class BatchItem(_DocumentFields):
    content: str = Field(min_length=1)


class BatchAddBody(_DocumentFields):
    """``documents.batch_add``: up to 100 documents; the top-level fields are defaults."""

    documents: list[Union[BatchItem, str]] = Field(min_length=1, max_length=100)
    content: None = None


class UpdateDocumentBody(_DocumentFields):
    """``documents.update``: the fields given replace the stored ones."""

    content: str | None = Field(default=None, min_length=1)


class ListDocumentsBody(_Body):
    container_tags: list[str] | None = None
    filepath: str | None = Field(default=None, description=_FILEPATH_HELP)
    filters: Filters = Field(default=None, description=_FILTERS_HELP)
    include_content: bool = False
    limit: Union[int, float, str] = 50
    page: Union[int, float, str] = 1
    order: Literal["asc", "desc"] = "desc"
    sort: Literal["createdAt", "updatedAt"] = "createdAt"


class DeleteBulkBody(_Body):
    container_tags: list[str] | None = None
    filepath: str | None = Field(default=None, description=_FILEPATH_HELP)
    ids: list[str] | None = Field(default=None, max_length=100)


class AddResponse(_Out):
    id: str
    status: str


class BatchResult(_Out):
    id: str
    status: str
    error: str | None = None
    details: str | None = None


class BatchAddResponse(_Out):
    success: int
    failed: int
    results: list[BatchResult]


class DocumentMemory(_Out):
    id: str
    memory: str
    version: int
    is_latest: bool
    is_forgotten: bool
    is_inference: bool = False
    is_static: bool = False
    source_count: int = 1
    parent_memory_id: str | None = None
    root_memory_id: str | None = None
    metadata: dict[str, Any] | None = None
    created_at: str
    updated_at: str | None = None


DocumentType = Literal[
    "text",
    "pdf",
    "tweet",
    "google_doc",
    "google_slide",
    "google_sheet",
    "image",
    "video",
    "audio",
    "notion_doc",
    "webpage",
    "onedrive",
    "github_markdown",
    "granola",
]


class DocumentOut(_Out):
    id: str
    custom_id: str | None = None
    container_tags: list[str] | None = None
    content: str | None = None
    created_at: str
    updated_at: str
    filepath: str | None = None
    metadata: dict[str, Any] | None = None
    status: Literal["done"] = "done"
    summary: str | None = None
    title: str | None = None
    type: DocumentType
    url: str | None = None


class DocumentGetResponse(DocumentOut):
    dreaming_status: Literal["done"] = "done"
    latest_revision: int = 1
    raw: str | None = None
    task_type: Literal["memory"] = "memory"
    memories: list[DocumentMemory] | None = None

    def wire(self) -> dict[str, Any]:
        out = super().wire()
        out["raw"] = self.raw  # required by the SDK, even when null
        return out


class Pagination(_Out):
    current_page: int
    total_items: int
    total_pages: int
    limit: int


class DocumentListResponse(_Out):
    memories: list[DocumentOut]
    pagination: Pagination


class BulkError(_Out):
    id: str
    error: str


class DeleteBulkResponse(_Out):
    deleted_count: int
    success: bool
    container_tags: list[str] | None = None
    errors: list[BulkError] | None = None


# -- search -----------------------------------------------------------------------------


class SearchDocumentsBody(_Body):
    """``search.documents`` / ``search.execute`` (``/v3/search``)."""

    q: str = Field(min_length=1)
    container_tag: str | None = Tag
    container_tags: list[str] | None = None
    doc_id: str | None = Field(default=None, min_length=1)
    filters: Filters = Field(default=None, description=_FILTERS_HELP)
    chunk_threshold: float = Field(default=0.0, ge=0, le=1)
    document_threshold: float = Field(default=0.0, ge=0, le=1)
    include_full_docs: bool = False
    include_summary: bool = False
    only_matching_chunks: bool = False
    rerank: bool = False
    limit: int = Field(default=10, ge=1, le=1000)
    filepath: str | None = Field(default=None, description=_FILEPATH_HELP)
    categories_filter: list[str] | None = Field(
        default=None, description="Deprecated by supermemory; refused when not empty."
    )
    rewrite_query: bool = Field(default=False, description=IGNORED)


class Include(_Body):
    documents: bool = False
    related_memories: bool = False
    summaries: bool = False
    forgotten_memories: bool = False
    chunks: bool = Field(default=False, description="Deprecated: true means searchMode hybrid.")


class SearchMemoriesBody(_Body):
    """``search.memories`` (``/v4/search``)."""

    q: str = Field(min_length=1)
    container_tag: str | None = Tag
    container_tags: list[str] | None = None
    filters: Filters = Field(default=None, description=_FILTERS_HELP)
    include: Include = Field(default_factory=Include)
    limit: int = Field(default=10, ge=1, le=1000)
    threshold: float = Field(default=0.0, ge=0, le=1)
    search_mode: Literal["memories", "hybrid", "documents"] = "memories"
    rerank: bool = False
    filepath: str | None = Field(default=None, description=_FILEPATH_HELP)
    aggregate: bool = Field(default=False, description=IGNORED)
    rewrite_query: bool = Field(default=False, description=IGNORED)


class NativeSearchBody(_Body):
    """remy's own search (``/v1/search``): SearchHit results."""

    q: str = Field(min_length=1)
    k: int = Field(default=10, ge=1, le=1000)
    mode: Literal["semantic", "lexical", "hybrid"] = "hybrid"
    where: dict[str, Any] | None = Field(default=None, description="remy's where filter.")
    container_tags: list[str] | None = None
    rerank: bool = False
    explain: bool = False
    expand: int = Field(default=0, ge=0, le=MAX_EXPAND)
    highlight: bool = False


class NativeSearchResponse(_Out):
    results: list[dict[str, Any]]
    timing: int
    total: int


# -- memories ---------------------------------------------------------------------------


class MemoryTarget(_Body):
    container_tag: str = Field(pattern=TAG_PATTERN)
    id: str | None = Field(default=None, min_length=1)
    content: str | None = Field(default=None, min_length=1)


class UpdateMemoryBody(MemoryTarget):
    """``memories.update_memory``: a new version of a memory (by id or exact content)."""

    new_content: str = Field(min_length=1)
    metadata: Metadata = None
    forget_after: str | None = Field(
        default=None, description="Expiry is not supported by remy: a value is refused."
    )
    forget_reason: str | None = None
    temporal_context: dict[str, Any] | None = Field(default=None, description=IGNORED)


class UpdateMemoryResponse(_Out):
    id: str
    memory: str
    version: int
    created_at: str
    parent_memory_id: str | None = None
    root_memory_id: str | None = None
    metadata: dict[str, Any] | None = None
    forget_after: str | None = None
    forget_reason: str | None = None


class ForgetMemoryBody(MemoryTarget):
    """``memories.forget``: hide a memory (by id or exact content)."""

    reason: str | None = None


class ForgetMemoryResponse(_Out):
    id: str
    forgotten: bool


class ErrorResponse(_Out):
    """Every error: a message and, for bad requests, which fields are wrong."""

    error: str
    details: Any = None

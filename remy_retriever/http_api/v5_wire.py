"""Request and response bodies of the v5 routes (``/ns/{namespace}/...``), the shapes of
the official SDK ``supermemory`` 5.x (camelCase on the wire). An unknown request field is
refused (400). Fields remy accepts but does not act on say so in their description:
``supportingContext``, ``date``, ``rewriteQuery`` and ``dreaming`` steer supermemory's
language model, which remy replaces by a deterministic rule; ``taskType`` too (every
short document in a namespace is a memory, whatever the task type).
"""

from __future__ import annotations

from typing import Any, Literal, Union

from pydantic import BaseModel, ConfigDict, Field, StrictBool, StrictFloat, StrictInt, StrictStr
from pydantic.alias_generators import to_camel

__all__ = [
    "IGNORED",
    "AddBody",
    "BatchBody",
    "BucketsDeleteBody",
    "BucketsSetBody",
    "DeleteDocumentsBody",
    "DocumentInput",
    "ForgetBody",
    "ForgetMatchingBody",
    "ListBody",
    "MemoryCountsBody",
    "NamespaceUpdateBody",
    "ProfileBody",
    "SearchBody",
    "UpdateBody",
]

IGNORED = "Accepted and ignored by remy (it steers an LLM, and remy has none)."
_TASK = "Accepted; remy applies its memory rule (a short document is a memory) either way."
_FILTER = (
    "A FilterExpression: {operator: and|or, operands: [...]} or a predicate {field, "
    "operator: eq|neq|contains|notContains|gt|gte|lt|lte|arrayContains|arrayNotContains, "
    "value, caseSensitive}. arrayContains / arrayNotContains take a string: a list "
    "metadata value holds (or does not hold) it as an exact item."
)

MetadataValue = Union[StrictStr, StrictBool, StrictInt, StrictFloat, list[StrictStr]]
Metadata = Union[dict[str, MetadataValue], None]
TaskType = Literal["memory", "superrag"]
Dreaming = Literal["dynamic", "instant"]


class _Body(BaseModel):
    model_config = ConfigDict(alias_generator=to_camel, populate_by_name=True, extra="forbid")


class Out(BaseModel):
    """A response body (camelCase, ``None`` left out)."""

    model_config = ConfigDict(alias_generator=to_camel, populate_by_name=True)

    def wire(self) -> dict[str, Any]:
        return self.model_dump(mode="json", by_alias=True, exclude_none=True)


# -- requests ---------------------------------------------------------------------------


class DocumentInput(_Body):
    content: str = Field(min_length=1)
    id: str | None = Field(default=None, min_length=1, max_length=100)
    supporting_context: str | None = Field(default=None, max_length=1500, description=IGNORED)
    metadata: Metadata = None
    group: Metadata = Field(default=None, description="Stored with the metadata; filterable.")
    date: str | None = Field(default=None, description=IGNORED)


class AddBody(DocumentInput):
    """``client.add``: one document; an ``id`` already in the namespace updates it."""

    task_type: TaskType | None = Field(default=None, description=_TASK)
    dreaming: Dreaming | None = Field(default=None, description=IGNORED)


class BatchBody(_Body):
    """``documents.batch_add``: up to 100 documents."""

    documents: list[DocumentInput] = Field(min_length=1, max_length=100)
    task_type: TaskType | None = Field(default=None, description=_TASK)
    dreaming: Dreaming | None = Field(default=None, description=IGNORED)


class UpdateBody(_Body):
    """``documents.update``: new content for a document."""

    content: str | None = Field(default=None, min_length=1)
    supporting_context: str | None = Field(default=None, max_length=1500, description=IGNORED)
    date: str | None = Field(default=None, description=IGNORED)
    task_type: TaskType | None = Field(default=None, description=_TASK)
    dreaming: Dreaming | None = Field(default=None, description=IGNORED)


class DeleteDocumentsBody(_Body):
    ids: list[str] = Field(min_length=1, max_length=100)


class SearchInclude(_Body):
    documents: bool | None = None
    related: bool | None = None
    forgotten: bool | None = None


class SearchBody(_Body):
    """``client.search``."""

    query: str = Field(min_length=1)
    filter: dict[str, Any] | None = Field(default=None, description=_FILTER)
    search_mode: Literal["hybrid", "memories", "chunks"] = "hybrid"
    limit: int = Field(default=10, ge=1, le=1000)
    include: SearchInclude | None = None
    threshold: float = Field(
        default=0.0, ge=0, le=1, description="On remy's calibrated 0-1 relevance."
    )
    rerank: Literal["none", "order", "aggregate"] = "none"
    rewrite_query: bool | None = Field(default=None, description=IGNORED)


class ProfileBody(_Body):
    filter: dict[str, Any] | None = Field(default=None, description=_FILTER)
    buckets: list[str] | None = Field(default=None, max_length=100)


class ListInclude(_Body):
    content: bool | None = None
    memory_count: bool | None = None
    forgotten: bool | None = None


class ListBody(_Body):
    filter: dict[str, Any] | None = Field(default=None, description=_FILTER)
    include: ListInclude | None = None


class MemoryCountsBody(_Body):
    ids: list[str] = Field(min_length=1, max_length=100)


class BucketsSetBody(_Body):
    buckets: dict[str, str] = Field(
        max_length=50,
        description="Bucket names mapped to descriptions (stored, not used "
        "to classify: a memory joins a bucket through its metadata 'bucket').",
    )


class BucketsDeleteBody(_Body):
    buckets: list[str] = Field(max_length=50)


class ForgetBody(_Body):
    ids: list[str] = Field(min_length=1, max_length=100)


class ForgetMatchingBody(_Body):
    query: str = Field(min_length=1)
    dry_run: bool


class NamespaceUpdateBody(_Body):
    supporting_context: str | None = Field(default=None, max_length=1500, description=IGNORED)


# -- responses --------------------------------------------------------------------------


class DocumentRef(Out):
    id: str
    status: Literal["done"] = "done"


class BatchItemResult(Out):
    id: str
    status: Literal["done", "error"]
    error: str | None = None
    details: str | None = None


class BatchAddResult(Out):
    results: list[BatchItemResult]
    count: int
    failed: int


class ItemError(Out):
    id: str
    error: str


class DeleteDocumentsResult(Out):
    count: int
    errors: list[ItemError]


class System(Out):
    created_at: str | None = None
    updated_at: str | None = None


class DocumentSystem(Out):
    status: Literal["done"] = "done"
    dreaming_status: Literal["done"] = "done"
    memory_count: int | None = None
    created_at: str
    updated_at: str


class ChunkOut(Out):
    id: str
    position: int
    content: str
    type: str
    metadata: dict[str, Any]
    system: System
    document_id: str | None = None


class MemoryOut(Out):
    id: str
    memory: str
    metadata: dict[str, Any]
    is_static: bool
    is_inference: bool = False
    is_latest: bool
    is_forgotten: bool
    version: int
    system: System


class DocumentOut(Out):
    id: str
    title: str | None = None
    type: str
    summary: str | None = None
    content: str | None = None
    metadata: dict[str, Any]
    url: str | None = None
    system: DocumentSystem
    chunks: list[ChunkOut] | None = None
    memories: list[MemoryOut] | None = None


class RelatedMemory(Out):
    id: str
    relation: Literal["updates", "extends", "derives"]
    version: int | None = None
    memory: str
    metadata: dict[str, Any]
    system: System


class Related(Out):
    parents: list[RelatedMemory]
    children: list[RelatedMemory]
    siblings: list[RelatedMemory]


class IncludedDocument(Out):
    id: str
    title: str | None = None
    type: str | None = None
    metadata: dict[str, Any]
    summary: str | None = None
    system: System


class Included(Out):
    related: Related | None = None
    document: IncludedDocument | None = None


class SearchResult(Out):
    id: str
    memory: str | None = None
    chunk: str | None = None
    metadata: dict[str, Any]
    similarity: float
    is_latest: bool
    is_inference: bool = False
    system: System
    included: Included | None = None


class SearchResponse(Out):
    results: list[SearchResult]
    search_time: float


class MemoryDetails(MemoryOut):
    included: Included | None = None


class ProfileFact(Out):
    id: str
    memory: str


class Profile(Out):
    static: list[ProfileFact]
    dynamic: list[ProfileFact]
    buckets: dict[str, list[ProfileFact]]


class ProfileResponse(Out):
    profile: Profile


class ProfileBuckets(Out):
    buckets: dict[str, str]


class Pagination(Out):
    current_page: int
    limit: int
    total_items: int
    total_pages: int


class ListResponse(Out):
    documents: list[DocumentOut]
    chunks: list[ChunkOut]
    memories: list[MemoryOut]
    pagination: Pagination


class MemoryCount(Out):
    id: str
    memory_count: int


class MemoryCounts(Out):
    counts: list[MemoryCount]


class ForgetMatch(Out):
    id: str
    memory: str


class ForgetResult(Out):
    count: int
    errors: list[ItemError]
    matches: list[ForgetMatch]


class Namespace(Out):
    id: str
    namespace: str
    document_count: int
    memory_count: int
    description: str | None = None
    system: System


class NamespaceList(Out):
    namespaces: list[Namespace]
    pagination: Pagination


class NamespaceDetails(Out):
    namespace: str
    supporting_context: str | None = None
    system: System


class NamespaceDeleted(Out):
    status: Literal["deleted"] = "deleted"
    namespace: str
    deleted_documents_count: int
    deleted_memories_count: int

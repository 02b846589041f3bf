"""The tools' arguments and outputs as pydantic models: their JSON Schemas are what a
client lists (``inputSchema``, ``outputSchema``), and the argument models check every
call before it reaches the engine.

Argument names follow the issue and supermemory's tools (snake_case); outputs are the
wire forms remy already speaks: ``SearchHit.to_dict()`` (camelCase, the SearchHit spec),
``Memory.to_dict()``, and the ``/v3`` and memory-search responses of
:mod:`remy_retriever.supermemory.responses`. Output models forbid unknown fields, so a
field added to a wire form without its schema fails the MCP tests instead of reaching
clients undeclared.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal, Union

from pydantic import BaseModel, ConfigDict, Field, model_validator
from pydantic.alias_generators import to_camel

__all__ = [
    "AddDocumentsArgs",
    "AddMemoryArgs",
    "ForgetMemoryArgs",
    "ForgetOutput",
    "IngestOutput",
    "MemoryOutput",
    "SearchArgs",
    "SearchDocumentsArgs",
    "SearchMemoriesArgs",
    "SearchOutput",
    "UpdateMemoryArgs",
]

#: Most hits or results one call returns (a model's context is the budget).
MAX_RESULTS = 50
#: Longest query a tool takes, in characters.
MAX_QUERY_CHARS = 10_000
#: Longest memory a tool stores, in characters (store long texts as documents).
MAX_MEMORY_CHARS = 100_000
MAX_TAG_CHARS = 256
MAX_TAGS = 20

MetadataValue = Union[str, int, float, bool, list[str]]
Query = Annotated[
    str,
    Field(
        min_length=1,
        max_length=MAX_QUERY_CHARS,
        description=f"What to look for: a question or keywords (at most {MAX_QUERY_CHARS:,} "
        "characters).",
    ),
]
Tag = Annotated[str, Field(min_length=1, max_length=MAX_TAG_CHARS)]
MemoryId = Annotated[
    str,
    Field(
        pattern=r"^mem_[0-9a-f]{32}$",
        description="A memory id as returned by add_memory or search_memories, "
        "'mem_' and 32 hex digits.",
    ),
]


class _Args(BaseModel):
    """Arguments: unknown names are refused (a typo must not silently drop a filter), and
    validation is strict: a value must have the type the published JSON Schema gives it
    (``k="5"``, ``k=True`` or ``rerank="0"`` are refused, not converted)."""

    model_config = ConfigDict(extra="forbid", strict=True)


class SearchArgs(_Args):
    """Arguments of ``search``."""

    query: Query
    k: int = Field(
        5, ge=1, le=MAX_RESULTS, description=f"How many passages to return (1-{MAX_RESULTS})."
    )
    mode: Literal["hybrid", "semantic", "lexical"] = Field(
        "hybrid",
        description="'hybrid' (keywords and meaning, the best default), 'semantic' "
        "(meaning only) or 'lexical' (exact words, BM25).",
    )
    where: Union[dict[str, Any], None] = Field(
        None,
        description='Optional metadata filter, Chroma syntax: {"topic": "tea"}, '
        '{"year": {"$gte": 2020}}, {"$and": [...]}. Operators: $eq $ne $gt $gte $lt $lte '
        "$in $nin $and $or.",
    )
    rerank: bool = Field(
        False,
        description="Rerank with a cross-encoder: better order, slower, and it needs the "
        "reranking model installed on the server.",
    )


class SearchDocumentsArgs(_Args):
    """Arguments of ``search_documents``."""

    query: Query
    limit: int = Field(
        5, ge=1, le=MAX_RESULTS, description=f"How many documents to return (1-{MAX_RESULTS})."
    )
    container_tags: Union[Annotated[list[Tag], Field(max_length=MAX_TAGS)], None] = Field(
        None,
        description="Only documents in one of these containers (the documents' "
        f"'container_tag' metadata); at most {MAX_TAGS}.",
    )
    filters: Union[dict[str, Any], None] = Field(
        None,
        description='Optional supermemory filter tree: {"AND": [{"key": "lang", "value": '
        '"en"}, {"key": "year", "value": "2020", "filterType": "numeric", '
        '"numericOperator": ">="}]} (or "OR"; conditions may nest).',
    )


class AddMemoryArgs(_Args):
    """Arguments of ``add_memory``."""

    content: str = Field(
        min_length=1,
        max_length=MAX_MEMORY_CHARS,
        description="The fact to remember, in one or a few sentences "
        f"(at most {MAX_MEMORY_CHARS:,} characters).",
    )
    container_tag: Union[Tag, None] = Field(
        None, description="Whose memory this is: a user, project or conversation id."
    )
    metadata: Union[dict[str, MetadataValue], None] = Field(
        None,
        description="Optional flat metadata (string, number, boolean or list-of-string "
        "values) to filter on later; keys starting with 'memory_' or 'remy_' are reserved.",
    )


class SearchMemoriesArgs(_Args):
    """Arguments of ``search_memories``."""

    query: Query
    container_tag: Union[Tag, None] = Field(
        None, description="Only memories (and documents) of this container."
    )
    search_mode: Literal["memories", "hybrid", "documents"] = Field(
        "memories",
        description="'memories' (remembered facts only), 'documents' (document passages "
        "only) or 'hybrid' (both, best first).",
    )
    include: list[Literal["relatedMemories", "documents"]] = Field(
        default_factory=list,
        max_length=2,
        description="Extras per memory: 'relatedMemories' (older versions and related "
        "memories), 'documents' (documents it is linked to).",
    )
    limit: int = Field(
        5, ge=1, le=MAX_RESULTS, description=f"How many results to return (1-{MAX_RESULTS})."
    )


class UpdateMemoryArgs(_Args):
    """Arguments of ``update_memory``."""

    id: MemoryId
    new_content: str = Field(
        min_length=1,
        max_length=MAX_MEMORY_CHARS,
        description="The corrected fact; it replaces the memory's content as a new version.",
    )


class ForgetMemoryArgs(_Args):
    """Arguments of ``forget_memory``: exactly one of ``id`` and ``content``."""

    id: Union[MemoryId, None] = None
    content: Union[str, None] = Field(
        None,
        min_length=1,
        max_length=MAX_MEMORY_CHARS,
        description="Instead of id: the exact text of the memory to forget.",
    )
    reason: Union[str, None] = Field(
        None, max_length=1000, description="Why it is forgotten (echoed back and logged)."
    )

    @model_validator(mode="after")
    def _one_target(self) -> ForgetMemoryArgs:
        if (self.id is None) == (self.content is None):
            msg = "pass exactly one of 'id' (a memory id) or 'content' (its exact text)"
            raise ValueError(msg)
        return self


class AddDocumentsArgs(_Args):
    """Arguments of ``add_documents``."""

    path: str = Field(
        min_length=1,
        max_length=4096,
        description="A file or folder inside the folders this server may read (a relative "
        "path starts at the first of them). Folders are read recursively.",
    )


# -- outputs ------------------------------------------------------------------------------


class _Wire(BaseModel):
    """An output wire form: camelCase, unknown fields refused (declared means exact)."""

    model_config = ConfigDict(alias_generator=to_camel, populate_by_name=True, extra="forbid")


class CitationWire(_Wire):
    """Where a passage came from (``Citation.to_dict()``)."""

    document_id: str
    chunk_index: int
    start: int
    end: int
    heading_path: list[str]
    title: Union[str, None]
    url: Union[str, None]
    path: Union[str, None]
    chunk_count: Union[int, None]
    page: Union[int, None]
    page_end: Union[int, None]


class BranchWire(_Wire):
    rank: int
    score: float
    contribution: Union[float, None] = None


class ExplainWire(_Wire):
    mode: str
    found_by: list[str]
    branches: dict[str, BranchWire]
    fused_score: Union[float, None] = None
    rerank_score: Union[float, None] = None
    matched_terms: Union[list[str], None] = None


class NeighborsWire(_Wire):
    before: list[str]
    after: list[str]


class MatchWire(_Wire):
    start: int
    end: int
    token: str


class HitWire(_Wire):
    """One hit in the SearchHit wire form (``SearchHit.to_dict()``)."""

    id: str
    score: float
    text: str
    citation: CitationWire
    retrieval_rank: Union[int, None] = None
    retrieval_score: Union[float, None] = None
    explain: Union[ExplainWire, None] = None
    neighbors: Union[NeighborsWire, None] = None
    matches: Union[list[MatchWire], None] = None
    metadata: Union[dict[str, Any], None] = None


class SearchOutput(_Wire):
    """``search``: the hits, best first, numbered like the text content ([1] is hits[0])."""

    hits: list[HitWire]


class MemoryOutput(_Wire):
    """One memory version (``Memory.to_dict()``)."""

    id: str
    memory: str
    version: int
    root_memory_id: Union[str, None]
    parent_memory_id: Union[str, None] = None
    parent_ids: list[str]
    relation: Union[Literal["updates", "extends", "derives"], None]
    container_tag: Union[str, None]
    metadata: dict[str, Any]
    created_at: str
    updated_at: str
    latest: bool
    forgotten: bool
    document_ids: list[str]


class ForgetOutput(_Wire):
    """``forget_memory``: the forgotten version and the reason given."""

    memory: MemoryOutput
    reason: Union[str, None]


class FileIssueWire(_Wire):
    path: str
    reason: str


class IngestOutput(_Wire):
    """``add_documents``: document ids added, updated and unchanged; files left out."""

    added: list[str]
    updated: list[str]
    unchanged: list[str]
    chunks_written: int
    skipped: list[FileIssueWire]
    failed: list[FileIssueWire]

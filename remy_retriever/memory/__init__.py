"""Versioned memories on remy-retriever (and, re-exported for convenience, the wire
models of the document and memory search responses, ``remy_retriever.supermemory.responses``).

Modules: :mod:`.store` (:class:`MemoryStore`), :mod:`.model` (:class:`Memory`, its
errors and its document form), :mod:`.checks` (argument checks), :mod:`.context`
(reading versions back; related memories), :mod:`.results` (search results),
:mod:`.linked` (:class:`LinkedDocuments`: tagged documents and the memory each short one
becomes, the rule ``remy serve`` and ``remy mcp`` share), :mod:`.journal` (the crash
journal that keeps a document and its memory in step, and :class:`MemoryReport`, what
``LinkedDocuments.check`` finds), :mod:`.values` (the metadata
values in a scope that supermemory filters are resolved against).
Memory sits above the :class:`~remy_retriever.Retriever` facade and uses only its public
API.
"""

from ..supermemory.responses import (
    ChunkResult,
    ContextMemory,
    DocumentChunk,
    DocumentResult,
    DocumentSearchResponse,
    InvalidResponseError,
    LinkedDocument,
    MemoryContext,
    MemoryResult,
    MemorySearchResponse,
)
from .journal import MemoryReport
from .linked import (
    CUSTOM_ID_KEY,
    RESERVED_KEYS,
    SOURCE_KEY,
    DocumentNotFoundError,
    LinkedDocuments,
    check_metadata,
    custom_document_id,
    public_metadata,
    tag_of,
    wire_document_id,
)
from .model import Memory, MemoryNotFoundError, MemoryStateError, SearchMode
from .store import MemoryStore

__all__ = [
    "CUSTOM_ID_KEY",
    "RESERVED_KEYS",
    "SOURCE_KEY",
    "ChunkResult",
    "ContextMemory",
    "DocumentChunk",
    "DocumentNotFoundError",
    "DocumentResult",
    "DocumentSearchResponse",
    "InvalidResponseError",
    "LinkedDocument",
    "LinkedDocuments",
    "Memory",
    "MemoryContext",
    "MemoryNotFoundError",
    "MemoryReport",
    "MemoryResult",
    "MemorySearchResponse",
    "MemoryStateError",
    "MemoryStore",
    "SearchMode",
    "check_metadata",
    "custom_document_id",
    "public_metadata",
    "tag_of",
    "wire_document_id",
]

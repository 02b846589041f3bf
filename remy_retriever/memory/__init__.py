"""Versioned memories on remy-retriever, and the wire models of the document and memory
search responses (``shared/spec/supermemory-response-schema.md``)."""

from ..responses import (
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
from .store import Memory, MemoryNotFoundError, MemoryStateError, MemoryStore

__all__ = [
    "ChunkResult",
    "ContextMemory",
    "DocumentChunk",
    "DocumentResult",
    "DocumentSearchResponse",
    "InvalidResponseError",
    "LinkedDocument",
    "Memory",
    "MemoryContext",
    "MemoryNotFoundError",
    "MemoryResult",
    "MemorySearchResponse",
    "MemoryStateError",
    "MemoryStore",
]

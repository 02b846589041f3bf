"""Versioned memories on remy-retriever (and, re-exported for convenience, the wire
models of the document and memory search responses, ``remy_retriever.responses``).

Modules: :mod:`.store` (:class:`MemoryStore`), :mod:`.model` (:class:`Memory`, its
errors and its document form), :mod:`.checks` (argument checks), :mod:`.context`
(reading versions back; related memories), :mod:`.results` (search results).
Memory sits above the :class:`~remy_retriever.Retriever` facade and uses only its public
API.
"""

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
from .model import Memory, MemoryNotFoundError, MemoryStateError, SearchMode
from .store import MemoryStore

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
    "SearchMode",
]

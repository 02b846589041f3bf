"""Versioned memories on remy-retriever, the wire models of the document and memory
search responses (``shared/spec/supermemory-response-schema.md``), and their flat
passages for the framework adapters.

Modules: :mod:`.store` (:class:`MemoryStore`), :mod:`.model` (:class:`Memory`, its
errors and its document form), :mod:`.checks` (argument checks), :mod:`.context`
(reading versions back; related memories), :mod:`.results` (search results) and
:mod:`.passages` (responses flattened into :class:`Passage` objects).
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
from .passages import Passage, document_passages, memory_passages
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
    "Passage",
    "SearchMode",
    "document_passages",
    "memory_passages",
]

"""What the framework adapters share, and the only core surface they import besides the
package root and ``remy_retriever.memory``: opening an engine, building search options,
reranking that keeps the retrieval rank, the flat metadata layouts of a hit and of a
document- or memory-search response (:mod:`.flatten`, :mod:`.passages`), the stable ids
of framework pieces (:mod:`.ids`) and the metadata encoding of the framework vector
stores (:mod:`.metadata`).

``langchain-remy`` and ``llama-index-retrievers-remy`` are thin translations on top of
these; keeping them here means both adapters open engines, check options and rerank in
exactly the same way, with the same messages.
"""

from ..models.rerankers import Reranker, resolve_reranker
from ..schema.options import check_int
from ..schema.records import RESERVED_PREFIX, chunk_id
from ..search.rerank import Reranked, rerank
from ..text.chunking import text_from_pieces
from .flatten import FLAT_KEYS, SHADOW_KEY, hit_from_metadata, hit_to_metadata
from .ids import PAGE_KEYS, Piece, assign_ids, content_digest, page_of, source_id
from .metadata import MetadataCodec, escape_key, reserved_looking
from .passages import Passage, document_passages, memory_passages
from .sections import heading_path_of, piece_place
from .support import (
    FIELD_OPTIONS,
    build_options,
    check_search_kwargs,
    open_engine,
    reranker_for,
    rescored_metadata,
)

__all__ = [
    "FIELD_OPTIONS",
    "FLAT_KEYS",
    "PAGE_KEYS",
    "RESERVED_PREFIX",
    "SHADOW_KEY",
    "MetadataCodec",
    "Passage",
    "Piece",
    "Reranked",
    "Reranker",
    "assign_ids",
    "build_options",
    "check_int",
    "check_search_kwargs",
    "chunk_id",
    "content_digest",
    "document_passages",
    "escape_key",
    "heading_path_of",
    "hit_from_metadata",
    "hit_to_metadata",
    "memory_passages",
    "open_engine",
    "page_of",
    "piece_place",
    "rerank",
    "reranker_for",
    "rescored_metadata",
    "reserved_looking",
    "resolve_reranker",
    "source_id",
    "text_from_pieces",
]

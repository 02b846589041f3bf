"""Stored chunks by id, each with the ids of the chunks either side of it: what a
framework's document store (LlamaIndex's ``PrevNextNodePostprocessor``) reads one node
at a time, live from the store, however the chunk was written (``add``, ``ingest``, a
vector store).

Scope first: a chunk is returned only when it matches ``where`` (the read runs under the
filter in Chroma and is checked again here), so a caller scoped to a tenant can follow
``previous_id`` / ``next_id`` without ever reading outside that scope.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from ..errors import InvalidInputError
from ..schema.filters import parse_where
from ..schema.hits import Citation
from ..schema.records import has_surrogate, to_citation, user_metadata
from ..schema.validation import as_list
from ..stores.dense import DenseStore
from ..util.reprs import short_repr
from .enrich import fetch_neighbor_records, neighbor_ids

__all__ = ["StoredChunk", "get_chunks"]

#: Chunk ids read from Chroma per call (a long document's chunks come in several reads).
_BATCH = 500


@dataclass(frozen=True)
class StoredChunk:
    """One stored chunk: its id, text (with the heading-path prefix, as a hit's), its
    citation, the user's metadata, and the ids of the chunks before and after it in its
    document (``None`` at the document's edges)."""

    id: str
    text: str
    citation: Citation
    metadata: Mapping[str, Any] = field(default_factory=dict)
    previous_id: str | None = None
    next_id: str | None = None


def get_chunks(
    dense: DenseStore, chunk_ids: Sequence[str], *, where: Mapping[str, Any] | None = None
) -> dict[str, StoredChunk]:
    """The stored chunks among ``chunk_ids`` that match ``where`` (every chunk for
    ``None``), by id, in the order asked; unknown ids (any string is a valid question)
    and chunks outside ``where`` are left out alike."""
    wanted = as_list(chunk_ids, "get_chunks()", "['guide#0'] (a list of chunk ids)")
    for cid in wanted:
        if not isinstance(cid, str):
            msg = (
                f"get_chunks() takes chunk ids as str, got {type(cid).__name__} "
                f"{short_repr(cid)}; pass e.g. ['guide#0']"
            )
            raise InvalidInputError(msg)
    tree = parse_where(where)
    # A lone surrogate cannot be in a stored id (Chroma holds UTF-8): such an id is unknown.
    unique = [cid for cid in dict.fromkeys(wanted) if not has_surrogate(cid)]
    found: dict[str, StoredChunk] = {}
    for start in range(0, len(unique), _BATCH):
        records = fetch_neighbor_records(dense, unique[start : start + _BATCH], tree)
        for cid, text, meta in records.values():
            found[cid] = _chunk(cid, text, meta)
    return {cid: found[cid] for cid in unique if cid in found}


def _chunk(cid: str, text: str, meta: Mapping[str, Any]) -> StoredChunk:
    citation = to_citation(cid, meta)
    before, after = neighbor_ids(
        citation.document_id, citation.chunk_index, citation.chunk_count, 1
    )
    return StoredChunk(
        id=cid,
        text=text,
        citation=citation,
        metadata=user_metadata(meta),
        previous_id=before[-1] if before else None,
        next_id=after[0] if after and citation.chunk_count is not None else None,
    )

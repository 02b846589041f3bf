"""The values stored under some metadata keys, read inside a scope: what the supermemory
filter operators that ``where`` lacks (substring, case-insensitive, a negated order
comparison) are resolved against (:func:`remy_retriever.supermemory.filters.where_from_filters`).

Scope first: the scan reads only the records the caller's ``where`` (container tags,
pinned tag, document id) keeps, so a value stored outside the scope never shapes the
answer, not even by making a filter too broad. All the keys of one filter are read in
one pass over the scope. The work is bounded by limits counted inside the scope only
(:data:`~remy_retriever.schema.filters.MAX_SCANNED_VALUES` distinct values over all the
keys, :data:`~remy_retriever.schema.filters.MAX_SCANNED_CHUNKS` chunks); past either the
scan stops with :class:`~remy_retriever.errors.InvalidFilterError`. How many keys one
scan may read (:func:`~remy_retriever.schema.filters.check_scanned_keys`) is checked before
anything is read.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from ..errors import InvalidFilterError
from ..schema.document import MetadataValue
from ..schema.filters import (
    MAX_SCANNED_CHUNKS,
    MAX_SCANNED_VALUES,
    check_scanned_keys,
    parse_where,
    to_chroma,
)
from ..stores.dense import DenseStore

__all__ = ["metadata_values", "scan_metadata_values"]

_FIX = (
    "filter on exact values instead (filterType 'metadata' without ignoreCase, or "
    "'numeric'), or narrow the scope with containerTags"
)


def scan_metadata_values(
    dense: DenseStore,
    keys: Sequence[str],
    *,
    where: Mapping[str, Any] | None = None,
    limit: int = MAX_SCANNED_VALUES,
    max_chunks: int = MAX_SCANNED_CHUNKS,
) -> dict[str, list[MetadataValue]]:
    """Per key, the distinct values the chunks matching ``where`` (every chunk for
    ``None``) store under it, in the order first seen: one pass over the scope for every
    key. Over ``MAX_SCANNED_KEYS`` keys, ``limit`` distinct values in all or
    ``max_chunks`` chunks in scope raise :class:`InvalidFilterError` naming the limit."""
    names = check_scanned_keys(keys)
    tree = to_chroma(parse_where(where))  # a bad scope is refused before reading
    out: dict[str, list[MetadataValue]] = {k: [] for k in names}
    if not names:
        return out
    seen: set[tuple[str, type, object]] = set()
    chunks = 0
    for page in dense.iter_all(where=tree, documents=False):
        chunks += len(page)
        if chunks > max_chunks:
            msg = (
                f"the filter is resolved against the values stored in its scope, and the "
                f"scope holds more than {max_chunks:,} chunks, the limit per request; {_FIX}"
            )
            raise InvalidFilterError(msg)
        for _, _, meta in page:
            for key in names:
                value = meta.get(key)
                if not isinstance(value, (str, int, float, bool)):
                    continue
                mark = (key, type(value), value)
                if mark in seen:
                    continue
                if len(seen) >= limit:
                    msg = (
                        f"the filter on metadata key(s) {', '.join(map(repr, names))} is "
                        "resolved against the values stored under them, and there are more "
                        f"than {limit:,} distinct ones in scope; {_FIX}"
                    )
                    raise InvalidFilterError(msg)
                seen.add(mark)
                out[key].append(value)
    return out


def metadata_values(
    dense: DenseStore,
    key: str,
    *,
    where: Mapping[str, Any] | None = None,
    limit: int = MAX_SCANNED_VALUES,
) -> list[MetadataValue]:
    """:func:`scan_metadata_values` for one key."""
    return scan_metadata_values(dense, [key], where=where, limit=limit)[key]

"""The values stored under one metadata key, read inside a scope: what the supermemory
filter operators that ``where`` lacks (substring, case-insensitive, a negated order
comparison) are resolved against (:func:`remy_retriever.supermemory.filters.where_from_filters`).

Scope first: the scan reads only the records the caller's ``where`` (container tags,
pinned tag, document id) keeps, so a value stored outside the scope never shapes the
answer, not even by making a filter too broad. It stops with
:class:`~remy_retriever.errors.InvalidFilterError` once more than ``limit`` distinct values
were seen, so one request cannot make the server hold every value of a huge store.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any

from ..errors import InvalidFilterError
from ..schema.document import MetadataValue
from ..schema.filters import MAX_SCANNED_VALUES, parse_where, to_chroma
from ..stores.dense import DenseStore

__all__ = ["metadata_values"]


def metadata_values(
    dense: DenseStore,
    key: str,
    *,
    where: Mapping[str, Any] | None = None,
    limit: int = MAX_SCANNED_VALUES,
) -> list[MetadataValue]:
    """The distinct values the chunks matching ``where`` (every chunk for ``None``) store
    under ``key``, in the order first seen. More than ``limit`` distinct values raise
    :class:`InvalidFilterError` naming the key and the fix."""
    return list(_distinct(dense, key, where, limit))


def _distinct(
    dense: DenseStore, key: str, where: Mapping[str, Any] | None, limit: int
) -> Iterator[MetadataValue]:
    seen: set[tuple[type, object]] = set()
    for page in dense.iter_all(where=to_chroma(parse_where(where)), documents=False):
        for _, _, meta in page:
            value = meta.get(key)
            if not isinstance(value, (str, int, float, bool)) or (type(value), value) in seen:
                continue
            if len(seen) >= limit:
                msg = (
                    f"the filter on metadata key {key!r} is resolved against the values "
                    f"stored under it, and there are more than {limit:,} distinct ones in "
                    "scope; filter on exact values instead (filterType 'metadata' without "
                    "ignoreCase, or 'numeric'), or narrow the scope with containerTags"
                )
                raise InvalidFilterError(msg)
            seen.add((type(value), value))
            yield value

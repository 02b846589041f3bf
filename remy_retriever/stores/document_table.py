"""The document table: whole documents kept beside their chunks, in Chroma.

One record per document (full text, citation fields, timestamps) in a companion Chroma
collection ``<collection>-remydocs`` (:func:`table_name`), so that Chroma stays the single
source of truth. Records carry a constant 1-d vector: this collection is only ever read by
id, never searched. Chroma I/O only; the record layout is :mod:`remy_retriever.schema.records`'.

Names ending in :data:`TABLE_SUFFIX` are reserved for these tables (the Retriever refuses
them as collection names), so a table never shares a name with a user's collection.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
from chromadb.errors import NotFoundError

from ..schema.document import Document
from ..schema.records import document_fields, pack, unpack
from .chroma import ChromaCalls, paged

__all__ = ["TABLE_SUFFIX", "DocumentTable", "StoredDocument", "table_name"]

#: The end of every document table's name; reserved: no user collection may end so.
TABLE_SUFFIX = "-remydocs"
#: Chroma's longest collection name.
_MAX_NAME = 512
#: Longer collection names get a hashed table name (the plain one would not fit).
_PLAIN_UP_TO = _MAX_NAME - len(TABLE_SUFFIX) - 17


def table_name(collection: str) -> str:
    """The document table of ``collection``: ``<collection>-remydocs``; for names longer
    than 486 characters, the first 486, ``-``, 16 hex digits of the name's SHA-256 and the
    suffix (512 characters: no plain name's table is that long, so none can clash)."""
    if len(collection) <= _PLAIN_UP_TO:
        return collection + TABLE_SUFFIX
    digest = hashlib.sha256(collection.encode("utf-8")).hexdigest()[:16]
    return f"{collection[:_PLAIN_UP_TO]}-{digest}{TABLE_SUFFIX}"


def _legacy_table_name(collection: str) -> str:
    """The name stores made before :func:`table_name` used (long names cut short, so two
    long names sharing 503 characters shared a table)."""
    return collection[: _MAX_NAME - len(TABLE_SUFFIX)] + TABLE_SUFFIX


@dataclass(frozen=True)
class StoredDocument:
    """A document as stored: the :class:`Document`, ISO-8601 UTC timestamps (``updated_at``
    changes only when the content changes) and its number of chunks."""

    document: Document
    created_at: str
    updated_at: str
    chunk_count: int


class DocumentTable:
    """Whole documents, one record per document (see the module docstring)."""

    SUFFIX = TABLE_SUFFIX

    def __init__(self, calls: ChromaCalls) -> None:
        self._calls = calls
        self.collection = calls.call("open the document table", self._open)

    def _open(self) -> Any:
        client, name = self._calls.client, table_name(self._calls.name)
        legacy = _legacy_table_name(self._calls.name)
        if legacy != name:  # a long name: a store made before may have the old table
            for candidate in (name, legacy):
                try:
                    return client.get_collection(candidate, embedding_function=None)
                except (NotFoundError, ValueError):
                    pass
        return client.get_or_create_collection(
            name, embedding_function=None, configuration={"hnsw": {"space": "cosine"}}
        )

    def upsert(
        self, ids: Sequence[str], texts: Sequence[str], metadatas: Sequence[Mapping[str, Any]]
    ) -> None:
        if not ids:
            return
        step = max(1, self._calls.max_batch)
        for lo in range(0, len(ids), step):
            part = slice(lo, lo + step)

            def write(part: slice = part) -> None:
                self.collection.upsert(
                    ids=list(ids[part]),
                    embeddings=np.ones((len(ids[part]), 1), dtype=np.float32),
                    metadatas=pack(metadatas[part], texts[part], pack_all=True),
                )

            self._calls.call("write documents", write)

    def delete(self, ids: Sequence[str]) -> None:
        if ids:
            self._calls.call("delete documents", lambda: self.collection.delete(ids=list(ids)))

    def get(self, ids: Sequence[str]) -> dict[str, tuple[str, dict[str, Any]]]:
        """``{document id: (text, metadata)}`` for the ids that exist."""
        out: dict[str, tuple[str, dict[str, Any]]] = {}
        for lo in range(0, len(ids), 1000):
            part = list(ids[lo : lo + 1000])

            def read(part: list[str] = part) -> Any:
                return self.collection.get(ids=part, include=["metadatas"])

            for i, text, meta in unpack(self._calls.call("read documents", read)):
                out[i] = (text, meta)
        return out

    def stored(self, ids: Sequence[str]) -> dict[str, StoredDocument]:
        """The :class:`StoredDocument` of each id that exists."""
        out: dict[str, StoredDocument] = {}
        for doc_id, (text, meta) in self.get(ids).items():
            fields = document_fields(meta)
            out[doc_id] = StoredDocument(
                document=Document(
                    id=doc_id,
                    text=text,
                    title=fields["title"],
                    url=fields["url"],
                    path=fields["path"],
                    type=fields["type"],
                    summary=fields["summary"],
                    metadata=fields["metadata"],
                    pages=fields["pages"],
                    chunk_spans=fields["chunk_spans"],
                    text_start=fields["text_start"],
                    heading_path=fields["heading_path"],
                ),
                created_at=fields["created_at"],
                updated_at=fields["updated_at"],
                chunk_count=fields["chunk_count"],
            )
        return out

    def iter_metadata(self, *, page: int = 5000) -> Iterator[list[tuple[str, dict[str, Any]]]]:
        """Every record's ``(document id, metadata)``, in pages."""

        def read(limit: int, offset: int) -> list[tuple[str, dict[str, Any]]]:
            result = self._calls.call(
                "read documents",
                lambda: self.collection.get(include=["metadatas"], limit=limit, offset=offset),
            )
            return [(i, m) for i, _, m in unpack(result)]

        return paged(read, page)

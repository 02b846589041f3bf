"""Ingest planning: which documents changed, their chunks, vectors and records.

:func:`plan_batch` reads what is stored for a batch of documents, skips the unchanged
ones (same content hash, complete in both the chunks and the document table), chunks and
embeds the rest and lays out every record to write (:class:`WriteBatch`). It writes
nothing; :mod:`remy_retriever.ingest.writer` does.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timezone
from typing import Any

import numpy as np

from ..models.embeddings import Embedder, as_matrix
from ..schema.document import Chunk, Document
from ..schema.records import (
    DOCUMENT_ID_KEY,
    ChunkState,
    LexicalRecord,
    chunk_metadata,
    chunk_state,
    content_hash,
    document_fields,
    document_metadata,
    to_lexical_record,
)
from ..stores.dense import DenseStore
from ..stores.document_table import DocumentTable
from ..text.chunking import chunk_text, chunks_from_spans

__all__ = ["ExistingDocument", "WriteBatch", "existing_documents", "plan_batch"]

#: Documents are looked up in Chroma this many at a time (an ``$in`` filter).
LOOKUP_BATCH = 500


@dataclass(frozen=True)
class ExistingDocument:
    """A stored document as ingest sees it: its chunk ids, its version's content hash
    (``None`` when its chunks mix versions), creation time and whether it is whole (as
    many chunks as its version has, and the document table names the same version)."""

    chunk_ids: tuple[str, ...]
    doc_hash: str | None
    created: str | None
    complete: bool


@dataclass(frozen=True)
class WriteBatch:
    """New or changed documents, chunked and embedded, ready to write."""

    vectors: np.ndarray
    ids: list[str] = field(default_factory=list)
    texts: list[str] = field(default_factory=list)
    metas: list[dict[str, Any]] = field(default_factory=list)
    records: list[LexicalRecord] = field(default_factory=list)
    stale: list[str] = field(default_factory=list)
    bounds: list[int] = field(default_factory=list)  # where each document's chunks end
    doc_ids: list[str] = field(default_factory=list)
    doc_texts: list[str] = field(default_factory=list)
    doc_metas: list[dict[str, Any]] = field(default_factory=list)
    added: list[str] = field(default_factory=list)
    updated: list[str] = field(default_factory=list)


def existing_documents(
    dense: DenseStore, table: DocumentTable, doc_ids: Iterable[str]
) -> dict[str, ExistingDocument]:
    """What is stored for these documents (absent ones are left out)."""
    wanted = list(doc_ids)
    chunks: dict[str, list[tuple[str, ChunkState]]] = {}
    for lo in range(0, len(wanted), LOOKUP_BATCH):
        where = {DOCUMENT_ID_KEY: {"$in": wanted[lo : lo + LOOKUP_BATCH]}}
        for records in dense.iter_all(where=where, documents=False):
            for cid, _, meta in records:
                state = chunk_state(cid, meta)
                chunks.setdefault(state.document_id, []).append((cid, state))
    stored = table.get(list(chunks))
    out: dict[str, ExistingDocument] = {}
    for doc_id, rows in chunks.items():
        first = rows[0][1]
        mixed = any(state.doc_hash != first.doc_hash for _, state in rows)
        doc_hash = None if mixed else first.doc_hash  # mixed versions: treat as changed
        table_hash = document_fields(stored[doc_id][1])["doc_hash"] if doc_id in stored else None
        out[doc_id] = ExistingDocument(
            chunk_ids=tuple(cid for cid, _ in rows),
            doc_hash=doc_hash,
            created=first.created,
            complete=first.n_chunks == len(rows) and table_hash == doc_hash,
        )
    return out


def chunker_signature(embedder: Embedder, max_tokens: int) -> str:
    """What, besides a document's content, decides its chunks and vectors."""
    model = json.dumps(getattr(embedder, "model_id", type(embedder).__name__))
    return f"v1|{model}|{max_tokens}"


def plan_batch(
    docs: Sequence[Document],
    existing: dict[str, ExistingDocument],
    *,
    embedder: Embedder,
    max_tokens: int,
) -> tuple[WriteBatch | None, list[str]]:
    """Chunk and embed the documents of ``docs`` that are new or changed; returns them
    ready to write (or ``None``) and the ids of the unchanged ones."""
    signature = chunker_signature(embedder, max_tokens)
    plans: list[tuple[Document, list[Chunk], str, ExistingDocument | None]] = []
    unchanged: list[str] = []
    for doc in docs:
        doc_hash = content_hash(doc.content_hash, signature)
        old = existing.get(doc.id)
        if old is not None and old.doc_hash == doc_hash and old.complete:
            unchanged.append(doc.id)
            continue
        if doc.chunk_spans is not None:  # already split by the caller (a framework)
            chunks = chunks_from_spans(
                doc.id,
                doc.text,
                doc.chunk_spans,
                title=doc.title,
                offset=doc.text_start,
                heading_path=doc.heading_path,
            )
        else:
            chunks = chunk_text(
                doc.id,
                doc.text,
                title=doc.title,
                max_tokens=max_tokens,
                count_tokens=getattr(embedder, "count_tokens", None),
            )
        plans.append((doc, chunks, doc_hash, old))
    if not plans:
        return None, unchanged
    texts = [c.display_text for _, chunks, _, _ in plans for c in chunks]
    vectors = (
        as_matrix(embedder.embed_documents(texts), len(texts))
        if texts
        else np.zeros((0, 0), dtype=np.float32)
    )
    now = datetime.now(timezone.utc)
    now_iso = now.isoformat().replace("+00:00", "Z")
    now_ms = int(now.timestamp() * 1000)
    batch = WriteBatch(vectors=vectors)
    for doc, chunks, doc_hash, old in plans:
        is_new = old is None or old.created is None
        created = now_iso if old is None or old.created is None else old.created
        batch.doc_ids.append(doc.id)
        batch.doc_texts.append(doc.text)
        batch.doc_metas.append(
            document_metadata(
                doc, doc_hash=doc_hash, n_chunks=len(chunks), created=created, updated=now_iso
            )
        )
        (batch.added if is_new else batch.updated).append(doc.id)
        for chunk in chunks:
            page, page_end = doc.page_span(chunk.start - doc.text_start, chunk.end - doc.text_start)
            meta = chunk_metadata(
                doc,
                chunk,
                doc_hash=doc_hash,
                n_chunks=len(chunks),
                created=created,
                updated=now_iso,
                updated_ms=now_ms,
                page=page,
                page_end=page_end,
            )
            batch.ids.append(chunk.id)
            batch.texts.append(chunk.display_text)
            batch.metas.append(meta)
            batch.records.append(to_lexical_record((chunk.id, chunk.display_text, meta)))
        batch.bounds.append(len(batch.ids))
        if old is not None:
            keep = {c.id for c in chunks}
            batch.stale.extend(i for i in old.chunk_ids if i not in keep)
    return batch, unchanged

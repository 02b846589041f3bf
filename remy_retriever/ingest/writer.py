"""Ingest writes: add documents in grouped writes, delete documents, to both stores.

Chroma (the source of truth) is written first, then the document table, then the lexical
index in one commit, all inside one :meth:`~remy_retriever.stores.sync.StoreSync.change`
(dirty flag before, new generation after), holding the writer lock.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any

import numpy as np
from tqdm.auto import tqdm

from ..errors import InvalidDocumentError
from ..models.embeddings import Embedder
from ..schema.document import Document, validate_document_id
from ..schema.options import check_int
from ..schema.records import DOCUMENT_ID_KEY, ROOT_KEY
from ..schema.validation import as_list, check_storable
from ..stores.sync import StoreSync
from ..util.reprs import short_repr
from .files import DEFAULT_MAX_DOCUMENT_BYTES, FileIssue
from .planner import WriteBatch, existing_documents, plan_batch

__all__ = ["WRITE_GROUP_CHUNKS", "IngestReport", "Ingestor"]

#: ``add()`` embeds batch by batch but writes once this many chunks are ready (or at
#: the end): fewer, larger writes cost less than many small ones on a large store
#: (benchmarks/README.md section "2. Scale", the add/delete probe at 100k).
WRITE_GROUP_CHUNKS = 2048
#: With a progress bar, ``add()`` chunks and embeds at most this many documents per step
#: (writes still wait for WRITE_GROUP_CHUNKS), so the bar moves on a small ingest too.
PROGRESS_STEP = 16


@dataclass(frozen=True)
class IngestReport:
    """What a :meth:`Retriever.add` or :meth:`Retriever.ingest` call did.

    ``skipped`` and ``failed`` (folder ingest only) list the files left out, each a
    :class:`~remy_retriever.ingest.files.FileIssue` with its path and reason: skipped
    files are not usable documents (unsupported type, a link leaving the folder, too
    large, not UTF-8...), failed ones could not be read (e.g. permission denied).
    ``gone`` (folder ingest only) lists the documents an earlier ingest of the same
    folder added whose ids this ingest no longer finds: their files were deleted or
    moved, or, for those also in ``gone_on_disk``, the file is still where it was and
    the folder is ingested under another ``id_prefix`` now. ``pruned`` says they were
    deleted (``prune=True``; their chunks count in ``chunks_deleted``)."""

    added: tuple[str, ...] = ()
    updated: tuple[str, ...] = ()
    unchanged: tuple[str, ...] = ()
    chunks_written: int = 0
    chunks_deleted: int = 0
    skipped: tuple[FileIssue, ...] = ()
    failed: tuple[FileIssue, ...] = ()
    gone: tuple[str, ...] = ()
    pruned: bool = False
    gone_on_disk: tuple[str, ...] = ()


class Ingestor:
    """Writes documents into the synced stores."""

    def __init__(self, sync: StoreSync) -> None:
        self.sync = sync

    def add(
        self,
        documents: object,
        *,
        embedder: Embedder,
        max_tokens: int,
        batch_size: int,
        progress: bool,
        max_bytes: int = DEFAULT_MAX_DOCUMENT_BYTES,
        roots: Mapping[str, str] | None = None,
        rewrite: frozenset[str] = frozenset(),
    ) -> IngestReport:
        """Add or replace documents (see :meth:`remy_retriever.Retriever.add`).

        Folder ingest passes ``roots`` (document id -> the folder it was read from,
        recorded in its records) and ``rewrite``: ids to write even when unchanged (to
        record their root)."""
        docs = as_list(documents, "add()", "[Document(id='guide', text='...')]")
        check_int("batch_size", batch_size)
        _check_documents(docs, max_bytes)
        added: list[str] = []
        updated: list[str] = []
        unchanged: list[str] = []
        written = deleted = 0
        bar = _progress_bar(len(docs)) if progress else None
        pending: list[WriteBatch] = []

        def flush() -> None:
            nonlocal written, deleted
            report = self._write(pending)
            added.extend(report.added)
            updated.extend(report.updated)
            written += report.chunks_written
            deleted += report.chunks_deleted
            pending.clear()

        sync = self.sync
        try:
            with sync.writing():
                # With a bar, steps of at most PROGRESS_STEP documents, so that it moves.
                step = batch_size if bar is None else min(batch_size, PROGRESS_STEP)
                for start in range(0, len(docs), step):
                    batch = docs[start : start + step]
                    existing = existing_documents(sync.dense, sync.table, (d.id for d in batch))
                    for doc_id in rewrite & existing.keys():
                        existing[doc_id] = replace(existing[doc_id], complete=False)
                    planned, same = plan_batch(
                        batch, existing, embedder=embedder, max_tokens=max_tokens
                    )
                    unchanged += same
                    if planned is not None:
                        if roots:
                            _record_roots(planned, roots)
                        pending.append(planned)
                    # Embedding goes batch by batch (bounded memory, a moving progress
                    # bar); writing waits for a group of WRITE_GROUP_CHUNKS chunks: per
                    # write, Chroma, tantivy's commit and the sync state each have a
                    # fixed cost, and larger Chroma calls spread its work over both cores.
                    if sum(len(p.ids) for p in pending) >= WRITE_GROUP_CHUNKS:
                        flush()
                    if bar is not None:
                        bar.update(len(batch))
                if pending:
                    flush()
        finally:
            if bar is not None:
                bar.close()
        return IngestReport(tuple(added), tuple(updated), tuple(unchanged), written, deleted)

    def _write(self, group: Sequence[WriteBatch]) -> IngestReport:
        """Write planned batches to both stores in one change."""
        ids = [i for p in group for i in p.ids]
        texts = [t for p in group for t in p.texts]
        metas = [m for p in group for m in p.metas]
        records = [r for p in group for r in p.records]
        stale = [i for p in group for i in p.stale]
        bounds: list[int] = []  # index in ids where each document's chunks end
        offset = 0
        for p in group:
            bounds += [offset + b for b in p.bounds]
            offset += len(p.ids)
        parts = [p.vectors for p in group if p.ids]
        vectors = np.concatenate(parts) if parts else np.zeros((0, 0), dtype=np.float32)
        sync = self.sync
        sync.lexical.check_capacity(records)  # refuse before writing anything
        doc_ids = [d for p in group for d in p.doc_ids]
        doc_texts = [t for p in group for t in p.doc_texts]
        doc_metas = [m for p in group for m in p.doc_metas]
        with sync.change(records=(doc_ids, doc_texts, doc_metas)):
            # One Chroma call per slice, cut only at document boundaries, so each
            # document's chunks land together (a crash never leaves half of a document's
            # new chunks).
            lo = 0
            for hi in slices(bounds, max(1, sync.dense.max_batch)):
                sync.dense.upsert(ids[lo:hi], vectors[lo:hi], texts[lo:hi], metas[lo:hi])
                lo = hi
            sync.dense.delete(stale)
            sync.table.upsert(doc_ids, doc_texts, doc_metas)
            sync.lexical.apply(upserts=records, deletes=stale)
        added = tuple(d for p in group for d in p.added)
        updated = tuple(d for p in group for d in p.updated)
        return IngestReport(added, updated, (), len(ids), len(stale))

    def delete(self, document_ids: object) -> int:
        """Delete documents from both stores; returns the chunks removed."""
        wanted = as_list(document_ids, "delete()", "['guide'] (a list of document ids)")
        ids = [validate_document_id(d) for d in wanted]
        if not ids:
            return 0
        sync = self.sync
        with sync.writing():
            chunk_ids = self.chunk_ids(ids)
            with sync.change():
                sync.dense.delete(chunk_ids)
                sync.table.delete(ids)
                sync.lexical.apply(deletes=chunk_ids, delete_documents=ids)
        return len(chunk_ids)

    def chunk_ids(self, doc_ids: Sequence[str]) -> list[str]:
        """The ids of these documents' chunks in Chroma (ids only: no metadata is read)."""
        out: list[str] = []
        for lo in range(0, len(doc_ids), 500):
            where = {DOCUMENT_ID_KEY: {"$in": list(doc_ids[lo : lo + 500])}}
            for records in self.sync.dense.iter_all(where=where, documents=False, metadatas=False):
                out += [cid for cid, _, _ in records]
        return out


def _record_roots(planned: WriteBatch, roots: Mapping[str, str]) -> None:
    """Record each planned document's root in its chunk and document-table records."""
    for meta in planned.metas:
        root = roots.get(str(meta[DOCUMENT_ID_KEY]))
        if root is not None:
            meta[ROOT_KEY] = root
    for doc_id, meta in zip(planned.doc_ids, planned.doc_metas):
        if doc_id in roots:
            meta[ROOT_KEY] = roots[doc_id]


#: Converters for the framework documents people pass to add() by mistake.
_CONVERTERS = {
    "langchain": "langchain_remy.to_remy_documents(docs)",
    "llama_index": "llama_index.vector_stores.remy.to_remy_documents(nodes)",
}


def _not_a_document(obj: object) -> str:
    kind = type(obj)
    where = f"{kind.__module__}.{kind.__qualname__}"
    msg = f"add() takes remy_retriever.Document objects, got {where} {short_repr(obj)}"
    for prefix, converter in _CONVERTERS.items():
        if kind.__module__.split(".")[0] in (prefix, f"{prefix}_core"):
            return f"{msg}; convert them first with {converter}"
    return f"{msg}; build remy_retriever.Document(id=..., text=...) objects"


def _check_documents(docs: Sequence[object], max_bytes: int) -> None:
    seen: set[str] = set()
    for doc in docs:
        if not isinstance(doc, Document):
            raise InvalidDocumentError(_not_a_document(doc))
        if doc.id in seen:
            msg = f"document id {doc.id!r} appears twice in one add() call; dedupe first"
            raise InvalidDocumentError(msg)
        check_storable(doc)
        # UTF-8 takes at most 4 bytes a character: only long texts need encoding.
        if len(doc.text) * 4 > max_bytes:
            size = len(doc.text.encode("utf-8"))
            if size > max_bytes:
                msg = (
                    f"Document {doc.id!r} is {size:,} bytes of text, over the limit of "
                    f"{max_bytes:,} bytes; split it into smaller documents, or raise the "
                    f"limit with Retriever(..., max_document_bytes={_round_up(size)})"
                )
                raise InvalidDocumentError(msg)
        seen.add(doc.id)


def _round_up(size: int) -> int:
    """``size`` rounded up to whole MiB (a limit to suggest)."""
    mib = 2**20
    return -(-size // mib) * mib


def slices(bounds: Sequence[int], limit: int) -> list[int]:
    """End offsets of slices of at most ``limit`` items, cut only at ``bounds`` (a
    document larger than ``limit`` gets slices of its own)."""
    ends: list[int] = []
    start = prev = 0
    for bound in bounds:
        if bound - start > limit and prev > start:
            ends.append(prev)
            start = prev
        while bound - start > limit:
            start += limit
            ends.append(start)
        prev = bound
    if prev > start:
        ends.append(prev)
    return ends


def _progress_bar(total: int) -> Any:
    return tqdm(total=total, unit="doc", desc="ingest")

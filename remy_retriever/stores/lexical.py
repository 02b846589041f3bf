"""A persistent, incremental, filterable BM25 index on tantivy, derived from Chroma.

Chroma is the source of truth; this index can always be rebuilt from it (``clear()`` then
``upsert()`` everything). On disk, ``path`` holds:

* ``tantivy/`` -- the tantivy index;
* ``lexical.json`` -- internal: the format version and the numeric-key -> slot map;
* ``state.json`` -- the caller's small sidecar (:attr:`LexicalIndex.state`).

This module reads and writes; records, queries and filters become tantivy's in
:mod:`remy_retriever.stores.tantivy_schema`, and :mod:`.files` writes the sidecars.

Limits: :data:`MAX_NUMERIC_KEYS` numeric metadata keys (``clear()`` frees them); 64-bit ints.

One writer per index at a time, across threads and processes: writes wait up to
``lock_timeout`` seconds for the lock, then raise :class:`IndexLockedError`. Every write
call is one atomic commit. Readers pick up commits (also other processes') cheaply by
watching ``meta.json``.

Damage: the index is derived data. When its files are missing or unreadable (segment
files deleted, ``meta.json`` or ``lexical.json`` gone or garbled, ``state.json`` not a
JSON object, or the tantivy index gone while ``state.json`` still records a sync), opening it
raises :class:`LexicalIndexCorruptError` naming the path -- or, with ``recover=True``
(what :class:`~remy_retriever.Retriever` passes), discards the files and starts empty
with an empty state, so that the owner rebuilds it from Chroma. Damage first noticed by
a read raises :class:`LexicalIndexCorruptError` too (never a raw tantivy error); call
:meth:`LexicalIndex.reset` and rebuild. What ``state.json``'s values mean is the owner's
business: :class:`~remy_retriever.stores.sync.SyncState` reads a wrong type or value as an
interrupted write, which the next catch-up repairs from Chroma.
"""

from __future__ import annotations

import json
import logging
import os
import shutil
import threading
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from types import TracebackType
from typing import Any

import tantivy

from ..errors import (
    IndexLockedError,
    InvalidInputError,
    InvalidQueryError,
    LexicalIndexCorruptError,
    RemyError,
    StoreError,
)
from ..schema.filters import Filter
from ..schema.records import LexicalRecord
from ..text.analyzers import ENGLISH, Analyzer, sanitize
from .chroma import local_path
from .files import read_json, stat_signature, write_json_atomic, write_text_atomic
from .tantivy_schema import (
    DOC_FIELD,
    FORMAT,
    HASH_FIELD,
    ID_FIELD,
    ID_HASH_FIELD,
    TEXT_FIELD,
    assign_slots,
    bm25_idf,
    build_schema,
    check_ids,
    check_k,
    check_records,
    check_terms,
    check_where,
    dump_slots,
    first_str,
    load_slots,
    numeric_keys,
    scoped_idf,
    scoped_weights,
    search_query,
    split_id_hash,
    term_weights,
    to_document,
)

__all__ = ["MAX_NUMERIC_KEYS", "LexicalIndex", "LexicalIndexCorruptError"]

_log = logging.getLogger(__name__)

#: How many distinct numeric metadata keys one index can range-filter on.
MAX_NUMERIC_KEYS = 32

_TANTIVY_DIR = "tantivy"
_META_FILE = "lexical.json"
_STATE_FILE = "state.json"
_HEAP_BYTES = 64_000_000
_ID_BATCH = 1024


def _is_index_failure(exc: BaseException) -> bool:
    """A failure inside tantivy: its I/O and corruption errors surface as ValueError,
    OSError or RuntimeError, a Rust panic as pyo3's PanicException (a BaseException)."""
    return isinstance(exc, (ValueError, OSError, RuntimeError)) or (
        type(exc).__name__ == "PanicException"
    )


class LexicalIndex:
    """A persistent BM25 index over chunks, with Chroma-style metadata filters.

    Safe to share between threads: searches run concurrently, writes are serialized.

    ``filter_statistics``: when True, a filtered search scores with BM25 statistics
    (``N`` and each term's document frequency) counted inside the filter only, so that a
    tenant's scores, ``explain`` and relevance do not reveal which terms other tenants'
    chunks hold (:func:`~.tantivy_schema.scoped_weights`). Costs one count query per
    query term and one for the filter. ``analyzer``: the collection's, set on open.
    """

    #: Score filtered searches with statistics counted inside the filter (see above).
    filter_statistics: bool = False
    analyzer: Analyzer = ENGLISH

    def __init__(
        self, path: str | os.PathLike[str], *, lock_timeout: float = 10.0, recover: bool = False
    ) -> None:
        if (
            isinstance(lock_timeout, bool)
            or not isinstance(lock_timeout, (int, float))
            or not lock_timeout >= 0
        ):
            msg = f"lock_timeout must be a number of seconds >= 0, got {lock_timeout!r}"
            raise InvalidInputError(msg)
        self._root = local_path(path, "lexical_path")
        self._index_dir = self._root / _TANTIVY_DIR
        self._meta_file = self._root / _META_FILE
        self._state_file = self._root / _STATE_FILE
        # tantivy rewrites meta.json on every commit; str, not Path, keeps os.stat cheap.
        self._commit_file = str(self._index_dir / "meta.json")
        self._lock_timeout = float(lock_timeout)
        self._write_lock = threading.Lock()
        self._reload_lock = threading.Lock()
        self._schema = build_schema(MAX_NUMERIC_KEYS)
        #: Why the files were discarded on open (``recover=True``), else ``None``.
        self.recovered_from: str | None = None
        self._index: tantivy.Index | None = None
        self._slots: dict[str, int] = {}
        self._signature: tuple[int, int, int] | None = None
        self._check_writable()
        try:
            self._load()
        except LexicalIndexCorruptError as exc:
            if not recover:
                raise
            _log.warning("discarding the damaged lexical index: %s", exc)
            self._discard_files()
            self._load()
            self.recovered_from = str(exc)

    def _check_writable(self) -> None:
        """A read-only index is not damage: say so rather than try to discard it."""
        paths = [self._root, self._index_dir, self._meta_file, self._state_file]
        if self._index_dir.is_dir():
            paths += sorted(self._index_dir.iterdir())
        # access() first, exists() second: a file another writer deletes in between is
        # gone, not read-only.
        blocked = [p for p in paths if not os.access(p, os.R_OK | os.W_OK) and p.exists()]
        if blocked:
            msg = (
                f"the lexical index at {self._root} is read-only for this user "
                f"({blocked[0]}); remy writes to it even to search (catch-up, repair): "
                "make it writable (chmod -R u+w) or pass another lexical_path"
            )
            raise StoreError(msg)

    def _load(self) -> None:
        """Open (creating if needed) the index files; raise LexicalIndexCorruptError when
        they are damaged."""
        try:
            self._index_dir.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            msg = f"cannot create the lexical index directory {self._index_dir}: {exc}"
            raise StoreError(msg) from exc
        existed = tantivy.Index.exists(str(self._index_dir))
        if not existed and self._read_state_file():
            msg = (
                f"the lexical index at {self._index_dir} is gone (no meta.json) but "
                f"{self._state_file} records a sync; delete {self._root} and rebuild it "
                "from Chroma (a Retriever does this by itself)"
            )
            raise LexicalIndexCorruptError(msg)
        with self._guard("open"):
            index = tantivy.Index(self._schema, path=str(self._index_dir), reuse=True)
            index.config_reader(reload_policy="manual")
            num_docs = index.searcher().num_docs
        if not self._meta_file.exists():
            if existed and num_docs > 0:
                msg = (
                    f"the lexical index at {self._root} has documents but no {_META_FILE}; "
                    f"delete {self._root} and rebuild it from Chroma (a Retriever does "
                    "this by itself)"
                )
                raise LexicalIndexCorruptError(msg)
            self._write_slots({})
        self._read_state_file()
        self._slots = self._read_slots()
        self._index = index
        self._signature = stat_signature(self._commit_file)

    def _read_state_file(self) -> dict[str, Any]:
        try:
            data = read_json(self._state_file)
        except StoreError as exc:
            raise LexicalIndexCorruptError(str(exc)) from exc
        if data is None:
            return {}
        if not isinstance(data, dict):
            msg = f"{self._state_file} does not hold a JSON object; delete {self._root}"
            raise LexicalIndexCorruptError(msg)
        return data

    def _discard_files(self) -> None:
        """Remove the files this class owns under the root (nothing else)."""
        try:
            shutil.rmtree(self._index_dir, ignore_errors=True)
            for path in (self._meta_file, self._state_file):
                path.unlink(missing_ok=True)
        except OSError as exc:
            msg = f"cannot discard the damaged lexical index at {self._root}: {exc}"
            raise StoreError(msg) from exc

    def reset(self) -> None:
        """Discard every file of the index (also when damaged) and start empty, with an
        empty :attr:`state`. The caller must hold off other writers (a Retriever holds
        its writer lock) and rebuild from Chroma."""
        with self._write_lock, self._reload_lock:
            self._open_index()
            self._index = None
            self._discard_files()
            self._load()

    @contextmanager
    def _guard(self, what: str, *, damaged: bool = True) -> Iterator[None]:
        """Turn a failure of tantivy itself (I/O, damaged files, a Rust panic) into
        :class:`LexicalIndexCorruptError` (or, for a failed write, which may be a full
        disk, :class:`StoreError`); our own errors pass through."""
        try:
            yield
        except RemyError:
            raise
        except BaseException as exc:
            if not _is_index_failure(exc):
                raise
            if not damaged:
                msg = f"cannot {what} the lexical index at {self._index_dir}: {exc}"
                raise StoreError(msg) from exc
            msg = (
                f"cannot {what} the lexical index at {self._index_dir}: its files are missing "
                f"or damaged ({type(exc).__name__}: {exc}); it is derived from Chroma: "
                "reopen the Retriever or run `remy doctor --repair` to rebuild it"
            )
            raise LexicalIndexCorruptError(msg) from exc

    # ------------------------------------------------------------------ lifecycle

    def close(self) -> None:
        """Release the index. Idempotent; later calls raise :class:`StoreError`."""
        with self._write_lock, self._reload_lock:
            self._index = None

    def __enter__(self) -> LexicalIndex:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"LexicalIndex({str(self._root)!r})"

    def _open_index(self) -> tantivy.Index:
        index = self._index
        if index is None:
            msg = f"the lexical index at {self._root} is closed; open a new LexicalIndex"
            raise StoreError(msg)
        return index

    # ------------------------------------------------------------------ writes

    def upsert(self, records: Sequence[LexicalRecord]) -> None:
        """Add or replace (by ``chunk_id``) ``records`` in one commit."""
        self.apply(upserts=records)

    def delete(self, chunk_ids: Sequence[str]) -> None:
        """Delete chunks by id in one commit; unknown ids are ignored."""
        self.apply(deletes=chunk_ids)

    def delete_documents(self, document_ids: Sequence[str]) -> None:
        """Delete every chunk of the given documents in one commit; unknown ids are ignored."""
        self.apply(delete_documents=document_ids)

    def apply(
        self,
        *,
        upserts: Sequence[LexicalRecord] = (),
        deletes: Sequence[str] = (),
        delete_documents: Sequence[str] = (),
    ) -> None:
        """Apply deletions, then upserts, in one atomic commit.

        Deletions run first, so ``apply(delete_documents=[d], upserts=new_chunks_of_d)``
        replaces document ``d`` atomically. Within ``upserts`` the last record of an id wins.
        """
        records = check_records(upserts)
        chunk_ids = check_ids(deletes, "deletes")
        document_ids = check_ids(delete_documents, "delete_documents")
        if not (records or chunk_ids or document_ids):
            return
        keys = numeric_keys(records.values())

        def body(writer: tantivy.IndexWriter) -> None:
            slots = self._read_slots()
            if assign_slots(slots, keys, MAX_NUMERIC_KEYS):
                self._write_slots(slots)
            for chunk_id in chunk_ids:
                writer.delete_documents_by_term(ID_FIELD, chunk_id)
            for document_id in document_ids:
                writer.delete_documents_by_term(DOC_FIELD, document_id)
            for chunk_id, record in records.items():
                writer.delete_documents_by_term(ID_FIELD, chunk_id)
                writer.add_document(to_document(record, slots, self.analyzer.terms))

        self._write(body)

    def check_capacity(self, records: Sequence[LexicalRecord]) -> None:
        """Raise :class:`InvalidDocumentError` now if ``records`` would need more numeric
        metadata keys than the index has slots for, so that a caller can refuse a write
        before touching any other store. Writes nothing."""
        keys = numeric_keys(check_records(records).values())
        if keys:
            assign_slots(self._read_slots(), keys, MAX_NUMERIC_KEYS)

    def clear(self) -> None:
        """Delete every chunk, free the numeric slots and reset :attr:`state` to ``{}``."""

        def after_commit() -> None:
            self._write_slots({})
            write_json_atomic(self._state_file, {})

        self._write(lambda writer: writer.delete_all_documents(), after_commit)

    def _write(
        self,
        body: Callable[[tantivy.IndexWriter], None],
        after_commit: Callable[[], None] | None = None,
    ) -> None:
        """Run ``body`` on a fresh writer and commit, holding the in-process and file locks."""
        deadline = time.monotonic() + self._lock_timeout
        if not self._write_lock.acquire(timeout=self._lock_timeout):
            raise self._locked_error(None)
        try:
            index = self._open_index()
            writer = self._open_writer(index, deadline)
            try:
                with self._guard("write to", damaged=False):
                    # A writer killed inside commit() (another process, or this one
                    # earlier) can leave files that no meta.json references. The next
                    # writer derives the same names for the same operations, and its
                    # commit then fails (FileAlreadyExists). Tantivy removes unreferenced
                    # files after its own commits only, so clear them first; we hold the
                    # index's writer lock, so no other writer's files are in flight.
                    writer.garbage_collect_files()
                    body(writer)
                    writer.commit()
                if after_commit is not None:
                    after_commit()
            except BaseException:
                try:
                    writer.rollback()
                except Exception:  # the writer may be unusable after a failure
                    _log.debug("rollback of the lexical index writer failed", exc_info=True)
                raise
            finally:
                # Waits for pending merges (keeps the segment count low) and drops the
                # writer, which releases the index lock.
                try:
                    writer.wait_merging_threads()
                except Exception:
                    _log.warning("merging the lexical index at %s failed", self._index_dir)
            with self._guard("reload"):
                self._reload(index, force=True)
        finally:
            self._write_lock.release()

    def _open_writer(self, index: tantivy.Index, deadline: float) -> tantivy.IndexWriter:
        delay = 0.005
        while True:
            try:
                return index.writer(heap_size=_HEAP_BYTES, num_threads=1)
            except ValueError as exc:
                if "LockBusy" not in str(exc):
                    msg = f"cannot open a writer on the lexical index at {self._index_dir}: {exc}"
                    raise StoreError(msg) from exc
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    raise self._locked_error(exc) from exc
                time.sleep(min(delay, remaining))
                delay = min(delay * 2, 0.25)

    def _locked_error(self, cause: BaseException | None) -> IndexLockedError:
        msg = (
            f"the lexical index at {self._root} is locked by another writer (in this "
            f"or another process) and was not released within {self._lock_timeout:g} s; "
            "retry later, raise lock_timeout, or stop the other writer"
        )
        error = IndexLockedError(msg)
        error.__cause__ = cause
        return error

    # ------------------------------------------------------------------ reads

    def search(
        self, query: str, k: int, where: Filter | None = None, among: Sequence[str] | None = None
    ) -> list[tuple[str, float]]:
        """The ``k`` best chunks for ``query`` by BM25, as ``(chunk_id, score)``, best first
        (only chunk ids in ``among``, if given). ``[]`` when the query has no terms. A
        term repeated in the query counts that often."""
        if not isinstance(query, str):
            msg = f"query must be str, got {type(query).__name__} {query!r:.80}"
            raise InvalidQueryError(msg)
        ids = None if among is None else check_ids(among, "among")
        return self._search(self.analyzer.terms(query), k, where, ids)

    def search_terms(
        self, terms: Sequence[str], k: int, where: Filter | None = None
    ) -> list[tuple[str, float]]:
        """Like :meth:`search`, for already analysed terms (e.g. ``analyzer.terms(text)``)."""
        return self._search(check_terms(terms), k, where)

    def _search(
        self, terms: Sequence[str], k: int, where: Filter | None, among: list[str] | None = None
    ) -> list[tuple[str, float]]:
        check_k(k)
        check_where(where)
        weights = term_weights(terms)
        if not weights or k == 0 or among == []:
            return []
        searcher = self._searcher()
        total = searcher.num_docs
        if total == 0:
            return []
        with self._guard("search"):
            boosts: Mapping[str, float] = weights
            if self.filter_statistics and where is not None:
                boosts = scoped_weights(searcher, self._schema, self._slots, weights, where)
            query = search_query(self._schema, boosts, where, self._slots, among)
            hits = searcher.search(query, limit=min(k, total), count=False).hits
            results = [
                (first_str(searcher.doc(address), ID_FIELD), float(score))
                for score, address in hits
            ]
        results.sort(key=lambda hit: (-hit[1], hit[0]))
        return results

    def hashes(self, chunk_ids: Sequence[str]) -> dict[str, str]:
        """The stored ``content_hash`` of each of ``chunk_ids`` present in the index."""
        wanted = set(check_ids(chunk_ids, "chunk_ids"))
        if not wanted:
            return {}
        searcher = self._searcher()
        total = searcher.num_docs
        if total == 0:
            return {}
        found: dict[str, str] = {}
        with self._guard("read"):
            if 2 * len(wanted) >= total:
                # Most of the index: one pass over the live (id, hash) terms beats fetching
                # stored documents one by one.
                for term in _live_terms(searcher, ID_HASH_FIELD):
                    chunk_id, digest = split_id_hash(term)
                    if chunk_id in wanted:
                        found[chunk_id] = digest
                return found
            ordered = sorted(wanted)
            for start in range(0, len(ordered), _ID_BATCH):
                batch = ordered[start : start + _ID_BATCH]
                query = tantivy.Query.term_set_query(self._schema, ID_FIELD, batch)
                for _, address in searcher.search(query, limit=len(batch), count=False).hits:
                    document = searcher.doc(address)
                    found[first_str(document, ID_FIELD)] = first_str(document, HASH_FIELD)
        return found

    def ids(self) -> set[str]:
        """Every chunk id in the index."""
        searcher = self._searcher()
        if searcher.num_docs == 0:
            return set()
        with self._guard("read"):
            return set(_live_terms(searcher, ID_FIELD))

    def count(self) -> int:
        """How many chunks the index holds."""
        searcher = self._searcher()
        with self._guard("read"):
            return int(searcher.num_docs)

    def idf(self, terms: Sequence[str], where: Filter | None = None) -> dict[str, float]:
        """BM25 idf, ``ln(1 + (N - n + 0.5) / (n + 0.5))``, of each analysed term (not
        analysed again; empty strings are skipped).

        ``N`` counts live chunks; tantivy's own scoring also counts deleted chunks until
        their segment merges, so the two can differ slightly right after deletions. With
        :attr:`filter_statistics` and a ``where``, both are counted inside the filter.
        """
        check_terms(terms)
        check_where(where)
        wanted = [sanitize(t) for t in dict.fromkeys(terms) if t]
        searcher = self._searcher()
        live = int(searcher.num_docs)
        with self._guard("read"):
            if self.filter_statistics and where is not None:
                scoped = scoped_idf(searcher, self._schema, self._slots, wanted, where)
                return {t: scoped[sanitize(t)] for t in dict.fromkeys(terms) if t}
            df = {t: int(searcher.doc_freq(TEXT_FIELD, sanitize(t))) if live else 0 for t in terms}
            return {t: bm25_idf(live, n) for t, n in df.items() if t}

    def _searcher(self) -> tantivy.Searcher:
        index = self._open_index()
        with self._guard("read"):
            if stat_signature(self._commit_file) != self._signature:
                self._reload(index, force=False)
            return index.searcher()

    def _reload(self, index: tantivy.Index, *, force: bool) -> None:
        with self._reload_lock:
            # Take the signature before reloading: a commit landing in between only
            # causes one more reload later, never a missed one. The slot map is written
            # before the commit that first uses a slot, so it is fresh here too.
            signature = stat_signature(self._commit_file)
            if not force and signature == self._signature:
                return
            index.reload()
            self._slots = self._read_slots()
            self._signature = signature

    def _read_slots(self) -> dict[str, int]:
        try:
            data = read_json(self._meta_file)
        except StoreError as exc:
            raise LexicalIndexCorruptError(str(exc)) from exc
        if data is None:
            return {}
        slots = load_slots(data, MAX_NUMERIC_KEYS)
        if slots is None:
            msg = (
                f"{self._meta_file} is not a format-{FORMAT} lexical index file; delete "
                f"{self._root} and rebuild the lexical index from Chroma"
            )
            raise LexicalIndexCorruptError(msg)
        return slots

    def _write_slots(self, slots: dict[str, int]) -> None:
        write_json_atomic(self._meta_file, dump_slots(slots))

    # ------------------------------------------------------------------ state sidecar

    @property
    def state(self) -> dict[str, Any]:
        """The caller's sidecar state, read from disk (``{}`` if never saved). A file that
        is not a JSON object raises :class:`LexicalIndexCorruptError` (rebuild); what the
        values mean, and whether they make sense, is the caller's to check."""
        return self._read_state_file()

    def save_state(self, state: Mapping[str, Any]) -> None:
        """Atomically replace the sidecar state with ``state`` (JSON-serialisable)."""
        self._open_index()
        if not isinstance(state, Mapping):
            msg = f"state must be a mapping, got {type(state).__name__} {state!r:.80}"
            raise InvalidInputError(msg)
        try:
            text = json.dumps(dict(state), allow_nan=False, sort_keys=True)
        except (TypeError, ValueError) as exc:
            msg = f"state must be JSON-serialisable (str keys, finite numbers): {exc}"
            raise InvalidInputError(msg) from exc
        write_text_atomic(self._state_file, text)


def _live_terms(searcher: tantivy.Searcher, field: str) -> list[str]:
    """Every term of ``field`` (one per live chunk for the id fields), deleted chunks excluded."""
    terms = searcher.terms_with_prefix(field, "")
    # Terms of deleted chunks linger until their segment merges; only then do they make the
    # plain listing longer than the live count, and the (slower) filtered listing is needed.
    if len(terms) != searcher.num_docs:
        terms = searcher.terms_with_prefix(field, "", filter_query=tantivy.Query.all_query())
    return [term for term, _ in terms]

"""A persistent, incremental, filterable BM25 index on tantivy, derived from Chroma.

Chroma is the source of truth; this index can always be rebuilt from it (``clear()`` then
``upsert()`` everything). On disk, ``path`` holds:

* ``tantivy/`` -- the tantivy index;
* ``lexical.json`` -- internal: the format version and the numeric-key -> slot map;
* ``state.json`` -- the caller's small sidecar (:attr:`LexicalIndex.state`).

Text is analysed once, by :func:`remy_retriever.text.analysis.analyze`, and the terms are stored
space-joined in a ``whitespace``-tokenized field, so the index and the queries share the one
analyser. Queries are built from term queries, never parsed from user text.

Metadata filters (:mod:`remy_retriever.filters`) run inside tantivy with Chroma's semantics:

* every metadata pair becomes one exact token in the ``kv`` field, tagged by type, so
  strings, bools (``True != 1``) and numbers (``1 == 1.0``, compared exactly, also for
  large ints) never mix;
* numbers also go into one of :data:`MAX_NUMERIC_KEYS` float fields (``n0``...), a slot per
  metadata key, assigned on first sight, for ``$gt``/``$gte``/``$lt``/``$lte``. Range filters
  compare as 64-bit floats, so ints beyond 2**53 compare approximately;
* ``$ne``/``$nin`` are "all documents but the ``$eq``/``$in`` ones", so they match chunks
  lacking the key.

Limits: at most :data:`MAX_NUMERIC_KEYS` distinct numeric metadata keys per index (``clear()``
frees them); ints must fit in 64 bits.

One writer per index at a time, across threads and processes: writes wait up to
``lock_timeout`` seconds for the lock, then raise :class:`IndexLockedError`. Every write
call is one atomic commit. Readers pick up commits (also other processes') cheaply by
watching ``meta.json``.

Damage: the index is derived data. When its files are missing or unreadable (segment
files deleted, ``meta.json`` or ``lexical.json`` gone or garbled, ``state.json`` not
JSON, or the tantivy index gone while ``state.json`` still records a sync), opening it
raises :class:`LexicalIndexCorruptError` naming the path -- or, with ``recover=True``
(what :class:`~remy_retriever.Retriever` passes), discards the files and starts empty
with an empty state, so that the owner rebuilds it from Chroma. Damage first noticed by
a read raises :class:`LexicalIndexCorruptError` too (never a raw tantivy error); call
:meth:`LexicalIndex.reset` and rebuild.
"""

from __future__ import annotations

import functools
import hashlib
import json
import logging
import math
import os
import shutil
import threading
import time
import uuid
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from types import TracebackType
from typing import Any, TypeGuard

import tantivy

from ..errors import (
    IndexLockedError,
    InvalidDocumentError,
    InvalidFilterError,
    InvalidInputError,
    InvalidQueryError,
    RemyError,
    StoreError,
)
from ..filters import And, Compare, Filter, Or
from ..text.analysis import MAX_QUERY_TERMS, analyze, sanitize

__all__ = ["MAX_NUMERIC_KEYS", "LexicalIndex", "LexicalIndexCorruptError", "LexicalRecord"]

_log = logging.getLogger(__name__)

#: How many distinct numeric metadata keys one index can range-filter on.
MAX_NUMERIC_KEYS = 32

_FORMAT = 1
_TANTIVY_DIR = "tantivy"
_META_FILE = "lexical.json"
_STATE_FILE = "state.json"
_HEAP_BYTES = 64_000_000
_SEP = "\x1f"
# tantivy silently drops terms longer than ~64 KiB; longer kv tokens are hashed instead.
_MAX_KV_TOKEN = 4096
_ID_BATCH = 1024
_CACHED_VALUE_CHARS = 200
_INT64_MAX = 2**63 - 1

_F_ID = "id"
_F_DOC = "doc"
_F_HASH = "hash"
_F_IDHASH = "idh"
_F_TEXT = "text"
_F_KV = "kv"


class LexicalIndexCorruptError(StoreError):
    """The lexical index files are missing or unreadable. The index is derived from
    Chroma: discard it (:meth:`LexicalIndex.reset`) and rebuild; a Retriever does that
    by itself on open and when a search runs into the damage."""


def _slot_field(slot: int) -> str:
    return f"n{slot}"


@dataclass(frozen=True)
class LexicalRecord:
    """One chunk to index: its ids, the text to index, filterable metadata and a hash.

    ``text`` is indexed as is (the caller adds the heading path). ``content_hash`` lets
    catch-up skip unchanged chunks (see :meth:`LexicalIndex.hashes`).
    """

    chunk_id: str
    document_id: str
    text: str
    metadata: Mapping[str, str | int | float | bool]
    content_hash: str

    def __post_init__(self) -> None:
        _check_record_id(self.chunk_id, "chunk_id")
        _check_record_id(self.document_id, "document_id")
        if not isinstance(self.text, str):
            msg = (
                f"LexicalRecord {self.chunk_id!r}: text must be str, got "
                f"{type(self.text).__name__}; decode bytes first"
            )
            raise InvalidDocumentError(msg)
        if (
            not isinstance(self.content_hash, str)
            or _SEP in self.content_hash
            or "\x00" in self.content_hash
            or _has_surrogate(self.content_hash)
        ):
            msg = (
                f"LexicalRecord {self.chunk_id!r}: content_hash must be a str without "
                f"control characters (e.g. a hex digest), got {self.content_hash!r}"
            )
            raise InvalidDocumentError(msg)
        if not isinstance(self.metadata, Mapping):
            msg = (
                f"LexicalRecord {self.chunk_id!r}: metadata must be a mapping, got "
                f"{type(self.metadata).__name__} {self.metadata!r}"
            )
            raise InvalidDocumentError(msg)
        for key, value in self.metadata.items():
            if not isinstance(key, str) or not key:
                msg = (
                    f"LexicalRecord {self.chunk_id!r}: metadata keys must be non-empty str, "
                    f"got {key!r}"
                )
                raise InvalidDocumentError(msg)
            if not isinstance(value, (str, int, float, bool)):
                msg = (
                    f"LexicalRecord {self.chunk_id!r}: metadata[{key!r}] = {value!r} is not a "
                    "str, int, float or bool; convert it (e.g. json.dumps for lists)"
                )
                raise InvalidDocumentError(msg)
            if isinstance(value, int) and not isinstance(value, bool) and abs(value) > _INT64_MAX:
                msg = (
                    f"LexicalRecord {self.chunk_id!r}: metadata[{key!r}] = {value} does not "
                    "fit in 64 bits; store it as a str or a float"
                )
                raise InvalidDocumentError(msg)


def _is_index_failure(exc: BaseException) -> bool:
    """A failure inside tantivy: its I/O and corruption errors surface as ValueError,
    OSError or RuntimeError, a Rust panic as pyo3's PanicException (a BaseException)."""
    return isinstance(exc, (ValueError, OSError, RuntimeError)) or (
        type(exc).__name__ == "PanicException"
    )


def _has_surrogate(text: str) -> bool:
    return not text.isascii() and sanitize(text) != text


def _check_record_id(value: object, name: str) -> None:
    if not isinstance(value, str) or not value or "\x00" in value or _has_surrogate(value):
        msg = (
            f"LexicalRecord {name} must be a non-empty str without NUL or lone surrogates, "
            f"got {value!r}"
        )
        raise InvalidDocumentError(msg)


class LexicalIndex:
    """A persistent BM25 index over chunks, with Chroma-style metadata filters.

    Safe to share between threads: searches run concurrently, writes are serialized.
    """

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
        self._root = Path(path)
        self._index_dir = self._root / _TANTIVY_DIR
        self._meta_file = self._root / _META_FILE
        self._state_file = self._root / _STATE_FILE
        # tantivy rewrites meta.json on every commit; str, not Path, keeps os.stat cheap.
        self._commit_file = str(self._index_dir / "meta.json")
        self._lock_timeout = float(lock_timeout)
        self._write_lock = threading.Lock()
        self._reload_lock = threading.Lock()
        self._schema = _build_schema()
        #: Why the files were discarded on open (``recover=True``), else ``None``.
        self.recovered_from: str | None = None
        self._index: tantivy.Index | None = None
        self._slots: dict[str, int] = {}
        self._signature: tuple[int, int, int] | None = None
        try:
            self._load()
        except LexicalIndexCorruptError as exc:
            if not recover:
                raise
            _log.warning("discarding the damaged lexical index: %s", exc)
            self._discard_files()
            self._load()
            self.recovered_from = str(exc)

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
            _write_json_atomic(self._meta_file, {"format": _FORMAT, "numeric_slots": {}})
        self._read_state_file()
        self._slots = self._read_slots()
        self._index = index
        self._signature = _stat(self._commit_file)

    def _read_state_file(self) -> dict[str, Any]:
        try:
            data = _read_json(self._state_file)
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
        records = _check_records(upserts)
        chunk_ids = _check_ids(deletes, "deletes")
        document_ids = _check_ids(delete_documents, "delete_documents")
        if not (records or chunk_ids or document_ids):
            return
        numeric_keys = _numeric_keys(records.values())

        def body(writer: tantivy.IndexWriter) -> None:
            slots = self._read_slots()
            if self._assign_slots(slots, numeric_keys):
                _write_json_atomic(self._meta_file, {"format": _FORMAT, "numeric_slots": slots})
            for chunk_id in chunk_ids:
                writer.delete_documents_by_term(_F_ID, chunk_id)
            for document_id in document_ids:
                writer.delete_documents_by_term(_F_DOC, document_id)
            for chunk_id, record in records.items():
                writer.delete_documents_by_term(_F_ID, chunk_id)
                writer.add_document(_to_document(record, slots))

        self._write(body)

    def check_capacity(self, records: Sequence[LexicalRecord]) -> None:
        """Raise :class:`InvalidDocumentError` now if ``records`` would need more numeric
        metadata keys than the index has slots for, so that a caller can refuse a write
        before touching any other store. Writes nothing."""
        keys = _numeric_keys(_check_records(records).values())
        if keys:
            self._assign_slots(self._read_slots(), keys)

    def clear(self) -> None:
        """Delete every chunk, free the numeric slots and reset :attr:`state` to ``{}``."""

        def after_commit() -> None:
            _write_json_atomic(self._meta_file, {"format": _FORMAT, "numeric_slots": {}})
            _write_json_atomic(self._state_file, {})

        self._write(lambda writer: writer.delete_all_documents(), after_commit)

    def _assign_slots(self, slots: dict[str, int], keys: Iterable[str]) -> bool:
        changed = False
        for key in keys:
            if key in slots:
                continue
            used = set(slots.values())
            free = [slot for slot in range(MAX_NUMERIC_KEYS) if slot not in used]
            if not free:
                msg = (
                    f"metadata key {key!r} would be numeric metadata key number "
                    f"{MAX_NUMERIC_KEYS + 1}; the lexical index range-filters at most "
                    f"{MAX_NUMERIC_KEYS} numeric keys ({', '.join(sorted(slots))}). Store "
                    f"{key!r} as a str, drop it from the metadata, or clear() and rebuild"
                )
                raise InvalidDocumentError(msg)
            slots[key] = free[0]
            changed = True
        return changed

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

    def search(self, query: str, k: int, where: Filter | None = None) -> list[tuple[str, float]]:
        """The ``k`` best chunks for ``query`` by BM25, as ``(chunk_id, score)``, best first.

        ``[]`` when the query has no terms. A term repeated in the query counts that often.
        """
        if not isinstance(query, str):
            msg = f"query must be str, got {type(query).__name__} {query!r:.80}"
            raise InvalidQueryError(msg)
        return self._search(analyze(query), k, where)

    def search_terms(
        self, terms: Sequence[str], k: int, where: Filter | None = None
    ) -> list[tuple[str, float]]:
        """Like :meth:`search`, for already analysed terms (e.g. from ``analyze(text)``)."""
        return self._search(_check_terms(terms), k, where)

    def _search(
        self, terms: Sequence[str], k: int, where: Filter | None
    ) -> list[tuple[str, float]]:
        if isinstance(k, bool) or not isinstance(k, int) or k < 0:
            msg = f"k must be an int >= 0, got {k!r}"
            raise InvalidInputError(msg)
        if where is not None and not isinstance(where, (Compare, And, Or)):
            msg = (
                f"where must be a Filter from remy_retriever.filters.parse_where, got "
                f"{type(where).__name__} {where!r:.80}; pass parse_where(where)"
            )
            raise InvalidFilterError(msg)
        weights = _term_weights(terms)
        if not weights or k == 0:
            return []
        searcher = self._searcher()
        total = searcher.num_docs
        if total == 0:
            return []
        with self._guard("search"):
            query = self._text_query(weights)
            if where is not None:
                filter_query = tantivy.Query.const_score_query(
                    _to_query(where, self._schema, self._slots), 0.0
                )
                query = tantivy.Query.boolean_query(
                    [(tantivy.Occur.Must, query), (tantivy.Occur.Must, filter_query)]
                )
            hits = searcher.search(query, limit=min(k, total), count=False).hits
            results = [
                (_stored_str(searcher, address, _F_ID), float(score)) for score, address in hits
            ]
        results.sort(key=lambda hit: (-hit[1], hit[0]))
        return results

    def _text_query(self, weights: Mapping[str, int]) -> tantivy.Query:
        clauses: list[tuple[tantivy.Occur, tantivy.Query]] = []
        for term, count in weights.items():
            query = tantivy.Query.term_query(self._schema, _F_TEXT, term, index_option="freq")
            if count > 1:
                query = tantivy.Query.boost_query(query, float(count))
            clauses.append((tantivy.Occur.Should, query))
        if len(clauses) == 1:
            return clauses[0][1]
        return tantivy.Query.boolean_query(clauses)

    def hashes(self, chunk_ids: Sequence[str]) -> dict[str, str]:
        """The stored ``content_hash`` of each of ``chunk_ids`` present in the index."""
        wanted = set(_check_ids(chunk_ids, "chunk_ids"))
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
                for term in _live_terms(searcher, _F_IDHASH):
                    chunk_id, _, digest = term.rpartition(_SEP)
                    if chunk_id in wanted:
                        found[chunk_id] = digest
                return found
            ordered = sorted(wanted)
            for start in range(0, len(ordered), _ID_BATCH):
                batch = ordered[start : start + _ID_BATCH]
                query = tantivy.Query.term_set_query(self._schema, _F_ID, batch)
                for _, address in searcher.search(query, limit=len(batch), count=False).hits:
                    document = searcher.doc(address)
                    found[_first_str(document, _F_ID)] = _first_str(document, _F_HASH)
        return found

    def ids(self) -> set[str]:
        """Every chunk id in the index."""
        searcher = self._searcher()
        if searcher.num_docs == 0:
            return set()
        with self._guard("read"):
            return set(_live_terms(searcher, _F_ID))

    def count(self) -> int:
        """How many chunks the index holds."""
        searcher = self._searcher()
        with self._guard("read"):
            return int(searcher.num_docs)

    def idf(self, terms: Sequence[str]) -> dict[str, float]:
        """BM25 idf, ``ln(1 + (N - n + 0.5) / (n + 0.5))``, of each analysed term (not
        analysed again; empty strings are skipped).

        ``N`` counts live chunks; tantivy's own scoring also counts deleted chunks until
        their segment merges, so the two can differ slightly right after deletions.
        """
        _check_terms(terms)
        searcher = self._searcher()
        live = int(searcher.num_docs)
        out: dict[str, float] = {}
        for term in terms:
            if not term or term in out:
                continue
            with self._guard("read"):
                df = int(searcher.doc_freq(_F_TEXT, sanitize(term))) if live else 0
            n_docs = max(live, df)
            out[term] = math.log(1.0 + (n_docs - df + 0.5) / (df + 0.5))
        return out

    def _searcher(self) -> tantivy.Searcher:
        index = self._open_index()
        with self._guard("read"):
            if _stat(self._commit_file) != self._signature:
                self._reload(index, force=False)
            return index.searcher()

    def _reload(self, index: tantivy.Index, *, force: bool) -> None:
        with self._reload_lock:
            # Take the signature before reloading: a commit landing in between only
            # causes one more reload later, never a missed one. The slot map is written
            # before the commit that first uses a slot, so it is fresh here too.
            signature = _stat(self._commit_file)
            if not force and signature == self._signature:
                return
            index.reload()
            self._slots = self._read_slots()
            self._signature = signature

    def _read_slots(self) -> dict[str, int]:
        try:
            data = _read_json(self._meta_file)
        except StoreError as exc:
            raise LexicalIndexCorruptError(str(exc)) from exc
        if data is None:
            return {}
        slots = data.get("numeric_slots") if isinstance(data, dict) else None
        if (
            not isinstance(data, dict)
            or data.get("format") != _FORMAT
            or not isinstance(slots, dict)
            or not all(
                isinstance(key, str) and isinstance(slot, int) and 0 <= slot < MAX_NUMERIC_KEYS
                for key, slot in slots.items()
            )
        ):
            msg = (
                f"{self._meta_file} is not a format-{_FORMAT} lexical index file; delete "
                f"{self._root} and rebuild the lexical index from Chroma"
            )
            raise LexicalIndexCorruptError(msg)
        return dict(slots)

    # ------------------------------------------------------------------ state sidecar

    @property
    def state(self) -> dict[str, Any]:
        """The caller's sidecar state, read from disk (``{}`` if never saved)."""
        data = _read_json(self._state_file)
        if data is None:
            return {}
        if not isinstance(data, dict):
            msg = (
                f"{self._state_file} does not hold a JSON object; delete it (the next sync "
                "then starts from scratch)"
            )
            raise StoreError(msg)
        return data

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
        _write_text_atomic(self._state_file, text)


# ---------------------------------------------------------------------- schema & documents


def _build_schema() -> tantivy.Schema:
    builder = tantivy.SchemaBuilder()
    builder.add_text_field(_F_ID, stored=True, tokenizer_name="raw", index_option="basic")
    builder.add_text_field(_F_DOC, stored=True, tokenizer_name="raw", index_option="basic")
    builder.add_text_field(_F_HASH, stored=True, tokenizer_name="raw", index_option="basic")
    builder.add_text_field(_F_IDHASH, tokenizer_name="raw", index_option="basic")
    builder.add_text_field(_F_TEXT, tokenizer_name="whitespace", index_option="freq")
    builder.add_text_field(_F_KV, tokenizer_name="raw", index_option="basic")
    for slot in range(MAX_NUMERIC_KEYS):
        builder.add_float_field(_slot_field(slot), indexed=True, fast=True)
    return builder.build()


def _to_document(record: LexicalRecord, slots: Mapping[str, int]) -> tantivy.Document:
    document = tantivy.Document()
    document.add_text(_F_ID, record.chunk_id)
    document.add_text(_F_DOC, record.document_id)
    document.add_text(_F_HASH, record.content_hash)
    document.add_text(_F_IDHASH, f"{record.chunk_id}{_SEP}{record.content_hash}")
    document.add_text(_F_TEXT, " ".join(analyze(record.text)))
    for key, value in record.metadata.items():
        document.add_text(_F_KV, _kv_token(key, value))
        if _is_number(value) and not math.isnan(value):
            document.add_float(_slot_field(slots[key]), _as_float(value))
    return document


def _is_number(value: object) -> TypeGuard[int | float]:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def _as_float(value: float) -> float:
    # + 0.0 turns -0.0 into 0.0: tantivy orders -0.0 below 0.0, Python calls them equal.
    return float(value) + 0.0


def _canonical_number(value: float) -> str:
    """Equal numbers (in Python's exact int/float comparison) get equal strings."""
    if isinstance(value, int):
        return str(value)
    if not math.isfinite(value):
        return repr(value)
    if value.is_integer():
        return str(int(value))
    return repr(value)


def _kv_token(key: str, value: str | int | float | bool) -> str:
    """One exact ``kv`` term per metadata pair; injective, ASCII (no surrogate trouble)."""
    if isinstance(value, str) and len(value) > _CACHED_VALUE_CHARS:
        return _make_kv_token(key, value)
    return _cached_kv_token(key, value)


def _make_kv_token(key: str, value: str | int | float | bool) -> str:
    if isinstance(value, bool):
        tag, text = "b", ("1" if value else "0")
    elif isinstance(value, (int, float)):
        tag, text = "n", _canonical_number(value)
    else:
        tag, text = "s", value
    token = _KV_ENCODER.encode([key, tag, text])
    if len(token) > _MAX_KV_TOKEN:
        token = "#" + hashlib.blake2b(token.encode("ascii"), digest_size=20).hexdigest()
    return token


_KV_ENCODER = json.JSONEncoder(ensure_ascii=True, separators=(",", ":"))
# typed=True keeps True, 1 and 1.0 apart (they are equal and hash alike in Python).
_cached_kv_token = functools.lru_cache(maxsize=8192, typed=True)(_make_kv_token)


def _numeric_keys(records: Iterable[LexicalRecord]) -> list[str]:
    keys: dict[str, None] = {}
    for record in records:
        for key, value in record.metadata.items():
            if _is_number(value):
                keys.setdefault(key)
    return list(keys)


# ---------------------------------------------------------------------- filters


def _to_query(node: Filter, schema: tantivy.Schema, slots: Mapping[str, int]) -> tantivy.Query:
    """The tantivy query matching exactly the chunks for which ``filters.matches`` holds."""
    if isinstance(node, (And, Or)):
        occur = tantivy.Occur.Must if isinstance(node, And) else tantivy.Occur.Should
        return tantivy.Query.boolean_query(
            [(occur, _to_query(item, schema, slots)) for item in node.items]
        )
    if not isinstance(node, Compare):
        msg = f"where must be built by filters.parse_where, got {node!r:.80}"
        raise InvalidFilterError(msg)
    op, value = node.op, node.value
    if op in ("$eq", "$ne") and not isinstance(value, tuple):
        query = tantivy.Query.term_query(
            schema, _F_KV, _kv_token(node.key, value), index_option="basic"
        )
        return query if op == "$eq" else _negate(query)
    if op in ("$in", "$nin") and isinstance(value, tuple):
        tokens = [_kv_token(node.key, item) for item in value]
        query = tantivy.Query.term_set_query(schema, _F_KV, tokens)
        return query if op == "$in" else _negate(query)
    if op in ("$gt", "$gte", "$lt", "$lte") and _is_number(value):
        assert isinstance(value, (int, float))
        slot = slots.get(node.key)
        if slot is None:  # no chunk ever had a number under this key
            return tantivy.Query.empty_query()
        bound = _as_float(value)
        lower = bound if op in ("$gt", "$gte") else None
        upper = bound if op in ("$lt", "$lte") else None
        return tantivy.Query.range_query(
            schema,
            _slot_field(slot),
            tantivy.FieldType.Float,
            lower,
            upper,
            include_lower=op != "$gt",
            include_upper=op != "$lt",
        )
    msg = f"unsupported condition {node!r:.80} in where; build filters with filters.parse_where"
    raise InvalidFilterError(msg)


def _negate(query: tantivy.Query) -> tantivy.Query:
    # A boolean query of MustNot clauses alone matches nothing: subtract from everything.
    return tantivy.Query.boolean_query(
        [(tantivy.Occur.Must, tantivy.Query.all_query()), (tantivy.Occur.MustNot, query)]
    )


# ---------------------------------------------------------------------- validation helpers


def _check_records(records: Sequence[LexicalRecord]) -> dict[str, LexicalRecord]:
    if isinstance(records, (str, bytes)) or not isinstance(records, Iterable):
        msg = f"upserts must be a sequence of LexicalRecord, got {type(records).__name__}"
        raise InvalidInputError(msg)
    out: dict[str, LexicalRecord] = {}
    for record in records:
        if not isinstance(record, LexicalRecord):
            msg = (
                f"upserts must hold LexicalRecord objects, got {type(record).__name__} "
                f"{record!r:.80}"
            )
            raise InvalidInputError(msg)
        out.pop(record.chunk_id, None)  # the last record of an id wins, in its position
        out[record.chunk_id] = record
    return out


def _check_ids(ids: Sequence[str], name: str) -> list[str]:
    """Validate a sequence of ids; ids that can never be indexed are dropped (no-ops)."""
    if isinstance(ids, (str, bytes)) or not isinstance(ids, Iterable):
        msg = f"{name} must be a sequence of str ids, got {type(ids).__name__} {ids!r:.80}"
        raise InvalidInputError(msg)
    out: dict[str, None] = {}
    for item in ids:
        if not isinstance(item, str):
            msg = f"{name} must hold str ids, got {type(item).__name__} {item!r:.80}"
            raise InvalidInputError(msg)
        if item and not _has_surrogate(item):
            out.setdefault(item)
    return list(out)


def _check_terms(terms: Sequence[str]) -> list[str]:
    if isinstance(terms, (str, bytes)) or not isinstance(terms, Iterable):
        msg = (
            f"terms must be a sequence of analysed terms (e.g. analyze(text)), got "
            f"{type(terms).__name__} {terms!r:.80}"
        )
        raise InvalidQueryError(msg)
    out: list[str] = []
    for term in terms:
        if not isinstance(term, str):
            msg = f"terms must hold str, got {type(term).__name__} {term!r:.80}"
            raise InvalidQueryError(msg)
        if term:
            out.append(sanitize(term))
    return out


def _term_weights(terms: Iterable[str]) -> dict[str, int]:
    """Occurrences per distinct term, first-seen order, at most MAX_QUERY_TERMS terms."""
    counts: dict[str, int] = {}
    for term in terms:
        if term in counts:
            counts[term] += 1
        elif len(counts) < MAX_QUERY_TERMS:
            counts[term] = 1
    return counts


def _live_terms(searcher: tantivy.Searcher, field: str) -> list[str]:
    """Every term of ``field`` (one per live chunk for the id fields), deleted chunks excluded."""
    terms = searcher.terms_with_prefix(field, "")
    # Terms of deleted chunks linger until their segment merges; only then do they make the
    # plain listing longer than the live count, and the (slower) filtered listing is needed.
    if len(terms) != searcher.num_docs:
        terms = searcher.terms_with_prefix(field, "", filter_query=tantivy.Query.all_query())
    return [term for term, _ in terms]


def _first_str(document: tantivy.Document, field: str) -> str:
    value = document.get_first(field)
    return value if isinstance(value, str) else ""


def _stored_str(searcher: tantivy.Searcher, address: tantivy.DocAddress, field: str) -> str:
    return _first_str(searcher.doc(address), field)


# ---------------------------------------------------------------------- files


def _stat(path: str) -> tuple[int, int, int] | None:
    try:
        st = os.stat(path)
    except FileNotFoundError:
        return None
    return (st.st_ino, st.st_mtime_ns, st.st_size)


def _read_json(path: Path) -> Any:
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        return None
    except OSError as exc:
        msg = f"cannot read {path}: {exc}"
        raise StoreError(msg) from exc
    try:
        return json.loads(text)
    except ValueError as exc:
        msg = f"{path} is not valid JSON ({exc}); delete it and rebuild the lexical index"
        raise StoreError(msg) from exc


def _write_json_atomic(path: Path, data: Mapping[str, Any]) -> None:
    _write_text_atomic(path, json.dumps(data, sort_keys=True))


def _write_text_atomic(path: Path, text: str) -> None:
    """Write via a temporary file, fsync, then ``os.replace``: readers never see half."""
    tmp = path.with_name(f".{path.name}.{os.getpid()}.{uuid.uuid4().hex}.tmp")
    try:
        with open(tmp, "w", encoding="utf-8") as handle:
            handle.write(text)
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(tmp, path)
        _fsync_dir(path.parent)
    except OSError as exc:
        tmp.unlink(missing_ok=True)
        msg = f"cannot write {path}: {exc}"
        raise StoreError(msg) from exc


def _fsync_dir(directory: Path) -> None:
    if os.name != "posix":
        return
    fd = os.open(directory, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)

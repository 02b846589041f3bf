"""Keeping the two stores in step: writer lock, dirty flag, generations, catch-up, doctor.

Chroma is the source of truth; the lexical index is derived from it and can always be
rebuilt. The protocol:

* **One writer at a time** per store (a :class:`~remy_retriever.stores.locking.WriterLock`
  across threads and processes), held only while writing.
* **Generations.** Every write stamps the Chroma collection with a new generation token.
  The lexical index records (in its :class:`SyncState`) the token it last synced to.
* **Dirty flag.** A write sets ``dirty`` before touching either store and clears it after
  both are written. Dirty with the writer lock free means a write stopped midway (a crash
  or an error such as a lost server): the next writer, or the next open, runs
  :meth:`StoreSync.doctor` with ``repair=True`` first.
* **Catch-up.** Before a lexical search, a token that differs from the recorded one
  means another process or machine wrote: chunks stamped since the last sync (less
  :data:`SYNC_MARGIN_MS` for clock skew) are re-indexed when their hash changed, and if
  the counts then disagree, chunks gone from Chroma are dropped. A search never waits for
  the writer lock: while anyone writes it searches what is there.
"""

from __future__ import annotations

import logging
import os
import threading
import time
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from ..errors import InvalidInputError, StoreError
from ..models.embeddings import as_matrix
from ..schema.filters import Filter
from ..schema.options import dump_search_config, load_search_config
from ..schema.records import (
    SEARCH_CONFIG_KEY,
    UPDATED_MS_KEY,
    ChunkState,
    chunk_state,
    document_fields,
    to_lexical_records,
)
from .dense import DenseStore
from .document_table import DocumentTable
from .lexical import LexicalIndex, LexicalIndexCorruptError
from .locking import WriterLock
from .reachability import (
    DOCTOR_SAMPLE,
    ReinsertJournal,
    choose_sample,
    find_unreachable,
    repair_reachability,
)
from .record_journal import PendingRecord, RecordJournal
from .reembed import RETIRED_KEY, SHADOW_KEY, clean_up, reembed_all

__all__ = ["SYNC_MARGIN_MS", "DoctorReport", "StoreSync", "SyncState"]

_log = logging.getLogger(__name__)

#: Writers stamp chunks with their clock; catch-up looks this far back before its last
#: sync to allow for clock skew and slow writes between instances.
SYNC_MARGIN_MS = 5 * 60 * 1000


@dataclass(frozen=True)
class SyncState:
    """What the lexical index knows of its sync with Chroma (kept in its ``state.json``):
    the generation it reflects, when it last synced (epoch ms) and whether a write is
    under way or was interrupted."""

    generation: str | None = None
    last_sync_ms: int | None = None
    dirty: bool = False

    @classmethod
    def from_json(cls, data: Any) -> SyncState:
        """Parse ``state.json``'s value. A wrong type or value anywhere (a hand edit, a
        damaged file) is damage: the state is unknown, so it reads as dirty, and the next
        catch-up repairs and re-syncs the lexical index from Chroma."""
        if isinstance(data, dict):
            generation = data.get("generation")
            last = data.get("last_sync_ms")
            dirty = data.get("dirty", False)
            if (
                (generation is None or isinstance(generation, str))
                and (last is None or (type(last) is int and 0 <= last < 2**63))
                and isinstance(dirty, bool)
            ):
                return cls(generation=generation, last_sync_ms=last, dirty=dirty)
        _log.warning("state.json holds %.200r, not a sync state: repairing from Chroma", data)
        return cls(dirty=True)

    def to_json(self) -> dict[str, Any]:
        return {
            "generation": self.generation,
            "last_sync_ms": self.last_sync_ms,
            "dirty": self.dirty,
        }


@dataclass(frozen=True)
class DoctorReport:
    """What :meth:`StoreSync.doctor` found (and fixed, when ``repaired``)."""

    chunks: int
    lexical_chunks: int
    partial_documents: tuple[str, ...] = ()
    dropped_chunks: tuple[str, ...] = ()
    dropped_records: tuple[str, ...] = ()
    #: Document records an interrupted write was storing, put back by a repair.
    restored_records: tuple[str, ...] = ()
    missing_in_lexical: tuple[str, ...] = ()
    stale_in_lexical: tuple[str, ...] = ()
    extra_in_lexical: tuple[str, ...] = ()
    missing_vectors: tuple[str, ...] = ()
    #: Chunks whose dense reachability was checked (a sample unless ``full=True``).
    reachability_checked: int = 0
    #: Chunks a dense search for their own vector did not return.
    unreachable: tuple[str, ...] = ()
    #: Of those, the ones a repair could not make reachable.
    unreachable_after_repair: tuple[str, ...] = ()
    repaired: bool = False

    @property
    def ok(self) -> bool:
        """True when nothing drifted."""
        return not (
            self.partial_documents
            or self.dropped_chunks
            or self.dropped_records
            or self.restored_records
            or self.missing_in_lexical
            or self.stale_in_lexical
            or self.extra_in_lexical
            or self.missing_vectors
            or self.unreachable
        )

    @property
    def fixed(self) -> bool:
        """True when nothing drifted, or a repair fixed all of it."""
        return self.ok or (self.repaired and not self.unreachable_after_repair)


class StoreSync:
    """The dense store, the document table and the lexical index, kept in step under
    one writer lock (see the module docstring)."""

    def __init__(
        self,
        dense: DenseStore,
        table: DocumentTable,
        lexical_path: str | os.PathLike[str],
        write_lock: WriterLock,
        *,
        lock_timeout: float,
    ) -> None:
        self.dense = dense
        self.table = table
        self.write_lock = write_lock
        dense.write_lock = write_lock
        self._sync_lock = threading.Lock()
        #: The stored search config as last read: (its text, the options it holds).
        self._config_parsed: tuple[object, dict[str, Any]] | None = None
        self.lexical = self._open_lexical(lexical_path, lock_timeout)
        self.journal = ReinsertJournal(Path(os.fspath(lexical_path)))
        self.records_journal = RecordJournal(Path(os.fspath(lexical_path)))

    def _open_lexical(self, path: str | os.PathLike[str], lock_timeout: float) -> LexicalIndex:
        """Open the lexical index; if its files are damaged, discard them (holding the
        writer lock) and start empty, flagged dirty: the catch-up that follows repairs
        (the lost state may have hidden an interrupted write) and re-indexes Chroma."""
        try:
            return LexicalIndex(path, lock_timeout=lock_timeout)
        except LexicalIndexCorruptError as exc:
            _log.warning("rebuilding the lexical index from Chroma: %s", exc)
            with self.write_lock:
                index = LexicalIndex(path, lock_timeout=lock_timeout, recover=True)
                if index.recovered_from is not None:
                    index.save_state(SyncState(dirty=True).to_json())
                return index

    # -- state ------------------------------------------------------------------------

    @property
    def state(self) -> SyncState:
        return SyncState.from_json(self.lexical.state)

    def _save(self, state: SyncState) -> None:
        self.lexical.save_state(state.to_json())

    def _synced(self, generation: str, started_ms: int) -> None:
        self._save(SyncState(generation=generation, last_sync_ms=started_ms, dirty=False))

    # -- writing ----------------------------------------------------------------------

    @contextmanager
    def writing(self) -> Iterator[None]:
        """Hold the writer lock; first repair an interrupted earlier write."""
        with self.write_lock:
            self.dense.check_identity_current()
            self.repair_if_interrupted()
            yield

    @contextmanager
    def change(
        self,
        records: tuple[Sequence[str], Sequence[str], Sequence[Mapping[str, Any]]] | None = None,
    ) -> Iterator[None]:
        """Wrap one write to both stores (inside :meth:`writing`): dirty before, a new
        generation after. An exception leaves the flag set, for the next writer to
        repair. ``records`` (ids, texts, metadatas): the document-table records the
        write will store, journalled first so that a repair can roll it forward
        (:mod:`.record_journal`)."""
        before = self.dense.generation()
        self._save(replace(self.state, dirty=True))
        if records is not None and records[0]:
            self.records_journal.save(*records)
        yield
        self.records_journal.clear()
        token = self.dense.bump_generation()
        state = self.state
        # If the index was in sync just before the write, it still is: it applied the
        # same change.
        generation = token if state.generation == before else state.generation
        self._save(replace(state, generation=generation, dirty=False))

    def settle_identity(self) -> None:
        """After opening: re-embed when the open asked to (``reembed=True``, into a shadow
        collection swapped in at the end: :mod:`.reembed`); else drop what an interrupted
        re-embedding left, and record the embedder's identity on a collection made before
        identities were recorded (both skipped while someone writes; a later open does
        them)."""
        if self.dense.reembed_pending:
            with self.writing():
                before = self.dense.generation()
                reembed_all(self.dense)  # its swap stamps a new generation
                state = self.state
                if state.generation == before and not state.dirty:  # the texts are the same
                    self._save(replace(state, generation=self.dense.generation()))
            return
        meta = self.dense.metadata()
        leftovers = bool(meta.get(SHADOW_KEY) or meta.get(RETIRED_KEY))
        if not (self.dense.unrecorded or leftovers):
            return
        try:
            if self.write_lock.acquire(blocking=False):
                try:
                    clean_up(self.dense)
                    if self.dense.unrecorded:
                        self.dense.record_identity()
                finally:
                    self.write_lock.release()
        except StoreError as exc:  # e.g. a read-only store: opening it still works
            _log.warning("cannot settle the embedder of %s: %s", self.dense.where, exc)

    def repair_if_interrupted(self) -> None:
        """Call holding the write lock, before writing. Reloads this process's view of an
        embedded store if another process wrote (else our write could clobber theirs);
        then, if the dirty flag is set, an earlier write stopped midway: make every
        document whole first."""
        dirty = self.state.dirty
        self.dense.ensure_fresh(write=True, force=dirty)
        if dirty:
            self.doctor(repair=True)

    # -- catching up ------------------------------------------------------------------

    def catch_up(self) -> None:
        """Bring the lexical index up to Chroma's generation (see the module docstring).
        Skipped while another writer holds the lock: that writer updates the index
        itself, and a later search catches up. Never waits: searches must not block."""
        state = self.state
        if state.generation == self.dense.generation() and not state.dirty:
            return
        if not self.write_lock.acquire(blocking=False):
            return
        try:
            if self.state.dirty:
                # Dirty with the lock free: a write stopped midway (crash or error).
                self.repair_if_interrupted()
                return
            self._catch_up_locked()
        finally:
            self.write_lock.release()

    def _catch_up_locked(self) -> None:
        with self._sync_lock:
            generation = self.dense.generation()
            state = self.state
            if state.generation == generation:
                return
            started = _now_ms()
            where = None
            if state.last_sync_ms is not None:
                where = {UPDATED_MS_KEY: {"$gte": state.last_sync_ms - SYNC_MARGIN_MS}}
            for records in self.dense.iter_all(where=where):
                known = self.lexical.hashes([r[0] for r in records])
                fresh = [
                    r for r in records if known.get(r[0]) != chunk_state(r[0], r[2]).chunk_hash
                ]
                if fresh:
                    self.lexical.apply(upserts=to_lexical_records(fresh))
            if self.lexical.count() != self.dense.count():
                dense_ids: set[str] = set()
                for records in self.dense.iter_all(documents=False, metadatas=False):
                    dense_ids.update(r[0] for r in records)
                lexical_ids = self.lexical.ids()
                gone = sorted(lexical_ids - dense_ids)
                missing = sorted(dense_ids - lexical_ids)
                upserts = to_lexical_records(self.dense.get(ids=missing)) if missing else []
                self.lexical.apply(upserts=upserts, deletes=gone)
            self._synced(generation, started)

    def search_config(self, *, max_age: float = 0.0) -> dict[str, Any]:
        """The search options ``remy tune`` stored for the collection (``{}``: none, or a
        stored value this version cannot read, logged: searches keep the defaults and
        ``remy tune`` can overwrite it). Read from the collection's metadata, so another
        process's ``remy tune`` shows at the next call; ``max_age`` as in
        :meth:`DenseStore.setting`. The text is parsed again only when it changed."""
        raw = self.dense.setting(SEARCH_CONFIG_KEY, max_age=max_age)
        parsed = self._config_parsed
        if parsed is None or parsed[0] != raw:
            try:
                config = load_search_config(raw)
            except InvalidInputError as exc:
                _log.warning("ignoring the stored search config: %s", exc)
                config = {}
            parsed = (raw, config)
            self._config_parsed = parsed
        return dict(parsed[1])

    def save_search_config(self, config: Mapping[str, Any]) -> None:
        """Store search options for the collection (``{}`` clears them)."""
        text = dump_search_config(config) if config else ""
        with self.write_lock:
            self.dense.set_metadata({SEARCH_CONFIG_KEY: text}, "store the search config")

    def search_lexical(
        self, query: str, k: int, where: Filter | None, among: Sequence[str] | None = None
    ) -> list[tuple[str, float]]:
        """BM25 search after catching up (only chunk ids in ``among``, if given); damaged
        files are rebuilt from Chroma."""
        try:
            self.catch_up()
            return self.lexical.search(query, k, where, among)
        except LexicalIndexCorruptError as exc:
            _log.warning("rebuilding the lexical index from Chroma: %s", exc)
            with self.write_lock:
                self.lexical.reset()
                self._save(SyncState(dirty=True))
                self.repair_if_interrupted()
            return self.lexical.search(query, k, where, among)

    def rebuild_lexical(self) -> int:
        """Rebuild the lexical index from Chroma's content. Returns chunks indexed."""
        with self.write_lock, self._sync_lock:
            generation = self.dense.generation()
            started = _now_ms()
            try:
                self.lexical.clear()
            except StoreError:  # damaged beyond a clean delete-all: discard the files
                self.lexical.reset()
            n = 0
            for records in self.dense.iter_all():
                self.lexical.apply(upserts=to_lexical_records(records))
                n += len(records)
            self._synced(generation, started)
            return n

    # -- doctor -------------------------------------------------------------------------

    def doctor(self, *, repair: bool = False, sample: int | None = DOCTOR_SAMPLE) -> DoctorReport:
        """Check (and with ``repair=True`` fix) drift between Chroma and the lexical index.

        Checks: every document's chunks form one complete version (same content hash,
        as many chunks as that version has); the document table agrees with the chunks;
        the lexical index holds exactly Chroma's chunk ids with the same content hashes;
        every chunk's vector is in Chroma's vector index (a process killed while Chroma
        persisted its index can leave records whose vectors are gone). Repair keeps, per
        document, the complete version the document table names (else the newest
        complete one), deletes other chunks, drops disagreeing document records (the
        next ``add`` rewrites them), re-embeds chunks whose vectors are lost, and
        re-indexes the lexical side from Chroma.

        Dense reachability (:mod:`.reachability`): ``sample`` chunks (half of them the
        newest; ``None``: every chunk; ``0``: none) must each be found by a dense search
        for their own vector; repair re-inserts those that are not, and reports in
        ``unreachable_after_repair`` any that stay unreachable.
        """
        with self.write_lock, self._sync_lock:
            self.dense.ensure_fresh(write=True)
            if repair:  # chunks an interrupted re-insert removed go back first
                self.journal.replay(self.dense)
            generation = self.dense.generation()
            started = _now_ms()
            chunks: dict[str, ChunkState] = {}
            for page in self.dense.iter_all(documents=False):
                chunks.update((cid, chunk_state(cid, meta)) for cid, _, meta in page)
            table: dict[str, dict[str, Any]] = {}
            for page_meta in self.table.iter_metadata():
                table.update((i, document_fields(m)) for i, m in page_meta)
            pending = self.records_journal.load() if repair else {}
            partial, drop_chunks, drop_records, restore = _versions(chunks, table, pending)
            dropped = set(drop_chunks)
            hashes = {c: s.chunk_hash for c, s in chunks.items() if c not in dropped}
            damaged = False
            try:
                lexical = self.lexical.hashes(list(hashes))
                lexical_ids = self.lexical.ids()
            except LexicalIndexCorruptError:  # unreadable: report it as empty
                damaged, lexical, lexical_ids = True, {}, set()
            missing = sorted(set(hashes) - set(lexical))
            stale = sorted(c for c, h in lexical.items() if h != hashes[c])
            extra = sorted(lexical_ids - set(hashes))
            lost = sorted(self.dense.missing_vectors(sorted(hashes)))
            gone = set(lost)
            ages = {c: chunks[c].updated_ms for c in hashes if c not in gone}
            checked = choose_sample(ages, sample)
            unreachable = tuple(find_unreachable(self.dense, checked))
            report = DoctorReport(
                chunks=len(hashes),
                lexical_chunks=len(lexical_ids),
                partial_documents=tuple(sorted(partial)),
                dropped_chunks=tuple(sorted(drop_chunks)),
                dropped_records=tuple(sorted(set(drop_records))),
                restored_records=tuple(sorted(restore)),
                missing_in_lexical=tuple(missing),
                stale_in_lexical=tuple(stale),
                extra_in_lexical=tuple(extra),
                missing_vectors=tuple(lost),
                reachability_checked=len(checked),
                unreachable=unreachable,
                repaired=repair,
            )
            if repair:
                self._repair(report, damaged)
                self.table.upsert(
                    list(restore),
                    [r.text for r in restore.values()],
                    [r.metadata for r in restore.values()],
                )
                self.records_journal.clear()
                found, left = repair_reachability(self.dense, unreachable, checked, self.journal)
                report = replace(report, unreachable=found, unreachable_after_repair=left)
                self._synced(generation, started)
                if drop_chunks or drop_records or restore or lost or unreachable:
                    self.dense.bump_generation()
            return report

    def _repair(self, report: DoctorReport, damaged: bool) -> None:
        self.dense.delete(list(report.dropped_chunks))
        self.table.delete(list(report.dropped_records))
        lost = list(report.missing_vectors)
        for lo in range(0, len(lost), 256):
            # The stored text is the embedded text, so re-embedding it restores the
            # vector; an upsert of an existing id puts it back into the index.
            records = self.dense.get(ids=lost[lo : lo + 256])
            texts = [text for _, text, _ in records]
            vectors = as_matrix(self.dense.embedder.embed_documents(texts), len(texts))
            self.dense.upsert(
                [cid for cid, _, _ in records], vectors, texts, [m for _, _, m in records]
            )
        if damaged:
            self.lexical.reset()
        fix = [*report.missing_in_lexical, *report.stale_in_lexical]
        for lo in range(0, len(fix), 1000):
            self.lexical.apply(upserts=to_lexical_records(self.dense.get(ids=fix[lo : lo + 1000])))
        self.lexical.apply(deletes=list(report.extra_in_lexical))


def _versions(
    chunks: dict[str, ChunkState],
    table: dict[str, dict[str, Any]],
    pending: Mapping[str, PendingRecord],
) -> tuple[list[str], list[str], list[str], dict[str, PendingRecord]]:
    """Per document, the version to keep: ``(partial documents, chunks to drop, document
    records to drop, records to restore)``. A version is complete when it has as many
    chunks as it says. When the kept version is not the one the table names but an
    interrupted write's ``pending`` record describes it, that record is restored (the
    write rolls forward) instead of the document's record being dropped."""
    groups: dict[str, dict[str | None, list[tuple[str, ChunkState]]]] = {}
    for cid, state in chunks.items():
        groups.setdefault(state.document_id, {}).setdefault(str(state.doc_hash), []).append(
            (cid, state)
        )
    partial: list[str] = []
    drop_chunks: list[str] = []
    drop_records: list[str] = []
    restore: dict[str, PendingRecord] = {}
    for doc, versions in groups.items():
        complete = {h: rows for h, rows in versions.items() if len(rows) == rows[0][1].n_chunks}
        named = table.get(doc, {}).get("doc_hash")
        keep: str | None
        if named in complete:
            keep = named
        elif complete:
            keep = max(complete, key=lambda h: max(s.updated_ms for _, s in complete[h]))
        else:
            keep = None
        if len(versions) > 1 or keep is None:
            partial.append(doc)
        drop_chunks += [cid for h, rows in versions.items() if h != keep for cid, _ in rows]
        if table.get(doc, {}).get("doc_hash") != keep:
            record = pending.get(doc)
            if keep is not None and record is not None and record.doc_hash == keep:
                restore[doc] = record
            elif doc in table:
                drop_records.append(doc)
    for doc, fields in table.items():
        if doc not in groups and fields.get("chunk_count", 0) != 0:
            partial.append(doc)  # all of its chunks are gone
            drop_records.append(doc)
    return partial, drop_chunks, drop_records, restore


def _now_ms() -> int:
    return int(time.time() * 1000)

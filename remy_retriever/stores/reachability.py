"""Dense reachability: every chunk must be found by its own vector.

A chunk can be stored, with its vector in Chroma's vector index, and still never be
returned by a dense search: HNSW finds a point by walking the graph's links, and a point
no other point links to is never reached (seen after a writer was SIGKILLed while Chroma
persisted its index). Lexical search still finds such a chunk, so hybrid search returns
it through its lexical branch, but a semantic search never does.

:func:`find_unreachable` queries each chunk's own stored vector for its
:data:`REACH_K` nearest neighbours through the index, unfiltered (a query restricted to
some ids is scored exactly by Chroma, which would find the chunk whether the graph
reaches it or not). A chunk missing from that answer is searched for again with
:data:`WIDE_K` answers, which also widens HNSW's search beam: an ordinary approximate
miss (a few percent of the chunks of a large store of random vectors at the default
beam) is found then, a chunk no link leads to never is. Only chunks missing from both
are reported. A chunk whose wide answer is all exact twins of its vector (duplicate
texts) counts as reached, since a search for it finds vectors identical to it.

:func:`choose_sample` picks what ``doctor`` checks by default: half of the sample is the
newest chunks (where an interrupted write leaves damage), half drawn at random from the
rest, so repeated runs cover the whole store.

:func:`reinsert` repairs: an upsert of the chunk's own record (same vector, same
metadata), which makes Chroma relink the point into the graph; a chunk still unreachable
after that is deleted and added again. The records are journalled first
(:class:`ReinsertJournal`), so a process killed between the delete and the add loses
nothing: the next repair puts the journalled records back before it checks documents.
"""

from __future__ import annotations

import logging
import random
from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from ..errors import InvalidInputError, StoreError
from ..schema.options import check_int
from ..util.reprs import short_repr
from .dense import DenseStore
from .files import read_json, write_json_atomic

__all__ = [
    "DOCTOR_SAMPLE",
    "JOURNAL_FILE",
    "REACH_K",
    "WIDE_K",
    "RawRecords",
    "ReinsertJournal",
    "checked_sample",
    "choose_sample",
    "find_unreachable",
    "put_raw",
    "query_vectors",
    "raw_records",
    "reinsert",
    "repair_reachability",
]

_log = logging.getLogger(__name__)

#: Chunks ``doctor`` checks by default (``full=True``: all of them).
DOCTOR_SAMPLE = 1000
#: A chunk must be among the nearest REACH_K answers to its own vector.
REACH_K = 10
#: The wider search for a chunk missing from its first answer (it also widens HNSW's
#: search beam, ``ef``, to WIDE_K).
WIDE_K = 500
#: Cosine distance below which two vectors count as the same (duplicate texts).
_TWIN_DISTANCE = 1e-5
#: Vectors per Chroma query call (each call holds the embedded store's engine lock).
_BATCH = 100
_WIDE_BATCH = 20
#: Re-insert rounds of one repair (see :func:`repair_reachability`).
REPAIR_ROUNDS = 3
#: The journal's file name, in the lexical index's directory.
JOURNAL_FILE = "reinsert.json"


@dataclass(frozen=True)
class RawRecords:
    """Chunk records exactly as Chroma holds them: ids, their vectors (one row each) and
    their stored metadata (text and packed keys included), to write back unchanged."""

    ids: tuple[str, ...]
    embeddings: np.ndarray
    metadatas: tuple[Mapping[str, Any], ...]

    def subset(self, keep: Collection[str]) -> RawRecords:
        """The records whose id is in ``keep``, in order."""
        rows = [i for i, cid in enumerate(self.ids) if cid in keep]
        return RawRecords(
            tuple(self.ids[i] for i in rows),
            self.embeddings[rows],
            tuple(self.metadatas[i] for i in rows) if self.metadatas else (),
        )


def raw_records(dense: DenseStore, ids: Sequence[str], *, metadatas: bool = True) -> RawRecords:
    """The records of ``ids`` that exist, with their vectors (and, with ``metadatas``,
    their stored metadata), as Chroma holds them. Every id must have its vector: check
    :meth:`DenseStore.missing_vectors` first."""
    if not ids:
        return RawRecords((), np.zeros((0, 0), dtype=np.float32), ())
    include = ["embeddings", "metadatas"] if metadatas else ["embeddings"]
    result = dense.read(
        "read chunk vectors",
        lambda: dense.collection.get(ids=list(dict.fromkeys(ids)), include=include),
    )
    found = [str(i) for i in result["ids"]]
    raw = result.get("embeddings")
    vectors = np.asarray(raw if raw is not None else [], dtype=np.float32)
    metas = tuple(dict(m or {}) for m in (result.get("metadatas") or [])) if metadatas else ()
    return RawRecords(tuple(found), vectors.reshape(len(found), -1), metas)


def put_raw(dense: DenseStore, records: RawRecords) -> None:
    """Write records back as they were read (:func:`raw_records` with metadata): an
    upsert, so an existing chunk is rewritten in place."""
    if not records.ids:
        return
    dense.calls.call(
        "rewrite chunks",
        lambda: dense.collection.upsert(
            ids=list(records.ids),
            embeddings=records.embeddings,
            metadatas=[dict(m) for m in records.metadatas],
        ),
    )


def query_vectors(dense: DenseStore, vectors: np.ndarray, n: int) -> list[list[tuple[str, float]]]:
    """For each row of ``vectors``, the ``n`` nearest chunks through the vector index,
    unfiltered, as ``(chunk id, cosine distance)``."""
    if not len(vectors) or n <= 0:
        return []
    result = dense.read(
        "search by vector",
        lambda: dense.collection.query(
            query_embeddings=vectors, n_results=n, include=["distances"]
        ),
    )
    return [
        [(str(i), float(d)) for i, d in zip(ids, distances)]
        for ids, distances in zip(result["ids"], result["distances"])
    ]


def checked_sample(repair: object, full: object, sample: object) -> int | None:
    """``doctor``'s options checked: the sample size to pass on (``None``: every chunk).
    Raises :class:`InvalidInputError` naming a flag that is not a bool, or a sample that
    is not an int >= 0."""
    for name, flag in (("repair", repair), ("full", full)):
        if not isinstance(flag, bool):
            msg = f"{name} must be True or False, got {type(flag).__name__} {short_repr(flag)}"
            raise InvalidInputError(msg)
    size = check_int("sample", sample, lo=0, hi=2**31)
    return None if full else size


def choose_sample(
    updated_ms: Mapping[str, int], size: int | None, rng: random.Random | None = None
) -> list[str]:
    """The chunk ids to check: all of them when ``size`` is ``None`` or covers them,
    else the ``size // 2`` newest (by ``updated_ms``) plus a random draw from the rest."""
    ids = sorted(updated_ms)
    if size is None or size >= len(ids):
        return ids
    if size <= 0:
        return []
    by_age = sorted(ids, key=lambda cid: (updated_ms[cid], cid), reverse=True)
    newest = by_age[: size // 2]
    rest = by_age[size // 2 :]
    drawn = (rng or random.Random()).sample(rest, size - len(newest))
    return sorted([*newest, *drawn])


def find_unreachable(dense: DenseStore, ids: Sequence[str]) -> list[str]:
    """The ids among ``ids`` that a dense search for their own stored vector does not
    return, neither among the nearest :data:`REACH_K` nor in the wider search (see the
    module docstring). Ids without a record or without a vector are skipped:
    :meth:`DenseStore.missing_vectors` reports the latter."""
    unreachable: list[str] = []
    for lo in range(0, len(ids), _BATCH):
        records = raw_records(dense, ids[lo : lo + _BATCH], metadatas=False)
        if not records.ids:
            continue
        answers = query_vectors(dense, records.embeddings, REACH_K)
        missed = [
            i for i, (cid, got) in enumerate(zip(records.ids, answers)) if not _reached(cid, got)
        ]
        for at in range(0, len(missed), _WIDE_BATCH):
            rows = missed[at : at + _WIDE_BATCH]
            wide = query_vectors(dense, records.embeddings[rows], WIDE_K)
            for row, got in zip(rows, wide):
                cid = records.ids[row]
                if not _reached(cid, got) and not (len(got) == WIDE_K and _all_twins(got)):
                    unreachable.append(cid)
    return unreachable


def _reached(cid: str, answer: Sequence[tuple[str, float]]) -> bool:
    return any(hit == cid for hit, _ in answer)


def _all_twins(answer: Sequence[tuple[str, float]]) -> bool:
    return all(distance <= _TWIN_DISTANCE for _, distance in answer)


class ReinsertJournal:
    """The records a repair is about to delete and add again, kept on disk (written
    atomically) until they are back in Chroma."""

    def __init__(self, directory: Path) -> None:
        self.path = directory / JOURNAL_FILE

    def save(self, records: RawRecords) -> None:
        write_json_atomic(
            self.path,
            {
                "ids": list(records.ids),
                "embeddings": [[float(x) for x in row] for row in records.embeddings],
                "metadatas": [dict(m) for m in records.metadatas],
            },
        )

    def load(self) -> RawRecords | None:
        """The journalled records, or ``None`` when there is no journal. A journal that
        cannot be read raises :class:`StoreError` naming it."""
        data = read_json(self.path)
        if data is None:
            return None
        try:
            ids = [str(i) for i in data["ids"]]
            vectors = np.asarray(data["embeddings"], dtype=np.float32)
            metadatas: list[dict[str, Any]] = [dict(m) for m in data["metadatas"]]
            if len(metadatas) != len(ids) or (ids and vectors.shape[0] != len(ids)):
                msg = "the lists differ in length"
                raise ValueError(msg)
        except (KeyError, TypeError, ValueError) as exc:
            msg = (
                f"the re-insert journal {str(self.path)!r} is damaged ({exc}); the chunks "
                "it held may be missing: run `remy doctor --repair` after deleting it"
            )
            raise StoreError(msg) from exc
        return RawRecords(tuple(ids), vectors.reshape(len(ids), -1), tuple(metadatas))

    def clear(self) -> None:
        self.path.unlink(missing_ok=True)

    def replay(self, dense: DenseStore) -> int:
        """Put the journalled records back (an upsert: harmless if they are there), then
        drop the journal. Returns the records replayed."""
        records = self.load()
        if records is None:
            return 0
        if records.ids:
            _log.warning("re-adding %d chunk(s) an interrupted repair removed", len(records.ids))
            put_raw(dense, records)
        self.clear()
        return len(records.ids)


def reinsert(dense: DenseStore, ids: Sequence[str], journal: ReinsertJournal) -> list[str]:
    """Make the unreachable chunks ``ids`` reachable again (call holding the writer
    lock): upsert each record as it is; delete and add again those still unreachable.
    Returns the ids that stay unreachable even so."""
    if not ids:
        return []
    records = raw_records(dense, ids)
    if not records.ids:
        return []
    put_raw(dense, records)
    still = set(find_unreachable(dense, list(records.ids)))
    if not still:
        return []
    again = records.subset(still)
    journal.save(again)
    dense.delete(list(again.ids))
    put_raw(dense, again)
    journal.clear()
    return find_unreachable(dense, list(again.ids))


def repair_reachability(
    dense: DenseStore, unreachable: Sequence[str], checked: Sequence[str], journal: ReinsertJournal
) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """Re-insert ``unreachable`` (call holding the writer lock). A re-insert relinks the
    chunk's neighbours too, which can leave another chunk with no link to it, so the
    ``checked`` chunks are checked again after each round, and whatever is unreachable
    then is re-inserted, up to :data:`REPAIR_ROUNDS` rounds. Returns ``(every chunk found
    unreachable, those still unreachable at the end)``."""
    found = list(dict.fromkeys(unreachable))
    todo = list(found)
    for _ in range(REPAIR_ROUNDS):
        if not todo:
            break
        reinsert(dense, todo, journal)
        todo = find_unreachable(dense, checked)
        found += [cid for cid in todo if cid not in set(found)]
    return tuple(sorted(found)), tuple(sorted(todo))

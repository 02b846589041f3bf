"""Scale benchmark, part 2: building ours and probing its write visibility.

Three ways to get an index of the synthetic corpus (see :mod:`benchmarks.scale_data`):
:func:`build_ours` through ``Retriever.add`` (timed per step), :func:`bulk_ours` straight
into the two stores, and :func:`reuse_ours` opening one an earlier worker left behind.
:func:`ours_probe` times how long 1,000 added, then deleted, chunks take to become
visible in both indexes.

The bulk path makes its ids, chunk metadata and lexical records with
:mod:`remy_retriever.schema.records` (the stored format's one home), never by hand.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from benchmarks import common
from benchmarks.scale_data import DIM, SEED, chunk_ids, docs

#: Created/updated time stamped on bulk-loaded chunks.
BULK_STAMP = "2026-01-01T00:00:00.000000Z"


class Timers:
    """Wall time spent in instrumented methods during ``Retriever.add``."""

    def __init__(self) -> None:
        self.seconds: dict[str, float] = {}

    def wrap(self, obj: Any, name: str, label: str) -> None:
        original = getattr(obj, name)

        def timed(*args: Any, **kwargs: Any) -> Any:
            t0 = time.perf_counter()
            try:
                return original(*args, **kwargs)
            finally:
                self.seconds[label] = self.seconds.get(label, 0.0) + time.perf_counter() - t0

        setattr(obj, name, timed)


def _open(root: Path, embedder: Any, hnsw: dict[str, int] | None) -> Any:
    from remy_retriever import Retriever

    # max_tokens=512 keeps every synthetic document one chunk (the generous approximate
    # token counter is used: the synthetic words are not real WordPiece vocabulary).
    return Retriever(
        root, collection="scale", embedder=embedder, progress=False, max_tokens=512, hnsw=hnsw
    )


def _project(ingest: dict[str, Any], progress: list[tuple[int, float]], total: float) -> None:
    """Mark an ingest cut short by its budget, projecting the full time from the rate of
    the last steps (ingest slows down as the indexes grow)."""
    n, target = ingest["ingested"], ingest["target"]
    if n >= target:
        return
    (n0, t0), (n1, t1) = progress[max(0, len(progress) - 3)], progress[-1]
    rate = (n1 - n0) / max(t1 - t0, 1e-9) if n1 > n0 else n / total
    ingest["truncated"] = True
    ingest["projected_total_s"] = round(total + (target - n) / rate, 0)


def _summary(
    n: int,
    total: float,
    cpu: float,
    *,
    dense_s: float,
    lexical_s: float,
    breakdown: dict[str, float],
    target: int,
    progress: list[tuple[int, float]],
) -> dict[str, Any]:
    """An ingest's rates and times, the same keys for both ways of loading ours."""
    return {
        "total_s": round(total, 2),
        "chunks_per_s": round(n / total, 1),
        "dense_chunks_per_s": round(n / max(dense_s, 1e-9), 1),
        "lexical_chunks_per_s": round(n / max(lexical_s, 1e-9), 1),
        "breakdown_s": breakdown,
        "ingested": n,
        "target": target,
        # CPU seconds of this process (all its threads, incl. Chroma's and tantivy's):
        # less sensitive than wall time to other processes on a shared machine.
        "process_cpu_s": round(cpu, 1),
        "cpu_ms_per_chunk": round(1000 * cpu / max(n, 1), 3),
        "progress_chunks_s": progress,
    }


def build_ours(
    texts: list[str],
    vectors: np.ndarray,
    queries: Any,
    root: Path,
    batch_size: int,
    budget_s: float,
    *,
    hnsw: dict[str, int] | None = None,
) -> tuple[Any, Any, dict[str, Any]]:
    """Ingest through ``Retriever.add`` in steps of 10,000 documents."""
    embedder = common.CachedEmbedder(common.VectorTable(texts, vectors), queries, tokenizer=False)
    r = _open(root, embedder, hnsw)
    timers = Timers()
    timers.wrap(r._sync.dense, "upsert", "dense_upsert_s")
    timers.wrap(r._sync.table, "upsert", "document_table_s")
    timers.wrap(r._sync.lexical, "apply", "lexical_apply_s")
    timers.wrap(embedder, "embed_documents", "vector_lookup_s")
    from remy_retriever.ingest import writer

    timers.wrap(writer, "existing_documents", "existing_check_s")
    target = len(texts)
    cpu0 = time.process_time()
    started = time.perf_counter()
    step = 10_000
    progress: list[tuple[int, float]] = []
    n = 0
    for lo in range(0, target, step):
        r.add(list(docs(texts, lo, min(target, lo + step))), batch_size=batch_size, progress=False)
        n = min(target, lo + step)
        progress.append((n, round(time.perf_counter() - started, 1)))
        print(f"[scale]   ours ingested {n:,}/{target:,} ({progress[-1][1]:.0f} s)", flush=True)
        if time.perf_counter() - started > budget_s and n < target:
            print(f"[scale]   ingest budget {budget_s:.0f} s exhausted at {n:,}", flush=True)
            break
    total = time.perf_counter() - started
    cpu = time.process_time() - cpu0
    if r.count() != n:
        msg = f"expected {n} chunks (one per document), got {r.count()}"
        raise RuntimeError(msg)
    t = {k: round(v, 2) for k, v in timers.seconds.items()}
    other = total - sum(t.values())
    ingest = _summary(
        n,
        total,
        cpu,
        dense_s=t.get("dense_upsert_s", 0),
        lexical_s=t.get("lexical_apply_s", 0),
        breakdown={**t, "other_s": round(other, 2)},
        target=target,
        progress=progress,
    )
    ingest = {"batch_size": batch_size, **ingest}
    _project(ingest, progress, total)
    return r, embedder, ingest


def chunk_records(
    texts: Sequence[str], start: int, stop: int, *, stamp: str, updated_ms: int
) -> tuple[list[str], list[dict[str, Any]]]:
    """Chunk ids and chunk metadata (unpacked) of rows ``start..stop-1``, each a
    one-chunk document, made as ``Retriever.add`` makes them: by
    :func:`remy_retriever.schema.records.chunk_metadata`. ``doc_hash`` is the document's own
    content hash (``Retriever.add`` also signs it with its chunker settings; with no
    document table written, nothing compares the two)."""
    from remy_retriever.schema.document import Chunk
    from remy_retriever.schema.records import chunk_id, chunk_metadata

    ids: list[str] = []
    metas: list[dict[str, Any]] = []
    for doc in docs(texts, start, stop):
        chunk = Chunk(doc.id, 0, doc.text, 0, len(doc.text))
        ids.append(chunk_id(doc.id, chunk.position))
        metas.append(
            chunk_metadata(
                doc,
                chunk,
                doc_hash=doc.content_hash,
                n_chunks=1,
                created=stamp,
                updated=stamp,
                updated_ms=updated_ms,
            )
        )
    return ids, metas


def lexical_records(records: Iterable[tuple[str, str, dict[str, Any]]]) -> list[Any]:
    """``(chunk id, text, metadata)`` records as the lexical index takes them."""
    from remy_retriever.schema.records import to_lexical_records

    return to_lexical_records(records)


def bulk_ours(
    texts: list[str],
    vectors: np.ndarray,
    queries: Any,
    root: Path,
    budget_s: float,
    *,
    documents_for_peers: bool = False,
    hnsw: dict[str, int] | None = None,
) -> tuple[Any, Any, dict[str, Any]]:
    """Bulk-load through the two stores directly (the brief allows it): Chroma upserts of
    Chroma's max batch with the full 13-key chunk metadata ``Retriever.add`` writes, and
    lexical commits of 10,000 records; no document table (search does not read it).
    Then the lexical state is stamped in sync, as ``Retriever.add`` does. Ids, metadata
    and lexical records come from :mod:`remy_retriever.schema.records` (:func:`chunk_records`,
    :func:`lexical_records`).

    ``documents_for_peers``: also write each text into Chroma's ``documents`` (remy keeps
    it in the metadata), for peers that wrap this collection and read ``documents``;
    it makes this ingest slower (Chroma full-text-indexes ``documents``)."""
    from remy_retriever.schema.records import pack

    embedder = common.CachedEmbedder(None, queries, tokenizer=False)
    embedder.docs = common.VectorTable(texts, vectors)
    r = _open(root, embedder, hnsw)
    target = len(texts)
    step = r._sync.dense.max_batch
    dense_s = lexical_s = 0.0
    cpu0 = time.process_time()
    started = time.perf_counter()
    progress: list[tuple[int, float]] = []
    n = 0
    now_ms = int(time.time() * 1000)
    for lo in range(0, target, 10_000):
        hi = min(target, lo + 10_000)
        ids, metas = chunk_records(texts, lo, hi, stamp=BULK_STAMP, updated_ms=now_ms)
        t0 = time.perf_counter()
        for a in range(0, hi - lo, step):
            b = min(hi - lo, a + step)
            if documents_for_peers:
                # The layout DenseStore.upsert writes (records.pack), plus ``documents``.
                r._sync.dense.collection.upsert(
                    ids=ids[a:b],
                    embeddings=np.asarray(vectors[lo + a : lo + b]),
                    documents=texts[lo + a : lo + b],
                    metadatas=pack(metas[a:b], texts[lo + a : lo + b]),
                )
                continue
            r._sync.dense.upsert(
                ids[a:b], np.asarray(vectors[lo + a : lo + b]), texts[lo + a : lo + b], metas[a:b]
            )
        t1 = time.perf_counter()
        r._sync.lexical.apply(upserts=lexical_records(zip(ids, texts[lo:hi], metas)))
        t2 = time.perf_counter()
        dense_s += t1 - t0
        lexical_s += t2 - t1
        n = hi
        progress.append((n, round(time.perf_counter() - started, 1)))
        print(f"[scale]   ours bulk-loaded {n:,}/{target:,} ({progress[-1][1]:.0f} s)", flush=True)
        if time.perf_counter() - started > budget_s and n < target:
            print(f"[scale]   ingest budget {budget_s:.0f} s exhausted at {n:,}", flush=True)
            break
    token = r._sync.dense.bump_generation()
    r._sync.lexical.save_state(
        {**r._sync.lexical.state, "generation": token, "last_sync_ms": now_ms, "dirty": False}
    )
    total = time.perf_counter() - started
    cpu = time.process_time() - cpu0
    if r.count() != n or r._sync.lexical.count() != n:
        msg = f"expected {n} chunks, got {r.count()} / {r._sync.lexical.count()}"
        raise RuntimeError(msg)
    ingest = {
        "path": "bulk: DenseStore.upsert + LexicalIndex.apply (no document table)"
        + (" + text in documents for the peers" if documents_for_peers else ""),
        **_summary(
            n,
            total,
            cpu,
            dense_s=dense_s,
            lexical_s=lexical_s,
            breakdown={
                "dense_upsert_s": round(dense_s, 2),
                "lexical_apply_s": round(lexical_s, 2),
                "other_s": round(total - dense_s - lexical_s, 2),
            },
            target=target,
            progress=progress,
        ),
    }
    _project(ingest, progress, total)
    return r, embedder, ingest


def reuse_ours(
    texts: list[str],
    vectors: np.ndarray,
    queries: Any,
    root: Path,
    *,
    hnsw: dict[str, int] | None = None,
) -> tuple[Any, Any, dict[str, Any]]:
    """Open an index an earlier (interrupted) worker bulk-loaded with the same corpus."""
    embedder = common.CachedEmbedder(None, queries, tokenizer=False)
    embedder.docs = common.VectorTable(texts, vectors)
    r = _open(root, embedder, hnsw)
    n = r.count()
    if n != len(texts) or r._sync.lexical.count() != n:
        msg = f"reused index has {n} / {r._sync.lexical.count()} chunks, expected {len(texts)}"
        raise RuntimeError(msg)
    return r, embedder, {"reused_index": str(root), "ingested": n, "target": len(texts)}


def ours_probe(r: Any, embedder: Any, texts: list[str], n: int) -> dict[str, Any]:
    """Add 1,000 new chunks, time until every one is visible in both indexes; then delete
    them and time until none is."""
    rng = np.random.default_rng(SEED + 9)
    count = 1000
    marker = [f"zqxmark{j}" for j in range(count)]
    new_texts = [f"{texts[j]} {marker[j]}" for j in range(count)]
    new_vecs = rng.standard_normal((count, DIM), dtype=np.float32)
    new_vecs /= np.linalg.norm(new_vecs, axis=1, keepdims=True)
    extra = common.VectorTable(new_texts, new_vecs)
    base_docs = embedder.docs
    embedder.docs = Chain(base_docs, extra)
    probe_q = common.VectorTable([f"probe {j}" for j in range(count)], new_vecs)
    base_q = embedder.queries
    embedder.queries = Chain(base_q, probe_q)
    new_docs = list(docs(new_texts, 0, count, prefix="new"))
    ids = chunk_ids(count, prefix="new")
    sample = list(range(0, count, 100))

    def visible() -> tuple[int, int]:
        dense = len(r._sync.dense.get(ids=ids, documents=False, metadatas=False))
        lexical = len(r._sync.lexical.hashes(ids))
        return dense, lexical

    def searchable(present: bool) -> bool:
        for j in sample:
            lex = {h.id for h in r.search(marker[j], mode="lexical", k=3)}
            sem = {h.id for h in r.search(f"probe {j}", mode="semantic", k=3)}
            if ((ids[j] in lex) and (ids[j] in sem)) != present:
                return False
        return True

    def visible_after(t0: float, done: Callable[[], bool]) -> float | None:
        """Seconds from ``t0`` until ``done()``, or None after two minutes."""
        while not done():
            if time.perf_counter() - t0 > 120:
                return None
            time.sleep(0.01)
        return round(time.perf_counter() - t0, 3)

    out: dict[str, Any] = {}
    t0 = time.perf_counter()
    r.add(new_docs, progress=False)
    out["add_call_s"] = round(time.perf_counter() - t0, 3)
    out["add_visible_s"] = visible_after(
        t0, lambda: visible() == (count, count) and searchable(True)
    )
    t0 = time.perf_counter()
    r.delete([d.id for d in new_docs])
    out["delete_call_s"] = round(time.perf_counter() - t0, 3)
    out["delete_visible_s"] = visible_after(t0, lambda: visible() == (0, 0) and searchable(False))
    out["count_after"] = r.count()
    out["chunks"] = n
    embedder.docs = base_docs
    embedder.queries = base_q
    return out


class Chain:
    """Vector tables looked up in order (the first that has the text wins)."""

    def __init__(self, *tables: Any) -> None:
        self.tables = tables

    def lookup(self, text: str) -> np.ndarray:
        for t in self.tables:
            if text in t.index:
                return t.lookup(text)
        return self.tables[0].lookup(text)

    def lookup_many(self, texts: Sequence[str]) -> np.ndarray:
        return np.stack([self.lookup(t) for t in texts])

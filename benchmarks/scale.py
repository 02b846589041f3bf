"""Scale: ingest throughput, query latency (with and without a selective filter), disk,
memory and write visibility at 10k / 100k / 1M synthetic chunks; embedding cost excluded.

    python -m benchmarks.scale --sizes 10000 100000 1000000

Chunks are deterministic Zipf text (a 50,000-word synthetic vocabulary, 60-139 words per
chunk, one chunk per document, metadata ``tenant`` = one of 100) with random unit vectors
(384-d float32); queries are 3-6 mid-frequency words with their own random vectors. Each
size runs in one worker process: ours is built and queried first (its peak RSS is read
before anything else is built), then the peers (bm25s; LangChain's BM25Retriever on
rank_bm25; LangChain EnsembleRetriever and LlamaIndex QueryFusionRetriever up to
``--peer-max``), and finally every system answers the same queries round-robin, so that
the machine's load hits all of them alike. Every system looks query vectors up in the same
table inside the timed call.
"""

from __future__ import annotations

import argparse
import contextlib
import gc
import itertools
import json
import shutil
import sys
import tempfile
import time
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from benchmarks import common

DIM = 384
VOCAB = 50_000
TENANTS = 100
SEED = 20240601
CANDIDATES = 100
SEARCH_K = 10
WHERE = {"tenant": "t7"}


# -- synthetic corpus -------------------------------------------------------------------------


def vocabulary(size: int = VOCAB, seed: int = SEED) -> list[str]:
    """``size`` distinct pronounceable pseudo-words, deterministic."""
    rng = np.random.default_rng(seed)
    cons = list("bdfgklmnprstvz")
    vows = list("aeiou")
    syll = [c + v for c in cons for v in vows] + [c + v + "n" for c in cons for v in vows]
    words: dict[str, None] = {}
    while len(words) < size:
        n = rng.integers(2, 4, size=size)
        picks = rng.integers(0, len(syll), size=(size, 3))
        for k, row in zip(n, picks):
            words.setdefault("".join(syll[j] for j in row[:k]), None)
            if len(words) == size:
                break
    return list(words)


def _zipf_cdf(size: int, s: float = 1.0, q: float = 2.7) -> np.ndarray:
    weights = 1.0 / (np.arange(1, size + 1) + q) ** s
    cdf = np.cumsum(weights)
    return cdf / cdf[-1]


def generate(n: int, out: Path, n_queries: int) -> Path:
    """Write ``texts.txt`` (one chunk per line), ``vectors.npy`` and queries to ``out``."""
    if (out / "meta.json").is_file():
        return out
    out.mkdir(parents=True, exist_ok=True)
    started = time.perf_counter()
    vocab = np.array(vocabulary(), dtype=object)
    cdf = _zipf_cdf(len(vocab))
    rng = np.random.default_rng(SEED + 1)
    with (out / "texts.txt").open("w") as fh:
        for lo in range(0, n, 20_000):
            m = min(20_000, n - lo)
            lengths = rng.integers(60, 140, size=m)
            ranks = np.searchsorted(cdf, rng.random(int(lengths.sum())))
            words = vocab[np.minimum(ranks, len(vocab) - 1)]
            ends = np.cumsum(lengths)
            starts = ends - lengths
            fh.write("".join(" ".join(words[a:b]) + "\n" for a, b in zip(starts, ends)))
    vecs = np.lib.format.open_memmap(
        out / "vectors.npy", mode="w+", dtype=np.float32, shape=(n, DIM)
    )
    vrng = np.random.default_rng(SEED + 2)
    for lo in range(0, n, 50_000):
        block = vrng.standard_normal((min(50_000, n - lo), DIM), dtype=np.float32)
        block /= np.linalg.norm(block, axis=1, keepdims=True)
        vecs[lo : lo + len(block)] = block
    vecs.flush()
    del vecs
    qrng = np.random.default_rng(SEED + 3)
    queries = [
        " ".join(vocab[qrng.integers(100, 10_000, size=int(qrng.integers(3, 7)))])
        for _ in range(n_queries)
    ]
    qv = qrng.standard_normal((n_queries, DIM), dtype=np.float32)
    qv /= np.linalg.norm(qv, axis=1, keepdims=True)
    (out / "queries.json").write_text(json.dumps(queries))
    np.save(out / "query_vectors.npy", qv)
    meta = {
        "chunks": n,
        "queries": n_queries,
        "generate_s": round(time.perf_counter() - started, 1),
    }
    (out / "meta.json").write_text(json.dumps(meta))
    return out


def _data_dir(cache: Path, n: int, n_queries: int) -> Path:
    """A cached corpus of at least ``n`` chunks (a larger one works: generation is
    deterministic and streamed, so its first ``n`` chunks are the ``n``-chunk corpus)."""
    for path in sorted(cache.glob("n*/meta.json"), key=lambda p: int(p.parent.name[1:])):
        meta = json.loads(path.read_text())
        if meta["chunks"] >= n and meta["queries"] >= n_queries:
            return path.parent
    return generate(n, cache / f"n{n}", n_queries)


def _load(data: Path, n: int) -> tuple[list[str], np.ndarray, list[str], np.ndarray]:
    with (data / "texts.txt").open() as fh:
        texts = [line.rstrip("\n") for line in itertools.islice(fh, n)]
    vectors = np.load(data / "vectors.npy", mmap_mode="r")[:n]
    queries = json.loads((data / "queries.json").read_text())
    return texts, vectors, queries, np.load(data / "query_vectors.npy")


def tenant(i: int) -> str:
    return f"t{i % TENANTS}"


# -- ours ----------------------------------------------------------------------------------------


class _Timers:
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


def _docs(texts: Sequence[str], start: int, stop: int, prefix: str = "s") -> Iterator[Any]:
    from remy_retriever import Document

    for i in range(start, stop):
        yield Document(id=f"{prefix}{i}", text=texts[i], metadata={"tenant": tenant(i)})


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
    from remy_retriever import Retriever

    embedder = common.CachedEmbedder(common.VectorTable(texts, vectors), queries, tokenizer=False)
    # max_tokens=512 keeps every synthetic document one chunk (the generous approximate
    # token counter is used: the synthetic words are not real WordPiece vocabulary).
    r = Retriever(
        root, collection="scale", embedder=embedder, progress=False, max_tokens=512, hnsw=hnsw
    )
    timers = _Timers()
    timers.wrap(r.dense, "upsert", "dense_upsert_s")
    timers.wrap(r._docs, "upsert", "document_table_s")
    timers.wrap(r.lexical, "apply", "lexical_apply_s")
    timers.wrap(embedder, "embed_documents", "vector_lookup_s")
    timers.wrap(r, "_existing", "existing_check_s")
    target = len(texts)
    cpu0 = time.process_time()
    started = time.perf_counter()
    step = 10_000
    progress: list[tuple[int, float]] = []
    n = 0
    for lo in range(0, target, step):
        r.add(list(_docs(texts, lo, min(target, lo + step))), batch_size=batch_size, progress=False)
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
    ingest = {
        "batch_size": batch_size,
        "total_s": round(total, 2),
        "chunks_per_s": round(n / total, 1),
        "dense_chunks_per_s": round(n / max(t.get("dense_upsert_s", 0), 1e-9), 1),
        "lexical_chunks_per_s": round(n / max(t.get("lexical_apply_s", 0), 1e-9), 1),
        "breakdown_s": {**t, "other_s": round(other, 2)},
        "ingested": n,
        "target": target,
        # CPU seconds of this process (all its threads, incl. Chroma's and tantivy's):
        # less sensitive than wall time to other processes on a shared machine.
        "process_cpu_s": round(cpu, 1),
        "cpu_ms_per_chunk": round(1000 * cpu / max(n, 1), 3),
        "progress_chunks_s": progress,
    }
    if n < target:
        # Projected from the rate of the last steps (ingest slows down as indexes grow).
        (n0, t0), (n1, t1) = progress[max(0, len(progress) - 3)], progress[-1]
        rate = (n1 - n0) / max(t1 - t0, 1e-9) if n1 > n0 else n / total
        ingest["truncated"] = True
        ingest["projected_total_s"] = round(total + (target - n) / rate, 0)
    return r, embedder, ingest


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
    Then the lexical state is stamped in sync, as ``Retriever.add`` does.

    ``documents_for_peers``: also write each text into Chroma's ``documents`` (remy keeps
    it in the metadata), for peers that wrap this collection and read ``documents``;
    it makes this ingest slower (Chroma full-text-indexes ``documents``)."""
    from remy_retriever import Retriever
    from remy_retriever.records import LexicalRecord
    from remy_retriever.stores.dense import TEXT_KEY

    embedder = common.CachedEmbedder(None, queries, tokenizer=False)
    embedder.docs = common.VectorTable(texts, vectors)
    r = Retriever(
        root, collection="scale", embedder=embedder, progress=False, max_tokens=512, hnsw=hnsw
    )
    target = len(texts)
    step = r.dense.max_batch
    dense_s = lexical_s = 0.0
    cpu0 = time.process_time()
    started = time.perf_counter()
    progress: list[tuple[int, float]] = []
    n = 0
    stamp = "2026-01-01T00:00:00.000000Z"
    now_ms = int(time.time() * 1000)
    for lo in range(0, target, 10_000):
        hi = min(target, lo + 10_000)
        ids = [f"s{i}#0" for i in range(lo, hi)]
        metas = [
            {
                "tenant": tenant(i),
                "remy_doc_id": f"s{i}",
                "remy_pos": 0,
                "remy_start": 0,
                "remy_end": len(texts[i]),
                "remy_heading": "[]",
                "remy_doc_hash": f"{i:032x}",
                "remy_n_chunks": 1,
                "remy_created": stamp,
                "remy_updated": stamp,
                "remy_updated_ms": now_ms,
                "remy_chunk_hash": f"{i + 1:032x}",
            }
            for i in range(lo, hi)
        ]
        t0 = time.perf_counter()
        for a in range(0, hi - lo, step):
            b = min(hi - lo, a + step)
            if documents_for_peers:
                r.dense.collection.upsert(
                    ids=ids[a:b],
                    embeddings=np.asarray(vectors[lo + a : lo + b]),
                    documents=texts[lo + a : lo + b],
                    metadatas=[
                        {**m, TEXT_KEY: t} for m, t in zip(metas[a:b], texts[lo + a : lo + b])
                    ],
                )
                continue
            r.dense.upsert(
                ids[a:b], np.asarray(vectors[lo + a : lo + b]), texts[lo + a : lo + b], metas[a:b]
            )
        t1 = time.perf_counter()
        records = [
            LexicalRecord(
                ids[k],
                f"s{lo + k}",
                texts[lo + k],
                {"tenant": tenant(lo + k), "remy_doc_id": f"s{lo + k}"},
                metas[k]["remy_chunk_hash"],
            )
            for k in range(hi - lo)
        ]
        r.lexical.apply(upserts=records)
        t2 = time.perf_counter()
        dense_s += t1 - t0
        lexical_s += t2 - t1
        n = hi
        progress.append((n, round(time.perf_counter() - started, 1)))
        print(f"[scale]   ours bulk-loaded {n:,}/{target:,} ({progress[-1][1]:.0f} s)", flush=True)
        if time.perf_counter() - started > budget_s and n < target:
            print(f"[scale]   ingest budget {budget_s:.0f} s exhausted at {n:,}", flush=True)
            break
    token = r.dense.bump_generation()
    r.lexical.save_state(
        {**r.lexical.state, "generation": token, "last_sync_ms": now_ms, "dirty": False}
    )
    total = time.perf_counter() - started
    cpu = time.process_time() - cpu0
    if r.count() != n or r.lexical.count() != n:
        msg = f"expected {n} chunks, got {r.count()} / {r.lexical.count()}"
        raise RuntimeError(msg)
    ingest: dict[str, Any] = {
        "path": "bulk: DenseStore.upsert + LexicalIndex.apply (no document table)"
        + (" + text in documents for the peers" if documents_for_peers else ""),
        "total_s": round(total, 2),
        "chunks_per_s": round(n / total, 1),
        "dense_chunks_per_s": round(n / max(dense_s, 1e-9), 1),
        "lexical_chunks_per_s": round(n / max(lexical_s, 1e-9), 1),
        "breakdown_s": {
            "dense_upsert_s": round(dense_s, 2),
            "lexical_apply_s": round(lexical_s, 2),
            "other_s": round(total - dense_s - lexical_s, 2),
        },
        "ingested": n,
        "target": target,
        "process_cpu_s": round(cpu, 1),
        "cpu_ms_per_chunk": round(1000 * cpu / max(n, 1), 3),
        "progress_chunks_s": progress,
    }
    if n < target:
        (n0, t0), (n1, t1) = progress[max(0, len(progress) - 3)], progress[-1]
        rate = (n1 - n0) / max(t1 - t0, 1e-9) if n1 > n0 else n / total
        ingest["truncated"] = True
        ingest["projected_total_s"] = round(total + (target - n) / rate, 0)
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
    from remy_retriever import Retriever

    embedder = common.CachedEmbedder(None, queries, tokenizer=False)
    embedder.docs = common.VectorTable(texts, vectors)
    r = Retriever(
        root, collection="scale", embedder=embedder, progress=False, max_tokens=512, hnsw=hnsw
    )
    n = r.count()
    if n != len(texts) or r.lexical.count() != n:
        msg = f"reused index has {n} / {r.lexical.count()} chunks, expected {len(texts)}"
        raise RuntimeError(msg)
    return r, embedder, {"reused_index": str(root), "ingested": n, "target": len(texts)}


def _ours_probe(r: Any, embedder: Any, texts: list[str], n: int) -> dict[str, Any]:
    """Add 1,000 new chunks, time until every one is visible in both indexes; then delete
    them and time until none is."""
    from remy_retriever import Document

    rng = np.random.default_rng(SEED + 9)
    count = 1000
    marker = [f"zqxmark{j}" for j in range(count)]
    new_texts = [f"{texts[j]} {marker[j]}" for j in range(count)]
    new_vecs = rng.standard_normal((count, DIM), dtype=np.float32)
    new_vecs /= np.linalg.norm(new_vecs, axis=1, keepdims=True)
    extra = common.VectorTable(new_texts, new_vecs)
    base_docs = embedder.docs
    embedder.docs = _Chain(base_docs, extra)
    probe_q = common.VectorTable([f"probe {j}" for j in range(count)], new_vecs)
    base_q = embedder.queries
    embedder.queries = _Chain(base_q, probe_q)
    docs = [
        Document(id=f"new{j}", text=new_texts[j], metadata={"tenant": tenant(j)})
        for j in range(count)
    ]
    ids = [f"new{j}#0" for j in range(count)]
    sample = list(range(0, count, 100))

    def visible() -> tuple[int, int]:
        dense = len(r.dense.get(ids=ids, documents=False, metadatas=False))
        lexical = len(r.lexical.hashes(ids))
        return dense, lexical

    def searchable(present: bool) -> bool:
        for j in sample:
            lex = {h.id for h in r.search(marker[j], mode="lexical", k=3)}
            sem = {h.id for h in r.search(f"probe {j}", mode="semantic", k=3)}
            if ((ids[j] in lex) and (ids[j] in sem)) != present:
                return False
        return True

    out: dict[str, Any] = {}
    t0 = time.perf_counter()
    r.add(docs, progress=False)
    out["add_call_s"] = round(time.perf_counter() - t0, 3)
    while visible() != (count, count) or not searchable(True):
        if time.perf_counter() - t0 > 120:
            out["add_visible_s"] = None
            break
        time.sleep(0.01)
    else:
        out["add_visible_s"] = round(time.perf_counter() - t0, 3)
    t0 = time.perf_counter()
    r.delete([d.id for d in docs])
    out["delete_call_s"] = round(time.perf_counter() - t0, 3)
    while visible() != (0, 0) or not searchable(False):
        if time.perf_counter() - t0 > 120:
            out["delete_visible_s"] = None
            break
        time.sleep(0.01)
    else:
        out["delete_visible_s"] = round(time.perf_counter() - t0, 3)
    out["count_after"] = r.count()
    out["chunks"] = n
    embedder.docs = base_docs
    embedder.queries = base_q
    return out


class _Chain:
    def __init__(self, *tables: Any) -> None:
        self.tables = tables

    def lookup(self, text: str) -> np.ndarray:
        for t in self.tables:
            if text in t.index:
                return t.lookup(text)
        return self.tables[0].lookup(text)

    def lookup_many(self, texts: Sequence[str]) -> np.ndarray:
        return np.stack([self.lookup(t) for t in texts])


# -- peers ---------------------------------------------------------------------------------------


def build_bm25s(texts: list[str]) -> Callable[[str], list[tuple[str, float]]]:
    import bm25s
    import Stemmer

    stemmer = Stemmer.Stemmer("english")
    tokens = bm25s.tokenize(texts, stopwords="en", stemmer=stemmer, show_progress=False)
    model = bm25s.BM25()
    model.index(tokens, show_progress=False)

    def search(q: str) -> list[tuple[str, float]]:
        qt = bm25s.tokenize([q], stopwords="en", stemmer=stemmer, show_progress=False)
        docs, scores = model.retrieve(qt, k=CANDIDATES, show_progress=False, n_threads=1)
        return [(f"s{int(d)}#0", float(s)) for d, s in zip(docs[0], scores[0])]

    return search


def build_rank_bm25(texts: list[str]) -> Callable[[str], list[tuple[str, float]]]:
    from langchain_community.retrievers import BM25Retriever

    from benchmarks.quality import analyzed_preprocess

    bm25 = BM25Retriever.from_texts(
        texts,
        metadatas=[{"chunk_id": f"s{i}#0"} for i in range(len(texts))],
        k=CANDIDATES,
        preprocess_func=analyzed_preprocess(),
    )

    def search(q: str) -> list[tuple[str, float]]:
        return [(d.metadata["chunk_id"], 0.0) for d in bm25.invoke(q)]

    return search


def build_langchain(
    texts: list[str], table: Any, queries: Any, root: Path, shared: Any = None
) -> Callable[[str], list[tuple[str, float]]]:
    from langchain_chroma import Chroma
    from langchain_classic.retrievers import EnsembleRetriever
    from langchain_community.retrievers import BM25Retriever

    from benchmarks.quality import analyzed_preprocess, langchain_embeddings

    metas = [{"chunk_id": f"s{i}#0", "tenant": tenant(i)} for i in range(len(texts))]
    bm25 = BM25Retriever.from_texts(
        texts, metadatas=metas, k=CANDIDATES, preprocess_func=analyzed_preprocess()
    )
    if shared is None:
        store = Chroma.from_texts(
            texts,
            embedding=langchain_embeddings(table, queries),
            metadatas=metas,
            ids=[m["chunk_id"] for m in metas],
            collection_name="bench",
            persist_directory=str(root),
        )
        id_key: str | None = "chunk_id"
    else:
        # Wrap ours' existing Chroma collection (same chunks, vectors and text); its
        # metadata has no chunk_id, so fuse by page_content (LangChain's default).
        store = Chroma(
            client=shared.client,
            collection_name=shared.collection,
            embedding_function=langchain_embeddings(table, queries),
        )
        id_key = None
    ensemble = EnsembleRetriever(
        retrievers=[bm25, store.as_retriever(search_kwargs={"k": CANDIDATES})],
        weights=[0.5, 0.5],
        id_key=id_key,
    )

    def search(q: str) -> list[tuple[str, float]]:
        return [(d.metadata.get("chunk_id", d.id or ""), 0.0) for d in ensemble.invoke(q)]

    search.bm25 = bm25  # type: ignore[attr-defined]
    return search


def build_llamaindex(
    texts: list[str], vectors: np.ndarray, table: Any, queries: Any, root: Path, shared: Any = None
) -> Callable[[str], list[tuple[str, float]]]:
    import chromadb
    from llama_index.core import Settings, StorageContext, VectorStoreIndex
    from llama_index.core.llms import MockLLM
    from llama_index.core.retrievers import QueryFusionRetriever
    from llama_index.core.schema import TextNode
    from llama_index.retrievers.bm25 import BM25Retriever
    from llama_index.vector_stores.chroma import ChromaVectorStore

    from benchmarks.quality import llamaindex_embedding

    embed_model = llamaindex_embedding(table, queries)
    Settings.embed_model = embed_model
    Settings.llm = MockLLM()
    nodes = [
        TextNode(
            id_=f"s{i}#0",
            text=texts[i],
            metadata={"tenant": tenant(i)},
            excluded_embed_metadata_keys=["tenant"],
            excluded_llm_metadata_keys=["tenant"],
            embedding=None if shared is not None else vectors[i].tolist(),
        )
        for i in range(len(texts))
    ]
    if shared is None:
        client = chromadb.PersistentClient(path=str(root))
        collection = client.get_or_create_collection("bench")
        storage = StorageContext.from_defaults(
            vector_store=ChromaVectorStore(chroma_collection=collection)
        )
        index = VectorStoreIndex(nodes, storage_context=storage, embed_model=embed_model)
    else:
        # Query ours' existing Chroma collection (same chunks, vectors and text).
        index = VectorStoreIndex.from_vector_store(
            ChromaVectorStore(chroma_collection=shared.dense.collection), embed_model=embed_model
        )
    bm25 = BM25Retriever.from_defaults(nodes=nodes, similarity_top_k=CANDIDATES)
    del nodes
    fusion = QueryFusionRetriever(
        [index.as_retriever(similarity_top_k=CANDIDATES), bm25],
        similarity_top_k=CANDIDATES,
        num_queries=1,
        mode="reciprocal_rerank",
        use_async=False,
        llm=MockLLM(),
    )

    def search(q: str) -> list[tuple[str, float]]:
        return [(n.node.node_id, float(n.score or 0.0)) for n in fusion.retrieve(q)]

    return search


# -- worker --------------------------------------------------------------------------------------


@contextlib.contextmanager
def _measure(record: dict[str, Any], name: str) -> Iterator[None]:
    gc.collect()
    rss0 = common.current_rss_mib()
    t0 = time.perf_counter()
    yield
    record[name] = {
        "build_s": round(time.perf_counter() - t0, 2),
        "rss_growth_mib": round(common.current_rss_mib() - rss0, 1),
        "process_peak_rss_mib": common.peak_rss_mib(),
    }
    print(f"[scale]   built {name}: {record[name]}", flush=True)


def worker(args: argparse.Namespace) -> dict[str, Any]:
    n = args.worker_size
    hnsw = {"ef_construction": args.ef_construction} if args.ef_construction else None
    data = Path(args.data)
    texts, vectors, qtexts, qvecs = _load(data, n)
    qtexts, qvecs = qtexts[: args.queries], qvecs[: args.queries]
    queries = common.VectorTable(qtexts, qvecs)
    result: dict[str, Any] = {
        "chunks": n,
        "queries": len(qtexts),
        "rss_after_load_mib": common.current_rss_mib(),
    }
    tmp = Path(tempfile.mkdtemp(prefix="remy-bench-scale-", dir=args.tmp))
    systems: dict[str, Callable[[str], Any]] = {}
    builds: dict[str, Any] = {}
    try:
        # 1. ours: ingest, per-mode latency (+ where), disk, peak RSS, add/delete probe.
        print(f"[scale] {n:,}: ours ingest", flush=True)
        t0 = time.perf_counter()
        if args.reuse_index:
            r, embedder, ingest = reuse_ours(
                texts, vectors, queries, Path(args.reuse_index), hnsw=hnsw
            )
            tmp_remy = Path(args.reuse_index)
        elif args.ingest == "bulk":
            peers_read_it = args.peer_chroma == "shared" and bool(
                {"langchain", "llamaindex"} & set(args.peers)
            )
            r, embedder, ingest = bulk_ours(
                texts,
                vectors,
                queries,
                tmp / "remy",
                args.ingest_budget,
                documents_for_peers=peers_read_it,
                hnsw=hnsw,
            )
        else:
            r, embedder, ingest = build_ours(
                texts,
                vectors,
                queries,
                tmp / "remy",
                args.batch_size,
                args.ingest_budget,
                hnsw=hnsw,
            )

        if not args.reuse_index:
            tmp_remy = tmp / "remy"
        if ingest["ingested"] < n:
            texts = texts[: ingest["ingested"]]
            vectors = vectors[: ingest["ingested"]]
            result["chunks_measured"] = ingest["ingested"]
        result["ours_ingest"] = ingest
        chroma_mib = common.dir_size_mib(tmp_remy) - common.dir_size_mib(tmp_remy / "remy_lexical")
        result["ours_disk_mib"] = {
            "chroma": round(chroma_mib, 1),
            "lexical": common.dir_size_mib(tmp_remy / "remy_lexical"),
            "source_text_mib": round(sum(len(t) + 1 for t in texts) / 2**20, 1),
            "raw_vectors_mib": round(n * DIM * 4 / 2**20, 1),
        }
        for mode in ("lexical", "semantic", "hybrid"):
            for filt in (None, WHERE):
                key = f"ours/{mode}" + ("+where" if filt else "")
                systems[key] = lambda q, m=mode, f=filt: r.search(
                    q, mode=m, k=SEARCH_K, candidates=CANDIDATES, where=f
                )
                if filt is None:
                    systems[key + " rank()"] = lambda q, m=mode: r.rank(
                        q, mode=m, candidates=CANDIDATES
                    )
        # ours alone first (a short pass), so that its peak RSS is its own.
        ours_only = dict(systems)
        lat = _run_queries(ours_only, qtexts[:20], rounds=1)
        result["ours_peak_rss_mib"] = common.peak_rss_mib()
        result["ours_first_pass"] = {k: common.summarize(v) for k, v in lat.items()}
        result["ours_hybrid_profile"] = _profile(
            lambda q: r.search(q, mode="hybrid", k=SEARCH_K, candidates=CANDIDATES), qtexts[:30]
        )
        if args.probe:
            print(f"[scale] {n:,}: add/delete 1,000 probe", flush=True)
            result["ours_add_delete_1000"] = _ours_probe(r, embedder, texts, n)
        result["ours_total_s"] = round(time.perf_counter() - t0, 1)
        # 2. peers.
        del ours_only
        if "bm25s" in args.peers and common.has_module("bm25s", "Stemmer"):
            with _measure(builds, "bm25s"):
                systems["bm25s"] = build_bm25s(texts)
        if (
            "rank_bm25" in args.peers
            and n <= args.rank_bm25_max
            and common.has_module("langchain_community", "rank_bm25", "bm25s")
        ):
            with _measure(builds, "langchain-bm25 (rank_bm25)"):
                systems["langchain-bm25 (rank_bm25)"] = build_rank_bm25(texts)
        if n <= args.peer_max:
            table = common.VectorTable(texts, vectors)
            shared = r if args.peer_chroma == "shared" else None
            result["peer_chroma"] = args.peer_chroma
            if "langchain" in args.peers and common.has_module(
                "langchain_classic", "langchain_community", "langchain_chroma", "rank_bm25"
            ):
                with _measure(builds, "langchain-ensemble"):
                    systems["langchain-ensemble"] = build_langchain(
                        texts, table, queries, tmp / "langchain", shared
                    )
                if "langchain-bm25 (rank_bm25)" not in systems:
                    # The ensemble's own BM25 branch: LangChain's rank_bm25 path.
                    branch = systems["langchain-ensemble"].bm25  # type: ignore[attr-defined]
                    systems["langchain-bm25 (rank_bm25)"] = branch.invoke
            if "llamaindex" in args.peers and common.has_module(
                "llama_index.core",
                "llama_index.retrievers.bm25",
                "llama_index.vector_stores.chroma",
            ):
                with _measure(builds, "llamaindex-fusion"):
                    systems["llamaindex-fusion"] = build_llamaindex(
                        texts, vectors, table, queries, tmp / "llamaindex", shared
                    )
        result["peer_builds"] = builds
        result["peer_disk_mib"] = {
            name: common.dir_size_mib(tmp / name)
            for name in ("langchain", "llamaindex")
            if (tmp / name).exists()
        }
        # 3. everyone, same queries, round-robin.
        print(f"[scale] {n:,}: interleaved queries over {len(systems)} systems", flush=True)
        lat = _run_queries(systems, qtexts, rounds=1)
        result["latency"] = {k: common.summarize(v) for k, v in lat.items()}
        result["process_peak_rss_mib"] = common.peak_rss_mib()
        r.close()
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return result


def _profile(fn: Callable[[str], Any], queries: Sequence[str]) -> list[str]:
    """cProfile of ``fn`` over ``queries``: the top functions by total (own) time."""
    import cProfile
    import io
    import pstats

    prof = cProfile.Profile()
    prof.enable()
    for q in queries:
        fn(q)
    prof.disable()
    buf = io.StringIO()
    pstats.Stats(prof, stream=buf).sort_stats("tottime").print_stats(15)
    lines = [line.rstrip() for line in buf.getvalue().splitlines() if line.strip()]
    return lines[-17:]


def _run_queries(
    systems: dict[str, Callable[[str], Any]], queries: Sequence[str], rounds: int
) -> dict[str, list[float]]:
    """Round-robin: each query goes to every system before the next query (rotating the
    order), so background load affects all systems alike."""
    names = list(systems)
    for q in queries[:3]:  # warm-up
        for name in names:
            systems[name](q)
    lat: dict[str, list[float]] = {name: [] for name in names}
    for _ in range(rounds):
        for i, q in enumerate(queries):
            order = names[i % len(names) :] + names[: i % len(names)]
            for name in order:
                t0 = time.perf_counter()
                systems[name](q)
                lat[name].append((time.perf_counter() - t0) * 1000)
    return lat


# -- driver --------------------------------------------------------------------------------------


def _markdown(data: dict[str, Any]) -> str:
    parts = [common.header_md("Scale: synthetic chunks, embedding excluded", data)]
    parts.append(
        f"Query latency: {CANDIDATES} candidates per branch; `ours/<mode>` is "
        f"`Retriever.search(k={SEARCH_K})` (fetches the hits' text and metadata), "
        "`rank()` only ranks; `+where` filters on `tenant` = 1 of 100 in both branches. "
        "Peers get no filter. Every system looks the query vector up in the same table "
        "inside the timed call (real MiniLM query embedding is excluded here; see the "
        "quality results for its cost). Queries run round-robin across systems.\n"
    )
    rows = []
    for size in data["sizes"]:
        if "error" in size:
            rows.append([f"{size['chunks']:,}", "error: " + size["error"], *[None] * 6])
            continue
        ing = size["ours_ingest"]
        disk = size["ours_disk_mib"]
        probe = size.get("ours_add_delete_1000") or {}
        rows.append(
            [
                f"{size['chunks']:,}",
                ing.get("chunks_per_s"),
                ing.get("dense_chunks_per_s"),
                ing.get("lexical_chunks_per_s"),
                ing.get("total_s"),
                disk["chroma"],
                disk["lexical"],
                size["ours_peak_rss_mib"],
                probe.get("add_visible_s"),
                probe.get("delete_visible_s"),
            ]
        )
    parts.append("\n## Ours: ingest, disk, memory, write visibility\n")
    parts.append(
        common.md_table(
            [
                "chunks",
                "add chunks/s",
                "dense upsert chunks/s",
                "lexical chunks/s",
                "ingest s",
                "Chroma MiB",
                "lexical MiB",
                "peak RSS MiB",
                "add 1k visible s",
                "delete 1k visible s",
            ],
            rows,
        )
    )
    parts.append("\nIngest time breakdown (s):\n")
    keys: list[str] = []
    for size in data["sizes"]:
        for k in size.get("ours_ingest", {}).get("breakdown_s", {}):
            if k not in keys:
                keys.append(k)
    parts.append(
        common.md_table(
            ["chunks", *keys],
            [
                [
                    f"{s['chunks']:,}",
                    *[s["ours_ingest"].get("breakdown_s", {}).get(k) for k in keys],
                ]
                for s in data["sizes"]
                if "ours_ingest" in s
            ],
        )
    )
    parts.append("\n## Query latency, ms (p50 / p95), same run, round-robin\n")
    names: list[str] = []
    for size in data["sizes"]:
        for k in size.get("latency", {}):
            if k not in names:
                names.append(k)
    sizes = [s for s in data["sizes"] if "latency" in s]
    parts.append(
        common.md_table(
            ["system", *[f"{s['chunks']:,}" for s in sizes]],
            [[name, *[_pp(s["latency"].get(name)) for s in sizes]] for name in names],
        )
    )
    parts.append("\n## Peer builds (s) and RSS growth (MiB)\n")
    peers: list[str] = []
    for s in sizes:
        for k in s.get("peer_builds", {}):
            if k not in peers:
                peers.append(k)
    parts.append(
        common.md_table(
            ["system", *[f"{s['chunks']:,}" for s in sizes]],
            [
                [
                    p,
                    *[_build_cell(s.get("peer_builds", {}).get(p)) for s in sizes],
                ]
                for p in peers
            ],
        )
    )
    if data.get("targets"):
        parts.append("\n## Targets\n")
        parts.append(
            common.md_table(
                ["target", "measured", "met"],
                [
                    [t["target"], t["measured"], "yes" if t["met"] else "NO"]
                    for t in data["targets"]
                ],
            )
        )
    return "\n".join(parts)


def _build_cell(b: dict[str, float] | None) -> str | None:
    return None if not b else f"{b['build_s']:.1f} s / {b['rss_growth_mib']:.0f} MiB"


def _pp(s: dict[str, float] | None) -> str | None:
    if not s:
        return None
    return f"{s['p50_ms']:.1f} / {s['p95_ms']:.1f}"


def _targets(data: dict[str, Any]) -> list[dict[str, Any]]:
    out = []
    by = {s["chunks"]: s for s in data["sizes"] if "latency" in s}
    s100 = by.get(100_000)
    if s100:
        lat = s100["latency"]
        ours = lat["ours/hybrid"]["p50_ms"]
        for peer, limit in (("langchain-ensemble", 0.5), ("llamaindex-fusion", 1.0)):
            if peer in lat:
                ratio = ours / lat[peer]["p50_ms"]
                out.append(
                    {
                        "target": f"100k hybrid p50 <= {limit}x {peer}",
                        "measured": f"{ours:.1f} ms vs {lat[peer]['p50_ms']:.1f} ms = {ratio:.2f}x",
                        "met": ratio <= limit,
                    }
                )
        probe = s100.get("ours_add_delete_1000") or {}
        for key in ("add_visible_s", "delete_visible_s"):
            v = probe.get(key)
            op = key.split("_")[0]
            call = probe.get(f"{op}_call_s")
            measured = f"{v} s from the call's start"
            if v is not None and call is not None:
                measured += f" (the call {call} s; visible {max(v - call, 0):.3f} s after it)"
            out.append(
                {
                    "target": f"100k {op} 1,000 chunks visible in both < 1 s",
                    "measured": measured,
                    "met": v is not None and v < 1.0,
                }
            )
    s1m = by.get(1_000_000)
    if s1m:
        at = s1m.get("chunks_measured", 1_000_000)
        note = "" if at == 1_000_000 else f" (at {at:,} chunks: ingest did not reach 1M)"
        for mode, limit in (("lexical", 20.0), ("hybrid", 60.0)):
            v = s1m["latency"][f"ours/{mode}"]["p50_ms"]
            out.append(
                {
                    "target": f"1M {mode} p50 < {limit:.0f} ms",
                    "measured": f"{v:.1f} ms{note}",
                    "met": v < limit and at == 1_000_000,
                }
            )
        wall = s1m.get("worker_wall_s")
        ingest = s1m.get("ours_ingest", {})
        projected = ingest.get("projected_total_s")
        measured = f"{wall} s total (ours {s1m.get('ours_total_s')} s)"
        if projected:
            measured += f"; ingest stopped at {at:,}, projected 1M ingest {projected:,.0f} s"
        out.append(
            {
                "target": "1M point finishes within 30 min",
                "measured": measured,
                "met": wall is not None and wall <= 1800 and not projected,
            }
        )
    return out


def _plot(data: dict[str, Any], path: Path) -> None:
    plt = common.plt()
    sizes = [s for s in data["sizes"] if "latency" in s]
    if not sizes:
        return
    fig, axes = plt.subplots(1, 2, figsize=(13, 5))
    show = [
        "ours/lexical",
        "ours/semantic",
        "ours/hybrid",
        "ours/hybrid+where",
        "bm25s",
        "langchain-bm25 (rank_bm25)",
        "langchain-ensemble",
        "llamaindex-fusion",
    ]
    for name in show:
        pts = [(s["chunks"], s["latency"][name]["p50_ms"]) for s in sizes if name in s["latency"]]
        if pts:
            axes[0].plot(*zip(*pts), marker="o", label=name)
    axes[0].set_xscale("log")
    axes[0].set_yscale("log")
    axes[0].set_xlabel("chunks")
    axes[0].set_ylabel("query p50 ms")
    axes[0].set_title("Query latency p50 (same run, round-robin)")
    axes[0].legend(fontsize=7)
    axes[0].grid(alpha=0.3, which="both")
    for key, label in (
        ("chunks_per_s", "ingest total"),
        ("dense_chunks_per_s", "Chroma upsert"),
        ("lexical_chunks_per_s", "lexical apply"),
    ):
        pts = [(s["chunks"], s["ours_ingest"][key]) for s in sizes if key in s["ours_ingest"]]
        if pts:
            axes[1].plot(*zip(*pts), marker="o", label=label)
    axes[1].set_xscale("log")
    axes[1].set_yscale("log")
    axes[1].set_xlabel("chunks")
    axes[1].set_ylabel("chunks / s")
    axes[1].set_title("Ours: ingest throughput (embedding excluded)")
    axes[1].legend(fontsize=8)
    axes[1].grid(alpha=0.3, which="both")
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def main(argv: Sequence[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--sizes", type=int, nargs="+", default=[10_000, 100_000, 1_000_000])
    p.add_argument("--queries", type=int, default=200)
    p.add_argument("--batch-size", type=int, default=256, help="Retriever.add batch_size")
    p.add_argument("--peers", nargs="*", default=["bm25s", "rank_bm25", "langchain", "llamaindex"])
    p.add_argument("--peer-max", type=int, default=100_000, help="largest size for peer hybrids")
    p.add_argument("--rank-bm25-max", type=int, default=100_000)
    p.add_argument("--probe-min", type=int, default=100_000, help="add/delete probe from this size")
    p.add_argument("--cache", type=Path, default=common.CACHE_DIR / "scale")
    p.add_argument("--tmp", default=None, help="where indexes are built (default: system temp)")
    p.add_argument("--out", type=Path, default=common.RESULTS_DIR)
    p.add_argument("--name", default="scale")
    p.add_argument("--timeout", type=float, default=3 * 3600)
    p.add_argument(
        "--append",
        action="store_true",
        help="merge into an existing results file (replacing the sizes run now)",
    )
    p.add_argument(
        "--ingest-budget",
        type=float,
        default=1500,
        help="stop ours' ingest after this many seconds (the 1M point must finish "
        "in 30 min); the rest is projected and queries run on what was ingested",
    )
    p.add_argument(
        "--ingest",
        choices=["add", "bulk"],
        default="add",
        help="ours: Retriever.add (default) or bulk DenseStore.upsert + LexicalIndex.apply",
    )
    p.add_argument(
        "--peer-chroma",
        choices=["own", "shared"],
        default="own",
        help="peer hybrids build their own Chroma collection (default) or query ours'",
    )
    p.add_argument(
        "--ef-construction",
        type=int,
        default=None,
        help="create ours' collection with this HNSW ef_construction (Chroma's default: 100)",
    )
    p.add_argument("--reuse-index", default=None, help=argparse.SUPPRESS)
    p.add_argument("--worker-size", type=int, default=None, help=argparse.SUPPRESS)
    p.add_argument("--data", default=None, help=argparse.SUPPRESS)
    p.add_argument("--probe", action="store_true", help=argparse.SUPPRESS)
    p.add_argument("--worker-out", default=None, help=argparse.SUPPRESS)
    args = p.parse_args(argv)
    if args.worker_size:
        common.write_worker_output(args.worker_out, worker(args))
        return 0
    info = common.machine()
    biggest = max(args.sizes)
    data_dir = _data_dir(args.cache, biggest, max(args.queries, 20))
    data: dict[str, Any] = {
        "benchmark": "scale",
        "command": common.command_line(),
        "versions": common.versions(),
        "settings": {
            "dim": DIM,
            "vocabulary": VOCAB,
            "tenants": TENANTS,
            "candidates": CANDIDATES,
            "search_k": SEARCH_K,
            "where": WHERE,
            "queries": args.queries,
            "batch_size": args.batch_size,
            "words_per_chunk": "60-139",
            "ef_construction": args.ef_construction or "Chroma's default (100)",
        },
        "sizes": [],
    }
    for n in sorted(args.sizes):
        print(f"[scale] size {n:,}", flush=True)
        wargs = [
            "--worker-size",
            str(n),
            "--data",
            str(data_dir),
            "--queries",
            str(args.queries),
            "--batch-size",
            str(args.batch_size),
            "--peer-max",
            str(args.peer_max),
            "--rank-bm25-max",
            str(args.rank_bm25_max),
            *(["--reuse-index", args.reuse_index] if args.reuse_index else []),
            *(["--ef-construction", str(args.ef_construction)] if args.ef_construction else []),
            "--ingest",
            args.ingest,
            "--peer-chroma",
            args.peer_chroma,
            "--ingest-budget",
            str(args.ingest_budget),
            "--peers",
            *args.peers,
        ]
        if args.tmp:
            wargs += ["--tmp", args.tmp]
        if n >= args.probe_min:
            wargs.append("--probe")
        la = common.load_average()
        res = common.run_worker("benchmarks.scale", wargs, timeout=args.timeout)
        res.setdefault("chunks", n)
        res["load_average_before"] = la
        res["load_average_after"] = common.load_average()
        if "error" in res:
            print(f"[scale]   error: {res['error']}\n{res.get('stderr', '')[-2000:]}")
        data["sizes"].append(res)
    data["machine"] = common.finish_machine(info)
    for size in data["sizes"]:
        size["run_date"] = info["date"]
    previous = args.out / f"{args.name}.json"
    if args.append and previous.is_file():
        # Keep the other sizes of an earlier run (each size records its own run date and
        # load averages); this run's sizes replace theirs.
        old = json.loads(previous.read_text())
        done = {s["chunks"] for s in data["sizes"]}
        kept = [s for s in old.get("sizes", []) if s["chunks"] not in done]
        data["sizes"] = sorted(kept + data["sizes"], key=lambda s: s["chunks"])
        data["earlier_runs"] = [
            *old.get("earlier_runs", []),
            {"command": old.get("command"), "machine": old.get("machine")},
        ]
    data["targets"] = _targets(data)
    common.write_results(args.out, args.name, data, _markdown(data))
    _plot(data, args.out / f"{args.name}.png")
    return 0


if __name__ == "__main__":
    sys.exit(main())

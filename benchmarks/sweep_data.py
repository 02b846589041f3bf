"""Branch data for offline quality sweeps (``benchmarks/quality_sweep.py``).

For every judged query of a BEIR split this collects, once, everything a fusion variant
needs, so that variants are pure numpy afterwards:

- the cosine of the query to every chunk (cached MiniLM vectors, the ones stored in the
  ``remy eval`` index; exact, where the library's HNSW search is approximate);
- the BM25 scores of the lexical top-100 and of the dense top-100 (what the library's
  fill reads; remy's tantivy index, the library's own analyser and BM25; a chunk in
  neither has no score here), and the query's BM25 ceiling (``calibration``);
- the qrels.

Train queries are embedded once with the real model (the quality cache holds test
queries only). Cached under ``benchmarks/.cache/sweep/``.
"""

from __future__ import annotations

import json
import pickle
from dataclasses import dataclass
from typing import Any

import numpy as np

from benchmarks import common

#: Candidates per branch (the fairness rule of benchmarks.quality).
CANDIDATES = 100


@dataclass
class SweepData:
    dataset: str
    split: str
    chunk_ids: list[str]
    doc_of: np.ndarray  # chunk index -> document index
    doc_ids: list[str]
    qids: list[str]
    texts: list[str]
    cosines: np.ndarray  # queries x chunks (float32)
    bm25: list[dict[int, float]]  # per query: chunk index -> BM25 score (matching chunks)
    ceilings: list[float]
    qrels: dict[str, dict[str, int]]
    chunk_vectors: np.ndarray
    query_vectors: np.ndarray


def load(dataset_dir: str, split: str) -> SweepData:
    from remy_retriever.evaluation.beir import load_beir

    ds = load_beir(dataset_dir, split=split)
    out = common.CACHE_DIR / "sweep" / f"{ds.name}-{ds.fingerprint}-{split}.pkl"
    if out.is_file():
        with out.open("rb") as fh:
            data: SweepData = pickle.load(fh)
        return data
    from benchmarks.quality import prepare

    prepared = prepare(dataset_dir, common.CACHE_DIR / "eval", common.CACHE_DIR)
    chunks = json.loads((prepared / "chunks.json").read_text())
    vecs = np.load(prepared / "chunks.npy").astype(np.float32)
    test_q = json.loads((prepared / "queries.json").read_text())
    test_vecs = np.load(prepared / "queries.npy")
    known = dict(zip(test_q["texts"], test_vecs))
    qids = list(ds.queries)
    texts = [ds.queries[q] for q in qids]
    missing = [t for t in texts if t not in known]
    if missing:
        import remy_retriever

        emb = remy_retriever.SentenceTransformerEmbedder()
        extra = np.asarray(emb.embed_documents(missing), dtype=np.float32)
        known.update(zip(missing, extra))
    qvecs = np.stack([known[t] for t in texts]).astype(np.float32)
    from remy_retriever import Retriever
    from remy_retriever.schema.records import document_id_of
    from remy_retriever.search.calibration import query_ceiling

    ids: list[str] = chunks["ids"]
    index = {c: i for i, c in enumerate(ids)}
    doc_ids: list[str] = []
    doc_index: dict[str, int] = {}
    doc_of = np.zeros(len(ids), dtype=np.int64)
    for i, c in enumerate(ids):
        d = document_id_of(c)
        if d not in doc_index:
            doc_index[d] = len(doc_ids)
            doc_ids.append(d)
        doc_of[i] = doc_index[d]
    store = common.CACHE_DIR / "eval" / f"{ds.name}-{ds.fingerprint}"
    embedder = common.CachedEmbedder(
        common.VectorTable(chunks["texts"], vecs), common.VectorTable(texts, qvecs)
    )
    norms = np.linalg.norm(vecs, axis=1, keepdims=True)
    qn = np.linalg.norm(qvecs, axis=1, keepdims=True)
    cosines = (qvecs / qn) @ (vecs / norms).T
    bm25: list[dict[int, float]] = []
    ceilings: list[float] = []
    with Retriever(store, collection="beir", embedder=embedder) as r:
        for i, text in enumerate(texts):
            # The lexical top-100, plus the BM25 of the dense top-100 (the library's fill).
            top = np.argsort(-cosines[i], kind="stable")[:CANDIDATES]
            got = r._sync.lexical.search(text, CANDIDATES)
            got += r._sync.lexical.search(text, CANDIDATES, among=[ids[j] for j in top.tolist()])
            bm25.append({index[c]: s for c, s in got if c in index})
            ceilings.append(query_ceiling(text, r._sync.lexical.idf))
    data = SweepData(
        ds.name,
        split,
        ids,
        doc_of,
        doc_ids,
        qids,
        texts,
        cosines.astype(np.float32),
        bm25,
        ceilings,
        {q: dict(v) for q, v in ds.qrels.items()},
        vecs,
        qvecs,
    )
    out.parent.mkdir(parents=True, exist_ok=True)
    with out.open("wb") as fh:
        pickle.dump(data, fh)
    return data


def describe(data: SweepData) -> dict[str, Any]:
    return {
        "dataset": data.dataset,
        "split": data.split,
        "queries": len(data.qids),
        "chunks": len(data.chunk_ids),
    }

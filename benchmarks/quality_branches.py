"""Branch-level variants for issue #17, offline, on top of the default fusion.

    python -m benchmarks.quality_branches --dataset ../shared/data/beir/scifact --split train

The fusion sweeps (``benchmarks.quality_sweep``) left SciFact train at 0.742 and SciFact
test at 0.728; this tries what the issue lists beyond fusion, each as a change to one
branch, then fused by the library default (calibrated convex, alpha 0.45, lexical
fill, as ``quality_sweep`` computes it). Same chunks, cached vectors, 100 candidates,
documents ranked by their best chunk:

- **dense, extra vectors per document**: the title alone (``title``), the mean of the
  document's chunk vectors (``docmean``) and every sentence of the abstract
  (``sentence``, best sentence per document). A chunk's cosine becomes
  ``(1 - lam) * chunk + lam * document-level cosine``, or their maximum;
- **lexical, RM3** pseudo-relevance feedback (top ``fb_docs`` chunks by BM25, weighted
  by a soft-max of their scores; ``fb_terms`` expansion terms; the original query keeps
  weight ``orig``), BM25 recomputed offline with remy's analyser (``sweep_bm25``);
- **lexical, document-level BM25**: BM25 over the whole title + abstract, given to each
  of its chunks, mixed with the chunk's own BM25 (``mix`` = the document's share).

Title and sentence vectors are embedded once with ONNX fp32 (the
vectors of torch) and cached beside the sweep data. Rows land in
``benchmarks/results/quality-branches-<dataset>-<split>.json`` and ``.md``.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import re
import time
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

from benchmarks import common
from benchmarks.quality_sweep import Query, doc_run, fuse_scores, score
from benchmarks.sweep_bm25 import Bm25Matrix
from benchmarks.sweep_data import SweepData, load

ALPHA = 0.45
#: A sentence ends at . ! or ? followed by space and a capital or an opening bracket.
_SENTENCE = re.compile(r"(?<=[.!?])\s+(?=[A-Z(\[])")
Cosines = Callable[[int], np.ndarray]


def _default(q: Query) -> tuple[np.ndarray, np.ndarray]:
    return fuse_scores(q, "calib", ALPHA, fill="lexical", missing="min")


def _row(data: SweepData, cosines: Cosines | None = None) -> dict[str, Any]:
    """semantic and default-hybrid nDCG@10 with the semantic cosines ``cosines(i)``."""
    sem, hyb = {}, {}
    for i, qid in enumerate(data.qids):
        q = Query(data, i) if cosines is None else Query(data, i, cos=cosines(i))
        sem[qid] = doc_run(data, q.sem_top, q.sem_scores)
        hyb[qid] = doc_run(data, *_default(q))
    return {"semantic": score(data, sem), "hybrid": score(data, hyb)}


def _lexical_row(data: SweepData) -> dict[str, Any]:
    lex, hyb = {}, {}
    for i, qid in enumerate(data.qids):
        q = Query(data, i)
        lex[qid] = doc_run(data, q.lex_top, q.lex_scores)
        hyb[qid] = doc_run(data, *_default(q))
    return {"lexical": score(data, lex), "hybrid": score(data, hyb)}


def _embedded(data: SweepData, kind: str, texts: list[str]) -> np.ndarray:
    cache = common.CACHE_DIR / "sweep" / f"{data.dataset}-{kind}-vectors.npy"
    if cache.is_file():
        vectors = np.load(cache)
    else:
        from remy_retriever.models.embeddings import make_embedder

        started = time.perf_counter()
        vectors = np.asarray(make_embedder(None, "onnx").embed_documents(texts), dtype=np.float32)
        print(f"embedded {len(texts)} {kind} texts in {time.perf_counter() - started:.0f} s")
        np.save(cache, vectors)
    return vectors / np.linalg.norm(vectors, axis=1, keepdims=True)


def dense_rows(data: SweepData, corpus: dict[str, tuple[str, str]]) -> dict[str, Any]:
    rows: dict[str, Any] = {"default": _row(data)}
    queries = data.query_vectors / np.linalg.norm(data.query_vectors, axis=1, keepdims=True)
    n_docs = len(data.doc_ids)
    # Per query, a document-level cosine for each kind of extra vector.
    titles = [corpus[d][0].strip() for d in data.doc_ids]
    title_cos = queries @ _embedded(data, "title", [t or " " for t in titles]).T
    title_cos[:, [not t for t in titles]] = -1.0
    means = np.zeros((n_docs, queries.shape[1]), dtype=np.float32)
    chunks = data.chunk_vectors / np.linalg.norm(data.chunk_vectors, axis=1, keepdims=True)
    np.add.at(means, data.doc_of, chunks)
    mean_cos = queries @ (means / np.linalg.norm(means, axis=1, keepdims=True)).T
    sentences, owner = [], []
    for d, doc_id in enumerate(data.doc_ids):
        for sentence in _SENTENCE.split(corpus[doc_id][1]):
            if len(sentence.strip()) > 10:
                sentences.append(sentence.strip())
                owner.append(d)
    sentence_vectors = _embedded(data, "sentence", sentences)
    owners = np.array(owner)
    sentence_cos = np.full((len(queries), n_docs), -1.0, dtype=np.float32)
    for i in range(len(queries)):
        np.maximum.at(sentence_cos[i], owners, sentence_vectors @ queries[i])
    for kind, doc_cos in (("title", title_cos), ("docmean", mean_cos), ("sentence", sentence_cos)):
        for lam in (0.1, 0.2, 0.35, 0.5):
            rows[f"dense {kind} mix lam={lam}"] = _row(
                data,
                lambda i, c=doc_cos, lam=lam: (
                    (1 - lam) * data.cosines[i] + lam * c[i][data.doc_of]
                ).astype(np.float32),
            )
        rows[f"dense {kind} max"] = _row(
            data, lambda i, c=doc_cos: np.maximum(data.cosines[i], c[i][data.doc_of])
        )
        print(kind, {k: v["hybrid"]["nDCG@10"] for k, v in rows.items() if kind in k}, flush=True)
    return rows


class _Rm3:
    """BM25 with weighted query terms (for RM3's expanded query) on a :class:`Bm25Matrix`."""

    K1, B = 1.2, 0.75

    def __init__(self, matrix: Bm25Matrix) -> None:
        self.m = matrix
        self.rows = (matrix.body + matrix.head).tocsr()
        self.cols = self.rows.tocsc()
        length = matrix.body_len + matrix.head_len
        self.norm = self.K1 * (1 - self.B + self.B * length / length.mean())
        self.idf = np.log(1 + (matrix.n - matrix.df + 0.5) / (matrix.df + 0.5))

    def scores(self, weights: dict[int, float]) -> np.ndarray:
        total = np.zeros(self.m.n)
        for j, w in weights.items():
            col = self.cols[:, j].tocoo()
            total[col.row] += (
                w * self.idf[j] * col.data * (self.K1 + 1) / (col.data + self.norm[col.row])
            )
        return total

    def ceiling(self, weights: dict[int, float]) -> float:
        return float((self.K1 + 1) * sum(w * self.idf[j] for j, w in weights.items()))

    def expanded(
        self, query: Counter[int], fb_docs: int, fb_terms: int, orig: float
    ) -> dict[int, float]:
        first = self.scores(dict(query))
        top = np.argsort(-first)[:fb_docs]
        weights = np.exp(first[top] - first[top].max())
        weights /= weights.sum()
        relevance: Counter[int] = Counter()
        for d, w in zip(top.tolist(), weights.tolist()):
            row = self.rows[d]
            for j, f in zip(row.indices.tolist(), row.data.tolist()):
                relevance[j] += w * f / row.sum()
        expansion = dict(relevance.most_common(fb_terms))
        z, qz = sum(expansion.values()), sum(query.values())
        out: Counter[float] = Counter()
        for j, c in query.items():
            out[j] += orig * c / qz
        for j, v in expansion.items():
            out[j] += (1 - orig) * v / z
        return {j: v * qz for j, v in out.items()}  # the original query's total weight


def lexical_rows(
    data: SweepData, texts: list[str], corpus: dict[str, tuple[str, str]]
) -> dict[str, Any]:
    from remy_retriever.text.analysis import analyze

    rows: dict[str, Any] = {"default (tantivy BM25)": _lexical_row(data)}
    rm3 = _Rm3(Bm25Matrix(texts))
    vocab = rm3.m.vocab
    for fb_docs, fb_terms, orig in [(0, 0, 1.0)] + [
        (d, t, o) for d in (5, 10) for t in (10, 20) for o in (0.5, 0.7)
    ]:
        bm25, ceilings = [], []
        for text in data.texts:
            query = Counter(vocab[t] for t in analyze(text) if t in vocab)
            weights: dict[int, float] = dict(query)
            if query and fb_docs:
                weights = rm3.expanded(query, fb_docs, fb_terms, orig)
            got = rm3.scores(weights) if weights else np.zeros(rm3.m.n)
            bm25.append({int(c): float(got[c]) for c in np.nonzero(got)[0]})
            ceilings.append(rm3.ceiling(weights))
        name = (
            "bm25 offline"
            if not fb_docs
            else f"rm3 fb_docs={fb_docs} fb_terms={fb_terms} orig={orig}"
        )
        rows[name] = _lexical_row(dataclasses.replace(data, bm25=bm25, ceilings=ceilings))
        print(name, rows[name]["hybrid"]["nDCG@10"], flush=True)
    docs = Bm25Matrix([f"{corpus[d][0]}\n\n{corpus[d][1]}" for d in data.doc_ids])
    chunks_of: dict[int, list[int]] = {}
    for c, d in enumerate(data.doc_of.tolist()):
        chunks_of.setdefault(d, []).append(c)
    per_doc = [docs.scores(t, k1=1.2, b=0.75) for t in data.texts]
    for mix in (1.0, 0.5, 0.3):
        bm25 = []
        for i, own in enumerate(data.bm25):
            mixed = {c: (1 - mix) * s for c, s in own.items()}
            for d, s in per_doc[i].items():
                for c in chunks_of[d]:
                    mixed[c] = mixed.get(c, 0.0) + mix * s
            bm25.append(mixed)
        name = f"document-level bm25 mix={mix}"
        rows[name] = _lexical_row(dataclasses.replace(data, bm25=bm25))
        print(name, rows[name]["hybrid"]["nDCG@10"], flush=True)
    return rows


def _markdown(data: dict[str, Any]) -> str:
    out = [f"# Branch variants (issue #17): {data['dataset']} {data['split']}\n"]
    out.append(f"Command: `{data['command']}`\n")
    out.append(
        "nDCG@10; the hybrid column is the library default fusion (calibrated convex, "
        "alpha 0.45, lexical fill) over the changed branch.\n"
    )
    for section, branch in (("dense", "semantic"), ("lexical", "lexical")):
        rows = data[section]
        out.append(
            common.md_table(
                ["variant", branch, "hybrid"],
                [
                    [k, f"{v[branch]['nDCG@10']:.4f}", f"{v['hybrid']['nDCG@10']:.4f}"]
                    for k, v in rows.items()
                ],
            )
            + "\n"
        )
    return "\n".join(out)


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--dataset", required=True)
    p.add_argument("--split", default="train")
    p.add_argument("--out", type=Path, default=common.RESULTS_DIR)
    args = p.parse_args()
    from benchmarks.quality import prepare
    from remy_retriever.evaluation.beir import load_beir

    data = load(args.dataset, args.split)
    corpus = dict(load_beir(args.dataset, split=args.split).corpus)
    prepared = prepare(args.dataset, common.CACHE_DIR / "eval", common.CACHE_DIR)
    stored = json.loads((prepared / "chunks.json").read_text())
    index = {c: i for i, c in enumerate(stored["ids"])}
    texts = [stored["texts"][index[c]] for c in data.chunk_ids]
    result = {
        "dataset": data.dataset,
        "split": data.split,
        "queries": len(data.qids),
        "command": common.command_line(),
        "dense": dense_rows(data, corpus),
        "lexical": lexical_rows(data, texts, corpus),
    }
    name = f"quality-branches-{data.dataset}-{data.split}"
    common.write_results(args.out, name, result, _markdown(result))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

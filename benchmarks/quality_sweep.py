"""Offline quality sweep: fusion methods, normalisations, weights, candidate fill-in,
query-adaptive weights, dense pseudo-relevance feedback and document aggregation, all
computed from the same branch data (``benchmarks/sweep_data.py``).

    python -m benchmarks.quality_sweep --dataset ../shared/data/beir/scifact --split train

Protocol (issue #17): defaults are chosen on SciFact's *train* queries only; the same
variants are then scored on SciFact test and CISI test, never to pick, only to confirm.
Every variant lands in ``benchmarks/results/quality-sweep-<dataset>-<split>.json``.

Fairness rules as in ``benchmarks.quality``: 100 candidates per branch, documents ranked
by their best chunk unless the row says otherwise (``agg=``).
"""

from __future__ import annotations

import argparse
import json
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import ir_measures
import numpy as np

from benchmarks import common
from benchmarks.sweep_data import SweepData, describe, load

CANDIDATES = 100
Scores = dict[int, float]


# -- per-query branch lists ---------------------------------------------------------------------


class Query:
    """One query's branch lists: top-``CANDIDATES`` per branch and the raw scores."""

    def __init__(self, data: SweepData, i: int, cos: np.ndarray | None = None) -> None:
        self.cos = data.cosines[i] if cos is None else cos
        self.sem_top = np.argsort(-self.cos, kind="stable")[:CANDIDATES]
        self.bm = data.bm25[i]
        lex = sorted(self.bm.items(), key=lambda kv: (-kv[1], kv[0]))[:CANDIDATES]
        self.lex_top = np.array([c for c, _ in lex], dtype=np.int64)
        self.lex_scores = np.array([s for _, s in lex], dtype=np.float64)
        self.sem_scores = self.cos[self.sem_top].astype(np.float64)
        self.ceiling = data.ceilings[i]
        self.union = np.array(sorted(set(self.sem_top.tolist()) | set(self.lex_top.tolist())))

    def raw(self, branch: str, fill: bool) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """(union chunks, score or nan, list scores) of a branch; with ``fill`` every
        union chunk gets its real score (BM25 0 when no term matches)."""
        if branch == "semantic":
            listed, scores = self.sem_top, self.sem_scores
            full = self.cos[self.union].astype(np.float64)
        else:
            listed, scores = self.lex_top, self.lex_scores
            full = np.array([self.bm.get(int(c), 0.0) for c in self.union])
        if fill:
            return self.union, full, scores
        mask = np.isin(self.union, listed)
        return self.union, np.where(mask, full, np.nan), scores


def normalise(
    values: np.ndarray, listed: np.ndarray, how: str, *, ceiling: float = 0.0, branch: str = ""
) -> np.ndarray:
    """Normalise ``values`` with the statistics of the branch's own list ``listed``."""
    if len(listed) == 0:
        return np.zeros_like(values)
    if how == "minmax":
        lo, hi = listed.min(), listed.max()
        return (values - lo) / (hi - lo) if hi > lo else np.ones_like(values)
    if how == "z":
        sd = listed.std()
        return (values - listed.mean()) / sd if sd > 0 else np.zeros_like(values)
    if how == "dbsf":
        mu, sd = listed.mean(), listed.std()
        lo, hi = mu - 3 * sd, mu + 3 * sd
        return np.clip((values - lo) / (hi - lo), 0, 1) if hi > lo else np.ones_like(values)
    if how == "calib":
        if branch == "semantic":
            return np.clip(values, 0, 1)
        return np.clip(values / ceiling, 0, 1) if ceiling > 0 else np.zeros_like(values)
    if how == "max":
        hi = listed.max()
        return values / hi if hi > 0 else np.zeros_like(values)
    msg = how
    raise ValueError(msg)


def fuse_scores(
    q: Query,
    how: str,
    alpha: float,
    *,
    fill: bool | str,
    missing: str = "zero",
    adaptive: str | None = None,
) -> tuple[np.ndarray, np.ndarray]:
    """Convex combination of normalised branch scores over the union (``fill``: True for
    both branches, or the one branch, "semantic" or "lexical", to fill in)."""
    parts = {}
    for branch in ("semantic", "lexical"):
        filled = fill is True or fill == branch
        _union, vals, listed = q.raw(branch, filled)
        norm = normalise(vals, listed, how, ceiling=q.ceiling, branch=branch)
        if not filled:
            if missing == "zero":
                fallback = 0.0
            else:  # the lowest normalised value of the list
                fallback = (
                    float(np.min(normalise(listed, listed, how, ceiling=q.ceiling, branch=branch)))
                    if len(listed)
                    else 0.0
                )
            norm = np.where(np.isnan(norm), fallback, norm)
        parts[branch] = norm
    a = alpha
    if adaptive:
        cs = confidence(q.sem_scores, adaptive)
        cl = confidence(q.lex_scores, adaptive)
        if cs + cl > 0:
            a = alpha * cs / (alpha * cs + (1 - alpha) * cl)
    return q.union, a * parts["semantic"] + (1 - a) * parts["lexical"]


def confidence(scores: np.ndarray, how: str) -> float:
    """How peaked a branch's list is (for query-adaptive weights)."""
    if len(scores) < 2:
        return 0.0
    sd = scores.std()
    if sd <= 0:
        return 0.0
    if how == "gap":
        return float((scores[0] - scores[1:10].mean()) / sd)
    if how == "top":
        return float((scores[0] - scores.mean()) / sd)
    msg = how
    raise ValueError(msg)


def rrf_scores(q: Query, k: float, w_sem: float) -> tuple[np.ndarray, np.ndarray]:
    out: dict[int, float] = {}
    for w, lst in ((w_sem, q.sem_top), (1.0, q.lex_top)):
        for r, c in enumerate(lst.tolist(), start=1):
            out[c] = out.get(c, 0.0) + w / (k + r)
    ids = np.array(list(out))
    return ids, np.array([out[c] for c in ids.tolist()])


# -- document ranking and scoring -------------------------------------------------------------


def doc_run(
    data: SweepData, chunks: np.ndarray, scores: np.ndarray, agg: str = "max", depth: int = 100
) -> dict[str, float]:
    docs = data.doc_of[chunks]
    if agg == "max":
        order = np.lexsort((chunks, -scores))
        seen: dict[int, float] = {}
        for j in order.tolist():
            d = int(docs[j])
            if d not in seen:
                seen[d] = float(len(seen))
                if len(seen) == depth:
                    break
        return {data.doc_ids[d]: float(depth - r) for d, r in seen.items()}
    # max + soft bonus from the document's other chunks: agg = "soft:<tau>" log-sum-exp
    tau = float(agg.split(":")[1])
    best: dict[int, list[float]] = {}
    for d, s in zip(docs.tolist(), scores.tolist()):
        best.setdefault(d, []).append(s)
    fused = {d: tau * float(np.log(np.exp(np.array(v) / tau).sum())) for d, v in best.items()}
    ranked = sorted(fused.items(), key=lambda kv: -kv[1])[:depth]
    return {data.doc_ids[d]: float(depth - r) for r, (d, _) in enumerate(ranked)}


MEASURES = [ir_measures.parse_measure("nDCG@10"), ir_measures.parse_measure("R@100")]


def score(data: SweepData, runs: dict[str, dict[str, float]]) -> dict[str, float]:
    agg = ir_measures.calc_aggregate(MEASURES, data.qrels, runs)
    return {str(m): round(float(agg[m]), 4) for m in MEASURES}


# -- variants ------------------------------------------------------------------------------------

Variant = Callable[[Query], tuple[np.ndarray, np.ndarray]]


def variants() -> Iterator[tuple[str, Variant, str]]:
    """(name, fuse function, document aggregation)."""
    yield "semantic", lambda q: (q.sem_top, q.sem_scores), "max"
    yield "lexical", lambda q: (q.lex_top, q.lex_scores), "max"
    for k in (20, 60):
        for w in (0.7, 1.0, 1.4):
            yield f"rrf k={k} w_sem={w}", lambda q, k=k, w=w: rrf_scores(q, k, w), "max"
    alphas = (0.3, 0.35, 0.4, 0.45, 0.5, 0.55, 0.6, 0.65, 0.7)
    for how in ("minmax", "z", "dbsf", "calib", "max"):
        for fill in (False, True):
            missings = ("zero", "min") if not fill and how in ("z", "dbsf") else ("zero",)
            for missing in missings:
                for a in alphas:
                    tag = "fill" if fill else f"missing={missing}"
                    name = f"convex {how} {tag} a={a}"
                    yield (
                        name,
                        lambda q, h=how, f=fill, m=missing, a=a: fuse_scores(
                            q, h, a, fill=f, missing=m
                        ),
                        "max",
                    )
    for how in ("minmax", "z", "dbsf"):
        for half in ("semantic", "lexical"):
            for a in alphas:
                yield (
                    f"convex {how} fill={half} only a={a}",
                    lambda q, h=how, f=half, a=a: fuse_scores(q, h, a, fill=f, missing="min"),
                    "max",
                )
    for how in ("minmax", "z", "dbsf"):
        for fill in (False, True):
            for adaptive in ("gap", "top"):
                for a in alphas:
                    tag = "fill" if fill else "missing=min"
                    name = f"convex {how} {tag} adaptive={adaptive} a={a}"
                    yield (
                        name,
                        lambda q, h=how, f=fill, ad=adaptive, a=a: fuse_scores(
                            q, h, a, fill=f, adaptive=ad, missing="min"
                        ),
                        "max",
                    )


def run_variants(data: SweepData, only: str | None = None) -> dict[str, dict[str, float]]:
    queries = [Query(data, i) for i in range(len(data.qids))]
    rows: dict[str, dict[str, float]] = {}
    for name, fn, agg in variants():
        if only and only not in name:
            continue
        runs = {}
        for qid, q in zip(data.qids, queries):
            chunks, scores = fn(q)
            runs[qid] = doc_run(data, chunks, scores, agg)
        rows[name] = score(data, runs)
    return rows


def run_extras(data: SweepData, base: tuple[str, float, bool]) -> dict[str, dict[str, float]]:
    """Document aggregation and dense PRF on top of one base fusion (how, alpha, fill)."""
    how, alpha, fill = base
    rows: dict[str, dict[str, float]] = {}
    queries = [Query(data, i) for i in range(len(data.qids))]
    label = f"convex {how} {'fill' if fill else 'missing=zero'} a={alpha}"
    for agg in ("soft:0.02", "soft:0.05", "soft:0.1"):
        runs = {}
        for qid, q in zip(data.qids, queries):
            chunks, scores = fuse_scores(q, how, alpha, fill=fill)
            runs[qid] = doc_run(data, chunks, scores, agg)
        rows[f"{label} agg={agg}"] = score(data, runs)
    vn = data.chunk_vectors / np.linalg.norm(data.chunk_vectors, axis=1, keepdims=True)
    for top in (3, 5, 10):
        for beta in (0.3, 0.6, 1.0):
            runs = {}
            for i, (qid, q) in enumerate(zip(data.qids, queries)):
                chunks, scores = fuse_scores(q, how, alpha, fill=fill)
                best = chunks[np.argsort(-scores, kind="stable")[:top]]
                qv = data.query_vectors[i] / np.linalg.norm(data.query_vectors[i])
                nv = qv + beta * vn[best].mean(axis=0)
                nv /= np.linalg.norm(nv)
                q2 = Query(data, i, cos=(vn @ nv).astype(np.float32))
                c2, s2 = fuse_scores(q2, how, alpha, fill=fill)
                runs[qid] = doc_run(data, c2, s2)
            rows[f"{label} dense-prf top={top} beta={beta}"] = score(data, runs)
    return rows


def run_bm25(
    data: SweepData, dataset_dir: str, points: str | None = None
) -> dict[str, dict[str, float]]:
    """Lexical alone and two fusions with BM25 recomputed for a grid of k1 / b / title
    weight (tantivy itself is fixed at k1=1.2, b=0.75, title weight 1)."""
    import dataclasses

    from benchmarks.quality import prepare
    from benchmarks.sweep_bm25 import Bm25Matrix

    prepared = prepare(dataset_dir, common.CACHE_DIR / "eval", common.CACHE_DIR)
    texts = json.loads((prepared / "chunks.json").read_text())["texts"]
    index = {c: i for i, c in enumerate(json.loads((prepared / "chunks.json").read_text())["ids"])}
    order = [index[c] for c in data.chunk_ids]
    matrix = Bm25Matrix([texts[i] for i in order])
    rows: dict[str, dict[str, float]] = {}
    grid = [(1.2, 0.75, 1.0)]
    grid += [
        (k1, b, 1.0)
        for k1 in (0.6, 0.9, 1.2, 1.5, 2.0)
        for b in (0.3, 0.5, 0.75, 0.9)
        if (k1, b) != (1.2, 0.75)
    ]
    grid += [(1.2, 0.75, w) for w in (0.0, 2.0, 3.0)]
    if points:  # "k1:b:title,..."
        grid = [tuple(float(x) for x in p.split(":")) for p in points.split(",")]  # type: ignore[misc]
    for k1, b, w in grid:
        bm = [matrix.scores(t, k1=k1, b=b, title_weight=w) for t in data.texts]
        d2 = dataclasses.replace(data, bm25=bm)
        queries = [Query(d2, i) for i in range(len(d2.qids))]
        tag = f"bm25 k1={k1} b={b} title={w}"
        for name, fn in (
            ("lexical", lambda q: (q.lex_top, q.lex_scores)),
            (
                "convex minmax missing=zero a=0.4",
                lambda q: fuse_scores(q, "minmax", 0.4, fill=False),
            ),
            ("convex minmax fill a=0.5", lambda q: fuse_scores(q, "minmax", 0.5, fill=True)),
        ):
            runs = {qid: doc_run(d2, *fn(q)) for qid, q in zip(d2.qids, queries)}
            rows[f"{tag} {name}"] = score(d2, runs)
        print(
            tag, rows[f"{tag} lexical"], rows[f"{tag} convex minmax missing=zero a=0.4"], flush=True
        )
    return rows


def main() -> None:
    p = argparse.ArgumentParser()
    p.add_argument("--dataset", required=True)
    p.add_argument("--split", default="test")
    p.add_argument("--only", default=None)
    p.add_argument("--extras", default=None, help="how,alpha,fill for the extra variants")
    p.add_argument("--bm25", action="store_true", help="sweep k1 / b / title weight")
    p.add_argument("--bm25-points", default=None, help="k1:b:title,... (default: a grid)")
    p.add_argument("--out", type=Path, default=common.RESULTS_DIR)
    args = p.parse_args()
    started = time.perf_counter()
    data = load(args.dataset, args.split)
    print(f"loaded {describe(data)} in {time.perf_counter() - started:.1f}s", flush=True)
    if args.bm25:
        rows = run_bm25(data, args.dataset, args.bm25_points)
        name = f"quality-sweep-bm25-{data.dataset}-{data.split}"
    elif args.extras:
        how, alpha, fill = args.extras.split(",")
        rows = run_extras(data, (how, float(alpha), fill == "fill"))
        name = f"quality-sweep-extras-{data.dataset}-{data.split}"
    else:
        rows = run_variants(data, args.only)
        name = f"quality-sweep-{data.dataset}-{data.split}"
    for n, r in sorted(rows.items(), key=lambda kv: -kv[1]["nDCG@10"])[:25]:
        print(f"{n:<55} nDCG@10={r['nDCG@10']:.4f} R@100={r['R@100']:.4f}")
    out = {
        **describe(data),
        "candidates": CANDIDATES,
        "command": common.command_line(),
        "rows": rows,
    }
    args.out.mkdir(parents=True, exist_ok=True)
    common.write_json(args.out / f"{name}.json", out)
    print(f"wrote {args.out / (name + '.json')}")


if __name__ == "__main__":
    main()

"""Sweep fusion settings on a cached BEIR index: RRF (k, weights) and convex (alpha).

Shows how the default fusion was chosen. Each branch runs once per query (candidates
chunks); fusion variants are then computed offline from those lists with the same pure
functions the retriever uses, so the sweep is cheap.

    python benchmarks/fusion_sweep.py ../shared/data/beir/scifact --cache benchmarks/.cache/eval
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import ir_measures

from remy_retriever import Retriever
from remy_retriever.evaluation.beir import load_beir, rank_documents
from remy_retriever.search.fusion import convex, rrf


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("beir_dir")
    parser.add_argument("--cache", default="benchmarks/.cache/eval")
    parser.add_argument("--candidates", type=int, default=100)
    parser.add_argument("--split", default="test", help="qrels split to score (e.g. train)")
    parser.add_argument("--out", default=None)
    args = parser.parse_args()
    dataset = load_beir(args.beir_dir, split=args.split)
    store = Path(args.cache) / f"{dataset.name}-{dataset.fingerprint}"
    if not store.exists():
        sys.exit(
            f"no cached index at {store}; run `remy eval {args.beir_dir} --cache {args.cache}`"
        )
    r = Retriever(store, collection="beir")
    branches = {}
    for qid, text in dataset.queries.items():
        branches[qid] = {
            "semantic": r.rank(text, mode="semantic", candidates=args.candidates),
            "lexical": r.rank(text, mode="lexical", candidates=args.candidates),
        }
    measure = ir_measures.parse_measure("nDCG@10")
    recall = ir_measures.parse_measure("R@100")

    def score(fuse) -> tuple[float, float]:  # type: ignore[no-untyped-def]
        run = {}
        for qid, lists in branches.items():
            docs = rank_documents(fuse(lists), 100)
            run[qid] = {d: float(100 - i) for i, d in enumerate(docs)}
        agg = ir_measures.calc_aggregate([measure, recall], dataset.qrels, run)
        return round(agg[measure], 4), round(agg[recall], 4)

    rows = {}
    rows["semantic"] = score(lambda b: b["semantic"])
    rows["lexical"] = score(lambda b: b["lexical"])
    for k in (10, 20, 40, 60, 100):
        for w in (0.5, 0.7, 1.0, 1.4, 2.0):
            rows[f"rrf k={k} w_sem={w}"] = score(
                lambda b, k=k, w=w: rrf(b, k=k, weights={"semantic": w, "lexical": 1.0})
            )
    for alpha in (0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8):
        rows[f"convex alpha={alpha}"] = score(
            lambda b, a=alpha: convex(b, weights={"semantic": a, "lexical": 1 - a})
        )
    best = sorted(rows.items(), key=lambda kv: -kv[1][0])
    for name, (ndcg, rec) in best:
        print(f"{name:<28} nDCG@10={ndcg:.4f}  R@100={rec:.4f}")
    if args.out:
        out = {"dataset": dataset.name, "split": args.split, "candidates": args.candidates}
        Path(args.out).write_text(json.dumps({**out, "rows": rows}, indent=2))


if __name__ == "__main__":
    main()

"""Branch lists for the cross-collection fusion benchmark (``benchmarks.cross_collection``).

Each judged query of a BEIR collection runs both branches once, through the search
pipeline's own calls (:func:`remy_retriever.search.tuning.collect`: ``candidates``
chunks per branch, the filled-in scores of both branches, the query's BM25 ceiling),
plus the idf of the query's analysed terms and the index's chunk count (the statistics
query-adaptive fusion reads). The lists land in one JSON file per collection, outside
the repository, so every fusion candidate is then computed offline.

    python -m benchmarks.cross_data ../shared/data/beir/lisa --cache /work/cache/eval \
        --out /work/cache/branches
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

from remy_retriever import Retriever
from remy_retriever.evaluation.beir import load_beir
from remy_retriever.search.calibration import query_term_counts
from remy_retriever.search.tuning import collect


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("beir_dir")
    parser.add_argument("--cache", required=True, help="the `remy eval --cache` directory")
    parser.add_argument("--candidates", type=int, default=100)
    parser.add_argument("--out", required=True, help="directory for <name>.json")
    args = parser.parse_args()
    dataset = load_beir(args.beir_dir)
    store = Path(args.cache) / f"{dataset.name}-{dataset.fingerprint}"
    if not store.exists():
        sys.exit(f"no cached index at {store}; run `remy eval {args.beir_dir} --cache ...`")
    started = time.perf_counter()
    r = Retriever(store, collection="beir")
    judged = {q: t for q, t in dataset.queries.items() if dataset.qrels.get(q)}
    items = collect(r._pipeline, judged, candidates=args.candidates)
    lexical = r._sync.lexical
    queries = []
    for item in items:
        terms = list(query_term_counts(judged[item.query_id]))
        queries.append(
            {
                "id": item.query_id,
                "text": judged[item.query_id],
                "branches": item.branches,
                "extra": item.extra,
                "ceiling": item.ceiling,
                "idf": lexical.idf(terms),
            }
        )
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    payload = {
        "dataset": dataset.name,
        "fingerprint": dataset.fingerprint,
        "candidates": args.candidates,
        "chunks": lexical.count(),
        "qrels": {q: dict(dataset.qrels[q]) for q in judged},
        "queries": queries,
        "seconds": round(time.perf_counter() - started, 1),
    }
    (out / f"{dataset.name}.json").write_text(json.dumps(payload))
    print(f"{dataset.name}: {len(queries)} queries in {payload['seconds']} s")


if __name__ == "__main__":
    main()

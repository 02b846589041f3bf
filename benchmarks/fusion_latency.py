"""Hybrid query latency: the previous default fusion against the current one, in one run,
interleaved query by query (the machine is shared: read the ratio, not the milliseconds).

    python -m benchmarks.fusion_latency --dataset ../shared/data/beir/scifact

Cached query vectors (``benchmarks/.cache/quality``), the ``remy eval`` index
(``benchmarks/.cache/eval``), 100 candidates per branch, ``Retriever.rank``.
"""

from __future__ import annotations

import argparse
import json
import time
from typing import Any

import numpy as np

from benchmarks import common
from benchmarks.quality import prepare
from remy_retriever import Retriever
from remy_retriever.evaluation.beir import load_beir
from remy_retriever.search.tuning import defaults

#: The default before issue #17: convex, min-max, alpha 0.4, no fill-in, fixed weights.
PREVIOUS = {
    "fusion": "convex",
    "alpha": 0.4,
    "normalization": "minmax",
    "fill": "none",
    "adaptive": False,
}


def main() -> None:
    p = argparse.ArgumentParser()
    p.add_argument("--dataset", action="append", required=True)
    p.add_argument("--rounds", type=int, default=2)
    args = p.parse_args()
    out: dict[str, Any] = {
        "benchmark": "fusion-latency",
        "command": common.command_line(),
        "previous": PREVIOUS,
        "current": defaults(),
        "machine": common.machine(),
        "datasets": {},
    }
    for path in args.dataset:
        ds = load_beir(path)
        prepared = prepare(path, common.CACHE_DIR / "eval", common.CACHE_DIR)
        chunks = json.loads((prepared / "chunks.json").read_text())
        queries = json.loads((prepared / "queries.json").read_text())
        embedder = common.CachedEmbedder(
            common.VectorTable(chunks["texts"], np.load(prepared / "chunks.npy")),
            common.VectorTable(queries["texts"], np.load(prepared / "queries.npy")),
        )
        store = common.CACHE_DIR / "eval" / f"{ds.name}-{ds.fingerprint}"
        times: dict[str, list[float]] = {"previous": [], "current": []}
        with Retriever(store, collection="beir", embedder=embedder) as r:
            texts = list(ds.queries.values())
            for q in texts[:5]:  # warm-up
                r.rank(q, **PREVIOUS)
                r.rank(q, **defaults())
            for _ in range(args.rounds):
                for q in texts:
                    for name, config in (("previous", PREVIOUS), ("current", defaults())):
                        t0 = time.perf_counter()
                        r.rank(q, candidates=100, **config)
                        times[name].append((time.perf_counter() - t0) * 1000)
        prev, cur = common.summarize(times["previous"]), common.summarize(times["current"])
        out["datasets"][ds.name] = {
            "previous": prev,
            "current": cur,
            "p50_ratio": round(cur["p50_ms"] / prev["p50_ms"], 3),
            "p95_ratio": round(cur["p95_ms"] / prev["p95_ms"], 3),
        }
        print(ds.name, out["datasets"][ds.name], flush=True)
    out["machine"] = common.finish_machine(out["machine"])
    target = common.RESULTS_DIR / "fusion-latency.json"
    common.write_json(target, out)
    print(f"wrote {target}")


if __name__ == "__main__":
    main()

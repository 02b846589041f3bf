"""How much int8 quality moves with batching alone (issue #18).

    python -m benchmarks.int8_variance --dataset ../shared/data/beir/cisi --seeds 5

Dynamic int8 quantization takes one activation scale per batch, so an int8 vector
depends a little on the texts it shares a batch with. This ingests the same corpus
several times through ``Retriever.add`` with ``embedder_backend="onnx-int8"``, the
documents in a different random order each time (so the chunks meet other batch
neighbours), and scores each store's semantic (exact kNN and HNSW) and default-hybrid
nDCG@10 on the judged test queries, with the query-vector cache cleared. The fp32
store (the vectors of torch, batch-independent) is measured once as the reference.
"""

from __future__ import annotations

import argparse
import random
import statistics
import tempfile
from pathlib import Path
from typing import Any

from benchmarks import common
from benchmarks.onnx_backends import _exact_ranker


def _measure(ds: Any, docs: list[Any], backend: str, tmp: Path) -> dict[str, float]:
    from remy_retriever import Retriever
    from remy_retriever.evaluation.beir import evaluate
    from remy_retriever.search.query_cache import QUERY_VECTORS

    out: dict[str, float] = {}
    with Retriever(tmp, collection="bench", embedder_backend=backend, progress=False) as r:
        r.add(docs)
        for mode in ("semantic", "hybrid"):
            QUERY_VECTORS.clear()
            got = evaluate(ds, lambda q, mode=mode: r.rank(q, mode=mode, candidates=100))
            out[mode] = round(got["nDCG@10"], 4)
        QUERY_VECTORS.clear()
        out["semantic-exact"] = round(evaluate(ds, _exact_ranker(r, r.embedder))["nDCG@10"], 4)
    return out


def run(args: argparse.Namespace) -> dict[str, Any]:
    from remy_retriever.evaluation.beir import load_beir

    ds = load_beir(str(args.dataset))
    docs = ds.documents()
    runs = []
    with tempfile.TemporaryDirectory() as tmp:
        reference = _measure(ds, docs, "onnx", Path(tmp) / "fp32")
        print("fp32", reference, flush=True)
        for seed in range(args.seeds):
            order = list(docs)
            random.Random(seed).shuffle(order)
            got = _measure(ds, order, "onnx-int8", Path(tmp) / f"int8-{seed}")
            runs.append({"seed": seed, **got})
            print("int8 seed", seed, got, flush=True)
    losses = {
        mode: [round(reference[mode] - r[mode], 4) for r in runs]
        for mode in ("semantic", "semantic-exact", "hybrid")
    }
    summary = {
        mode: {
            "mean": round(statistics.mean(v), 4),
            "sd": round(statistics.stdev(v), 4) if len(v) > 1 else 0.0,
            "min": min(v),
            "max": max(v),
        }
        for mode, v in losses.items()
    }
    return {
        "dataset": ds.name,
        "queries": len(ds.queries),
        "fp32": reference,
        "int8": runs,
        "loss": summary,
    }


def _markdown(data: dict[str, Any]) -> str:
    r = data["result"]

    def cells(run: dict[str, Any]) -> list[str]:
        return [f"{run[m]:.4f}" for m in ("semantic", "semantic-exact", "hybrid")]

    rows = [["fp32 (reference)", "–", *cells(r["fp32"])]]
    rows += [["int8", str(run["seed"]), *cells(run)] for run in r["int8"]]
    loss = common.md_table(
        ["nDCG@10 loss vs fp32", "mean", "sd", "min", "max"],
        [
            [mode, f"{s['mean']:+.4f}", f"{s['sd']:.4f}", f"{s['min']:+.4f}", f"{s['max']:+.4f}"]
            for mode, s in r["loss"].items()
        ],
    )
    return (
        common.header_md("int8 quality under different batching", data)
        + f"\n{r['dataset']}, {r['queries']} judged queries; each int8 row ingests the "
        "documents in another random order.\n\n"
        + common.md_table(
            ["store", "shuffle seed", "semantic (HNSW)", "semantic (exact)", "hybrid"], rows
        )
        + "\n\n"
        + loss
        + "\n"
    )


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--dataset", type=Path, required=True)
    p.add_argument("--seeds", type=int, default=5)
    p.add_argument("--out", type=Path, default=common.RESULTS_DIR)
    p.add_argument("--name", default="int8-variance")
    args = p.parse_args()
    return common.run_and_publish(args, "int8_variance", run, _markdown)


if __name__ == "__main__":
    raise SystemExit(main())

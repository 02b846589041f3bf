"""Embedder backends in one run: torch vs ONNX Runtime fp32 vs ONNX Runtime int8.

For each dataset and backend, one worker process (so that one backend's threads and
memory never touch another's):

- ingest throughput: ``Retriever.add`` of the corpus (or its first ``--max-docs``
  documents), embedding included, in chunks/s; the embedding's share is timed apart;
- single-query embedding: ``embed_query`` on the judged queries, one at a time, p50/p95;
- quality: nDCG@10 (ir-measures, through ``remy_retriever.evaluation``) over the full
  corpus in semantic mode (the embedder alone decides) and in hybrid mode (the default
  fusion); the query-vector cache is cleared first, so every query is embedded.

The torch backend runs sentence-transformers with torch's own thread count (every core);
the ONNX backends use the library defaults (ingest: every core; queries: one thread).
The machine's CPU flags (AVX2, AVX-512, VNNI) and load average are recorded: the machine
is shared, so compare backends within one run, as ratios.

    python -m benchmarks.onnx_backends --dataset /work/shared/data/beir/scifact \\
        --dataset /work/shared/data/beir/cisi
"""

from __future__ import annotations

import argparse
import json
import os
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from benchmarks import common

BACKENDS = ("torch", "onnx", "onnx-int8")
_FLAGS = ("avx2", "avx512f", "avx512_vnni", "avx_vnni", "avx512_bf16", "amx_int8")


def cpu_flags() -> dict[str, bool]:
    try:
        text = Path("/proc/cpuinfo").read_text()
    except OSError:
        return {}
    flags: set[str] = set()
    for line in text.splitlines():
        if line.startswith("flags"):
            flags.update(line.split(":", 1)[1].split())
            break
    return {f: f in flags for f in _FLAGS}


# -- worker: one backend on one dataset -----------------------------------------------------


class TimedEmbedder:
    """Wraps an embedder and adds up the time spent in ``embed_documents``."""

    def __init__(self, inner: Any) -> None:
        self.inner = inner
        self.model_id = inner.model_id
        self.backend = inner.backend
        self.quantization = inner.quantization
        self.embed_s = 0.0

    @property
    def max_tokens(self) -> int:
        return int(self.inner.max_tokens)

    def count_tokens(self, texts: Sequence[str]) -> list[int]:
        return list(self.inner.count_tokens(texts))

    def embed_documents(self, texts: Sequence[str]) -> Any:
        t0 = time.perf_counter()
        try:
            return self.inner.embed_documents(texts)
        finally:
            self.embed_s += time.perf_counter() - t0

    def embed_query(self, text: str) -> Any:
        return self.inner.embed_query(text)


def worker(args: argparse.Namespace) -> dict[str, Any]:
    from remy_retriever import Retriever
    from remy_retriever.embeddings import make_embedder
    from remy_retriever.evaluation import evaluate, load_beir
    from remy_retriever.search.query_cache import QUERY_VECTORS

    out: dict[str, Any] = {"backend": args.backend, "load_average_start": common.load_average()}
    t0 = time.perf_counter()
    embedder = make_embedder(None, args.backend)
    embedder.embed_query("warm up")  # loads the model (ONNX: exports on first use)
    embedder.embed_documents(["warm up", "a second warm-up text"])
    out["load_s"] = round(time.perf_counter() - t0, 2)
    ds = load_beir(args.dataset)
    docs = ds.documents()
    ingest_docs = docs[: args.max_docs] if args.max_docs else docs
    timed = TimedEmbedder(embedder)
    with tempfile.TemporaryDirectory() as tmp:
        r = Retriever(Path(tmp) / "store", collection="bench", embedder=timed, progress=False)
        timed.embed_s = 0.0  # opening embedded the identity probe
        t0 = time.perf_counter()
        r.add(ingest_docs)
        add_s = time.perf_counter() - t0
        chunks = r.count()
        out["ingest"] = {
            "documents": len(ingest_docs),
            "chunks": chunks,
            "add_s": round(add_s, 2),
            "embed_s": round(timed.embed_s, 2),
            "chunks_per_s": round(chunks / add_s, 2),
            "embedding_share_pct": round(100 * timed.embed_s / add_s, 1),
        }
        if len(ingest_docs) < len(docs):
            r.add(docs[len(ingest_docs) :])
        queries = list(ds.queries.values())[: args.max_queries]
        _, lat = common.time_calls(embedder.embed_query, queries, warmup=5)
        out["query_embedding"] = common.summarize(lat)
        quality = {}
        for mode in ("semantic", "hybrid"):
            QUERY_VECTORS.clear()
            scores = evaluate(ds, lambda q, mode=mode: r.rank(q, mode=mode, candidates=100))
            quality[mode] = {k: round(v, 4) for k, v in scores.items()}
        out["quality"] = quality
        r.close()
    out["load_average_end"] = common.load_average()
    out["peak_rss_mib"] = common.peak_rss_mib()
    return out


# -- the run --------------------------------------------------------------------------------


def run(args: argparse.Namespace) -> dict[str, Any]:
    results: dict[str, Any] = {"cpu_flags": cpu_flags(), "datasets": {}}
    for dataset in args.dataset:
        name = Path(dataset).resolve().name
        per: dict[str, Any] = {}
        for backend in args.backends:
            print(f"[onnx_backends] {name}: {backend}", flush=True)
            extra = ["--max-docs", str(args.max_docs)] if args.max_docs else []
            per[backend] = common.run_worker(
                "benchmarks.onnx_backends",
                [
                    "--worker",
                    "--dataset",
                    dataset,
                    "--backend",
                    backend,
                    "--max-queries",
                    str(args.max_queries),
                    *extra,
                ],
            )
        results["datasets"][name] = per
    results["ratios"] = _ratios(results)
    return results


def _ratios(results: dict[str, Any]) -> dict[str, Any]:
    """Each ONNX backend against torch in the same run (targets from issue #18)."""
    out: dict[str, Any] = {}
    for name, per in results["datasets"].items():
        base = per.get("torch", {})
        if "error" in base or not base:
            continue
        rows: dict[str, Any] = {}
        for backend, res in per.items():
            if backend == "torch" or "error" in res:
                continue
            rows[backend] = {
                "ingest_speedup": round(
                    res["ingest"]["chunks_per_s"] / base["ingest"]["chunks_per_s"], 2
                ),
                "query_p50_ratio": round(
                    res["query_embedding"]["p50_ms"] / base["query_embedding"]["p50_ms"], 3
                ),
                "ndcg10_loss_semantic": round(
                    base["quality"]["semantic"]["nDCG@10"] - res["quality"]["semantic"]["nDCG@10"],
                    4,
                ),
                "ndcg10_loss_hybrid": round(
                    base["quality"]["hybrid"]["nDCG@10"] - res["quality"]["hybrid"]["nDCG@10"], 4
                ),
            }
        out[name] = rows
    return out


def _markdown(data: dict[str, Any]) -> str:
    r = data["result"]
    flags = ", ".join(f"{k} {'yes' if v else 'no'}" for k, v in r["cpu_flags"].items())
    parts = [common.header_md("Embedder backends: torch vs ONNX fp32 vs ONNX int8", data)]
    parts.append(f"CPU flags: {flags}.\n")
    rows = []
    for name, per in r["datasets"].items():
        for backend, res in per.items():
            if "error" in res:
                rows.append([name, backend, f"error: {res['error']}", *[""] * 7])
                continue
            ing, q, qual = res["ingest"], res["query_embedding"], res["quality"]
            rows.append(
                [
                    name,
                    backend,
                    f"{ing['chunks_per_s']:.1f}",
                    f"{ing['chunks']} / {ing['add_s']:.0f} s",
                    f"{ing['embedding_share_pct']:.0f}%",
                    f"{q['p50_ms']:.1f}",
                    f"{q['p95_ms']:.1f}",
                    f"{qual['semantic']['nDCG@10']:.4f}",
                    f"{qual['hybrid']['nDCG@10']:.4f}",
                    f"{res['load_average_start']} -> {res['load_average_end']}",
                ]
            )
    parts.append(
        common.md_table(
            [
                "dataset",
                "backend",
                "ingest chunks/s",
                "chunks / time",
                "embedding share",
                "query p50 ms",
                "query p95 ms",
                "nDCG@10 semantic",
                "nDCG@10 hybrid",
                "load average",
            ],
            rows,
        )
    )
    ratio_rows = []
    for name, per in r["ratios"].items():
        for backend, x in per.items():
            ratio_rows.append(
                [
                    name,
                    backend,
                    f"{x['ingest_speedup']:.2f}x",
                    f"{x['query_p50_ratio']:.3f}x",
                    f"{x['ndcg10_loss_semantic']:+.4f}",
                    f"{x['ndcg10_loss_hybrid']:+.4f}",
                ]
            )
    parts.append("\nAgainst torch in the same run (targets: ingest >= 2x, query p50 <= 0.5x, ")
    parts.append("nDCG@10 loss <= 0.005 int8, 0.000 fp32):\n")
    parts.append(
        common.md_table(
            [
                "dataset",
                "backend",
                "ingest speed-up",
                "query p50 ratio",
                "nDCG@10 loss semantic",
                "nDCG@10 loss hybrid",
            ],
            ratio_rows,
        )
    )
    return "\n".join(parts)


def _plot(data: dict[str, Any], path: Path) -> None:
    plt = common.plt()
    r = data["result"]
    names = list(r["datasets"])
    fig, axes = plt.subplots(1, 3, figsize=(12, 4))
    metrics = [
        ("ingest chunks/s", lambda res: res["ingest"]["chunks_per_s"]),
        ("query embedding p50 ms", lambda res: res["query_embedding"]["p50_ms"]),
        ("nDCG@10 (semantic)", lambda res: res["quality"]["semantic"]["nDCG@10"]),
    ]
    width = 0.8 / len(BACKENDS)
    for ax, (title, get) in zip(axes, metrics):
        for i, backend in enumerate(BACKENDS):
            values = []
            for name in names:
                res = r["datasets"][name].get(backend, {})
                values.append(get(res) if res and "error" not in res else 0.0)
            xs = [j + (i - 1) * width for j in range(len(names))]
            ax.bar(xs, values, width, label=backend)
        ax.set_xticks(range(len(names)))
        ax.set_xticklabels(names)
        ax.set_title(title, fontsize=10)
    axes[0].legend()
    fig.suptitle("all-MiniLM-L6-v2: torch vs ONNX Runtime fp32 vs int8 (one run)", fontsize=11)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def main(argv: Sequence[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--dataset", action="append", required=True, help="BEIR folder (repeat)")
    p.add_argument("--backends", nargs="+", default=list(BACKENDS), choices=BACKENDS)
    p.add_argument("--max-docs", type=int, default=None, help="SciFact ingest timed on N docs")
    p.add_argument("--max-queries", type=int, default=200, help="queries timed one by one")
    p.add_argument("--out", type=Path, default=common.RESULTS_DIR)
    p.add_argument("--name", default="onnx-backends")
    p.add_argument("--render", action="store_true", help="re-render MD/PNG from the JSON")
    p.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    p.add_argument("--worker-out", help=argparse.SUPPRESS)
    p.add_argument("--backend", help=argparse.SUPPRESS)
    args = p.parse_args(argv)
    if args.worker:
        args.dataset = args.dataset[0]
        common.write_worker_output(args.worker_out, worker(args))
        return 0
    if args.render:
        data = json.loads((args.out / f"{args.name}.json").read_text())
        common.write_results(args.out, args.name, data, _markdown(data))
        _plot(data, args.out / f"{args.name}.png")
        return 0
    os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
    return common.run_and_publish(
        args,
        "onnx_backends",
        run,
        _markdown,
        _plot,
        datasets=[Path(d).resolve().name for d in args.dataset],
        max_docs=args.max_docs,
    )


if __name__ == "__main__":
    raise SystemExit(main())

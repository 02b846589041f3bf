"""Embedder backends in one run: torch vs ONNX Runtime fp32 vs ONNX Runtime int8.

For each dataset and backend, one worker process (so that one backend's threads and
memory never touch another's):

- ingest throughput: ``Retriever.add`` of the corpus (or its first ``--max-docs``
  documents), embedding included, in chunks/s; the embedding's share is timed apart;
- single-query embedding: ``embed_query`` on the judged queries, one at a time, p50/p95;
- quality: nDCG@10 (ir-measures, through ``remy_retriever.evaluation.beir``) over the full
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
from concurrent.futures import ThreadPoolExecutor
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


def worker(args: argparse.Namespace) -> dict[str, Any]:
    from remy_retriever import Retriever
    from remy_retriever.evaluation.beir import evaluate, load_beir
    from remy_retriever.models.embeddings import make_embedder
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
    timed = common.TimedEmbedder(embedder)
    with tempfile.TemporaryDirectory() as tmp:
        r = Retriever(Path(tmp) / "store", collection="bench", embedder=timed, progress=False)
        timed.reset()  # opening embedded the identity probe
        t0 = time.perf_counter()
        r.add(ingest_docs)
        add_s = time.perf_counter() - t0
        chunks = r.count()
        out["ingest"] = {
            "documents": len(ingest_docs),
            "chunks": chunks,
            "add_s": round(add_s, 2),
            "embed_s": round(timed.seconds, 2),
            "chunks_per_s": round(chunks / add_s, 2),
            "embedding_share_pct": round(100 * timed.seconds / add_s, 1),
        }
        queries = list(ds.queries.values())[: args.max_queries]
        _, lat = common.time_calls(embedder.embed_query, queries, warmup=5)
        out["query_embedding"] = common.summarize(lat)
        if args.backend in args.quality_backends:
            if len(ingest_docs) < len(docs):
                r.add(docs[len(ingest_docs) :])
            quality = {}
            for mode in ("semantic", "hybrid"):
                QUERY_VECTORS.clear()
                scores = evaluate(ds, lambda q, mode=mode: r.rank(q, mode=mode, candidates=100))
                quality[mode] = {k: round(v, 4) for k, v in scores.items()}
            # Exact nearest neighbours over the stored vectors: the embedder alone, without
            # HNSW's approximation (which tiny vector differences can steer).
            scores = evaluate(ds, _exact_ranker(r, embedder))
            quality["semantic-exact"] = {k: round(v, 4) for k, v in scores.items()}
            out["quality"] = quality
            out["corpus_chunks"] = r.count()
        r.close()
    out["load_average_end"] = common.load_average()
    out["peak_rss_mib"] = common.peak_rss_mib()
    return out


def _exact_ranker(r: Any, embedder: Any) -> Any:
    import numpy as np

    got = r._sync.dense.collection.get(include=["embeddings"])
    ids = list(got["ids"])
    matrix = np.asarray(got["embeddings"], dtype=np.float32)
    matrix /= np.linalg.norm(matrix, axis=1, keepdims=True)

    def rank(query: str) -> list[tuple[str, float]]:
        vector = np.asarray(embedder.embed_query(query), dtype=np.float32)
        scores = matrix @ (vector / np.linalg.norm(vector))
        top = np.argsort(-scores, kind="stable")[:200]
        return [(ids[i], float(scores[i])) for i in top]

    return rank


def round_robin(args: argparse.Namespace) -> dict[str, Any]:
    """Single-query embedding latency of every backend in one process, one query at a
    time in turn (torch on its default threads and on one thread), so that all of them
    see the same moment's load."""
    import torch

    from remy_retriever.evaluation.beir import load_beir
    from remy_retriever.models.embeddings import make_embedder

    default_threads = torch.get_num_threads()
    embedders = {b: make_embedder(None, b) for b in BACKENDS}
    queries = list(load_beir(args.dataset).queries.values())[: args.max_queries]
    for emb in embedders.values():
        for q in queries[:5]:
            emb.embed_query(q)
    systems = [(f"torch ({default_threads} threads)", "torch", default_threads)]
    systems += [("torch (1 thread)", "torch", 1), ("onnx", "onnx", None)]
    systems += [("onnx-int8", "onnx-int8", None)]
    lat: dict[str, list[float]] = {name: [] for name, _, _ in systems}
    for q in queries:
        for name, backend, threads in systems:
            if threads is not None:
                torch.set_num_threads(threads)
            t0 = time.perf_counter()
            embedders[backend].embed_query(q)
            lat[name].append((time.perf_counter() - t0) * 1000)
    torch.set_num_threads(default_threads)
    return {
        "load_average": common.load_average(),
        "queries": len(queries),
        "latency": {name: common.summarize(v) for name, v in lat.items()},
    }


# -- the run --------------------------------------------------------------------------------


def run(args: argparse.Namespace) -> dict[str, Any]:
    results: dict[str, Any] = {
        "cpu_flags": cpu_flags(),
        "schedule": "side by side" if args.parallel else "one after another",
        "datasets": {},
    }
    for dataset in args.dataset:
        name = Path(dataset).resolve().name
        extra = ["--max-docs", str(args.max_docs)] if args.max_docs else []

        def one(backend: str, dataset: str = dataset, extra: list[str] = extra) -> Any:
            print(f"[onnx_backends] {Path(dataset).name}: {backend}", flush=True)
            return common.run_worker(
                "benchmarks.onnx_backends",
                [
                    "--worker",
                    "--dataset",
                    dataset,
                    "--backend",
                    backend,
                    "--max-queries",
                    str(args.max_queries),
                    "--quality-backends",
                    *args.quality_backends,
                    *extra,
                ],
            )

        if args.parallel:
            # All backends at once, under the same outside load. Torch, the slowest,
            # finishes alone, with more of the machine: this favours torch.
            with ThreadPoolExecutor(len(args.backends)) as pool:
                done = list(pool.map(one, args.backends))
            per = dict(zip(args.backends, done))
        else:
            per = {backend: one(backend) for backend in args.backends}
        results["datasets"][name] = per
    if args.reference is not None:
        ref = json.loads(args.reference.read_text())
        for entry in ref.get("datasets", []):
            ours = entry["systems"]["ours"]["modes"]["semantic"]["nDCG@10"]
            results.setdefault("torch_reference", {})[entry["dataset"]] = {
                "semantic_ndcg10": round(ours, 4),
                "source": f"{args.reference.name} ({ref['machine']['date']}, same chunks)",
            }
    if args.round_robin:
        print("[onnx_backends] round-robin query latency", flush=True)
        results["round_robin"] = common.run_worker(
            "benchmarks.onnx_backends",
            [
                "--worker",
                "--round-robin",
                "--dataset",
                args.dataset[0],
                "--max-queries",
                str(args.max_queries),
            ],
        )
    results["ratios"] = _ratios(results)
    return results


def _ratios(results: dict[str, Any]) -> dict[str, Any]:
    """Each ONNX backend against torch in the same run (targets from issue #18)."""
    out: dict[str, Any] = {}
    for name, per in results["datasets"].items():
        base = per.get("torch", {})
        if "error" in base or not base:
            continue
        reference = results.get("torch_reference", {}).get(name)
        rows: dict[str, Any] = {}
        for backend, res in per.items():
            if backend == "torch" or "error" in res:
                continue
            row: dict[str, Any] = {
                "ingest_speedup": round(
                    res["ingest"]["chunks_per_s"] / base["ingest"]["chunks_per_s"], 2
                ),
                "query_p50_ratio": round(
                    res["query_embedding"]["p50_ms"] / base["query_embedding"]["p50_ms"], 3
                ),
            }
            for mode in ("semantic", "semantic-exact", "hybrid"):
                mine = res.get("quality", {}).get(mode, {}).get("nDCG@10")
                theirs = base.get("quality", {}).get(mode, {}).get("nDCG@10")
                if theirs is None and mode == "semantic" and reference is not None:
                    theirs = reference["semantic_ndcg10"]
                    row["torch_quality_from"] = reference["source"]
                if mine is not None and theirs is not None:
                    row[f"ndcg10_loss_{mode.replace('-', '_')}"] = round(theirs - mine, 4)
            rows[backend] = row
        out[name] = rows
    return out


def _markdown(data: dict[str, Any]) -> str:
    r = data["result"]
    flags = ", ".join(f"{k} {'yes' if v else 'no'}" for k, v in r["cpu_flags"].items())
    parts = [common.header_md("Embedder backends: torch vs ONNX fp32 vs ONNX int8", data)]
    parts.append(f"CPU flags: {flags}.\n")
    if r["datasets"] and any(r["datasets"].values()):
        schedule = r.get("schedule", "one after another")
        parts.append(f"Backends ran {schedule}, each in its own process.\n")
    rows = []
    for name, per in r["datasets"].items():
        for backend, res in per.items():
            if "error" in res:
                rows.append([name, backend, f"error: {res['error']}", *[""] * 8])
                continue
            ing, q, qual = res["ingest"], res["query_embedding"], res.get("quality")
            ref = r.get("torch_reference", {}).get(name)
            if qual is None:
                stand_in = f"{ref['semantic_ndcg10']:.4f} (reference)" if ref else "not run"
                qual = {"semantic": {"nDCG@10": stand_in}}
            rows.append(
                [
                    name,
                    backend,
                    f"{ing['chunks_per_s']:.1f}",
                    f"{ing['chunks']} / {ing['add_s']:.0f} s",
                    f"{ing['embedding_share_pct']:.0f}%",
                    f"{q['p50_ms']:.1f}",
                    f"{q['p95_ms']:.1f}",
                    _num(qual["semantic"]["nDCG@10"]),
                    _num(qual.get("semantic-exact", {}).get("nDCG@10", "not run")),
                    _num(qual.get("hybrid", {}).get("nDCG@10", "not run")),
                    f"{res['load_average_start']} -> {res['load_average_end']}",
                ]
            )
    if rows:
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
                    "nDCG@10 semantic (HNSW)",
                    "nDCG@10 semantic (exact)",
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
                    _signed(x.get("ndcg10_loss_semantic")),
                    _signed(x.get("ndcg10_loss_semantic_exact")),
                    _signed(x.get("ndcg10_loss_hybrid")),
                ]
            )
    if ratio_rows:
        parts.append("\nAgainst torch in the same run (targets: ingest >= 2x, query p50 <= 0.5x, ")
        parts.append("nDCG@10 loss <= 0.005 int8, 0.000 fp32):\n")
        parts.append(
            common.md_table(
                [
                    "dataset",
                    "backend",
                    "ingest speed-up",
                    "query p50 ratio",
                    "nDCG@10 loss semantic (HNSW)",
                    "nDCG@10 loss semantic (exact)",
                    "nDCG@10 loss hybrid",
                ],
                ratio_rows,
            )
        )
    rr = r.get("round_robin")
    if rr and "error" not in rr:
        parts.append(
            f"\nSingle-query embedding, every backend in turn in one process "
            f"({rr['queries']} queries, load average {rr['load_average']}):\n"
        )
        rr_rows = [
            [name, f"{v['p50_ms']:.1f}", f"{v['p95_ms']:.1f}"] for name, v in rr["latency"].items()
        ]
        parts.append(common.md_table(["backend", "p50 ms", "p95 ms"], rr_rows))
    refs = r.get("torch_reference", {})
    for name, ref in refs.items():
        parts.append(
            f"\n{name}: torch's nDCG@10 was not measured in this run (a full torch embedding "
            f"of the corpus takes over an hour on this loaded machine); its semantic nDCG@10 "
            f"comes from {ref['source']}, and hybrid is not compared there.\n"
        )
    return "\n".join(parts)


def _num(value: Any) -> str:
    return f"{value:.4f}" if isinstance(value, (int, float)) else str(value)


def _signed(value: Any) -> str:
    return f"{value:+.4f}" if isinstance(value, (int, float)) else "n/a"


def _plot(data: dict[str, Any], path: Path) -> None:
    plt = common.plt()
    r = data["result"]
    names = list(r["datasets"])
    fig, axes = plt.subplots(1, 3, figsize=(12, 4))
    metrics = [
        ("ingest chunks/s", lambda res: res["ingest"]["chunks_per_s"]),
        ("query embedding p50 ms", lambda res: res["query_embedding"]["p50_ms"]),
        (
            "nDCG@10 (semantic)",
            lambda res: res.get("quality", {}).get("semantic", {}).get("nDCG@10", 0.0),
        ),
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
    common.save_figure(fig, path)


def main(argv: Sequence[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--dataset", action="append", required=True, help="BEIR folder (repeat)")
    p.add_argument("--backends", nargs="*", default=list(BACKENDS), choices=BACKENDS)
    p.add_argument("--max-docs", type=int, default=None, help="SciFact ingest timed on N docs")
    p.add_argument("--max-queries", type=int, default=200, help="queries timed one by one")
    p.add_argument(
        "--quality-backends",
        nargs="*",
        default=list(BACKENDS),
        choices=BACKENDS,
        help="backends whose nDCG@10 is measured on the full corpus (the others: ingest "
        "and query timing only)",
    )
    p.add_argument(
        "--reference",
        type=Path,
        default=None,
        help="a benchmarks.quality JSON whose 'ours' semantic nDCG@10 stands in for torch's "
        "when torch is not in --quality-backends",
    )
    p.add_argument(
        "--round-robin",
        action="store_true",
        help="also time single queries of every backend in turn, in one process",
    )
    p.add_argument(
        "--parallel", action="store_true", help="run the backends side by side (same load)"
    )
    p.add_argument("--out", type=Path, default=common.RESULTS_DIR)
    p.add_argument("--name", default="onnx-backends")
    p.add_argument("--render", action="store_true", help="re-render MD/PNG from the JSON")
    p.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    p.add_argument("--worker-out", help=argparse.SUPPRESS)
    p.add_argument("--backend", help=argparse.SUPPRESS)
    args = p.parse_args(argv)
    if args.worker:
        args.dataset = args.dataset[0]
        common.write_worker_output(
            args.worker_out, round_robin(args) if args.round_robin else worker(args)
        )
        return 0
    if args.render:
        data = json.loads((args.out / f"{args.name}.json").read_text())
        data["result"]["ratios"] = _ratios(data["result"])
        common.write_results(args.out, args.name, data, _markdown(data))
        if any(data["result"]["datasets"].values()):
            _plot(data, args.out / f"{args.name}.png")
        return 0
    os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
    return common.run_and_publish(
        args,
        "onnx_backends",
        run,
        _markdown,
        _plot if args.backends else None,
        datasets=[Path(d).resolve().name for d in args.dataset],
        max_docs=args.max_docs,
    )


if __name__ == "__main__":
    raise SystemExit(main())

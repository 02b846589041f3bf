"""Retrieval quality and query cost on BEIR folders: remy-retriever vs LangChain and
LlamaIndex hybrids, all on identical chunks and identical cached MiniLM vectors.

    python -m benchmarks.quality --dataset ../shared/data/beir/scifact \
        --dataset ../shared/data/beir/cisi

Chunks are ours (``Retriever.add`` with all-MiniLM-L6-v2's tokenizer, 256 tokens); their
vectors are read once from a ``remy eval`` index (``--eval-cache``, built there if missing)
and the judged queries are embedded once; both are cached under
``benchmarks/.cache/quality/``. Every system gets the same chunks, the same vectors, the
same 100 candidates per branch, the same query-vector lookup (timed inside each query) and
the same document-level rule (a document ranks by its best chunk, ``rank_documents``).
Each system builds and queries in its own process; its peak RSS is that process's.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import shutil
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from benchmarks import common
from benchmarks import systems as peers
from benchmarks.systems import DEFAULT_SYSTEMS, SYSTEMS

ALPHAS = (0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9)

#: nDCG@10 our team measured earlier (SciFact, CISI) for reference in the report.
TEAM_REFERENCE = {
    "langchain-ensemble": {"scifact": 0.683, "cisi": 0.411},
    "llamaindex-fusion": {"scifact": 0.717, "cisi": 0.440},
    "ours/semantic": {"scifact": 0.644, "cisi": 0.419},
}


# -- preparation: chunk vectors from the eval index, query vectors embedded once -------------


def prepare(dataset_dir: str, eval_cache: Path, cache: Path) -> Path:
    """Cache ``chunks.json``/``chunks.npy``/``queries.json``/``queries.npy`` for a dataset."""
    import remy_retriever  # registers the "remy" embedding function with chromadb
    from remy_retriever.evaluation.beir import load_beir

    ds = load_beir(dataset_dir)
    out = cache / "quality" / f"{ds.name}-{ds.fingerprint}"
    if (out / "meta.json").is_file():
        return out
    out.mkdir(parents=True, exist_ok=True)
    store = eval_cache / f"{ds.name}-{ds.fingerprint}"
    ids, texts, vectors = _read_collection(store)
    if not ids:
        print(f"[quality] no eval index at {store}: embedding {ds.name} (slow, done once)")
        # torch: the cached query vectors below are torch MiniLM, and so is CachedEmbedder.
        with remy_retriever.Retriever(store, collection="beir", embedder_backend="torch") as r:
            r.add(ds.documents(), progress=False)
        ids, texts, vectors = _read_collection(store)
    order = sorted(range(len(ids)), key=lambda i: ids[i])
    ids = [ids[i] for i in order]
    texts = [texts[i] for i in order]
    vectors = vectors[order]
    (out / "chunks.json").write_text(json.dumps({"ids": ids, "texts": texts}))
    np.save(out / "chunks.npy", vectors.astype(np.float32))
    qids = list(ds.queries)
    qtexts = [ds.queries[q] for q in qids]
    embedder = remy_retriever.SentenceTransformerEmbedder()
    started = time.perf_counter()
    # No query prompt for MiniLM, so a batch equals embed_query() one by one.
    qvecs = np.asarray(embedder.embed_documents(qtexts), dtype=np.float32)
    took = time.perf_counter() - started
    (out / "queries.json").write_text(json.dumps({"ids": qids, "texts": qtexts}))
    np.save(out / "queries.npy", qvecs)
    meta = {
        "dataset": ds.name,
        "fingerprint": ds.fingerprint,
        "source_index": str(store),
        "chunks": len(ids),
        "queries": len(qids),
        "model": embedder.model_id,
        "query_embedding_s": round(took, 2),
    }
    (out / "meta.json").write_text(json.dumps(meta, indent=2))
    return out


def _read_collection(store: Path) -> tuple[list[str], list[str], np.ndarray]:
    import chromadb

    from remy_retriever.schema.records import TEXT_KEY

    if not (store / "chroma.sqlite3").is_file():
        return [], [], np.zeros((0, 0), dtype=np.float32)
    client = chromadb.PersistentClient(path=str(store))
    try:
        col = client.get_collection("beir", embedding_function=None)
    except Exception:
        return [], [], np.zeros((0, 0), dtype=np.float32)
    ids: list[str] = []
    texts: list[str] = []
    vecs: list[np.ndarray] = []
    offset, page = 0, 5000
    while True:
        got = col.get(include=["embeddings", "documents", "metadatas"], limit=page, offset=offset)
        if not got["ids"]:
            break
        ids += got["ids"]
        # remy keeps the text in the record's metadata (older indexes: in documents).
        texts += [
            str((m or {}).get(TEXT_KEY) or d or "")
            for d, m in zip(got["documents"], got["metadatas"])
        ]
        vecs.append(np.asarray(got["embeddings"], dtype=np.float32))
        offset += len(got["ids"])
        if len(got["ids"]) < page:
            break
    matrix = np.concatenate(vecs) if vecs else np.zeros((0, 0), dtype=np.float32)
    return ids, texts, matrix


def _load_prepared(prepared: Path) -> tuple[dict[str, Any], np.ndarray, dict[str, Any], np.ndarray]:
    chunks = json.loads((prepared / "chunks.json").read_text())
    queries = json.loads((prepared / "queries.json").read_text())
    return chunks, np.load(prepared / "chunks.npy"), queries, np.load(prepared / "queries.npy")


# -- workers ----------------------------------------------------------------------------------


def _dataset(path: str, max_queries: int | None) -> Any:
    from remy_retriever.evaluation.beir import load_beir

    ds = load_beir(path)
    if max_queries:
        keep = dict(list(ds.queries.items())[:max_queries])
        ds = dataclasses.replace(ds, queries=keep)
    return ds


def _evaluate(ds: Any, rank: Callable[[str], Sequence[tuple[str, float]]]) -> dict[str, float]:
    from remy_retriever.evaluation.beir import evaluate

    for text in list(ds.queries.values())[:3]:  # warm-up, untimed
        rank(text)
    return evaluate(ds, rank, depth=100, measures=("nDCG@10", "R@100"))


def worker(args: argparse.Namespace) -> dict[str, Any]:
    ds = _dataset(args.dataset, args.max_queries)
    chunks, vecs, queries, qvecs = _load_prepared(Path(args.prepared))
    doc_table = common.VectorTable(chunks["texts"], vecs)
    query_table = common.VectorTable(queries["texts"], qvecs)
    result: dict[str, Any] = {"system": args.worker, "rss_after_load_mib": common.peak_rss_mib()}
    tmp = Path(tempfile.mkdtemp(prefix="remy-bench-quality-"))
    try:
        runner = {
            "ours": _ours,
            "ours-e2e": _ours_e2e,
            "ours-rerank": _ours_rerank,
            "langchain-ensemble": _langchain,
            "langchain-ensemble-default": _langchain,
            "llamaindex-fusion": _llamaindex,
        }[args.worker]
        result.update(runner(args, ds, chunks, doc_table, query_table, tmp))
        result["disk_mib"] = common.dir_size_mib(tmp)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    result["peak_rss_mib"] = common.peak_rss_mib()
    return result


def _build_ours(ds: Any, tmp: Path, embedder: Any) -> tuple[Any, float]:
    from remy_retriever import Retriever

    started = time.perf_counter()
    r = Retriever(tmp / "remy", collection="bench", embedder=embedder, progress=False)
    r.add(ds.documents(), progress=False)
    return r, time.perf_counter() - started


def _check_chunks(r: Any, chunks: dict[str, Any]) -> bool:
    pages = r._sync.dense.iter_all(documents=False, metadatas=False)
    ids = {rec[0] for page in pages for rec in page}
    return ids == set(chunks["ids"])


def _ours(
    args: argparse.Namespace, ds: Any, chunks: Any, docs: Any, queries: Any, tmp: Path
) -> dict[str, Any]:
    embedder = common.CachedEmbedder(docs, queries)
    r, build_s = _build_ours(ds, tmp, embedder)
    out: dict[str, Any] = {
        "build_s": round(build_s, 3),
        "chunks_identical": _check_chunks(r, chunks),
    }
    modes: dict[str, Any] = {}
    for mode in ("lexical", "semantic"):

        def rank(q: str, mode: Any = mode) -> list[tuple[str, float]]:
            return r.rank(q, mode=mode, candidates=args.candidates)

        modes[mode] = _evaluate(ds, rank)
    # The library's default fusion (recorded below), then explicit ones for comparison.
    modes["hybrid"] = _evaluate(ds, lambda q: r.rank(q, mode="hybrid", candidates=args.candidates))
    modes["hybrid-rrf"] = _evaluate(
        ds, lambda q: r.rank(q, mode="hybrid", candidates=args.candidates, fusion="rrf")
    )
    # The plain convex combination (min-max, fixed alpha): the default before issue #17.
    plain = {"fusion": "convex", "normalization": "minmax", "fill": "none", "adaptive": False}
    modes[f"hybrid-convex-a{args.alpha}"] = _evaluate(
        ds,
        lambda q: r.rank(q, mode="hybrid", candidates=args.candidates, alpha=args.alpha, **plain),
    )
    out["modes"] = modes
    out["library_default_fusion"] = _library_default()
    sweep = {}
    for alpha in ALPHAS if not args.no_sweep else ():

        def convex(q: str, alpha: float = alpha) -> list[tuple[str, float]]:
            return r.rank(q, mode="hybrid", candidates=args.candidates, alpha=alpha, **plain)

        res = _evaluate(ds, convex)
        sweep[str(alpha)] = {"nDCG@10": res["nDCG@10"], "R@100": res["R@100"]}
    out["convex_alpha_sweep"] = sweep
    r.close()
    return out


def _library_default() -> dict[str, Any]:
    from remy_retriever.search.tuning import defaults

    return defaults()


def _ours_e2e(
    args: argparse.Namespace, ds: Any, chunks: Any, docs: Any, queries: Any, tmp: Path
) -> dict[str, Any]:
    import torch

    from remy_retriever import SentenceTransformerEmbedder

    if args.e2e_threads:
        torch.set_num_threads(args.e2e_threads)
    real = SentenceTransformerEmbedder()
    real.embed_query("warm up the model")
    embedder = common.CachedEmbedder(docs, None, real_queries=real)
    r, build_s = _build_ours(ds, tmp, embedder)
    res = _evaluate(ds, lambda q: r.rank(q, mode="hybrid", candidates=args.candidates))
    # The query embedding alone, for the record.
    _, lat = common.time_calls(real.embed_query, list(ds.queries.values())[:50])
    r.close()
    return {
        "build_s": round(build_s, 3),
        "modes": {"hybrid": res},
        "torch_threads": torch.get_num_threads(),
        "query_embedding": common.summarize(lat),
    }


def _ours_rerank(
    args: argparse.Namespace, ds: Any, chunks: Any, docs: Any, queries: Any, tmp: Path
) -> dict[str, Any]:
    from remy_retriever import CrossEncoderReranker

    embedder = common.CachedEmbedder(docs, queries)
    r, build_s = _build_ours(ds, tmp, embedder)
    reranker = CrossEncoderReranker(args.rerank_model)
    depth = 30

    def rank(q: str) -> list[tuple[str, float]]:
        hits = r.search(
            q,
            mode="hybrid",
            k=depth,
            candidates=args.candidates,
            rerank=reranker,
            rerank_depth=depth,
        )
        head = [(h.id, h.score) for h in hits]
        seen = {cid for cid, _ in head}
        return head + [x for x in r.rank(q, candidates=args.candidates) if x[0] not in seen]

    res = _evaluate(ds, rank)
    r.close()
    return {
        "build_s": round(build_s, 3),
        "modes": {"hybrid+rerank": res},
        "rerank_model": args.rerank_model,
    }


def _peer(build: Callable[..., peers.Search], ds: Any, **kwargs: Any) -> dict[str, Any]:
    """Build one peer from :mod:`benchmarks.systems` (timed) and score its hybrid."""
    started = time.perf_counter()
    search = build(**kwargs)
    build_s = time.perf_counter() - started
    return {"build_s": round(build_s, 3), "modes": {"hybrid": _evaluate(ds, search)}}


def _langchain(
    args: argparse.Namespace, ds: Any, chunks: Any, docs: Any, queries: Any, tmp: Path
) -> dict[str, Any]:
    return _peer(
        peers.build_langchain,
        ds,
        texts=list(chunks["texts"]),
        ids=list(chunks["ids"]),
        table=docs,
        queries=queries,
        root=tmp / "chroma",
        k=args.candidates,
        analyzed=args.worker == "langchain-ensemble",
    )


def _llamaindex(
    args: argparse.Namespace, ds: Any, chunks: Any, docs: Any, queries: Any, tmp: Path
) -> dict[str, Any]:
    texts = list(chunks["texts"])
    return _peer(
        peers.build_llamaindex,
        ds,
        texts=texts,
        ids=list(chunks["ids"]),
        vectors=docs.lookup_many(texts),
        table=docs,
        queries=queries,
        root=tmp / "chroma",
        k=args.candidates,
    )


# -- driver -------------------------------------------------------------------------------------


def _rows(dataset: dict[str, Any]) -> list[dict[str, Any]]:
    rows = []
    for name, res in dataset["systems"].items():
        if "error" in res:
            rows.append({"system": name, "error": res["error"]})
            continue
        for mode, m in res["modes"].items():
            label = name if name not in ("ours",) else f"ours/{mode}"
            rows.append(
                {
                    "system": label,
                    "nDCG@10": m["nDCG@10"],
                    "R@100": m["R@100"],
                    "build_s": res.get("build_s"),
                    "p50_ms": m["p50_ms"],
                    "p95_ms": m["p95_ms"],
                    "peak_rss_mib": res.get("peak_rss_mib"),
                    "rss_delta_mib": round(res["peak_rss_mib"] - res["rss_after_load_mib"], 1),
                }
            )
    return rows


def _markdown(data: dict[str, Any]) -> str:
    parts = [common.header_md("Quality: nDCG@10 / Recall@100 on BEIR", data)]
    parts.append(
        "All systems: identical chunks (ours) and cached all-MiniLM-L6-v2 vectors, 100 "
        "candidates per branch, documents ranked by their best chunk. Latency = one query "
        "incl. the cached query-vector lookup (the same for all); `ours-e2e` embeds the "
        "query with the real model. Build = index build excluding embedding (ours includes "
        "chunking). RSS delta = peak minus RSS after loading the shared data.\n"
    )
    for ds in data["datasets"]:
        parts.append(f"\n## {ds['dataset']} ({ds['queries']} queries, {ds['chunks']} chunks)\n")
        rows = _rows(ds)
        headers = [
            "system",
            "nDCG@10",
            "R@100",
            "build s",
            "p50 ms",
            "p95 ms",
            "peak RSS MiB",
            "RSS delta MiB",
        ]
        parts.append(
            common.md_table(
                headers,
                [
                    [
                        r["system"],
                        r.get("nDCG@10"),
                        r.get("R@100"),
                        r.get("build_s"),
                        r.get("p50_ms"),
                        r.get("p95_ms"),
                        r.get("peak_rss_mib"),
                        r.get("rss_delta_mib"),
                    ]
                    if "error" not in r
                    else [r["system"], "error: " + r["error"], *[None] * 6]
                    for r in rows
                ],
            )
        )
        ours = ds["systems"].get("ours", {})
        sweep = ours.get("convex_alpha_sweep") or {}
        if sweep:
            parts.append("\nConvex fusion, alpha sweep (alpha = weight of the semantic branch):\n")
            parts.append(
                common.md_table(
                    ["alpha", *sweep],
                    [
                        ["nDCG@10", *[v["nDCG@10"] for v in sweep.values()]],
                        ["R@100", *[v["R@100"] for v in sweep.values()]],
                    ],
                )
            )
        e2e = ds["systems"].get("ours-e2e", {}).get("query_embedding")
        if e2e:
            parts.append(
                f"\nReal MiniLM query embedding alone: p50 {e2e['p50_ms']:.1f} ms, "
                f"p95 {e2e['p95_ms']:.1f} ms.\n"
            )
    return "\n".join(parts)


def _plot(data: dict[str, Any], path: Path) -> None:
    plt = common.plt()
    datasets = data["datasets"]
    fig, axes = plt.subplots(1, 2, figsize=(13, 5))
    names: list[str] = []
    for ds in datasets:
        for r in _rows(ds):
            if "error" not in r and r["system"] not in names:
                names.append(r["system"])
    width = 0.8 / max(1, len(datasets))
    ys = np.arange(len(names))
    for i, ds in enumerate(datasets):
        by = {r["system"]: r for r in _rows(ds) if "error" not in r}
        nd = [by.get(n, {}).get("nDCG@10", 0.0) for n in names]
        lat = [by.get(n, {}).get("p50_ms", 0.0) for n in names]
        axes[0].barh(ys + i * width, nd, height=width, label=ds["dataset"])
        axes[1].barh(ys + i * width, lat, height=width, label=ds["dataset"])
    for ax, title in zip(
        axes, ("nDCG@10 (higher is better)", "query p50 ms (log; lower is better)")
    ):
        ax.set_yticks(ys + width * (len(datasets) - 1) / 2)
        ax.set_yticklabels(names, fontsize=8)
        ax.invert_yaxis()
        ax.set_title(title)
        ax.legend()
        ax.grid(axis="x", alpha=0.3)
    axes[1].set_xscale("log")
    axes[1].set_yticklabels([])
    fig.suptitle("Quality on identical chunks and MiniLM vectors (100 candidates per branch)")
    common.save_figure(fig, path)


def main(argv: Sequence[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--dataset", action="append", required=True, help="BEIR folder (repeatable)")
    p.add_argument("--systems", nargs="+", default=None, choices=sorted(SYSTEMS))
    p.add_argument("--rerank-model", default=None, help="cross-encoder path: adds ours-rerank")
    p.add_argument("--candidates", type=int, default=100)
    p.add_argument("--max-queries", type=int, default=None, help="first N judged queries")
    p.add_argument("--no-sweep", action="store_true", help="skip the convex alpha sweep")
    p.add_argument("--alpha", type=float, default=0.4, help="alpha of ours/hybrid-convex")
    p.add_argument(
        "--append",
        action="store_true",
        help="merge into an existing results file (replacing the systems run now)",
    )
    p.add_argument(
        "--e2e-threads",
        type=int,
        default=1,
        help="torch threads for ours-e2e query embedding (0: torch's default); one thread is "
        "the fastest for single queries on a shared 2-core machine",
    )
    p.add_argument("--eval-cache", type=Path, default=common.CACHE_DIR / "eval")
    p.add_argument("--cache", type=Path, default=common.CACHE_DIR)
    p.add_argument("--out", type=Path, default=common.RESULTS_DIR)
    p.add_argument("--name", default="quality")
    p.add_argument("--timeout", type=float, default=3600)
    p.add_argument("--worker", default=None, help=argparse.SUPPRESS)
    p.add_argument("--prepared", default=None, help=argparse.SUPPRESS)
    p.add_argument("--worker-out", default=None, help=argparse.SUPPRESS)
    args = p.parse_args(argv)
    if args.worker:
        args.dataset = args.dataset[0]
        common.write_worker_output(args.worker_out, worker(args))
        return 0

    info = common.machine()
    systems = list(args.systems or DEFAULT_SYSTEMS)
    if args.rerank_model and "ours-rerank" not in systems:
        systems.append("ours-rerank")
    data: dict[str, Any] = {
        "benchmark": "quality",
        "command": common.command_line(),
        "candidates": args.candidates,
        "versions": common.versions(),
        "datasets": [],
    }
    for dataset in args.dataset:
        prepared = prepare(dataset, args.eval_cache, args.cache)
        meta = json.loads((prepared / "meta.json").read_text())
        entry: dict[str, Any] = {
            "dataset": meta["dataset"],
            "chunks": meta["chunks"],
            "queries": min(meta["queries"], args.max_queries or meta["queries"]),
            "systems": {},
            "skipped": {},
            "load_average_before": common.load_average(),
        }
        for system in systems:
            missing = [m for m in SYSTEMS[system][1] if not common.has_module(m)]
            if system == "ours-rerank" and not args.rerank_model:
                continue
            if missing:
                print(f"[quality] skip {system}: missing {', '.join(missing)}")
                entry["skipped"][system] = f"missing {', '.join(missing)}"
                continue
            print(f"[quality] {meta['dataset']}: {system} ...", flush=True)
            wargs = [
                "--worker",
                system,
                "--dataset",
                dataset,
                "--prepared",
                str(prepared),
                "--candidates",
                str(args.candidates),
            ]
            if args.max_queries:
                wargs += ["--max-queries", str(args.max_queries)]
            if args.no_sweep:
                wargs.append("--no-sweep")
            wargs += ["--e2e-threads", str(args.e2e_threads), "--alpha", str(args.alpha)]
            if args.rerank_model:
                wargs += ["--rerank-model", args.rerank_model]
            res = common.run_worker("benchmarks.quality", wargs, timeout=args.timeout)
            res["load_average_after"] = common.load_average()
            entry["systems"][system] = res
            if "error" in res:
                print(f"[quality]   error: {res['error']}\n{res.get('stderr', '')[-1500:]}")
            else:
                summary = ", ".join(
                    f"{m} nDCG@10={v['nDCG@10']:.4f} p50={v['p50_ms']:.1f}ms"
                    for m, v in res["modes"].items()
                )
                print(f"[quality]   {summary}", flush=True)
        data["datasets"].append(entry)
    data["machine"] = common.finish_machine(info)
    data["team_reference_ndcg10"] = TEAM_REFERENCE
    previous = args.out / f"{args.name}.json"
    if args.append and previous.is_file():
        # Keep the other systems of an earlier run (each keeps its load averages).
        old = json.loads(previous.read_text())
        by_name = {d["dataset"]: d for d in old.get("datasets", [])}
        for entry in data["datasets"]:
            before = by_name.get(entry["dataset"])
            if before:
                merged = {**before["systems"], **entry["systems"]}
                entry["systems"] = {k: merged[k] for k in before["systems"]} | {
                    k: v for k, v in entry["systems"].items() if k not in before["systems"]
                }
        data["earlier_runs"] = [
            *old.get("earlier_runs", []),
            {"command": old.get("command"), "machine": old.get("machine")},
        ]
    common.write_results(args.out, args.name, data, _markdown(data))
    _plot(data, args.out / f"{args.name}.png")
    return 0


if __name__ == "__main__":
    sys.exit(main())

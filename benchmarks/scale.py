"""Scale: ingest throughput, query latency (with and without a selective filter), disk,
memory and write visibility at 10k / 100k / 1M synthetic chunks; embedding cost excluded.

    python -m benchmarks.scale --sizes 10000 100000 1000000

Chunks are deterministic Zipf text (a 50,000-word synthetic vocabulary, 60-139 words per
chunk, one chunk per document, metadata ``tenant`` = one of 100) with random unit vectors
(384-d float32); queries are 3-6 mid-frequency words with their own random vectors. Each
size runs in one worker process: ours is built and queried first (its peak RSS is read
before anything else is built), then the peers (bm25s; LangChain's BM25Retriever on
rank_bm25; LangChain EnsembleRetriever and LlamaIndex QueryFusionRetriever up to
``--peer-max``), and finally every system answers the same queries round-robin, so that
the machine's load hits all of them alike. Every system looks query vectors up in the same
table inside the timed call.

This module is the driver (one worker process per size, then the report) and the
worker. The rest lives beside it: the corpus and shared settings in
:mod:`benchmarks.scale_data`, ours in :mod:`benchmarks.scale_ours`, the peers in
:mod:`benchmarks.systems`, the markdown, targets and plot in
:mod:`benchmarks.scale_report`.
"""

from __future__ import annotations

import argparse
import contextlib
import gc
import json
import shutil
import sys
import tempfile
import time
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any

from benchmarks import common
from benchmarks.scale_data import (
    CANDIDATES,
    DIM,
    SEARCH_K,
    TENANTS,
    VOCAB,
    WHERE,
    chunk_ids,
    data_dir,
    load,
    tenant,
)
from benchmarks.scale_ours import build_ours, bulk_ours, ours_probe, reuse_ours
from benchmarks.scale_report import markdown, plot, targets
from benchmarks.systems import build_bm25s, build_langchain, build_llamaindex, build_rank_bm25

# -- worker --------------------------------------------------------------------------------------


@contextlib.contextmanager
def _measure(record: dict[str, Any], name: str) -> Iterator[None]:
    gc.collect()
    rss0 = common.current_rss_mib()
    t0 = time.perf_counter()
    yield
    record[name] = {
        "build_s": round(time.perf_counter() - t0, 2),
        "rss_growth_mib": round(common.current_rss_mib() - rss0, 1),
        "process_peak_rss_mib": common.peak_rss_mib(),
    }
    print(f"[scale]   built {name}: {record[name]}", flush=True)


def worker(args: argparse.Namespace) -> dict[str, Any]:
    """One size, in its own process: build and measure ours, build the peers, then run
    every system over the same queries round-robin."""
    n = args.worker_size
    hnsw = {"ef_construction": args.ef_construction} if args.ef_construction else None
    data = Path(args.data)
    texts, vectors, qtexts, qvecs = load(data, n)
    qtexts, qvecs = qtexts[: args.queries], qvecs[: args.queries]
    queries = common.VectorTable(qtexts, qvecs)
    result: dict[str, Any] = {
        "chunks": n,
        "queries": len(qtexts),
        "rss_after_load_mib": common.current_rss_mib(),
    }
    tmp = Path(tempfile.mkdtemp(prefix="remy-bench-scale-", dir=args.tmp))
    systems: dict[str, Callable[[str], Any]] = {}
    builds: dict[str, Any] = {}
    try:
        # 1. ours: ingest, per-mode latency (+ where), disk, peak RSS, add/delete probe.
        print(f"[scale] {n:,}: ours ingest", flush=True)
        t0 = time.perf_counter()
        if args.reuse_index:
            r, embedder, ingest = reuse_ours(
                texts, vectors, queries, Path(args.reuse_index), hnsw=hnsw
            )
            tmp_remy = Path(args.reuse_index)
        elif args.ingest == "bulk":
            peers_read_it = args.peer_chroma == "shared" and bool(
                {"langchain", "llamaindex"} & set(args.peers)
            )
            r, embedder, ingest = bulk_ours(
                texts,
                vectors,
                queries,
                tmp / "remy",
                args.ingest_budget,
                documents_for_peers=peers_read_it,
                hnsw=hnsw,
            )
        else:
            r, embedder, ingest = build_ours(
                texts,
                vectors,
                queries,
                tmp / "remy",
                args.batch_size,
                args.ingest_budget,
                hnsw=hnsw,
            )

        if not args.reuse_index:
            tmp_remy = tmp / "remy"
        if ingest["ingested"] < n:
            texts = texts[: ingest["ingested"]]
            vectors = vectors[: ingest["ingested"]]
            result["chunks_measured"] = ingest["ingested"]
        result["ours_ingest"] = ingest
        chroma_mib = common.dir_size_mib(tmp_remy) - common.dir_size_mib(tmp_remy / "remy_lexical")
        result["ours_disk_mib"] = {
            "chroma": round(chroma_mib, 1),
            "lexical": common.dir_size_mib(tmp_remy / "remy_lexical"),
            "source_text_mib": round(sum(len(t) + 1 for t in texts) / 2**20, 1),
            "raw_vectors_mib": round(n * DIM * 4 / 2**20, 1),
        }
        for mode in ("lexical", "semantic", "hybrid"):
            for filt in (None, WHERE):
                key = f"ours/{mode}" + ("+where" if filt else "")
                systems[key] = lambda q, m=mode, f=filt: r.search(
                    q, mode=m, k=SEARCH_K, candidates=CANDIDATES, where=f
                )
                if filt is None:
                    systems[key + " rank()"] = lambda q, m=mode: r.rank(
                        q, mode=m, candidates=CANDIDATES
                    )
        # ours alone first (a short pass), so that its peak RSS is its own.
        ours_only = dict(systems)
        lat = _run_queries(ours_only, qtexts[:20], rounds=1)
        result["ours_peak_rss_mib"] = common.peak_rss_mib()
        result["ours_first_pass"] = {k: common.summarize(v) for k, v in lat.items()}
        result["ours_hybrid_profile"] = _profile(
            lambda q: r.search(q, mode="hybrid", k=SEARCH_K, candidates=CANDIDATES), qtexts[:30]
        )
        if args.probe:
            print(f"[scale] {n:,}: add/delete 1,000 probe", flush=True)
            result["ours_add_delete_1000"] = ours_probe(r, embedder, texts, n)
        result["ours_total_s"] = round(time.perf_counter() - t0, 1)
        # 2. peers, over ours' chunk ids (one chunk per document, tenant metadata).
        del ours_only
        ids = chunk_ids(len(texts))
        metas = [{"tenant": tenant(i)} for i in range(len(texts))]
        if "bm25s" in args.peers and common.has_module("bm25s", "Stemmer"):
            with _measure(builds, "bm25s"):
                systems["bm25s"] = build_bm25s(texts, ids)
        if (
            "rank_bm25" in args.peers
            and n <= args.rank_bm25_max
            and common.has_module("langchain_community", "rank_bm25", "bm25s")
        ):
            with _measure(builds, "langchain-bm25 (rank_bm25)"):
                systems["langchain-bm25 (rank_bm25)"] = build_rank_bm25(texts, ids)
        if n <= args.peer_max:
            table = common.VectorTable(texts, vectors)
            shared = r if args.peer_chroma == "shared" else None
            result["peer_chroma"] = args.peer_chroma
            if "langchain" in args.peers and common.has_module(
                "langchain_classic", "langchain_community", "langchain_chroma", "rank_bm25"
            ):
                with _measure(builds, "langchain-ensemble"):
                    systems["langchain-ensemble"] = build_langchain(
                        texts,
                        ids,
                        table,
                        queries,
                        tmp / "langchain",
                        metadatas=metas,
                        shared=shared,
                    )
                if "langchain-bm25 (rank_bm25)" not in systems:
                    # The ensemble's own BM25 branch: LangChain's rank_bm25 path.
                    branch = systems["langchain-ensemble"].bm25  # type: ignore[attr-defined]
                    systems["langchain-bm25 (rank_bm25)"] = branch.invoke
            if "llamaindex" in args.peers and common.has_module(
                "llama_index.core",
                "llama_index.retrievers.bm25",
                "llama_index.vector_stores.chroma",
            ):
                with _measure(builds, "llamaindex-fusion"):
                    systems["llamaindex-fusion"] = build_llamaindex(
                        texts,
                        ids,
                        vectors,
                        table,
                        queries,
                        tmp / "llamaindex",
                        metadatas=metas,
                        shared=shared,
                    )
        result["peer_builds"] = builds
        result["peer_disk_mib"] = {
            name: common.dir_size_mib(tmp / name)
            for name in ("langchain", "llamaindex")
            if (tmp / name).exists()
        }
        # 3. everyone, same queries, round-robin.
        print(f"[scale] {n:,}: interleaved queries over {len(systems)} systems", flush=True)
        lat = _run_queries(systems, qtexts, rounds=1)
        result["latency"] = {k: common.summarize(v) for k, v in lat.items()}
        result["process_peak_rss_mib"] = common.peak_rss_mib()
        r.close()
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return result


def _profile(fn: Callable[[str], Any], queries: Sequence[str]) -> list[str]:
    """cProfile of ``fn`` over ``queries``: the top functions by total (own) time."""
    import cProfile
    import io
    import pstats

    prof = cProfile.Profile()
    prof.enable()
    for q in queries:
        fn(q)
    prof.disable()
    buf = io.StringIO()
    pstats.Stats(prof, stream=buf).sort_stats("tottime").print_stats(15)
    lines = [line.rstrip() for line in buf.getvalue().splitlines() if line.strip()]
    return lines[-17:]


def _run_queries(
    systems: dict[str, Callable[[str], Any]], queries: Sequence[str], rounds: int
) -> dict[str, list[float]]:
    """Round-robin: each query goes to every system before the next query (rotating the
    order), so background load affects all systems alike."""
    names = list(systems)
    for q in queries[:3]:  # warm-up
        for name in names:
            systems[name](q)
    lat: dict[str, list[float]] = {name: [] for name in names}
    for _ in range(rounds):
        for i, q in enumerate(queries):
            order = names[i % len(names) :] + names[: i % len(names)]
            for name in order:
                t0 = time.perf_counter()
                systems[name](q)
                lat[name].append((time.perf_counter() - t0) * 1000)
    return lat


# -- driver --------------------------------------------------------------------------------------


def main(argv: Sequence[str] | None = None) -> int:
    """Run one worker per size (``--worker-size`` makes this process that worker),
    then write ``<name>.json``, ``.md`` and ``.png`` to ``--out``."""
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--sizes", type=int, nargs="+", default=[10_000, 100_000, 1_000_000])
    p.add_argument("--queries", type=int, default=200)
    p.add_argument("--batch-size", type=int, default=256, help="Retriever.add batch_size")
    p.add_argument("--peers", nargs="*", default=["bm25s", "rank_bm25", "langchain", "llamaindex"])
    p.add_argument("--peer-max", type=int, default=100_000, help="largest size for peer hybrids")
    p.add_argument("--rank-bm25-max", type=int, default=100_000)
    p.add_argument("--probe-min", type=int, default=100_000, help="add/delete probe from this size")
    p.add_argument("--cache", type=Path, default=common.CACHE_DIR / "scale")
    p.add_argument("--tmp", default=None, help="where indexes are built (default: system temp)")
    p.add_argument("--out", type=Path, default=common.RESULTS_DIR)
    p.add_argument("--name", default="scale")
    p.add_argument("--timeout", type=float, default=3 * 3600)
    p.add_argument(
        "--append",
        action="store_true",
        help="merge into an existing results file (replacing the sizes run now)",
    )
    p.add_argument(
        "--ingest-budget",
        type=float,
        default=1500,
        help="stop ours' ingest after this many seconds (the 1M point must finish "
        "in 30 min); the rest is projected and queries run on what was ingested",
    )
    p.add_argument(
        "--ingest",
        choices=["add", "bulk"],
        default="add",
        help="ours: Retriever.add (default) or bulk DenseStore.upsert + LexicalIndex.apply",
    )
    p.add_argument(
        "--peer-chroma",
        choices=["own", "shared"],
        default="own",
        help="peer hybrids build their own Chroma collection (default) or query ours'",
    )
    p.add_argument(
        "--ef-construction",
        type=int,
        default=None,
        help="create ours' collection with this HNSW ef_construction (Chroma's default: 100)",
    )
    p.add_argument("--reuse-index", default=None, help=argparse.SUPPRESS)
    p.add_argument("--worker-size", type=int, default=None, help=argparse.SUPPRESS)
    p.add_argument("--data", default=None, help=argparse.SUPPRESS)
    p.add_argument("--probe", action="store_true", help=argparse.SUPPRESS)
    p.add_argument("--worker-out", default=None, help=argparse.SUPPRESS)
    args = p.parse_args(argv)
    if args.worker_size:
        common.write_worker_output(args.worker_out, worker(args))
        return 0
    info = common.machine()
    biggest = max(args.sizes)
    corpus = data_dir(args.cache, biggest, max(args.queries, 20))
    data: dict[str, Any] = {
        "benchmark": "scale",
        "command": common.command_line(),
        "versions": common.versions(),
        "settings": {
            "dim": DIM,
            "vocabulary": VOCAB,
            "tenants": TENANTS,
            "candidates": CANDIDATES,
            "search_k": SEARCH_K,
            "where": WHERE,
            "queries": args.queries,
            "batch_size": args.batch_size,
            "words_per_chunk": "60-139",
            "ef_construction": args.ef_construction or "Chroma's default (100)",
        },
        "sizes": [],
    }
    for n in sorted(args.sizes):
        print(f"[scale] size {n:,}", flush=True)
        wargs = [
            "--worker-size",
            str(n),
            "--data",
            str(corpus),
            "--queries",
            str(args.queries),
            "--batch-size",
            str(args.batch_size),
            "--peer-max",
            str(args.peer_max),
            "--rank-bm25-max",
            str(args.rank_bm25_max),
            *(["--reuse-index", args.reuse_index] if args.reuse_index else []),
            *(["--ef-construction", str(args.ef_construction)] if args.ef_construction else []),
            "--ingest",
            args.ingest,
            "--peer-chroma",
            args.peer_chroma,
            "--ingest-budget",
            str(args.ingest_budget),
            "--peers",
            *args.peers,
        ]
        if args.tmp:
            wargs += ["--tmp", args.tmp]
        if n >= args.probe_min:
            wargs.append("--probe")
        la = common.load_average()
        res = common.run_worker("benchmarks.scale", wargs, timeout=args.timeout)
        res.setdefault("chunks", n)
        res["load_average_before"] = la
        res["load_average_after"] = common.load_average()
        if "error" in res:
            print(f"[scale]   error: {res['error']}\n{res.get('stderr', '')[-2000:]}")
        data["sizes"].append(res)
    data["machine"] = common.finish_machine(info)
    for size in data["sizes"]:
        size["run_date"] = info["date"]
    previous = args.out / f"{args.name}.json"
    if args.append and previous.is_file():
        # Keep the other sizes of an earlier run (each size records its own run date and
        # load averages); this run's sizes replace theirs.
        old = json.loads(previous.read_text())
        done = {s["chunks"] for s in data["sizes"]}
        kept = [s for s in old.get("sizes", []) if s["chunks"] not in done]
        data["sizes"] = sorted(kept + data["sizes"], key=lambda s: s["chunks"])
        data["earlier_runs"] = [
            *old.get("earlier_runs", []),
            {"command": old.get("command"), "machine": old.get("machine")},
        ]
    data["targets"] = targets(data)
    common.write_results(args.out, args.name, data, markdown(data))
    plot(data, args.out / f"{args.name}.png")
    # A size whose worker failed is recorded, and fails the run (the quick suite sees it).
    return 1 if any("error" in size for size in data["sizes"]) else 0


if __name__ == "__main__":
    sys.exit(main())

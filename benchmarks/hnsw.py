"""Profile: what Chroma's HNSW build effort (``ef_construction``) costs and buys.

    python -m benchmarks.hnsw --n 100000 --ef 100 64 32

A diagnostic for the write path: past ~100k chunks most of a Chroma write is HNSW
insertion, and ``ef_construction`` (the candidate list kept while linking a new vector;
Chroma's default 100) sets its effort. For each value this measures, in fresh embedded
stores of this machine:

* the build rate of ``--n`` random unit vectors (384-d, vectors only, batches of 5,000)
  and the process CPU it took;
* adding 1,000 more vectors to that collection (then deleting them), median of 3;
* recall@10 of Chroma's answers against exact cosine search on real data: the cached
  MiniLM chunk and test-query vectors of ``--dataset`` (from ``benchmarks.quality``;
  skipped with a note when that cache is absent). ``ef_search`` stays at Chroma's 100.

Pass the value to remy with ``Retriever(..., hnsw={"ef_construction": 64})`` and to
``benchmarks.scale`` with ``--ef-construction``.
"""

from __future__ import annotations

import argparse
import resource
import shutil
import statistics
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from benchmarks import common

DIM = 384


def _cpu_s() -> float:
    r = resource.getrusage(resource.RUSAGE_SELF)
    return r.ru_utime + r.ru_stime


def _unit(rng: np.random.Generator, n: int) -> np.ndarray:
    v = rng.standard_normal((n, DIM), dtype=np.float32)
    v /= np.linalg.norm(v, axis=1, keepdims=True)
    return v


def _collection(root: Path, ef: int) -> Any:
    import chromadb

    client = chromadb.PersistentClient(path=str(root))
    return client.create_collection(
        "bench",
        embedding_function=None,
        configuration={"hnsw": {"space": "cosine", "ef_construction": ef}},
    )


def _fill(col: Any, vectors: np.ndarray, prefix: str) -> None:
    for lo in range(0, len(vectors), 5000):
        hi = min(len(vectors), lo + 5000)
        col.add(ids=[f"{prefix}{i}" for i in range(lo, hi)], embeddings=vectors[lo:hi])


def _real_vectors(cache: Path, dataset: str) -> tuple[np.ndarray, np.ndarray, str] | None:
    """Cached chunk and query vectors of a dataset (``benchmarks.quality`` writes them)."""
    found = sorted((cache / "quality").glob(f"{dataset}-*/chunks.npy"))
    if not found:
        return None
    folder = found[-1].parent
    chunks = np.load(folder / "chunks.npy").astype(np.float32)
    queries = np.load(folder / "queries.npy").astype(np.float32)
    chunks /= np.linalg.norm(chunks, axis=1, keepdims=True)
    queries /= np.linalg.norm(queries, axis=1, keepdims=True)
    return chunks, queries, folder.name


def run(args: argparse.Namespace) -> dict[str, Any]:
    rng = np.random.default_rng(0)
    base = _unit(rng, args.n)
    extra = [_unit(rng, 1000) for _ in range(args.adds)]
    real = _real_vectors(args.cache, args.dataset)
    exact: np.ndarray | None = None
    if real is not None:
        chunks, queries, _ = real
        exact = np.argsort(-(queries @ chunks.T), axis=1)[:, :10]
    rows: dict[str, dict[str, Any]] = {}
    tmp = Path(tempfile.mkdtemp(prefix="remy-bench-hnsw-"))
    try:
        for ef in args.ef:
            row: dict[str, Any] = {"ef_construction": ef}
            col = _collection(tmp / f"random-{ef}", ef)
            t0, c0 = time.perf_counter(), _cpu_s()
            _fill(col, base, "d")
            took = time.perf_counter() - t0
            row["build_s"] = round(took, 1)
            row["build_records_per_s"] = round(args.n / took, 1)
            row["build_cpu_s"] = round(_cpu_s() - c0, 1)
            adds = []
            for k, vecs in enumerate(extra):
                ids = [f"x{k}-{i}" for i in range(len(vecs))]
                t0 = time.perf_counter()
                col.add(ids=ids, embeddings=vecs)
                adds.append(time.perf_counter() - t0)
                col.delete(ids=ids)
            row["add_1000_s"] = [round(a, 3) for a in adds]
            row["add_1000_median_s"] = round(statistics.median(adds), 3)
            if real is not None and exact is not None:
                chunks, queries, _ = real
                rcol = _collection(tmp / f"real-{ef}", ef)
                _fill(rcol, chunks, "")
                got = rcol.query(query_embeddings=queries, n_results=10, include=[])["ids"]
                hits = [len({str(j) for j in e} & set(g)) for e, g in zip(exact, got)]
                row["recall_at_10"] = round(sum(hits) / (10 * len(hits)), 4)
            rows[str(ef)] = row
            print(f"[hnsw] ef_construction {ef}: {row}", flush=True)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return {
        "n": args.n,
        "recall_data": None
        if real is None
        else {
            "dataset": real[2],
            "chunks": len(real[0]),
            "queries": len(real[1]),
        },
        "rows": rows,
    }


def _markdown(data: dict[str, Any]) -> str:
    r = data["result"]
    parts = [common.header_md("Profile: HNSW build effort (ef_construction)", data)]
    recall = r["recall_data"]
    where = (
        f"recall@10 against exact cosine search over {recall['chunks']:,} real MiniLM chunk "
        f"vectors for {recall['queries']} test queries ({recall['dataset']})"
        if recall
        else "recall not measured (no cached quality vectors: run benchmarks.quality first)"
    )
    parts.append(
        f"{r['n']:,} random unit vectors (384-d, vectors only) per store; add 1,000 = "
        f"median of {len(next(iter(r['rows'].values()))['add_1000_s'])} adds to it; {where}. "
        "Chroma's defaults: ef_construction 100, max_neighbors 16, ef_search 100.\n"
    )
    first = next(iter(r["rows"].values()))
    parts.append(
        common.md_table(
            [
                "ef_construction",
                "build records/s",
                "build speed vs first row",
                "build CPU s",
                "add 1,000 s",
                "recall@10",
            ],
            [
                [
                    row["ef_construction"],
                    row["build_records_per_s"],
                    f"{row['build_records_per_s'] / first['build_records_per_s']:.2f}x",
                    row["build_cpu_s"],
                    row["add_1000_median_s"],
                    row.get("recall_at_10", "–"),
                ]
                for row in r["rows"].values()
            ],
        )
    )
    return "\n".join(parts)


def _plot(data: dict[str, Any], path: Path) -> None:
    plt = common.plt()
    rows = list(data["result"]["rows"].values())
    efs = [row["ef_construction"] for row in rows]
    fig, ax = plt.subplots(figsize=(6, 4))
    ax.plot(efs, [row["build_records_per_s"] for row in rows], marker="o", label="build")
    ax.set_xlabel("ef_construction")
    ax.set_ylabel(f"records/s building {data['result']['n']:,} vectors")
    ax.grid(alpha=0.3)
    if all("recall_at_10" in row for row in rows):
        twin = ax.twinx()
        twin.plot(efs, [row["recall_at_10"] for row in rows], marker="s", color="C1")
        twin.set_ylabel("recall@10 vs exact (real vectors)", color="C1")
    ax.set_title("Chroma HNSW: build speed and recall")
    common.save_figure(fig, path)


def main(argv: Sequence[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--n", type=int, default=100_000)
    p.add_argument("--ef", type=int, nargs="+", default=[100, 64, 32])
    p.add_argument("--adds", type=int, default=3)
    p.add_argument("--dataset", default="scifact", help="cached quality vectors to score")
    p.add_argument("--cache", type=Path, default=common.CACHE_DIR)
    p.add_argument("--out", type=Path, default=common.RESULTS_DIR)
    p.add_argument("--name", default="hnsw")
    return common.run_and_publish(p.parse_args(argv), "hnsw", run, _markdown, _plot)


if __name__ == "__main__":
    sys.exit(main())

"""Soak test: many threads of mixed queries against a large store, for minutes.

One command (writes ``benchmarks/results/soak.json`` and ``soak.md``)::

    .venv/bin/python benchmarks/soak.py                 # 100k chunks, 4 threads, 5 min
    .venv/bin/python benchmarks/soak.py --chunks 5000 --seconds 20 --name soak-small

The corpus is synthetic and deterministic: one-chunk documents drawn from a Zipf
vocabulary (exponent 1.1, 20k words), with tenant, year and flag metadata; embeddings
come from a fast deterministic token-hash embedder (embedding cost is not under test).
Queries mix the three modes, tenant and compound filters, explain, highlight and
neighbour expansion. Reported: error count (must be 0), p50/p99 latency per window of
``--window`` seconds, and resident memory (RSS) after warm-up and at the end (growth
must stay under 10%). Exit status 1 if either check fails.
"""

from __future__ import annotations

import argparse
import gc
import os
import random
import shutil
import statistics
import sys
import tempfile
import threading
import time
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
REPO = HERE.parent
sys.path.insert(0, str(REPO / "tests" / "integration" / "reliability"))
sys.path.insert(0, str(REPO))

from benchmarks import common  # noqa: E402

for _key, _value in common.WORKER_ENV.items():  # offline, no telemetry, before remy loads
    os.environ.setdefault(_key, _value)

import numpy as np  # noqa: E402
from remy_reliability_support import TokenHashEmbedder, ZipfText  # noqa: E402

from remy_retriever import Document, Retriever  # noqa: E402

MODES = ("semantic", "lexical", "hybrid")
TENANTS = [f"t{i}" for i in range(10)]
MAX_RSS_GROWTH = 0.10


@dataclass
class Window:
    start_s: float
    queries: int
    errors: int
    p50_ms: float
    p99_ms: float


def build(store: Path, chunks: int, dim: int, progress: bool) -> tuple[Retriever, ZipfText, float]:
    text = ZipfText(size=20_000, exponent=1.1, seed=7)
    rng = np.random.default_rng(42)
    r = Retriever(store, collection="soak", embedder=TokenHashEmbedder(dim=dim), max_tokens=256)
    began = time.perf_counter()
    batch = 2000
    for lo in range(0, chunks, batch):
        docs = [
            Document(
                id=f"s{i}",
                text=text.paragraph(rng, int(rng.integers(12, 40))),
                metadata={
                    "tenant": TENANTS[i % len(TENANTS)],
                    "year": 1990 + i % 35,
                    "flag": i % 3 == 0,
                },
            )
            for i in range(lo, min(chunks, lo + batch))
        ]
        r.add(docs, progress=False)
        if progress:
            print(f"  ingested {min(chunks, lo + batch):,}/{chunks:,}", file=sys.stderr)
    return r, text, time.perf_counter() - began


def query_args(rng: random.Random, text: ZipfText, nprng: np.random.Generator) -> dict[str, Any]:
    words = text.words_for(nprng, rng.randint(1, 5))
    args: dict[str, Any] = {"mode": rng.choice(MODES), "k": 10}
    roll = rng.random()
    if roll < 0.3:
        args["where"] = {"tenant": rng.choice(TENANTS)}
    elif roll < 0.4:
        args["where"] = {"$and": [{"year": {"$gte": 2000}}, {"flag": True}]}
    if rng.random() < 0.1:
        args["explain"] = True
    if rng.random() < 0.1:
        args["highlight"] = True
    if rng.random() < 0.05:
        args["expand"] = 1
    args["query"] = " ".join(words)
    return args


def run(
    *,
    chunks: int,
    seconds: float,
    threads: int,
    window: float,
    dim: int = 64,
    db: Path | None = None,
    warmup: float = 10.0,
    progress: bool = True,
) -> dict[str, Any]:
    machine = common.machine()
    tmp = Path(tempfile.mkdtemp(prefix="remy-soak-")) if db is None else db
    try:
        r, text, ingest_s = build(tmp / "db", chunks, dim, progress)
        count = r.count()
        samples: list[tuple[float, float, bool]] = []  # (t since start, latency s, ok)
        errors: list[str] = []
        lock = threading.Lock()
        stop = threading.Event()

        def worker(index: int, until: threading.Event, record: bool) -> None:
            rng = random.Random(1000 + index)
            nprng = np.random.default_rng(2000 + index)
            while not until.is_set():
                args = query_args(rng, text, nprng)
                query = args.pop("query")
                began = time.perf_counter()
                ok = True
                try:
                    r.search(query, **args)
                except Exception as exc:
                    ok = False
                    with lock:
                        errors.append(f"{type(exc).__name__}: {exc}"[:300])
                latency = time.perf_counter() - began
                if record:
                    with lock:
                        samples.append((began - t0, latency, ok))

        def phase(until: threading.Event, record: bool, length: float) -> int:
            """``threads`` workers for ``length`` seconds; how many did not stop."""
            pool = [
                threading.Thread(target=worker, args=(i, until, record)) for i in range(threads)
            ]
            for t in pool:
                t.start()
            time.sleep(length)
            until.set()
            for t in pool:
                t.join(timeout=120)
            return sum(t.is_alive() for t in pool)

        # Warm-up (caches, allocator) before the start RSS is taken.
        t0 = time.perf_counter()
        phase(threading.Event(), False, warmup)
        gc.collect()
        rss_start = common.current_rss_mib()
        t0 = time.perf_counter()
        hung = phase(stop, True, seconds)
        gc.collect()
        rss_end = common.current_rss_mib()
        windows = []
        n_windows = max(1, round(seconds / window))
        for w in range(n_windows):
            lo, hi = w * window, (w + 1) * window
            lat = sorted(s[1] * 1000 for s in samples if lo <= s[0] < hi)
            if not lat:
                continue
            windows.append(
                Window(
                    start_s=lo,
                    queries=len(lat),
                    errors=sum(1 for s in samples if lo <= s[0] < hi and not s[2]),
                    p50_ms=round(statistics.median(lat), 2),
                    p99_ms=round(lat[min(len(lat) - 1, int(0.99 * len(lat)))], 2),
                )
            )
        all_lat = sorted(s[1] * 1000 for s in samples)
        growth = (rss_end - rss_start) / rss_start
        report = {
            "config": {
                "chunks_requested": chunks,
                "chunks_stored": count,
                "seconds": seconds,
                "threads": threads,
                "window_s": window,
                "embedding_dim": dim,
                "warmup_s": warmup,
            },
            "ingest_s": round(ingest_s, 1),
            "queries": len(samples),
            "qps": round(len(samples) / seconds, 1),
            "errors": len(errors) + hung,
            "error_samples": errors[:10],
            "hung_threads": hung,
            "p50_ms": round(statistics.median(all_lat), 2) if all_lat else None,
            "p99_ms": round(all_lat[int(0.99 * (len(all_lat) - 1))], 2) if all_lat else None,
            "windows": [asdict(w) for w in windows],
            "rss_mb_start": round(rss_start, 1),
            "rss_mb_end": round(rss_end, 1),
            "rss_growth": round(growth, 4),
            "passed": not errors and not hung and growth < MAX_RSS_GROWTH,
            "machine": common.finish_machine(machine),
        }
        r.close()
        return report
    finally:
        if db is None:
            shutil.rmtree(tmp, ignore_errors=True)


def markdown(report: dict[str, Any]) -> str:
    cfg = report["config"]
    lines = [
        "# Soak test",
        "",
        f"{cfg['chunks_stored']:,} chunks, {cfg['threads']} query threads, "
        f"{cfg['seconds']:g} s (after {cfg['warmup_s']:g} s warm-up); "
        f"ingest took {report['ingest_s']} s. Machine: {report['machine']['cores']} cores, "
        f"load average at the end {report['machine']['load_average_end']}.",
        "",
        f"- **errors: {report['errors']}** (must be 0)",
        f"- queries: {report['queries']:,} ({report['qps']} per second)",
        f"- latency: p50 {report['p50_ms']} ms, p99 {report['p99_ms']} ms",
        f"- RSS: {report['rss_mb_start']} MB after warm-up, {report['rss_mb_end']} MB at the "
        f"end (**{report['rss_growth'] * 100:+.1f}%**, must stay under "
        f"{MAX_RSS_GROWTH * 100:.0f}%)",
        f"- result: **{'PASS' if report['passed'] else 'FAIL'}**",
        "",
        "| window (s) | queries | errors | p50 ms | p99 ms |",
        "|---:|---:|---:|---:|---:|",
    ]
    for w in report["windows"]:
        end = w["start_s"] + cfg["window_s"]
        lines.append(
            f"| {w['start_s']:g}-{end:g} | {w['queries']} | {w['errors']} | "
            f"{w['p50_ms']} | {w['p99_ms']} |"
        )
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--chunks", type=int, default=100_000)
    parser.add_argument("--seconds", type=float, default=300.0)
    parser.add_argument("--threads", type=int, default=4)
    parser.add_argument("--window", type=float, default=30.0)
    parser.add_argument("--warmup", type=float, default=10.0)
    parser.add_argument("--dim", type=int, default=64)
    parser.add_argument("--out", type=Path, default=common.RESULTS_DIR)
    parser.add_argument("--name", default="soak")
    args = parser.parse_args(argv)
    report = run(
        chunks=args.chunks,
        seconds=args.seconds,
        threads=args.threads,
        window=args.window,
        dim=args.dim,
        warmup=args.warmup,
    )
    args.out.mkdir(parents=True, exist_ok=True)
    common.write_json(args.out / f"{args.name}.json", report)
    (args.out / f"{args.name}.md").write_text(markdown(report))
    print(markdown(report))
    return 0 if report["passed"] else 1


if __name__ == "__main__":
    raise SystemExit(main())

"""Profile: what ``doctor``'s dense-reachability check costs.

    python -m benchmarks.reachability --n 100000

Builds a store of ``--n`` one-chunk documents through the engine (``Retriever.add``,
so Chroma, the document table and the lexical index hold what a real ingest writes),
with vectors from a seeded random embedder instead of a model: each text's vector is a
random unit vector seeded by the text's hash (384 dimensions, MiniLM's), so the graph
Chroma builds is of the same size and shape, and no embedding time is spent. Then, in a
fresh process's view of the store, ``doctor()`` runs ``--reps`` times in each of three
ways, round-robin: without the check (``sample=0``), with the default sample (1,000
chunks, half of them the newest) and with ``full=True`` (every chunk). Reported: the
median wall time of each, the check's cost over the plain doctor, and the chunks found
unreachable (on a graph nobody damaged, any found are chunks HNSW itself cannot reach).
"""

from __future__ import annotations

import argparse
import hashlib
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
WORDS = 20_000


class SeededRandomEmbedder:
    """A text's vector: a unit vector from a generator seeded by the text's hash."""

    model_id = "bench/seeded-random"

    def _one(self, text: str) -> np.ndarray:
        seed = int.from_bytes(hashlib.blake2b(text.encode()).digest()[:8], "little")
        raw = np.random.default_rng(seed).standard_normal(DIM).astype(np.float32)
        return raw / np.linalg.norm(raw)

    def embed_documents(self, texts: Sequence[str]) -> np.ndarray:
        if not texts:
            return np.zeros((0, DIM), dtype=np.float32)
        return np.stack([self._one(t) for t in texts])

    def embed_query(self, text: str) -> np.ndarray:
        return self._one(text)


def _documents(lo: int, hi: int) -> list[Any]:
    from remy_retriever import Document

    rng = np.random.default_rng(lo)
    return [
        Document(
            id=f"doc{i}",
            text=" ".join(f"w{w}" for w in rng.integers(0, WORDS, 40)),
            metadata={"tenant": f"t{i % 100}"},
        )
        for i in range(lo, hi)
    ]


def build(store: Path, n: int, batch: int) -> float:
    """Write ``n`` documents; returns the seconds it took."""
    from remy_retriever import Retriever

    began = time.perf_counter()
    with Retriever(store, collection="bench", embedder=SeededRandomEmbedder()) as r:
        for lo in range(0, n, batch):
            r.add(_documents(lo, min(n, lo + batch)), batch_size=batch)
            if (lo // batch) % 10 == 0:
                print(f"[reachability] built {min(n, lo + batch):,} of {n:,}", flush=True)
    return time.perf_counter() - began


def measure(store: Path, reps: int) -> dict[str, Any]:
    """Doctor in its three ways, ``reps`` rounds, round-robin (run in a fresh process)."""
    from remy_retriever import Retriever

    ways: dict[str, dict[str, Any]] = {
        "doctor, no reachability check (sample=0)": {"sample": 0},
        "doctor, default sample (1,000 chunks)": {},
        "doctor --full (every chunk)": {"full": True},
    }
    seconds: dict[str, list[float]] = {k: [] for k in ways}
    found: dict[str, list[int]] = {k: [] for k in ways}
    checked: dict[str, int] = {}
    with Retriever(store, collection="bench", embedder=SeededRandomEmbedder()) as r:
        chunks = r.count()
        t0 = time.perf_counter()
        r.doctor(sample=0)  # the first call loads Chroma's index from disk: not a round
        first = time.perf_counter() - t0
        for rep in range(reps):
            for name, kwargs in ways.items():
                t0 = time.perf_counter()
                report = r.doctor(**kwargs)
                seconds[name].append(time.perf_counter() - t0)
                found[name].append(len(report.unreachable))
                checked[name] = report.reachability_checked
                print(
                    f"[reachability] rep {rep + 1}: {name}: {seconds[name][-1]:.1f} s", flush=True
                )
    plain = statistics.median(seconds["doctor, no reachability check (sample=0)"])
    out: dict[str, Any] = {"chunks": chunks, "first_doctor_s": round(first, 2), "ways": {}}
    for name in ways:
        median = statistics.median(seconds[name])
        out["ways"][name] = {
            "seconds": [round(s, 2) for s in seconds[name]],
            "median_s": round(median, 2),
            "over_plain_s": round(median - plain, 2),
            "checked": checked[name],
            "checked_per_s": round(checked[name] / (median - plain), 1)
            if checked[name] and median > plain
            else None,
            "unreachable_found": found[name],
        }
    return out


def run(args: argparse.Namespace) -> dict[str, Any]:
    tmp = Path(tempfile.mkdtemp(prefix="remy-bench-reach-"))
    store = tmp / "db"
    try:
        build_s = build(store, args.n, args.batch)
        # A fresh process opens the store, as `remy doctor` would.
        result = common.run_worker(
            "benchmarks.reachability",
            ["--worker", str(store), "--reps", str(args.reps)],
            timeout=args.timeout,
        )
        result.pop("peak_rss_mib", None)
        return {
            "documents": args.n,
            "build_s": round(build_s, 1),
            "reps": args.reps,
            "disk_mib": common.dir_size_mib(store),
            **result,
        }
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def _markdown(data: dict[str, Any]) -> str:
    r = data["result"]
    first = (
        f" one untimed plain doctor that loads Chroma's index ({r['first_doctor_s']:.1f} s), then"
        if "first_doctor_s" in r
        else ""
    )
    parts = [common.header_md("Profile: doctor's dense-reachability check", data)]
    parts.append(
        f"{r['chunks']:,} one-chunk documents of 40 words written through `Retriever.add` "
        f"({r['build_s']:,.0f} s; store {r['disk_mib']:,.0f} MiB) with seeded random "
        f"{DIM}-d unit vectors instead of a model's; then, in a fresh process,{first} each "
        f"way {r['reps']} times round-robin (median wall time). A chunk is reachable when a "
        "dense query for its own stored vector returns it among the nearest 10, or else "
        "among 500 in a wider search.\n"
    )
    parts.append(
        common.md_table(
            [
                "run",
                "chunks checked",
                "median s",
                "over plain doctor s",
                "checked/s",
                "unreachable found",
            ],
            [
                [
                    name,
                    w["checked"],
                    w["median_s"],
                    w["over_plain_s"],
                    w["checked_per_s"],
                    ", ".join(map(str, w["unreachable_found"])) if w["checked"] else "–",
                ]
                for name, w in r["ways"].items()
            ],
        )
    )
    return "\n".join(parts)


def main(argv: Sequence[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--n", type=int, default=100_000, help="documents (one chunk each)")
    p.add_argument("--batch", type=int, default=1000, help="documents per add()")
    p.add_argument("--reps", type=int, default=2)
    p.add_argument("--timeout", type=float, default=7200.0)
    p.add_argument("--out", type=Path, default=common.RESULTS_DIR)
    p.add_argument("--name", default="reachability")
    p.add_argument("--worker", type=Path, default=None, help=argparse.SUPPRESS)
    p.add_argument("--worker-out", default=None, help=argparse.SUPPRESS)
    args = p.parse_args(argv)
    if args.worker is not None:
        return _worker(args)
    return common.run_and_publish(args, "reachability", run, _markdown)


def _worker(args: argparse.Namespace) -> int:
    data = measure(args.worker, args.reps)
    common.write_worker_output(args.worker_out, data)
    return 0


if __name__ == "__main__":
    sys.exit(main())

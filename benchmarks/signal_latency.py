"""Cost of the signal-adaptive weight per query: ``fusion.signal_alpha`` alone and the
convex fusion with and without it, on the stored branch lists of
``benchmarks.cross_data`` (100 candidates per branch; the function reads only those lists
and the query terms' idf, which the search already looks up for the BM25 ceiling, so its
cost does not grow with the collection).

    python -m benchmarks.signal_latency --branches /work/cache/branches
"""

from __future__ import annotations

import argparse
import json
import statistics
import time
from pathlib import Path

from benchmarks import common
from remy_retriever.search import fusion


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--branches", required=True)
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args()
    queries = []
    for path in sorted(Path(args.branches).glob("*.json")):
        queries += json.loads(path.read_text())["queries"]

    def per_query_ms(call) -> float:  # type: ignore[no-untyped-def]
        runs = []
        for _ in range(args.repeat):
            started = time.perf_counter()
            for q in queries:
                call(q)
            runs.append((time.perf_counter() - started) * 1000 / len(queries))
        return statistics.median(runs)

    def signals(q):  # type: ignore[no-untyped-def]
        b = q["branches"]
        return fusion.signal_alpha(
            0.45, b["semantic"], b["lexical"], idf=q["idf"], ceiling=q["ceiling"]
        )

    def fused(adaptive):  # type: ignore[no-untyped-def]
        return lambda q: fusion.fuse(
            q["branches"],
            fusion="convex",
            alpha=0.45,
            normalization="calibrated",
            adaptive=adaptive,
            extra=q["extra"],
            scales={"lexical": q["ceiling"]},
            idf=q["idf"],
        )

    out = {
        "queries": len(queries),
        "signal_alpha_ms": round(per_query_ms(signals), 4),
        "fuse_fixed_ms": round(per_query_ms(fused(False)), 4),
        "fuse_signals_ms": round(per_query_ms(fused("signals")), 4),
        "machine": common.machine(),
    }
    out["ratio"] = round(out["fuse_signals_ms"] / out["fuse_fixed_ms"], 3)
    rows = [
        ("signal_alpha alone", out["signal_alpha_ms"]),
        ("convex fusion, fixed alpha", out["fuse_fixed_ms"]),
        ('convex fusion, adaptive="signals"', out["fuse_signals_ms"]),
    ]
    md = "# Signal-adaptive fusion: cost per query\n\n"
    md += f"{out['queries']} judged queries of the five collections, 100 candidates per branch.\n\n"
    md += "| step | ms per query |\n|---|---|\n"
    md += "".join(f"| {name} | {ms:.4f} |\n" for name, ms in rows)
    md += f"\nWith signals / fixed: {out['ratio']:.3f}x.\n"
    common.write_json(common.RESULTS_DIR / "signal-latency.json", out)
    (common.RESULTS_DIR / "signal-latency.md").write_text(md)
    print(md)


if __name__ == "__main__":
    main()

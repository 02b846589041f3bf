"""The fusion-defaults report (benchmarks/results/fusion-defaults.md) from the sweep,
latency and tune hold-out JSON files.

    python -m benchmarks.fusion_report
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

from benchmarks import common

R = common.RECORD_DIR
CHOSEN = "convex calib fill=lexical only a=0.45"
PREVIOUS = "convex minmax missing=zero a=0.4"


def _rows() -> dict[str, dict[str, Any]]:
    """variant -> {split: row} over the sweep files."""
    files = {
        "scifact-train": "quality-sweep-scifact-train.json",
        "scifact-test": "quality-sweep-scifact-test.json",
        "cisi-test": "quality-sweep-cisi-test.json",
    }
    out: dict[str, dict[str, Any]] = {}
    for split, name in files.items():
        for variant, row in json.loads((R / name).read_text())["rows"].items():
            out.setdefault(variant, {})[split] = row
    half = json.loads((R / "quality-sweep-calib-half-fill.json").read_text())
    for split, rows in half.items():
        for variant, row in rows.items():
            out.setdefault(variant, {})[split] = row
    return out


def _cell(row: dict[str, Any] | None) -> str:
    return "–" if row is None else f"{row['nDCG@10']:.4f}"


def main() -> None:
    global R
    p = argparse.ArgumentParser(description=__doc__)
    p.add_argument("--results", type=Path, default=common.RECORD_DIR, help="the sweep results")
    p.add_argument("--out", type=Path, default=common.RESULTS_DIR)
    args = p.parse_args()
    R = args.results
    rows = _rows()
    ranked = sorted(rows, key=lambda v: -rows[v].get("scifact-train", {}).get("nDCG@10", 0.0))
    parts = ["# Fusion defaults: every variant, chosen on SciFact train\n"]
    parts.append(
        "nDCG@10 (documents ranked by their best chunk, 100 candidates per branch). The "
        "`scifact-train` column chose; the other two only confirm. Names: `calib` = "
        "calibrated (cosine as is, BM25 / the query's BM25 ceiling), `z` = z-scores, "
        "`dbsf` = mean +- 3 sd clipped, `max` = score / list max; `fill` = both branches "
        "scored for every candidate, `fill=lexical only` = BM25 of the dense-only chunks; "
        "`missing=zero|min` = what an unlisted chunk gets; `adaptive=top|gap` = per-query "
        "alpha from how peaked each list is.\n"
    )
    table = []
    for v in ranked:
        r = rows[v]
        mark = " **(chosen)**" if v == CHOSEN else (" (previous default)" if v == PREVIOUS else "")
        table.append(
            [
                v + mark,
                _cell(r.get("scifact-train")),
                _cell(r.get("scifact-test")),
                _cell(r.get("cisi-test")),
            ]
        )
    parts.append(common.md_table(["variant", "SciFact train", "SciFact test", "CISI"], table))
    extras = R / "quality-sweep-extras-scifact-train.json"
    if extras.is_file():
        parts.append(
            "\nOn top of `convex calib fill a=0.45` (SciFact train): dense pseudo-relevance "
            "feedback (Rocchio on the fused top-k; the BM25 of new dense candidates counts "
            "0 here) and soft-max document aggregation:\n"
        )
        got = json.loads(extras.read_text())["rows"]
        parts.append(
            common.md_table(
                ["variant", "SciFact train"],
                [
                    [k, f"{v['nDCG@10']:.4f}"]
                    for k, v in sorted(got.items(), key=lambda kv: -kv[1]["nDCG@10"])
                ],
            )
        )
    for name, label in (
        ("quality-sweep-bm25-scifact-train.json", "SciFact train"),
        ("quality-sweep-bm25-cisi-test.json", "CISI"),
    ):
        bm25 = R / name
        if not bm25.is_file():
            continue
        got = json.loads(bm25.read_text())["rows"]
        parts.append(
            f"\nBM25 k1 / b / title weight, recomputed offline (tantivy fixes k1=1.2, "
            f"b=0.75), {label}: lexical alone and two fusions on it:\n"
        )
        parts.append(
            common.md_table(
                ["BM25 and system", label], [[k, f"{v['nDCG@10']:.4f}"] for k, v in got.items()]
            )
        )
    lat = R / "fusion-latency.json"
    if lat.is_file():
        got = json.loads(lat.read_text())["datasets"]
        parts.append("\nHybrid `Retriever.rank` p50 / p95 ms, previous vs chosen, interleaved:\n")
        parts.append(
            common.md_table(
                ["dataset", "previous p50", "chosen p50", "p50 ratio", "p95 ratio"],
                [
                    [
                        d,
                        v["previous"]["p50_ms"],
                        v["current"]["p50_ms"],
                        v["p50_ratio"],
                        v["p95_ratio"],
                    ]
                    for d, v in got.items()
                ],
            )
        )
    hold = R / "tune-holdout.json"
    if hold.is_file():
        parts.append("\n`remy tune` on held-out queries (`benchmarks/tune_holdout.py`):\n")
        parts.append("```json\n" + hold.read_text().strip() + "\n```")
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "fusion-defaults.md").write_text("\n".join(parts) + "\n")
    print(f"wrote {args.out / 'fusion-defaults.md'}")


if __name__ == "__main__":
    main()

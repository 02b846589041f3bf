"""What per-filter BM25 statistics cost: filtered lexical search with collection-wide
statistics (the default) against ``bm25_statistics="filter"``.

    python -m benchmarks.tenant_statistics --dataset ../shared/data/beir/scifact \\
        --copies 10 --tenants 20

The SciFact corpus is copied ``--copies`` times (ids suffixed), each chunk assigned to one
of ``--tenants`` tenants round-robin, and written straight into a lexical index (no
embedding: this measures the lexical branch only). Each SciFact test query then runs
with ``where={"tenant": ...}`` in both settings, alternating, and the latency summaries
and their ratio are reported. Per-filter statistics add one count query for the filter
and one per query term.
"""

from __future__ import annotations

import argparse
import tempfile
import time
from pathlib import Path
from typing import Any

from benchmarks import common
from remy_retriever.evaluation.beir import load_beir
from remy_retriever.schema.filters import parse_where
from remy_retriever.schema.records import LexicalRecord
from remy_retriever.stores.lexical import LexicalIndex

DEFAULT_DATASET = common.ROOT.parent / "shared" / "data" / "beir" / "scifact"


def _records(dataset: Any, copies: int, tenants: int) -> list[LexicalRecord]:
    out: list[LexicalRecord] = []
    for copy in range(copies):
        for doc_id, (title, text) in dataset.corpus.items():
            n = len(out)
            chunk_doc = f"{doc_id}-{copy}"
            meta = {"tenant": f"t{n % tenants}"}
            out.append(LexicalRecord(f"{chunk_doc}#0", chunk_doc, f"{title}\n{text}", meta, str(n)))
    return out


def run(args: argparse.Namespace) -> dict[str, Any]:
    dataset = load_beir(args.dataset)
    records = _records(dataset, args.copies, args.tenants)
    queries = [dataset.queries[q] for q in dataset.qrels if q in dataset.queries]
    with tempfile.TemporaryDirectory() as tmp:
        index = LexicalIndex(Path(tmp) / "lex")
        began = time.perf_counter()
        for start in range(0, len(records), 20_000):
            index.upsert(records[start : start + 20_000])
        build_s = time.perf_counter() - began
        latencies: dict[str, list[float]] = {"collection": [], "filter": []}
        for _ in range(args.rounds):
            for i, query in enumerate(queries):
                where = {"tenant": f"t{i % args.tenants}"}
                for setting in ("collection", "filter"):
                    index.filter_statistics = setting == "filter"
                    t0 = time.perf_counter()
                    index.search(query, 10, parse_where(where))
                    latencies[setting].append((time.perf_counter() - t0) * 1000)
        index.close()
    summary = {name: common.summarize(values) for name, values in latencies.items()}
    return {
        "chunks": len(records),
        "tenants": args.tenants,
        "queries": len(queries),
        "rounds": args.rounds,
        "build_s": round(build_s, 1),
        "latency_ms": summary,
        "p50_ratio": round(summary["filter"]["p50_ms"] / summary["collection"]["p50_ms"], 2),
    }


def markdown(data: dict[str, Any]) -> str:
    r = data["result"]
    rows = [[name, s["p50_ms"], s["p95_ms"], s["mean_ms"]] for name, s in r["latency_ms"].items()]
    return (
        common.header_md("Per-filter BM25 statistics: cost", data)
        + f"\n{r['chunks']:,} chunks, {r['tenants']} tenants, {r['queries']} SciFact test "
        f"queries x {r['rounds']} rounds, filtered lexical search, k=10.\n\n"
        + common.md_table(["bm25_statistics", "p50 ms", "p95 ms", "mean ms"], rows)
        + f"\n\np50 ratio filter/collection: {r['p50_ratio']}\n"
    )


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--dataset", type=Path, default=DEFAULT_DATASET)
    parser.add_argument("--copies", type=int, default=10)
    parser.add_argument("--tenants", type=int, default=20)
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--out", type=Path, default=common.RESULTS_DIR)
    parser.add_argument("--name", default="tenant-statistics")
    args = parser.parse_args()
    return common.run_and_publish(args, "tenant_statistics", run, markdown)


if __name__ == "__main__":
    raise SystemExit(main())

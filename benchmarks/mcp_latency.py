"""What ``remy mcp`` adds to a search: the ``search`` tool called over stdio with the MCP
SDK's ``ClientSession`` against the in-process ``Retriever.search``, same store, same
queries.

    python -m benchmarks.mcp_latency --dataset ../shared/data/beir/scifact --max-docs 1000

The first ``--max-docs`` SciFact documents are embedded into a store, which is copied:
the in-process ``Retriever`` opens one copy, a ``remy mcp --db COPY`` subprocess the
other (two processes never share an embedded store). Each judged query then runs
``--rounds`` times on both, alternating which goes first, hybrid mode, k=5: in process,
``Retriever.search``; over MCP, ``session.call_tool("search", ...)`` timed in the client
from the request to the validated result (JSON-RPC over pipes, the tool's text
rendering, the hits' JSON, and the client's check against the tool's outputSchema). A
``ping`` round trip is timed too: the protocol's floor. Target: MCP p50 - in-process p50
<= 5 ms.
"""

from __future__ import annotations

import argparse
import os
import shutil
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import anyio
from mcp import ClientSession, StdioServerParameters, stdio_client

from benchmarks import common
from remy_retriever import Retriever
from remy_retriever.evaluation.beir import load_beir

DEFAULT_DATASET = common.ROOT.parent / "shared" / "data" / "beir" / "scifact"
TARGET_MS = 5.0
K = 5


async def _measure(
    db_in: Path, db_mcp: Path, queries: list[str], rounds: int, threads: int
) -> dict[str, Any]:
    latencies: dict[str, list[float]] = {"in-process": [], "mcp-stdio": [], "mcp-ping": []}
    server = StdioServerParameters(
        command=sys.executable,
        args=["-m", "remy_retriever.cli", "mcp", "--db", str(db_mcp), "--read-only"],
        env={
            **os.environ,
            **common.WORKER_ENV,
            "PYTHONPATH": str(common.ROOT),
            "OMP_NUM_THREADS": str(threads),  # the server's torch threads, like ours
        },
    )
    with Retriever(str(db_in)) as retriever:
        async with stdio_client(server) as (read, write), ClientSession(read, write) as session:
            await session.initialize()
            await session.list_tools()  # the client caches the output schema

            def local(query: str) -> None:
                retriever.search(query, k=K, mode="hybrid")

            async def remote(query: str) -> None:
                result = await session.call_tool("search", {"query": query, "k": K})
                assert not result.is_error, result.content

            for query in queries[:5]:  # warm-up, untimed
                local(query)
                await remote(query)
            for round_ in range(rounds):
                for i, query in enumerate(queries):
                    order = ("in-process", "mcp-stdio")
                    for system in order if (i + round_) % 2 == 0 else order[::-1]:
                        t0 = time.perf_counter()
                        if system == "in-process":
                            local(query)
                        else:
                            await remote(query)
                        latencies[system].append((time.perf_counter() - t0) * 1000)
                    t0 = time.perf_counter()
                    await session.send_ping()
                    latencies["mcp-ping"].append((time.perf_counter() - t0) * 1000)
    return latencies


def run(args: argparse.Namespace) -> dict[str, Any]:
    # lazy: torch is only needed to pin the thread count, after the arguments are read
    import torch

    torch.set_num_threads(args.threads)
    dataset = load_beir(args.dataset)
    docs = dataset.documents()[: args.max_docs]
    queries = [dataset.queries[q] for q in dataset.qrels if q in dataset.queries]
    queries = queries[: args.queries]
    with tempfile.TemporaryDirectory() as tmp:
        db_in, db_mcp = Path(tmp) / "in-process", Path(tmp) / "mcp"
        with Retriever(str(db_in), progress=False) as retriever:
            retriever.add(docs)
            chunks = retriever.count()
        shutil.copytree(db_in, db_mcp)
        latencies = anyio.run(_measure, db_in, db_mcp, queries, args.rounds, args.threads)
    summary = {name: common.summarize(values) for name, values in latencies.items()}
    added = summary["mcp-stdio"]["p50_ms"] - summary["in-process"]["p50_ms"]
    return {
        "documents": len(docs),
        "chunks": chunks,
        "queries": len(queries),
        "rounds": args.rounds,
        "k": K,
        "torch_threads": args.threads,
        "mode": "hybrid",
        "latency_ms": summary,
        "added_p50_ms": round(added, 3),
        "p50_ratio": round(summary["mcp-stdio"]["p50_ms"] / summary["in-process"]["p50_ms"], 3),
        "target_added_p50_ms": TARGET_MS,
        "target_met": added <= TARGET_MS,
    }


def markdown(data: dict[str, Any]) -> str:
    r = data["result"]
    rows = [
        [name, s["p50_ms"], s["p95_ms"], s["mean_ms"], s["n"]]
        for name, s in r["latency_ms"].items()
    ]
    met = "yes" if r["target_met"] else "**no**"
    return (
        common.header_md("remy mcp: search tool latency over stdio", data)
        + f"\n{r['documents']:,} SciFact documents ({r['chunks']:,} chunks), {r['queries']} "
        f"judged queries x {r['rounds']} rounds, {r['mode']} search, k={r['k']}, "
        f"{r['torch_threads']} torch thread(s) in each process, alternating "
        "in-process `Retriever.search` and the MCP `search` tool (one `remy mcp` subprocess, "
        "SDK `ClientSession` over stdio); `mcp-ping` is a protocol round trip alone.\n\n"
        + common.md_table(["system", "p50 ms", "p95 ms", "mean ms", "calls"], rows)
        + f"\n\nAdded by MCP at p50: {r['added_p50_ms']} ms (ratio {r['p50_ratio']}); target "
        f"<= {r['target_added_p50_ms']} ms: {met}.\n"
    )


def plot(data: dict[str, Any], path: Path) -> None:
    pyplot = common.plt()
    summary = data["result"]["latency_ms"]
    names = list(summary)
    fig, ax = pyplot.subplots(figsize=(6, 3.5))
    width = 0.38
    xs = range(len(names))
    ax.bar([x - width / 2 for x in xs], [summary[n]["p50_ms"] for n in names], width, label="p50")
    ax.bar([x + width / 2 for x in xs], [summary[n]["p95_ms"] for n in names], width, label="p95")
    ax.set_xticks(list(xs), names)
    ax.set_ylabel("ms per call")
    ax.set_title("search: in process vs the MCP tool over stdio")
    ax.legend()
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    pyplot.close(fig)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--dataset", type=Path, default=DEFAULT_DATASET)
    parser.add_argument("--max-docs", type=int, default=1000)
    parser.add_argument("--queries", type=int, default=300)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument(
        "--threads", type=int, default=1, help="torch threads, in process and in the server"
    )
    parser.add_argument("--out", type=Path, default=common.RESULTS_DIR)
    parser.add_argument("--name", default="mcp-latency")
    args = parser.parse_args()
    return common.run_and_publish(args, "mcp_latency", run, markdown, plot)


if __name__ == "__main__":
    raise SystemExit(main())

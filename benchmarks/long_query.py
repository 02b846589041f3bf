"""What a 100,000-character query costs (SECURITY.md, "Bounded work").

    python -m benchmarks.long_query --reps 5

Ingests ``examples/corpus/`` with the real all-MiniLM-L6-v2 model (one torch thread),
then times ``Retriever.search`` with explain, highlight and expand on, in each mode,
alternating a 100,000-character query (the one of
``reliability/test_fuzz.py::test_a_100k_character_query_is_bounded_work_in_every_mode``:
a short question followed by 20,000 distinct made-up words) with an ordinary one, after
one warm-up each.
"""

from __future__ import annotations

import argparse
import tempfile
import time
from pathlib import Path
from typing import Any

from benchmarks import common

CORPUS = common.ROOT / "examples" / "corpus"
MODES = ("lexical", "semantic", "hybrid")
SHORT = "install the agent on linux"


def long_query(chars: int) -> str:
    words = " ".join(f"w{i}" for i in range(chars // 3))
    return (f"{SHORT} {words} ")[:chars]


def run(args: argparse.Namespace) -> dict[str, Any]:
    import torch  # lazy: the benchmark's own setting, before the model loads

    from remy_retriever import Retriever

    torch.set_num_threads(1)
    query = long_query(args.chars)
    options: dict[str, Any] = {"k": 5, "explain": True, "highlight": True, "expand": 1}
    out: dict[str, Any] = {}
    with (
        tempfile.TemporaryDirectory(prefix="remy-long-query-") as tmp,
        Retriever(Path(tmp) / "db") as r,
    ):
        r.ingest(CORPUS, progress=False)
        chunks = r.count()
        for mode in MODES:
            times: dict[str, list[float]] = {"long": [], "short": []}
            for text in (query, SHORT):  # warm-up
                r.search(text, mode=mode, **options)
            for _ in range(args.reps):
                for name, text in (("long", query), ("short", SHORT)):
                    began = time.perf_counter()
                    r.search(text, mode=mode, **options)
                    times[name].append(time.perf_counter() - began)
            long_s = common.summarize([t * 1000 for t in times["long"]])
            short_s = common.summarize([t * 1000 for t in times["short"]])
            out[mode] = {
                "long_p50_s": round(long_s["p50_ms"] / 1000, 3),
                "long_max_s": round(max(times["long"]), 3),
                "short_p50_s": round(short_s["p50_ms"] / 1000, 3),
                "ratio": round(long_s["p50_ms"] / short_s["p50_ms"], 1),
            }
    return {
        "query_chars": len(query),
        "chunks": chunks,
        "reps": args.reps,
        "torch_threads": 1,
        "modes": out,
    }


def markdown(data: dict[str, Any]) -> str:
    r = data["result"]
    rows = [
        [mode, m["long_p50_s"], m["long_max_s"], m["short_p50_s"], m["ratio"]]
        for mode, m in r["modes"].items()
    ]
    return (
        common.header_md("A 100,000-character query: cost", data)
        + f"\n`Retriever.search(k=5, explain=True, highlight=True, expand=1)` over "
        f"{r['chunks']} chunks (`examples/corpus`), real all-MiniLM-L6-v2, "
        f"{r['torch_threads']} torch thread; a {r['query_chars']:,}-character query "
        f"alternated with `{SHORT}`, {r['reps']} reps after a warm-up.\n\n"
        + common.md_table(
            ["mode", "long p50 s", "long max s", "ordinary p50 s", "long / ordinary"], rows
        )
        + "\n"
    )


def main() -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--reps", type=int, default=5)
    parser.add_argument("--chars", type=int, default=100_000)
    parser.add_argument("--out", type=Path, default=common.RESULTS_DIR)
    parser.add_argument("--name", default="long-query")
    args = parser.parse_args()
    return common.run_and_publish(args, "long_query", run, markdown)


if __name__ == "__main__":
    raise SystemExit(main())

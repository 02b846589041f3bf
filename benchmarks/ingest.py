"""Ingest overhead: end-to-end ``Retriever.add`` vs raw ``SentenceTransformer.encode`` of the
very same chunk texts, in the same run, and the cost of re-ingesting an unchanged corpus.

    python -m benchmarks.ingest --dataset ../shared/data/beir/scifact --max-docs 1000

The chunk texts are computed first with the library's own chunker (same model tokenizer,
same 256-token budget) and checked against what ``add`` actually embeds. Raw encoding and
``add`` alternate (``--reps`` times each, fresh store every time) so that background load
hits both alike; medians are reported. Both use the same loaded model, batch size 32,
normalised float32 output.
"""

from __future__ import annotations

import argparse
import json
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


def run(args: argparse.Namespace) -> dict[str, Any]:
    from remy_retriever import Retriever, SentenceTransformerEmbedder
    from remy_retriever.evaluation.beir import load_beir
    from remy_retriever.text.chunking import chunk_text

    ds = load_beir(args.dataset)
    docs = ds.documents()
    if args.max_docs:
        docs = docs[: args.max_docs]
    embedder = SentenceTransformerEmbedder()
    model = embedder.model
    texts = [
        c.display_text
        for d in docs
        for c in chunk_text(
            d.id,
            d.text,
            title=d.title,
            max_tokens=embedder.max_tokens,
            count_tokens=embedder.count_tokens,
        )
    ]
    model.encode(texts[:64], batch_size=32, normalize_embeddings=True)  # warm-up

    def raw() -> float:
        t0 = time.perf_counter()
        model.encode(
            texts,
            batch_size=embedder.batch_size,
            normalize_embeddings=True,
            convert_to_numpy=True,
            show_progress_bar=False,
        )
        return time.perf_counter() - t0

    raw_s: list[float] = []
    add_s: list[float] = []
    embed_in_add_s: list[float] = []
    reingest_s: list[float] = []
    identical = True
    tmp = Path(tempfile.mkdtemp(prefix="remy-bench-ingest-"))
    try:
        for rep in range(args.reps):
            raw_s.append(raw())
            print(f"[ingest] rep {rep + 1}: raw encode {raw_s[-1]:.1f} s", flush=True)
            rec = common.TimedEmbedder(embedder)
            store = tmp / f"rep{rep}"
            r = Retriever(store, collection="ingest", embedder=rec, progress=False)
            rec.reset()  # the open embeds a fingerprint probe; count add() alone
            t0 = time.perf_counter()
            report = r.add(docs, progress=False)
            add_s.append(time.perf_counter() - t0)
            embed_in_add_s.append(rec.seconds)
            identical = identical and sorted(rec.texts) == sorted(texts)
            t0 = time.perf_counter()
            again = r.add(docs, progress=False)
            reingest_s.append(time.perf_counter() - t0)
            assert not again.added and not again.updated, "re-ingest re-embedded documents"
            print(
                f"[ingest] rep {rep + 1}: add {add_s[-1]:.1f} s (embedding {rec.seconds:.1f} s), "
                f"re-add {reingest_s[-1]:.2f} s",
                flush=True,
            )
            r.close()
            shutil.rmtree(store, ignore_errors=True)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    raw_med = statistics.median(raw_s)
    add_med = statistics.median(add_s)
    # Per-rep ratios (raw and add of one rep run back to back) are less load-sensitive.
    ratios = [a / r for a, r in zip(add_s, raw_s)]
    import torch

    return {
        "torch_threads": torch.get_num_threads(),
        "documents": len(docs),
        "chunks": len(texts),
        "chunks_written": report.chunks_written,
        "texts_identical": identical,
        "reps": args.reps,
        "raw_encode_s": [round(x, 2) for x in raw_s],
        "add_s": [round(x, 2) for x in add_s],
        "embedding_inside_add_s": [round(x, 2) for x in embed_in_add_s],
        "reingest_s": [round(x, 3) for x in reingest_s],
        "raw_encode_median_s": round(raw_med, 2),
        "add_median_s": round(add_med, 2),
        "raw_chunks_per_s": round(len(texts) / raw_med, 1),
        "add_chunks_per_s": round(len(texts) / add_med, 1),
        "overhead_pct_of_medians": round(100 * (add_med / raw_med - 1), 1),
        "overhead_pct_per_rep": [round(100 * (x - 1), 1) for x in ratios],
        "overhead_pct_median_of_reps": round(100 * (statistics.median(ratios) - 1), 1),
        "non_embedding_in_add_s": [round(a - e, 2) for a, e in zip(add_s, embed_in_add_s)],
        # Load-robust overhead: what add spends besides embedding, relative to the
        # embedding it does (the same model call on the same texts as the raw encode).
        "overhead_pct_vs_own_embedding": [
            round(100 * (a - e) / e, 1) for a, e in zip(add_s, embed_in_add_s)
        ],
        "reingest_pct_of_first": round(100 * statistics.median(reingest_s) / add_med, 2),
        "peak_rss_mib": common.peak_rss_mib(),
    }


def _own(r: dict[str, Any]) -> list[float]:
    if "overhead_pct_vs_own_embedding" in r:
        return list(r["overhead_pct_vs_own_embedding"])
    return [round(100 * (a - e) / e, 1) for a, e in zip(r["add_s"], r["embedding_inside_add_s"])]


def _markdown(data: dict[str, Any]) -> str:
    r = data["result"]
    parts = [common.header_md("Ingest: Retriever.add vs raw SentenceTransformer.encode", data)]
    parts.append(
        f"{r['documents']:,} documents of {data['dataset']} -> {r['chunks']:,} chunks "
        f"(identical texts embedded: {r['texts_identical']}); {r['reps']} alternating reps, "
        "fresh store each time.\n"
    )
    parts.append(
        common.md_table(
            ["measure", "value", "target", "met"],
            [
                ["raw encode, median s", r["raw_encode_median_s"], None, None],
                ["Retriever.add, median s", r["add_median_s"], None, None],
                ["raw encode chunks/s", r["raw_chunks_per_s"], None, None],
                ["Retriever.add chunks/s", r["add_chunks_per_s"], None, None],
                [
                    "add vs raw encode, % (median of per-rep ratios; load-sensitive)",
                    r["overhead_pct_median_of_reps"],
                    None,
                    None,
                ],
                [
                    "add overhead: non-embedding / embedding time inside add, % (per rep)",
                    ", ".join(map(str, _own(r))),
                    "<= 10 %",
                    "yes" if max(_own(r)) <= 10 else "NO",
                ],
                [
                    "non-embedding time inside add, s (per rep)",
                    ", ".join(map(str, r["non_embedding_in_add_s"])),
                    None,
                    None,
                ],
                [
                    "re-ingest unchanged corpus, % of first add",
                    r["reingest_pct_of_first"],
                    "< 5 %",
                    "yes" if r["reingest_pct_of_first"] < 5 else "NO",
                ],
                ["peak RSS MiB", r["peak_rss_mib"], None, None],
            ],
        )
    )
    return "\n".join(parts)


def _plot(data: dict[str, Any], path: Path) -> None:
    plt = common.plt()
    r = data["result"]
    fig, ax = plt.subplots(figsize=(7, 4))
    reps = range(1, r["reps"] + 1)
    width = 0.25
    xs = np.arange(r["reps"])
    ax.bar(xs - width, r["raw_encode_s"], width, label="raw encode")
    ax.bar(xs, r["add_s"], width, label="Retriever.add")
    ax.bar(xs + width, r["reingest_s"], width, label="re-add unchanged")
    ax.set_xticks(xs)
    ax.set_xticklabels([f"rep {i}" for i in reps])
    ax.set_ylabel("seconds")
    ax.set_title(
        f"Ingest {r['chunks']:,} chunks: non-embedding time {max(_own(r)):.1f}% of embedding, "
        f"re-ingest {r['reingest_pct_of_first']:.2f}%",
        fontsize=10,
    )
    ax.legend()
    common.save_figure(fig, path)


def main(argv: Sequence[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--dataset", required=True, help="BEIR folder")
    p.add_argument("--max-docs", type=int, default=None, help="first N documents only")
    p.add_argument("--reps", type=int, default=2)
    p.add_argument(
        "--threads", type=int, default=None, help="torch.set_num_threads (default: torch's)"
    )
    p.add_argument("--out", type=Path, default=common.RESULTS_DIR)
    p.add_argument("--name", default="ingest")
    p.add_argument("--render", action="store_true", help="re-render MD/PNG from the JSON")
    args = p.parse_args(argv)
    if args.threads:
        import torch

        torch.set_num_threads(args.threads)
    if args.render:
        data = json.loads((args.out / f"{args.name}.json").read_text())
        data["result"]["overhead_pct_vs_own_embedding"] = _own(data["result"])
        common.write_results(args.out, args.name, data, _markdown(data))
        _plot(data, args.out / f"{args.name}.png")
        return 0
    return common.run_and_publish(
        args,
        "ingest",
        run,
        _markdown,
        _plot,
        dataset=Path(args.dataset).resolve().name,
        max_docs=args.max_docs,
    )


if __name__ == "__main__":
    sys.exit(main())

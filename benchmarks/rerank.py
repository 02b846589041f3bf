"""Rerank cost on CPU: added latency per query at depth 10 / 30 / 100, and pairs/s.

    python -m benchmarks.rerank --dataset ../shared/data/beir/scifact

The cross-encoder is all-MiniLM-L6-v2's encoder with a seeded, untrained one-logit head
(built once, like the test suite's ``cross_encoder_path``; no pretrained cross-encoder is
available offline here). It has the architecture of cross-encoder/ms-marco-MiniLM-L6-v2
(6 layers, 384 hidden, max_length 256), so its cost is representative; its scores are not.
Passages are real chunks of the dataset (the quality benchmark's cache when present, else
the corpus documents); every query is new to the reranker, so its score cache never hits.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from benchmarks import common

DEPTHS = (10, 30, 100)


def seeded_cross_encoder(cache: Path) -> str:
    out = cache / "cross-encoder-minilm-seeded"
    if (out / "config.json").is_file():
        return str(out)
    import torch
    from sentence_transformers import CrossEncoder

    torch.manual_seed(1234)
    model = CrossEncoder(common.minilm_path(), num_labels=1)
    out.mkdir(parents=True, exist_ok=True)
    model.save(str(out))
    return str(out)


def _passages(dataset: str, cache: Path) -> tuple[list[str], list[str]]:
    from remy_retriever.evaluation.beir import load_beir

    ds = load_beir(dataset)
    prepared = cache / "quality" / f"{ds.name}-{ds.fingerprint}" / "chunks.json"
    if prepared.is_file():
        texts = json.loads(prepared.read_text())["texts"]
    else:
        texts = [d.text if not d.title else f"{d.title}\n\n{d.text}" for d in ds.documents()]
    return list(ds.queries.values()), texts


def run(args: argparse.Namespace) -> dict[str, Any]:
    import torch

    from remy_retriever import CrossEncoderReranker

    model_path = args.model or seeded_cross_encoder(args.cache)
    queries, passages = _passages(args.dataset, args.cache)
    reranker = CrossEncoderReranker(model_path)
    reranker.score("warm up", passages[:8])
    out: dict[str, Any] = {
        "model": model_path,
        "seeded_untrained_head": args.model is None,
        "torch_threads": torch.get_num_threads(),
        "max_length": reranker.max_length,
        "batch_size": reranker.batch_size,
        "passage_chars_mean": round(statistics.fmean(len(p) for p in passages), 1),
        "depths": {},
    }
    offset = 0
    for depth in args.depths:
        lat: list[float] = []
        for i in range(args.queries):
            q = f"{queries[i % len(queries)]} [{depth}:{i}]"  # unique: no score-cache hits
            texts = [passages[(offset + j) % len(passages)] for j in range(depth)]
            offset += depth
            t0 = time.perf_counter()
            reranker.score(q, texts)
            lat.append((time.perf_counter() - t0) * 1000)
        s = common.summarize(lat)
        s["pairs_per_s"] = round(depth / (s["p50_ms"] / 1000), 1)
        out["depths"][str(depth)] = s
        print(
            f"[rerank] depth {depth}: p50 {s['p50_ms']:.1f} ms, {s['pairs_per_s']:.0f} pairs/s",
            flush=True,
        )
    out["peak_rss_mib"] = common.peak_rss_mib()
    return out


def _markdown(data: dict[str, Any]) -> str:
    r = data["result"]
    parts = [common.header_md("Rerank: cross-encoder cost per query on CPU", data)]
    model = (
        "seeded MiniLM cross-encoder (ms-marco-MiniLM-L6 architecture: its cost is "
        "representative, its scores are not)"
        if r["seeded_untrained_head"]
        else r["model"]
    )
    parts.append(
        f"Model: {model}; "
        f"max_length {r['max_length']}, batch {r['batch_size']}, torch threads "
        f"{r['torch_threads']}; passages: real {data['dataset']} chunks, mean "
        f"{r['passage_chars_mean']:.0f} characters. Added latency = `CrossEncoderReranker.score` "
        "of the top `depth` candidates for one query.\n"
    )
    parts.append(
        common.md_table(
            ["depth", "added p50 ms", "added p95 ms", "pairs/s (at p50)", "queries"],
            [
                [d, s["p50_ms"], s["p95_ms"], s["pairs_per_s"], s["n"]]
                for d, s in r["depths"].items()
            ],
        )
    )
    return "\n".join(parts)


def _plot(data: dict[str, Any], path: Path) -> None:
    plt = common.plt()
    r = data["result"]
    depths = [int(d) for d in r["depths"]]
    fig, ax = plt.subplots(figsize=(6, 4))
    ax.plot(depths, [r["depths"][str(d)]["p50_ms"] for d in depths], marker="o", label="p50")
    ax.plot(depths, [r["depths"][str(d)]["p95_ms"] for d in depths], marker="o", label="p95")
    ax.set_xlabel("rerank depth (candidates rescored)")
    ax.set_ylabel("added latency per query, ms")
    ax.set_title("MiniLM-L6 cross-encoder on CPU")
    ax.grid(alpha=0.3)
    ax.legend()
    common.save_figure(fig, path)


def main(argv: Sequence[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--dataset", required=True, help="BEIR folder (queries and passages)")
    p.add_argument("--model", default=None, help="cross-encoder path (default: seeded MiniLM)")
    p.add_argument("--depths", type=int, nargs="+", default=list(DEPTHS))
    p.add_argument("--queries", type=int, default=30, help="queries per depth")
    p.add_argument("--cache", type=Path, default=common.CACHE_DIR)
    p.add_argument(
        "--threads", type=int, default=None, help="torch.set_num_threads (default: torch's)"
    )
    p.add_argument("--out", type=Path, default=common.RESULTS_DIR)
    p.add_argument("--name", default="rerank")
    args = p.parse_args(argv)
    if args.threads:
        import torch

        torch.set_num_threads(args.threads)
    return common.run_and_publish(
        args, "rerank", run, _markdown, _plot, dataset=Path(args.dataset).resolve().name
    )


if __name__ == "__main__":
    sys.exit(main())

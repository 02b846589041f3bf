"""Which weight MatMuls the int8 recipe quantizes (issue #18): closeness to fp32 and speed.

    python -m benchmarks.int8_recipes --texts 600

Exports all-MiniLM-L6-v2 to fp32 ONNX through remy's own export cache, quantizes it
dynamically several ways (int8 weights, one scale per output channel, only MatMuls with
a constant weight, as ``remy_retriever.models.onnx_export._quantize``; each recipe leaves some
MatMuls fp32), embeds the first ``--texts`` SciFact abstracts (title + text, 256 tokens,
batches of 32, 2 threads) with each, and reports the cosine of every vector to its fp32
vector and the batch time. It is the quick screen; the recipe kept was then measured
end to end (nDCG@10 on the full SciFact corpus, ``benchmarks.onnx_backends``).
"""

from __future__ import annotations

import argparse
import json
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np

from benchmarks import common

LAYERS = range(6)
_ATTN = ("attention/self/query", "attention/self/key", "attention/self/value")


def _names(parts: tuple[str, ...], layers: Any = LAYERS) -> list[str]:
    return [f"/inner/encoder/layer.{n}/{p}/MatMul" for n in layers for p in parts]


#: name -> (MatMuls left fp32, reduce_range)
RECIPES: dict[str, tuple[list[str], bool]] = {
    "all weight MatMuls (recipe 1)": ([], False),
    "all, reduce_range": ([], True),
    "fp32 feed-forward output (recipe 2, kept)": (_names(("output/dense",)), False),
    "fp32 feed-forward input": (_names(("intermediate/dense",)), False),
    "fp32 attention output": (_names(("attention/output/dense",)), False),
    "fp32 last layer": (
        _names((*_ATTN, "attention/output/dense", "intermediate/dense", "output/dense"), [5]),
        False,
    ),
}


def _texts(dataset: Path, n: int) -> list[str]:
    out = []
    with (dataset / "corpus.jsonl").open(encoding="utf-8") as fh:
        for line in fh:
            doc = json.loads(line)
            out.append(f"{doc['title']}\n\n{doc['text']}")
            if len(out) >= n:
                break
    return out


def _embed(path: Path, texts: list[str], tokenizer: Any) -> tuple[np.ndarray, float]:
    import onnxruntime as ort

    options = ort.SessionOptions()
    options.intra_op_num_threads = 2
    session = ort.InferenceSession(str(path), options, providers=["CPUExecutionProvider"])
    names = [i.name for i in session.get_inputs()]
    parts = []
    started = time.perf_counter()
    for i in range(0, len(texts), 32):
        enc = tokenizer(
            texts[i : i + 32], padding=True, truncation=True, max_length=256, return_tensors="np"
        )
        parts.append(session.run(None, {n: enc[n].astype(np.int64) for n in names})[0])
    seconds = time.perf_counter() - started
    vectors = np.concatenate(parts)
    return vectors / np.linalg.norm(vectors, axis=1, keepdims=True), seconds


def run(args: argparse.Namespace) -> dict[str, Any]:
    from onnxruntime.quantization import QuantType, quantize_dynamic
    from transformers import AutoTokenizer

    from remy_retriever.models.embeddings import resolve_model_path
    from remy_retriever.models.onnx_export import ensure_exported

    model_dir = Path(resolve_model_path(None))
    fp32 = ensure_exported(model_dir, "none").path
    tokenizer = AutoTokenizer.from_pretrained(str(model_dir))
    texts = _texts(args.dataset, args.texts)
    reference, fp32_s = _embed(fp32, texts, tokenizer)
    rows: dict[str, Any] = {"fp32": {"seconds": round(fp32_s, 2)}}
    with tempfile.TemporaryDirectory() as tmp:
        for name, (excluded, reduce_range) in RECIPES.items():
            out = Path(tmp) / "model.onnx"
            quantize_dynamic(
                str(fp32),
                str(out),
                weight_type=QuantType.QInt8,
                per_channel=True,
                reduce_range=reduce_range,
                op_types_to_quantize=["MatMul", "Gemm"],
                nodes_to_exclude=excluded,
                extra_options={"MatMulConstBOnly": True},
            )
            vectors, seconds = _embed(out, texts, tokenizer)
            cosine = (vectors * reference).sum(axis=1)
            rows[name] = {
                "fp32_matmuls": len(excluded),
                "cosine_mean": round(float(cosine.mean()), 5),
                "cosine_p1": round(float(np.percentile(cosine, 1)), 5),
                "cosine_min": round(float(cosine.min()), 5),
                "seconds": round(seconds, 2),
                "speedup_vs_fp32": round(fp32_s / seconds, 2),
            }
            print(name, rows[name], flush=True)
    return {"texts": len(texts), "rows": rows}


def _markdown(data: dict[str, Any]) -> str:
    r = data["result"]
    table = common.md_table(
        ["recipe", "fp32 MatMuls", "cosine mean", "cosine p1", "cosine min", "speed-up vs fp32"],
        [
            [
                name,
                row["fp32_matmuls"],
                f"{row['cosine_mean']:.4f}",
                f"{row['cosine_p1']:.4f}",
                f"{row['cosine_min']:.4f}",
                f"{row['speedup_vs_fp32']:.2f}x",
            ]
            for name, row in r["rows"].items()
            if name != "fp32"
        ],
    )
    return (
        common.header_md("int8 recipes: closeness to fp32 and speed", data)
        + f"\n{r['texts']} SciFact abstracts, each vector's cosine to its fp32 vector; "
        f"fp32 took {r['rows']['fp32']['seconds']} s.\n\n{table}\n"
    )


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--dataset", type=Path, default=common.ROOT.parent / "shared/data/beir/scifact")
    p.add_argument("--texts", type=int, default=600)
    p.add_argument("--out", type=Path, default=common.RESULTS_DIR)
    p.add_argument("--name", default="int8-recipes")
    return common.run_and_publish(p.parse_args(), "int8_recipes", run, _markdown)


if __name__ == "__main__":
    raise SystemExit(main())

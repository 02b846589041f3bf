"""Profile: what a Chroma upsert costs per chunk, by what the record carries.

    python -m benchmarks.chroma_write --n 3000

A diagnostic for the ingest path (``DenseStore.upsert`` and ``DocumentTable.upsert`` take
most of ``Retriever.add``'s non-embedding time). The same records are written with:
vectors only; + the chunk text (Chroma indexes ``documents`` for full-text search);
+ remy's 13-key chunk metadata (as ``Retriever.add`` writes it); + the same metadata
packed into the 3 keys remy filters on plus one JSON string; the 13-key metadata with the
text carried as a metadata value instead of in ``documents`` (how remy stores it since
this profile showed the full-text indexing of ``documents`` to be the largest cost); and
the document-table record (1-d vector, full text, 6 keys) both ways. Variants alternate,
``--reps`` times, each in a fresh persistent store; medians are reported.
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
from remy_retriever.stores.dense import TEXT_KEY


def _meta(i: int) -> dict[str, Any]:
    """A chunk's metadata as Retriever.add writes it (13 remy keys + 1 user key)."""
    return {
        "tenant": f"t{i % 100}",
        "remy_doc_id": f"doc{i}",
        "remy_pos": 0,
        "remy_start": 0,
        "remy_end": 700,
        "remy_heading": '["A title"]',
        "remy_title": "A title",
        "remy_doc_hash": f"{i:032x}",
        "remy_n_chunks": 1,
        "remy_created": "2026-01-01T00:00:00.000000Z",
        "remy_updated": "2026-01-01T00:00:00.000000Z",
        "remy_updated_ms": 1767225600000 + i,
        "remy_chunk_hash": f"{i + 7:032x}",
    }


def _packed(i: int) -> dict[str, Any]:
    m = _meta(i)
    keep = {k: m.pop(k) for k in ("tenant", "remy_doc_id", "remy_updated_ms")}
    return {**keep, "remy": json.dumps(m, separators=(",", ":"))}


def run(args: argparse.Namespace) -> dict[str, Any]:
    import chromadb

    rng = np.random.default_rng(0)
    n = args.n
    vecs = rng.standard_normal((n, 384), dtype=np.float32)
    vecs /= np.linalg.norm(vecs, axis=1, keepdims=True)
    words = [f"w{i}" for i in range(20_000)]
    texts = [" ".join(rng.choice(words, 100)) for _ in range(n)]
    ids = [f"doc{i}#0" for i in range(n)]
    variants: dict[str, dict[str, Any]] = {
        "vectors only": {},
        "+ text": {"documents": True},
        "+ text + 13-key remy metadata": {"documents": True, "meta": _meta},
        "+ text + 4-key packed metadata": {"documents": True, "meta": _packed},
        "13-key remy metadata, text in metadata (remy's layout)": {
            "meta": _meta,
            "text_in_meta": True,
        },
        "document table record (1-d vector, text, 6 keys)": {"doctable": True},
        "document table record, text in metadata (remy's layout)": {
            "doctable": True,
            "text_in_meta": True,
        },
    }
    times: dict[str, list[float]] = {k: [] for k in variants}
    tmp = Path(tempfile.mkdtemp(prefix="remy-bench-chroma-"))
    try:
        for rep in range(args.reps):
            for name, spec in variants.items():
                store = tmp / f"{rep}-{len(times[name])}-{abs(hash(name))}"
                client = chromadb.PersistentClient(path=str(store))
                col = client.create_collection("bench", configuration={"hnsw": {"space": "cosine"}})
                t0 = time.perf_counter()
                for lo in range(0, n, args.batch):
                    hi = min(n, lo + args.batch)
                    kw: dict[str, Any] = {}
                    if spec.get("doctable"):
                        kw["embeddings"] = np.ones((hi - lo, 1), dtype=np.float32)
                        kw["metadatas"] = [
                            {k: v for k, v in _meta(i).items() if k in _DOC_KEYS}
                            for i in range(lo, hi)
                        ]
                        if spec.get("text_in_meta"):
                            for m, t in zip(kw["metadatas"], texts[lo:hi]):
                                m[TEXT_KEY] = t
                        else:
                            kw["documents"] = texts[lo:hi]
                        col.upsert(ids=[f"doc{i}" for i in range(lo, hi)], **kw)
                        continue
                    kw["embeddings"] = vecs[lo:hi]
                    if spec.get("documents"):
                        kw["documents"] = texts[lo:hi]
                    if spec.get("meta"):
                        kw["metadatas"] = [spec["meta"](i) for i in range(lo, hi)]
                    if spec.get("text_in_meta"):
                        for m, t in zip(kw["metadatas"], texts[lo:hi]):
                            m[TEXT_KEY] = t
                    col.upsert(ids=ids[lo:hi], **kw)
                times[name].append(time.perf_counter() - t0)
                del col, client
                shutil.rmtree(store, ignore_errors=True)
            print(f"[chroma_write] rep {rep + 1} done", flush=True)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    base = statistics.median(times["vectors only"])
    return {
        "records": n,
        "batch": args.batch,
        "reps": args.reps,
        "variants": {
            name: {
                "seconds": [round(x, 2) for x in ts],
                "median_s": round(statistics.median(ts), 2),
                "records_per_s": round(n / statistics.median(ts), 1),
                "relative_cost": round(statistics.median(ts) / base, 2),
            }
            for name, ts in times.items()
        },
    }


_DOC_KEYS = {
    "tenant",
    "remy_title",
    "remy_doc_hash",
    "remy_n_chunks",
    "remy_created",
    "remy_updated",
}


def _markdown(data: dict[str, Any]) -> str:
    r = data["result"]
    parts = [common.header_md("Profile: Chroma upsert cost by record content", data)]
    parts.append(
        f"{r['records']:,} records of 100 words, batches of {r['batch']}, {r['reps']} "
        "alternating reps, fresh persistent store each; relative cost = median time / "
        "median time of 'vectors only'.\n"
    )
    parts.append(
        common.md_table(
            ["record carries", "records/s", "relative cost"],
            [[k, v["records_per_s"], v["relative_cost"]] for k, v in r["variants"].items()],
        )
    )
    return "\n".join(parts)


def main(argv: Sequence[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--n", type=int, default=3000)
    p.add_argument("--batch", type=int, default=256)
    p.add_argument("--reps", type=int, default=3)
    p.add_argument("--out", type=Path, default=common.RESULTS_DIR)
    p.add_argument("--name", default="chroma-write")
    return common.run_and_publish(p.parse_args(argv), "chroma_write", run, _markdown)


if __name__ == "__main__":
    sys.exit(main())

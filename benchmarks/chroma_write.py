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

Records are made by :mod:`remy_retriever.schema.records` (the stored format's one home) before
the clock starts, so only the upserts are timed.
"""

from __future__ import annotations

import argparse
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
from remy_retriever.schema.document import Chunk, Document
from remy_retriever.schema.records import (
    TEXT_KEY,
    chunk_id,
    chunk_metadata,
    document_metadata,
    pack,
)

STAMP = "2026-01-01T00:00:00.000000Z"
TITLE = "A title"


def _document(i: int, text: str) -> Document:
    return Document(id=f"doc{i}", text=text, title=TITLE, metadata={"tenant": f"t{i % 100}"})


def _meta(i: int, text: str) -> dict[str, Any]:
    """A chunk's metadata as Retriever.add makes it (12 remy keys + 1 user key), before
    Chroma packing: the whole document as one chunk under the heading path ``TITLE``."""
    doc = _document(i, text)
    chunk = Chunk(doc.id, 0, text, 0, len(text), heading_path=(TITLE,))
    return chunk_metadata(
        doc,
        chunk,
        doc_hash=doc.content_hash,
        n_chunks=1,
        created=STAMP,
        updated=STAMP,
        updated_ms=1767225600000 + i,
    )


def _packed(i: int, text: str) -> dict[str, Any]:
    """The same metadata packed as remy writes it (the keys remy filters on, flat, and the
    rest as one JSON string), without the text: 4 keys."""
    flat = pack([_meta(i, text)], [text])[0]
    del flat[TEXT_KEY]
    return flat


def _document_meta(i: int, text: str) -> dict[str, Any]:
    """A document-table record's metadata, unpacked (6 keys)."""
    doc = _document(i, text)
    return document_metadata(
        doc, doc_hash=doc.content_hash, n_chunks=1, created=STAMP, updated=STAMP
    )


def _metadatas(spec: dict[str, Any], texts: Sequence[str]) -> list[dict[str, Any]] | None:
    """The metadata a variant writes for every record (None: no metadata)."""
    make = _document_meta if spec.get("doctable") else spec.get("meta")
    if make is None:
        return None
    metas = [make(i, t) for i, t in enumerate(texts)]
    if spec.get("text_in_meta"):
        for m, t in zip(metas, texts):
            m[TEXT_KEY] = t
    return metas


def run(args: argparse.Namespace) -> dict[str, Any]:
    import chromadb

    rng = np.random.default_rng(0)
    n = args.n
    vecs = rng.standard_normal((n, 384), dtype=np.float32)
    vecs /= np.linalg.norm(vecs, axis=1, keepdims=True)
    words = [f"w{i}" for i in range(20_000)]
    texts = [" ".join(rng.choice(words, 100)) for _ in range(n)]
    ids = [chunk_id(f"doc{i}", 0) for i in range(n)]
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
    prepared = {name: _metadatas(spec, texts) for name, spec in variants.items()}
    tmp = Path(tempfile.mkdtemp(prefix="remy-bench-chroma-"))
    try:
        for rep in range(args.reps):
            for name, spec in variants.items():
                store = tmp / f"{rep}-{len(times[name])}-{abs(hash(name))}"
                client = chromadb.PersistentClient(path=str(store))
                col = client.create_collection("bench", configuration={"hnsw": {"space": "cosine"}})
                metas = prepared[name]
                metas = None if metas is None else [dict(m) for m in metas]
                t0 = time.perf_counter()
                for lo in range(0, n, args.batch):
                    hi = min(n, lo + args.batch)
                    kw: dict[str, Any] = {}
                    if metas is not None:
                        kw["metadatas"] = metas[lo:hi]
                    if spec.get("doctable"):
                        kw["embeddings"] = np.ones((hi - lo, 1), dtype=np.float32)
                        if not spec.get("text_in_meta"):
                            kw["documents"] = texts[lo:hi]
                        col.upsert(ids=[f"doc{i}" for i in range(lo, hi)], **kw)
                        continue
                    kw["embeddings"] = vecs[lo:hi]
                    if spec.get("documents"):
                        kw["documents"] = texts[lo:hi]
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

"""Scale benchmark, part 1: the synthetic corpus and the settings every part shares.

Chunks are deterministic Zipf text (a 50,000-word synthetic vocabulary, 60-139 words per
chunk) with random unit vectors; each chunk is a whole document ``s<i>`` with metadata
``tenant`` = one of 100. Queries are 3-6 mid-frequency words with their own random
vectors. The corpus is generated once into ``--cache`` and reused by every run.

Document and chunk ids are made here and nowhere else in the benchmark; chunk ids come
from :func:`remy_retriever.schema.records.chunk_id`, as the index stores them.
"""

from __future__ import annotations

import itertools
import json
import time
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from remy_retriever.schema.records import chunk_id

DIM = 384
VOCAB = 50_000
TENANTS = 100
SEED = 20240601
CANDIDATES = 100
SEARCH_K = 10
WHERE = {"tenant": "t7"}
#: Document ids are this prefix and the chunk's row in ``texts.txt``.
DOC_PREFIX = "s"


# -- ids and documents ---------------------------------------------------------------------


def tenant(i: int) -> str:
    """The ``tenant`` metadata value of document ``i``."""
    return f"t{i % TENANTS}"


def document_id(i: int, prefix: str = DOC_PREFIX) -> str:
    """The id of document ``i``."""
    return f"{prefix}{i}"


def chunk_ids(n: int, prefix: str = DOC_PREFIX) -> list[str]:
    """The chunk ids of documents ``0..n-1`` (one chunk each), by row."""
    return [chunk_id(document_id(i, prefix), 0) for i in range(n)]


def docs(texts: Sequence[str], start: int, stop: int, prefix: str = DOC_PREFIX) -> Iterator[Any]:
    """The :class:`~remy_retriever.Document` of rows ``start..stop-1``."""
    from remy_retriever import Document

    for i in range(start, stop):
        yield Document(id=document_id(i, prefix), text=texts[i], metadata={"tenant": tenant(i)})


# -- synthetic corpus ----------------------------------------------------------------------


def vocabulary(size: int = VOCAB, seed: int = SEED) -> list[str]:
    """``size`` distinct pronounceable pseudo-words, deterministic."""
    rng = np.random.default_rng(seed)
    cons = list("bdfgklmnprstvz")
    vows = list("aeiou")
    syll = [c + v for c in cons for v in vows] + [c + v + "n" for c in cons for v in vows]
    words: dict[str, None] = {}
    while len(words) < size:
        n = rng.integers(2, 4, size=size)
        picks = rng.integers(0, len(syll), size=(size, 3))
        for k, row in zip(n, picks):
            words.setdefault("".join(syll[j] for j in row[:k]), None)
            if len(words) == size:
                break
    return list(words)


def _zipf_cdf(size: int, s: float = 1.0, q: float = 2.7) -> np.ndarray:
    weights = 1.0 / (np.arange(1, size + 1) + q) ** s
    cdf = np.cumsum(weights)
    return cdf / cdf[-1]


def generate(n: int, out: Path, n_queries: int) -> Path:
    """Write ``texts.txt`` (one chunk per line), ``vectors.npy`` and queries to ``out``."""
    if (out / "meta.json").is_file():
        return out
    out.mkdir(parents=True, exist_ok=True)
    started = time.perf_counter()
    vocab = np.array(vocabulary(), dtype=object)
    cdf = _zipf_cdf(len(vocab))
    rng = np.random.default_rng(SEED + 1)
    with (out / "texts.txt").open("w") as fh:
        for lo in range(0, n, 20_000):
            m = min(20_000, n - lo)
            lengths = rng.integers(60, 140, size=m)
            ranks = np.searchsorted(cdf, rng.random(int(lengths.sum())))
            words = vocab[np.minimum(ranks, len(vocab) - 1)]
            ends = np.cumsum(lengths)
            starts = ends - lengths
            fh.write("".join(" ".join(words[a:b]) + "\n" for a, b in zip(starts, ends)))
    vecs = np.lib.format.open_memmap(
        out / "vectors.npy", mode="w+", dtype=np.float32, shape=(n, DIM)
    )
    vrng = np.random.default_rng(SEED + 2)
    for lo in range(0, n, 50_000):
        block = vrng.standard_normal((min(50_000, n - lo), DIM), dtype=np.float32)
        block /= np.linalg.norm(block, axis=1, keepdims=True)
        vecs[lo : lo + len(block)] = block
    vecs.flush()
    del vecs
    qrng = np.random.default_rng(SEED + 3)
    queries = [
        " ".join(vocab[qrng.integers(100, 10_000, size=int(qrng.integers(3, 7)))])
        for _ in range(n_queries)
    ]
    qv = qrng.standard_normal((n_queries, DIM), dtype=np.float32)
    qv /= np.linalg.norm(qv, axis=1, keepdims=True)
    (out / "queries.json").write_text(json.dumps(queries))
    np.save(out / "query_vectors.npy", qv)
    meta = {
        "chunks": n,
        "queries": n_queries,
        "generate_s": round(time.perf_counter() - started, 1),
    }
    (out / "meta.json").write_text(json.dumps(meta))
    return out


def data_dir(cache: Path, n: int, n_queries: int) -> Path:
    """A cached corpus of at least ``n`` chunks (a larger one works: generation is
    deterministic and streamed, so its first ``n`` chunks are the ``n``-chunk corpus)."""
    for path in sorted(cache.glob("n*/meta.json"), key=lambda p: int(p.parent.name[1:])):
        meta = json.loads(path.read_text())
        if meta["chunks"] >= n and meta["queries"] >= n_queries:
            return path.parent
    return generate(n, cache / f"n{n}", n_queries)


def load(data: Path, n: int) -> tuple[list[str], np.ndarray, list[str], np.ndarray]:
    """The first ``n`` chunk texts and vectors of a corpus, and all of its queries."""
    with (data / "texts.txt").open() as fh:
        texts = [line.rstrip("\n") for line in itertools.islice(fh, n)]
    vectors = np.load(data / "vectors.npy", mmap_mode="r")[:n]
    queries = json.loads((data / "queries.json").read_text())
    return texts, vectors, queries, np.load(data / "query_vectors.npy")

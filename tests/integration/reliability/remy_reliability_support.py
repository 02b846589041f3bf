"""Shared helpers for the reliability tests, the crash worker and the soak benchmark.

Importable by name: tests/reliability/conftest.py puts this directory on ``sys.path``,
and the crash worker runs from it. Keep it free of pytest imports (subprocesses use it).
"""

from __future__ import annotations

import fcntl
import hashlib
import os
import re
import threading
import time
from collections import defaultdict
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from remy_retriever import Retriever
from remy_retriever.stores.locking import LOCK_FILE

_TOKEN = re.compile(r"\w+")
MODES = ("semantic", "lexical", "hybrid")


class TokenHashEmbedder:
    """A deterministic, cheap stand-in for a model: each lowercase word maps to a fixed
    random unit vector (seeded by its blake2b hash, so every process agrees), a text to
    the normalised sum of its distinct words' vectors. Texts sharing words are close, so
    semantic search finds a document by a word unique to it. Builds with no arguments,
    so a collection made with it reopens without ``embedder=``."""

    model_id = "test/token-hash"

    def __init__(self, dim: int = 384) -> None:
        self.dim = dim
        self._cache: dict[str, np.ndarray] = {}
        self._lock = threading.Lock()

    def _word(self, word: str) -> np.ndarray:
        vector = self._cache.get(word)
        if vector is None:
            seed = int.from_bytes(hashlib.blake2b(word.encode("utf-8", "replace")).digest()[:8])
            raw = np.random.default_rng(seed).standard_normal(self.dim)
            vector = (raw / np.linalg.norm(raw)).astype(np.float32)
            with self._lock:
                if len(self._cache) > 200_000:
                    self._cache.clear()
                self._cache[word] = vector
        return vector

    def _embed(self, text: str) -> np.ndarray:
        words = list(dict.fromkeys(_TOKEN.findall(text.lower())))
        if not words:
            out = np.zeros(self.dim, dtype=np.float32)
            out[0] = 1.0
            return out
        total = np.sum([self._word(w) for w in words[:512]], axis=0)
        norm = float(np.linalg.norm(total))
        if norm == 0.0:
            total[0] = 1.0
            norm = 1.0
        return (total / norm).astype(np.float32)

    def embed_documents(self, texts: Sequence[str]) -> np.ndarray:
        if not texts:
            return np.zeros((0, self.dim), dtype=np.float32)
        return np.stack([self._embed(t) for t in texts])

    def embed_query(self, text: str) -> np.ndarray:
        return self._embed(text)


def dense_records(r: Retriever) -> dict[str, dict[str, Any]]:
    """Chunk id -> metadata of everything in Chroma."""
    return {cid: meta for page in r._sync.dense.iter_all(documents=False) for cid, _, meta in page}


def snapshot(r: Retriever) -> tuple[frozenset[str], frozenset[str], frozenset[str]]:
    """(Chroma chunk ids, lexical chunk ids, document-table ids): to check nothing changed."""
    docs = frozenset(i for page in r._sync.table.iter_metadata() for i, _ in page)
    return frozenset(dense_records(r)), frozenset(r._sync.lexical.ids()), docs


def check_whole_documents(r: Retriever) -> dict[str, int]:
    """Assert every document in Chroma is exactly one complete version (positions
    0..n-1, n == its recorded chunk count, one content hash) and that the document table
    agrees with it when it has a record. Returns document id -> chunk count."""
    groups: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for cid, meta in dense_records(r).items():
        doc = str(meta["remy_doc_id"])
        assert cid == f"{doc}#{meta['remy_pos']}", (cid, meta)
        groups[doc].append(meta)
    table = r.get_documents(list(groups))
    out = {}
    for doc, metas in groups.items():
        n = metas[0]["remy_n_chunks"]
        positions = sorted(m["remy_pos"] for m in metas)
        assert positions == list(range(n)), f"{doc}: positions {positions}, expected 0..{n - 1}"
        assert len({m["remy_doc_hash"] for m in metas}) == 1, f"{doc}: mixed versions"
        if doc in table:
            assert table[doc].chunk_count == n, (doc, table[doc].chunk_count, n)
        out[doc] = n
    return out


def check_indexes_agree(r: Retriever) -> None:
    dense = set(dense_records(r))
    lexical = r._sync.lexical.ids()
    assert dense == lexical, (
        f"Chroma and the lexical index disagree: only in Chroma {sorted(dense - lexical)[:5]}, "
        f"only lexical {sorted(lexical - dense)[:5]}"
    )
    assert not r._sync.lexical.state.get("dirty"), r._sync.lexical.state


def vector_ids(r: Retriever) -> set[str]:
    """Chunk ids whose vector Chroma's vector index holds, read straight from Chroma:
    reading a record's embedding fails ("Error finding id") when its vector is gone
    (the same probe ``doctor()`` uses, :meth:`DenseStore.missing_vectors`). An earlier
    version took the union of a few k=all queries; after many in-place updates a small
    HNSW graph can leave a present node unreachable by search, which that version
    reported as lost while a fresh process found every vector."""
    # Read the store as it is on disk: reload this process's embedded view first (it may
    # predate other processes' writes; remy's own vector reads reload the same way).
    r._sync.dense.ensure_fresh(force=True)
    ids = sorted(dense_records(r))
    return set(ids) - set(r._sync.dense.missing_vectors(ids, batch=500))


def check_vectors_complete(r: Retriever) -> None:
    """Every chunk in Chroma is in its vector index too (a stale embedded view that
    persisted over another process's writes loses vectors while counts look fine)."""
    ids = set(dense_records(r))
    lost = ids - vector_ids(r)
    assert not lost, f"{len(lost)} chunks lost from the vector index: {sorted(lost)[:5]}"


def doc_ids(hits: Iterable[Any]) -> list[str]:
    return [h.citation.document_id for h in hits]


# -- a deterministic Zipf vocabulary for corpora ----------------------------------------

_SYLLABLES = ("ka", "lo", "mi", "ne", "ru", "sa", "ti", "vo", "ze", "pa", "qu", "xe")


def vocabulary(size: int, seed: int = 7) -> list[str]:
    rng = np.random.default_rng(seed)
    words: list[str] = []
    seen: set[str] = set()
    while len(words) < size:
        n = int(rng.integers(2, 5))
        word = "".join(_SYLLABLES[int(i)] for i in rng.integers(0, len(_SYLLABLES), n))
        if word not in seen:
            seen.add(word)
            words.append(word)
    return words


class ZipfText:
    """Sentences drawn from a fixed vocabulary with Zipf-distributed word frequencies."""

    def __init__(self, size: int = 5000, exponent: float = 1.1, seed: int = 7) -> None:
        self.words = vocabulary(size, seed)
        ranks = np.arange(1, size + 1, dtype=np.float64)
        weights = ranks**-exponent
        self.p = weights / weights.sum()

    def words_for(self, rng: np.random.Generator, n: int) -> list[str]:
        idx = rng.choice(len(self.words), size=n, p=self.p)
        return [self.words[int(i)] for i in idx]

    def paragraph(self, rng: np.random.Generator, n: int) -> str:
        return " ".join(self.words_for(rng, n)) + "."


def wait_until_unlocked(store: Path, timeout: float = 30) -> None:
    """Until a killed writer's lock on ``store`` is free. The OS drops a killed process's
    ``flock``, but not always by the time its pid is gone (measured: about one kill in
    three still held it for a moment); an open in that moment sees a live writer and
    rightly leaves the repair to the next writer, which is not what a crash test checks."""
    lock_path = store / LOCK_FILE
    if not lock_path.exists():
        return
    deadline = time.monotonic() + timeout
    fd = os.open(lock_path, os.O_RDWR)
    try:
        while True:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                fcntl.flock(fd, fcntl.LOCK_UN)
                return
            except BlockingIOError:
                assert time.monotonic() < deadline, f"{lock_path} still locked after {timeout} s"
                time.sleep(0.005)
    finally:
        os.close(fd)

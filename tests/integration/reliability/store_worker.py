"""A second process on an embedded store, for the cross-process tests.

python store_worker.py STORE slow-add DOC_ID SECONDS  -- one add() whose embedding
    takes SECONDS, so the writer lock is held that long; prints WRITING, then DONE
python store_worker.py STORE bulk-add PREFIX N         -- add N one-chunk documents
python store_worker.py STORE count                     -- JSON: chunks in Chroma and
    in its vector index, as a freshly started process sees them
"""

from __future__ import annotations

import json
import sys
import time
from collections.abc import Sequence
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))

from remy_reliability_support import TokenHashEmbedder, vector_ids

from remy_retriever import Document, Retriever

COLLECTION = "shared-kb"


class SlowEmbedder(TokenHashEmbedder):
    def __init__(self, seconds: float = 0.0) -> None:
        super().__init__()
        self.seconds = seconds

    def embed_documents(self, texts: Sequence[str]) -> np.ndarray:
        if self.seconds:  # zero while the open fingerprints the embedder
            print("WRITING", flush=True)
            time.sleep(self.seconds)
        return super().embed_documents(texts)


def bulk_documents(prefix: str, n: int) -> list[Document]:
    """One-chunk documents with spread-out vectors (12 pseudo-random words each):
    near-duplicate vectors would leave some HNSW nodes unreachable, blurring the check."""
    out = []
    for i in range(n):
        seed = sum(map(ord, prefix)) * 1_000_003 + i
        words = " ".join(f"w{(seed * 7919 + j * 104729) % 20011}" for j in range(12))
        out.append(Document(id=f"{prefix}{i}", text=f"unique{prefix}{i} {words}"))
    return out


def main(argv: list[str]) -> None:
    store, mode = argv[0], argv[1]
    if mode == "slow-add":
        doc_id, seconds = argv[2], float(argv[3])
        slow = SlowEmbedder()
        r = Retriever(store, collection=COLLECTION, embedder=slow)
        slow.seconds = seconds
        r.add([Document(id=doc_id, text=f"# {doc_id}\n\nwritten slowly by another process")])
        print("DONE", flush=True)
    elif mode == "bulk-add":
        r = Retriever(store, collection=COLLECTION, embedder=TokenHashEmbedder())
        r.add(bulk_documents(argv[2], int(argv[3])))
        print("DONE", flush=True)
    else:
        r = Retriever(store, collection=COLLECTION, embedder=TokenHashEmbedder())
        chunks = r.count()
        vectors = len(vector_ids(r))
        print(json.dumps({"chunks": chunks, "vectors": vectors}), flush=True)
    r.close()


if __name__ == "__main__":
    main(sys.argv[1:])

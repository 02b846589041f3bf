"""A child process for the re-embedding swap tests (tests/integration/test_adapt_swap.py).

``write DB MODEL STALL``: re-embed the store at DB with the sentence-transformers model
directory MODEL, a few chunks per step, printing ``batch N`` after each step; ``STALL`` is
``none`` (finish, print ``done``), or ``swap`` (print ``swapped`` once the swap is written
and wait there, before the old vectors are dropped, to be killed).

``read DB STOP``: search the store in a loop (a semantic search, and the exact cosines of
every chunk), reopening it whenever another process's
re-embedding makes it refuse this model; print one JSON line per answer; after the file
STOP appears, three more rounds, then exit.

DB is a directory, or ``http://HOST:PORT/COLLECTION/LEXICAL`` for a Chroma server."""

from __future__ import annotations

import json
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from remy_retriever import ModelLoadError, Retriever, SentenceTransformerEmbedder
from remy_retriever.stores import reembed

QUERIES = ["how fast does the ice retreat", "bees dancing to show nectar", "lava from a vent"]
#: The chunk ids of the test corpus (40 one-chunk documents).
IDS = [f"d{i}#0" for i in range(40)]


def store(where: str) -> dict[str, Any]:
    """Retriever arguments for a directory or a server address."""
    if not where.startswith("http://"):
        return {"path": where}
    import chromadb

    host_port, collection, lexical = where[len("http://") :].split("/", 2)
    host, port = host_port.split(":")
    client = chromadb.HttpClient(host=host, port=int(port))
    return {"client": client, "collection": collection, "lexical_path": "/" + lexical}


class Stepping(SentenceTransformerEmbedder):
    """The model, printing each step of a re-embedding and pausing after it."""

    steps = 0

    def embed_documents(self, texts: Sequence[str]) -> np.ndarray:
        out = super().embed_documents(texts)
        if len(texts) > 1:  # not the identity's one-text probe
            Stepping.steps += 1
            print(f"batch {Stepping.steps}", flush=True)
            time.sleep(0.2)
        return out


def write(where: str, model: str, stall: str) -> None:
    reembed.BATCH = 4
    if stall == "swap":

        def wait(dense: Any, name: str) -> None:
            print("swapped", flush=True)
            time.sleep(600)

        reembed._drop = wait  # type: ignore[assignment]
    Retriever(**store(where), create=False, embedder=Stepping(model), reembed=True).close()
    print("done", flush=True)


def read(where: str, stop: Path) -> None:
    r: Retriever | None = None
    rounds_after_stop = 0
    while rounds_after_stop < 3:
        if stop.exists():
            rounds_after_stop += 1
        try:
            if r is None:
                r = Retriever(**store(where), create=False)
            dense = r._sync.dense
            for q in QUERIES:
                hits = r.search(q, mode="semantic", k=5)
                identity = dense.identity
                assert identity is not None
                answer = {"model": identity.name, "query": q}
                print(json.dumps({**answer, "hits": [[h.id, h.score] for h in hits]}), flush=True)
                # The exact scorer's path too (the fill of hybrid searches): every vector.
                exact = dense.query(r.embedder.embed_query(q), 5, None, among=IDS)
                identity = dense.identity
                assert identity is not None
                answer = {"model": identity.name, "query": q}
                print(json.dumps({**answer, "hits": [list(p) for p in exact]}), flush=True)
        except ModelLoadError as exc:  # another process re-embedded: reopen with its model
            print(json.dumps({"reopen": str(exc)[:200]}), flush=True)
            if r is not None:
                r.close()
            r = None
    if r is not None:
        r.close()


if __name__ == "__main__":
    if sys.argv[1] == "write":
        write(sys.argv[2], sys.argv[3], sys.argv[4])
    else:
        read(sys.argv[2], Path(sys.argv[3]))

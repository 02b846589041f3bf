"""Openers for the first-open race test: each runs in its own spawned process, waits at
a shared barrier before every round, opens that round's new store, and reports "ok" or
the error it got."""

from __future__ import annotations

import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

COLLECTION = "first-open"


def remy_opener(barrier: Any, paths: Sequence[str], results: Any) -> None:
    """Open each path with a :class:`~remy_retriever.Retriever` (creating the store)."""
    from remy_reliability_support import TokenHashEmbedder

    from remy_retriever import Retriever

    embedder = TokenHashEmbedder(dim=32)
    outcomes = []
    for path in paths:
        barrier.wait()
        try:
            with Retriever(path, collection=COLLECTION, embedder=embedder):
                pass
            outcomes.append("ok")
        except Exception as exc:
            outcomes.append(f"{type(exc).__name__}: {exc}"[:400])
    results.put(("remy", outcomes))


def chromadb_opener(barrier: Any, paths: Sequence[str], results: Any) -> None:
    """Open each path with plain chromadb, which takes none of remy's locks (it creates
    the directory itself); its own failures are recorded but not judged."""
    import chromadb

    outcomes = []
    for path in paths:
        barrier.wait()
        try:
            chromadb.PersistentClient(path=path)
            outcomes.append("ok")
        except Exception as exc:
            outcomes.append(f"{type(exc).__name__}: {exc}"[:400])
    results.put(("chromadb", outcomes))

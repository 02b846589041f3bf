"""Exact cosines of named chunks, for the fill of a fused search.

Chroma's ``query(ids=...)`` scores a given set of ids exactly, but it fails outright
("Error finding id") when one of them was deleted a moment before, which a search
racing a delete meets: the lexical branch can list a chunk the dense side has just
dropped. A ``get`` skips ids that are gone, so the vectors are read with it and the
cosines computed here, as Chroma's cosine space defines them.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any, Protocol, TypeVar

import numpy as np

__all__ = ["exact_cosines"]

T = TypeVar("T")


class Reads(Protocol):
    """What is read through: a :class:`~.dense.DenseStore` (its Chroma collection, and
    its ``read``, which rides out a lagging embedded view)."""

    collection: Any

    def read(self, what: str, fn: Callable[[], T]) -> T: ...


def exact_cosines(
    dense: Reads,
    embedding: np.ndarray,
    ids: Sequence[str],
    where: Mapping[str, Any] | None,
) -> list[tuple[str, float]]:
    """``(chunk id, cosine similarity)`` of those of ``ids`` that exist and match
    ``where``, best first."""
    if not ids:
        return []
    result = dense.read(
        "score chunks",
        lambda: dense.collection.get(
            ids=list(dict.fromkeys(ids)),
            where=dict(where) if where else None,
            include=["embeddings"],
        ),
    )
    found = [str(i) for i in result["ids"]]
    raw = result.get("embeddings")
    if not found or raw is None:
        return []
    vectors = np.asarray(raw, dtype=np.float64).reshape(len(found), -1)
    query = np.asarray(embedding, dtype=np.float64).reshape(-1)
    norms = np.linalg.norm(vectors, axis=1) * float(np.linalg.norm(query))
    with np.errstate(divide="ignore", invalid="ignore"):
        cosines = np.where(norms > 0, vectors @ query / norms, 0.0)
    scored = [(cid, float(c) if np.isfinite(c) else 0.0) for cid, c in zip(found, cosines)]
    return sorted(scored, key=lambda pair: (-pair[1], pair[0]))

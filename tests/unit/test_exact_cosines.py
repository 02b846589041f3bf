"""The fill's exact cosines read vectors with a ``get``, which skips a chunk deleted a
moment before, where Chroma's ``query(ids=...)`` fails on it ("Error finding id")."""

from __future__ import annotations

import tempfile
from collections.abc import Callable
from typing import Any, TypeVar

import chromadb
import numpy as np
import pytest

from remy_retriever.stores.exact import exact_cosines

T = TypeVar("T")


class _Direct:
    def __init__(self, collection: Any) -> None:
        self.collection = collection

    def read(self, what: str, fn: Callable[[], T]) -> T:
        return fn()


def test_a_deleted_id_is_skipped_and_the_rest_are_scored_best_first() -> None:
    client = chromadb.PersistentClient(tempfile.mkdtemp())
    col = client.create_collection("exact", embedding_function=None)
    vectors = {"a": [1.0, 0.0, 0.0], "b": [0.0, 1.0, 0.0], "c": [0.6, 0.8, 0.0]}
    col.add(ids=list(vectors), embeddings=list(vectors.values()), metadatas=[{"t": "x"}] * 3)
    col.delete(ids=["b"])
    with pytest.raises(Exception, match="Error finding id"):  # why the fill does not query
        col.query(query_embeddings=[[1.0, 0.0, 0.0]], ids=["a", "b"], n_results=2)
    got = exact_cosines(_Direct(col), np.array([1.0, 0.0, 0.0]), ["b", "c", "a"], None)
    assert [cid for cid, _ in got] == ["a", "c"]
    assert got[0][1] == pytest.approx(1.0) and got[1][1] == pytest.approx(0.6)
    assert exact_cosines(_Direct(col), np.array([1.0, 0.0, 0.0]), ["a"], {"t": "y"}) == []

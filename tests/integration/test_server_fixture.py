"""Smoke tests for the ``chroma_server`` / ``http_client`` fixtures in tests/conftest.py.

Collections are created with ``embedding_function=None`` and always given explicit
embeddings: Chroma's default embedding function would try to download an ONNX model
the first time it is asked to embed text, and this machine has no network for that.
"""

from __future__ import annotations

import uuid
from typing import Any

import pytest

pytestmark = pytest.mark.server


def _collection_name(prefix: str) -> str:
    return f"{prefix}-{uuid.uuid4().hex[:12]}"


def test_collection_round_trip(http_client: Any) -> None:
    col = http_client.create_collection(
        _collection_name("fixture-smoke"),
        embedding_function=None,
        metadata={"hnsw:space": "cosine"},
    )
    col.add(
        ids=["a", "b"],
        documents=["alpha document", "beta document"],
        embeddings=[[1.0, 0.0, 0.0], [0.0, 1.0, 0.0]],
        metadatas=[{"tenant": "t1"}, {"tenant": "t2"}],
    )

    got = col.get(ids=["a", "b"], include=["documents", "metadatas", "embeddings"])
    by_id = dict(zip(got["ids"], got["documents"], strict=True))
    assert by_id == {"a": "alpha document", "b": "beta document"}
    assert [list(map(float, e)) for e in got["embeddings"]] == [
        [1.0, 0.0, 0.0],
        [0.0, 1.0, 0.0],
    ]

    res = col.query(query_embeddings=[[0.9, 0.1, 0.0]], n_results=2)
    assert res["ids"] == [["a", "b"]]

    res = col.query(query_embeddings=[[0.9, 0.1, 0.0]], n_results=2, where={"tenant": "t2"})
    assert res["ids"] == [["b"]]
    http_client.delete_collection(col.name)


def test_restart_keeps_data(chroma_server: Any) -> None:
    name = _collection_name("fixture-restart")
    client = chroma_server.client()
    col = client.create_collection(name, embedding_function=None)
    col.add(ids=["x"], documents=["persisted"], embeddings=[[0.5, 0.5]])

    chroma_server.stop()
    assert not chroma_server.running
    chroma_server.start()
    assert chroma_server.running

    again = chroma_server.client().get_collection(name, embedding_function=None)
    assert again.get(ids=["x"])["documents"] == ["persisted"]
    chroma_server.client().delete_collection(name)

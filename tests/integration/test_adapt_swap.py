"""Re-embedding with another model (what `remy adapt` and `--revert` do) from the view of
crashes and other processes: a SIGKILL at any point leaves the collection searchable with
one model's vectors, and a reader in another process only ever answers with one model.
Real Chroma (embedded, and a `chroma run` server), the real MiniLM and a saved copy of
it with perturbed weights (another real sentence-transformers model directory)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import chromadb
import numpy as np
import pytest
from chromadb.api.shared_system_client import SharedSystemClient

from remy_retriever import Document, Retriever
from remy_retriever.stores.exact import exact_cosines
from remy_retriever.stores.reembed import VECTORS_SUFFIX

pytestmark = pytest.mark.slow

CHILD = Path(__file__).resolve().parent / "reembed_child.py"
sys.path.insert(0, str(CHILD.parent))

from reembed_child import QUERIES  # noqa: E402

BASE = "sentence-transformers/all-MiniLM-L6-v2"


def _corpus(n: int = 40) -> list[Document]:
    words = ["ice", "nectar", "magma", "tide", "apple", "comb", "crater", "pier", "frost"]
    return [
        Document(
            id=f"d{i}",
            text=f"Site {i} notes: the {words[i % 9]} and the {words[(i * 7) % 9]} "
            f"changed after season {i % 13}; the {words[(i * 5) % 9]} did not.",
        )
        for i in range(n)
    ]


@pytest.fixture(scope="module")
def other_model(tmp_path_factory: pytest.TempPathFactory, minilm_path: str) -> str:
    """MiniLM with one layer's weights perturbed (seeded), saved as a model directory."""
    import torch
    from sentence_transformers import SentenceTransformer

    model = SentenceTransformer(minilm_path, device="cpu")
    generator = torch.Generator().manual_seed(3)
    with torch.no_grad():
        weight = model[0].auto_model.encoder.layer[5].output.dense.weight
        weight.add_(torch.randn(weight.shape, generator=generator) * 0.2)
    out = tmp_path_factory.mktemp("other-model") / "minilm-perturbed"
    model.save(str(out))
    return str(out)


class Store:
    """One store under test: an embedded directory or a collection on the server, with
    the address the child processes take (see reembed_child.py)."""

    def __init__(self, kind: str, tmp_path: Path, server: Any) -> None:
        self.kind = kind
        self.collection = "docs" if kind == "embedded" else f"c{uuid.uuid4().hex[:12]}"
        self.path = tmp_path / "db"
        self.lexical = tmp_path / "lex"
        self.server = server

    def kwargs(self) -> dict[str, Any]:
        if self.kind == "embedded":
            return {"path": self.path}
        return {
            "client": self.server.client(),
            "collection": self.collection,
            "lexical_path": self.lexical,
        }

    @property
    def address(self) -> str:
        if self.kind == "embedded":
            return str(self.path)
        return f"http://{self.server.host}:{self.server.port}/{self.collection}{self.lexical}"

    def client(self) -> Any:
        if self.kind == "embedded":
            return chromadb.PersistentClient(path=str(self.path))
        return self.server.client()

    def shadows(self) -> list[str]:
        names = [c.name for c in self.client().list_collections()]
        return [n for n in names if n.startswith(self.collection) and n.endswith(VECTORS_SUFFIX)]


@pytest.fixture(params=["embedded", "server"])
def store(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Store]:
    server = request.getfixturevalue("chroma_server") if request.param == "server" else None
    if server is not None:
        server.start()
    s = Store(request.param, tmp_path, server)
    with Retriever(**s.kwargs(), embedder=BASE, embedder_backend="torch") as r:
        r.add(_corpus())
    yield s


def _child(*args: str) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, str(CHILD), *args],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env={**os.environ, "PYTHONUNBUFFERED": "1"},
    )


def _wait_for(proc: subprocess.Popen[str], line: str) -> None:
    assert proc.stdout is not None
    for got in proc.stdout:
        if got.strip() == line:
            return
    proc.wait()
    assert proc.stderr is not None
    pytest.fail(f"the child ended before printing {line!r}: {proc.stderr.read()[-2000:]}")


def _check_one_model(store: Store, expected: str) -> list[list[tuple[str, float]]]:
    """Reopen (the record decides the model): it must be ``expected``, every stored
    vector must be that model's embedding of its chunk, searches must answer, and no
    shadow may be left but the one in use. Returns the exact top five of each query."""
    # Open as a fresh process would: this one's embedded view predates the children's
    # writes (Chroma keeps one per store path and process).
    SharedSystemClient.clear_system_cache()
    with Retriever(**store.kwargs(), create=False) as r:
        dense = r._sync.dense
        embedder = r.embedder
        assert dense.identity is not None and dense.identity.name == expected
        got = dense.collection.get(include=["metadatas"])
        ids = list(got["ids"])
        assert sorted(ids) == sorted(dense.collection.get(include=[])["ids"])
        assert len(ids) == r.count() == 40
        texts = {cid: text for page in dense.iter_all(metadatas=False) for cid, text, _ in page}
        fresh = embedder.embed_documents([texts[c] for c in ids])
        for cid, vector in zip(ids, fresh):
            [(found, cosine)] = exact_cosines(dense, np.asarray(vector), [cid], None)
            assert found == cid and cosine > 0.9999, (cid, cosine)
        exact = [exact_cosines(dense, embedder.embed_query(q), ids, None)[:5] for q in QUERIES]
        for q, want in zip(QUERIES, exact):
            hits = r.search(q, mode="semantic", k=5)
            assert [h.id for h in hits] == [cid for cid, _ in want], q
        in_use = dense.collection.name
    assert [n for n in store.shadows() if n != in_use] == []
    return exact


@pytest.mark.parametrize("kill_after", ["batch 3", "swapped"])
def test_a_sigkill_during_the_reembed_leaves_one_model_searchable(
    store: Store, other_model: str, kill_after: str
) -> None:
    stall = "swap" if kill_after == "swapped" else "none"
    writer = _child("write", store.address, other_model, stall)
    try:
        _wait_for(writer, kill_after)
        writer.kill()  # SIGKILL: nothing of the child runs after this
    finally:
        writer.kill()
        writer.wait()
    assert writer.returncode == -9
    # Before the swap the old model stays; after it, the new one.
    _check_one_model(store, other_model if kill_after == "swapped" else BASE)
    # And the collection can be re-embedded again after either crash.
    done = _child("write", store.address, BASE if kill_after == "swapped" else other_model, "none")
    _, err = done.communicate(timeout=600)
    assert done.returncode == 0, err[-2000:]
    _check_one_model(store, BASE if kill_after == "swapped" else other_model)


def test_a_reader_in_another_process_never_sees_mixed_vectors(
    store: Store, other_model: str, tmp_path: Path
) -> None:
    old = _check_one_model(store, BASE)
    stop = tmp_path / "stop"
    reader = _child("read", store.address, str(stop))
    try:
        assert reader.stdout is not None
        first = reader.stdout.readline()  # the reader is up and answering
        writer = _child("write", store.address, other_model, "none")
        _, err = writer.communicate(timeout=600)
        assert writer.returncode == 0, err[-2000:]
        stop.touch()
        rest, errors = reader.communicate(timeout=600)
    finally:
        reader.kill()
        reader.wait()
    assert reader.returncode == 0, errors[-2000:]
    new = _check_one_model(store, other_model)
    exact = {BASE: dict(zip(QUERIES, old)), other_model: dict(zip(QUERIES, new))}
    lines = [json.loads(line) for line in [first, *rest.splitlines()]]
    answers = [a for a in lines if "hits" in a]
    models = [a["model"] for a in answers]
    assert BASE in models and other_model in models  # the reader spanned the swap
    assert models.index(other_model) > max(i for i, m in enumerate(models) if m == BASE)
    for a in answers:
        want = exact[a["model"]][a["query"]]
        assert [cid for cid, _ in a["hits"]] == [cid for cid, _ in want], a
        np.testing.assert_allclose([s for _, s in a["hits"]], [s for _, s in want], atol=1e-4)

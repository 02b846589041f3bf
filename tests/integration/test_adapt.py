"""`remy adapt`: fine-tuning the real MiniLM on a tiny corpus's own text, re-embedding the
collection with it, the held-out guard, and `--revert`."""

from __future__ import annotations

import json
import random
import shutil
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from remy_retriever import Document, Retriever
from remy_retriever.cli import main as cli_main
from remy_retriever.models.adapt_train import CARD_NAME
from remy_retriever.stores.exact import exact_cosines

pytestmark = pytest.mark.slow

TOPICS = {
    "glacier": ["ice", "meltwater", "moraine", "crevasse", "valley", "snowfall", "retreat"],
    "beehive": ["nectar", "comb", "queen", "forager", "pollen", "waggle", "swarm"],
    "volcano": ["magma", "ash", "eruption", "crater", "lava", "vent", "tremor"],
    "harbour": ["tide", "pier", "cargo", "crane", "vessel", "anchor", "dock"],
    "orchard": ["apple", "blossom", "graft", "harvest", "pruning", "cider", "frost"],
}
QUERIES = ["how fast does the ice retreat", "bees dancing to show nectar", "lava from a vent"]


def _corpus(n: int = 40, seed: int = 7) -> list[Document]:
    rng = random.Random(seed)
    docs = []
    for i in range(n):
        topic = list(TOPICS)[i % len(TOPICS)]
        words = TOPICS[topic]
        sentences = [
            f"The {rng.choice(words)} near the {topic} changed the {rng.choice(words)} "
            f"after the {rng.choice(words)} of study site {i} and season {rng.randrange(99)}."
            for _ in range(5)
        ]
        docs.append(Document(id=f"d{i}", text=" ".join(sentences), title=f"Notes on {topic} {i}"))
    return docs


def _exact_answers(db: Path) -> list[list[tuple[str, float]]]:
    """The top five of each query by exact cosine over every stored vector, with the
    collection's own embedder (the fill's scorer, :func:`exact_cosines`): what a search
    answers, without the HNSW graph's approximation (in-place updates of every vector,
    twice, can make the graph miss a neighbour that an exact scan finds)."""
    with Retriever(db, create=False) as r:
        dense = r._sync.dense
        ids = dense.collection.get(include=[])["ids"]
        return [exact_cosines(dense, r.embedder.embed_query(q), ids, None)[:5] for q in QUERIES]


def _vectors(db: Path) -> np.ndarray:
    with Retriever(db, create=False) as r:
        got = r._sync.dense.collection.get(include=["embeddings"])
        order = np.argsort(got["ids"])
        return np.asarray(got["embeddings"])[order]


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory) -> Path:
    db = tmp_path_factory.mktemp("adapt") / "db"
    with Retriever(db, embedder_backend="torch") as r:
        r.add(_corpus())
    return db


def _adapt(db: Path, *extra: str, capsys: Any) -> dict[str, Any]:
    argv = ["adapt", "--db", str(db), "--batch-size", "8", "--budget", "2", "--json", *extra]
    assert cli_main(argv) == 0
    return dict(json.loads(capsys.readouterr().out))


def test_adapting_changes_the_vectors_records_the_model_and_revert_restores_the_answers(
    built: Path, tmp_path: Path, capsys: Any
) -> None:
    db = tmp_path / "db"
    shutil.copytree(built, db)
    before, exact = _vectors(db), _exact_answers(db)
    out = _adapt(db, "--margin", "-1", "--no-progress", capsys=capsys)
    assert out["accepted"] is True
    model = Path(out["model"])
    card = json.loads((model / CARD_NAME).read_text())
    assert card["base_model"] == "sentence-transformers/all-MiniLM-L6-v2"
    assert card["mined"]["counts"]["cloze"] > 0 and card["mined"]["counts"]["title"] > 0
    assert card["steps"] == out["steps"] >= 1
    assert card["settings"]["seed"] == 0 and card["base_fingerprint"]
    after = _vectors(db)
    assert after.shape == before.shape
    assert not np.allclose(after, before, atol=1e-4)
    with Retriever(db, create=False) as r:
        assert r.embedder.model_id == str(model)  # type: ignore[attr-defined]
        assert r._sync.dense.identity is not None
        assert r._sync.dense.identity.name == str(model)
    assert cli_main(["adapt", "--db", str(db), "--revert", "--json"]) == 0
    reverted = json.loads(capsys.readouterr().out)
    assert reverted["reverted_from"] == str(model)
    again = _exact_answers(db)
    assert [[cid for cid, _ in q] for q in again] == [[cid for cid, _ in q] for q in exact]
    assert np.allclose(
        [[v for _, v in q] for q in again], [[v for _, v in q] for q in exact], atol=1e-4
    )
    np.testing.assert_allclose(_vectors(db), before, atol=1e-5)


def test_an_adaptation_that_does_not_win_keeps_the_base_model(
    built: Path, tmp_path: Path, capsys: Any
) -> None:
    db = tmp_path / "db"
    shutil.copytree(built, db)
    before = _vectors(db)
    output = tmp_path / "model"
    out = _adapt(db, "--margin", "1.5", "--output", str(output), capsys=capsys)
    assert out["accepted"] is False
    assert out["model"] == "sentence-transformers/all-MiniLM-L6-v2"
    assert not output.exists()
    np.testing.assert_array_equal(_vectors(db), before)


def test_revert_on_a_collection_never_adapted_says_so(built: Path, capsys: Any) -> None:
    assert cli_main(["adapt", "--db", str(built), "--revert"]) == 2
    assert "nothing to revert" in capsys.readouterr().err

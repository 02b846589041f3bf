"""BM25 statistics and tenants: with ``bm25_statistics="filter"`` a tenant's lexical
scores are computed from its own chunks only, so they do not reveal which terms other
tenants hold; with the default (collection-wide statistics) they do, as SECURITY.md says."""

from __future__ import annotations

import hashlib
from pathlib import Path

import numpy as np
import pytest

from remy_retriever import Document, InvalidInputError, Retriever

WHERE_A = {"tenant": "a"}
QUERY = "zebra stripes"
View = dict[str, tuple[float, float]]


class WordHashEmbedder:
    """Deterministic vectors (a unit vector per text hash); only lexical scores matter."""

    model_id = "test/word-hash"

    def embed_documents(self, texts: list[str]) -> np.ndarray:
        return np.stack([self._one(t) for t in texts])

    def embed_query(self, text: str) -> np.ndarray:
        return self._one(text)

    @staticmethod
    def _one(text: str) -> np.ndarray:
        seed = int.from_bytes(hashlib.blake2b(text.encode()).digest()[:8])
        v = np.random.default_rng(seed).standard_normal(16)
        return (v / np.linalg.norm(v)).astype(np.float32)


def tenant_a_docs() -> list[Document]:
    # Every chunk has four words, so the average chunk length is the same in every store
    # below, and only N and the document frequencies can differ.
    texts = [
        "zebra stripes black white",
        "zebra grazing savanna grass",
        "lion hunting savanna night",
        "giraffe eating acacia leaves",
        "stripes pattern fabric shop",
        "elephant drinking river water",
    ]
    return [
        Document(id=f"a{i}", text=t, title="", metadata={"tenant": "a"})
        for i, t in enumerate(texts)
    ]


def tenant_b_docs(n: int) -> list[Document]:
    return [
        Document(id=f"b{i}", text=f"zebra herd number w{i}", title="", metadata={"tenant": "b"})
        for i in range(n)
    ]


def lexical_view(r: Retriever) -> View:
    """Tenant a's lexical score and calibrated relevance per chunk, for QUERY."""
    hits = r.calibrated_search(QUERY, mode="lexical", k=10, where=WHERE_A)
    return {h.hit.citation.document_id: (h.hit.score, h.relevance) for h in hits}


def assert_same(
    before: dict[str, tuple[float, float]], after: dict[str, tuple[float, float]]
) -> None:
    assert before.keys() == after.keys()
    for key, (score, relevance) in before.items():
        assert after[key][0] == pytest.approx(score, rel=1e-5), key
        assert after[key][1] == pytest.approx(relevance, rel=1e-5), key


def test_filter_statistics_hide_other_tenants_terms(tmp_path: Path) -> None:
    r = Retriever(tmp_path / "s", embedder=WordHashEmbedder(), bm25_statistics="filter")
    r.add(tenant_a_docs())
    before = lexical_view(r)
    assert set(before) == {"a0", "a1", "a4"}

    r.add(tenant_b_docs(30))  # another tenant makes "zebra" common
    assert_same(before, lexical_view(r))

    r.delete([f"b{i}" for i in range(0, 30, 2)])  # deleted chunks linger in tantivy
    assert_same(before, lexical_view(r))


def test_filter_statistics_match_a_store_holding_only_that_tenant(tmp_path: Path) -> None:
    shared = Retriever(tmp_path / "shared", embedder=WordHashEmbedder(), bm25_statistics="filter")
    shared.add(tenant_a_docs() + tenant_b_docs(25))
    alone = Retriever(tmp_path / "alone", embedder=WordHashEmbedder())
    alone.add(tenant_a_docs())
    assert_same(lexical_view(alone), lexical_view(shared))
    explained = shared.search(QUERY, mode="lexical", k=3, where=WHERE_A, explain=True)
    assert next(h.citation.document_id for h in explained) == "a0"


def test_collection_statistics_do_reveal_other_tenants(tmp_path: Path) -> None:
    """The leak the option closes (and the reason the test above can fail)."""
    r = Retriever(tmp_path / "s", embedder=WordHashEmbedder())
    r.add(tenant_a_docs())
    before = lexical_view(r)
    r.add(tenant_b_docs(30))
    after = lexical_view(r)
    assert after["a1"][0] < before["a1"][0] * 0.9  # "zebra" became common elsewhere


def test_hybrid_and_unfiltered_searches_still_work(tmp_path: Path) -> None:
    r = Retriever(tmp_path / "s", embedder=WordHashEmbedder(), bm25_statistics="filter")
    r.add(tenant_a_docs() + tenant_b_docs(5))
    assert {
        h.citation.document_id for h in r.search(QUERY, mode="hybrid", k=10, where=WHERE_A)
    } <= {f"a{i}" for i in range(6)}
    assert r.search(QUERY, mode="lexical", k=3)  # no filter: collection statistics


@pytest.mark.parametrize("bad", ["tenant", "", None, 1, ["filter"]])
def test_bad_bm25_statistics_is_refused_before_anything_is_created(
    tmp_path: Path, bad: object
) -> None:
    with pytest.raises(InvalidInputError, match="bm25_statistics"):
        Retriever(tmp_path / "s", embedder=WordHashEmbedder(), bm25_statistics=bad)  # type: ignore[arg-type]
    assert not (tmp_path / "s").exists()

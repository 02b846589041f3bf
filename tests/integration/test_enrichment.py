"""Reranking with a real (seeded) cross-encoder, and explain / expand / highlight."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from remy_retriever import Document, InvalidInputError, ModelLoadError, Retriever
from remy_retriever.models.rerankers import CrossEncoderReranker

MODES = ("semantic", "lexical", "hybrid")

SECTIONS = [
    ("Install", "Install the agent with apt. The installed agent starts at boot."),
    ("Upgrade", "Upgrading keeps your settings. Installation of a new version is quick."),
    ("Remove", "To remove the agent, stop the service first and then uninstall it."),
    ("Logs", "Logs are written to the journal; rotate them weekly to save disk."),
    ("Backup", "Back up the data directory nightly with a cron job."),
]


def _doc(doc_id: str, tenant: str) -> Document:
    body = "\n\n".join(f"## {title}\n\n{text} ({tenant})" for title, text in SECTIONS)
    return Document(
        id=doc_id, text=f"# Agent guide {tenant}\n\n{body}", metadata={"tenant": tenant}
    )


@pytest.fixture
def retriever(tmp_path: Path, embedder: Any) -> Retriever:
    r = Retriever(tmp_path / "db", collection="docs", embedder=embedder, max_tokens=40)
    r.add([_doc("guide-a", "a"), _doc("guide-b", "b")])
    r.add(
        [
            Document(id="other", text="Installing plugins: pick one from the catalogue."),
            Document(
                id="intl", text="🎉🎉 日本語のテキスト. Café crème brûlée; INSTALLATION rêvée."
            ),
        ]
    )
    return r


def test_chunks_are_per_section(retriever: Retriever) -> None:
    hits = retriever.search("install agent apt", k=3, where={"tenant": "a"})
    assert hits[0].citation.chunk_count == len(SECTIONS)


@pytest.mark.parametrize("mode", MODES)
def test_rerank_scores_and_kept_retrieval_fields(
    retriever: Retriever, cross_encoder_path: str, mode: str
) -> None:
    query = "how do I install or upgrade the agent"
    plain = retriever.search(query, mode=mode, k=10)
    reranker = CrossEncoderReranker(cross_encoder_path)
    hits = retriever.search(query, mode=mode, k=10, rerank=reranker, rerank_depth=10)
    assert len(hits) == len(plain)
    scores = [h.score for h in hits]
    assert all(0.0 <= s <= 1.0 for s in scores)
    assert scores == sorted(scores, reverse=True)
    by_id = {h.id: (pos, h.score) for pos, h in enumerate(plain, start=1)}
    for hit in hits:
        assert hit.retrieval_rank is not None and hit.retrieval_score is not None
        assert (hit.retrieval_rank, hit.retrieval_score) == by_id[hit.id]
    # The seeded head disagrees with retrieval somewhere: reranking moved something.
    finals = [h.retrieval_rank for h in hits]
    assert finals != list(range(1, len(hits) + 1))
    # The scores really are the cross-encoder's.
    direct = reranker.score(query, [h.text for h in hits])
    assert [h.score for h in hits] == pytest.approx(direct)


def test_rerank_by_path_and_min_score(retriever: Retriever, cross_encoder_path: str) -> None:
    hits = retriever.search("install", k=5, rerank=cross_encoder_path)
    assert hits and all(h.retrieval_rank for h in hits)
    cutoff = hits[len(hits) // 2].score
    kept = retriever.search("install", k=5, rerank=cross_encoder_path, min_score=cutoff)
    assert kept and all(h.score >= cutoff for h in kept)
    assert len(kept) < len(hits) or all(h.score >= cutoff for h in hits)


def test_no_rerank_omits_retrieval_fields(retriever: Retriever) -> None:
    for hit in retriever.search("install", k=5):
        assert hit.retrieval_rank is None and hit.retrieval_score is None
        assert "retrievalRank" not in hit.to_dict()


def test_missing_reranker_model(retriever: Retriever) -> None:
    with pytest.raises(ModelLoadError, match="no-such/reranker.*local directory.*reranker=PATH"):
        retriever.search("install", rerank="no-such/reranker")
    with pytest.raises(InvalidInputError, match="rerank must be"):
        retriever.search("install", rerank=3.5)  # type: ignore[arg-type]


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("where", [None, {"tenant": "a"}])
def test_enrichment_never_changes_results(
    retriever: Retriever, mode: str, where: dict[str, str] | None
) -> None:
    query = "installation of the agent"
    base = [(h.id, h.score) for h in retriever.search(query, mode=mode, k=6, where=where)]
    assert base
    for options in (
        {"explain": True},
        {"expand": 2},
        {"highlight": True},
        {"explain": True, "expand": True, "highlight": True},
    ):
        hits = retriever.search(query, mode=mode, k=6, where=where, **options)  # type: ignore[arg-type]
        assert [(h.id, h.score) for h in hits] == base, options


@pytest.mark.parametrize("mode", MODES)
def test_explain_fields(retriever: Retriever, mode: str) -> None:
    hits = retriever.search("installed agent", mode=mode, k=5, explain=True)
    for hit in hits:
        info = hit.explain
        assert info is not None and info.mode == mode
        assert set(info.branches) <= {"semantic", "lexical"} and info.branches
        if mode == "semantic":
            assert set(info.branches) == {"semantic"}
            assert info.branches["semantic"].score == pytest.approx(hit.score)
        if mode == "lexical":
            assert info.branches["lexical"].score == pytest.approx(hit.score)
            assert set(info.matched_terms) <= {"installed", "agent"} and info.matched_terms
            assert len(info.matched_stems) == len(info.matched_terms)
            assert set(info.matched_stems) <= {"instal", "agent"}


def test_neighbors_order_edges_documents_and_filter(retriever: Retriever) -> None:
    hits = retriever.search("upgrade keeps settings", k=10, expand=2, where={"tenant": "a"})
    by_pos = {h.citation.chunk_index: h for h in hits if h.citation.document_id == "guide-a"}
    texts = {
        pos: retriever.search(SECTIONS[pos][1], mode="lexical", k=1, where={"tenant": "a"})[0].text
        for pos in range(len(SECTIONS))
    }
    for pos, hit in by_pos.items():
        assert hit.neighbors is not None
        want_before = [texts[p] for p in range(max(0, pos - 2), pos)]
        want_after = [texts[p] for p in range(pos + 1, min(len(SECTIONS), pos + 3))]
        assert list(hit.neighbors["before"]) == want_before
        assert list(hit.neighbors["after"]) == want_after
        for text in (*hit.neighbors["before"], *hit.neighbors["after"]):
            assert "(a)" in text and "(b)" not in text
    first = retriever.search("Install the agent with apt", mode="lexical", k=1, expand=3)[0]
    assert first.citation.chunk_index == 0 and first.neighbors is not None
    assert first.neighbors["before"] == () and len(first.neighbors["after"]) == 3
    single = retriever.search("plugins catalogue", mode="lexical", k=1, expand=1)[0]
    assert single.neighbors == {"before": (), "after": ()}


def test_highlight_surface_forms(retriever: Retriever) -> None:
    for mode in MODES:
        hits = retriever.search("installing", mode=mode, k=10, highlight=True)
        tokens = set()
        for hit in hits:
            assert hit.matches is not None
            for m in hit.matches:
                assert hit.text[m.start : m.end] == m.token
                tokens.add(m.token)
        assert {"Install", "installed", "Installation", "Installing", "INSTALLATION"} <= tokens
    intl = retriever.search("brûlée installation", mode="lexical", k=1, highlight=True)[0]
    assert intl.citation.document_id == "intl" and intl.matches is not None
    assert {m.token for m in intl.matches} == {"brûlée", "INSTALLATION"}
    for m in intl.matches:
        assert intl.text[m.start : m.end] == m.token


def test_explain_shows_the_signal_adaptive_weights_and_why(retriever: Retriever) -> None:
    hits = retriever.search("installed agent", k=5, explain=True, adaptive="signals")
    assert hits
    for hit in hits:
        assert hit.explain is not None and hit.explain.fusion_weights is not None
        chosen = hit.explain.fusion_weights
        assert chosen.weights["semantic"] + chosen.weights["lexical"] == pytest.approx(1.0)
        assert chosen.alpha == pytest.approx(0.45) and "agreement" in chosen.reason
        assert hit.explain.to_dict()["fusionWeights"]["reason"] == chosen.reason
    fixed = retriever.search("installed agent", k=5, explain=True)
    assert all(h.explain is not None and h.explain.fusion_weights is None for h in fixed)

"""The flat metadata layout both framework adapters share."""

from __future__ import annotations

import pytest

from remy_retriever import Citation, InvalidInputError, SearchHit
from remy_retriever.integration.flatten import (
    FLAT_KEYS,
    SHADOW_KEY,
    hit_from_metadata,
    hit_to_metadata,
)


def _hit(**kwargs: object) -> SearchHit:
    base: dict[str, object] = {
        "id": "guide#2",
        "score": 0.75,
        "text": "Guide > Install\n\nRun the installer.",
        "citation": Citation(
            document_id="guide",
            chunk_index=2,
            start=10,
            end=40,
            heading_path=("Guide", "Install"),
            title="Guide",
            url="https://example.org/guide",
            chunk_count=5,
        ),
        "metadata": {"tenant": "a", "score": "user's own", "source": "user source"},
    }
    base.update(kwargs)
    return SearchHit(**base)  # type: ignore[arg-type]


def test_round_trip_keeps_everything_and_shadows_colliding_user_keys() -> None:
    hit = _hit(retrieval_rank=3, retrieval_score=0.5)
    meta = hit_to_metadata(hit)
    assert meta["score"] == 0.75 and meta["source"] == "https://example.org/guide"
    assert meta["heading_path"] == ["Guide", "Install"] and meta["chunk_index"] == 2
    assert meta[SHADOW_KEY] == {"score": "user's own", "source": "user source"}
    assert meta["tenant"] == "a"
    assert "explain" not in meta  # only when the search asked for it
    assert hit_from_metadata(hit.id, hit.text, meta) == hit


def test_a_new_score_overrides_and_extra_reserved_keys_are_owned() -> None:
    hit = _hit(metadata={"relevance_score": 1})
    meta = hit_to_metadata(hit, reserved=FLAT_KEYS | {"relevance_score"})
    assert meta[SHADOW_KEY] == {"relevance_score": 1}
    meta["relevance_score"] = 0.9  # what a reranker adds
    back = hit_from_metadata(None, hit.text, meta, score=0.9, reserved={"relevance_score"})
    assert back.score == 0.9 and back.id == "guide#2"
    assert dict(back.metadata) == {"relevance_score": 1}


def test_foreign_metadata_and_objects_are_rejected_clearly() -> None:
    with pytest.raises(InvalidInputError, match="no remy citation"):
        hit_from_metadata("x", "text", {"source": "elsewhere"}, what="Document 'x'")
    with pytest.raises(InvalidInputError, match="expected a remy SearchHit, got dict"):
        hit_to_metadata({"id": "x"})  # type: ignore[arg-type]

"""Pair mining for `remy adapt`: inverse-cloze and title pairs, filters, seeds."""

from __future__ import annotations

import pytest

from remy_retriever.errors import InvalidInputError
from remy_retriever.models.adapt_pairs import MiningFilters, Passage, mine_pairs, split_pairs

BODY = (
    "Glaciers carve deep valleys into the mountain rock over many thousands of years. "
    "Their meltwater feeds the rivers that farmers downstream depend on every summer. "
    "Warmer winters have made the ice retreat faster than surveys predicted decades ago."
)


def _passages() -> list[Passage]:
    return [
        Passage("ice", BODY, "Alpine glaciers in retreat"),
        Passage(
            "bees",
            "Honey bees communicate the location of flowers with a waggle dance on the comb. "
            "The angle of the dance encodes the direction relative to the position of the sun. "
            "Its duration tells the other foragers how far away the nectar source lies.",
            "How bees share directions",
        ),
    ]


def test_cloze_anchor_is_a_sentence_removed_from_its_positive() -> None:
    mined = mine_pairs(_passages(), MiningFilters(per_document=10, kinds=("cloze",)))
    assert mined.pairs and all(p.kind == "cloze" for p in mined.pairs)
    for pair in mined.pairs:
        assert pair.anchor not in pair.positive
        source = BODY if pair.document_id == "ice" else _passages()[1].text
        assert pair.anchor in source
    assert mined.counts == {"cloze": 6}


def test_title_pairs_map_the_title_to_the_body() -> None:
    mined = mine_pairs(_passages(), MiningFilters(kinds=("title",)))
    assert {(p.document_id, p.anchor) for p in mined.pairs} == {
        ("ice", "Alpine glaciers in retreat"),
        ("bees", "How bees share directions"),
    }
    assert all(p.positive.startswith(("Glaciers", "Honey")) for p in mined.pairs)


def test_the_cap_per_document_takes_the_kinds_in_turn() -> None:
    mined = mine_pairs(_passages(), MiningFilters(per_document=2))
    for doc in ("ice", "bees"):
        kinds = sorted(p.kind for p in mined.pairs if p.document_id == doc)
        assert kinds == ["cloze", "title"]
    assert mined.dropped["per_document"] == 4


def test_repeated_anchors_are_dropped_everywhere() -> None:
    shared = "Please cite this article using the reference given on the publisher page."
    passages = [Passage(d, f"{BODY} {shared}") for d in ("a", "b")]
    mined = mine_pairs(passages, MiningFilters(per_document=10, kinds=("cloze",)))
    assert all(p.anchor != shared for p in mined.pairs)
    assert mined.dropped["duplicate_anchor"] >= 2


def test_length_filters_drop_short_sentences_and_short_rests() -> None:
    mined = mine_pairs([Passage("x", "Too short. Also short here.")])
    assert mined.pairs == ()
    assert mined.dropped["short_anchor"] == 2


def test_mining_is_seeded_and_order_free() -> None:
    filters = MiningFilters(per_document=1, seed=3)
    a = mine_pairs(_passages(), filters)
    b = mine_pairs(list(reversed(_passages())), filters)
    assert a == b
    other = {mine_pairs(_passages(), MiningFilters(per_document=1, seed=s)).pairs for s in range(8)}
    assert len(other) > 1


def test_the_held_out_split_is_by_document() -> None:
    passages = [
        Passage(f"d{i}", BODY.replace("Glaciers", f"Glacier{i}"), f"Title {i} here")
        for i in range(10)
    ]
    pairs = mine_pairs(passages, MiningFilters(per_document=3)).pairs
    train, held = split_pairs(pairs, 0.2, seed=1)
    assert {p.document_id for p in train}.isdisjoint({p.document_id for p in held})
    assert len({p.document_id for p in held}) == 2
    assert len(train) + len(held) == len(pairs)


def test_bad_filters_name_the_value() -> None:
    with pytest.raises(InvalidInputError, match="per_document"):
        MiningFilters(per_document=0)
    with pytest.raises(InvalidInputError, match="unknown pair kinds"):
        MiningFilters(kinds=("tsdae",))
    with pytest.raises(InvalidInputError, match="held_out"):
        split_pairs([], 1.5)

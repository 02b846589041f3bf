"""The metadata encoding and the piece ids both framework vector stores share
(``remy_retriever.integration``), without a store: exact round trips or a refusal naming
the key, stored keys that never collide and never look reserved, ids without counters."""

from __future__ import annotations

import math
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from remy_retriever import Document, InvalidDocumentError
from remy_retriever.integration import (
    MetadataCodec,
    Piece,
    assign_ids,
    content_digest,
    reserved_looking,
    source_id,
)

CODEC = MetadataCodec("lc_encoding")
KEYS = st.one_of(
    st.text(max_size=6),
    st.sampled_from(["a", "a.b", "~", "~1", "", "remy_x", "lc.remy_x", "ref_doc_id", "$x", "#x"]),
)
SCALARS = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(min_value=-(2**65), max_value=2**65),
    st.floats(),
    st.text(max_size=8),
)
VALUES = st.recursive(
    SCALARS,
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(KEYS, inner, max_size=3),
    max_leaves=10,
)


def _refused(value: Any) -> bool:
    if isinstance(value, float):
        return not math.isfinite(value)
    if isinstance(value, int) and not isinstance(value, bool):
        return not -(2**63) <= value < 2**63
    if isinstance(value, dict):
        return any(_refused(v) for v in value.values())
    return isinstance(value, list) and any(_refused(v) for v in value)


@settings(max_examples=300)
@given(metadata=st.dictionaries(KEYS, VALUES, max_size=6))
def test_metadata_round_trips_exactly_or_is_refused_naming_a_key(metadata: dict[str, Any]) -> None:
    if _refused(metadata):
        with pytest.raises(InvalidDocumentError, match=r"metadata\["):
            CODEC.encode(metadata)
        return
    encoded = CODEC.encode(metadata)
    assert all(
        isinstance(v, (str, int, float, bool))
        or (isinstance(v, list) and v and all(isinstance(i, str) for i in v))
        for v in encoded.values()
    )
    users = [k for k in encoded if k != "lc_encoding"]
    assert not any(reserved_looking(k) for k in users)  # never an owned name
    Document(id="d", text="t", metadata=encoded)  # the core accepts every stored key
    assert CODEC.decode(encoded) == metadata


def test_keys_that_collide_once_flattened_or_prefixed_round_trip_unchanged() -> None:
    for metadata in (
        {"a.b": 1, "a": {"b": 2}},
        {"remy_x": 1, "lc.remy_x": 2},
        {"ref_doc_id": "x", "li_node_id": "y", "l": ["a,b", "c"]},
    ):
        assert CODEC.decode(CODEC.encode(metadata)) == metadata


def test_adapter_keys_without_a_record_are_not_user_metadata() -> None:
    stored = {"li_node_id": "n", "ref_doc_id": "doc", "plain": 1, "dotted.key": 2}
    assert CODEC.decode(stored) == {"plain": 1, "dotted.key": 2}


def test_ids_never_count_calls_and_keep_every_piece() -> None:
    def page(n: int) -> Piece:
        return Piece(digest=f"{n:032x}", source="report.pdf", page=n)

    one_call = assign_ids([page(n) for n in range(5)])
    per_call = [assign_ids([page(n)])[0] for n in range(5)]
    assert one_call == per_call == [f"report.pdf@p{n}" for n in range(5)]
    same_place = assign_ids(
        [Piece(digest="a" * 32, source="s"), Piece(digest="b" * 32, source="s")]
    )
    assert len(set(same_place)) == 2 and all(i.startswith("s~") for i in same_place)
    twice = assign_ids([Piece(digest="c" * 32), Piece(digest="c" * 32)])
    assert twice[0] == twice[1]  # the same content, the same piece
    assert source_id("a@p1") != source_id("a", page=1)  # escaped: never ambiguous
    assert content_digest("t", {"k": 1}) != content_digest("t", {"k": 2})


def test_lists_of_strings_are_stored_as_lists_so_contains_filters_on_them() -> None:
    encoded = CODEC.encode({"tags": ["a", "b"], "mixed": ["a", 1], "none": [], "t": ("x",)})
    assert encoded["tags"] == ["a", "b"] and encoded["t"] == ["x"]
    assert encoded["mixed"] == '["a", 1]' and encoded["none"] == "[]"  # JSON text
    assert CODEC.decode(encoded) == {"tags": ["a", "b"], "mixed": ["a", 1], "none": [], "t": ["x"]}

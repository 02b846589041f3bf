"""The stored format (remy_retriever.schema.records): chunk ids, and record metadata as written to
and read from Chroma (pure functions, no Chroma)."""

from __future__ import annotations

import json

import pytest

from remy_retriever.errors import StoreError
from remy_retriever.schema.records import (
    PACKED_KEY,
    TEXT_KEY,
    chunk_id,
    document_id_of,
    pack,
    parse_chunk_id,
    unpack,
)


def test_bookkeeping_round_trips_through_one_packed_key() -> None:
    meta = {"tenant": "a", "remy_doc_id": "d", "remy_pos": 3, "remy_heading": '["A"]'}
    (written,) = pack([meta], ["body"])
    assert written[TEXT_KEY] == "body" and written["tenant"] == "a"
    assert json.loads(written[PACKED_KEY]) == {"remy_pos": 3, "remy_heading": '["A"]'}
    result = {"ids": ["d#3"], "metadatas": [written]}
    assert unpack(result, metadatas=True) == [("d#3", "body", meta)]


def test_pack_all_leaves_only_text_and_packed_key() -> None:
    (written,) = pack([{"tenant": "a", "remy_n_chunks": 2}], ["t"], pack_all=True)
    assert set(written) == {TEXT_KEY, PACKED_KEY}


def test_unreadable_packed_metadata_names_the_record() -> None:
    result = {"ids": ["d#0"], "metadatas": [{TEXT_KEY: "t", PACKED_KEY: "{not json"}]}
    with pytest.raises(StoreError, match=r"record 'd#0' has unreadable metadata"):
        unpack(result, metadatas=True)


def test_chunk_ids_round_trip_and_keep_separators_inside_document_ids() -> None:
    assert chunk_id("guide.md", 3) == "guide.md#3"
    assert parse_chunk_id("guide.md#3") == ("guide.md", 3)
    assert parse_chunk_id(chunk_id("a#b", 12)) == ("a#b", 12)
    assert document_id_of("a#b#0") == "a#b"
    assert document_id_of("x#0", {"remy_doc_id": "recorded"}) == "recorded"


@pytest.mark.parametrize("bad", ["no-separator", "#3", "doc#", "doc#x"])
def test_parse_chunk_id_refuses_what_chunk_id_never_makes(bad: str) -> None:
    with pytest.raises(StoreError, match="is not a remy chunk id"):
        parse_chunk_id(bad)

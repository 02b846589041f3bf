"""Record metadata as written to and read from Chroma (pure functions, no Chroma)."""

from __future__ import annotations

import json

import pytest

from remy_retriever.errors import StoreError
from remy_retriever.stores.dense import PACKED_KEY, TEXT_KEY, _records, _with_text


def test_bookkeeping_round_trips_through_one_packed_key() -> None:
    meta = {"tenant": "a", "remy_doc_id": "d", "remy_pos": 3, "remy_heading": '["A"]'}
    (written,) = _with_text([meta], ["body"])
    assert written[TEXT_KEY] == "body" and written["tenant"] == "a"
    assert json.loads(written[PACKED_KEY]) == {"remy_pos": 3, "remy_heading": '["A"]'}
    result = {"ids": ["d#3"], "metadatas": [written]}
    assert _records(result, metadatas=True) == [("d#3", "body", meta)]


def test_pack_all_leaves_only_text_and_packed_key() -> None:
    (written,) = _with_text([{"tenant": "a", "remy_n_chunks": 2}], ["t"], pack_all=True)
    assert set(written) == {TEXT_KEY, PACKED_KEY}


def test_unreadable_packed_metadata_names_the_record() -> None:
    result = {"ids": ["d#0"], "metadatas": [{TEXT_KEY: "t", PACKED_KEY: "{not json"}]}
    with pytest.raises(StoreError, match=r"record 'd#0' has unreadable metadata"):
        _records(result, metadatas=True)

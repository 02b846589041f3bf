"""Hostile documents and filters against real Chroma and tantivy: metadata that
would break Chroma is refused before anything is written, everything inside the limits
is stored and reopens, and a filter is accepted or refused the same way in every mode."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from remy_reliability_support import MODES, TokenHashEmbedder, dense_records, snapshot

from remy_retriever import (
    Document,
    InvalidDocumentError,
    InvalidFilterError,
    InvalidInputError,
    Retriever,
)
from remy_retriever.memory import MemoryStore
from remy_retriever.memory.checks import MAX_MEMORY_METADATA_KEYS
from remy_retriever.schema.document import (
    MAX_METADATA_BYTES,
    MAX_METADATA_KEY_CHARS,
    MAX_METADATA_KEYS,
    MAX_METADATA_VALUE_BYTES,
)
from remy_retriever.schema.filters import (
    MAX_CONDITIONS,
    MAX_DEPTH,
    MAX_LIST_VALUES,
    matches,
    parse_where,
)

EMBEDDER = TokenHashEmbedder()
BODY = "Kettle descaling. Fill the kettle with vinegar and water, boil, rinse twice."


def _open(path: Path) -> Retriever:
    return Retriever(path, collection="hard", embedder=EMBEDDER, max_tokens=32)


@pytest.fixture
def store(tmp_path: Path) -> Iterator[tuple[Path, Retriever]]:
    r = _open(tmp_path / "store")
    r.add(
        [
            Document(id=f"d{i}", text=f"{BODY} note{i}", metadata={"n": i, "t": f"t{i % 3}"})
            for i in range(6)
        ]
    )
    yield tmp_path / "store", r


def _all_modes_find(r: Retriever, where: dict[str, Any], query: str = "kettle vinegar") -> set[str]:
    found = [
        {h.citation.document_id for h in r.search(query, mode=mode, k=50, where=where)}
        for mode in MODES
    ]
    assert found[0] == found[1] == found[2], dict(zip(MODES, found))
    return found[0]


# -- item 1: metadata that would make the store unopenable ---------------------------------


def test_a_metadata_bomb_is_refused_and_the_store_still_opens(
    store: tuple[Path, Retriever],
) -> None:
    """On main, 8,000 keys raised StoreError ("Failed to apply logs to the metadata
    segment") and every later open failed ("Error sending backfill request")."""
    path, r = store
    before = snapshot(r)
    with pytest.raises(InvalidDocumentError, match="8,000 keys"):
        Document(id="bomb", text="x", metadata={f"k{i}": "v" for i in range(8000)})
    # The mapping can change after the Document was made: add() checks again.
    meta: dict[str, Any] = {"ok": 1}
    sneaky = Document(id="bomb", text="x", metadata=meta)
    meta.update({f"k{i}": "v" for i in range(8000)})
    with pytest.raises(InvalidDocumentError, match="8,001 keys"):
        r.add([sneaky])
    assert snapshot(r) == before
    again = _open(path)
    assert {h.citation.document_id for h in again.search("kettle", k=10)} >= {"d0", "d5"}


def test_a_memory_metadata_bomb_is_refused_and_the_store_still_opens(tmp_path: Path) -> None:
    store = MemoryStore(tmp_path / "m", embedder=EMBEDDER)
    kept = store.add("the kettle needs descaling", metadata={"room": "kitchen"})
    with pytest.raises(InvalidInputError, match="8,000 keys"):
        store.add("boom", metadata={f"k{i}": "v" for i in range(8000)})
    with pytest.raises(InvalidInputError, match="over the limit"):
        store.add("boom", metadata={"k": "v" * (MAX_METADATA_VALUE_BYTES + 1)})
    reopened = MemoryStore(tmp_path / "m", embedder=EMBEDDER)
    assert [m.id for m in reopened.search("kettle").results] == [kept.id]


def test_documents_at_every_metadata_limit_are_stored_searched_and_reopen(
    tmp_path: Path,
) -> None:
    """The limits sit well inside what Chroma survives: a document at all of them at
    once, split into many chunks, is stored, filtered on in every mode, and reopens."""
    path = tmp_path / "limits"
    r = _open(path)
    long_key = "k" * MAX_METADATA_KEY_CHARS
    # str values: the lexical index range-filters at most 32 numeric keys
    wide: dict[str, Any] = {f"w{i:03d}": f"v{i}" for i in range(MAX_METADATA_KEYS - 2)}
    wide[long_key] = "long key"
    wide["big"] = "é" * (MAX_METADATA_VALUE_BYTES // 2)  # 2 bytes each in UTF-8
    heavy = {f"h{i}": "x" * (MAX_METADATA_VALUE_BYTES - 8) for i in range(3)}
    heavy["rest"] = "y" * (MAX_METADATA_BYTES - 3 * MAX_METADATA_VALUE_BYTES - 100)
    text = " ".join(f"{BODY} section{i}." for i in range(40))
    docs = [
        Document(id="wide", text=text, metadata=wide, title="t" * MAX_METADATA_VALUE_BYTES),
        Document(id="heavy", text=text, metadata=heavy),
        Document(id="int64", text=BODY, metadata={"n": -(2**63), "m": 2**63 - 1}),
    ]
    r.add(docs)
    chunks = dense_records(r)
    assert sum(1 for cid in chunks if cid.startswith("wide#")) > 10
    del r
    again = _open(path)
    assert _all_modes_find(again, {"w253": "v253"}) == {"wide"}
    assert _all_modes_find(again, {long_key: "long key"}) == {"wide"}
    assert _all_modes_find(again, {"rest": heavy["rest"]}) == {"heavy"}
    assert _all_modes_find(again, {"n": -(2**63)}) == {"int64"}
    assert _all_modes_find(again, {"m": {"$in": [2**63 - 1, -(2**63)]}}) == {"int64"}
    stored = again.get_documents(["wide", "heavy"])
    assert stored["wide"].document.metadata == wide
    assert stored["heavy"].document.metadata == heavy
    memories = MemoryStore(tmp_path / "m", embedder=EMBEDDER)
    meta = {f"k{i}": f"v{i}" for i in range(MAX_MEMORY_METADATA_KEYS)}
    memory = memories.add(
        "kettle limits", metadata=meta, document_ids=[f"d{i}" for i in range(100)]
    )
    assert MemoryStore(tmp_path / "m", embedder=EMBEDDER).get(memory.id).metadata == meta


@pytest.mark.parametrize(
    ("metadata", "match"),
    [
        ({f"k{i}": "v" for i in range(MAX_METADATA_KEYS + 1)}, "257 keys"),
        ({"k" * (MAX_METADATA_KEY_CHARS + 1): 1}, "257 characters"),
        ({"k": "x" * (MAX_METADATA_VALUE_BYTES + 1)}, "65,537 bytes"),
        ({f"k{i}": "é" * 30_000 for i in range(5)}, "totals 300,010 bytes"),
    ],
)
def test_metadata_over_a_limit_is_refused_with_the_limit(
    store: tuple[Path, Retriever], metadata: dict[str, Any], match: str
) -> None:
    _, r = store
    before = snapshot(r)
    with pytest.raises(InvalidDocumentError, match=match):
        r.add([Document(id="over", text=BODY, metadata=metadata)])
    assert snapshot(r) == before


# -- items 2, 3 and 5: filters, the same in every mode ------------------------------------


def _deep(levels: int) -> dict[str, Any]:
    where: dict[str, Any] = {"n": 1}
    for _ in range(levels):
        where = {"$and": [where]}
    return where


def _deep_list(levels: int) -> list[Any]:
    value: list[Any] = [1]
    for _ in range(levels):
        value = [value]
    return value


REFUSED = [
    pytest.param({"n": {"$in": [1, 2.5]}}, "mixes value types", id="in-int-float"),
    pytest.param({"n": {"$nin": [True, 1]}}, "mixes value types", id="nin-bool-int"),
    pytest.param({"#x": {"$ne": 1}}, "reserved by Chroma", id="hash-key"),
    pytest.param({"#document": "a"}, "reserved by Chroma", id="chroma-document-key"),
    pytest.param({"n": {"$in": list(range(100_000))}}, "100,000 values", id="in-100k"),
    pytest.param(
        {"$or": [{f"k{j}": {"$in": list(range(1000))}} for j in range(5)]},
        "over the limit of 4,096 values",
        id="in-total",
    ),
    pytest.param({f"k{i}": i for i in range(1000)}, "more than 512 conditions", id="1000-keys"),
    pytest.param(_deep(100_000), "nested deeper than 32", id="and-100k-deep"),
    pytest.param({"n": {"$in": _deep_list(100_000)}}, "nested deeper than 32", id="list-deep"),
    pytest.param({"n": {"$eq": _deep_list(100_000)}}, "nested deeper than 32", id="value-deep"),
]


@pytest.mark.parametrize(("where", "match"), REFUSED)
def test_bad_filters_are_refused_up_front_in_every_mode(
    store: tuple[Path, Retriever], where: dict[str, Any], match: str
) -> None:
    """On main these gave StoreError in semantic and hybrid and results in lexical (mixed
    types, '#' keys, long lists, 1,000 keys) or RecursionError (deep nesting)."""
    _, r = store
    for mode in MODES:
        with pytest.raises(InvalidFilterError, match=match):
            r.search("kettle", mode=mode, where=where)
    with pytest.raises(InvalidFilterError, match=match):
        r.document_ids(where=where)
    memories = MemoryStore(retriever=r, embedder=EMBEDDER, collection="mem")
    with pytest.raises(InvalidFilterError, match=match):
        memories.search("kettle", where=where)


def test_filters_at_the_limits_run_the_same_in_every_mode(
    store: tuple[Path, Retriever],
) -> None:
    """Every shape remy accepts at its limits is accepted by Chroma too (its SQLite
    refuses more than 32,766 variables and $and/$or chains of more than ~988 items)."""
    _, r = store
    metas = {cid.partition("#")[0]: meta for cid, meta in dense_records(r).items()}

    def expected(where: dict[str, Any]) -> set[str]:
        tree = parse_where(where)
        return {doc for doc, meta in metas.items() if matches(tree, meta)}

    per_list = MAX_LIST_VALUES // 4
    shapes: list[dict[str, Any]] = [
        {"n": {"$in": list(range(-MAX_LIST_VALUES + 3, 3))}},
        {"n": {"$nin": [float(i) for i in range(MAX_LIST_VALUES)]}},
        {"$or": [{"n": {"$in": list(range(j, j + per_list))}} for j in range(4)]},
        {f"k{i}": {"$ne": i} for i in range(MAX_CONDITIONS)},
        {"$or": [{"n": i} for i in range(MAX_CONDITIONS - 1)]},
        {"$and": [{"n": {"$ne": -i}} for i in range(1, MAX_CONDITIONS)]},
        _deep(MAX_DEPTH - 1),
        {
            "$or": [
                {"$and": [{"n": {"$gte": 2}}, {"$or": [{"n": i} for i in range(250)]}]},
                {"t": {"$in": ["t0", "t2"]}},
            ]
        },
        {"n": {"$gte": -(2**63)}, "t": {"$ne": "t1"}},
    ]
    for where in shapes:
        assert _all_modes_find(r, where) == expected(where), where

"""Unit tests of the tantivy-backed lexical index (no model, no Chroma)."""

from __future__ import annotations

import math
import random
import tempfile
import threading
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

import pytest
import tantivy
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from remy_retriever.errors import (
    IndexLockedError,
    InvalidDocumentError,
    InvalidFilterError,
    InvalidInputError,
    InvalidQueryError,
    StoreError,
)
from remy_retriever.schema.filters import Compare, Filter, matches, parse_where
from remy_retriever.schema.records import LexicalRecord
from remy_retriever.stores import lexical
from remy_retriever.stores.lexical import MAX_NUMERIC_KEYS, LexicalIndex

Metadata = Mapping[str, Any]


def rec(
    chunk_id: str,
    text: str,
    metadata: Metadata | None = None,
    *,
    content_hash: str = "h0",
) -> LexicalRecord:
    document_id = chunk_id.split("#")[0]
    return LexicalRecord(
        chunk_id=chunk_id,
        document_id=document_id,
        text=text,
        metadata={"remy_doc_id": document_id, **(metadata or {})},
        content_hash=content_hash,
    )


@pytest.fixture
def index(tmp_path: Path) -> Iterator[LexicalIndex]:
    ix = LexicalIndex(tmp_path / "lex")
    yield ix
    ix.close()


def hit_ids(hits: list[tuple[str, float]]) -> list[str]:
    return [chunk_id for chunk_id, _ in hits]


# ---------------------------------------------------------------------- ranking


def test_rarer_terms_rank_first(index: LexicalIndex) -> None:
    index.upsert(
        [
            rec("a#0", "apple banana"),
            rec("b#0", "apple cherry"),
            rec("c#0", "apple banana"),
            rec("d#0", "apple zebra"),
        ]
    )
    hits = index.search("apple zebra", k=10)
    assert hit_ids(hits)[0] == "d#0"
    assert len(hits) == 4
    assert all(isinstance(score, float) for _, score in hits)
    scores = [score for _, score in hits]
    assert scores == sorted(scores, reverse=True)
    assert scores[0] > scores[1]


def test_repeated_query_term_weighs_more(index: LexicalIndex) -> None:
    index.upsert([rec("kiwi#0", "kiwi fruit"), rec("mango#0", "mango fruit")])
    tied = dict(index.search("kiwi mango", k=2))
    assert tied["kiwi#0"] == pytest.approx(tied["mango#0"])
    assert hit_ids(index.search("kiwi kiwi mango", k=2)) == ["kiwi#0", "mango#0"]
    assert hit_ids(index.search_terms(["mango", "kiwi", "mango"], k=2)) == ["mango#0", "kiwi#0"]


def test_stemming_finds_other_word_forms(index: LexicalIndex) -> None:
    index.upsert([rec("guide#0", "Installation of the server"), rec("other#0", "Unrelated")])
    assert hit_ids(index.search("installing", k=5)) == ["guide#0"]
    assert hit_ids(index.search("INSTALLED servers", k=5)) == ["guide#0"]


def test_queries_without_terms_and_k_edge_cases(index: LexicalIndex) -> None:
    index.upsert([rec(f"d{i}#0", f"common text {i}") for i in range(3)])
    assert index.search("", k=5) == []
    assert index.search("the and of", k=5) == []
    assert index.search_terms([], k=5) == []
    assert index.search("common", k=0) == []
    assert len(index.search("common", k=1000)) == 3
    assert len(index.search("common", k=2)) == 2


def test_empty_index_searches(index: LexicalIndex) -> None:
    assert index.search("anything", k=10) == []
    assert index.count() == 0
    assert index.ids() == set()
    assert index.hashes(["a#0"]) == {}


def test_filter_does_not_change_scores(index: LexicalIndex) -> None:
    index.upsert(
        [rec(f"d{i}#0", f"common word{i % 3} filler", {"n": i, "s": str(i % 2)}) for i in range(9)]
    )
    plain = dict(index.search("common word1", k=20))
    filtered = index.search("common word1", k=20, where=parse_where({"s": "1"}))
    assert filtered
    for chunk_id, score in filtered:
        assert score == pytest.approx(plain[chunk_id])


# ---------------------------------------------------------------------- writes


def test_upsert_replaces_by_chunk_id(index: LexicalIndex) -> None:
    index.upsert([rec("a#0", "old words", content_hash="h1"), rec("b#0", "other")])
    index.upsert([rec("a#0", "fresh words", content_hash="h2")])
    assert index.count() == 2
    assert index.ids() == {"a#0", "b#0"}
    assert index.search("old", k=5) == []
    assert hit_ids(index.search("fresh", k=5)) == ["a#0"]
    assert hit_ids(index.search("words", k=5)) == ["a#0"]
    assert index.hashes(["a#0", "b#0"]) == {"a#0": "h2", "b#0": "h0"}


def test_duplicate_ids_in_one_batch_last_wins(index: LexicalIndex) -> None:
    index.upsert([rec("a#0", "first", content_hash="1"), rec("a#0", "second", content_hash="2")])
    assert index.count() == 1
    assert index.hashes(["a#0"]) == {"a#0": "2"}
    assert hit_ids(index.search("second", k=5)) == ["a#0"]


def test_delete(index: LexicalIndex) -> None:
    index.upsert([rec("a#0", "alpha"), rec("a#1", "alpha"), rec("b#0", "alpha")])
    index.delete(["a#1", "missing#9", ""])
    assert index.ids() == {"a#0", "b#0"}
    index.delete([])
    index.delete(["missing#0"])
    assert index.count() == 2


def test_delete_documents(index: LexicalIndex) -> None:
    index.upsert([rec("a#0", "alpha"), rec("a#1", "beta"), rec("b#0", "alpha")])
    index.delete_documents(["a", "nothing"])
    assert index.ids() == {"b#0"}
    assert hit_ids(index.search("alpha beta", k=5)) == ["b#0"]


def test_apply_replaces_a_document_atomically(index: LexicalIndex) -> None:
    index.upsert([rec("a#0", "one"), rec("a#1", "two"), rec("a#2", "three"), rec("b#0", "bee")])
    index.apply(
        upserts=[rec("a#0", "uno"), rec("c#0", "sea")],
        deletes=["b#0"],
        delete_documents=["a"],
    )
    assert index.ids() == {"a#0", "c#0"}
    assert index.search("three", k=5) == []
    assert hit_ids(index.search("uno", k=5)) == ["a#0"]


def test_failed_apply_changes_nothing(index: LexicalIndex) -> None:
    index.upsert([rec("keep#0", "kept"), rec("full#0", "x", {f"k{i}": i for i in range(32)})])
    overflow = rec("new#0", "new", {"one_too_many": 1.5})
    with pytest.raises(InvalidDocumentError, match="one_too_many"):
        index.apply(upserts=[rec("other#0", "other"), overflow], deletes=["keep#0"])
    assert index.ids() == {"keep#0", "full#0"}
    # The lock was released: later writes work, and existing numeric keys are still fine.
    index.upsert([rec("later#0", "later", {"k3": 7, "text_key": "fine"})])
    assert hit_ids(index.search("later", k=5, where=parse_where({"k3": {"$gt": 5}}))) == ["later#0"]


def test_clear_resets_documents_slots_and_state(index: LexicalIndex) -> None:
    index.upsert([rec("a#0", "x", {f"k{i}": i for i in range(MAX_NUMERIC_KEYS)})])
    index.save_state({"generation": 1})
    index.clear()
    assert index.count() == 0
    assert index.state == {}
    index.upsert([rec("b#0", "x", {f"other{i}": i for i in range(MAX_NUMERIC_KEYS)})])
    assert index.count() == 1
    assert hit_ids(index.search("x", k=5, where=parse_where({"other31": {"$gte": 31}}))) == ["b#0"]


def test_reopen_keeps_documents_filters_and_state(tmp_path: Path) -> None:
    path = tmp_path / "lex"
    first = LexicalIndex(path)
    first.upsert(
        [
            rec("a#0", "persistent words", {"year": 2001, "lang": "en"}, content_hash="ha"),
            rec("b#0", "persistent text", {"year": 1999.5, "lang": "fr"}, content_hash="hb"),
        ]
    )
    first.save_state({"generation": 7, "last_sync_ms": 123})
    first.close()
    with pytest.raises(StoreError, match="closed"):
        first.search("persistent", k=5)

    again = LexicalIndex(path)
    assert again.count() == 2
    assert again.ids() == {"a#0", "b#0"}
    assert again.state == {"generation": 7, "last_sync_ms": 123}
    assert again.hashes(["a#0", "b#0"]) == {"a#0": "ha", "b#0": "hb"}
    assert set(hit_ids(again.search("persistent", k=5))) == {"a#0", "b#0"}
    recent = parse_where({"year": {"$gt": 2000}})
    assert hit_ids(again.search("persistent", k=5, where=recent)) == ["a#0"]
    assert hit_ids(again.search("persistent", k=5, where=parse_where({"lang": "fr"}))) == ["b#0"]
    again.close()
    assert not list(path.glob("*.tmp")) and not list(path.glob(".*.tmp"))


def test_other_instances_see_commits(tmp_path: Path) -> None:
    writer, reader = LexicalIndex(tmp_path / "lex"), LexicalIndex(tmp_path / "lex")
    assert reader.count() == 0
    writer.upsert([rec("a#0", "shared", {"price": 3.5})])
    assert reader.count() == 1
    # The numeric slot map written by the other instance is picked up too.
    cheap = parse_where({"price": {"$lt": 4}})
    assert hit_ids(reader.search("shared", k=5, where=cheap)) == ["a#0"]
    reader.delete(["a#0"])
    assert writer.count() == 0
    writer.close()
    reader.close()


def test_hashes_and_ids_in_bulk(index: LexicalIndex) -> None:
    index.upsert(
        [rec(f"d{i}#{j}", "t", content_hash=f"h{i}.{j}") for i in range(50) for j in range(4)]
    )
    index.delete_documents(["d0"])
    index.upsert([rec("d1#0", "t", content_hash="changed")])
    all_ids = {f"d{i}#{j}" for i in range(1, 50) for j in range(4)}
    assert index.ids() == all_ids
    expected = {chunk_id: "h" + chunk_id[1:].replace("#", ".") for chunk_id in all_ids}
    expected["d1#0"] = "changed"
    # Asking for (nearly) everything takes the term-scan path, a few ids the lookup path.
    assert index.hashes([*sorted(all_ids), "d0#0", "nope"]) == expected
    assert index.hashes(["d1#0", "d2#3", "d0#1", "d1#0"]) == {"d1#0": "changed", "d2#3": "h2.3"}


def test_numeric_key_limit_names_the_key(index: LexicalIndex) -> None:
    many = {f"key{i}": float(i) for i in range(MAX_NUMERIC_KEYS)}
    index.upsert([rec("a#0", "x", many)])
    index.upsert([rec("b#0", "x", {"key0": 1, "strings": "do not count", "flag": True})])
    with pytest.raises(InvalidDocumentError, match="'extra'"):
        index.upsert([rec("c#0", "x", {"extra": 1})])


# ---------------------------------------------------------------------- filters


def test_negations_match_chunks_lacking_the_key(index: LexicalIndex) -> None:
    index.upsert(
        [
            rec("with#0", "common", {"color": "red", "size": 3}),
            rec("blue#0", "common", {"color": "blue"}),
            rec("none#0", "common"),
        ]
    )

    def ids_for(where: dict[str, Any]) -> set[str]:
        return set(hit_ids(index.search_terms(["common"], k=10, where=parse_where(where))))

    assert ids_for({"color": {"$ne": "red"}}) == {"blue#0", "none#0"}
    assert ids_for({"color": {"$nin": ["red", "blue"]}}) == {"none#0"}
    assert ids_for({"size": {"$ne": 3}}) == {"blue#0", "none#0"}
    assert ids_for({"color": "red"}) == {"with#0"}
    assert ids_for({"size": {"$lt": 100}}) == {"with#0"}
    assert ids_for({"unknown": {"$gt": 0}}) == set()
    assert ids_for({"unknown": {"$ne": 0}}) == {"with#0", "blue#0", "none#0"}


def test_bools_numbers_and_strings_stay_distinct(index: LexicalIndex) -> None:
    big = 2**53 + 1
    index.upsert(
        [
            rec("true#0", "common", {"v": True}),
            rec("one#0", "common", {"v": 1}),
            rec("onef#0", "common", {"v": 1.0}),
            rec("str#0", "common", {"v": "1"}),
            rec("zero#0", "common", {"v": -0.0}),
            rec("big#0", "common", {"v": big}),
        ]
    )

    def ids_for(where: dict[str, Any]) -> set[str]:
        return set(hit_ids(index.search_terms(["common"], k=10, where=parse_where(where))))

    assert ids_for({"v": True}) == {"true#0"}
    assert ids_for({"v": 1}) == {"one#0", "onef#0"}
    assert ids_for({"v": 1.0}) == {"one#0", "onef#0"}
    assert ids_for({"v": "1"}) == {"str#0"}
    assert ids_for({"v": 0}) == {"zero#0"}
    assert ids_for({"v": {"$gte": 0}}) == {"zero#0", "one#0", "onef#0", "big#0"}
    assert ids_for({"v": {"$lte": 1}}) == {"zero#0", "one#0", "onef#0"}
    assert ids_for({"v": big}) == {"big#0"}
    assert ids_for({"v": big - 1}) == set()  # equality on ints is exact
    assert ids_for({"v": {"$in": [True, False]}}) == {"true#0"}


def test_awkward_metadata_strings_are_filterable(index: LexicalIndex) -> None:
    long_value = "x" * 100_000
    index.upsert(
        [
            rec("long#0", "common", {"s": long_value}),
            rec("surrogate#0", "common", {"s": "a\ud800", "key\udc00": "v"}),
            rec("sep#0", "common", {"s": 'q"\x1f],["n', "t": "\ufffd"}),
        ]
    )

    def ids_for(where: dict[str, Any]) -> set[str]:
        return set(hit_ids(index.search_terms(["common"], k=10, where=parse_where(where))))

    assert ids_for({"s": long_value}) == {"long#0"}
    assert ids_for({"s": long_value + "y"}) == set()

    # parse_where refuses lone surrogates (no stored metadata can hold one); the index
    # itself still matches them exactly.
    def ids_for_tree(node: Compare) -> set[str]:
        return set(hit_ids(index.search_terms(["common"], k=10, where=node)))

    assert ids_for_tree(Compare("s", "$eq", "a\ud800")) == {"surrogate#0"}
    assert ids_for_tree(Compare("s", "$eq", "a\udc00")) == set()
    assert ids_for({"s": "a\ufffd"}) == set()
    assert ids_for_tree(Compare("key\udc00", "$eq", "v")) == {"surrogate#0"}
    assert ids_for({"s": 'q"\x1f],["n'}) == {"sep#0"}


KEYS = ("a", "b", "c")
STRINGS = ("x", "y", "")
NUMBERS: tuple[int | float, ...] = (-2, 0, 1, 3, -0.0, 0.5, 1.0, 2.5, 3.0, 7)
scalars = st.one_of(st.sampled_from(STRINGS), st.sampled_from(NUMBERS), st.booleans())
# List values hold strings; a key may hold a list in one chunk and a scalar in another.
string_lists = st.lists(st.sampled_from(STRINGS), min_size=1, max_size=3)
metadatas = st.dictionaries(
    st.sampled_from(KEYS), st.one_of(scalars, string_lists), max_size=len(KEYS)
)
# A list holds one type (Chroma refuses [1, 2.5]; parse_where does too).
value_lists = st.one_of(
    st.lists(st.sampled_from(STRINGS), min_size=1, max_size=3),
    st.lists(st.sampled_from([n for n in NUMBERS if isinstance(n, int)]), min_size=1, max_size=3),
    st.lists(st.sampled_from([n for n in NUMBERS if isinstance(n, float)]), min_size=1, max_size=3),
    st.lists(st.booleans(), min_size=1, max_size=2),
)
leaves = st.one_of(
    st.builds(
        lambda key, op, value: {key: {op: value}},
        st.sampled_from(KEYS),
        st.sampled_from(["$eq", "$ne"]),
        scalars,
    ),
    st.builds(lambda key, value: {key: value}, st.sampled_from(KEYS), scalars),
    st.builds(
        lambda key, op, values: {key: {op: values}},
        st.sampled_from(KEYS),
        st.sampled_from(["$in", "$nin"]),
        value_lists,
    ),
    st.builds(
        lambda key, op, value: {key: {op: value}},
        st.sampled_from(KEYS),
        st.sampled_from(["$gt", "$gte", "$lt", "$lte"]),
        st.sampled_from(NUMBERS),
    ),
    st.builds(
        lambda key, op, value: {key: {op: value}},
        st.sampled_from(KEYS),
        st.sampled_from(["$contains", "$not_contains"]),
        st.sampled_from(STRINGS),
    ),
)
wheres = st.recursive(
    leaves,
    lambda children: st.builds(
        lambda op, items: {op: items},
        st.sampled_from(["$and", "$or"]),
        st.lists(children, min_size=1, max_size=3),
    ),
    max_leaves=6,
)


def assert_filter_matches_reference(
    index: LexicalIndex, corpus: Mapping[str, Metadata], where: dict[str, Any]
) -> None:
    node: Filter | None = parse_where(where)
    expected = {chunk_id for chunk_id, metadata in corpus.items() if matches(node, metadata)}
    got = hit_ids(index.search_terms(["common"], k=len(corpus) + 10, where=node))
    assert len(got) == len(set(got))
    assert set(got) == expected, where


@settings(
    max_examples=25,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
@given(corpus=st.lists(metadatas, min_size=1, max_size=20), where=wheres)
def test_filters_equal_reference_semantics(
    corpus: list[dict[str, Any]], where: dict[str, Any]
) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        index = LexicalIndex(Path(tmp) / "lex")
        records = [rec(f"d{i}#0", "common text", metadata) for i, metadata in enumerate(corpus)]
        index.upsert(records)
        assert_filter_matches_reference(index, {r.chunk_id: r.metadata for r in records}, where)
        index.close()


@pytest.fixture(scope="module")
def filter_corpus(
    tmp_path_factory: pytest.TempPathFactory,
) -> Iterator[tuple[LexicalIndex, dict[str, Metadata]]]:
    rng = random.Random(1234)
    pool: list[str | int | float | bool | list[str]] = [
        *STRINGS,
        *NUMBERS,
        True,
        False,
        ["x"],
        ["x", "y"],
        [""],
    ]
    records = []
    for i in range(300):
        metadata = {key: rng.choice(pool) for key in KEYS if rng.random() < 0.7}
        records.append(rec(f"doc{i}#0", "common words", metadata))
    index = LexicalIndex(tmp_path_factory.mktemp("filters") / "lex")
    index.upsert(records[:150])
    index.upsert(records[150:])  # two segments
    yield index, {r.chunk_id: r.metadata for r in records}
    index.close()


@settings(max_examples=250, deadline=None)
@given(where=wheres)
def test_filters_equal_reference_on_fixed_corpus(
    filter_corpus: tuple[LexicalIndex, dict[str, Metadata]], where: dict[str, Any]
) -> None:
    index, corpus = filter_corpus
    assert_filter_matches_reference(index, corpus, where)


# ---------------------------------------------------------------------- hostile input

HOSTILE_QUERIES = [
    "(" * 10_000 + "word" + ")" * 10_000,
    'AND OR NOT : * ^ " ~ [ ] { } \\ / + - ! && ||',
    'title:word AND NOT body:"x y"~2 ^3 [a TO z] *',
    "word\ud800 \udfff lone surrogates",
    "nul\x00byte word",
    "w" * 100_000,
    "word " * 20_000,
    "\u200b\ufeff\u0301",
]


@pytest.mark.parametrize("query", HOSTILE_QUERIES, ids=range(len(HOSTILE_QUERIES)))
def test_hostile_queries_do_not_crash(index: LexicalIndex, query: str) -> None:
    index.upsert([rec("a#0", "word lone surrogates byte"), rec("b#0", "other")])
    hits = index.search(query, k=5)
    assert isinstance(hits, list)
    assert all(chunk_id in {"a#0", "b#0"} for chunk_id, _ in hits)


def test_hostile_terms_do_not_crash(index: LexicalIndex) -> None:
    index.upsert([rec("a#0", "word")])
    terms = ["\ud800", "two words", "x" * 100_000, "", "(", "\x00", "word"]
    assert hit_ids(index.search_terms(terms, k=5)) == ["a#0"]
    assert set(index.idf(terms)) == {t for t in terms if t}


def test_invalid_arguments_raise_clear_errors(index: LexicalIndex, tmp_path: Path) -> None:
    with pytest.raises(InvalidQueryError):
        index.search(b"bytes", k=5)  # type: ignore[arg-type]
    with pytest.raises(InvalidQueryError):
        index.search_terms("not a list", k=5)
    with pytest.raises(InvalidInputError, match="k must be"):
        index.search("x", k=-1)
    with pytest.raises(InvalidInputError, match="k must be"):
        index.search("x", k=True)
    with pytest.raises(InvalidFilterError, match="parse_where"):
        index.search("x", k=5, where={"a": 1})  # type: ignore[arg-type]
    with pytest.raises(InvalidDocumentError, match="chunk_id"):
        rec("bad\ud800#0", "x")
    with pytest.raises(InvalidDocumentError, match="or non-empty list of str"):
        rec("a#0", "x", {"k": [1, 2]})
    with pytest.raises(InvalidDocumentError, match="64 bits"):
        rec("a#0", "x", {"k": 2**70})
    with pytest.raises(InvalidInputError, match="LexicalRecord"):
        index.upsert([{"chunk_id": "a#0"}])  # type: ignore[list-item]
    with pytest.raises(InvalidInputError, match="JSON"):
        index.save_state({"when": object()})
    with pytest.raises(InvalidInputError, match="lock_timeout"):
        LexicalIndex(tmp_path / "other", lock_timeout=-1)


# ---------------------------------------------------------------------- locking & threads


def test_second_writer_gets_index_locked_error(tmp_path: Path) -> None:
    index = LexicalIndex(tmp_path / "lex", lock_timeout=0.3)
    index.upsert([rec("a#0", "earlier")])
    raw = tantivy.Index.open(str(tmp_path / "lex" / lexical._TANTIVY_DIR))
    holder = raw.writer(heap_size=15_000_000, num_threads=1)
    with pytest.raises(IndexLockedError, match="locked") as info:
        index.upsert([rec("b#0", "blocked")])
    assert str(tmp_path / "lex") in str(info.value)
    assert index.search("earlier", k=5)  # reads still work while locked
    # A patient writer waits for the lock: its upsert returns only after the release.
    patient = LexicalIndex(tmp_path / "lex", lock_timeout=60)
    released = threading.Event()

    def release() -> None:
        released.set()
        holder.wait_merging_threads()  # releases the lock

    releaser = threading.Timer(0.5, release)
    releaser.start()
    patient.upsert([rec("b#0", "after")])
    releaser.join()
    assert released.is_set()
    patient.close()
    index.upsert([rec("b#0", "after")])
    assert index.ids() == {"a#0", "b#0"}
    index.close()


def test_concurrent_searches_with_a_writer_thread(index: LexicalIndex) -> None:
    index.upsert([rec(f"seed{i}#0", f"common seed {i}", {"n": i}) for i in range(20)])
    errors: list[BaseException] = []
    stop = threading.Event()
    where = parse_where({"n": {"$gte": 5}})

    def searcher() -> None:
        try:
            while not stop.is_set():
                index.search("common seed", k=10, where=where)
                index.count()
                index.hashes(["seed1#0"])
        except BaseException as exc:  # pragma: no cover - reported below
            errors.append(exc)

    def writer() -> None:
        try:
            for batch in range(8):
                index.upsert([rec(f"w{batch}#{j}", "common written", {"n": j}) for j in range(5)])
                index.delete([f"w{batch - 1}#0"])
        except BaseException as exc:  # pragma: no cover - reported below
            errors.append(exc)

    threads = [threading.Thread(target=searcher) for _ in range(4)]
    writing = threading.Thread(target=writer)
    for thread in threads:
        thread.start()
    writing.start()
    writing.join()
    stop.set()
    for thread in threads:
        thread.join()
    assert errors == []
    assert index.count() == 20 + 8 * 5 - 7


# ---------------------------------------------------------------------- idf & state


def test_idf(index: LexicalIndex) -> None:
    index.upsert([rec(f"d{i}#0", "common rare" if i == 0 else "common") for i in range(10)])
    idf = index.idf(["common", "rare", "absent"])
    assert idf["rare"] > idf["common"] > 0
    assert idf["absent"] > idf["rare"]
    assert idf["rare"] == pytest.approx(math.log(1 + (10 - 1 + 0.5) / (1 + 0.5)))
    assert idf["common"] == pytest.approx(math.log(1 + 0.5 / 10.5))


def test_state_round_trip(index: LexicalIndex) -> None:
    assert index.state == {}
    index.save_state({"generation": 1, "last_sync_ms": 10})
    index.save_state({"generation": 2})
    assert index.state == {"generation": 2}


def test_files_left_by_a_killed_commit_do_not_block_the_next_write(tmp_path: Path) -> None:
    """A writer killed inside ``commit()`` can leave files that the published
    ``meta.json`` does not reference (here: the delete file of a segment). The next
    writer repeats the same operations, so it derives the same file name; the orphan
    must not make its commit fail with tantivy's FileAlreadyExists."""
    root = tmp_path / "lex"
    with LexicalIndex(root) as ix:
        ix.upsert([rec("a#0", "apple pie"), rec("b#0", "banana split"), rec("c#0", "cherry")])
    meta = root / "tantivy" / "meta.json"
    before = meta.read_bytes()
    with LexicalIndex(root) as ix:
        ix.delete(["a#0"])
    orphans = sorted(p.name for p in (root / "tantivy").glob("*.del"))
    assert orphans, "the delete should have written a .del file"
    meta.write_bytes(before)  # as if the kill came just before meta.json was published
    with LexicalIndex(root) as ix:
        assert sorted(hit_ids(ix.search("apple", 5))) == ["a#0"]
        ix.delete(["a#0"])  # the same operation again: the same .del file name
        assert hit_ids(ix.search("apple", 5)) == []
        assert sorted(ix.ids()) == ["b#0", "c#0"]

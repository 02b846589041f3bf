"""List metadata (a list of strings, e.g. tags) is stored as it is, comes back as it went
in, and ``$contains`` / ``$not_contains`` select the same chunks in the dense branch
(Chroma, embedded and a real ``chroma run``), the lexical branch (tantivy) and
``filters.matches``, mixed with every other operator."""

from __future__ import annotations

import random
from pathlib import Path
from typing import Any

import pytest

from remy_retriever import Document, InvalidDocumentError, InvalidFilterError, Retriever
from remy_retriever.schema.document import MAX_METADATA_LIST_ITEMS
from remy_retriever.schema.filters import matches, parse_where

TAGS = ("red", "blue", "green", "Red", "")
KEYS = ("tags", "kind", "year")


def _corpus(seed: int, n: int) -> dict[str, dict[str, Any]]:
    rng = random.Random(seed)
    out: dict[str, dict[str, Any]] = {}
    for i in range(n):
        meta: dict[str, Any] = {}
        roll = rng.random()
        if roll < 0.6:
            meta["tags"] = rng.sample(TAGS, rng.randint(1, 3))
        elif roll < 0.8:
            meta["tags"] = rng.choice(TAGS)  # the same key holding a scalar
        if rng.random() < 0.7:
            meta["kind"] = rng.choice(["red", "note", "memo"])
        if rng.random() < 0.7:
            meta["year"] = rng.choice([2019, 2020, 2021])
        out[f"d{i}"] = meta
    return out


def _random_where(rng: random.Random) -> dict[str, Any]:
    def leaf() -> dict[str, Any]:
        roll = rng.random()
        if roll < 0.5:
            op = rng.choice(["$contains", "$not_contains"])
            return {rng.choice(["tags", "kind"]): {op: rng.choice([*TAGS, "note"])}}
        if roll < 0.75:
            op = rng.choice(["$eq", "$ne"])
            return {rng.choice(["tags", "kind"]): {op: rng.choice(TAGS)}}
        if roll < 0.85:
            op = rng.choice(["$in", "$nin"])
            return {"tags": {op: rng.sample(TAGS, 2)}}
        return {"year": {rng.choice(["$gte", "$lt"]): 2020}}

    def tree(depth: int) -> dict[str, Any]:
        if depth == 0 or rng.random() < 0.4:
            return leaf()
        op = rng.choice(["$and", "$or"])
        return {op: [tree(depth - 1) for _ in range(rng.randint(2, 3))]}

    return tree(2)


def _add(store: Retriever, corpus: dict[str, dict[str, Any]]) -> None:
    # One shared word, so the lexical branch finds every chunk the filter keeps.
    store.add(
        [Document(id=i, text=f"shared note number {i}", metadata=m) for i, m in corpus.items()]
    )


def _ids(store: Retriever, mode: str, where: dict[str, Any], n: int) -> set[str]:
    hits = store.search("shared note", mode=mode, k=n + 5, candidates=n + 5, where=where)
    return {h.citation.document_id for h in hits}


def _check_agreement(store: Retriever, corpus: dict[str, dict[str, Any]], seed: int) -> None:
    rng = random.Random(seed)
    nonempty = 0
    for _ in range(40):
        where = _random_where(rng)
        node = parse_where(where)
        expected = {i for i, meta in corpus.items() if matches(node, meta)}
        nonempty += bool(expected) and len(expected) < len(corpus)
        for mode in ("semantic", "lexical", "hybrid"):
            assert _ids(store, mode, where, len(corpus)) == expected, (mode, where)
    assert nonempty >= 10  # the filters do select, not only all or nothing


def test_contains_selects_the_same_chunks_in_every_branch_embedded(
    tmp_path: Path, embedder: Any
) -> None:
    corpus = _corpus(7, 60)
    with Retriever(str(tmp_path / "db"), embedder=embedder) as store:
        _add(store, corpus)
        _check_agreement(store, corpus, seed=11)


def test_contains_selects_the_same_chunks_through_a_chroma_server(
    http_client: Any, tmp_path: Path, embedder: Any
) -> None:
    corpus = _corpus(8, 40)
    with Retriever(
        client=http_client,
        collection="list-metadata",
        lexical_path=str(tmp_path / "lex"),
        embedder=embedder,
    ) as store:
        _add(store, corpus)
        _check_agreement(store, corpus, seed=12)


def test_list_values_come_back_as_they_went_in(tmp_path: Path, embedder: Any) -> None:
    with Retriever(str(tmp_path / "db"), embedder=embedder) as store:
        store.add(
            [
                Document(id="a", text="kiwi birds", metadata={"tags": ["bird", "nz"], "n": 1}),
                Document(id="b", text="kiwi fruit", metadata={"tags": ("fruit",)}),
            ]
        )
        hits = {h.citation.document_id: h for h in store.search("kiwi", k=5)}
        assert hits["a"].metadata == {"tags": ["bird", "nz"], "n": 1}
        assert hits["b"].metadata == {"tags": ["fruit"]}  # a tuple is stored as a list
        assert store.get_documents(["a"])["a"].document.metadata["tags"] == ["bird", "nz"]
        found = store.search("kiwi", k=5, where={"tags": {"$contains": "nz"}})
        assert [h.citation.document_id for h in found] == ["a"]
    with Retriever(str(tmp_path / "db"), embedder=embedder) as reopened:
        found = reopened.search("kiwi", k=5, mode="lexical", where={"tags": {"$contains": "fruit"}})
        assert [h.citation.document_id for h in found] == ["b"]


@pytest.mark.parametrize(
    ("value", "match"),
    [
        ([], "empty list"),
        (["a", 1], "holds int 1"),
        (["a", ["b"]], "holds list"),
        (["x"] * (MAX_METADATA_LIST_ITEMS + 1), f"limit of {MAX_METADATA_LIST_ITEMS}"),
        ({"nested": "dict"}, "not a str, int, float, bool or list of str"),
    ],
)
def test_bad_list_values_are_refused_naming_the_key_and_nothing_is_stored(
    tmp_path: Path, embedder: Any, value: object, match: str
) -> None:
    with Retriever(str(tmp_path / "db"), embedder=embedder) as store:
        store.add([Document(id="keep", text="kept text")])
        with pytest.raises(InvalidDocumentError, match=match) as err:
            store.add([Document(id="bad", text="text", metadata={"tags": value})])
        assert "metadata['tags']" in str(err.value)
        assert store.get_documents(["bad"]) == {}
        assert list(store.get_documents(["keep"])) == ["keep"]


@pytest.mark.parametrize("operand", [1, True, ["red"], None])
def test_contains_takes_one_string(operand: object) -> None:
    with pytest.raises(InvalidFilterError, match=r"\$contains for where\['tags'\] takes a str"):
        parse_where({"tags": {"$contains": operand}})

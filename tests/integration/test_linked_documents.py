"""The engine rules the doors share, on a real embedded Chroma and the real MiniLM model:
the memory-from-document rule (:class:`LinkedDocuments`), find-by-content
(:meth:`MemoryStore.find_by_content`) and the scoped metadata-value scans the
supermemory filters are resolved against."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from remy_retriever import Document, InvalidFilterError, InvalidInputError, Retriever
from remy_retriever.memory import (
    SOURCE_KEY,
    DocumentNotFoundError,
    LinkedDocuments,
    MemoryNotFoundError,
    MemoryStore,
)
from remy_retriever.schema.document import CONTAINER_TAG_KEY
from remy_retriever.schema.filters import and_where, scope_where
from remy_retriever.supermemory.filters import where_from_filters

LONG = "\n\n".join(
    f"## Part {i}\n\n" + " ".join(f"Part {i} explains topic {i} in detail." for _ in range(60))
    for i in range(5)
)


@pytest.fixture
def linked(tmp_path: Path, embedder: Any) -> Iterator[LinkedDocuments]:
    with (
        Retriever(tmp_path / "db", collection="docs", embedder=embedder) as docs,
        MemoryStore(retriever=docs) as memories,
    ):
        yield LinkedDocuments(memories)


def _live(linked: LinkedDocuments, doc_id: str) -> list[str]:
    return [m.content for m in linked.memories_of(doc_id) if m.latest and not m.forgotten]


def test_a_short_tagged_document_is_also_a_memory_until_it_stops_qualifying(
    linked: LinkedDocuments,
) -> None:
    fact = linked.prepare(content="Alice prefers tea", tag="alice", custom_id="f", metadata={})
    assert linked.add(fact) == "alice@f"  # the customId, scoped by its tag
    [memory] = linked.memories_of("alice@f")
    assert (memory.content, memory.container_tag) == ("Alice prefers tea", "alice")
    assert memory.metadata[SOURCE_KEY] == "alice@f" and memory.document_ids == ("alice@f",)

    linked.update("f", content="Alice prefers coffee")  # named by its customId
    assert _live(linked, "alice@f") == ["Alice prefers coffee"]  # a new version
    linked.update("alice@f", content=LONG)  # or by its stored id
    assert _live(linked, "alice@f") == []  # many chunks: forgotten
    untagged = linked.prepare(content="No container here", tag=None, custom_id="u", metadata={})
    linked.add(untagged)
    assert linked.memories_of("u") == []
    linked.add(linked.prepare(content="Bob rides a bike", tag="bob", custom_id="b", metadata={}))
    assert linked.delete(["bob@b"]) == 1
    assert _live(linked, "bob@b") == []


def test_scope_hides_other_containers_documents(linked: LinkedDocuments) -> None:
    linked.add(linked.prepare(content="Bob's secret", tag="bob", custom_id="s", metadata={}))
    with pytest.raises(DocumentNotFoundError) as foreign:
        linked.visible("s", scope={"alice"})
    with pytest.raises(DocumentNotFoundError) as unknown:
        linked.visible("t", scope={"alice"})
    assert str(foreign.value) == str(unknown.value).replace("'t'", "'s'")
    with pytest.raises(DocumentNotFoundError):
        linked.visible("bob@s", scope={"alice"})  # nor by its stored id
    assert linked.visible("s", scope={"bob"}).document.id == "bob@s"
    # customIds are per container: Alice may hold "s" too, and Bob's stays his.
    mine = linked.prepare(content="Alice's note", tag="alice", custom_id="s", metadata={})
    assert linked.add_many([mine], scope={"alice"}) == ["alice@s"]
    assert linked.visible("s", scope={"alice"}).document.text == "Alice's note"
    assert linked.visible("s", scope={"bob"}).document.text == "Bob's secret"
    with pytest.raises(InvalidInputError, match="several containers"):
        linked.visible("s")  # every container: name one by its stored id
    with pytest.raises(InvalidInputError, match="reserved"):
        linked.prepare(content="x", tag=None, custom_id=None, metadata={CONTAINER_TAG_KEY: "a"})


def test_an_ingested_short_file_in_a_container_is_a_memory_too(
    linked: LinkedDocuments, tmp_path: Path
) -> None:
    folder = tmp_path / "notes"
    folder.mkdir()
    (folder / "kayak.md").write_text("Alice owns a red kayak.", encoding="utf-8")
    (folder / "long.md").write_text(LONG, encoding="utf-8")
    report = linked.ingest(folder, tag="alice", progress=False)
    assert sorted(report.added) == ["kayak.md", "long.md"]
    assert _live(linked, "kayak.md") == ["Alice owns a red kayak."]
    assert _live(linked, "long.md") == []


def test_a_metadata_only_update_keeps_the_stored_chunk_spans(linked: LinkedDocuments) -> None:
    text = "Wombats dig burrows and Quolls hunt at night"
    spans = ((0, 22), (23, len(text)))
    doc = Document(
        id="w",
        text=text,
        pages=(0, 23),
        chunk_spans=spans,
        metadata={CONTAINER_TAG_KEY: "alice", "k": 1},
    )
    linked.retriever.add([doc])
    before = sorted(
        (h.id, h.citation.start, h.citation.end, h.citation.page) for h in _hits(linked)
    )
    linked.update("w", metadata={"k": 2})
    stored = linked.visible("w").document
    assert stored.chunk_spans == spans and stored.pages == (0, 23)
    assert dict(stored.metadata) == {CONTAINER_TAG_KEY: "alice", "k": 2}
    after = sorted((h.id, h.citation.start, h.citation.end, h.citation.page) for h in _hits(linked))
    assert after == before and [row[3] for row in after] == [1, 2]


def _hits(linked: LinkedDocuments) -> list[Any]:
    return linked.retriever.search("wombats quolls burrows night", mode="lexical", k=10)


# -- find-by-content --------------------------------------------------------------------


def test_find_by_content_matches_the_exact_text_of_a_live_memory(
    linked: LinkedDocuments,
) -> None:
    store = linked.memories
    # More near-duplicates than a top-50 search returns: the scan still finds the one.
    store.add_many(
        [f"Alice noted tea fact number {i}" for i in range(60)], container_tags=["alice"] * 60
    )
    target = store.add("Alice noted tea fact number 7b", container_tag="alice")
    assert store.find_by_content("Alice noted tea fact number 7b", container_tag="alice") == target
    with pytest.raises(MemoryNotFoundError, match="exactly the content"):
        store.find_by_content("Alice noted tea fact", container_tag="alice")  # a prefix
    with pytest.raises(MemoryNotFoundError):
        store.find_by_content("Alice noted tea fact number 7b", container_tag="bob")
    newer = store.update(target.id, "Alice noted coffee")
    with pytest.raises(MemoryNotFoundError):  # superseded versions do not count
        store.find_by_content("Alice noted tea fact number 7b", container_tag="alice")
    store.forget(newer.id)
    with pytest.raises(MemoryNotFoundError):  # nor forgotten ones
        store.find_by_content("Alice noted coffee", container_tag="alice")
    twins = store.add_many(["Same words"] * 2, container_tags=["alice", "carol"])
    assert store.find_by_content("Same words", container_tag="carol") == twins[1]
    with pytest.raises(InvalidInputError, match="2 memories") as err:
        store.find_by_content("Same words")  # any container: two
    assert all(m.id in str(err.value) for m in twins)


# -- metadata values inside a scope -----------------------------------------------------


def test_value_scans_read_only_the_callers_scope(linked: LinkedDocuments) -> None:
    docs = linked.retriever
    docs.add(
        [
            Document(
                id=f"{tag}-{i}",
                text=f"Note {i} of {tag}.",
                metadata={CONTAINER_TAG_KEY: tag, "lang": lang},
            )
            for tag, langs in (("alice", ["English", "ENGLISH"]), ("bob", ["english-secret"]))
            for i, lang in enumerate(langs)
        ]
    )
    scope = scope_where(["alice"], key=CONTAINER_TAG_KEY)
    assert sorted(map(str, docs.metadata_values("lang", where=scope))) == ["ENGLISH", "English"]
    tree = {
        "AND": [
            {"key": "lang", "value": "engl", "filterType": "string_contains", "ignoreCase": True}
        ]
    }
    where = where_from_filters(tree, values=lambda ks: docs.scan_metadata_values(ks, where=scope))
    assert "english-secret" not in str(where)  # bob's value never reaches the filter
    hits = docs.search("note", mode="lexical", k=10, where=and_where(where, scope))
    assert sorted(h.citation.document_id for h in hits) == ["alice-0", "alice-1"]
    assert "english-secret" in map(str, docs.metadata_values("lang"))  # unscoped: all


def test_a_value_scan_over_its_limit_names_the_key_and_the_fix(linked: LinkedDocuments) -> None:
    linked.retriever.add(
        [Document(id=f"d{i}", text=f"Doc {i}.", metadata={"serial": f"s{i}"}) for i in range(5)]
    )
    with pytest.raises(InvalidFilterError, match="'serial'.*more than 3 distinct") as err:
        linked.retriever.metadata_values("serial", limit=3)
    assert "exact values" in str(err.value)


def test_memory_value_scans_keep_to_the_containers(linked: LinkedDocuments) -> None:
    store = linked.memories
    store.add("Alice likes jazz", container_tag="alice", metadata={"genre": "Jazz"})
    store.add("Bob likes metal", container_tag="bob", metadata={"genre": "Metal"})
    linked.retriever.add(
        [
            Document(
                id="gb",
                text="Bob's playlist.",
                metadata={CONTAINER_TAG_KEY: "bob", "genre": "Metal2"},
            )
        ]
    )
    assert store.metadata_values("genre", container_tags=["alice"]) == ["Jazz"]
    assert sorted(map(str, store.metadata_values("genre", container_tags=["bob"]))) == [
        "Metal",
        "Metal2",
    ]


def test_mcp_add_documents_on_a_pinned_server_follows_the_same_memory_rule(
    linked: LinkedDocuments, tmp_path: Path
) -> None:
    from remy_retriever.mcp_server.tools import Guards, RemyTools

    folder = tmp_path / "allowed"
    folder.mkdir()
    (folder / "bike.md").write_text("Alice's bike is green.", encoding="utf-8")
    guards = Guards(container_tag="alice", allowed_roots=(str(folder.resolve()),))
    tools = RemyTools(linked.retriever, linked.memories, guards=guards)
    tools.call("add_documents", {"path": "bike.md"})
    assert _live(linked, "bike.md") == ["Alice's bike is green."]
    found = tools.call("search_memories", {"query": "what colour is the bike"})
    assert [r["memory"] for r in found.structured["results"]] == ["Alice's bike is green."]
    forgot = tools.call("forget_memory", {"content": "Alice's bike is green."})
    assert forgot.structured["memory"]["forgotten"] is True

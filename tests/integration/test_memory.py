"""MemoryStore against a real embedded Chroma and the real MiniLM model: version chains,
relations, forget, persistence, hybrid results, filter isolation, adapters and the CLI."""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Iterator, Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from remy_retriever import Document, InvalidFilterError, InvalidInputError, Retriever
from remy_retriever import SentenceTransformerEmbedder as STEmbedder
from remy_retriever.cli import memory_main
from remy_retriever.memory import (
    ChunkResult,
    Memory,
    MemoryNotFoundError,
    MemoryResult,
    MemorySearchResponse,
    MemoryStateError,
    MemoryStore,
)


class CountingEmbedder(STEmbedder):
    """The session's MiniLM model, counting the texts it embeds."""

    def __init__(self, model: Any) -> None:
        super().__init__()
        self._model = model
        self.embedded = 0

    def embed_documents(self, texts: Sequence[str]) -> np.ndarray:
        self.embedded += len(texts)
        return super().embed_documents(texts)


DOCS = [
    Document(
        id=f"{tenant}-brewing",
        title=f"Brewing guide ({tenant})",
        type="markdown",
        text=(
            "# Brewing\n\nGreen tea is brewed at 80 degrees for two minutes. Espresso needs "
            "finely ground beans and nine bar of pressure."
        ),
        metadata={"tenant": tenant, "container_tag": container},
    )
    for tenant, container in (("a", "alice"), ("b", "bob"))
]


@pytest.fixture(scope="module")
def counting(minilm_model: Any) -> CountingEmbedder:
    return CountingEmbedder(minilm_model)


@pytest.fixture(scope="module")
def db(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("memory") / "db"


@pytest.fixture(scope="module")
def docs(db: Path, counting: CountingEmbedder) -> Iterator[Retriever]:
    with Retriever(db, collection="docs", embedder=counting) as retriever:
        retriever.add(DOCS)
        yield retriever


@pytest.fixture(scope="module")
def store(docs: Retriever) -> Iterator[MemoryStore]:
    with MemoryStore(retriever=docs) as memory_store:
        yield memory_store


@pytest.fixture(scope="module")
def chain(store: MemoryStore) -> dict[str, Memory]:
    """add -> update -> update -> extend, in container "chain"."""
    a1 = store.add(
        "Sam's favourite drink is green tea", container_tag="chain", metadata={"topic": "drinks"}
    )
    a2 = store.update(a1.id, "Sam's favourite drink is black tea")
    a3 = store.update(a2.id, "Sam's favourite drink is espresso")
    ext = store.extend(a3.id, "Sam drinks an espresso every morning at seven")
    return {"a1": a1, "a2": a2, "a3": a3, "ext": ext}


def _ids(response: MemorySearchResponse) -> list[str]:
    return [r.id for r in response.results]


def test_only_the_latest_version_is_searchable(
    store: MemoryStore, chain: dict[str, Memory]
) -> None:
    response = store.search("what does Sam drink", container_tag="chain")
    assert sorted(_ids(response)) == sorted([chain["a3"].id, chain["ext"].id])
    assert response.total == 2
    for result in response.results:
        assert isinstance(result, MemoryResult)
        assert 0.0 <= result.similarity <= 1.0
        assert result.metadata == {"topic": "drinks"}  # inherited; bookkeeping hidden
    top = {r.id: r for r in response.results}[chain["a3"].id]
    assert isinstance(top, MemoryResult)
    assert top.memory == "Sam's favourite drink is espresso"
    assert (top.version, top.root_memory_id) == (3, chain["a1"].id)
    assert "context" not in top.to_dict() and "documents" not in top.to_dict()


def test_versions_roots_and_history(store: MemoryStore, chain: dict[str, Memory]) -> None:
    a1, a2, a3, ext = chain["a1"], chain["a2"], chain["a3"], chain["ext"]
    assert [m.version for m in (a1, a2, a3)] == [1, 2, 3]
    assert a1.root_id == a1.id and a2.root_id == a1.id and a3.root_id == a1.id
    assert (a2.parent_id, a2.relation) == (a1.id, "updates")
    assert (ext.version, ext.root_id, ext.parent_id, ext.relation) == (1, ext.id, a3.id, "extends")
    assert ext.container_tag == "chain" and ext.metadata == {"topic": "drinks"}
    assert a2.created_at == a1.created_at and a2.updated_at > a1.updated_at
    for some in (a1.id, a2.id, a3.id):
        assert [m.id for m in store.history(some)] == [a1.id, a2.id, a3.id]
    assert [m.latest for m in store.history(a1.id)] == [False, False, True]
    assert [m.id for m in store.history(ext.id)] == [ext.id]


def test_context_parents_and_children_with_relative_versions(
    store: MemoryStore, chain: dict[str, Memory]
) -> None:
    response = store.search(
        "what does Sam drink", container_tag="chain", include={"relatedMemories": True}
    )
    by_id = {r.id: r for r in response.results}
    a3 = by_id[chain["a3"].id]
    assert a3.context is not None
    parents = [(p.memory, p.relation, p.version) for p in a3.context.parents]
    assert parents == [
        ("Sam's favourite drink is black tea", "updates", -1),
        ("Sam's favourite drink is green tea", "updates", -2),
    ]
    assert a3.context.children == []  # the latest version: nothing replaced it
    related = [(r.memory, r.relation) for r in a3.context.related]
    assert related == [("Sam drinks an espresso every morning at seven", "extends")]
    assert a3.context.parents[0].updated_at == chain["a2"].updated_at
    ext = by_id[chain["ext"].id]
    assert ext.context is not None
    # An extension is a memory of its own (version 1): no version history, one related.
    assert ext.context.parents == [] and ext.context.children == []
    assert [(r.memory, r.relation) for r in ext.context.related] == [
        ("Sam's favourite drink is espresso", "extends")
    ]
    wire = a3.to_dict()
    assert wire["context"]["parents"][0]["version"] == -1
    assert wire["rootMemoryId"] == chain["a1"].id


def test_update_of_a_replaced_version_names_the_latest(
    store: MemoryStore, chain: dict[str, Memory]
) -> None:
    with pytest.raises(MemoryStateError, match=chain["a3"].id):
        store.update(chain["a1"].id, "Sam's favourite drink is water")
    with pytest.raises(MemoryNotFoundError, match="mem_missing"):
        store.get("mem_missing")


def test_derive_links_every_parent(store: MemoryStore) -> None:
    x = store.add("Kim lives in Lisbon", container_tag="derive")
    y = store.add("Kim works remotely for a Berlin company", container_tag="derive")
    z = store.derive([x.id, y.id], "Kim commutes to Berlin rarely", metadata={"kind": "x"})
    assert (z.relation, z.parent_ids, z.version, z.root_id) == ("derives", (x.id, y.id), 1, z.id)
    response = store.search(
        "Kim commute", container_tag="derive", include={"relatedMemories"}, limit=3
    )
    by_id = {r.id: r for r in response.results}
    assert set(by_id) == {x.id, y.id, z.id}  # deriving replaces nothing
    derived = by_id[z.id].context
    assert derived is not None
    assert derived.parents == []
    assert sorted((r.memory, r.relation) for r in derived.related) == [
        ("Kim lives in Lisbon", "derives"),
        ("Kim works remotely for a Berlin company", "derives"),
    ]
    x_context = by_id[x.id].context
    assert x_context is not None
    assert x_context.children == []
    assert [(r.memory, r.relation) for r in x_context.related] == [
        ("Kim commutes to Berlin rarely", "derives")
    ]
    other = store.add("unrelated", container_tag="elsewhere")
    with pytest.raises(MemoryStateError, match="different containers"):
        store.derive([x.id, other.id], "mixed")


def test_add_many_writes_several_memories_at_once(store: MemoryStore) -> None:
    a, b = store.add_many(
        ["Pat walks to work", "Pat's sister lives in Oslo"],
        container_tags=["many", "many"],
        metadata=[{"kind": "habit"}, None],
        document_ids=[["doc-a"], None],
    )
    assert (a.version, a.root_id, a.metadata, a.document_ids) == (
        1,
        a.id,
        {"kind": "habit"},
        ("doc-a",),
    )
    assert store.get(b.id).content == "Pat's sister lives in Oslo" and b.metadata == {}
    found = store.search("where does Pat's sister live", container_tag="many")
    assert found.results[0].id == b.id
    before = store.memories.count()
    with pytest.raises(InvalidInputError, match="2 contents but 1 metadata"):
        store.add_many(["x", "y"], metadata=[None])
    with pytest.raises(InvalidInputError, match="reserved"):
        store.add_many(["ok", "bad"], metadata=[None, {"memory_x": 1}])
    assert store.add_many([]) == []
    assert store.memories.count() == before  # a refused call writes nothing


def test_forget_hides_without_destroying_history(store: MemoryStore) -> None:
    a = store.add("Lee's locker code is 4512", container_tag="forget")
    b = store.update(a.id, "Lee's locker code is 9981")
    c = store.extend(b.id, "Lee changes the locker code every spring")
    forgotten = store.forget(c.id)
    assert forgotten.forgotten and store.get(c.id).forgotten
    response = store.search("locker code", container_tag="forget", include={"relatedMemories"})
    assert _ids(response) == [b.id]
    context = response.results[0].context
    assert context is not None and context.related == []  # forgotten: not in context
    assert [p.memory for p in context.parents] == ["Lee's locker code is 4512"]
    store.forget(b.id)
    assert store.search("locker code", container_tag="forget").results == []
    assert [m.id for m in store.history(a.id)] == [a.id, b.id]  # history intact
    with pytest.raises(MemoryStateError, match="forgotten"):
        store.update(b.id, "new code")


def test_everything_survives_a_reopen(
    db: Path, docs: Retriever, store: MemoryStore, chain: dict[str, Memory]
) -> None:
    with MemoryStore(db, retriever=docs) as reopened:
        assert reopened.get(chain["a2"].id) == replace(chain["a2"], latest=False)
        assert [m.id for m in reopened.history(chain["a3"].id)] == [
            chain["a1"].id,
            chain["a2"].id,
            chain["a3"].id,
        ]
    # A fresh process (a real reopen from disk), through the CLI.
    args = ["search", "what does Sam drink", "--container", "chain", "--related", "--json"]
    out = subprocess.run(
        [sys.executable, "-m", "remy_retriever.cli", "memory", *args, "--db", str(db)],
        capture_output=True,
        text=True,
        timeout=300,
        check=True,
    ).stdout
    response = MemorySearchResponse.parse(out)
    assert sorted(_ids(response)) == sorted([chain["a3"].id, chain["ext"].id])
    top = {r.id: r for r in response.results}[chain["a3"].id]
    assert top.context is not None
    assert [p.version for p in top.context.parents] == [-1, -2]
    assert top.root_memory_id == chain["a1"].id


def test_an_update_embeds_two_texts(store: MemoryStore, counting: CountingEmbedder) -> None:
    before = counting.embedded
    m = store.add("Pat parks in spot 12", container_tag="cost")
    assert counting.embedded - before == 1
    before = counting.embedded
    store.update(m.id, "Pat parks in spot 14")
    assert counting.embedded - before == 2  # the new version, and the old one's flag flip


def test_hybrid_mixes_memories_and_chunks_in_one_ranking(
    store: MemoryStore, docs: Retriever
) -> None:
    store.add(
        "Robin brews green tea at 80 degrees",
        container_tag="alice",
        metadata={"tenant": "a"},
        document_ids=["a-brewing"],
    )
    response = store.search(
        "green tea brewing temperature",
        search_mode="hybrid",
        container_tag="alice",
        include={"relatedMemories", "documents"},
        limit=5,
    )
    kinds = {type(r) for r in response.results}
    assert kinds == {MemoryResult, ChunkResult}
    sims = [r.similarity for r in response.results]
    assert sims == sorted(sims, reverse=True) and all(0 <= s <= 1 for s in sims)
    chunk = next(r for r in response.results if isinstance(r, ChunkResult))
    wire = chunk.to_dict()
    assert "chunk" in wire and "memory" not in wire
    assert wire["version"] == 1 and wire["rootMemoryId"] is None
    assert wire["context"] == {"parents": [], "children": []}
    assert [d["id"] for d in wire["documents"]] == ["a-brewing"]
    assert wire["documents"][0]["title"] == "Brewing guide (a)"
    memory = next(r for r in response.results if isinstance(r, MemoryResult))
    assert memory.documents is not None and memory.documents[0].id == "a-brewing"
    assert (
        memory.documents[0].created_at == docs.get_documents(["a-brewing"])["a-brewing"].created_at
    )

    raw = json.loads(response.to_json())
    assert MemorySearchResponse.parse(raw).to_dict() == raw


def test_documents_mode_returns_only_chunks(store: MemoryStore) -> None:
    response = store.search("espresso pressure", search_mode="documents", limit=3)
    assert response.results and all(isinstance(r, ChunkResult) for r in response.results)


def test_container_isolation_in_every_mode(store: MemoryStore) -> None:
    for tag in ("alice", "bob"):
        store.add(f"{tag} keeps the espresso beans in the blue tin", container_tag=tag)
    for mode in ("memories", "hybrid", "documents"):
        response = store.search(
            "where are the espresso beans",
            search_mode=mode,  # type: ignore[arg-type]
            container_tag="bob",
            include={"relatedMemories", "documents"},
            limit=10,
        )
        assert response.results, mode
        for result in response.results:
            if isinstance(result, MemoryResult):
                assert store.get(result.id).container_tag == "bob"
                assert "alice" not in result.memory
            else:
                assert result.id.startswith("b-"), (mode, result.id)
                assert result.documents is not None
                assert all(
                    d.metadata == {"tenant": "b", "container_tag": "bob"} for d in result.documents
                )


def test_where_isolation_in_every_mode_including_context(store: MemoryStore) -> None:
    a = store.add("Jo's desk is by the window", container_tag="where", metadata={"tenant": "a"})
    # The extension belongs to tenant b: tenant a must not see it as a child...
    b = store.extend(a.id, "Jo's desk is by the door", metadata={"tenant": "b"})
    for mode in ("memories", "hybrid", "documents"):
        response = store.search(
            "where is Jo's desk green tea espresso",
            search_mode=mode,  # type: ignore[arg-type]
            where={"tenant": "a"},
            include={"relatedMemories", "documents"},
            limit=20,
        )
        assert response.results, mode
        for result in response.results:
            assert result.metadata is not None and result.metadata.get("tenant") == "a", mode
            assert result.id != b.id
            for entry in (
                []
                if result.context is None
                else [
                    *result.context.parents,
                    *result.context.children,
                ]
            ):
                assert entry.metadata is not None and entry.metadata["tenant"] == "a"
            for doc in result.documents or []:
                assert doc.metadata is not None and doc.metadata["tenant"] == "a"
    # ...and tenant b sees the new version without its tenant-a parent.
    response = store.search("Jo's desk", where={"tenant": "b"}, include={"relatedMemories"})
    assert _ids(response) == [b.id]
    assert response.results[0].context is not None
    assert response.results[0].context.parents == []


def test_threshold_and_input_errors(
    store: MemoryStore, chain: dict[str, Memory], tmp_path: Path
) -> None:
    everything = store.search("Sam espresso", container_tag="chain")
    cut = max(r.similarity for r in everything.results)
    kept = store.search("Sam espresso", container_tag="chain", threshold=cut)
    assert kept.results and all(r.similarity >= cut for r in kept.results)
    with pytest.raises(InvalidInputError, match="reserved"):
        store.add("x", metadata={"memory_root": "mine"})
    with pytest.raises(InvalidFilterError, match="memory_latest"):
        store.search("x", where={"memory_latest": False})
    with pytest.raises(InvalidInputError, match="include flag 'related'"):
        store.search("x", include={"related"})
    with pytest.raises(InvalidInputError, match="threshold"):
        store.search("x", threshold=2)
    with pytest.raises(InvalidInputError, match="search_mode"):
        store.search("x", search_mode="chunks")  # type: ignore[arg-type]
    with pytest.raises(InvalidInputError, match="memory content is empty"):
        store.add("   ")
    with pytest.raises(InvalidInputError, match="list of memory ids"):
        store.derive("mem_x", "y")  # type: ignore[arg-type]
    alone_path = tmp_path / "lexical-alone"
    with (
        MemoryStore(
            store.memories.client, collection="memories-alone", lexical_path=alone_path
        ) as alone,
        pytest.raises(InvalidInputError, match="no linked retriever"),
    ):
        alone.search("x", search_mode="hybrid")


def test_cli_memory_commands(db: Path, docs: Retriever, capsys: pytest.CaptureFixture[str]) -> None:
    base = ["--db", str(db), "--collection", "cli-memories"]
    assert (
        memory_main(["add", "Ash takes the 8:15 train", "--container", "ash", *base, "--json"]) == 0
    )
    added = json.loads(capsys.readouterr().out)
    assert added["version"] == 1 and added["rootMemoryId"] is None
    assert memory_main(["update", added["id"], "Ash takes the 7:40 train", *base]) == 0
    assert f"updated {added['id']} -> mem_" in capsys.readouterr().out
    args = ["search", "which train does Ash take", "--container", "ash", "--related", *base]
    assert memory_main([*args, "--json"]) == 0
    wire = json.loads(capsys.readouterr().out)
    assert MemorySearchResponse.parse(wire).to_dict() == wire
    assert [r["memory"] for r in wire["results"]] == ["Ash takes the 7:40 train"]
    assert wire["results"][0]["context"]["parents"][0]["relation"] == "updates"
    assert memory_main(args) == 0
    out = capsys.readouterr().out
    assert out.startswith("[1] memory ") and "<- updates v1: Ash takes the 8:15 train" in out
    assert memory_main(["history", added["id"], *base]) == 0
    assert capsys.readouterr().out.splitlines()[0].startswith(f"v1 {added['id']}")
    hybrid = ["search", "green tea", "--search-mode", "hybrid", "--json", *base]
    assert memory_main(hybrid) == 0
    assert any("chunk" in r for r in json.loads(capsys.readouterr().out)["results"])
    assert memory_main(["update", "mem_nope", "x", *base]) == 2
    assert "no memory with id 'mem_nope'" in capsys.readouterr().err


def test_a_memory_collection_of_another_embedder_opens_with_its_record(
    db: Path, docs: Retriever
) -> None:
    """Memories added on their own (the default backend: int8 when the [onnx] extra is
    installed) stay searchable beside documents embedded by another embedder: the
    memory collection keeps the embedder it records instead of taking the linked one."""
    pytest.importorskip("onnxruntime")
    with MemoryStore(db, collection="int8-memories", embedder_backend="onnx-int8") as alone:
        alone.add("Ash takes the 8:15 train", container_tag="ash")
    with MemoryStore(db, collection="int8-memories", retriever=docs) as linked:
        assert linked.memories.embedder is not docs.embedder
        assert getattr(linked.memories.embedder, "quantization", None) == "int8"
        got = linked.search("which train does Ash take", container_tag="ash")
        assert [r.memory for r in got.results] == ["Ash takes the 8:15 train"]
    # A new memory collection still takes the linked retriever's embedder.
    with MemoryStore(db, collection="fresh-memories", retriever=docs) as fresh:
        assert fresh.memories.embedder is docs.embedder

"""The engine side of supermemory v5's profile buckets and memory counts, on a real
embedded Chroma and the real MiniLM model: bucket definitions are stored per container,
bounded and validated, survive a reopen, and pick a profile's buckets when the caller
names none; memory counts count live memories and leave out what is not in the
container."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from remy_retriever import InvalidInputError, Retriever
from remy_retriever.memory import LinkedDocuments, MemoryStore
from remy_retriever.memory.buckets import (
    MAX_BUCKETS,
    define_buckets,
    defined_buckets,
    profile_buckets,
    remove_buckets,
)
from remy_retriever.memory.listing import container_memories, memory_counts, profile


def _open(path: Path, embedder: Any) -> tuple[Retriever, MemoryStore]:
    docs = Retriever(path, collection="docs", embedder=embedder)
    return docs, MemoryStore(retriever=docs)


@pytest.fixture
def linked(tmp_path: Path, embedder: Any) -> Iterator[LinkedDocuments]:
    docs, memories = _open(tmp_path / "db", embedder)
    with docs, memories:
        yield LinkedDocuments(memories)


def test_bucket_definitions_are_kept_per_container_and_survive_a_reopen(
    tmp_path: Path, embedder: Any
) -> None:
    docs, store = _open(tmp_path / "db", embedder)
    with docs, store:
        define_buckets(store, "alice", {"habits": "routines", "food": "meals"})
        define_buckets(store, "bob", {"work": "Bob's job"})
        assert define_buckets(store, "alice", {"food": "what Alice eats"}) == {
            "food": "what Alice eats",
            "habits": "routines",
        }
        assert remove_buckets(store, "alice", ["habits", "never-defined"]) == {
            "food": "what Alice eats"
        }
    docs, store = _open(tmp_path / "db", embedder)
    with docs, store:
        assert defined_buckets(store, "alice") == {"food": "what Alice eats"}
        assert defined_buckets(store, "bob") == {"work": "Bob's job"}
        assert defined_buckets(store, "carol") == {}


@pytest.mark.parametrize(
    ("buckets", "named"),
    [
        ({"bad/name": "x"}, "bucket name 'bad/name'"),
        ({"": "x"}, "bucket name ''"),
        ({"n" * 65: "x"}, "1-64 letters"),
        ({"ok": "d" * 1001}, "at most 1000 characters"),
    ],
)
def test_a_bad_bucket_definition_is_refused_naming_it_and_nothing_is_stored(
    linked: LinkedDocuments, buckets: dict[str, str], named: str
) -> None:
    with pytest.raises(InvalidInputError, match=named):
        define_buckets(linked.memories, "alice", buckets)
    assert defined_buckets(linked.memories, "alice") == {}


def test_a_container_defines_at_most_max_buckets(linked: LinkedDocuments) -> None:
    define_buckets(linked.memories, "alice", {f"b{i}": "x" for i in range(MAX_BUCKETS)})
    with pytest.raises(InvalidInputError, match="delete some first"):
        define_buckets(linked.memories, "alice", {"one-more": "x"})
    assert len(defined_buckets(linked.memories, "alice")) == MAX_BUCKETS


def test_a_profile_without_named_buckets_shows_the_defined_ones(
    linked: LinkedDocuments,
) -> None:
    store = linked.memories
    for text, bucket in (("Alice walks at dawn", "habits"), ("Alice likes miso", "food")):
        linked.add(
            linked.prepare(content=text, tag="alice", custom_id=None, metadata={"bucket": bucket})
        )
    memories = container_memories(store, "alice")
    every = profile(memories, profile_buckets(store, "alice", None))
    assert sorted(every.buckets) == ["food", "habits"]  # nothing defined: every named one
    define_buckets(store, "alice", {"habits": "routines", "travel": "trips"})
    shown = profile(memories, profile_buckets(store, "alice", None))
    assert sorted(shown.buckets) == ["habits", "travel"]  # the defined ones, even empty
    assert [m.content for m in shown.buckets["habits"]] == ["Alice walks at dawn"]
    asked = profile(memories, profile_buckets(store, "alice", ["food"]))
    assert list(asked.buckets) == ["food"]  # named buckets win over the definitions
    with pytest.raises(InvalidInputError, match="bucket name"):
        profile_buckets(store, "alice", ["no/slash"])


def test_memory_counts_count_live_memories_of_the_containers_documents_only(
    linked: LinkedDocuments,
) -> None:
    tea = linked.add(
        linked.prepare(content="Alice drinks tea", tag="alice", custom_id="tea", metadata=None)
    )
    linked.update(tea, scope=["alice"], content="Alice drinks coffee")
    linked.add(linked.prepare(content="Bob's secret", tag="bob", custom_id="secret", metadata=None))
    long = "\n\n".join(" ".join(f"Part {i} is long." for _ in range(200)) for i in range(3))
    linked.add(linked.prepare(content=long, tag="alice", custom_id="long", metadata=None))
    counted = memory_counts(linked, ["tea", "secret", "missing", "long", "tea"], "alice")
    assert counted == [("tea", 1), ("long", 0)]  # bob's and unknown ids left out, each id once
    with pytest.raises(InvalidInputError, match="at most 100"):
        memory_counts(linked, [f"d{i}" for i in range(101)], "alice")

"""RemyMemoryRetriever (LangChain's standard retriever tests, unmodified), the memory
tool and the response converters, against a real embedded store and the MiniLM model."""

from __future__ import annotations

import json
from typing import Any

import pytest
from langchain_core.documents import Document as LCDocument
from langchain_core.messages import ToolCall, ToolMessage
from langchain_core.retrievers import BaseRetriever
from langchain_remy.memory import (
    RemyMemoryRetriever,
    documents_to_langchain,
    memories_to_langchain,
    remy_memory_tool,
)
from langchain_tests.integration_tests import RetrieversIntegrationTests
from remy_adapter_fixtures import MEMORY_FACTS, hybrid_memory_search

from remy_retriever import InvalidInputError, Retriever
from remy_retriever.memory import MemoryStore

QUERY = "what does Sam drink in the morning"
FACTS = MEMORY_FACTS


@pytest.fixture
def store(memory_store: MemoryStore) -> MemoryStore:
    return memory_store


class TestRemyMemoryRetrieverStandard(RetrieversIntegrationTests):
    """Every standard test as is (none overridden, skipped or xfailed)."""

    memory_store: MemoryStore

    @pytest.fixture(autouse=True)
    def _bind_store(self, store: MemoryStore) -> None:
        self.memory_store = store

    @property
    def retriever_constructor(self) -> type[BaseRetriever]:
        return RemyMemoryRetriever

    @property
    def retriever_constructor_params(self) -> dict[str, Any]:
        return {"store": self.memory_store, "k": 4, "container_tag": "sam"}

    @property
    def retriever_query_example(self) -> str:
        return QUERY


def test_latest_version_with_context_and_per_call_overrides(store: MemoryStore) -> None:
    retriever = RemyMemoryRetriever(store, k=2, container_tag="sam")
    docs = retriever.invoke(QUERY)
    assert len(docs) == 2
    top = docs[0]
    assert top.page_content == "Sam drinks espresso every morning"
    assert top.metadata["kind"] == "memory" and top.metadata["version"] == 2
    assert top.metadata["topic"] == "drinks"
    parents = top.metadata["context"]["parents"]
    assert parents[0]["memory"] == FACTS[0] and parents[0]["relation"] == "updates"
    assert parents[0]["version"] == -1
    other = retriever.invoke(QUERY, container_tag="max", k=3)
    assert [d.page_content for d in other] == ["Max drinks cocoa every morning"]
    hybrid = retriever.invoke("coffee on the morning menu", search_mode="hybrid", k=10)
    assert {d.metadata["kind"] for d in hybrid} == {"memory", "chunk"}
    chunk = next(d for d in hybrid if d.metadata["kind"] == "chunk")
    assert chunk.metadata["document_id"] == "cafe" and chunk.metadata["title"] == "Cafe menu"
    with pytest.raises(InvalidInputError, match="unknown search option 'top_n'"):
        retriever.invoke(QUERY, top_n=3)
    with pytest.raises(InvalidInputError, match="needs a MemoryStore"):
        RemyMemoryRetriever("not a store")  # type: ignore[arg-type]


async def test_ainvoke_matches_invoke(store: MemoryStore) -> None:
    retriever = RemyMemoryRetriever(store, k=3, container_tag="sam")
    sync = [d.id for d in retriever.invoke(QUERY)]
    assert [d.id for d in await retriever.ainvoke(QUERY)] == sync


def test_memory_tool_answers_with_numbered_memories(store: MemoryStore) -> None:
    tool = remy_memory_tool(store, k=2, container_tag="sam")
    assert tool.name == "remy_memory" and "query" in tool.args
    call = ToolCall(name=tool.name, args={"query": QUERY}, id="call_1", type="tool_call")
    message = tool.invoke(call)
    assert isinstance(message, ToolMessage)
    assert message.content.startswith("[1] memory v2 (updated ")
    assert "Sam drinks espresso every morning" in message.content
    assert f'updates (-1): "{FACTS[0]}"' in message.content
    assert message.artifact["total"] == 2 and "memory" in message.artifact["results"][0]
    # The model cannot leave its container: options are fixed at construction.
    assert "cocoa" not in message.content
    assert tool.invoke({"query": "zzzz qqqq"}) is not None


def test_converters_accept_objects_and_raw_json(store: MemoryStore) -> None:
    search_documents = Retriever.search_documents

    docs_retriever = store.retriever
    assert docs_retriever is not None
    response = search_documents(docs_retriever, "espresso on the morning menu")
    n_chunks = sum(len(r.chunks) for r in response.results)
    for given in (response, response.to_dict(), response.to_json()):
        converted = documents_to_langchain(given)
        assert len(converted) == n_chunks
        assert all(isinstance(d, LCDocument) for d in converted)
        assert {d.metadata["kind"] for d in converted} == {"chunk"}
        assert converted[0].metadata["title"] == "Cafe menu"
        assert converted[0].metadata["document_id"] == "cafe"
        assert converted[0].metadata["is_relevant"] is True
        assert converted[0].id == "cafe::chunk-0"
    raw = {
        "results": [
            {
                "id": "mem_x",
                "memory": "remembered",
                "similarity": 0.87,
                "metadata": {"kind": "user-said", "topic": "t"},
                "updatedAt": "2024-01-18T09:15:00Z",
                "version": 3,
                "rootMemoryId": "mem_root",
            },
            {
                "id": "chunk_abc",
                "chunk": "a chunk",
                "similarity": 0.5,
                "updatedAt": "2024-01-15T10:30:00Z",
                "documents": [{"id": "doc_q", "title": "Q", "type": "pdf"}],
            },
        ],
        "timing": 3,
        "total": 2,
    }
    memory, chunk = memories_to_langchain(json.dumps(raw))
    assert (memory.id, memory.metadata["kind"], memory.metadata["version"]) == (
        "mem_x",
        "memory",
        3,
    )
    assert memory.metadata["root_memory_id"] == "mem_root" and memory.metadata["topic"] == "t"
    assert memory.metadata["remy_shadowed"] == {"kind": "user-said"}  # ours wins
    assert (chunk.metadata["kind"], chunk.metadata["document_id"]) == ("chunk", "doc_q")
    with pytest.raises(InvalidInputError, match=r"results\[1\]\.similarity"):
        memories_to_langchain(
            {**raw, "results": [raw["results"][0], {**raw["results"][1], "similarity": 7}]}
        )


def test_a_hybrid_response_converts_memories_and_chunks_in_its_order(store: MemoryStore) -> None:
    response, kinds = hybrid_memory_search(store)
    for given in (response, response.to_dict(), response.to_json()):
        converted = memories_to_langchain(given)
        assert [d.metadata["kind"] for d in converted] == kinds
        chunk = next(d for d in converted if d.metadata["kind"] == "chunk")
        assert chunk.metadata["document_id"] == "cafe"
        assert chunk.metadata["root_memory_id"] is None

"""memories_to_nodes and documents_to_nodes: remy's memory and document search responses
(objects, dicts or JSON text) as scored LlamaIndex nodes, against a real embedded store and
the MiniLM model."""

from __future__ import annotations

from llama_index.core.schema import NodeRelationship
from llama_index.retrievers.remy.memory import documents_to_nodes, memories_to_nodes
from remy_adapter_fixtures import hybrid_memory_search

from remy_retriever.memory import MemoryStore


def test_a_hybrid_response_becomes_nodes_of_both_kinds_in_its_order(
    memory_store: MemoryStore,
) -> None:
    response, kinds = hybrid_memory_search(memory_store)
    scores = [r.similarity for r in response.results]
    for given in (response, response.to_dict(), response.to_json()):
        nodes = memories_to_nodes(given)
        assert [n.node.metadata["kind"] for n in nodes] == kinds
        assert [n.score for n in nodes] == scores
        chunk = next(n.node for n in nodes if n.node.metadata["kind"] == "chunk")
        assert chunk.relationships[NodeRelationship.SOURCE].node_id == "cafe"


def test_a_document_search_becomes_one_node_per_chunk(memory_store: MemoryStore) -> None:
    docs = memory_store.retriever
    assert docs is not None
    response = docs.search_documents("espresso on the morning menu")
    n_chunks = sum(len(r.chunks) for r in response.results)
    assert n_chunks
    for given in (response, response.to_dict(), response.to_json()):
        nodes = documents_to_nodes(given)
        assert len(nodes) == n_chunks
        assert all(0 <= (n.score or 0) <= 1 for n in nodes)
        first = nodes[0].node
        assert first.node_id == "cafe::chunk-0" and first.metadata["kind"] == "chunk"
        assert first.metadata["title"] == "Cafe menu"
        assert isinstance(first.metadata["is_relevant"], bool)

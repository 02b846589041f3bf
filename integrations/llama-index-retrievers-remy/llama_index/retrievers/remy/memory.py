"""LlamaIndex side of remy's document and memory search responses.

:func:`documents_to_nodes` / :func:`memories_to_nodes` turn a ``DocumentSearchResponse``
/ ``MemorySearchResponse`` (our objects, or raw JSON from any implementation of the spec,
as a dict or a string) into ``NodeWithScore`` objects whose ``score`` is the 0-1 score.

Each document-search chunk becomes one ``TextNode`` (id ``"<documentId>::chunk-<n>"``,
``SOURCE`` relationship to the document); each memory-search result one ``TextNode``
(id = the memory or chunk id; a chunk's ``SOURCE`` is its document). Metadata is flat:
``kind`` (``"memory"`` or ``"chunk"``, so hybrid results can be told apart), ``score``,
``source``, the ids (``id`` / ``document_id``), ``title``, ``type``, ``version``,
``root_memory_id``, ``context`` (parents/children with their ``relation`` and relative
``version``), ``documents``, ``is_relevant``, ``created_at`` / ``updated_at``, then the
item's own metadata (full list in :func:`remy_retriever.memory.memory_passages`). The
bulky and per-query keys are excluded from what embedders and LLMs see.
"""

from __future__ import annotations

from llama_index.core.schema import (
    NodeRelationship,
    NodeWithScore,
    ObjectType,
    RelatedNodeInfo,
    TextNode,
)

from remy_retriever.integration import SHADOW_KEY, Passage, document_passages, memory_passages

__all__ = ["MEMORY_HIDDEN_KEYS", "documents_to_nodes", "memories_to_nodes"]

#: Metadata keys kept out of the text given to embedders and LLMs.
MEMORY_HIDDEN_KEYS = (
    "score",
    "similarity",
    "document_score",
    "is_relevant",
    "chunk_position",
    "chunk_total",
    "context",
    "documents",
    "document_ids",
    "root_memory_id",
    SHADOW_KEY,
)


def _node(passage: Passage) -> NodeWithScore:
    metadata = dict(passage.metadata)
    relationships = {}
    document_id = metadata.get("document_id")
    if isinstance(document_id, str) and document_id:
        relationships[NodeRelationship.SOURCE] = RelatedNodeInfo(
            node_id=document_id, node_type=ObjectType.DOCUMENT
        )
    hidden = [key for key in MEMORY_HIDDEN_KEYS if key in metadata]
    node = TextNode(
        id_=passage.id,
        text=passage.text,
        metadata=metadata,
        relationships=relationships,
        excluded_embed_metadata_keys=hidden,
        excluded_llm_metadata_keys=hidden,
    )
    return NodeWithScore(node=node, score=passage.score)


def documents_to_nodes(response: object) -> list[NodeWithScore]:
    """A document-search response (object, dict or JSON text) as one scored node per
    chunk, in order; ``metadata["kind"] == "chunk"``."""
    return [_node(p) for p in document_passages(response)]


def memories_to_nodes(response: object) -> list[NodeWithScore]:
    """A memory-search response (object, dict or JSON text) as one scored node per
    result, in order; ``metadata["kind"]`` is ``"memory"`` or ``"chunk"``."""
    return [_node(p) for p in memory_passages(response)]

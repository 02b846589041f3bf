"""Lossless conversion between remy :class:`~remy_retriever.SearchHit` objects and LlamaIndex
nodes.

A hit becomes ``NodeWithScore(node=TextNode(...), score=hit.score)`` where the TextNode has:

- ``id_`` = the chunk id (``"<document id>#<position>"``), ``text`` = the hit's text;
- ``metadata``: the hit's flat metadata, in the layout both adapters share
  (:func:`remy_retriever.integration.hit_to_metadata`): ``citation`` (wire form), the flat
  copies ``source``, ``title``, ``document_id``, ``chunk_index``, ``heading_path``,
  ``page`` and ``page_end`` (1-based, ``None`` without pages; ``page_end`` only for a
  chunk that runs onto a later page), the scores ``score`` / ``retrieval_rank`` /
  ``retrieval_score`` (the last two ``None`` when no reranking happened), ``explain`` /
  ``neighbors`` / ``matches`` when the search asked for them, then the chunk's own
  metadata (a user key that collides with one of ours is kept under ``remy_shadowed``
  and restored by :func:`node_to_hit`);
- ``start_char_idx`` / ``end_char_idx``: the citation's offsets of the passage in the
  source document;
- ``relationships``: ``SOURCE`` -> the document id; ``PREVIOUS`` / ``NEXT`` -> the chunk
  ids either side (none before the first chunk, none after the last; ``NEXT`` is left
  out when the citation does not know the document's chunk count);
- ``excluded_embed_metadata_keys`` / ``excluded_llm_metadata_keys``: the bulky or
  per-query keys (citation, explain, neighbors, matches, scores) and ``page`` /
  ``page_end`` when they are ``None``, so an LLM sees the text with its title, heading
  path, source and (for a paged document such as a PDF) its page.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from llama_index.core.schema import (
    BaseNode,
    NodeRelationship,
    NodeWithScore,
    ObjectType,
    RelatedNodeInfo,
    TextNode,
)

from remy_retriever import Citation, InvalidInputError, SearchHit, StoredChunk
from remy_retriever.integration import (
    FLAT_KEYS,
    SHADOW_KEY,
    chunk_id,
    hit_from_metadata,
    hit_to_metadata,
)

__all__ = [
    "HIDDEN_KEYS",
    "RESERVED_KEYS",
    "SHADOW_KEY",
    "chunk_to_node",
    "hit_to_node",
    "hits_to_nodes",
    "node_to_hit",
]

#: Metadata keys kept out of the text given to embedders and LLMs.
HIDDEN_KEYS = (
    "citation",
    "explain",
    "neighbors",
    "matches",
    "score",
    "retrieval_rank",
    "retrieval_score",
    SHADOW_KEY,
)

#: Shown to embedders and LLMs only when set (a paged document's chunks).
_PAGE_KEYS = ("page", "page_end")

#: Metadata keys this package writes; every other key is the chunk's own metadata.
RESERVED_KEYS = FLAT_KEYS


def relationships(citation: Citation) -> dict[NodeRelationship, RelatedNodeInfo]:
    """``SOURCE``, ``PREVIOUS`` and ``NEXT`` for the chunk a citation points at."""
    doc, position = citation.document_id, citation.chunk_index
    before = chunk_id(doc, position - 1) if position > 0 else None
    known = citation.chunk_count is not None and position + 1 < citation.chunk_count
    return _related(doc, before, chunk_id(doc, position + 1) if known else None)


def _related(
    document_id: str, previous_id: str | None, next_id: str | None
) -> dict[NodeRelationship, RelatedNodeInfo]:
    out = {
        NodeRelationship.SOURCE: RelatedNodeInfo(node_id=document_id, node_type=ObjectType.DOCUMENT)
    }
    if previous_id is not None:
        out[NodeRelationship.PREVIOUS] = RelatedNodeInfo(
            node_id=previous_id, node_type=ObjectType.TEXT
        )
    if next_id is not None:
        out[NodeRelationship.NEXT] = RelatedNodeInfo(node_id=next_id, node_type=ObjectType.TEXT)
    return out


def _text_node(hit: SearchHit, related: dict[NodeRelationship, RelatedNodeInfo]) -> TextNode:
    metadata = hit_to_metadata(hit, reserved=RESERVED_KEYS)
    citation = hit.citation
    hidden = [*HIDDEN_KEYS, *(key for key in _PAGE_KEYS if metadata[key] is None)]
    return TextNode(
        id_=hit.id,
        text=hit.text,
        metadata=metadata,
        start_char_idx=citation.start,
        end_char_idx=citation.end,
        relationships=dict(related),
        excluded_embed_metadata_keys=hidden,
        excluded_llm_metadata_keys=list(hidden),
    )


def hit_to_node(hit: SearchHit) -> NodeWithScore:
    """One :class:`SearchHit` as a ``NodeWithScore`` (see the module docstring)."""
    return NodeWithScore(node=_text_node(hit, relationships(hit.citation)), score=hit.score)


def chunk_to_node(chunk: StoredChunk) -> TextNode:
    """A stored chunk (``Retriever.get_chunks``) as the node :func:`hit_to_node` makes for
    it, ``PREVIOUS`` / ``NEXT`` from the chunk's neighbour ids. It is not a search result,
    so the scores in its metadata are ``None``."""
    hit = SearchHit(  # the shared metadata layout is a hit's; its score is cleared below
        id=chunk.id,
        score=0.0,
        text=chunk.text,
        citation=chunk.citation,
        metadata=chunk.metadata,
    )
    citation = chunk.citation
    node = _text_node(hit, _related(citation.document_id, chunk.previous_id, chunk.next_id))
    node.metadata["score"] = None
    return node


def hits_to_nodes(hits: Iterable[SearchHit]) -> list[NodeWithScore]:
    """Convert search hits to scored nodes, keeping their order."""
    return [hit_to_node(hit) for hit in hits]


def node_to_hit(node: NodeWithScore | BaseNode) -> SearchHit:
    """The :class:`SearchHit` a node was made from (the inverse of :func:`hit_to_node`).

    Takes a ``NodeWithScore`` (its ``score`` wins over ``metadata["score"]``, so a node
    rescored by a postprocessor converts with its new score) or a bare node. Raises
    :class:`~remy_retriever.InvalidInputError` for a node without a remy citation.
    """
    score: Any = None
    if isinstance(node, NodeWithScore):
        score = node.score
        node = node.node
    if not isinstance(node, BaseNode):
        msg = f"node_to_hit takes a NodeWithScore or a node, got {type(node).__name__}"
        raise InvalidInputError(msg)
    return hit_from_metadata(
        node.node_id,
        node.get_content(),
        node.metadata,
        score=score,
        reserved=RESERVED_KEYS,
        what=f"node {node.node_id!r} (node_to_hit converts only nodes made by RemyRetriever "
        "or hits_to_nodes)",
    )

""":class:`RemyVectorStore`: remy-retriever as a LlamaIndex vector store.

Each node is stored as one remy document (remy embeds and indexes it itself, for dense
and BM25 search). A node parser's node (``ref_doc_id`` set) is stored as one chunk, never
re-chunked; a whole ``Document`` inserted as a node is chunked by remy. Its remy id is
the node id, except for a random (UUID) node id: then it derives from the source document
and the node's place in it (:func:`~.convert.stable_id`: ``"<ref doc id or file
path>[@p<page>]@<start_char_idx>"``, else a content hash), so inserting pages one by one
keeps every page, and loading and indexing the same files again replaces the nodes
instead of adding copies. The node id, ``ref_doc_id`` and ``PREVIOUS`` / ``NEXT`` node
ids are kept in the metadata keys ``li_node_id``, ``ref_doc_id``, ``li_prev`` and
``li_next`` (``li_start``: the node's ``start_char_idx``; the engine stores it as the
document's ``text_start``, so a hit's citation and its ``start_char_idx`` /
``end_char_idx`` are offsets in the source document), and nodes
come back with their LlamaIndex ids. User metadata follows the rule of :mod:`.convert`:
it comes back exactly, and a user key named like one of these is stored escaped
(``~ref_doc_id``), so it never changes what ``delete`` removes.
"""

from __future__ import annotations

import asyncio
import os
from collections.abc import Mapping, Sequence
from dataclasses import replace
from typing import Any

from llama_index.core.base.embeddings.base import BaseEmbedding
from llama_index.core.bridge.pydantic import PrivateAttr
from llama_index.core.schema import (
    BaseNode,
    MetadataMode,
    NodeRelationship,
    ObjectType,
    RelatedNodeInfo,
    RelatedNodeType,
    TextNode,
)
from llama_index.core.vector_stores.types import (
    BasePydanticVectorStore,
    FilterCondition,
    FilterOperator,
    MetadataFilters,
    VectorStoreQuery,
    VectorStoreQueryMode,
    VectorStoreQueryResult,
)
from llama_index.retrievers.remy import RemyDocumentStore
from llama_index.retrievers.remy.convert import chunk_to_node, hit_to_node

from remy_retriever import Document, Embedder, InvalidFilterError, InvalidInputError, Retriever
from remy_retriever.integration import Piece, content_digest, open_engine, piece_place

from .convert import (
    flatten_metadata,
    from_remy_metadata,
    is_split_node,
    piece_of,
    unique_documents,
    whole_span,
)

__all__ = ["NoEmbedding", "RemyVectorStore", "filters_to_where"]

_MODES = {
    VectorStoreQueryMode.DEFAULT: "semantic",
    VectorStoreQueryMode.SPARSE: "lexical",
    VectorStoreQueryMode.TEXT_SEARCH: "lexical",
    VectorStoreQueryMode.HYBRID: "hybrid",
}
_OPERATORS = {
    FilterOperator.EQ: "$eq",
    FilterOperator.NE: "$ne",
    FilterOperator.GT: "$gt",
    FilterOperator.GTE: "$gte",
    FilterOperator.LT: "$lt",
    FilterOperator.LTE: "$lte",
    FilterOperator.IN: "$in",
    FilterOperator.NIN: "$nin",
    FilterOperator.CONTAINS: "$contains",
}
_CONDITIONS = {FilterCondition.AND: "$and", FilterCondition.OR: "$or"}
#: The list operators over several items, and how their ``$contains`` combine.
_ITEMS_OF = {FilterOperator.ANY: "$or", FilterOperator.ALL: "$and"}


def _items_where(key: str, value: Any, operator: FilterOperator) -> dict[str, Any]:
    items = list(value) if isinstance(value, (list, tuple)) else [value]
    if not items:
        msg = f"metadata filter {operator.name} on {key!r} takes a non-empty list of values"
        raise InvalidFilterError(msg)
    parts = [{key: {"$contains": item}} for item in items]
    return parts[0] if len(parts) == 1 else {_ITEMS_OF[operator]: parts}


def filters_to_where(filters: MetadataFilters | None) -> dict[str, Any] | None:
    """LlamaIndex ``MetadataFilters`` as a remy ``where``. EQ, NE, GT, GTE, LT, LTE, IN,
    NIN, CONTAINS (a list of strings holds the value), ANY and ALL (it holds one, or every
    one, of the values), combined with AND / OR (nested too), have an equivalent; any
    other operator or condition raises :class:`~remy_retriever.InvalidFilterError`."""
    if filters is None:
        return None
    parts: list[dict[str, Any]] = []
    for item in filters.filters:
        if isinstance(item, MetadataFilters):
            inner = filters_to_where(item)
            if inner is not None:
                parts.append(inner)
            continue
        operator = FilterOperator(item.operator)
        if operator in _ITEMS_OF:
            parts.append(_items_where(item.key, item.value, operator))
            continue
        op = _OPERATORS.get(operator)
        if op is None:
            msg = (
                f"metadata filter on {item.key!r} uses operator {item.operator!s}, which remy "
                f"cannot run; use one of {', '.join(o.name for o in (*_OPERATORS, *_ITEMS_OF))}"
            )
            raise InvalidFilterError(msg)
        value = list(item.value) if isinstance(item.value, (list, tuple)) else item.value
        parts.append({item.key: {op: value}})
    if not parts:
        return None
    if len(parts) == 1:
        return parts[0]
    condition = _CONDITIONS.get(FilterCondition(filters.condition or FilterCondition.AND))
    if condition is None:
        msg = f"metadata filters use condition {filters.condition!s}; remy supports AND and OR"
        raise InvalidFilterError(msg)
    return {condition: parts}


class NoEmbedding(BaseEmbedding):
    """An embed model for indexes over :class:`RemyVectorStore`: remy embeds the text with
    its own embedder, so the index's embeddings are never used. This one costs nothing
    (a one-number vector) and needs no API key."""

    def _get_query_embedding(self, query: str) -> list[float]:
        return [0.0]

    async def _aget_query_embedding(self, query: str) -> list[float]:
        return [0.0]

    def _get_text_embedding(self, text: str) -> list[float]:
        return [0.0]


class RemyVectorStore(BasePydanticVectorStore):
    """A LlamaIndex vector store on a remy :class:`~remy_retriever.Retriever`.

    Query modes: ``DEFAULT`` -> remy's semantic search, ``SPARSE`` and ``TEXT_SEARCH`` ->
    lexical (BM25), ``HYBRID`` -> hybrid with ``alpha`` passed on when given. The query text
    is what is searched (remy embeds it), so pass ``embed_model=NoEmbedding()`` to the
    index. ``MetadataFilters`` become a ``where`` (:func:`filters_to_where`).

    Usage:
        >>> store = RemyVectorStore(path="./remy_data", collection="docs")
        >>> index = VectorStoreIndex.from_documents(
        ...     docs, storage_context=StorageContext.from_defaults(vector_store=store),
        ...     embed_model=NoEmbedding())
        >>> nodes = index.as_retriever(vector_store_query_mode="hybrid").retrieve("install")
    """

    stores_text: bool = True
    is_embedding_query: bool = False
    flat_metadata: bool = False
    _retriever: Retriever = PrivateAttr()

    def __init__(
        self,
        retriever: Retriever | None = None,
        *,
        path: str | os.PathLike[str] | None = None,
        client: Any = None,
        collection: str | None = None,
        embedder: Embedder | str | None = None,
        **kwargs: Any,
    ) -> None:
        super().__init__(**kwargs)
        self._retriever, _ = open_engine(
            retriever,
            owner="RemyVectorStore",
            path=path,
            client=client,
            collection=collection,
            embedder=embedder,
        )

    @classmethod
    def class_name(cls) -> str:
        return "RemyVectorStore"

    @property
    def client(self) -> Retriever:
        """The remy engine."""
        return self._retriever

    # -- writing ----------------------------------------------------------------------

    def add(self, nodes: Sequence[BaseNode], **add_kwargs: Any) -> list[str]:
        """Store the nodes (each one remy document); returns their node ids. A node
        already stored under the same id (see the module docstring) is replaced. All are
        checked before anything is written."""
        self._retriever.add(unique_documents([_node_fields(node) for node in nodes]))
        return [node.node_id for node in nodes]

    async def async_add(self, nodes: Sequence[BaseNode], **kwargs: Any) -> list[str]:
        return await asyncio.to_thread(self.add, nodes, **kwargs)

    def delete(self, ref_doc_id: str, **delete_kwargs: Any) -> None:
        """Delete every node of the source document ``ref_doc_id`` from all modes."""
        ids = self._retriever.document_ids({"ref_doc_id": ref_doc_id})
        if ids:
            self._retriever.delete(ids)

    async def adelete(self, ref_doc_id: str, **delete_kwargs: Any) -> None:
        await asyncio.to_thread(self.delete, ref_doc_id)

    def delete_nodes(
        self,
        node_ids: list[str] | None = None,
        filters: MetadataFilters | None = None,
        **delete_kwargs: Any,
    ) -> None:
        """Delete the given nodes, or those matching ``filters``."""
        ids = [] if node_ids is not None and not node_ids else self._ids(node_ids, filters)
        if ids:
            self._retriever.delete(ids)

    async def adelete_nodes(
        self,
        node_ids: list[str] | None = None,
        filters: MetadataFilters | None = None,
        **delete_kwargs: Any,
    ) -> None:
        await asyncio.to_thread(self.delete_nodes, node_ids, filters)

    def clear(self) -> None:
        """Delete every node."""
        ids = self._retriever.document_ids()
        if ids:
            self._retriever.delete(ids)

    async def aclear(self) -> None:
        await asyncio.to_thread(self.clear)

    # -- reading ----------------------------------------------------------------------

    def _ids(self, node_ids: list[str] | None, filters: MetadataFilters | None) -> list[str]:
        if node_ids is None and filters is None:
            msg = "give node_ids or filters (or call clear() to delete everything)"
            raise InvalidInputError(msg)
        where = filters_to_where(filters)
        if node_ids is not None:
            by_id = {"li_node_id": {"$in": list(node_ids)}}
            where = by_id if where is None else {"$and": [where, by_id]}
        return self._retriever.document_ids(where)

    def get_nodes(
        self, node_ids: list[str] | None = None, filters: MetadataFilters | None = None
    ) -> list[BaseNode]:
        """The stored nodes (text, metadata, relationships) by id and/or filter."""
        if node_ids is not None and not node_ids:
            return []
        if node_ids is None and filters is None:
            ids = self._retriever.document_ids()
        else:
            ids = self._ids(node_ids, filters)
        stored = self._retriever.get_documents(ids)
        nodes: list[BaseNode] = [_document_node(stored[i].document) for i in ids if i in stored]
        if node_ids is not None:
            order = {node_id: i for i, node_id in enumerate(node_ids)}
            nodes.sort(key=lambda node: order.get(node.node_id, len(order)))
        return nodes

    async def aget_nodes(
        self, node_ids: list[str] | None = None, filters: MetadataFilters | None = None
    ) -> list[BaseNode]:
        return await asyncio.to_thread(self.get_nodes, node_ids, filters)

    def docstore(self) -> RemyDocumentStore:
        """A live, read-only docstore on this store: give it to
        ``PrevNextNodePostprocessor(docstore=...)``. It reads each node when asked (always
        current, any size): a stored node by its node id, any other chunk by its chunk
        id, each as :meth:`query` returns it, with ``PREVIOUS`` / ``NEXT``."""
        return RemyDocumentStore(self._retriever, lookup=self._live_nodes)

    def _live_nodes(self, ids: Sequence[str]) -> dict[str, BaseNode]:
        """The nodes among ``ids``: node ids of stored nodes first, then chunk ids."""
        found: dict[str, BaseNode] = {}
        for start in range(0, len(ids), 500):  # a filter's ``$in`` list is bounded
            found.update(
                (node.node_id, node) for node in self.get_nodes(list(ids[start : start + 500]))
            )
        chunks = self._retriever.get_chunks([i for i in ids if i not in found])
        for cid, chunk in chunks.items():
            decoded = replace(chunk, metadata=_user_metadata(chunk.metadata))
            found[cid] = _restore(
                chunk_to_node(decoded), chunk.metadata, chunk.citation.chunk_count
            )
        return {i: found[i] for i in ids if i in found}

    def query(self, query: VectorStoreQuery, **kwargs: Any) -> VectorStoreQueryResult:
        """Search with the query text in the mode's remy mode (see the class docstring)."""
        mode = _MODES.get(query.mode)
        if mode is None:
            msg = (
                f"query mode {query.mode.value!r} has no remy equivalent; use default, "
                "sparse, text_search or hybrid"
            )
            raise InvalidInputError(msg)
        if not query.query_str:
            msg = "RemyVectorStore searches text: the query needs query_str (remy embeds it)"
            raise InvalidInputError(msg)
        options: dict[str, Any] = {"mode": mode, "k": query.similarity_top_k}
        if mode == "hybrid" and query.alpha is not None:
            options["alpha"] = query.alpha
            options["fusion"] = "convex"
        where = filters_to_where(query.filters)
        if where is not None:
            options["where"] = where
        if query.node_ids:
            node_filter = {"$in": list(query.node_ids)}
            options["where"] = (
                {"$and": [where, {"li_node_id": node_filter}]}
                if where
                else {"li_node_id": node_filter}
            )
        hits = self._retriever.search(query.query_str, **options)
        # The user metadata from the document records, which hold it exactly (a search
        # hit's copy can come back with a float off in its last digit).
        stored = self._retriever.get_documents(list({h.citation.document_id for h in hits}))
        nodes: list[BaseNode] = []
        for hit in hits:
            found = stored.get(hit.citation.document_id)
            own = found.document.metadata if found is not None else hit.metadata
            node = hit_to_node(replace(hit, metadata=_user_metadata(own))).node
            assert isinstance(node, TextNode)
            nodes.append(_restore(node, hit.metadata, hit.citation.chunk_count))
        return VectorStoreQueryResult(
            nodes=nodes,
            similarities=[hit.score for hit in hits],
            ids=[node.node_id for node in nodes],
        )

    async def aquery(self, query: VectorStoreQuery, **kwargs: Any) -> VectorStoreQueryResult:
        return await asyncio.to_thread(self.query, query, **kwargs)


def _node_fields(node: BaseNode) -> tuple[Piece, dict[str, Any]]:
    """What identifies ``node`` and the fields of its remy document."""
    start = getattr(node, "start_char_idx", None) if node.ref_doc_id is not None else None
    meta = flatten_metadata(node.metadata)
    text = node.get_content(metadata_mode=MetadataMode.NONE)
    piece = piece_of(
        node.node_id,
        node.metadata,
        start if isinstance(start, int) and is_split_node(node) else None,
        ref_doc_id=node.ref_doc_id,
        digest=content_digest(text, meta),
    )
    meta["li_node_id"] = node.node_id
    if node.ref_doc_id is not None:
        meta["ref_doc_id"] = node.ref_doc_id
    if isinstance(start, int):
        meta["li_start"] = start
    for key, relation in (("li_prev", node.prev_node), ("li_next", node.next_node)):
        if relation is not None:
            meta[key] = relation.node_id
    title = node.metadata.get("title") or node.metadata.get("file_name")
    path = node.metadata.get("file_path")
    fields = {
        "text": text,
        "title": title if isinstance(title, str) else None,
        "path": path if isinstance(path, str) else None,
        "metadata": meta,
        "chunk_spans": whole_span(text) if is_split_node(node) else None,  # never re-chunked
    }
    if fields["chunk_spans"] is not None:  # stored alone: the engine keeps its place
        fields.update(
            piece_place(node.metadata, start if isinstance(start, int) else 0, title, text)
        )
    return piece, fields


def _node_document(node: BaseNode) -> Document:
    """``node`` as the remy document :meth:`RemyVectorStore.add` stores for it alone."""
    return unique_documents([_node_fields(node)])[0]


def _relationships(meta: Mapping[str, Any]) -> dict[NodeRelationship, RelatedNodeType]:
    out: dict[NodeRelationship, RelatedNodeType] = {}
    if isinstance(meta.get("ref_doc_id"), str):
        out[NodeRelationship.SOURCE] = RelatedNodeInfo(
            node_id=meta["ref_doc_id"], node_type=ObjectType.DOCUMENT
        )
    for key, rel in (("li_prev", NodeRelationship.PREVIOUS), ("li_next", NodeRelationship.NEXT)):
        if isinstance(meta.get(key), str):
            out[rel] = RelatedNodeInfo(node_id=meta[key], node_type=ObjectType.TEXT)
    return out


def _user_metadata(meta: Mapping[str, Any]) -> dict[str, Any]:
    return from_remy_metadata(meta)


def _document_node(document: Document) -> TextNode:
    return TextNode(
        id_=str(document.metadata.get("li_node_id", document.id)),
        text=document.text,
        metadata=_user_metadata(document.metadata),
        relationships=_relationships(document.metadata),
    )


def _restore(node: TextNode, own: Mapping[str, Any], chunk_count: int | None) -> TextNode:
    """A search hit's or chunk's node (its metadata: the flat keys and the user's,
    decoded) with the stored node's id (when remy kept it in one chunk) and
    relationships; ``own`` is the stored metadata."""
    if chunk_count == 1 and isinstance(own.get("li_node_id"), str):
        node.relationships = _relationships(own)  # the stored node's own neighbours
    else:  # a chunk remy cut: PREVIOUS / NEXT are its neighbour chunks (docstore() has them)
        source = _relationships(own).get(NodeRelationship.SOURCE)
        if source is not None:
            node.relationships[NodeRelationship.SOURCE] = source
    if chunk_count == 1 and isinstance(own.get("li_node_id"), str):
        node.id_ = own["li_node_id"]
    return node

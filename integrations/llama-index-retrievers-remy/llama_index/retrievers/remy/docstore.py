""":class:`RemyDocumentStore`: a live, read-only LlamaIndex docstore on a remy store.

LlamaIndex's docstore users (``PrevNextNodePostprocessor``, ``AutoPrevNextNodePostprocessor``,
``index.ref_doc_info``...) read nodes by id. This docstore holds nothing: each lookup reads
the chunk from the remy store at that moment (``Retriever.get_chunks``), so it sees every
write made since it was created, costs the same at ten nodes or ten million, and knows
every chunk however it was written (``Retriever.add``, ``Retriever.ingest``, a vector
store). Nodes come back as :class:`~llama_index.retrievers.remy.RemyRetriever` makes them:
the chunk id as ``id_``, the citation in ``metadata``, ``PREVIOUS`` / ``NEXT`` pointing at
the neighbouring chunks (which this docstore resolves in turn), and no score.

It is read-only: the remy store is written through remy (``Retriever.add`` /
``Retriever.ingest``) or ``RemyVectorStore``; every write method raises
:class:`~remy_retriever.InvalidInputError` saying so.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Iterator, Mapping, Sequence
from typing import Any, NoReturn

from llama_index.core.schema import BaseNode
from llama_index.core.storage.docstore.types import BaseDocumentStore, RefDocInfo
from llama_index.core.storage.kvstore.types import DEFAULT_BATCH_SIZE

from remy_retriever import InvalidInputError, Retriever
from remy_retriever.integration import chunk_id

from .convert import chunk_to_node

__all__ = ["NodeLookup", "RemyDocumentStore"]

#: Node ids -> the nodes found among them, keyed by the id asked for.
NodeLookup = Callable[[Sequence[str]], Mapping[str, BaseNode]]

_HOW_TO_WRITE = (
    "is read-only: it reads nodes from the remy store on demand. Write through remy "
    "instead (Retriever.add / Retriever.ingest, or RemyVectorStore: index.insert, "
    "index.delete_ref_doc), and leave this docstore out of StorageContext.from_defaults "
    "when an index needs a docstore it can write"
)


class RemyDocumentStore(BaseDocumentStore):
    """A read-only docstore that looks every node up in the remy store when asked.

    ``where``: only chunks matching this filter are found (give a tenant's docstore the
    tenant's filter; :meth:`RemyRetriever.docstore` passes the retriever's own).
    ``lookup``: how ids become nodes, for a caller with its own node form
    (``RemyVectorStore.docstore`` passes its own); by default each id is a remy chunk id,
    looked up with ``Retriever.get_chunks`` and converted by
    :func:`~llama_index.retrievers.remy.convert.chunk_to_node`.

    Usage:
        >>> docstore = RemyDocumentStore(engine)           # or RemyRetriever(...).docstore()
        >>> post = PrevNextNodePostprocessor(docstore=docstore, num_nodes=1, mode="both")
    """

    def __init__(
        self,
        retriever: Retriever,
        *,
        where: Mapping[str, Any] | None = None,
        lookup: NodeLookup | None = None,
    ) -> None:
        if not isinstance(retriever, Retriever):
            msg = (
                f"RemyDocumentStore takes a remy Retriever, got {type(retriever).__name__}; "
                "pass Retriever(path, collection=...) or use RemyRetriever(...).docstore()"
            )
            raise InvalidInputError(msg)
        self._retriever = retriever
        self._where = None if where is None else dict(where)
        retriever.get_chunks([], where=self._where)  # a bad filter fails now, not at use
        self._lookup: NodeLookup = lookup if lookup is not None else self._chunk_nodes

    @property
    def client(self) -> Retriever:
        """The remy engine the nodes are read from."""
        return self._retriever

    @property
    def where(self) -> dict[str, Any] | None:
        """The filter every lookup runs under (``None``: the whole store)."""
        return None if self._where is None else dict(self._where)

    def _chunk_nodes(self, ids: Sequence[str]) -> dict[str, BaseNode]:
        chunks = self._retriever.get_chunks(list(ids), where=self._where)
        return {cid: chunk_to_node(chunk) for cid, chunk in chunks.items()}

    def _read_only(self, method: str) -> NoReturn:
        msg = f"RemyDocumentStore.{method}() refused: this docstore {_HOW_TO_WRITE}"
        raise InvalidInputError(msg)

    @staticmethod
    def _not_found(doc_id: str) -> InvalidInputError:
        msg = (
            f"doc_id {doc_id!r} not found: the remy store holds no chunk with this id that "
            "this docstore may read (ids are chunk ids like 'guide.md#3', or the node ids "
            "of RemyVectorStore)"
        )
        return InvalidInputError(msg)

    # -- reading ------------------------------------------------------------------------

    @property
    def docs(self) -> Mapping[str, BaseNode]:  # type: ignore[override]
        """Every node, as a live read-only mapping: a key is looked up when read, and
        iterating walks the store a document at a time (nothing is copied up front)."""
        return _LiveNodes(self)

    def get_document(self, doc_id: str, raise_error: bool = True) -> BaseNode | None:
        """The node with this id, read from the store now. A missing id raises
        :class:`~remy_retriever.InvalidInputError` (a ``ValueError``, as LlamaIndex's own
        docstores raise) or, with ``raise_error=False``, gives ``None``."""
        if not isinstance(doc_id, str):
            msg = f"doc_id must be a str, got {type(doc_id).__name__}"
            raise InvalidInputError(msg)
        node = self._lookup([doc_id]).get(doc_id)
        if node is None and raise_error:
            raise self._not_found(doc_id)
        return node

    async def aget_document(self, doc_id: str, raise_error: bool = True) -> BaseNode | None:
        return await asyncio.to_thread(self.get_document, doc_id, raise_error)

    def get_nodes(self, node_ids: list[str], raise_error: bool = True) -> list[BaseNode]:
        """The nodes with these ids, in order, read in one go (missing ones raise, or
        are left out with ``raise_error=False``)."""
        found = self._lookup(list(node_ids))
        out: list[BaseNode] = []
        for node_id in node_ids:
            node = found.get(node_id)
            if node is None:
                if raise_error:
                    raise self._not_found(node_id)
                continue
            out.append(node)
        return out

    async def aget_nodes(self, node_ids: list[str], raise_error: bool = True) -> list[BaseNode]:
        return await asyncio.to_thread(self.get_nodes, node_ids, raise_error)

    def document_exists(self, doc_id: str) -> bool:
        return self.get_document(doc_id, raise_error=False) is not None

    async def adocument_exists(self, doc_id: str) -> bool:
        return await asyncio.to_thread(self.document_exists, doc_id)

    def get_ref_doc_info(self, ref_doc_id: str) -> RefDocInfo | None:
        """The remy document ``ref_doc_id``: the ids of its nodes in order and its
        metadata (the user's keys); ``None`` when it is not stored (or not in
        ``where``)."""
        first = self._retriever.get_chunks([chunk_id(ref_doc_id, 0)], where=self._where)
        chunk = first.get(chunk_id(ref_doc_id, 0))
        if chunk is None:
            return None
        count = chunk.citation.chunk_count or 1
        nodes = self._lookup([chunk_id(ref_doc_id, i) for i in range(count)])
        return RefDocInfo(
            node_ids=[node.node_id for node in nodes.values()], metadata=dict(chunk.metadata)
        )

    async def aget_ref_doc_info(self, ref_doc_id: str) -> RefDocInfo | None:
        return await asyncio.to_thread(self.get_ref_doc_info, ref_doc_id)

    def get_all_ref_doc_info(self) -> dict[str, RefDocInfo] | None:
        """Every stored document's :class:`RefDocInfo` (reads the whole store: for one
        document use :meth:`get_ref_doc_info`)."""
        out: dict[str, RefDocInfo] = {}
        for document_id in self._retriever.document_ids(self._where):
            info = self.get_ref_doc_info(document_id)
            if info is not None:
                out[document_id] = info
        return out

    async def aget_all_ref_doc_info(self) -> dict[str, RefDocInfo] | None:
        return await asyncio.to_thread(self.get_all_ref_doc_info)

    def get_document_hash(self, doc_id: str) -> str | None:
        """``None``: remy keeps its own content hashes, not LlamaIndex's."""
        return None

    async def aget_document_hash(self, doc_id: str) -> str | None:
        return None

    def get_all_document_hashes(self) -> dict[str, str]:
        """Empty: remy keeps its own content hashes, not LlamaIndex's."""
        return {}

    async def aget_all_document_hashes(self) -> dict[str, str]:
        return {}

    # -- writing: refused ---------------------------------------------------------------

    def add_documents(
        self,
        docs: Sequence[BaseNode],
        allow_update: bool = True,
        batch_size: int = DEFAULT_BATCH_SIZE,
        store_text: bool = True,
    ) -> None:
        self._read_only("add_documents")

    async def async_add_documents(
        self,
        docs: Sequence[BaseNode],
        allow_update: bool = True,
        batch_size: int = DEFAULT_BATCH_SIZE,
        store_text: bool = True,
    ) -> None:
        self._read_only("async_add_documents")

    def delete_document(self, doc_id: str, raise_error: bool = True) -> None:
        self._read_only("delete_document")

    async def adelete_document(self, doc_id: str, raise_error: bool = True) -> None:
        self._read_only("adelete_document")

    def delete_ref_doc(self, ref_doc_id: str, raise_error: bool = True) -> None:
        self._read_only("delete_ref_doc")

    async def adelete_ref_doc(self, ref_doc_id: str, raise_error: bool = True) -> None:
        self._read_only("adelete_ref_doc")

    def set_document_hash(self, doc_id: str, doc_hash: str) -> None:
        self._read_only("set_document_hash")

    async def aset_document_hash(self, doc_id: str, doc_hash: str) -> None:
        self._read_only("aset_document_hash")

    def set_document_hashes(self, doc_hashes: dict[str, str]) -> None:
        self._read_only("set_document_hashes")

    async def aset_document_hashes(self, doc_hashes: dict[str, str]) -> None:
        self._read_only("aset_document_hashes")


class _LiveNodes(Mapping[str, BaseNode]):
    """:attr:`RemyDocumentStore.docs`: reads through to the store on every access."""

    def __init__(self, store: RemyDocumentStore) -> None:
        self._store = store

    def __getitem__(self, key: str) -> BaseNode:
        node = self._store.get_document(key, raise_error=False)
        if node is None:
            raise KeyError(key)
        return node

    def __contains__(self, key: object) -> bool:
        return isinstance(key, str) and self._store.document_exists(key)

    def __iter__(self) -> Iterator[str]:
        store = self._store
        for document_id in store.client.document_ids(store.where):
            info = store.get_ref_doc_info(document_id)
            yield from info.node_ids if info is not None else ()

    def __len__(self) -> int:
        if self._store.where is None:
            return self._store.client.count()
        return sum(1 for _ in self)

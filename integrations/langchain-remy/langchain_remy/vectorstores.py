""":class:`RemyVectorStore`: remy-retriever as a LangChain ``VectorStore``.

What goes in comes back: ``get_by_ids`` and the ``similarity_search`` family return each
stored Document with its id, its whole text and its loader metadata (decoded by
:func:`~langchain_remy.ingest.metadata_from_remy`), one per document, best first. For
cited passages (chunk text, ``citation``, scores) use :meth:`RemyVectorStore.as_retriever`,
which returns a :class:`~langchain_remy.RemyRetriever` (hybrid by default).
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable, Sequence
from typing import Any, Literal

from langchain_core.documents import Document
from langchain_core.embeddings import Embeddings
from langchain_core.vectorstores import VectorStore

from remy_retriever import Embedder, InvalidInputError, Retriever
from remy_retriever.integration import FIELD_OPTIONS, Reranker, open_engine

from .ingest import convert, metadata_from_remy
from .retrievers import RemyRetriever

__all__ = ["RemyVectorStore"]

Mode = Literal["semantic", "lexical", "hybrid"]
_MODES = ("semantic", "lexical", "hybrid")
#: Hits fetched per wanted document: a long document can fill several of the top hits.
_OVERFETCH = 4


def _check_mode(mode: object) -> Mode:
    if mode not in _MODES:
        msg = f"RemyVectorStore mode must be one of {list(_MODES)}, got {mode!r}"
        raise InvalidInputError(msg)
    return mode  # type: ignore[return-value]


class RemyVectorStore(VectorStore):
    """A LangChain vector store on a remy :class:`~remy_retriever.Retriever` (hybrid BM25 +
    dense over Chroma).

    Documents are converted by :func:`~langchain_remy.to_remy_documents` (its rules for
    ids and metadata apply: one stored document per Document, metadata given back
    exactly) and embedded by the engine's own embedder. Ids are stable, so
    ``langchain_core.indexing.index`` works with incremental and full cleanup.
    ``mode`` is the default search mode of ``similarity_search`` (``"hybrid"``); pass
    ``mode=`` per call to change it, and ``filter=`` (a remy ``where``) to filter.

        >>> store = RemyVectorStore(path="./remy_data", collection="docs")
        >>> store.add_documents(splitter.split_documents(DirectoryLoader("docs").load()))
        >>> store.similarity_search("install on linux", k=3, filter={"tenant": "a"})
        >>> retriever = store.as_retriever(search_kwargs={"k": 4})   # cited hybrid hits
    """

    def __init__(
        self,
        retriever: Retriever | None = None,
        *,
        mode: Mode = "hybrid",
        path: str | os.PathLike[str] | None = None,
        client: Any = None,
        collection: str | None = None,
        embedder: Embedder | str | None = None,
        lexical_path: str | os.PathLike[str] | None = None,
        reranker: Reranker | str | None = None,
    ) -> None:
        self.mode = _check_mode(mode)
        self.retriever, self._opened = open_engine(
            retriever,
            owner="RemyVectorStore",
            path=path,
            client=client,
            collection=collection,
            embedder=embedder,
            lexical_path=lexical_path,
            reranker=reranker,
        )

    @property
    def embeddings(self) -> Embeddings | None:
        """``None``: remy embeds with its engine's :class:`~remy_retriever.Embedder`."""
        return None

    # -- writing ----------------------------------------------------------------------

    def add_documents(self, documents: list[Document], **kwargs: Any) -> list[str]:
        """Add or replace Documents; returns their ids, one per Document (``ids=`` or
        ``doc.id`` when given, else derived from the source, page and start offset, or
        the content: see :func:`~langchain_remy.to_remy_documents`), so the same
        Document added again, in any call or batch, replaces itself. Unchanged Documents
        are skipped without re-embedding. Metadata that cannot be stored exactly raises
        :class:`~remy_retriever.InvalidDocumentError` and nothing is written."""
        ids = kwargs.pop("ids", None)
        batch, assigned = convert(documents, ids=ids, group=False)
        if batch:
            self.retriever.add(batch)
        return assigned

    def add_texts(
        self,
        texts: Iterable[str],
        metadatas: list[dict[Any, Any]] | None = None,
        *,
        ids: list[str] | None = None,
        **kwargs: Any,
    ) -> list[str]:
        """Add texts with their metadata and ids (see :meth:`add_documents`)."""
        texts = list(texts)
        if metadatas is not None and len(metadatas) != len(texts):
            msg = f"add_texts got {len(metadatas)} metadatas for {len(texts)} texts; pass one each"
            raise InvalidInputError(msg)
        docs = [
            Document(page_content=text, metadata=dict(metadatas[i]) if metadatas else {})
            for i, text in enumerate(texts)
        ]
        return self.add_documents(docs, ids=ids, **kwargs)

    def delete(self, ids: list[str] | None = None, **kwargs: Any) -> bool | None:
        """Delete these documents from every index; unknown ids are ignored."""
        if ids is None:
            msg = (
                "RemyVectorStore.delete needs the ids to delete, got None; pass "
                "ids=store.retriever.document_ids() to delete everything"
            )
            raise InvalidInputError(msg)
        if ids:
            self.retriever.delete(list(ids))
        return True

    # -- reading ----------------------------------------------------------------------

    def get_by_ids(self, ids: Sequence[str], /) -> list[Document]:
        """The stored Documents with these ids, in the order given; unknown ids are
        left out."""
        stored = self.retriever.get_documents(list(ids))
        out: list[Document] = []
        for doc_id in dict.fromkeys(ids):
            found = stored.get(doc_id)
            if found is not None:
                doc = found.document
                metadata = metadata_from_remy(doc.metadata)
                out.append(Document(id=doc.id, page_content=doc.text, metadata=metadata))
        return out

    def similarity_search_with_score(
        self, query: str, k: int = 4, filter: dict[str, Any] | None = None, **kwargs: Any
    ) -> list[tuple[Document, float]]:
        """The ``k`` best Documents with their remy score (higher is better: cosine in
        ``semantic``, the fused score in ``hybrid``, BM25 in ``lexical``)."""
        mode = _check_mode(kwargs.pop("mode", self.mode))
        if filter is not None:
            kwargs["where"] = filter
        hits = self.retriever.search(query, mode=mode, k=k * _OVERFETCH, **kwargs)
        best: dict[str, float] = {}
        for hit in hits:
            best.setdefault(hit.citation.document_id, hit.score)
        top = list(best.items())[:k]
        docs = {doc.id: doc for doc in self.get_by_ids([doc_id for doc_id, _ in top])}
        return [(docs[doc_id], score) for doc_id, score in top if doc_id in docs]

    def similarity_search(
        self, query: str, k: int = 4, filter: dict[str, Any] | None = None, **kwargs: Any
    ) -> list[Document]:
        """The ``k`` best Documents for ``query``, best first."""
        pairs = self.similarity_search_with_score(query, k, filter=filter, **kwargs)
        return [doc for doc, _ in pairs]

    def _select_relevance_score_fn(self) -> Callable[[float], float]:
        if self.mode == "semantic":
            return lambda score: min(1.0, max(0.0, (score + 1.0) / 2.0))
        if self.mode == "lexical":
            return lambda score: max(0.0, score) / (1.0 + max(0.0, score))
        return lambda score: min(1.0, max(0.0, score))

    def _similarity_search_with_relevance_scores(
        self, query: str, k: int = 4, **kwargs: Any
    ) -> list[tuple[Document, float]]:
        mode = _check_mode(kwargs.get("mode", self.mode))
        previous, self.mode = self.mode, mode
        try:
            relevance = self._select_relevance_score_fn()
        finally:
            self.mode = previous
        pairs = self.similarity_search_with_score(query, k, **kwargs)
        return [(doc, relevance(score)) for doc, score in pairs]

    def as_retriever(self, **kwargs: Any) -> RemyRetriever:  # type: ignore[override]
        """A :class:`~langchain_remy.RemyRetriever` on the same engine: cited passages,
        hybrid by default. ``search_kwargs`` may hold ``k``, ``filter`` (a ``where``) and
        any other remy search option."""
        search_type = kwargs.pop("search_type", "similarity")
        if search_type != "similarity":
            msg = (
                f"RemyVectorStore.as_retriever supports search_type='similarity' only, got "
                f"{search_type!r}; choose the ranking with search_kwargs={{'mode': ...}}"
            )
            raise InvalidInputError(msg)
        search_kwargs = dict(kwargs.pop("search_kwargs", None) or {})
        if "filter" in search_kwargs:
            search_kwargs["where"] = search_kwargs.pop("filter")
        fields = {name: search_kwargs.pop(name) for name in FIELD_OPTIONS if name in search_kwargs}
        return RemyRetriever(self.retriever, **kwargs, **fields, search_kwargs=search_kwargs)

    @classmethod
    def from_texts(
        cls,
        texts: list[str],
        embedding: Embeddings | None = None,
        metadatas: list[dict[Any, Any]] | None = None,
        *,
        ids: list[str] | None = None,
        **kwargs: Any,
    ) -> RemyVectorStore:
        """A store opened with ``kwargs`` (``retriever=`` or ``path=``/``client=`` ...)
        holding ``texts``. ``embedding`` must be ``None``: remy embeds with its own
        embedder (pass ``embedder=``)."""
        if embedding is not None:
            msg = (
                f"RemyVectorStore embeds with remy's own embedder, got a LangChain "
                f"{type(embedding).__name__}; pass embedding=None and embedder='<model name>'"
            )
            raise InvalidInputError(msg)
        store = cls(**kwargs)
        try:
            store.add_texts(texts, metadatas, ids=ids)
        except Exception:
            if store._opened:  # do not leave the store we just opened locked
                store.retriever.close()
            raise
        return store

    @classmethod
    def from_documents(
        cls, documents: list[Document], embedding: Embeddings | None = None, **kwargs: Any
    ) -> RemyVectorStore:
        """A store opened with ``kwargs`` holding ``documents`` (see :meth:`from_texts`)."""
        if embedding is not None:
            return cls.from_texts([], embedding)  # raises the same error
        ids = kwargs.pop("ids", None)
        store = cls(**kwargs)
        try:
            store.add_documents(documents, ids=ids)
        except Exception:
            if store._opened:
                store.retriever.close()
            raise
        return store

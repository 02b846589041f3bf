"""The systems the benchmarks compare ours with, defined once: bm25s; LangChain's
BM25Retriever on rank_bm25; LangChain EnsembleRetriever (BM25 + Chroma); LlamaIndex
QueryFusionRetriever (Chroma + BM25). The quality and scale suites build them here, over
the chunks and vectors ours stores, with the adapters that hand each peer the cached
vectors (so embedding cost is equal and excluded). Each builder returns a
``search(query) -> [(chunk id, score), ...]`` callable. The hybrids build their own
Chroma collection under ``root``, or with ``shared`` query ours' (same chunks, vectors,
text). Their packages are only in benchmarks/requirements.txt.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import numpy as np

CANDIDATES = 100

Search = Callable[[str], list[tuple[str, float]]]

# name -> (label, python modules it needs)
SYSTEMS: dict[str, tuple[str, tuple[str, ...]]] = {
    "ours": ("remy lexical / semantic / hybrid (default, rrf, plain convex)", ()),
    "ours-e2e": (
        "remy hybrid (default fusion), real MiniLM query embedding",
        ("sentence_transformers",),
    ),
    "ours-rerank": ("remy hybrid rrf + cross-encoder rerank@30", ("sentence_transformers",)),
    "langchain-ensemble": (
        "LangChain EnsembleRetriever (BM25 analyzed + Chroma)",
        ("langchain_classic", "langchain_community", "langchain_chroma", "rank_bm25", "bm25s"),
    ),
    "langchain-ensemble-default": (
        "LangChain EnsembleRetriever (BM25 default split + Chroma)",
        ("langchain_classic", "langchain_community", "langchain_chroma", "rank_bm25"),
    ),
    "llamaindex-fusion": (
        "LlamaIndex QueryFusionRetriever (BM25 + Chroma, rrf)",
        ("llama_index.core", "llama_index.retrievers.bm25", "llama_index.vector_stores.chroma"),
    ),
}
DEFAULT_SYSTEMS = (
    "ours",
    "ours-e2e",
    "langchain-ensemble",
    "langchain-ensemble-default",
    "llamaindex-fusion",
)


_WORD = re.compile(r"(?u)\b\w\w+\b")


def analyzed_preprocess() -> Callable[[str], list[str]]:
    """A typical 'real' preprocess_func for LangChain's BM25Retriever: lowercase, word
    regex, English stopwords (bm25s' list), Snowball stemming (PyStemmer)."""
    import Stemmer
    from bm25s.stopwords import STOPWORDS_EN

    stem = Stemmer.Stemmer("english").stemWords
    stop = frozenset(STOPWORDS_EN)

    def preprocess(text: str) -> list[str]:
        return stem([w for w in _WORD.findall(text.lower()) if w not in stop])

    return preprocess


def langchain_embeddings(docs: Any, queries: Any) -> Any:
    from langchain_core.embeddings import Embeddings

    class CachedEmbeddings(Embeddings):
        def embed_documents(self, texts: list[str]) -> list[list[float]]:
            return docs.lookup_many(texts).tolist()

        def embed_query(self, text: str) -> list[float]:
            return queries.lookup(text).tolist()

    return CachedEmbeddings()


def llamaindex_embedding(docs: Any, queries: Any) -> Any:
    from llama_index.core.embeddings import BaseEmbedding
    from pydantic import PrivateAttr

    class CachedEmbedding(BaseEmbedding):
        _docs: Any = PrivateAttr()
        _queries: Any = PrivateAttr()

        def __init__(self, docs: Any, queries: Any) -> None:
            super().__init__(model_name="cached-all-MiniLM-L6-v2")
            self._docs = docs
            self._queries = queries

        def _get_query_embedding(self, query: str) -> list[float]:
            return self._queries.lookup(query).tolist()

        async def _aget_query_embedding(self, query: str) -> list[float]:
            return self._get_query_embedding(query)

        def _get_text_embedding(self, text: str) -> list[float]:
            return self._docs.lookup(text).tolist()

    return CachedEmbedding(docs, queries)


def build_bm25s(texts: list[str], ids: Sequence[str], k: int = CANDIDATES) -> Search:
    """bm25s (English stopwords, Snowball stemmer)."""
    import bm25s
    import Stemmer

    stemmer = Stemmer.Stemmer("english")
    tokens = bm25s.tokenize(texts, stopwords="en", stemmer=stemmer, show_progress=False)
    model = bm25s.BM25()
    model.index(tokens, show_progress=False)

    def search(q: str) -> list[tuple[str, float]]:
        qt = bm25s.tokenize([q], stopwords="en", stemmer=stemmer, show_progress=False)
        docs, scores = model.retrieve(qt, k=k, show_progress=False, n_threads=1)
        return [(ids[int(d)], float(s)) for d, s in zip(docs[0], scores[0])]

    return search


def build_rank_bm25(texts: list[str], ids: Sequence[str], k: int = CANDIDATES) -> Search:
    """LangChain's BM25Retriever (rank_bm25) with ours' analyzer as its preprocessing."""
    from langchain_community.retrievers import BM25Retriever

    bm25 = BM25Retriever.from_texts(
        texts,
        metadatas=[{"chunk_id": cid} for cid in ids],
        k=k,
        preprocess_func=analyzed_preprocess(),
    )

    def search(q: str) -> list[tuple[str, float]]:
        return [(d.metadata["chunk_id"], 0.0) for d in bm25.invoke(q)]

    return search


def build_langchain(
    texts: list[str],
    ids: Sequence[str],
    table: Any,
    queries: Any,
    root: Path,
    *,
    k: int = CANDIDATES,
    metadatas: Sequence[dict[str, Any]] | None = None,
    analyzed: bool = True,
    shared: Any = None,
) -> Search:
    """LangChain EnsembleRetriever: BM25Retriever + Chroma, weights 0.5 / 0.5, as
    LangChain documents it. ``analyzed``: BM25 with a real preprocess_func
    (:func:`analyzed_preprocess`), else LangChain's default (``str.split``). The returned
    callable carries the BM25 branch as ``search.bm25``."""
    from langchain_chroma import Chroma
    from langchain_classic.retrievers import EnsembleRetriever
    from langchain_community.retrievers import BM25Retriever

    extra = metadatas or [{} for _ in ids]
    metas = [{"chunk_id": cid, **m} for cid, m in zip(ids, extra)]
    kwargs: dict[str, Any] = {"preprocess_func": analyzed_preprocess()} if analyzed else {}
    bm25 = BM25Retriever.from_texts(texts, metadatas=metas, k=k, **kwargs)
    if shared is None:
        store = Chroma.from_texts(
            texts,
            embedding=langchain_embeddings(table, queries),
            metadatas=metas,
            ids=[m["chunk_id"] for m in metas],
            collection_name="bench",
            persist_directory=str(root),
        )
        id_key: str | None = "chunk_id"
    else:
        # Wrap ours' existing Chroma collection (same chunks, vectors and text); its
        # metadata has no chunk_id, so fuse by page_content (LangChain's default).
        store = Chroma(
            client=shared.client,
            collection_name=shared.collection,
            embedding_function=langchain_embeddings(table, queries),
        )
        id_key = None
    ensemble = EnsembleRetriever(
        retrievers=[bm25, store.as_retriever(search_kwargs={"k": k})],
        weights=[0.5, 0.5],
        id_key=id_key,
    )

    def search(q: str) -> list[tuple[str, float]]:
        return [(d.metadata.get("chunk_id", d.id or ""), 0.0) for d in ensemble.invoke(q)]

    search.bm25 = bm25  # type: ignore[attr-defined]
    return search


def build_llamaindex(
    texts: list[str],
    ids: Sequence[str],
    vectors: np.ndarray,
    table: Any,
    queries: Any,
    root: Path,
    *,
    k: int = CANDIDATES,
    metadatas: Sequence[dict[str, Any]] | None = None,
    shared: Any = None,
) -> Search:
    """LlamaIndex QueryFusionRetriever (reciprocal rerank) over a Chroma vector index and
    its BM25Retriever, one query, no LLM. ``metadatas`` are stored with the nodes and kept
    out of what is embedded."""
    import chromadb
    from llama_index.core import Settings, StorageContext, VectorStoreIndex
    from llama_index.core.llms import MockLLM
    from llama_index.core.retrievers import QueryFusionRetriever
    from llama_index.core.schema import TextNode
    from llama_index.retrievers.bm25 import BM25Retriever
    from llama_index.vector_stores.chroma import ChromaVectorStore

    embed_model = llamaindex_embedding(table, queries)
    Settings.embed_model = embed_model
    Settings.llm = MockLLM()
    extra = metadatas or [{} for _ in ids]
    nodes = [
        TextNode(
            id_=cid,
            text=texts[i],
            metadata=dict(extra[i]),
            excluded_embed_metadata_keys=list(extra[i]),
            excluded_llm_metadata_keys=list(extra[i]),
            embedding=None if shared is not None else vectors[i].tolist(),
        )
        for i, cid in enumerate(ids)
    ]
    if shared is None:
        client = chromadb.PersistentClient(path=str(root))
        collection = client.get_or_create_collection("bench")
        storage = StorageContext.from_defaults(
            vector_store=ChromaVectorStore(chroma_collection=collection)
        )
        index = VectorStoreIndex(nodes, storage_context=storage, embed_model=embed_model)
    else:
        # Query ours' existing Chroma collection (same chunks, vectors and text).
        index = VectorStoreIndex.from_vector_store(
            ChromaVectorStore(chroma_collection=shared._sync.dense.collection),
            embed_model=embed_model,
        )
    bm25 = BM25Retriever.from_defaults(nodes=nodes, similarity_top_k=k)
    del nodes
    fusion = QueryFusionRetriever(
        [index.as_retriever(similarity_top_k=k), bm25],
        similarity_top_k=k,
        num_queries=1,
        mode="reciprocal_rerank",
        use_async=False,
        llm=MockLLM(),
    )

    def search(q: str) -> list[tuple[str, float]]:
        return [(n.node.node_id, float(n.score or 0.0)) for n in fusion.retrieve(q)]

    return search

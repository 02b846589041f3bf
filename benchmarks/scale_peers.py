"""Scale benchmark, part 3: the peer systems, built over the same synthetic chunks.

bm25s; LangChain's BM25Retriever on rank_bm25; LangChain EnsembleRetriever (BM25 +
Chroma); LlamaIndex QueryFusionRetriever (Chroma + BM25). Each builder returns a
``search(query) -> [(chunk id, score), ...]`` callable; chunk ids are the ones ours
stores (:func:`benchmarks.scale_data.chunk_ids`). The hybrids build their own Chroma
collection under ``root``, or with ``shared`` query ours' (same chunks, vectors, text).
Their packages are only in benchmarks/requirements.txt.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

from benchmarks.scale_data import CANDIDATES, chunk_ids, tenant

Search = Callable[[str], list[tuple[str, float]]]


def build_bm25s(texts: list[str]) -> Search:
    """bm25s (English stopwords, Snowball stemmer)."""
    import bm25s
    import Stemmer

    ids = chunk_ids(len(texts))
    stemmer = Stemmer.Stemmer("english")
    tokens = bm25s.tokenize(texts, stopwords="en", stemmer=stemmer, show_progress=False)
    model = bm25s.BM25()
    model.index(tokens, show_progress=False)

    def search(q: str) -> list[tuple[str, float]]:
        qt = bm25s.tokenize([q], stopwords="en", stemmer=stemmer, show_progress=False)
        docs, scores = model.retrieve(qt, k=CANDIDATES, show_progress=False, n_threads=1)
        return [(ids[int(d)], float(s)) for d, s in zip(docs[0], scores[0])]

    return search


def build_rank_bm25(texts: list[str]) -> Search:
    """LangChain's BM25Retriever (rank_bm25) with ours' analyzer as its preprocessing."""
    from langchain_community.retrievers import BM25Retriever

    from benchmarks.quality import analyzed_preprocess

    bm25 = BM25Retriever.from_texts(
        texts,
        metadatas=[{"chunk_id": cid} for cid in chunk_ids(len(texts))],
        k=CANDIDATES,
        preprocess_func=analyzed_preprocess(),
    )

    def search(q: str) -> list[tuple[str, float]]:
        return [(d.metadata["chunk_id"], 0.0) for d in bm25.invoke(q)]

    return search


def build_langchain(
    texts: list[str], table: Any, queries: Any, root: Path, shared: Any = None
) -> Search:
    """LangChain EnsembleRetriever: BM25Retriever + Chroma, weights 0.5 / 0.5. The
    returned callable carries the BM25 branch as ``search.bm25``."""
    from langchain_chroma import Chroma
    from langchain_classic.retrievers import EnsembleRetriever
    from langchain_community.retrievers import BM25Retriever

    from benchmarks.quality import analyzed_preprocess, langchain_embeddings

    metas = [{"chunk_id": cid, "tenant": tenant(i)} for i, cid in enumerate(chunk_ids(len(texts)))]
    bm25 = BM25Retriever.from_texts(
        texts, metadatas=metas, k=CANDIDATES, preprocess_func=analyzed_preprocess()
    )
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
        retrievers=[bm25, store.as_retriever(search_kwargs={"k": CANDIDATES})],
        weights=[0.5, 0.5],
        id_key=id_key,
    )

    def search(q: str) -> list[tuple[str, float]]:
        return [(d.metadata.get("chunk_id", d.id or ""), 0.0) for d in ensemble.invoke(q)]

    search.bm25 = bm25  # type: ignore[attr-defined]
    return search


def build_llamaindex(
    texts: list[str], vectors: np.ndarray, table: Any, queries: Any, root: Path, shared: Any = None
) -> Search:
    """LlamaIndex QueryFusionRetriever (reciprocal rerank) over a Chroma vector index and
    its BM25Retriever, one query, no LLM."""
    import chromadb
    from llama_index.core import Settings, StorageContext, VectorStoreIndex
    from llama_index.core.llms import MockLLM
    from llama_index.core.retrievers import QueryFusionRetriever
    from llama_index.core.schema import TextNode
    from llama_index.retrievers.bm25 import BM25Retriever
    from llama_index.vector_stores.chroma import ChromaVectorStore

    from benchmarks.quality import llamaindex_embedding

    embed_model = llamaindex_embedding(table, queries)
    Settings.embed_model = embed_model
    Settings.llm = MockLLM()
    nodes = [
        TextNode(
            id_=cid,
            text=texts[i],
            metadata={"tenant": tenant(i)},
            excluded_embed_metadata_keys=["tenant"],
            excluded_llm_metadata_keys=["tenant"],
            embedding=None if shared is not None else vectors[i].tolist(),
        )
        for i, cid in enumerate(chunk_ids(len(texts)))
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
    bm25 = BM25Retriever.from_defaults(nodes=nodes, similarity_top_k=CANDIDATES)
    del nodes
    fusion = QueryFusionRetriever(
        [index.as_retriever(similarity_top_k=CANDIDATES), bm25],
        similarity_top_k=CANDIDATES,
        num_queries=1,
        mode="reciprocal_rerank",
        use_async=False,
        llm=MockLLM(),
    )

    def search(q: str) -> list[tuple[str, float]]:
        return [(n.node.node_id, float(n.score or 0.0)) for n in fusion.retrieve(q)]

    return search

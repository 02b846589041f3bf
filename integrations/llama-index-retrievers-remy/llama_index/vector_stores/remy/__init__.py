"""LlamaIndex vector store backed by remy-retriever (hybrid BM25 + dense, with citations).

>>> from llama_index.vector_stores.remy import NoEmbedding, RemyVectorStore
>>> store = RemyVectorStore(path="./remy_data", collection="docs")
"""

from .base import NoEmbedding, RemyVectorStore, filters_to_where
from .convert import flatten_metadata, from_remy_metadata, stable_id, to_remy_documents

__all__ = [
    "NoEmbedding",
    "RemyVectorStore",
    "filters_to_where",
    "flatten_metadata",
    "from_remy_metadata",
    "stable_id",
    "to_remy_documents",
]

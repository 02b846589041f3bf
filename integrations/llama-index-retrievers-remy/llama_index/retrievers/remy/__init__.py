"""LlamaIndex integration for remy-retriever: hybrid BM25 + dense retrieval with citations.

>>> from remy_retriever import Retriever
>>> from llama_index.retrievers.remy import RemyRerank, RemyRetriever
>>> retriever = RemyRetriever(Retriever("./remy_data", collection="docs"), similarity_top_k=4)
>>> nodes = retriever.retrieve("install on linux")
"""

from .base import RemyRetriever
from .convert import hits_to_nodes, node_to_hit
from .docstore import RemyDocumentStore
from .memory import documents_to_nodes, memories_to_nodes
from .postprocessor import RemyRerank

__all__ = [
    "RemyDocumentStore",
    "RemyRerank",
    "RemyRetriever",
    "documents_to_nodes",
    "hits_to_nodes",
    "memories_to_nodes",
    "node_to_hit",
]
__version__ = "0.1.0"

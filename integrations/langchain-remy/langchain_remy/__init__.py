"""LangChain integration for remy-retriever: hybrid BM25 + dense retrieval with citations.

>>> from remy_retriever import Retriever
>>> from langchain_remy import RemyRetriever, remy_search_tool
>>> retriever = RemyRetriever(Retriever("./remy_data", collection="docs"), k=4)
>>> docs = retriever.invoke("install on linux", where={"tenant": "a"})
>>> tool = remy_search_tool(retriever)
"""

from .compressors import RemyReranker
from .convert import document_to_hit, hits_to_documents
from .ingest import metadata_from_remy, metadata_to_remy, to_remy_documents
from .memory import (
    RemyMemoryRetriever,
    documents_to_langchain,
    memories_to_langchain,
    remy_memory_tool,
)
from .retrievers import RemyRetriever
from .tools import format_documents, remy_search_tool
from .vectorstores import RemyVectorStore

__all__ = [
    "RemyMemoryRetriever",
    "RemyReranker",
    "RemyRetriever",
    "RemyVectorStore",
    "document_to_hit",
    "documents_to_langchain",
    "format_documents",
    "hits_to_documents",
    "memories_to_langchain",
    "metadata_from_remy",
    "metadata_to_remy",
    "remy_memory_tool",
    "remy_search_tool",
    "to_remy_documents",
]
__version__ = "0.1.0"

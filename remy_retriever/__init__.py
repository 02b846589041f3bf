"""remy-retriever: hybrid BM25 + dense retrieval over Chroma, with cited results.

>>> from remy_retriever import Retriever, Document
>>> r = Retriever("./remy_data", collection="docs")
>>> r.add([Document(id="guide", text="# Guide\\n\\n## Install\\n\\nRun pip install ...")])
>>> hits = r.search("how do I install", mode="hybrid", k=5)
"""

from .documents import Document
from .embeddings import Embedder, SentenceTransformerEmbedder
from .errors import (
    CollectionNotFoundError,
    IndexLockedError,
    InvalidDocumentError,
    InvalidFilterError,
    InvalidInputError,
    InvalidQueryError,
    ModelLoadError,
    RemyError,
    ServerUnavailableError,
    StoreError,
)
from .hits import BranchExplain, Citation, Match, SearchExplain, SearchHit
from .memory import Memory, MemoryStore
from .onnx_embedder import OnnxEmbedder
from .options import SearchOptions
from .rerankers import CrossEncoderReranker, Reranker
from .responses import DocumentSearchResponse, MemorySearchResponse
from .retriever import DoctorReport, IngestReport, Retriever, StoredDocument
from .search.calibration import ScoredHit

__all__ = [
    "BranchExplain",
    "Citation",
    "CollectionNotFoundError",
    "CrossEncoderReranker",
    "DoctorReport",
    "Document",
    "DocumentSearchResponse",
    "Embedder",
    "IndexLockedError",
    "IngestReport",
    "InvalidDocumentError",
    "InvalidFilterError",
    "InvalidInputError",
    "InvalidQueryError",
    "Match",
    "Memory",
    "MemorySearchResponse",
    "MemoryStore",
    "ModelLoadError",
    "OnnxEmbedder",
    "RemyError",
    "Reranker",
    "Retriever",
    "ScoredHit",
    "SearchExplain",
    "SearchHit",
    "SearchOptions",
    "SentenceTransformerEmbedder",
    "ServerUnavailableError",
    "StoreError",
    "StoredDocument",
]
__version__ = "0.1.0"

"""remy-retriever: hybrid BM25 + dense retrieval over Chroma, with cited results.

>>> from remy_retriever import Retriever, Document
>>> r = Retriever("./remy_data", collection="docs")
>>> r.add([Document(id="guide", text="# Guide\\n\\n## Install\\n\\nRun pip install ...")])
>>> hits = r.search("how do I install", mode="hybrid", k=5)
"""

from .errors import (
    AccessDeniedError,
    CollectionNotFoundError,
    DocumentNotFoundError,
    IndexLockedError,
    InvalidDocumentError,
    InvalidFilterError,
    InvalidInputError,
    InvalidQueryError,
    InvalidResponseError,
    LexicalIndexCorruptError,
    MemoryNotFoundError,
    MemoryStateError,
    MissingExtraError,
    ModelLoadError,
    NotFoundError,
    ParseBudgetError,
    ParserBusyError,
    RemyError,
    RerankerUnavailableError,
    ServerUnavailableError,
    StoreError,
    UnauthorizedError,
    UnusableFileError,
)
from .loaders.limits import ParseLimits
from .memory import Memory, MemoryStore
from .models.embeddings import Embedder, SentenceTransformerEmbedder
from .models.onnx_embedder import OnnxEmbedder
from .models.rerankers import CrossEncoderReranker, Reranker
from .retriever import (
    DoctorReport,
    FileIssue,
    IngestReport,
    Retriever,
    StoredChunk,
    StoredDocument,
)
from .schema.document import Document
from .schema.hits import BranchExplain, Citation, FusionWeights, Match, SearchExplain, SearchHit
from .schema.options import SearchOptions
from .search.calibration import ScoredHit
from .search.tuning import SyntheticReport, TuneReport
from .supermemory.responses import DocumentSearchResponse, MemorySearchResponse
from .util.retry import RetryPolicy

__all__ = [
    "AccessDeniedError",
    "BranchExplain",
    "Citation",
    "CollectionNotFoundError",
    "CrossEncoderReranker",
    "DoctorReport",
    "Document",
    "DocumentNotFoundError",
    "DocumentSearchResponse",
    "Embedder",
    "FileIssue",
    "FusionWeights",
    "IndexLockedError",
    "IngestReport",
    "InvalidDocumentError",
    "InvalidFilterError",
    "InvalidInputError",
    "InvalidQueryError",
    "InvalidResponseError",
    "LexicalIndexCorruptError",
    "Match",
    "Memory",
    "MemoryNotFoundError",
    "MemorySearchResponse",
    "MemoryStateError",
    "MemoryStore",
    "MissingExtraError",
    "ModelLoadError",
    "NotFoundError",
    "OnnxEmbedder",
    "ParseBudgetError",
    "ParseLimits",
    "ParserBusyError",
    "RemyError",
    "Reranker",
    "RerankerUnavailableError",
    "Retriever",
    "RetryPolicy",
    "ScoredHit",
    "SearchExplain",
    "SearchHit",
    "SearchOptions",
    "SentenceTransformerEmbedder",
    "ServerUnavailableError",
    "StoreError",
    "StoredChunk",
    "StoredDocument",
    "SyntheticReport",
    "TuneReport",
    "UnauthorizedError",
    "UnusableFileError",
]
__version__ = "0.1.0"

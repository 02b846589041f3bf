"""The curated public surface, pinned; and no torch at import time."""

import subprocess
import sys

import remy_retriever

EXPECTED = {
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
    "IndexLockedError",
    "IngestReport",
    "InvalidDocumentError",
    "InvalidFilterError",
    "InvalidInputError",
    "InvalidQueryError",
    "InvalidResponseError",
    "LexicalIndexCorruptError",
    "FusionWeights",
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
}

#: What the framework adapters may import from the core besides the package root.
INTEGRATION_EXPECTED = {
    "FIELD_OPTIONS",
    "FLAT_KEYS",
    "RESERVED_PREFIX",
    "SHADOW_KEY",
    "Passage",
    "Reranked",
    "Reranker",
    "build_options",
    "check_int",
    "check_search_kwargs",
    "chunk_id",
    "document_passages",
    "hit_from_metadata",
    "hit_to_metadata",
    "memory_passages",
    "open_engine",
    "rerank",
    "resolve_reranker",
    "text_from_pieces",
    "reranker_for",
    "rescored_metadata",
    "MetadataCodec",
    "PAGE_KEYS",
    "Piece",
    "page_of",
    "assign_ids",
    "content_digest",
    "escape_key",
    "reserved_looking",
    "source_id",
    "heading_path_of",
    "piece_place",
}


def test_all_is_pinned() -> None:
    assert set(remy_retriever.__all__) == EXPECTED
    for name in EXPECTED:
        assert hasattr(remy_retriever, name)


MEMORY_EXPECTED = {
    "CUSTOM_ID_KEY",
    "ChunkResult",
    "ContextMemory",
    "DocumentChunk",
    "DocumentNotFoundError",
    "DocumentResult",
    "DocumentSearchResponse",
    "InvalidResponseError",
    "LinkedDocument",
    "LinkedDocuments",
    "Memory",
    "MemoryContext",
    "MemoryNotFoundError",
    "MemoryReport",
    "MemoryResult",
    "MemorySearchResponse",
    "MemoryStateError",
    "MemoryStore",
    "RESERVED_KEYS",
    "SOURCE_KEY",
    "SearchMode",
    "check_metadata",
    "custom_document_id",
    "public_metadata",
    "tag_of",
    "wire_document_id",
}
LOADERS_EXPECTED = {
    "LoadedText",
    "Loader",
    "MissingExtraError",
    "ParseBudgetError",
    "ParseLimits",
    "ParserBusyError",
    "ParserPool",
    "first_h1",
    "load_bytes",
    "load_docx",
    "load_file",
    "load_html",
    "load_pdf",
    "load_text",
    "loader_for",
    "register_loader",
    "registered_suffixes",
}


def test_memory_and_loaders_surfaces_are_pinned() -> None:
    from remy_retriever import loaders, memory

    assert set(memory.__all__) == MEMORY_EXPECTED
    assert set(loaders.__all__) == LOADERS_EXPECTED


def test_integration_surface_is_pinned() -> None:
    from remy_retriever import integration

    assert set(integration.__all__) == INTEGRATION_EXPECTED
    for name in INTEGRATION_EXPECTED:
        assert hasattr(integration, name)


def test_errors_share_one_base() -> None:
    for name in EXPECTED:
        obj = getattr(remy_retriever, name)
        if isinstance(obj, type) and issubclass(obj, Exception):
            assert issubclass(obj, remy_retriever.RemyError)


def test_import_does_not_import_torch() -> None:
    code = (
        "import sys, remy_retriever, remy_retriever.cli, remy_retriever.evaluation.beir; "
        "heavy = ('torch', 'sentence_transformers', 'transformers', 'fastapi', 'starlette', "
        "'uvicorn', 'onnxruntime', 'onnx'); "
        "bad = [m for m in heavy if m in sys.modules]; "
        "print(','.join(bad)); sys.exit(1 if bad else 0)"
    )
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert proc.returncode == 0, f"imported at import time: {proc.stdout} {proc.stderr[-500:]}"
